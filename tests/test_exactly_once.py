"""Every write happens once: GitHub acting and then losing its answer, or failing before it acts, changes nothing.

The table is case → expected effects: for comment create, label add and reaction create, a 502 after GitHub
committed, a read timeout after it committed, and a 502 before it acted, once and three times in a row.
Each case must end with exactly one effect on GitHub and the delivery `done`.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from gidgethub import routing
from harness import REPO, github_app, wait_until

from bot.effects.actions import Comment, DispatchWorkflow, React

COMMENT_ID = 7001
AFTER_502, AFTER_TIMEOUT, BEFORE_502 = "502 after commit", "read timeout after commit", "502 before commit"
FAULTS = (AFTER_502, AFTER_TIMEOUT, BEFORE_502)


def inject(github, fault: str, method: str, path: str, times: int) -> None:
    if fault == AFTER_502:
        github.fail_after_commit(method, path, 502, times=times)
    elif fault == AFTER_TIMEOUT:
        github.raise_after_commit(method, path, httpx.ReadTimeout("read timed out"), times=times)
    else:
        github.fail_next(method, path, 502, times=times)


def reacting_router() -> routing.Router:
    """A handler that reacts 👀 to every PR comment: the reaction create goes through ctx.write_now."""
    router = routing.Router()

    @router.register("issue_comment", action="created")
    async def look(event, ctx):
        result = await ctx.write_now(React(event.data["comment"]["id"], "eyes"))
        assert result.id is not None  # the handler sees GitHub's answer
        return []

    return router


def bot_welcomes(github) -> list[dict]:
    return [
        c
        for c in github.comments(REPO, 1)
        if c["user"]["login"] == github.bot_login and c["body"].startswith("<!-- sweepbot:welcome -->")
    ]


def bot_labelings(github, label: str) -> list[dict]:
    return [
        e
        for e in github.events(REPO, 1)
        if e["event"] == "labeled" and e["label"]["name"] == label and e["actor"]["login"] == github.bot_login
    ]


@pytest.mark.parametrize("times", [1, 3])
@pytest.mark.parametrize("fault", FAULTS)
async def test_comment_create(make_harness, fault, times):
    h = await make_harness()
    inject(h.github, fault, "POST", rf"/repos/{REPO}/issues/1/comments$", times)
    await h.deliver("pull_request", h.github.pull_request_payload(REPO, 1, "opened"), delivery="c-1")
    assert len(bot_welcomes(h.github)) == 1
    assert (await h.journal_row("c-1")).status == "done"


@pytest.mark.parametrize("times", [1, 3])
@pytest.mark.parametrize("fault", FAULTS)
async def test_label_add(make_harness, fault, times):
    h = await make_harness()
    inject(h.github, fault, "POST", rf"/repos/{REPO}/issues/1/labels$", times)
    await h.deliver("pull_request", h.github.pull_request_payload(REPO, 1, "opened"), delivery="l-1")
    assert h.github.issue_labels(REPO, 1) == ["perf-changelog"]
    assert len(bot_labelings(h.github, "perf-changelog")) == 1
    assert (await h.journal_row("l-1")).status == "done"


@pytest.mark.parametrize("times", [1, 3])
@pytest.mark.parametrize("fault", FAULTS)
async def test_reaction_create(make_harness, fault, times):
    h = await make_harness(router=reacting_router())
    comment = h.github.add_comment(REPO, 1, "please run it", user="maintainer")
    inject(h.github, fault, "POST", rf"/issues/comments/{comment['id']}/reactions$", times)
    payload = h.github.issue_comment_payload(REPO, 1, comment, "created")
    await h.deliver("issue_comment", payload, delivery="r-1")
    assert h.github.reactions(comment["id"]) == ["eyes"]
    assert (await h.journal_row("r-1")).status == "done"


async def test_a_retried_delivery_skips_what_its_ledger_has_done(make_harness):
    """A comment is made, then the handler fails: the retry re-plans it and the ledger answers without GitHub."""
    router = routing.Router()
    tries = []

    @router.register("issue_comment", action="created")
    async def reply_then_fail(event, ctx):
        tries.append(await ctx.write_now(Comment(1, "note", "hello")))
        if len(tries) == 1:
            raise RuntimeError("a bug after the write")
        return []

    h = await make_harness(router=router)
    comment = h.github.add_comment(REPO, 1, "hi", user="maintainer")
    h.github.reset_requests()
    await h.deliver("issue_comment", h.github.issue_comment_payload(REPO, 1, comment, "created"), delivery="s-1")
    row = await h.journal_row("s-1")
    assert (row.status, row.attempts) == ("done", 2)
    assert tries[0] == tries[1] and tries[0].outcome == "created"
    assert h.github.count("POST", r"/issues/1/comments$") == 1
    assert h.github.count("GET", r"/issues/1/comments$") == 1  # the second attempt did not even look
    effects = await h.bot.journal.effects(row.seq)
    assert [e.state for e in effects.values()] == ["done"]


async def test_token_revoked_mid_run_gets_a_new_one_and_the_next_delivery_succeeds(make_harness):
    h = await make_harness()
    await h.deliver("pull_request", h.github.pull_request_payload(REPO, 1, "opened"), delivery="t-1")
    issued = h.github.tokens_issued
    h.github.revoke_tokens()
    h.github.add_pull(REPO, number=2, user="partner", files=["inferencex-e2e/perf-changelog.yaml"])
    await h.deliver("pull_request", h.github.pull_request_payload(REPO, 2, "opened"), delivery="t-2")
    row = await h.journal_row("t-2")
    assert row.error is None
    assert (row.status, row.attempts) == ("done", 1)
    assert h.github.tokens_issued == issued + 1
    health = await (await h.client.get("/healthz")).json()
    assert health["authentication"] == "ok" and health["ok"] is True


async def test_authentication_failures_show_in_healthz(make_harness):
    """Regression: with every token refused, each delivery failed while /healthz said ok."""
    h = await make_harness()
    h.github.fail_next("POST", r"/app/installations/1/access_tokens$", 401, times=1000)
    await h.post("pull_request", h.github.pull_request_payload(REPO, 1, "opened"), delivery="a-1")

    async def refused() -> dict | None:
        health = await (await h.client.get("/healthz")).json()
        return health if health["authentication"] != "ok" else None

    health = await wait_until(refused, "/healthz reports the refused installation token")
    assert "installation token for 1" in health["authentication"]["1"]
    assert health["ok"] is True  # one installation's token is a warning, never the whole process out of rotation
    assert (await h.journal_row("a-1")).status in ("retrying", "running")  # kept, to run once GitHub takes it


async def test_one_token_fetch_serves_every_waiter_even_when_it_fails(github, app_key):
    """Regression: a failed token fetch was retried by each waiting worker in turn."""

    github.add_repo(REPO, installation_id=1)
    github.fail_next("POST", r"/app/installations/1/access_tokens$", 404, times=100)
    app = github_app(app_key)
    results = await asyncio.gather(*(app.token(1) for _ in range(10)), return_exceptions=True)
    assert all(isinstance(r, Exception) for r in results)
    assert github.count("POST", r"/access_tokens$") == 1


async def test_github_down_then_back_ends_with_every_delivery_done_and_none_doubled(make_harness):
    """An outage (here: every request 503 until the workers have retried each PR a few times) heals by itself."""
    h = await make_harness(retry_delay=0.02, max_attempts=3)
    for n in range(2, 7):
        h.github.add_pull(REPO, number=n, user="partner", files=["inferencex-e2e/perf-changelog.yaml"])
    h.github.set_down(True)
    for n in range(1, 7):
        await h.post("pull_request", h.github.pull_request_payload(REPO, n, "opened"), delivery=f"o-{n}")

    async def tried_past_max_attempts() -> list | None:  # a bug would have failed at its third try
        rows = [await h.journal_row(f"o-{n}") for n in range(1, 7)]
        return rows if all(r.attempts >= 4 for r in rows) else None

    rows = await wait_until(tried_past_max_attempts, "every delivery tried four times, one past max_attempts")
    assert {r.status for r in rows} <= {"retrying", "running"}
    h.github.set_down(False)
    await h.idle()
    rows = [await h.journal_row(f"o-{n}") for n in range(1, 7)]
    assert [r.status for r in rows] == ["done"] * 6
    for n in range(1, 7):
        welcomes = [c for c in h.github.comments(REPO, n) if c["user"]["login"] == h.github.bot_login]
        assert len(welcomes) == 1, n


async def test_a_dispatch_whose_answer_was_lost_is_found_by_its_dispatch_id_not_sent_again(make_harness):
    router = routing.Router()
    seen = {}

    @router.register("pull_request", action="labeled")
    async def sweep(event, ctx):
        pr = event.data["pull_request"]
        seen["run"] = await ctx.write_now(
            DispatchWorkflow(
                "run-sweep.yml",
                pr["head"]["ref"],
                {"pr-number": str(pr["number"]), "dispatch-id": "d-1-abc"},
                "d-1-abc",
                pr["head"]["sha"],
            )
        )
        return []

    h = await make_harness(router=router)
    h.github.add_workflow(REPO, "run-sweep.yml", inputs=["pr-number", "dispatch-id"])
    h.github.add_pull(REPO, number=2, head_ref="recipe")  # same-repo: its branch can be dispatched on
    h.github.fail_after_commit("POST", r"/actions/workflows/run-sweep.yml/dispatches$", 502, times=3)
    await h.deliver("pull_request", h.github.pull_request_payload(REPO, 2, "labeled"), delivery="w-1")
    runs = h.github.runs(REPO)
    assert (await h.journal_row("w-1")).error is None
    assert len(runs) == 1 and seen["run"].id == runs[0]["id"]
    assert h.github.count("POST", r"/dispatches$") == 1
    assert (await h.journal_row("w-1")).status == "done"


async def test_a_dispatch_that_cannot_be_reconciled_is_not_sent_again_and_is_visible(make_harness):
    router = routing.Router()

    @router.register("pull_request", action="labeled")
    async def sweep(event, ctx):
        pr = event.data["pull_request"]
        await ctx.write_now(
            DispatchWorkflow(
                "run-sweep.yml", pr["head"]["ref"], {"dispatch-id": "d-1-zzz"}, "d-1-zzz", pr["head"]["sha"]
            )
        )
        return []

    h = await make_harness(router=router)
    h.github.add_workflow(REPO, "run-sweep.yml", inputs=["dispatch-id"])
    h.github.add_pull(REPO, number=2, head_ref="recipe")
    h.github.fail_next("POST", r"/dispatches$", 502, times=1)  # GitHub says 502 and shows no run
    await h.deliver("pull_request", h.github.pull_request_payload(REPO, 2, "labeled"), delivery="w-2")
    assert h.github.count("POST", r"/dispatches$") == 1  # never a second one blindly
    row = await h.journal_row("w-2")
    assert row.status == "failed" and "Unreconciled" in row.error
    health = await (await h.client.get("/healthz")).json()
    assert "d-1-zzz" in health["unreconciled_effects"][0]["effect"]
    assert health["ok"] is True and health["warnings"][0]["name"] == "unreconciled_effect"  # a warning only
    (said,) = [c for c in h.github.comments(REPO, 2) if c["user"]["login"] == h.github.bot_login]
    assert said["body"].startswith("<!-- sweepbot:dispatch-unknown-d-1-zzz -->")
    assert "`d-1-zzz`" in said["body"] and "has **not** started it again" in said["body"]
