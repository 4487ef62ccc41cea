"""Welcome comment (issue #3, SPEC §5): signed webhook in, fake GitHub state out.

One welcome per PR that touches benchmark paths, on opened (and on reopened /
ready_for_review only when none exists yet), found again among the bot's own
comments on every page, never hijacked by a copied marker, never duplicated by
redelivered or concurrent deliveries.
"""

from __future__ import annotations

import asyncio
import re

import pytest

from bot.rules.markers import marker
from bot.rules.commands import find_commands
from bot.core.config import default_policy
from harness import REPO, load_bench

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
    payload = h.github.push_payload(REPO, ref="refs/heads/main", after=sha,
                                    commits=[{"modified": [".github/sweepbot.yml"]}], sender="maintainer")
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
    assert f"`{policy['signoff_phrase']}`" in body
    assert "- `full-sweep-fail-fast` (recommended): runs a canary first; each matrix stops at its first failure." \
        in body
    for primary in policy["labels"]["primary"]:
        assert f"`{primary['name']}`" in body
    for modifier in policy["labels"]["modifiers"].values():
        assert f"`{modifier}`" in body
    assert "`/use <run_id>`" in body and "`/reuse-sweep-run <run_id>`" in body
    assert "**This pull request comes from a fork.**" in body
    assert "you make sure every GitHub Actions job passes" in body
    assert f"({policy['docs_url']})" in body
    assert "\n## 中文\n" in body and "此 PR 来自 fork" in body


async def test_welcome_never_contains_a_line_that_parses_as_a_command(harness):
    await open_pr(harness, 1)
    [comment] = welcomes(harness.github, 1)
    assert find_commands(comment["body"], default_policy()["commands"].values()) == []


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
    assert "`acme/Bench`" in body and "@insider" in body
    assert "comes from a fork" not in body
    assert "On a pull request from a fork, only a label added by a maintainer" in body
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


@pytest.mark.parametrize("files, welcomed", [
    (["inferencex-e2e/perf-changelog.yaml"], True),
    (["inferencex-e2e/deep/nested/recipe.py"], True),
    (["README.md", "inferencex-e2e/launch.sh"], True),
    (["README.md"], False),
    (["docs/inferencex-e2e/notes.md"], False),  # the default pattern is anchored at the root
    (["inferencex-e2e-old/recipe.yaml"], False),
    ([], False),
], ids=["changelog", "nested", "mixed", "readme", "nested-name", "prefix-name", "no-files"])
async def test_welcome_only_for_prs_touching_benchmark_paths(make_harness, files, welcomed):
    h = await make_harness()
    add_bench_pull(h.github, 2, files)

    await open_pr(h, 2)

    assert len(welcomes(h.github, 2)) == (1 if welcomed else 0)
    if not welcomed:
        assert repo_writes(h.github) == []


# ---- short, what to do next first, the seed's points kept (issue 17) -----------------------------------------


def visible(half: str) -> str:
    """What a reader sees before expanding anything: the text outside collapsed `<details>` (their summaries
    shown)."""
    return re.sub(r"<details>\s*<summary>(.*?)</summary>.*?</details>", r"\1", half, flags=re.S)


VISIBLE_LIMIT = 2000  # characters of Markdown source per language, links' addresses included


