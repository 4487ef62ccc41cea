"""Welcome comment (docs/spec.md, "What the bot writes"): signed webhook in, fake GitHub state out.

One welcome per PR that touches benchmark paths, on opened (and on reopened /
ready_for_review only when none exists yet), found again among the bot's own
comments on every page, never hijacked by a copied marker, never duplicated by
redelivered or concurrent deliveries.
"""

from __future__ import annotations

import asyncio
import re

import pytest
from harness import REPO, load_bench
from rendered import visible_text

from bot.core.config import default_policy
from bot.rules.commands import find_commands
from bot.rules.markers import marker

WELCOME = marker("welcome")
OTHER_REPO = "acme/Bench"


def bot_comments(github, number: int, repo: str = REPO) -> list[dict]:
    return [c for c in github.comments(repo, number) if c["user"]["login"] == github.bot_login]


def welcomes(github, number: int, repo: str = REPO) -> list[dict]:
    return [c for c in bot_comments(github, number, repo) if c["body"].startswith(WELCOME + "\n")]


def repo_writes(github) -> list:
    """Writes to repositories (the App's token exchange under /app/ is not one)."""
    return [r for r in github.writes if not r.path.startswith("/app/")]


def add_bench_pull(github, number: int, files, *, repo: str = REPO, user: str = "contributor", head_repo=None):
    """A PR touching benchmark paths but no autolabel rule, so only the welcome writes."""
    return github.add_pull(repo, number=number, user=user, head_repo=head_repo, files=files)


async def open_pr(h, number: int, action: str = "opened", *, repo: str = REPO, delivery: str | None = None):
    payload = h.github.pull_request_payload(repo, number, action, sender="contributor")
    return await h.deliver("pull_request", payload, delivery=delivery)


def seed_welcome(github, number: int, text: str = "an older welcome", repo: str = REPO) -> dict:
    return github.add_comment(repo, number, f"{WELCOME}\n{text}", user=github.bot_login, user_type="Bot")


async def push_config(h, content: str, sha: str) -> None:
    """Change .github/sweepbot.yml on the default branch and send the push that makes the bot reload it."""
    h.github.set_file(REPO, ".github/sweepbot.yml", content)
    payload = h.github.push_payload(
        REPO, ref="refs/heads/main", after=sha, commits=[{"modified": [".github/sweepbot.yml"]}], sender="maintainer"
    )
    await h.deliver("push", payload)


# ---- content -----------------------------------------------------------------------------------------------


async def test_fork_pr_opened_gets_one_welcome_with_the_policy_and_repo_links(harness):
    github = harness.github
    resp = await open_pr(harness, 1)
    assert resp.status == 202

    [comment] = welcomes(github, 1)
    assert bot_comments(github, 1) == [comment]
    body = comment["body"]
    policy = default_policy()
    blob = "https://github.com/acme/InferenceX/blob/main"
    assert "@partner" in body
    assert f"({blob}/.github/CODEOWNERS)" in body
    assert f"({blob}/docs/PR_REVIEW_CHECKLIST.md)" in body
    assert f"({blob}/inferencex-e2e/perf-changelog.yaml)" in body
    assert f"`{policy.signoff_phrase}`" in body
    assert (
        "- `full-sweep-fail-fast` (recommended): runs a canary first; each matrix stops at its first failure." in body
    )
    for primary in policy.labels.primary:
        assert f"`{primary.name}`" in body
    for modifier in policy.labels.modifiers.names().values():
        assert f"`{modifier}`" in body
    assert "`/use <run_id>`" in body and "`/reuse-sweep-run <run_id>`" in body
    assert "(again after each push: it comes from a fork)" in body
    assert "see that every GitHub Actions job passes" in body
    assert f"({policy.docs_url})" in body
    assert "\n## 中文\n" in body and "它来自 fork" in body


async def test_welcome_never_contains_a_line_that_parses_as_a_command(harness):
    await open_pr(harness, 1)
    [comment] = welcomes(harness.github, 1)
    assert find_commands(comment["body"], default_policy().commands.names().values()) == []


