"""Run comments through the webhook into the fake GitHub: each sweep the bot dispatched gets one bilingual comment
once it finishes (its outcome on the commit it tested, the next step and whose it is, the failed jobs, the viewer
links), edited in place on a redelivery and when a rerun of it finishes; the status comment keeps the latest
state as well."""

from __future__ import annotations

from harness import REPO
from test_sweep_gate import (  # noqa: F401  the fixtures this module's tests take
    FAIL_FAST,
    english,
    label,
    make_harness,
    no_merge_wait,
    open_pull,
    push,
    repo,  # noqa: F401
    runs,
    send,
    status,
)

from bot.rules.markers import marker

VIEWER = "https://inferencex.semianalysis.com"


def run_comments(github, number: int) -> list[dict]:
    return [
        c
        for c in github.comments(REPO, number)
        if c["user"]["login"] == github.bot_login and c["body"].startswith("<!-- sweepbot:sweep-run-")
    ]


def run_comment(github, number: int, run_id: int) -> dict:
    found = [
        c
        for c in github.comments(REPO, number)
        if c["user"]["login"] == github.bot_login and c["body"].startswith(marker(f"sweep-run-{run_id}") + "\n")
    ]
    assert len(found) == 1, f"{len(found)} comments for run {run_id}"
    return found[0]


async def test_a_failed_run_gets_a_comment_naming_its_failed_jobs_and_how_to_rerun_them(repo, make_harness):
    """Pins: the failed jobs named and linked (by links the bot builds from job ids), the counts, "Re-run failed
    jobs" with the run's link, in both languages; the status comment shows the failure too; a redelivery edits
    the same comment and adds none."""
    open_pull(repo, 60)
    h = await make_harness()
    await label(h, 60, FAIL_FAST)
    (run,) = runs(repo)
    jobs = repo.set_jobs(
        REPO,
        run["id"],
        [
            {"name": "build", "conclusion": "success"},
            {"name": "bmk `mi355x` [x](https://evil.example)", "conclusion": "failure"},
            {"name": "eval", "conclusion": "timed_out"},
            {"name": "notify", "conclusion": "skipped"},
        ],
    )
    payload = repo.workflow_run_payload(REPO, run["id"], "completed", conclusion="failure")
    await h.deliver("workflow_run", payload, delivery="done-1")
    body = run_comment(repo, 60, run["id"])["body"]
    text = english(body)
    html = repo._repo(REPO).json["html_url"]
    headline = text.split("\n")[1]
    assert headline.startswith(f"### ❌ [Sweep run {run['id']}]({html}/actions/runs/{run['id']}) ended with `failure`")
    assert (
        "2 of 4 jobs failed" in headline and "@partner fixes them" in headline and "reruns the failed jobs" in headline
    )
    assert "1 succeeded, 2 failed, 1 skipped" in text
    assert f"[``bmk `mi355x` [x](https://evil.example)``]({html}/actions/runs/{run['id']}/job/{jobs[1]['id']})" in text
    assert f"[`eval`]({html}/actions/runs/{run['id']}/job/{jobs[2]['id']})" in text
    assert "unofficialRun" not in body, "no viewer links for a failed run"
    assert "## 中文" in body and "有 2 个失败" in body
    assert english(status(repo, 60)).split("\n")[2].startswith("### ❌ Sweep"), "the status keeps the latest state"
    before = run_comment(repo, 60, run["id"])
    await h.deliver("workflow_run", payload, delivery="done-2")  # GitHub sends it again
    assert len(run_comments(repo, 60)) == 1
    assert run_comment(repo, 60, run["id"]) == before


async def test_a_successful_run_gets_a_comment_with_the_viewer_links(repo, make_harness):
    """Pins: a success names no failed job, asks for nothing, and links the results viewer for the run."""
    open_pull(repo, 61)
    h = await make_harness()
    await label(h, 61, FAIL_FAST)
    (run,) = runs(repo)
    repo.set_jobs(
        REPO, run["id"], [{"name": "build", "conclusion": "success"}, {"name": "bmk", "conclusion": "success"}]
    )
    await h.deliver("workflow_run", repo.workflow_run_payload(REPO, run["id"], "completed", conclusion="success"))
    text = english(run_comment(repo, 61, run["id"])["body"])
    assert "2 succeeded, 0 failed, 0 skipped" in text
    assert " passed on `" in text and f"Next: a maintainer pins it with `/use {run['id']}`" in text
    assert f"{VIEWER}/inference?unofficialRun={run['id']}" in text
    assert f"{VIEWER}/evaluation?unofficialRun={run['id']}" in text
    assert "❌" not in text and "reruns" not in text


async def test_a_run_the_bot_cancelled_for_a_newer_push_gets_no_comment(repo, make_harness):
    """Pins: a superseded run, cancelled by the bot, is not announced; the newer run is what the status shows."""
    open_pull(repo, 62)
    h = await make_harness()
    await label(h, 62, FAIL_FAST)
    (old,) = runs(repo)
    push(repo, 62, "6" * 40)
    await send(h, 62, "synchronize", sender="partner")
    assert repo.runs(REPO)[0]["conclusion"] == "cancelled"
    await h.deliver("workflow_run", repo.workflow_run_payload(REPO, old["id"], "completed"))
    assert run_comments(repo, 62) == []


async def test_a_rerun_of_the_failed_jobs_that_finishes_edits_the_runs_comment(repo, make_harness):
    """One comment per run, not per attempt (each new comment notifies everyone watching the PR): a rerun that
    passes edits the run's comment, which then says which attempt it is."""
    open_pull(repo, 63)
    h = await make_harness()
    await label(h, 63, FAIL_FAST)
    (run,) = runs(repo)
    repo.set_jobs(
        REPO, run["id"], [{"name": "build", "conclusion": "success"}, {"name": "bmk", "conclusion": "failure"}]
    )
    await h.deliver("workflow_run", repo.workflow_run_payload(REPO, run["id"], "completed", conclusion="failure"))
    first = run_comment(repo, 63, run["id"])
    again = repo.rerun_failed_jobs(REPO, run["id"])
    assert (again["status"], again["run_attempt"]) == ("queued", 2)
    repo.set_jobs(REPO, run["id"], [{"name": "bmk", "conclusion": "success"}])
    await h.deliver("workflow_run", repo.workflow_run_payload(REPO, run["id"], "completed", conclusion="success"))
    second = run_comment(repo, 63, run["id"])
    assert second["id"] == first["id"] and len(run_comments(repo, 63)) == 1
    text = english(second["body"])
    assert "(attempt 2) passed on" in text
    assert "2 succeeded, 0 failed" in text, "the latest attempt of each job"
    assert len(runs(repo)) == 1, "a rerun is not a new dispatch"
