"""Words people can trust: the status comment and the checks say each state as it is, through the webhook into the
shared fake. Each test names a false state the status showed before: ❌ only for what a person on this PR must
fix, ⏳ for waiting, ✅ done, ➖ not applicable, and the checks follow the same facts."""

from __future__ import annotations

from harness import REPO
from test_reuse_command import fake_clock, finished_run  # noqa: F401  (fake_clock: autouse, artifacts unexpired)
from test_sweep_gate import (  # noqa: F401  the fixtures this module's tests take
    FAIL_FAST,
    english,
    label,
    make_harness,
    no_merge_wait,
    open_pull,  # noqa: F401
    push,
    repo,
    runs,
    send,
    status,
)


def headline(github, number: int) -> str:
    """The status comment's first line (after its marker and record)."""
    return english(status(github, number)).split("\n")[2]


def visible(github, number: int) -> str:
    """The English status without its collapsed section."""
    return english(status(github, number)).split("<details>")[0]


def sweep_checks(github, sha: str) -> list[dict]:
    return [c for c in github.check_runs(REPO, sha) if c["name"] == "sweep"]


async def test_a_forks_first_status_has_no_false_alarm_about_its_merge_commit(repo, make_harness):
    """Regression: a fork PR's first status said "❌ Merge commit: ... was made for an earlier head, not for the
    approved `eface39`" while nothing was approved yet."""
    open_pull(repo, 120, fork=True)
    repo.update_pull(REPO, 120, merge_commit_sha="5" * 40)  # GitHub's merge commit, of an earlier head or not
    h = await make_harness()
    await send(h, 120, "opened", sender="partner")
    body = english(status(repo, 120))
    assert "❌" not in body, body
    assert headline(repo, 120).startswith("### ⏳ Waiting for a maintainer to approve")
    merge_line = next(line for line in body.splitlines() if "**Merge commit:**" in line)
    assert merge_line.startswith("- ➖")


async def test_a_failed_sweep_reads_as_failed_and_fails_the_sweep_check_on_the_tested_head(repo, make_harness):
    """Regression: after the run failed the status said "✅ Sweep run: Run `1017` is `completed`" and nothing red
    showed on the PR (a fork's trusted run runs on the default branch, so its own checks never reach the head)."""
    pr = open_pull(repo, 121, fork=True)
    h = await make_harness()
    await label(h, 121, FAIL_FAST)
    (run,) = runs(repo, "e2e-tests.yml")
    sha = pr["head"]["sha"]
    (check,) = sweep_checks(repo, sha)
    assert check["status"] in ("queued", "in_progress") and check["conclusion"] is None
    assert check["details_url"] == run["html_url"]
    assert "failed" not in check["output"]["title"], "regression: a sweep not yet finished was titled failed"
    repo.start_run(REPO, run["id"])
    await h.deliver("workflow_run", repo.workflow_run_payload(REPO, run["id"], "in_progress"))
    assert sweep_checks(repo, sha)[0]["status"] == "in_progress"
    assert headline(repo, 121).startswith("### ⏳ Sweep [run ")
    await h.deliver("workflow_run", repo.workflow_run_payload(REPO, run["id"], "completed", conclusion="failure"))
    (check,) = sweep_checks(repo, sha)
    assert (check["status"], check["conclusion"]) == ("completed", "failure")
    assert headline(repo, 121).startswith(f"### ❌ Sweep [run {run['id']}](")
    assert "failed on" in headline(repo, 121) and "@partner" in headline(repo, 121)
    line = next(line for line in english(status(repo, 121)).splitlines() if "**Sweep run:**" in line)
    assert line.startswith("- ❌"), line


