"""`/merge` through the webhook into the fake GitHub: the checks, the merge itself (a branch of the repository,
a fork), the changelog's tail, and exactly once under lost answers, redeliveries and two merges at once."""

from __future__ import annotations

import asyncio

import pytest
from harness import REPO
from test_reuse_command import (  # noqa: F401  the fixtures this module's tests take
    command,
    fake_clock,
    finished_run,
    make_harness,
    reactions,
    reply,
)
from test_sweep_gate import (  # noqa: F401  the fixtures this module's tests take
    CHANGELOG,
    ENTRY,
    FAIL_FAST,
    HISTORY,
    PREFIX,
    label,
    no_merge_wait,
    open_pull,
    repo,
    send,
)

from bot.rules.markers import marker
from handlers import merge_command

OTHER = (
    b'\n- config-keys:\n    - gptoss-fp4-b200-vllm\n  description:\n    - "B200 recipe"\n  pr-link: ' + PREFIX.encode()
)
RESULTS = "SemiAnalysisAI/InferenceX-app"
RECIPE = "benchmarks/single_node/dsr1_fp8_mi355x.sh"


def signed(github, sha: str, conclusion: str = "success") -> None:
    """The sign-off feature's `signoff` check on `sha`, completed."""
    github.add_check_run(REPO, "signoff", sha, conclusion)


async def ready(repo, number: int, *, fork: bool = False, pin: bool = True, sign: bool = True):
    """A PR with a green sweep the bot dispatched (pinned with `/use` unless `pin` is False) and a sign-off."""
    if not repo.has_repo(RESULTS):
        repo.add_repo(RESULTS, installation_id=1)
    pr = open_pull(repo, number, fork=fork)
    repo.set_file(REPO, CHANGELOG, HISTORY, ref="main")
    h = await make_ready_harness(repo)
    await label(h, number, FAIL_FAST)
    run = finished_run(repo, number)
    if pin:
        await command(h, number, f"/use {run['id']}")
    if sign:
        signed(repo, pr["head"]["sha"])
    return h, pr, run


_harness_maker = None


async def make_ready_harness(repo):
    assert _harness_maker is not None
    return await _harness_maker()


@pytest.fixture(autouse=True)
def harness_maker(make_harness):
    global _harness_maker
    _harness_maker = make_harness
    yield
    _harness_maker = None


def notices(github, number: int) -> list[dict]:
    purpose = marker("merge-reuse")
    return [c for c in github.comments(REPO, number) if c["body"].startswith(purpose + "\n")]


def ingests(github) -> list[dict]:
    return [d for d in github.repository_dispatches(RESULTS) if d["event_type"] == "ingest-results"]


def branch_writes(github) -> list:
    return [
        r
        for r in github.requests
        if (r.method == "PUT" and r.path.endswith("/merge")) or r.method == "PATCH" and "/git/refs/" in r.path
    ]


async def test_a_pinned_same_repo_pr_is_squash_merged_at_its_head_and_ingested_once(repo):
    h, pr, run = await ready(repo, 40)
    c = await command(h, 40, "/merge")
    merged = repo.pull(REPO, 40)
    assert merged["merged"] is True
    (put,) = [r for r in repo.requests if r.method == "PUT" and r.path.endswith("/pulls/40/merge")]
    assert put.json["sha"] == pr["head"]["sha"] and put.json["merge_method"] == "squash"
    assert put.json["commit_title"] == "MI355X recipe (#40)"
    assert len(notices(repo, 40)) == 1 and str(run["id"]) in notices(repo, 40)[0]["body"]
    assert [d["client_payload"]["run-id"] for d in ingests(repo)] == [str(run["id"])]
    assert reactions(repo, c) == ["+1"]
    # GitHub then tells of the merge: nothing more is sent
    await send(h, 40, "closed", sender="maintainer")
    assert len(notices(repo, 40)) == 1 and len(ingests(repo)) == 1