async def test_same_repo_pr_links_follow_the_repository_and_its_default_branch(make_harness):
    h = await make_harness()
    github = h.github
    github.add_repo(OTHER_REPO, default_branch="trunk", installation_id=1)
    add_bench_pull(github, 4, ["inferencex-e2e/recipes/b200.yaml"], repo=OTHER_REPO, user="insider")

    await open_pr(h, 4, repo=OTHER_REPO)

    [comment] = welcomes(github, 4, repo=OTHER_REPO)
    body = comment["body"]
    assert "(https://github.com/acme/Bench/blob/trunk/.github/CODEOWNERS)" in body
    assert "(https://github.com/acme/Bench/blob/trunk/inferencex-e2e/perf-changelog.yaml)" in body
    assert "acme/Bench/blob/main" not in body
    assert "@insider" in body
    assert "comes from a fork" not in body and "来自 fork：" not in body
    assert "On a PR from a fork, only a label added by a maintainer" in body  # in the details
    assert github.comments(REPO, 1) == []  # the other repository's PR #1 is untouched


CUSTOM_POLICY = """\
paths:
  benchmark: ["/bench/"]
docs_url: https://docs.example.test/sweeps
labels:
  primary:
    - {name: sweep-quick, canary: false, fail_fast: true, recommended: true}
    - {name: sweep-full, canary: true, fail_fast: false, recommended: false}
  modifiers: {all_evals: evals-all, evals_only: evals-alone, agentx_fast: agentic-short}
commands: {use: pin}
"""


async def test_labels_modifiers_commands_and_paths_come_from_the_repository_policy(make_harness, github):
    github.add_repo(REPO, default_branch="main", installation_id=1)
    github.set_file(REPO, ".github/sweepbot.yml", CUSTOM_POLICY)
    add_bench_pull(github, 1, ["bench/recipe.yaml"])
    add_bench_pull(github, 2, ["inferencex-e2e/perf-changelog.yaml"])
    h = await make_harness()

    await open_pr(h, 1)
    await open_pr(h, 2)

    [comment] = welcomes(github, 1)
    body = comment["body"]
    assert "- `sweep-quick` (recommended): no canary run; each matrix stops at its first failure." in body
    assert "- `sweep-full`: runs a canary first; every matrix runs to the end." in body
    for name in ("evals-all", "evals-alone", "agentic-short"):
        assert f"`{name}`" in body
    assert "`/pin <run_id>`" in body and "`/use <run_id>`" not in body
    assert "(https://docs.example.test/sweeps)" in body
    for default_name in ("full-sweep-fail-fast", "all-evals", "evals-only", "agentx-fast"):
        assert default_name not in body
    assert welcomes(github, 2) == []  # the policy replaced the default benchmark paths


@pytest.mark.parametrize(
    "files, welcomed",
    [
        (["inferencex-e2e/perf-changelog.yaml"], True),
        (["inferencex-e2e/deep/nested/recipe.py"], True),
        (["README.md", "inferencex-e2e/launch.sh"], True),
        (["README.md"], False),
        (["docs/inferencex-e2e/notes.md"], False),  # the default pattern is anchored at the root
        (["inferencex-e2e-old/recipe.yaml"], False),
        ([], False),
    ],
    ids=["changelog", "nested", "mixed", "readme", "nested-name", "prefix-name", "no-files"],
)
async def test_welcome_only_for_prs_touching_benchmark_paths(make_harness, files, welcomed):
    h = await make_harness()
    add_bench_pull(h.github, 2, files)

    await open_pr(h, 2)

    assert len(welcomes(h.github, 2)) == (1 if welcomed else 0)
    if not welcomed:
        assert repo_writes(h.github) == []


# ---- short, for its reader, the seed's points kept -----------------------------------------------------------


def languages(body: str) -> tuple[str, str]:
    english, chinese = body.removeprefix(WELCOME + "\n").split("\n---\n\n## 中文\n")
    return english, chinese


# Visible characters of the welcome, both languages together, before it was shortened (measured with visible_text
# on the welcome of commit 4b6e1cd~1, this harness's repository and policy; a changelog in the PR changed nothing
# then).
VISIBLE_BEFORE = {"same-repo": 1633, "fork": 2060}