async def test_a_passed_sweep_passes_its_check_and_names_the_next_step(repo, make_harness):
    pr = open_pull(repo, 122)
    h = await make_harness()
    await label(h, 122, FAIL_FAST)
    (run,) = runs(repo)
    await h.deliver("workflow_run", repo.workflow_run_payload(REPO, run["id"], "completed", conclusion="success"))
    (check,) = sweep_checks(repo, pr["head"]["sha"])
    assert check["conclusion"] == "success"
    assert f"Next: a maintainer pins it with `/use {run['id']}`" in headline(repo, 122)


async def test_a_superseded_runs_check_says_cancelled_on_its_own_head(repo, make_harness):
    first = open_pull(repo, 123)["head"]["sha"]
    h = await make_harness()
    await label(h, 123, FAIL_FAST)
    push(repo, 123, "7" * 40)
    await send(h, 123, "synchronize", sender="partner")
    (old,) = sweep_checks(repo, first)
    assert old["conclusion"] == "cancelled"
    (new,) = sweep_checks(repo, "7" * 40)
    assert new["conclusion"] is None


async def test_after_the_merge_no_advice_that_no_longer_applies(repo, make_harness):
    """Regression: after the merge the status still said "remove and re-add the primary label to sweep again"."""
    open_pull(repo, 124)
    h = await make_harness()
    await label(h, 124, FAIL_FAST)
    run = finished_run(repo, 124)
    comment = repo.add_comment(REPO, 124, f"/use {run['id']}", user="maintainer", author_association="MEMBER")
    await h.deliver("issue_comment", repo.issue_comment_payload(REPO, 124, comment))
    repo.update_pull(REPO, 124, state="closed", merged=True)
    await send(h, 124, "closed", sender="maintainer")
    body = english(status(repo, 124))
    assert headline(repo, 124).startswith("### ✅ Merged; pinned run")
    assert "add it again" not in body and "re-add" not in body, body


async def test_the_check_run_summary_is_the_headline_and_what_is_open_not_a_copy(repo, make_harness):
    """Regression: the check run repeated the whole status comment, down to "This comment is updated in place"."""
    pr = open_pull(repo, 125)
    h = await make_harness()
    await label(h, 125, FAIL_FAST)
    (check,) = [c for c in repo.check_runs(REPO, pr["head"]["sha"]) if c["name"] == "sweep-gate"]
    summary = check["output"]["summary"]
    assert "<details>" not in summary and "updated in place" not in summary
    assert summary.split("\n")[0] == headline(repo, 125)
    assert "updated in place" not in status(repo, 125)


async def test_the_use_reply_and_the_merge_notice_name_the_commit_the_fork_sweep_tested(repo, make_harness):
    """Regression: the `/use` reply and the merge notice said "pinned run `1017` ... made on commit `8f3062b`": the
    default-branch commit a fork's trusted workflow starts from, not the head it tested that every other text
    names."""
    from test_reuse_command import merge, merge_comment, reply  # noqa: PLC0415

    pr = open_pull(repo, 126, fork=True)
    head = pr["head"]["sha"]
    repo.add_repo("SemiAnalysisAI/InferenceX-app", installation_id=1)
    h = await make_harness()
    await label(h, 126, FAIL_FAST)
    (run,) = runs(repo, "e2e-tests.yml")
    assert run["head_sha"] != head, "the trusted run starts from the default branch"
    repo.complete_run(REPO, run["id"], "success")
    repo.add_artifact(REPO, run["id"], "results_bmk_dsr1")
    await h.deliver("workflow_run", repo.workflow_run_payload(REPO, run["id"], "completed"))
    comment = repo.add_comment(REPO, 126, f"/use {run['id']}", user="maintainer", author_association="MEMBER")
    await h.deliver("issue_comment", repo.issue_comment_payload(REPO, 126, comment))
    text = "\n".join(line for line in reply(repo, 126, comment).split("\n") if not line.startswith("<!--"))
    assert f"tested on `{head[:7]}`" in text and run["head_sha"][:7] not in text, text
    await merge(h, 126)
    notice = merge_comment(repo, 126)
    assert f"tested on `{head[:7]}`" in notice and run["head_sha"][:7] not in notice, notice
