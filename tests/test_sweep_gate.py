"""The sweep gate through the webhook endpoint into the fake GitHub: one dispatch per (PR, head SHA,
label set), superseded runs cancelled, fork approvals bound to a head SHA, one status comment and one
`sweep-gate` check run per head, kept in place."""

from __future__ import annotations

import pytest
from conftest import both_layouts
from harness import REPO, line_with

from bot.app.sandbox import add_sweep_workflows
from bot.rules.markers import marker
from bot.rules.sweep_record import SweepRecord
from handlers import registry, sweep_gate

CHANGELOG = "inferencex-e2e/perf-changelog.yaml"
FORK = "partner/InferenceX"
PREFIX = "https://github.com/SemiAnalysisAI/InferenceX/pull/"
HISTORY = (
    b'- config-keys:\n    - dsr1-fp8-h200-sglang\n  description:\n    - "Older recipe"\n'
    b"  pr-link: " + PREFIX.encode() + b"1\n"
)
ENTRY = b'\n- config-keys:\n    - dsr1-fp8-mi355x-sglang\n  description:\n    - "New MI355X recipe"\n  pr-link: XXX\n'
TBD_ENTRY = ENTRY.replace(b"XXX", b"TBD")
FAIL_FAST, ENABLED = "full-sweep-fail-fast", "full-sweep-enabled"
STATUS = marker("sweep-status")


@pytest.fixture
def make_harness(make_harness):
    """Every feature, as `sweepbot serve` runs them."""

    async def make(**changes):
        return await make_harness(**{"router": registry.router, "patches": APART_PATCHES, **changes})

    return make


# What no_merge_wait sets, for the workers' process of the "apart" layout too.
APART_PATCHES = {"handlers.sweep_gate.MERGE_SHA_WAIT": 0.0}


@pytest.fixture(autouse=True)
def no_merge_wait(monkeypatch):
    monkeypatch.setattr(sweep_gate, "MERGE_SHA_WAIT", 0.0)


@pytest.fixture
def repo(github):
    github.add_repo(REPO, default_branch="main", installation_id=1)
    github.set_permission(REPO, "maintainer", "write")
    add_sweep_workflows(github, REPO)
    return github


def open_pull(
    github,
    number: int,
    *,
    entry: bytes | None = ENTRY,
    fork: bool = False,
    draft: bool = False,
    title: str = "MI355X recipe",
    files: tuple[str, ...] | None = None,
) -> dict:
    pr = github.add_pull(
        REPO,
        number=number,
        user="partner",
        title=title,
        head_ref=f"recipe-{number}",
        head_repo=FORK if fork else None,
        draft=draft,
        files=list(files) if files is not None else [CHANGELOG],
    )
    github.set_file(REPO, CHANGELOG, HISTORY, ref=pr["base"]["sha"])
    if entry is not None:
        github.set_file(REPO, CHANGELOG, HISTORY + entry, ref=pr["head"]["sha"])
    if fork:
        github.update_pull(REPO, number, merge_commit_sha=f"{number:040x}")
    return pr


def push(github, number: int, sha: str, *, entry: bytes = ENTRY, message: str = "Tune the recipe") -> None:
    github.push_commit(REPO, number, sha=sha, message=message)
    github.set_file(REPO, CHANGELOG, HISTORY + entry, ref=sha)


async def send(
    h,
    number: int,
    action: str,
    *,
    sender: str = "maintainer",
    label: str | None = None,
    delivery: str | None = None,
    **extra,
):
    payload = h.github.pull_request_payload(
        REPO, number, action, sender=sender, **extra, **({"label": label} if label else {})
    )
    return await h.deliver("pull_request", payload, delivery=delivery)


async def label(h, number: int, name: str, *, by: str = "maintainer", delivery: str | None = None):
    h.github.label_issue(REPO, number, name, actor=by)
    return await send(h, number, "labeled", sender=by, label=name, delivery=delivery)