@pytest.mark.parametrize("fork", [False, True], ids=["same-repo", "fork"])
async def test_the_welcome_is_short_what_to_do_next_first_the_details_collapsed(make_harness, fork):
    """Issue 17: the welcome was 5,000 characters; each language now shows at most 2,000 before anything is
    expanded, opens with the numbered next steps, and keeps the label-by-label details in a `<details>`."""
    h = await make_harness()
    add_bench_pull(h.github, 2, ["inferencex-e2e/perf-changelog.yaml"],
                   head_repo="partner/InferenceX" if fork else None)
    await open_pr(h, 2)
    [comment] = welcomes(h.github, 2)
    english, chinese = comment["body"].removeprefix(WELCOME + "\n").split("\n---\n\n## 中文\n")
    for half in (english, chinese):
        shown = visible(half)
        assert len(shown) <= VISIBLE_LIMIT, (len(shown), shown)
        assert half.count("<details>") == 1 and half.count("</details>") == 1
        steps = [line for line in shown.splitlines() if re.match(r"\d\. ", line)]
        assert len(steps) == 5 and shown.index(steps[0]) < 300  # the next steps come first
        assert "`full-sweep-fail-fast`" in steps[1]  # the recommended label, visible
        assert "`/use <run_id>`" in steps[3]
        for label in default_policy()["labels"]["primary"]:  # the list of labels is in the collapsed part
            assert f"- `{label['name']}`" not in shown and f"- `{label['name']}`" in half
        assert ("comes from a fork" in shown or "来自 fork" in shown) == fork


async def test_the_welcome_keeps_the_seed_welcomes_points(harness):
    """What the seed's welcome tells people and they rely on (the real threads, `[github-actions]`): files owned
    only by admins or the core maintainers need no CODEOWNER first; the latest PR_REVIEW_CHECKLIST.md; transient
    failures often pass on rerun, with how to rerun. All visible, in both languages."""
    await open_pr(harness, 1)
    [comment] = welcomes(harness.github, 1)
    english, chinese = (visible(half) for half in comment["body"].split("\n## 中文\n"))
    assert "owned by anyone other than a repository admin or the core maintainers" in english
    assert "归属于仓库管理员和核心维护者之外的人" in chinese
    assert "before you contact a core maintainer" in english and "再联系核心维护者" in chinese
    checklist = "[`PR_REVIEW_CHECKLIST.md`](https://github.com/acme/InferenceX/blob/main/docs/PR_REVIEW_CHECKLIST.md)"
    assert f"the latest {checklist}" in english and f"最新的 {checklist}" in chinese
    rerun = "(https://docs.github.com/en/actions/managing-workflow-runs/re-running-workflows-and-jobs)"
    assert "Transient failures often pass on rerun: [rerun the failed jobs]" + rerun in english
    assert "临时性失败重新运行通常就能通过：[重新运行失败的任务]" + rerun in chinese


async def test_on_open_the_welcome_is_written_before_the_sweep_status(make_harness):
    """Issue 17: the welcome and the gate's status both answer `pull_request.opened`; handlers ran in module order
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
        ("PATCH", f"/repos/{REPO}/issues/comments/{before['id']}")]


async def test_concurrent_deliveries_of_one_event_make_exactly_one_welcome(harness):
    github = harness.github
    payloads = [github.pull_request_payload(REPO, 1, action, sender="partner")
                for action in ("opened", "opened", "reopened", "ready_for_review", "opened", "reopened")]

    responses = await asyncio.gather(*(harness.post("pull_request", p, delivery=f"burst-{i}")
                                       for i, p in enumerate(payloads)))
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
    await open_pr(harness, 1)  # learn the current welcome text: PR #2 has the same author and fork
    [current] = welcomes(github, 1)
    github.add_pull(REPO, number=2, user="partner", head_repo="partner/InferenceX",
                    files=["inferencex-e2e/recipes/mi355x.yaml"])
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
    "opened_with_new_label": (7, 3, "list files → list comments → create comment → list PR labels → look up label "
                              "→ create label → add labels"),
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


async def test_the_key_figures_of_issue_3(app_key):
    """Issue #3: a welcome on a PR with 0 comments costs at most 3 requests after the token; a redelivered opened
    event costs no write (same delivery id: no request at all)."""
    assert (await BENCH.welcome_zero_comments(app_key)).total <= 3
    assert (await BENCH.redelivery_same_id(app_key)).requests == []
    assert (await BENCH.redelivery_new_id(app_key)).writes == 0
