"""Leases that survive load (issue 26): a replica renews the leases of the lanes it runs on a connection and a
thread of its own, so neither the journal's writer nor the event loop delays a renewal, and a lane claimed as a
renewal runs is never taken for lost. One replica on the tests' throwaway PostgreSQL.
"""

from __future__ import annotations

import asyncio
import threading

import psycopg
import pytest

from bot.delivery.journal import DONE, NewDelivery
from bot.delivery.replica_workers import ReplicaWorkers
from bot.telemetry.metrics import Metrics
from harness import REPO, wait_until
from postgres import postgres_db, postgres_url  # noqa: F401
from test_journal_replicas import replicas  # noqa: F401  (a journal per replica on one database)

pytestmark = pytest.mark.timeout(120)  # every wait here is bounded: a hang fails the test instead


def new(i: int, number: int) -> NewDelivery:
    return NewDelivery(f"d{i}", "pull_request", "labeled", REPO, number, 1, b"{}")


class Held:
    """A process function that holds each delivery until `finish` is set, and records its runs and cancellations."""

    def __init__(self) -> None:
        self.runs: list[str] = []
        self.cancelled: list[str] = []
        self.finish = asyncio.Event()

    async def __call__(self, d, effects) -> None:
        self.runs.append(d.id)
        try:
            await self.finish.wait()
        except asyncio.CancelledError:
            self.cancelled.append(d.id)
            raise


async def test_a_lane_claimed_in_the_batch_of_a_renewal_is_not_lost(replicas):
    """Regression (issue 26): the heartbeat renewed through the journal's writer, one operation among the claims of
    a group commit. A claim committed in the same batch after the renewal was missing from its answer, and the
    heartbeat, comparing that answer with the lanes held once the claiming worker had registered its lane, logged
    "lease lost" for a lane just claimed and cancelled its own run (a lone replica, under load: 2 of 4 runs)."""
    journal = replicas()
    held = Held()
    replica = ReplicaWorkers(journal, held, Metrics(), holder="lone", concurrency=1, lease=0.3, poll=30.0)
    await replica.start()
    gate = threading.Event()
    try:
        busy = asyncio.ensure_future(journal._submit(lambda db: gate.wait(10)))  # the writer busy (a slow commit)
        recorded = asyncio.ensure_future(journal.record(new(1, 7)))
        await asyncio.sleep(0.5)  # heartbeats fall due while the writer is busy
        replica.submit(None)  # the idle worker looks: its claim waits behind them
        gate.set()
        await asyncio.gather(busy, recorded)
        await wait_until(lambda: held.runs, "d1 runs")
        await asyncio.sleep(1.0)  # several heartbeats while d1 runs
        assert held.cancelled == []
        held.finish.set()
        await replica.wait_idle(30)
    finally:
        gate.set()
        held.finish.set()
        await replica.drain(1)
    assert held.runs == ["d1"]
    row = await journal.get("d1")
    assert (row.status, row.attempts, row.interrupted) == (DONE, 1, 0)


async def test_a_lane_claimed_just_as_a_renewal_asks_which_lanes_run_is_renewed_not_lost(replicas):
    """The same race at the lease keeper: each renewal asks which lanes run here before it renews them, so a lane
    whose claim committed just as it asked is renewed, never found missing from the answer and lost."""
    journal = replicas()
    await journal.record(new(1, 7))
    loop = asyncio.get_running_loop()
    running: dict[str, str] = {}

    def held() -> dict[str, str]:
        if not running:  # a worker's claim commits, and its lane is registered, as the renewal asks
            claim = asyncio.run_coroutine_threadsafe(journal.claim("keeper", lease=30.0), loop).result(10)
            running[claim.lane] = "its run"
        return dict(running)

    renewals = []
    keeper = journal.keep_leases("keeper", lease=30.0, every=60.0, held=held, on_renewal=renewals.append)
    try:
        keeper.wake()
        await wait_until(lambda: renewals, "a renewal")
    finally:
        await asyncio.to_thread(keeper.stop)
    assert renewals[0].lost == {} and renewals[0].kept == tuple(running) and renewals[0].taken_back == ()


async def test_a_renewal_is_not_held_up_by_the_journals_writer(replicas, postgres_db):  # noqa: F811
    """The renewal has a connection of its own: a writer busy for longer than the lease (a slow commit, a batch
    of claims queued) does not delay it, so the lease does not run out under the run."""
    journal = replicas()
    held = Held()
    await journal.record(new(1, 7))
    replica = ReplicaWorkers(journal, held, Metrics(), holder="lone", concurrency=1, lease=0.6, poll=30.0)
    await replica.start()
    gate = threading.Event()
    try:
        await wait_until(lambda: held.runs, "d1 runs")
        busy = asyncio.ensure_future(journal._submit(lambda db: gate.wait(60)))  # the writer busy from now on
        with psycopg.connect(postgres_db, autocommit=True) as conn:
            conn.execute("UPDATE lanes SET renewed_at = '-infinity'")

            def renewed() -> bool:
                return conn.execute("SELECT renewed_at > '-infinity' FROM lanes").fetchone()[0]

            await wait_until(renewed, "the lease renewed while the writer is busy")
        assert not busy.done() and held.cancelled == []
    finally:
        gate.set()
        held.finish.set()
        await replica.drain(1)