async def unlabel(h, number: int, name: str, *, by: str = "maintainer"):
    h.github.unlabel_issue(REPO, number, name, actor=by)
    return await send(h, number, "unlabeled", sender=by, label=name)


def runs(github, workflow: str = "run-sweep.yml") -> list[dict]:
    return github.runs(REPO, workflow)


def inputs(github, run: dict) -> dict:
    return github._repo(REPO).run_inputs[run["id"]]


def status_comments(github, number: int) -> list[dict]:
    return [
        c
        for c in github.comments(REPO, number)
        if c["user"]["login"] == github.bot_login and c["body"].startswith(STATUS + "\n")
    ]


def status(github, number: int) -> str:
    found = status_comments(github, number)
    assert len(found) == 1, f"{len(found)} status comments"
    return found[0]["body"]


def gate_checks(github, sha: str) -> list[dict]:
    return [c for c in github.check_runs(REPO, sha) if c["name"] == "sweep-gate"]


def check(github, sha: str) -> dict:
    found = gate_checks(github, sha)
    assert len(found) == 1, f"{len(found)} sweep-gate check runs on {sha[:7]}"
    return found[0]


def english(body: str) -> str:
    return body.split("\n## 中文\n")[0]


# -- same-repository PRs -----------------------------------------------------------------------------


@both_layouts
async def test_synchronize_with_one_primary_and_a_valid_append_dispatches_once(repo, make_harness):
    open_pull(repo, 5)
    repo.label_issue(REPO, 5, FAIL_FAST, actor="maintainer")
    h = await make_harness()
    await send(h, 5, "synchronize", sender="partner", delivery="sync-1")
    (run,) = runs(repo)
    pr = repo.pull(REPO, 5)
    assert run["head_branch"] == "recipe-5"
    got = inputs(repo, run)
    assert got == {
        "pr-number": "5",
        "head-sha": pr["head"]["sha"],
        "base-sha": pr["base"]["sha"],
        "sweep-label": FAIL_FAST,
        "canary": "true",
        "fail-fast": "true",
        "all-evals": "false",
        "evals-only": "false",
        "agentx-fast": "false",
        "dispatch-id": got["dispatch-id"],
        "summary": "model=dsr1 scenario=fixed-seq-len precision=fp8 hardware_framework=mi355x_sglang",
    }
    assert got["dispatch-id"] in run["name"]
    body = status(repo, 5)
    assert f"actions/runs/{run['id']}" in body
    assert SweepRecord.parse(body).by_dispatch(got["dispatch-id"]).run_id == run["id"]
    assert check(repo, pr["head"]["sha"])["conclusion"] == "success"

    before = len(repo.writes)
    await send(h, 5, "synchronize", sender="partner", delivery="sync-1")  # the same delivery again
    assert len(runs(repo)) == 1 and len(repo.writes) == before
    await send(h, 5, "synchronize", sender="partner", delivery="sync-1-redelivered")  # a new id, same state
    assert len(runs(repo)) == 1
    assert len(status_comments(repo, 5)) == 1 and len(gate_checks(repo, pr["head"]["sha"])) == 1


@both_layouts
async def test_two_primaries_start_nothing_and_say_pick_one(repo, make_harness):
    open_pull(repo, 6)
    h = await make_harness()
    await label(h, 6, FAIL_FAST)
    (first,) = runs(repo)
    await label(h, 6, ENABLED)
    assert len(runs(repo)) == 1
    body = english(status(repo, 6))
    line = line_with(body, "**Sweep labels:**")
    assert line.startswith("- ❌") and FAIL_FAST in line and ENABLED in line
    sha = repo.pull(REPO, 6)["head"]["sha"]
    assert check(repo, sha)["conclusion"] == "failure"
    assert repo.runs(REPO)[0]["conclusion"] == "cancelled", "the run of the old label set is superseded"


