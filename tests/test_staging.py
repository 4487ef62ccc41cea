"""The results service's callbacks (SPEC §4): `stage-results-started`, `stage-results-completed` and
`ingest-completed` through the webhook, updating the bot's own staging reply in place and writing the ingest
report."""

from __future__ import annotations

import copy

from bot.comments import marker
from harness import REPO
from test_reuse_command import (RESULTS, command, fake_clock, pinned_and_staged, reactions,  # noqa: F401
                                reply_comment_of)
from test_sweep_gate import english, make_harness, no_merge_wait, open_pull, repo  # noqa: F401


def callback_payload(github, number: int, run_id: int, event_type: str, reply_id: int | None, **extra):
    payload = {"source-repository": RESULTS, "pr-number": str(number), "run-id": str(run_id),
               "app-run-id": "777", "run-date": "2026-01-01", "requested-by": "maintainer", **extra}
    if reply_id is not None:
        payload["comment-id"] = str(reply_id)
    return github.repository_dispatch_payload(REPO, event_type, payload)


async def test_started_then_completed_callbacks_update_one_reply_twice(repo, make_harness):
    h = await make_harness()
    run, c = await pinned_and_staged(h, repo, 53)
    reply = copy.deepcopy(reply_comment_of(repo, 53, c))  # the fake edits its comments in place
    started = callback_payload(repo, 53, run["id"], "stage-results-started", reply["id"])
    await h.deliver("repository_dispatch", started)
    after_start = reply_comment_of(repo, 53, c)
    assert after_start["id"] == reply["id"] and after_start["body"] != reply["body"]
    assert f"{RESULTS}/actions/runs/777" in after_start["body"]
    done = callback_payload(repo, 53, run["id"], "stage-results-completed", None, **{
        "stage-succeeded": "true", "results-url": "https://inferencex.semianalysis.com/staged/53"})
    await h.deliver("repository_dispatch", done)  # no comment id: found by the run id
    final = reply_comment_of(repo, 53, c)
    assert final["id"] == reply["id"] and "https://inferencex.semianalysis.com/staged/53" in final["body"]
    assert len([x for x in repo.comments(REPO, 53) if x["body"].startswith(marker(f"reply-{c['id']}"))]) == 1


async def test_a_callback_with_a_non_numeric_run_id_or_from_elsewhere_is_rejected(repo, make_harness):
    h = await make_harness()
    run, c = await pinned_and_staged(h, repo, 54)
    before = reply_comment_of(repo, 54, c)["body"]
    bad = callback_payload(repo, 54, run["id"], "stage-results-started", None)
    bad["client_payload"]["run-id"] = "12a"
    elsewhere = callback_payload(repo, 54, run["id"], "stage-results-started", None,
                                 **{"source-repository": "someone/else"})
    for payload in (bad, elsewhere):
        resp = await h.deliver("repository_dispatch", payload)
        assert resp.status == 202
    assert reply_comment_of(repo, 54, c)["body"] == before


async def test_a_callback_for_an_unknown_reply_is_recorded_and_ignored(repo, make_harness):
    h = await make_harness()
    open_pull(repo, 55)
    await h.deliver("repository_dispatch", callback_payload(repo, 55, 424242, "stage-results-started", 999999),
                    delivery="unknown-reply")
    assert (await h.journal_row("unknown-reply")).status == "done"
    assert [x for x in repo.comments(REPO, 55) if x["user"]["login"] == repo.bot_login] == []


async def test_an_ingest_report_is_a_table_and_a_rerun_updates_the_same_comment(repo, make_harness):
    h = await make_harness()
    open_pull(repo, 56)
    counts = {row: {col: 0 for col in ("new", "duplicate", "skipped", "unmapped", "failed")}
              for row in ("benchmark", "eval", "trace", "power")}
    counts["benchmark"]["new"] = 12
    await h.deliver("repository_dispatch", callback_payload(repo, 56, 900, "ingest-completed", None, counts=counts))
    counts["benchmark"]["duplicate"], counts["eval"]["failed"] = 12, 2
    await h.deliver("repository_dispatch", callback_payload(repo, 56, 900, "ingest-completed", None, counts=counts))
    (report,) = [x for x in repo.comments(REPO, 56) if x["body"].startswith(marker("ingest-900"))]
    text = english(report["body"])
    assert "| `benchmark` | 12 | 12 | 0 | 0 | 0 |" in text and "| `eval` | 0 | 0 | 0 | 0 | 2 |" in text
    assert "2 failed" in text and f"{RESULTS}/actions/runs/777" in text


async def test_stage_results_restages_the_pinned_run_and_its_callbacks_update_its_own_reply(repo, make_harness):
    h = await make_harness()
    run, c = await pinned_and_staged(h, repo, 60)
    again = await command(h, 60, "/stage-results")
    assert reactions(repo, again) == ["+1"]
    first, second = repo.repository_dispatches(RESULTS)
    stage_reply = reply_comment_of(repo, 60, again)
    assert second["client_payload"]["run-id"] == str(run["id"])
    assert second["client_payload"]["comment-id"] == str(stage_reply["id"]) != first["client_payload"]["comment-id"]
    done = callback_payload(repo, 60, run["id"], "stage-results-completed", stage_reply["id"], **{
        "stage-succeeded": "false"})
    await h.deliver("repository_dispatch", done)
    assert f"{RESULTS}/actions/runs/777" in reply_comment_of(repo, 60, again)["body"]
