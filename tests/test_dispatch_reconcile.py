"""A dispatch GitHub took but answered without run details (204) is reconciled by its dispatch id, never sent again.

GitHub starts the run, answers 204 with no `workflow_run_id`, and lists the run a moment later. The fake
answers the dispatch with that 204 (`fail_after_commit` with 204: the run IS made) and keeps the run out of the
workflow's run listing for as many lists as a case says, which is GitHub's listing lagging the dispatch.
The delivery is tried again (the intent kept) and the retry finds the run; when no retry is left, or the run
never shows, it fails as unreconciled with its intent kept, so a redelivery looks instead of dispatching. A
refusal (422) is the one failure that withdraws the intent.
"""

from __future__ import annotations

from gidgethub import routing
from harness import REPO
from test_sweep_gate import FAIL_FAST, english, label, open_pull, runs, status

from bot.app.sandbox import add_sweep_workflows
from bot.delivery.journal import Queued
from bot.effects.actions import DispatchWorkflow
from bot.effects.executor import DISPATCH_LOOKS
from handlers import registry

WORKFLOW = "run-sweep.yml"
DISPATCHES = rf"/actions/workflows/{WORKFLOW}/dispatches$"
RUN_LIST = rf"/actions/workflows/{WORKFLOW}/runs$"
NOT_YET_LISTED = {"total_count": 0, "workflow_runs": []}
# The look for an earlier run before the dispatch, then each look after the 204 in the same attempt.
FIRST_ATTEMPT_LISTS = 1 + DISPATCH_LOOKS
DISPATCH_KEY = f"dispatch:{WORKFLOW}:d-2-204"  # the dispatch's row in the ledger


def sweeping_router(seen: dict) -> routing.Router:
    """A handler that dispatches one sweep per labeled event, with a fixed dispatch id."""
    router = routing.Router()

    @router.register("pull_request", action="labeled")
    async def sweep(event, ctx):
        pr = event.data["pull_request"]
        seen["run"] = await ctx.write_now(
            DispatchWorkflow(
                WORKFLOW,
                pr["head"]["ref"],
                {"pr-number": str(pr["number"]), "dispatch-id": "d-2-204"},
                "d-2-204",
                pr["head"]["sha"],
            )
        )
        return []

    return router


async def sweeping_harness(make_harness, seen: dict, **changes):
    h = await make_harness(router=sweeping_router(seen), **changes)
    h.github.add_workflow(REPO, WORKFLOW, inputs=["pr-number", "dispatch-id"])
    h.github.add_pull(REPO, number=2, head_ref="recipe")  # same-repo: its branch can be dispatched on
    return h


def answer_without_run_details(github) -> None:
    """The next dispatch starts its run and is answered 204 with no body, as a GitHub without run details does."""
    github.fail_after_commit("POST", DISPATCHES, 204)


def runs_not_listed(github, lists: int) -> None:
    """The next `lists` listings of the workflow's runs do not show the dispatched run yet."""
    github.fail_next("GET", RUN_LIST, 200, times=lists, json=NOT_YET_LISTED)


async def redeliver(h, delivery: str) -> None:
    """A person's redelivery of a finished delivery: requeued with its ledger, taken by the running workers."""
    row = await h.bot.journal.requeue(delivery)
    h.bot.workers.submit(Queued(row.seq, row.lane))
    await h.idle()


def unknown_dispatch_comments(github) -> list[dict]:
    return [
        c
        for c in github.comments(REPO, 2)
        if c["user"]["login"] == github.bot_login and c["body"].startswith("<!-- sweepbot:dispatch-unknown-d-2-204 -->")
    ]


async def test_a_run_listed_only_after_the_first_attempt_is_found_by_the_retry_not_dispatched_again(make_harness):
    """Regression: after a 204 without run details the executor raised Unreconciled inside the send,
    which took it for GitHub's refusal: the intent was withdrawn and the delivery failed at once, telling the PR
    the dispatch was unknown, although GitHub had started the run and listed it a moment later. Now the intent
    stays, the delivery is tried again, and the retry finds the run by its dispatch id."""
    seen: dict = {}
    h = await sweeping_harness(make_harness, seen)
    answer_without_run_details(h.github)
    runs_not_listed(h.github, FIRST_ATTEMPT_LISTS)
    await h.deliver("pull_request", h.github.pull_request_payload(REPO, 2, "labeled"), delivery="n-1")
    row = await h.journal_row("n-1")
    assert (row.status, row.error) == ("done", None)
    assert row.attempts == 2, "the first attempt did not find the run; the retry did"
    (run,) = h.github.runs(REPO, WORKFLOW)
    assert seen["run"].outcome == "dispatched" and seen["run"].id == run["id"]
    assert h.github.count("POST", DISPATCHES) == 1
    effects = await h.bot.journal.effects(row.seq)
    dispatched = effects[DISPATCH_KEY]
    assert dispatched.state == "done" and dispatched.result["id"] == run["id"]
    assert unknown_dispatch_comments(h.github) == []
    health = await (await h.client.get("/healthz")).json()
    assert health["unreconciled_effects"] == []