async def test_evals_only_without_a_primary_starts_nothing_and_says_why(repo, make_harness):
    open_pull(repo, 7)
    h = await make_harness()
    await label(h, 7, "evals-only")
    assert runs(repo) == []
    line = line_with(english(status(repo, 7)), "**Sweep labels:**")
    assert line.startswith("- ❌") and "evals-only" in line
    assert check(repo, repo.pull(REPO, 7)["head"]["sha"])["conclusion"] == "failure"


async def test_a_storm_of_five_label_events_ends_in_one_dispatch_for_the_final_set(repo, make_harness):
    """Five label changes inside the settle: the first four each find a later label change waiting in the PR's
    lane and leave the decision to it; the last decides on the final label set and dispatches once.

    An intake-only bot (SWEEPBOT_WORKERS=0) takes the burst in and a bot started on the same journal runs it, so
    all five wait in the lane before the first one runs, however slow the machine. Regression: with live workers
    a 0.3 s settle raced the five POSTs, and a slow POST let the first delivery run alone and dispatch."""
    open_pull(repo, 8)
    intake = await make_harness(workers=0, settle_seconds=0.3)
    storm = [
        ("labeled", FAIL_FAST),
        ("labeled", "all-evals"),
        ("labeled", "agentx-fast"),
        ("labeled", "evals-only"),
        ("unlabeled", "evals-only"),
    ]
    ids = [f"storm-{i}" for i in range(len(storm))]
    for delivery, (action, name) in zip(ids, storm):
        if action == "labeled":
            repo.label_issue(REPO, 8, name, actor="maintainer")
        else:
            repo.unlabel_issue(REPO, 8, name, actor="maintainer")
        await send_only(intake, 8, action, name, delivery=delivery)
    for delivery in ids:
        row = await intake.journal_row(delivery)
        assert row.status == "queued" and row.not_before is not None, f"{delivery} is not held by the settle"
    assert repo.writes == [] and repo.count("GET", r"/pulls/8$") == 0
    await intake.bot.stop()

    h = await make_harness(settle_seconds=0.3)
    await h.idle()
    assert [(r.status, r.attempts) for r in [await h.journal_row(d) for d in ids]] == [("done", 1)] * len(ids)
    (run,) = runs(repo)
    got = inputs(repo, run)
    assert (got["sweep-label"], got["all-evals"], got["agentx-fast"], got["evals-only"]) == (
        FAIL_FAST,
        "true",
        "true",
        "false",
    )
    assert repo.count("POST", r"/dispatches$") == 1
    assert repo.count("GET", r"/pulls/8$") == 1, "four superseded deliveries did not even read the PR"
    assert f"actions/runs/{run['id']}" in status(repo, 8)
    assert check(repo, repo.pull(REPO, 8)["head"]["sha"])["conclusion"] == "success"


@both_layouts
async def test_a_burst_of_label_changes_to_a_running_bot_dispatches_once_for_the_final_set(repo, make_harness, layout):
    """Regression: in the production layout (the workers in their own process) a burst of label changes never
    dispatched. Every held delivery failed as a bug (`TypeError: unhashable type: 'list'` in
    `Context.superseded`): the lane's waiting kinds crossed the process boundary as JSON lists. The burst is
    posted to a running bot well inside the settle (the production default, 3 s), as a maintainer clicks."""
    open_pull(repo, 18)
    h = await make_harness(settle_seconds=3.0)
    burst = [
        ("labeled", ENABLED),
        ("labeled", "all-evals"),
        ("unlabeled", ENABLED),
        ("labeled", FAIL_FAST),
        ("labeled", "documentation"),
    ]
    ids = [f"burst-{layout}-{i}" for i in range(len(burst))]
    for delivery, (action, name) in zip(ids, burst):
        (repo.label_issue if action == "labeled" else repo.unlabel_issue)(REPO, 18, name, actor="maintainer")
        await send_only(h, 18, action, name, delivery=delivery)
    await h.idle()
    rows = [await h.journal_row(d) for d in ids]
    assert [(r.status, r.attempts) for r in rows] == [("done", 1)] * len(ids), [r.error for r in rows]
    (run,) = runs(repo)
    got = inputs(repo, run)
    assert (got["sweep-label"], got["all-evals"], got["canary"]) == (FAIL_FAST, "true", "true")
    assert repo.count("POST", r"/dispatches$") == 1