@pytest.mark.parametrize("changelog", [False, True], ids=["no-changelog", "changelog"])
@pytest.mark.parametrize("fork", [False, True], ids=["same-repo", "fork"])
async def test_the_welcome_shows_under_half_of_what_it_did(make_harness, fork, changelog):
    """The welcome showed 1,633 visible characters on a same-repository PR and 2,060 on a fork's (both
    languages, as GitHub renders them: tests/rendered.py visible_text), most of it for maintainers. It now shows
    under half: the reader's steps, one line for the maintainers, the label-by-label details collapsed."""
    h = await make_harness()
    files = ["inferencex-e2e/recipes/b200.yaml"] + (["inferencex-e2e/perf-changelog.yaml"] if changelog else [])
    add_bench_pull(h.github, 2, files, head_repo="partner/InferenceX" if fork else None)
    await open_pr(h, 2)
    [comment] = welcomes(h.github, 2)
    shown = len(visible_text(comment["body"]))
    assert shown < VISIBLE_BEFORE["fork" if fork else "same-repo"] / 2, shown
    for half in languages(comment["body"]):
        assert half.count("<details>") == 1 and half.count("</details>") == 1
        for label in default_policy().labels.primary:  # the list of labels is in the collapsed part
            assert label.name not in visible_text(half) and f"- `{label.name}`" in half


@pytest.mark.parametrize("fork", [False, True], ids=["same-repo", "fork"])
async def test_a_pr_that_changes_the_changelog_is_not_told_to_append_an_entry(make_harness, fork):
    """Regression: every welcome told its reader to "append at least one entry" to the changelog, also
    when the PR already held a valid one. The handler now tells it from the changed files it reads anyway (no
    further request): such a PR hears that the status comment says whether the entry is valid."""
    h = await make_harness()
    head = "partner/InferenceX" if fork else None
    add_bench_pull(h.github, 2, ["inferencex-e2e/recipes/b200.yaml"], head_repo=head)
    add_bench_pull(
        h.github, 3, ["inferencex-e2e/recipes/b200.yaml", "inferencex-e2e/perf-changelog.yaml"], head_repo=head
    )
    for number in (2, 3):
        h.github.reset_requests()
        await open_pr(h, number)
        assert h.github.count("GET", rf"/pulls/{number}/files") == 1
    [without] = welcomes(h.github, 2)
    [with_entry] = welcomes(h.github, 3)
    for body, told in ((with_entry["body"], False), (without["body"], True)):
        english, chinese = (visible_text(half) for half in languages(body))
        assert ("append" in english.lower()) is told and ("追加" in chinese) is told
        assert ("Append an entry to the end of the changelog." in english) is told
        assert ("在 changelog 末尾追加一条条目。" in chinese) is told
        assert ("The sweep status comment says if your changelog entry is valid." in english) is not told
        assert ("sweep 状态评论会说明你的 changelog 条目是否有效。" in chinese) is not told


async def test_a_fork_authors_welcome_gives_maintainers_steps_to_maintainers(harness):
    """Regression: a fork's author was asked, in the numbered steps, to do what only a maintainer can
    (add the primary label, pin a green sweep with `/use`). The steps are now theirs; one line says that
    maintainers label, pin and merge, and that a label is needed again after each push of a fork."""
    await open_pr(harness, 1)
    [comment] = welcomes(harness.github, 1)
    english, chinese = languages(comment["body"])
    for half, words in (
        (english, ("label", "pin", "/use", "full-sweep")),
        (chinese, ("标签", "固定", "/use", "full-sweep")),
    ):
        steps = [line for line in half.split("<details>")[0].splitlines() if re.match(r"\d+\. ", line)]
        for step in steps:
            assert not any(word in step.lower() for word in words), step
        assert len(steps) == 3
    assert (
        "Then maintainers label the PR for a sweep (again after each push: it comes from a fork), pin a green "
        "run and merge."
    ) in english
    assert (
        "之后由维护者给 PR 加上 sweep 标签（它来自 fork：每次推送后都要重新添加）、固定一次全部通过的 run，然后合并。"
        in chinese
    )