async def test_the_changelog_tail_conflict_is_resolved_on_the_branch_then_merged(repo):
    h, pr, run = await ready(repo, 41)
    # another PR landed first: main's changelog grew after this PR branched
    repo.set_branch(REPO, "main", "b" * 40)
    repo.set_file(REPO, CHANGELOG, HISTORY + OTHER + b"7\n", ref="b" * 40)
    repo.set_merge_base(REPO, pr["head"]["sha"], pr["base"]["sha"])
    head = pr["head"]["sha"]  # (`pr` is the fake's live PR: the bot's commit moves its head)
    await command(h, 41, "/merge")
    assert repo.pull(REPO, 41)["merged"] is True
    expected = HISTORY + OTHER + b"7\n" + b"\n" + ENTRY.lstrip(b"\n").replace(b"XXX", f"{PREFIX}41".encode())
    branch_head = repo.pull(REPO, 41)["head"]["sha"]
    commit = repo.git_commit(REPO, branch_head)
    assert [p["sha"] for p in commit["parents"]] == [head, "b" * 40]
    assert "[skip-sweep]" in commit["message"]
    assert repo.files_at(REPO, branch_head)[CHANGELOG] == expected  # main's bytes kept, one blank line, the link
    (put,) = [r for r in repo.requests if r.method == "PUT" and r.path.endswith("/pulls/41/merge")]
    assert put.json["sha"] == branch_head
    assert repo.files_at(REPO, "main")[CHANGELOG] == expected
    assert len(ingests(repo)) == 1


async def test_a_fork_pr_is_merged_through_a_merge_commit_and_a_fast_forward(repo):
    h, pr, run = await ready(repo, 42, fork=True)
    before = repo._branch_sha(repo._repo(REPO), "main")
    repo.set_file(REPO, RECIPE, b"echo tuned\n", ref=pr["head"]["sha"])
    repo._repo(REPO).pull_files[42].append({"filename": RECIPE, "status": "added"})
    await command(h, 42, "/merge")
    assert repo.pull(REPO, 42)["merged"] is True
    assert not [r for r in repo.requests if r.method == "PUT" and r.path.endswith("/merge")]
    main = repo.files_at(REPO, "main")
    assert main[RECIPE] == b"echo tuned\n"
    assert main[CHANGELOG] == HISTORY + ENTRY.replace(b"XXX", f"{PREFIX}42".encode())
    head = repo.git_commit(REPO, repo._repo(REPO).branches["main"])
    assert [p["sha"] for p in head["parents"]] == [before, pr["head"]["sha"]]
    assert head["message"].startswith("MI355X recipe (#42)\n\nMerged with /merge by @maintainer")
    assert len(notices(repo, 42)) == 1 and len(ingests(repo)) == 1


async def test_with_no_pin_the_merge_pins_the_newest_eligible_run_and_says_so(repo):
    h, pr, run = await ready(repo, 43, pin=False)
    c = await command(h, 43, "/merge")
    assert repo.pull(REPO, 43)["merged"] is True
    text = reply(repo, 43, c)
    assert f"this merge pinned [run {run['id']}]" in text
    assert [d["client_payload"]["run-id"] for d in ingests(repo)] == [str(run["id"])]


REFUSALS = [
    # (id, how the PR is spoilt, a phrase of the reply)
    ("draft", lambda repo, pr: repo.update_pull(REPO, pr["number"], draft=True), "the PR is a draft"),
    ("no-signoff", lambda repo, pr: repo._repo(REPO).check_runs.clear(), "check has not passed"),
    ("signoff-failed", lambda repo, pr: signed(repo, pr["head"]["sha"], "failure"), "check is `failure`"),
    (
        "conflict",
        lambda repo, pr: (
            repo.set_branch(REPO, "main", "c" * 40),
            repo.set_file(REPO, CHANGELOG, HISTORY, ref="c" * 40),
            repo.set_file(REPO, RECIPE, b"echo other\n", ref="c" * 40),
            repo.set_file(REPO, RECIPE, b"echo old\n", ref=pr["base"]["sha"]),
            repo._repo(REPO).pull_files[pr["number"]].append({"filename": RECIPE}),
            repo.set_merge_base(REPO, pr["head"]["sha"], pr["base"]["sha"]),
        ),
        f"`{RECIPE}` changed on the base branch too",
    ),
    (
        "duplicate",
        lambda repo, pr: (
            repo.set_branch(REPO, "main", "d" * 40),
            repo.set_file(REPO, CHANGELOG, HISTORY + ENTRY.replace(b"XXX", b"https://x/pull/9"), ref="d" * 40),
            repo.set_merge_base(REPO, pr["head"]["sha"], pr["base"]["sha"]),
        ),
        "is already on the base branch",
    ),
]