async def send_only(h, number: int, action: str, name: str, *, delivery: str | None = None):
    """Post without waiting for the workers (a burst)."""
    payload = h.github.pull_request_payload(REPO, number, action, sender="maintainer", label=name)
    resp = await h.post("pull_request", payload, delivery=delivery)
    assert resp.status == 202


@both_layouts
async def test_a_new_push_cancels_the_old_run_and_dispatches_a_new_one(repo, make_harness):
    open_pull(repo, 9)
    h = await make_harness()
    await label(h, 9, FAIL_FAST)
    (old,) = runs(repo)
    push(repo, 9, "9" * 40)
    await send(h, 9, "synchronize", sender="partner")
    assert len(runs(repo)) == 2
    old_now = next(r for r in repo.runs(REPO) if r["id"] == old["id"])
    assert old_now["conclusion"] == "cancelled"
    new = next(r for r in runs(repo) if r["id"] != old["id"])
    assert inputs(repo, new)["head-sha"] == "9" * 40
    assert f"actions/runs/{new['id']}" in status(repo, 9)
    assert len(status_comments(repo, 9)) == 1


@both_layouts
async def test_a_draft_starts_nothing_until_ready_for_review(repo, make_harness):
    open_pull(repo, 10, draft=True)
    h = await make_harness()
    await label(h, 10, FAIL_FAST)
    assert runs(repo) == []
    line = line_with(english(status(repo, 10)), "**Pull request:**")
    assert line.startswith("- ➖"), "a draft is a fine state: no ❌"
    assert english(status(repo, 10)).split("\n")[2].startswith("### ➖ No sweep while this is a draft")
    repo.update_pull(REPO, 10, draft=False)
    await send(h, 10, "ready_for_review", sender="partner")
    assert len(runs(repo)) == 1


async def test_skip_sweep_in_the_head_commit_starts_nothing_but_the_checks_still_run(repo, make_harness):
    open_pull(repo, 11)
    push(repo, 11, "b" * 40, message="Fix a typo [skip-sweep]")
    h = await make_harness()
    await label(h, 11, FAIL_FAST)
    assert runs(repo) == []
    line = line_with(english(status(repo, 11)), "**Skip marker:**")
    assert line.startswith("- ➖") and "[skip-sweep]" in line, "skipping on purpose is a fine state: no ❌"
    assert check(repo, "b" * 40)["conclusion"] == "success", "the changelog and labels are still checked"


async def test_pr_link_tbd_fails_the_check_with_the_line_and_the_fix_annotated(repo, make_harness):
    open_pull(repo, 12, entry=TBD_ENTRY)
    h = await make_harness()
    await label(h, 12, FAIL_FAST)
    assert runs(repo) == []
    body = english(status(repo, 12))
    line_number = (HISTORY + TBD_ENTRY).split(b"\n").index(b"  pr-link: TBD") + 1
    problem = line_with(body, "`TBD`")
    assert str(line_number) in problem and "XXX" in problem and f"{PREFIX}12" in problem
    sha = repo.pull(REPO, 12)["head"]["sha"]
    gate = check(repo, sha)
    assert gate["conclusion"] == "failure"
    (note,) = repo.check_annotations(REPO, gate["id"])
    assert (note["path"], note["start_line"], note["annotation_level"]) == (CHANGELOG, line_number, "failure")
    assert "TBD" in note["message"] and "中文" in note["message"]


async def test_no_sweep_label_and_no_changelog_gets_a_neutral_check_and_no_comment(repo, make_harness):
    open_pull(repo, 13, entry=None, files=("README.md",))
    h = await make_harness()
    await send(h, 13, "opened", sender="partner")
    assert status_comments(repo, 13) == []
    assert check(repo, repo.pull(REPO, 13)["head"]["sha"])["conclusion"] == "neutral"