async def test_a_run_never_listed_fails_as_unreconciled_keeps_its_intent_and_a_redelivery_sends_nothing(make_harness):
    """Regression: the withdrawn intent left the redelivered delivery an empty ledger, so it dispatched
    a second sweep (hours of 8-GPU nodes) when the first run was still not listed. Now the intent stays: the
    redelivery looks for the run by its dispatch id and, not finding it, fails again without a second dispatch."""
    seen: dict = {}
    h = await sweeping_harness(make_harness, seen)
    answer_without_run_details(h.github)
    runs_not_listed(h.github, 1000)  # never, in this test
    await h.deliver("pull_request", h.github.pull_request_payload(REPO, 2, "labeled"), delivery="n-2")
    row = await h.journal_row("n-2")
    assert row.status == "failed" and "Unreconciled" in row.error
    health = await (await h.client.get("/healthz")).json()
    assert "d-2-204" in health["unreconciled_effects"][0]["effect"]
    # a warning for a person, never a reason to take the whole process out of rotation (/readyz)
    assert health["ok"] is True and [w["name"] for w in health["warnings"]] == ["unreconciled_effect"]
    effects = await h.bot.journal.effects(row.seq)
    assert getattr(effects.get(DISPATCH_KEY), "state", None) == "intended"
    assert len(unknown_dispatch_comments(h.github)) == 1  # said on the PR once, kept up to date after

    await redeliver(h, "n-2")
    assert h.github.count("POST", DISPATCHES) == 1, "the redelivery sent no second dispatch"
    assert len(h.github.runs(REPO, WORKFLOW)) == 1
    row = await h.journal_row("n-2")
    assert row.status == "failed" and "Unreconciled" in row.error
    effects = await h.bot.journal.effects(row.seq)
    assert getattr(effects.get(DISPATCH_KEY), "state", None) == "intended"


async def test_on_the_last_try_a_run_not_listed_is_unreconciled_at_once_and_its_intent_stays(make_harness):
    """Regression: when no retry is left, the 204 whose run is not listed is failed as unreconciled at
    once (shown in /healthz, said on the PR), as before, but the intent is no longer withdrawn with it: a later
    redelivery reconciles it instead of dispatching again."""
    seen: dict = {}
    h = await sweeping_harness(make_harness, seen, retry_for=0.0)  # the first failure is already the last try
    answer_without_run_details(h.github)
    runs_not_listed(h.github, 1000)
    await h.deliver("pull_request", h.github.pull_request_payload(REPO, 2, "labeled"), delivery="n-4")
    row = await h.journal_row("n-4")
    assert (row.status, row.attempts) == ("failed", 1) and "Unreconciled" in row.error
    health = await (await h.client.get("/healthz")).json()
    assert "d-2-204" in health["unreconciled_effects"][0]["effect"]
    assert len(unknown_dispatch_comments(h.github)) == 1
    effects = await h.bot.journal.effects(row.seq)
    assert getattr(effects.get(DISPATCH_KEY), "state", None) == "intended"


async def test_a_refused_dispatch_still_withdraws_its_intent_so_a_corrected_retry_dispatches(make_harness):
    """Guards the boundary of the fixes above: only an answer that took the dispatch keeps the intent. A 422 is
    GitHub refusing it, so the intent is withdrawn and a redelivery, once the cause is fixed, dispatches.
    This passes on the code before the fix (it withdrew on every error); it goes red on a fix that keeps
    every intent (tried: the 422's intent then stays in the ledger)."""
    seen: dict = {}
    h = await sweeping_harness(make_harness, seen)
    h.github.fail_next("POST", DISPATCHES, 422, json={"message": 'Unexpected inputs provided: ["pr-number"]'})
    await h.deliver("pull_request", h.github.pull_request_payload(REPO, 2, "labeled"), delivery="n-3")
    row = await h.journal_row("n-3")
    assert row.status == "failed" and "Unexpected inputs" in row.error
    assert h.github.runs(REPO, WORKFLOW) == []
    effects = await h.bot.journal.effects(row.seq)
    assert DISPATCH_KEY not in effects

    await redeliver(h, "n-3")  # the workflow was fixed meanwhile: GitHub takes the same dispatch now
    row = await h.journal_row("n-3")
    assert (row.status, row.error) == ("done", None)
    (run,) = h.github.runs(REPO, WORKFLOW)
    assert seen["run"].id == run["id"]
    assert h.github.count("POST", DISPATCHES) == 2
    assert unknown_dispatch_comments(h.github) == []


async def test_the_sweep_gate_never_says_a_dispatch_it_started_failed_while_its_run_is_not_listed(github, make_harness):
    """Regression (found with the fix above): the gate took the transient "not listed yet" for a failed
    start and wrote "GitHub failed to start the workflow" on the PR, though GitHub had started the run. It now
    says nothing until the retry finds the run, then shows it running."""
    github.add_repo(REPO, default_branch="main", installation_id=1)
    github.set_permission(REPO, "maintainer", "write")
    add_sweep_workflows(github, REPO)
    open_pull(github, 41)
    answer_without_run_details(github)
    runs_not_listed(github, FIRST_ATTEMPT_LISTS)
    h = await make_harness(router=registry.router)
    await label(h, 41, FAIL_FAST, delivery="n-5")
    assert (await h.journal_row("n-5")).status == "done"
    (run,) = runs(github)
    assert github.count("POST", DISPATCHES) == 1
    said = [
        english(r.json["body"])
        for r in github.writes
        if "/issues/41/comments" in r.path and isinstance(r.json, dict) and "body" in r.json
    ]
    assert said and not any("failed to start" in body or "did not start" in body for body in said), said
    assert f"actions/runs/{run['id']}" in status(github, 41)