@pytest.mark.parametrize("spoil, phrase", [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS])
async def test_a_refusal_names_what_is_missing_and_writes_nothing(repo, spoil, phrase):
    h, pr, run = await ready(repo, 44)
    spoil(repo, pr)
    repo.reset_requests()
    c = await command(h, 44, "/merge")
    assert repo.pull(REPO, 44)["merged"] is False
    assert branch_writes(repo) == [] and not [r for r in repo.requests if r.method == "POST" and "/git/" in r.path]
    text = reply(repo, 44, c)
    assert "\n### ❌ Not merged" in text and phrase in text, text
    assert reactions(repo, c) == ["-1"]
    assert ingests(repo) == [] and notices(repo, 44) == []


async def test_no_run_at_all_is_refused_for_a_maintainer_to_fix(repo):
    open_pull(repo, 45)
    h = await make_ready_harness(repo)
    await label(h, 45, FAIL_FAST)
    signed(repo, repo.pull(REPO, 45)["head"]["sha"])
    c = await command(h, 45, "/merge")
    assert "**Maintainer:** no run is pinned and no finished sweep" in reply(repo, 45, c)


async def test_a_non_maintainer_cannot_merge(repo):
    h, pr, run = await ready(repo, 46)
    c = await command(h, 46, "/merge", user="partner", association="CONTRIBUTOR")
    assert repo.pull(REPO, 46)["merged"] is False
    assert "only maintainers" in reply(repo, 46, c)


async def test_a_redelivered_merge_merges_once_and_asks_for_the_ingest_once(repo):
    h, pr, run = await ready(repo, 47)
    c = repo.add_comment(REPO, 47, "/merge", user="maintainer", author_association="MEMBER")
    payload = repo.issue_comment_payload(REPO, 47, c)
    await h.deliver("issue_comment", payload, delivery="merge-47")
    await h.deliver("issue_comment", payload, delivery="merge-47")
    await h.deliver("issue_comment", payload, delivery="merge-47-again")  # a second delivery id: GitHub's redeliver
    assert len([r for r in repo.requests if r.method == "PUT" and r.path.endswith("/merge")]) == 1
    assert len(notices(repo, 47)) == 1 and len(ingests(repo)) == 1


async def test_a_lost_merge_answer_is_found_merged_not_merged_again(repo):
    h, pr, run = await ready(repo, 48)
    repo.fail_after_commit("PUT", r"/pulls/48/merge$", 502)
    await command(h, 48, "/merge")
    assert repo.pull(REPO, 48)["merged"] is True
    puts = [r for r in repo.requests if r.method == "PUT" and r.path.endswith("/merge")]
    assert [r.route_status or r.status for r in puts][:1] == [200]  # merged by the first; any later one refused
    assert all(r.status == 405 for r in puts[1:])
    assert len(notices(repo, 48)) == 1 and len(ingests(repo)) == 1


async def test_killed_after_the_ref_update_and_before_the_notice_a_restart_sends_the_notice_once(repo):
    """The merge happened on GitHub; the process died before the notice and the ingest request, its journal gone:
    the `/merge` delivered again (a new delivery id) finds the PR merged, merges nothing, and sends both once;
    GitHub's `closed` event after it sends nothing more."""
    h, pr, run = await ready(repo, 49)
    repo.update_pull(REPO, 49, state="closed", merged=True, merge_commit_sha="e" * 40)  # what the dead process did
    c = repo.add_comment(REPO, 49, "/merge", user="maintainer", author_association="MEMBER")
    await h.deliver("issue_comment", repo.issue_comment_payload(REPO, 49, c), delivery="merge-49-after-restart")
    await send(h, 49, "closed", sender="maintainer")
    assert not [r for r in repo.requests if r.method == "PUT" and r.path.endswith("/merge")]
    assert len(notices(repo, 49)) == 1 and len(ingests(repo)) == 1
    assert ingests(repo)[0]["client_payload"]["merge-sha"] == "e" * 40
    assert reactions(repo, c) == ["+1"]