async def test_a_completed_run_puts_the_viewer_links_in_the_same_comment(repo, make_harness):
    open_pull(repo, 14)
    h = await make_harness()
    await label(h, 14, FAIL_FAST)
    (run,) = runs(repo)
    (comment,) = status_comments(repo, 14)
    payload = repo.workflow_run_payload(REPO, run["id"], "completed", conclusion="success")
    assert payload["sender"]["login"] == repo.bot_login, "the App dispatched it: the App is the sender"
    await h.deliver("workflow_run", payload)
    (after,) = status_comments(repo, 14)
    assert after["id"] == comment["id"]
    body = english(after["body"])
    assert f"https://inferencex.semianalysis.com/inference?unofficialRun={run['id']}" in body
    assert f"https://inferencex.semianalysis.com/evaluation?unofficialRun={run['id']}" in body
    assert body.split("\n")[2].startswith(f"### ✅ Sweep [run {run['id']}](") and " passed on " in body
    assert len(runs(repo)) == 1, "a finished run is not started again"


async def test_a_dispatch_answered_502_after_the_run_started_is_still_one_run(repo, make_harness):
    open_pull(repo, 15)
    repo.fail_after_commit("POST", r"/dispatches$", 502)
    h = await make_harness()
    await label(h, 15, FAIL_FAST)
    (run,) = runs(repo)
    assert f"actions/runs/{run['id']}" in status(repo, 15)
    assert repo.count("POST", r"/dispatches$") == 1


async def test_a_journal_lost_after_dispatch_never_dispatches_again(repo, make_harness, tmp_path):
    """Regression: the ledger is per journal; a fresh process (journal gone) must find the run on GitHub."""
    open_pull(repo, 16)
    repo.fail_next("POST", r"/issues/16/comments$", 422, times=10)  # the status comment never lands
    h = await make_harness()
    await label(h, 16, FAIL_FAST, delivery="lost-1")
    assert len(runs(repo)) == 1 and status_comments(repo, 16) == []
    await h.bot.stop()
    fresh = await make_harness(db_path=str(tmp_path / "other.db"))
    await send(fresh, 16, "labeled", label=FAIL_FAST, delivery="lost-1")
    assert len(runs(repo)) == 1


async def test_a_refused_dispatch_is_reported_on_the_pr_not_shown_as_started(repo, make_harness):
    open_pull(repo, 17)
    repo.fail_next("POST", r"/dispatches$", 422, json={"message": 'Unexpected inputs provided: ["canary"]'})
    h = await make_harness()
    await label(h, 17, FAIL_FAST, delivery="refused")
    assert runs(repo) == []
    body = english(status(repo, 17))
    assert "did not start" in body and "Unexpected inputs" in body
    line = line_with(body, "**Sweep run:**")
    assert line.startswith("- ❌")
    assert (await h.journal_row("refused")).status == "failed"


async def test_a_dispatch_whose_answer_was_lost_says_the_bot_cannot_tell_not_that_github_refused(repo, make_harness):
    """Regression: a dispatch answered 502 with no run to show for it (Unreconciled) was shown in the
    status as "GitHub refused to start the workflow", which may be false: GitHub can have started it."""
    open_pull(repo, 19)
    repo.fail_next("POST", r"/dispatches$", 502)
    h = await make_harness()
    await label(h, 19, FAIL_FAST, delivery="lost")
    assert repo.count("POST", r"/dispatches$") == 1  # never sent again blindly
    body = english(status(repo, 19))
    assert "cannot tell whether the sweep started" in body and "refused" not in body
    line = line_with(body, "**Sweep run:**")
    assert line.startswith("- ❌") and "does not ask again" in line
    assert any(c["body"].startswith("<!-- sweepbot:dispatch-unknown-") for c in repo.comments(REPO, 19))
    assert (await h.journal_row("lost")).status == "failed"