async def test_the_welcome_keeps_the_seed_welcomes_points(harness):
    """What the seed's welcome tells people and they rely on (the real threads, `[github-actions]`): a CODEOWNER
    signs off with the latest PR_REVIEW_CHECKLIST.md and the exact phrase, owners other than admins and core
    maintainers first; transient failures often pass on rerun, with how to rerun. The steps visible, the rest in
    the details, in both languages."""
    await open_pr(harness, 1)
    [comment] = welcomes(harness.github, 1)
    english, chinese = languages(comment["body"])
    checklist = "[checklist](https://github.com/acme/InferenceX/blob/main/docs/PR_REVIEW_CHECKLIST.md)"
    phrase = f"`{default_policy().signoff_phrase}`"
    assert f"a comment with {phrase} and the latest {checklist}, filled in" in english
    assert f"一条含有 {phrase} 和填好的最新[检查清单]" in chinese
    assert "Ask the owners other than admins and core maintainers before you contact a core maintainer." in english
    assert "请先找管理员和核心维护者之外的所有者签核，再联系核心维护者。" in chinese
    rerun = "(https://docs.github.com/en/actions/managing-workflow-runs/re-running-workflows-and-jobs)"
    assert f"After merge, see that every GitHub Actions job passes ([rerun]{rerun} flaky ones)." in english
    assert f"合并之后，确保所有 GitHub Actions job 通过（偶然失败的可以[重新运行]{rerun}）。" in chinese
    for half in (english, chinese):  # the steps come before the details
        assert half.index(phrase) < half.index("<details>") and half.index(rerun) < half.index("<details>")


async def test_on_open_the_welcome_is_written_before_the_sweep_status(make_harness):
    """The welcome and the gate's status both answer `pull_request.opened`; handlers ran in module order
    (handlers.sweep_gate before handlers.welcome), so a changelog PR got the 2,200-character status table first.
    The welcome now runs first (`runs_first`, bot.core.processing.handler_order): pinned by the fake's writes."""
    from handlers import registry

    h = await make_harness(router=registry.router)
    await open_pr(h, 1)
    comments = [r for r in repo_writes(h.github) if r.method == "POST" and r.path.endswith("/issues/1/comments")]
    purposes = [r.json["body"].split(" -->", 1)[0].removeprefix("<!-- sweepbot:") for r in comments]
    assert purposes == ["welcome", "sweep-status"]
    first_check = next(i for i, r in enumerate(repo_writes(h.github)) if r.path.endswith("/check-runs"))
    assert repo_writes(h.github).index(comments[0]) < first_check  # before the gate writes anything at all


# ---- late actions: reopened / ready_for_review ------------------------------------------------------------


@pytest.mark.parametrize("action", ["reopened", "ready_for_review"])
async def test_late_action_welcomes_a_pr_that_has_none_yet(harness, action):
    await open_pr(harness, 1, action)
    [comment] = welcomes(harness.github, 1)
    assert "@partner" in comment["body"]


@pytest.mark.parametrize("action", ["reopened", "ready_for_review"])
async def test_late_action_never_edits_or_duplicates_an_existing_welcome(harness, action):
    """The existing welcome is kept as it is, even when its text is out of date (only `opened` refreshes it)."""
    github = harness.github
    old = seed_welcome(github, 1, "the welcome from last month")
    github.reset_requests()

    await open_pr(harness, 1, action)

    assert welcomes(github, 1) == [old]
    assert old["body"].endswith("the welcome from last month")
    assert github.count("POST", r"/comments$") == 0 and github.count("PATCH", r"/comments/") == 0


async def test_reopen_after_opened_keeps_the_one_welcome(harness):
    await open_pr(harness, 1, "opened")
    [first] = welcomes(harness.github, 1)
    for action in ("reopened", "ready_for_review", "reopened"):
        await open_pr(harness, 1, action)
    assert welcomes(harness.github, 1) == [first]


# ---- redeliveries and concurrency --------------------------------------------------------------------------


async def test_duplicate_delivery_with_the_same_id_is_dropped_before_github(harness):
    github = harness.github
    payload = github.pull_request_payload(REPO, 1, "opened", sender="partner")
    await harness.deliver("pull_request", payload, delivery="dup-1")
    github.reset_requests()

    resp = await harness.deliver("pull_request", payload, delivery="dup-1")

    assert (await resp.json()) == {"status": "duplicate"}
    assert github.requests == []
    assert len(welcomes(github, 1)) == 1


