"""`sweepbot serve` runs the workers on a thread and event loop of their own; intake keeps the server's loop."""

from __future__ import annotations

import threading

from gidgethub import routing
from harness import REPO

from handlers.registry import router_of


async def test_deliveries_are_processed_on_the_worker_thread_and_acked_on_the_servers(make_harness):
    router = routing.Router()
    where = []

    @router.register("pull_request", action="opened")
    async def note(event, ctx):
        where.append(threading.current_thread().name)
        return []

    h = await make_harness(router=router, worker_thread=True)
    resp = await h.deliver("pull_request", h.github.pull_request_payload(REPO, 1, "opened"), delivery="th-1")
    assert resp.status == 202
    assert where == ["sweepbot-workers"]
    assert (await h.journal_row("th-1")).status == "done"


async def test_the_threaded_bot_welcomes_once_and_stops_cleanly(make_harness):
    h = await make_harness(worker_thread=True, router=router_of("welcome"))
    await h.deliver("pull_request", h.github.pull_request_payload(REPO, 1, "opened"), delivery="th-2")
    assert len([c for c in h.github.comments(REPO, 1) if c["user"]["login"] == h.github.bot_login]) == 1
    await h.bot.stop()
    assert not h.bot._loop.thread.is_alive()