async def test_a_dispatch_failing_for_a_while_says_so_then_starts_once(repo, make_harness):
    open_pull(repo, 18)
    repo.fail_next("POST", r"/dispatches$", 429, times=8, headers={"Retry-After": "0"})
    h = await make_harness()
    await label(h, 18, FAIL_FAST, delivery="slow")  # returns once the workers are idle: their retries included
    row = await h.journal_row("slow")
    assert row.status == "done" and row.attempts > 1, "the workers tried the delivery again after the 429s"
    (run,) = runs(repo)
    body = status(repo, 18)
    assert f"actions/runs/{run['id']}" in body and "tries again" not in body


async def test_a_dispatch_failing_for_a_while_tells_the_pr_it_tries_again(repo, make_harness):
    """Regression (found while making the test above able to fail): when a dispatch failed
    transiently, handlers/sweep_gate.py rendered the status with a `retrying` condition without `retry_in` (the
    workers, not the handler, pick the delay); the template raised UndefinedError, so the PR was never told and
    the delivery was retried as a bug (3 tries, then failed) rather than as a transient failure (hours)."""
    open_pull(repo, 19)
    repo.fail_next("POST", r"/dispatches$", 429, times=8, headers={"Retry-After": "0"})
    h = await make_harness()
    await label(h, 19, FAIL_FAST, delivery="told")
    said = [
        r.json["body"]
        for r in repo.writes
        if "/issues/" in r.path and "/comments" in r.path and isinstance(r.json, dict) and "body" in r.json
    ]
    assert any("tries again soon" in english(body) for body in said), said
    assert any("稍后重试" in body for body in said), said
    assert (await h.journal_row("told")).status == "done"


# -- fork PRs ----------------------------------------------------------------------------------------


@both_layouts
async def test_a_fork_labelled_by_a_writer_runs_the_trusted_workflow_on_the_approved_head(repo, make_harness):
    pr = open_pull(repo, 20, fork=True)
    h = await make_harness()
    await label(h, 20, FAIL_FAST)
    assert runs(repo) == []
    (run,) = runs(repo, "e2e-tests.yml")
    assert run["head_branch"] == "main"
    got = inputs(repo, run)
    assert got["head-sha"] == pr["head"]["sha"] and got["merge-sha"] == f"{20:040x}"
    record = SweepRecord.parse(status(repo, 20))
    assert record.approval(FAIL_FAST).head_sha == pr["head"]["sha"]

    push(repo, 20, "f" * 40)  # the fork pushes after the approval: not trusted
    await send(h, 20, "synchronize", sender="partner")
    assert len(runs(repo, "e2e-tests.yml")) == 1
    line = line_with(english(status(repo, 20)), "**Fork approval:**")
    assert line.startswith("- ⏳") and "fffffff" in line, "waiting for a maintainer's approval: nobody's fix"

    await unlabel(h, 20, FAIL_FAST)
    await label(h, 20, FAIL_FAST)  # re-added by the writer: approves the new head
    assert len(runs(repo, "e2e-tests.yml")) == 2
    newest = max(runs(repo, "e2e-tests.yml"), key=lambda r: r["id"])
    assert inputs(repo, newest)["head-sha"] == "f" * 40


async def test_a_fork_labelled_by_a_non_writer_loses_the_label_with_a_reply(repo, make_harness):
    open_pull(repo, 21, fork=True)
    h = await make_harness()
    await label(h, 21, FAIL_FAST, by="drive-by")
    assert runs(repo, "e2e-tests.yml") == []
    assert FAIL_FAST not in repo.issue_labels(REPO, 21)
    replies = [c for c in repo.comments(REPO, 21) if c["body"].startswith(marker("fork-label-removed"))]
    assert len(replies) == 1 and "drive-by" in replies[0]["body"] and "write, maintain or admin" in replies[0]["body"]


async def test_a_fork_without_a_merge_commit_waits_for_conflicts_to_be_resolved(repo, make_harness):
    open_pull(repo, 22, fork=True)
    repo.update_pull(REPO, 22, merge_commit_sha=None, mergeable=False)
    h = await make_harness()
    await label(h, 22, FAIL_FAST)
    assert runs(repo, "e2e-tests.yml") == []
    line = line_with(english(status(repo, 22)), "**Merge commit:**")
    assert line.startswith("- ❌")