async def test_opened_redelivered_with_a_new_id_reads_but_writes_nothing(harness):
    """Regression: the redelivered payload still lists the labels of the original event (none), so autolabel
    re-posted `perf-changelog` on every redelivery; it now checks the PR's labels on GitHub before writing."""
    github = harness.github
    payload = github.pull_request_payload(REPO, 1, "opened", sender="partner")  # a snapshot, as GitHub redelivers
    await harness.deliver("pull_request", payload, delivery="first")
    [comment] = welcomes(github, 1)
    github.reset_requests()

    await harness.deliver("pull_request", payload, delivery="second")

    assert repo_writes(github) == []
    assert github.requests and all(r.method == "GET" for r in github.requests)
    assert welcomes(github, 1) == [comment]
    assert github.issue_labels(REPO, 1) == ["perf-changelog"]


async def test_opened_redelivery_edits_the_welcome_in_place_when_the_policy_changed(harness):
    github = harness.github
    payload = github.pull_request_payload(REPO, 1, "opened", sender="partner")
    await harness.deliver("pull_request", payload)
    [before] = welcomes(github, 1)
    created_body = before["body"]

    await push_config(harness, "docs_url: https://docs.example.test/new-docs\n", "a" * 40)
    github.reset_requests()
    await harness.deliver("pull_request", payload)

    [after] = welcomes(github, 1)
    assert after["id"] == before["id"]
    assert after["body"] != created_body
    assert "(https://docs.example.test/new-docs)" in after["body"]
    assert [(r.method, r.path) for r in repo_writes(github)] == [
        ("PATCH", f"/repos/{REPO}/issues/comments/{before['id']}")
    ]


async def test_concurrent_deliveries_of_one_event_make_exactly_one_welcome(harness):
    github = harness.github
    payloads = [
        github.pull_request_payload(REPO, 1, action, sender="partner")
        for action in ("opened", "opened", "reopened", "ready_for_review", "opened", "reopened")
    ]

    responses = await asyncio.gather(
        *(harness.post("pull_request", p, delivery=f"burst-{i}") for i, p in enumerate(payloads))
    )
    await harness.idle()

    assert [r.status for r in responses] == [202] * len(payloads)
    assert len(welcomes(github, 1)) == 1
    assert github.count("POST", rf"^/repos/{REPO}/issues/1/comments$") == 1
    assert github.count("PATCH", r"/issues/comments/") == 0
    rows = [await harness.journal_row(f"burst-{i}") for i in range(len(payloads))]
    assert [row.status for row in rows] == ["done"] * len(payloads)


async def test_concurrent_same_id_posts_are_one_delivery(harness):
    github = harness.github
    payload = github.pull_request_payload(REPO, 1, "opened", sender="partner")

    responses = await asyncio.gather(*(harness.post("pull_request", payload, delivery="same") for _ in range(4)))
    await harness.idle()

    statuses = sorted([(await r.json())["status"] for r in responses])
    assert statuses == ["duplicate", "duplicate", "duplicate", "queued"]
    assert len(welcomes(github, 1)) == 1


# ---- many comments, hijack ---------------------------------------------------------------------------------


def add_chatter(github, number: int, count: int) -> None:
    for i in range(count):
        github.add_comment(REPO, number, f"comment {i}", user=f"reviewer{i % 7}")


async def test_pr_with_150_comments_finds_the_welcome_on_page_2_and_updates_it(harness):
    github = harness.github
    add_chatter(github, 1, 120)
    old = seed_welcome(github, 1)  # comment 121: on page 2 of 100
    add_chatter(github, 1, 29)
    assert len(github.comments(REPO, 1)) == 150
    github.reset_requests()

    await open_pr(harness, 1)

    assert github.count("GET", r"/issues/1/comments$") == 2  # both pages read
    [welcome] = welcomes(github, 1)
    assert welcome["id"] == old["id"] and "@partner" in welcome["body"]
    assert len(github.comments(REPO, 1)) == 150
    assert github.count("POST", r"/issues/1/comments$") == 0