async def test_two_merges_at_once_go_in_turn_the_second_built_on_the_first(repo):
    h, pr1, run1 = await ready(repo, 50, fork=True)
    pr2 = open_pull(repo, 51, fork=True, entry=ENTRY.replace(b"New MI355X recipe", b"Second MI355X recipe"))
    for pr in (pr1, pr2):  # both branched from the base as it is now
        repo.set_merge_base(REPO, pr["head"]["sha"], pr["base"]["sha"])
    await label(h, 51, FAIL_FAST)
    run2 = finished_run(repo, 51)
    await command(h, 51, f"/use {run2['id']}")
    signed(repo, pr2["head"]["sha"])
    posted = []
    for number in (50, 51):
        c = repo.add_comment(REPO, number, "/merge", user="maintainer", author_association="MEMBER")
        posted.append(h.post("issue_comment", repo.issue_comment_payload(REPO, number, c)))
    await asyncio.gather(*posted)
    await h.idle()
    assert repo.pull(REPO, 50)["merged"] and repo.pull(REPO, 51)["merged"]
    main = repo.files_at(REPO, "main")[CHANGELOG]
    first, second = (f"{PREFIX}{n}".encode() for n in (50, 51))
    assert main.startswith(HISTORY) and first in main and second in main
    assert main.count(b"\n\n") == 2  # one blank line before each contribution
    assert len(ingests(repo)) == 2


async def test_the_base_branch_turn_is_one_lock_per_repository_and_branch():
    assert merge_command.base_branch_lock("o/r", "main") is merge_command.base_branch_lock("O/R", "main")
    assert merge_command.base_branch_lock("o/r", "main") is not merge_command.base_branch_lock("o/r", "dev")


async def test_a_base_that_moved_under_the_merge_is_built_again_never_forced(repo):
    h, pr, run = await ready(repo, 52, fork=True)
    repo.fail_next("PATCH", r"/git/refs/heads/main$", 422, json={"message": "Update is not a fast forward"})
    await command(h, 52, "/merge")
    assert repo.pull(REPO, 52)["merged"] is True
    patches = [r for r in repo.requests if r.method == "PATCH" and r.path.endswith("/git/refs/heads/main")]
    assert [r.status for r in patches] == [422, 200]
    assert all(r.json["force"] is False for r in patches)
    assert len(notices(repo, 52)) == 1 and len(ingests(repo)) == 1


def gate_check(github, sha: str) -> dict:
    (found,) = [c for c in github.check_runs(REPO, sha) if c["name"] == "sweep-gate"]
    return found


@pytest.mark.parametrize("who, merges", [("maintainer", True), ("partner", False)])
async def test_the_merge_button_on_the_gate_check_merges_for_a_writer_only(repo, who, merges):
    h, pr, run = await ready(repo, 53)
    check = gate_check(repo, pr["head"]["sha"])
    assert "merge" in [a["identifier"] for a in check["actions"]]  # offered: a run is pinned
    payload = repo.check_run_payload(REPO, check["id"], "requested_action", sender=who, identifier="merge")
    await h.deliver("check_run", payload)
    await h.deliver("check_run", payload)  # GitHub sends the press again
    assert repo.pull(REPO, 53)["merged"] is merges
    assert len([r for r in repo.requests if r.method == "PUT" and r.path.endswith("/merge")]) == int(merges)
    assert len(ingests(repo)) == int(merges)


async def test_the_merge_button_answers_a_refusal_with_a_reply_of_its_own(repo):
    h, pr, run = await ready(repo, 54, sign=False)
    check = gate_check(repo, pr["head"]["sha"])
    payload = repo.check_run_payload(REPO, check["id"], "requested_action", sender="maintainer", identifier="merge")
    await h.deliver("check_run", payload)
    assert repo.pull(REPO, 54)["merged"] is False
    purpose = marker(f"merge-button-{check['id']}")
    (answer,) = [c["body"] for c in repo.comments(REPO, 54) if c["body"].startswith(purpose + "\n")]
    assert "**CODEOWNER:** the `signoff` check has not passed" in answer


@pytest.mark.parametrize(
    "pushed, stale",
    [("inferencex-e2e/configs/amd-master.yaml", True), ("docs/notes.md", False)],
    ids=["a-benchmark-file", "docs-only"],
)
async def test_a_push_after_the_pin_that_changes_what_was_swept_is_refused_as_a_stale_pin(repo, pushed, stale):
    h, pr, run = await ready(repo, 55)
    old = pr["head"]["sha"]
    repo.push_commit(REPO, 55, sha="5" * 40, message="Tune it")
    for path, content in repo.files_at(REPO, old).items():
        repo.set_file(REPO, path, content, ref="5" * 40)
    repo.set_file(REPO, pushed, b"changed after the sweep\n", ref="5" * 40)
    repo._repo(REPO).pull_files[55].append({"filename": pushed})
    signed(repo, "5" * 40)
    c = await command(h, 55, "/merge")
    assert repo.pull(REPO, 55)["merged"] is not stale
    if stale:
        assert f"pushes after the pinned run changed `{pushed}`" in reply(repo, 55, c)