async def test_a_forged_record_in_someone_elses_comment_approves_nothing(repo, make_harness):
    """Only the bot's own comment holds the record: a contributor pasting one approves no head."""
    open_pull(repo, 23, fork=True)
    forged = SweepRecord().approve(sweep_gate.Approval(FAIL_FAST, "maintainer", "e" * 40))
    repo.add_comment(REPO, 23, f"{STATUS}\n{forged.line()}", user="partner")
    repo.label_issue(REPO, 23, FAIL_FAST, actor="maintainer")
    push(repo, 23, "e" * 40)
    h = await make_harness()
    await send(h, 23, "synchronize", sender="partner")
    assert runs(repo, "e2e-tests.yml") == []
    assert SweepRecord.parse(status(repo, 23)).approvals == ()


@both_layouts
async def test_closing_without_merging_cancels_the_running_sweep(repo, make_harness):
    open_pull(repo, 24)
    h = await make_harness()
    await label(h, 24, FAIL_FAST)
    (run,) = runs(repo)
    repo.update_pull(REPO, 24, state="closed")
    await send(h, 24, "closed", sender="partner")
    assert repo.runs(REPO)[0]["conclusion"] == "cancelled"
    assert "closed" in english(status(repo, 24)).lower()


@both_layouts
async def test_taking_a_modifier_off_again_restarts_the_sweep(repo, make_harness):
    """Regression: the set {primary} ran, was superseded by {primary, all-evals} and cancelled; taking the
    modifier off gave the first dispatch id again, found the cancelled run and started nothing."""
    open_pull(repo, 30)
    h = await make_harness()
    await label(h, 30, FAIL_FAST)
    await label(h, 30, "all-evals")
    await unlabel(h, 30, "all-evals")
    assert len(runs(repo)) == 3
    newest = max(runs(repo), key=lambda r: r["id"])
    assert newest["status"] == "queued" and inputs(repo, newest)["all-evals"] == "false"
    assert [r["conclusion"] for r in sorted(runs(repo), key=lambda r: r["id"])[:2]] == ["cancelled", "cancelled"]


@both_layouts
async def test_removing_and_re_adding_the_primary_reruns_a_finished_sweep_and_a_redelivery_does_not(repo, make_harness):
    open_pull(repo, 31)
    h = await make_harness()
    await label(h, 31, FAIL_FAST)
    (first,) = runs(repo)
    await h.deliver("workflow_run", repo.workflow_run_payload(REPO, first["id"], "completed", conclusion="failure"))
    await unlabel(h, 31, FAIL_FAST)
    await label(h, 31, FAIL_FAST, delivery="re-added")
    assert len(runs(repo)) == 2
    await send(h, 31, "labeled", label=FAIL_FAST, delivery="re-added-again")  # GitHub redelivers it
    assert len(runs(repo)) == 2


@both_layouts
async def test_a_drive_by_label_on_an_approved_fork_does_not_restart_its_sweep(repo, make_harness):
    open_pull(repo, 32, fork=True)
    h = await make_harness()
    await label(h, 32, FAIL_FAST)
    (run,) = runs(repo, "e2e-tests.yml")
    await label(h, 32, ENABLED, by="drive-by")  # removed by the bot: neither label event counts
    assert runs(repo, "e2e-tests.yml")[0]["status"] == "queued"
    assert len(runs(repo, "e2e-tests.yml")) == 1
    assert ENABLED not in repo.issue_labels(REPO, 32)


