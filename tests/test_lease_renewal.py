"""Leases that survive load: a replica renews the leases of the lanes it runs on a connection and a
thread of its own, so neither the journal's writer nor the event loop delays a renewal; a lease that ran out
before its renewal but that no other replica took is taken back at once, and the run goes on; a lease another
replica took stops the run. Every lease lost is counted in /metrics and named in /healthz.

One replica, or two, on the tests' throwaway PostgreSQL. A renewal that comes late is a lease whose deadline the
database's clock has passed (its row's `expires_at` moved into the past), so no test waits out a lease.
"""

from __future__ import annotations

import asyncio
import collections
import threading

import psycopg
import pytest
from harness import REPO, wait_until
from postgres import postgres_db, postgres_url  # noqa: F401
from test_journal_replicas import replicas  # noqa: F401  (a journal per replica on one database)
from test_workers import holding_router

from bot.delivery.journal import DONE, NewDelivery
from bot.delivery.replica_workers import ReplicaWorkers
from bot.telemetry.metrics import Metrics

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


def counting_claims(journal) -> collections.Counter:
    """Count the claims `journal` answered (each worker's look for work)."""
    answered: collections.Counter = collections.Counter()
    claim = journal.claim

    async def counted(*args, **kwargs):
        got = await claim(*args, **kwargs)
        answered["all"] += 1
        return got

    journal.claim = counted
    return answered


def run_out(url: str) -> None:
    """The database's clock passes every lease's deadline before its renewal comes."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE lanes SET expires_at = clock_timestamp() - interval '1 second'")


def lost(metrics: Metrics, outcome: str) -> float:
    return metrics.leases_lost.labels(outcome)._value.get()


async def test_a_lane_claimed_in_the_batch_of_a_renewal_is_not_lost(replicas):
    """Regression: the heartbeat renewed through the journal's writer, one operation among the claims of
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


async def test_a_lease_that_ran_out_before_its_renewal_but_was_not_taken_is_taken_back_at_once(replicas, postgres_db):  # noqa: F811
    """Regression: a lease that ran out before its renewal came (the replica's loop or its journal
    busy) made the lane claimable by anyone, this replica's own idle workers too: one of them took the delivery
    over and ran it a second time beside the run still under way. Now the replica's own workers leave the lanes
    it runs alone, and the late renewal takes the lease back (no other replica took it): the run goes on, and the
    lane is held again long before a 30 s lease would have run out."""
    journal = replicas()
    answered = counting_claims(journal)
    held = Held()
    metrics = Metrics()
    await journal.record(new(1, 7))
    replica = ReplicaWorkers(journal, held, metrics, holder="lone", concurrency=2, lease=30.0, poll=30.0)
    await replica.start()  # renews every 10 s: none comes during what follows unless asked
    try:
        await wait_until(lambda: held.runs, "d1 runs")
        lane = replica.held()[0]
        run_out(postgres_db)
        assert await journal.leases() == {}  # the lease ran out: nobody holds the lane now
        before = answered["all"]
        replica.submit(None)  # this replica's idle worker looks for work meanwhile
        await wait_until(lambda: answered["all"] > before, "the idle worker looked")
        assert held.runs == ["d1"]  # not taken over by its own replica: d1 runs once
        replica.renew_now()  # the renewal, late
        await wait_until(lambda: journal.leases(), "the lease is held again")
        assert await journal.leases() == {lane: "lone"}
        assert held.cancelled == [] and lost(metrics, "taken_back") == 1
        assert lost(metrics, "stopped") == 0
        held.finish.set()
        await replica.wait_idle(30)
    finally:
        held.finish.set()
        await replica.drain(1)
    row = await journal.get("d1")
    assert (row.status, row.attempts, row.interrupted) == (DONE, 1, 0)


async def test_a_lease_another_replica_took_stops_the_run_and_is_counted(replicas, postgres_db):  # noqa: F811
    journal, other = replicas(), replicas()
    held = Held()
    metrics = Metrics()
    await journal.record(new(1, 7))
    replica = ReplicaWorkers(journal, held, metrics, holder="slow", concurrency=1, lease=30.0, poll=30.0)
    await replica.start()
    try:
        await wait_until(lambda: held.runs, "d1 runs")
        run_out(postgres_db)
        taken = await other.claim("quick")  # another replica takes the lane over before the renewal comes
        assert taken.delivery.id == "d1" and taken.taken_over
        replica.renew_now()
        await wait_until(lambda: held.cancelled, "the run stops")
        assert held.cancelled == ["d1"] and await journal.leases() == {taken.lane: "quick"}
        assert lost(metrics, "stopped") == 1 and lost(metrics, "taken_back") == 0
    finally:
        held.finish.set()
        await replica.drain(1)


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


async def test_a_lease_lost_is_a_counter_in_metrics_and_a_warning_in_healthz(
    postgres_db,
    make_harness,  # noqa: F811
    github,
):
    started, release = asyncio.Event(), asyncio.Event()
    h = await make_harness(
        db_path=postgres_db, router=holding_router(started, release), lease_seconds=30.0, worker_thread=False
    )
    github.add_pull(REPO, number=2, user="partner2")
    assert (await h.post("pull_request", github.pull_request_payload(REPO, 2, "opened"))).status == 202
    await started.wait()
    workers = h.bot.workers
    lane = workers.held()[0]
    run_out(postgres_db)
    workers.renew_now()
    await wait_until(lambda: lost(h.bot.metrics, "taken_back"), "the lease is taken back")
    health = await (await h.client.get("/healthz")).json()
    warning = [w for w in health["warnings"] if w["name"] == "lease_lost"]
    assert warning and warning[0]["lane"] == lane and warning[0]["outcome"] == "taken_back"
    assert health["ok"] is True  # a warning only
    metrics = await (await h.client.get("/metrics")).text()
    assert 'sweepbot_leases_lost_total{outcome="taken_back"} 1.0' in metrics
    release.set()
    await h.idle()