@pytest.mark.parametrize("action", ["opened", "reopened", "ready_for_review"])
async def test_pr_with_150_comments_and_a_current_welcome_makes_no_write(harness, action):
    github = harness.github
    for number in (3, 2):  # learn the current welcome text on PR #3: same author, fork and files as PR #2
        github.add_pull(
            REPO,
            number=number,
            user="partner",
            head_repo="partner/InferenceX",
            files=["inferencex-e2e/recipes/mi355x.yaml"],
        )
    await open_pr(harness, 3)
    [current] = welcomes(github, 3)
    add_chatter(github, 2, 120)
    kept = github.add_comment(REPO, 2, current["body"], user=github.bot_login, user_type="Bot")
    add_chatter(github, 2, 29)
    github.reset_requests()

    await open_pr(harness, 2, action)

    assert welcomes(github, 2) == [kept]
    assert github.count("GET", r"/issues/2/comments$") == 2
    assert repo_writes(github) == []


@pytest.mark.parametrize("action", ["opened", "reopened", "ready_for_review"])
@pytest.mark.parametrize("login, user_type", [("mallory", "User"), ("copycat[bot]", "Bot")])
async def test_copied_marker_does_not_hijack_the_welcome(harness, action, login, user_type):
    github = harness.github
    fake = github.add_comment(REPO, 1, f"{WELCOME}\nI am the welcome now", user=login, user_type=user_type)
    github.reset_requests()

    await open_pr(harness, 1, action)

    [welcome] = welcomes(github, 1)
    assert welcome["id"] != fake["id"] and "@partner" in welcome["body"]
    assert fake["body"] == f"{WELCOME}\nI am the welcome now"
    assert github.count("PATCH", rf"/issues/comments/{fake['id']}$") == 0

    await open_pr(harness, 1, "opened")  # and later deliveries keep using the bot's own
    assert welcomes(github, 1) == [welcome]
    assert github.count("PATCH", rf"/issues/comments/{fake['id']}$") == 0


# ---- request figures (bench/github_requests.py) ------------------------------------------------------------


BENCH = load_bench("github_requests")

# scenario -> (requests after the token, writes, requests in order); the README's table is printed from these.
FIGURES = {
    "welcome_zero_comments": (3, 1, "list files → list comments → create comment"),
    "welcome_zero_comments_cold": (4, 1, "read sweepbot.yml → list files → list comments → create comment"),
    "opened_with_new_label": (
        7,
        3,
        "list files → list comments → create comment → list PR labels → look up label → create label → add labels",
    ),
    "redelivery_same_id": (0, 0, "none"),
    "redelivery_new_id": (3, 0, "list files (304) → list comments → list PR labels"),
    "welcome_150_comments": (4, 1, "list files → list comments → list comments p2 → create comment"),
    "redelivery_150_comments": (3, 0, "list files (304) → list comments (304) → list comments p2"),
    "synchronize_no_change": (1, 0, "list files (304)"),
    "synchronize_removes_label": (4, 1, "list files → list PR labels → list label events → remove label"),
    "help_reply": (2, 1, "list comments → create comment"),
}


def test_every_bench_scenario_has_its_figures_pinned():
    assert [s.__name__ for s in BENCH.SCENARIOS] == list(FIGURES)


@pytest.mark.parametrize("name", list(FIGURES))
async def test_request_figures(app_key, name):
    count = await getattr(BENCH, name)(app_key)
    assert (count.total, count.writes, count.sequence) == FIGURES[name]
    if name != "welcome_zero_comments_cold":
        assert count.auth == 0  # warm: token, App identity and policy cached
    else:
        assert count.auth == 2  # installation token and GET /app, once per process


async def test_the_welcomes_key_figures(app_key):
    """A welcome on a PR with 0 comments costs at most 3 requests after the token; a redelivered opened
    event costs no write (same delivery id: no request at all)."""
    assert (await BENCH.welcome_zero_comments(app_key)).total <= 3
    assert (await BENCH.redelivery_same_id(app_key)).requests == []
    assert (await BENCH.redelivery_new_id(app_key)).writes == 0