async def test_a_dispatch_still_failing_when_the_retry_window_ends_says_it_did_not_start(repo, make_harness):
    """Regression: the last transient failure left the comment saying the bot would try again."""
    open_pull(repo, 33)
    repo.fail_next("POST", r"/dispatches$", 429, times=50, headers={"Retry-After": "0"})  # surely not started
    h = await make_harness(retry_for=0.0)  # the first failure is already the last try
    await label(h, 33, FAIL_FAST, delivery="given-up")
    assert runs(repo) == []
    body = english(status(repo, 33))
    assert "did not start" in body and "tries again" not in body
    assert (await h.journal_row("given-up")).status == "failed"


# -- states that read right --------------------------------------------------------------------------


def seed_pin(github, number: int, run_id: int, *, created_at: str = "2099-01-01T00:00:00Z") -> None:
    """A pin in the record of the bot's status comment, written as the bot writes it (the reuse feature's job)."""
    from bot.rules.sweep_record import Pin

    found = status_comments(github, number)
    record = SweepRecord.parse(found[0]["body"]).pinned(Pin(run_id, 1, "maintainer", created_at))
    head, _, rest = found[0]["body"].partition("\n")
    rest = "\n".join(line for line in rest.split("\n") if not line.startswith("<!-- sweepbot-record "))
    found[0]["body"] = f"{head}\n{record.line()}\n{rest}"


@pytest.mark.parametrize("labelled", [False, True])
async def test_a_pr_that_only_corrects_pr_links_never_fails_the_gate(repo, make_harness, labelled):
    """Correcting a `pr-link` of history (valid: docs/spec.md, "The performance changelog") is ➖ and a neutral
    check, with a primary label on or not (it was a failure with one); no sweep starts."""
    pr = repo.add_pull(REPO, number=50, user="partner", title="Fix a link", head_ref="fix-50", files=[CHANGELOG])
    old = HISTORY.replace(PREFIX.encode() + b"1", b"TBD")
    repo.set_file(REPO, CHANGELOG, old, ref=pr["base"]["sha"])
    repo.set_file(REPO, CHANGELOG, old.replace(b"TBD", PREFIX.encode() + b"7"), ref=pr["head"]["sha"])
    h = await make_harness()
    if labelled:
        await label(h, 50, FAIL_FAST)
    else:
        await send(h, 50, "opened", sender="partner")
    assert check(repo, pr["head"]["sha"])["conclusion"] == "neutral"
    body = english(status(repo, 50))
    assert "❌" not in body
    assert "Only `pr-link` values of existing changelog entries are corrected" in body
    assert runs(repo) == []


async def test_an_active_pin_reads_as_paused_not_as_an_error(repo, make_harness):
    """With a pin, the status says sweeps are paused with ✅ and how to sweep again; no ❌, and
    a push starts nothing."""
    open_pull(repo, 51)
    h = await make_harness()
    await label(h, 51, FAIL_FAST)
    seed_pin(repo, 51, 4242)
    push(repo, 51, "5" * 40)
    await send(h, 51, "synchronize", sender="partner")
    assert len(runs(repo)) == 1
    body = english(status(repo, 51))
    line = line_with(body, "**Reuse pin:**")
    assert line == (
        "- ✅ **Reuse pin:** Run `4242` is pinned, so pushes start no sweep; removing the primary "
        "label and adding it again sweeps anyway."
    )
    assert "### ✅ Run `4242` is pinned for reuse, so pushes start no sweep. Next: a maintainer merges." in body
    assert "❌" not in body
    assert check(repo, "5" * 40)["conclusion"] == "success"


async def test_a_merged_pr_reads_as_merged_not_as_closed_with_an_error(repo, make_harness):
    """A merged PR is ➖ "merged" with the pinned run named, not ❌ "reopen it"."""
    open_pull(repo, 52)
    h = await make_harness()
    await label(h, 52, FAIL_FAST)
    seed_pin(repo, 52, 4343)
    repo.update_pull(REPO, 52, state="closed", merged=True)
    await send(h, 52, "closed", sender="maintainer")
    body = english(status(repo, 52))
    line = line_with(body, "**Pull request:**")
    assert line.startswith("- ➖") and "Merged" in line and "`4343` is the pinned run" in line
    assert "Reopen" not in body and "❌" not in body
