"""Replica workers over one PostgreSQL journal: several replicas in this process, each with its own
journal connection, sharing lanes, per-PR order, leases that a dead replica loses, SIGTERM's hand-back and one
write budget. The bots run against the shared fake GitHub."""

from __future__ import annotations

import asyncio
import collections
import time

import psycopg
import pytest
from harness import REPO, Sleeps, wait_until
from postgres import postgres_db, postgres_url  # noqa: F401
from test_journal_replicas import replicas  # noqa: F401  (a journal per replica on one database)
from test_workers import backlog_of, holding_router

from bot.delivery.journal import DONE, NewDelivery
from bot.delivery.replica_workers import Doorbell, ReplicaWorkers
from bot.github.client import SharedWritePacer
from bot.telemetry.metrics import Metrics

pytestmark = pytest.mark.timeout(120)  # every wait here is bounded: a hang fails the test instead


def new(i: int, number: int, action: str = "labeled") -> NewDelivery:
    return NewDelivery(f"d{i}", "pull_request", action, REPO, number, 1, b"{}")


class Recorder:
    """A process function that records which PR ran when, on which replica, and whether two of one PR overlapped."""

    def __init__(self, pause: float = 0.0):
        self.order: dict[int, list[str]] = collections.defaultdict(list)
        self.running: set[int] = set()
        self.overlaps = 0
        self.by: collections.Counter = collections.Counter()
        self.pause = pause

    def on(self, name: str):
        async def process(d, effects) -> None:
            if d.number in self.running:
                self.overlaps += 1
            self.running.add(d.number)
            await asyncio.sleep(self.pause)
            self.order[d.number].append(d.id)
            self.by[name] += 1
            self.running.discard(d.number)

        return process


async def test_two_replicas_share_the_work_one_pr_at_a_time_in_arrival_order(replicas):
    writer = replicas()
    expected: dict[int, list[str]] = collections.defaultdict(list)
    for i in range(60):
        number = i % 12 + 1
        await writer.record(new(i, number))
        expected[number].append(f"d{i}")
    recorder = Recorder(pause=0.005)
    workers = [
        ReplicaWorkers(replicas(), recorder.on(name), Metrics(), holder=name, concurrency=3, poll=0.02)
        for name in ("a", "b")
    ]
    for r in workers:
        await r.start()
    await workers[0].wait_idle(30)
    for r in workers:
        await r.drain(1)
    assert dict(recorder.order) == dict(expected)
    assert recorder.overlaps == 0
    assert set(recorder.by) == {"a", "b"}  # both replicas took work
    assert await writer.leases() == {}


async def test_a_replica_that_stops_renewing_loses_its_lane_and_another_takes_it_over(replicas):
    writer = replicas()
    await writer.record(new(1, 7))
    hang = asyncio.Event()

    async def stuck(d, effects) -> None:
        await hang.wait()  # the replica dies here: it never finishes nor renews

    dead = ReplicaWorkers(replicas(), stuck, Metrics(), holder="dead", concurrency=1, lease=0.6, poll=0.02)
    await dead.start()
    await wait_until(dead.held, "the dead replica holds a lane")
    await asyncio.to_thread(dead._keeper.stop)  # a SIGKILL: no more renewals, and nothing handed back
    recorder = Recorder()
    alive = ReplicaWorkers(
        replicas(), recorder.on("alive"), Metrics(), holder="alive", concurrency=1, lease=0.6, poll=0.05
    )
    await alive.start()
    await alive.wait_idle(30)
    row = await writer.get("d1")
    assert (row.status, row.attempts, row.interrupted) == (DONE, 2, 1)
    assert recorder.order == {7: ["d1"]}
    await alive.drain(1)
    hang.set()
    await dead.drain(1)


async def test_sigterm_hands_every_lease_back_at_once(replicas):
    writer = replicas()
    for i, number in enumerate((1, 2, 3)):
        await writer.record(new(i, number))
    started = asyncio.Event()

    async def slow(d, effects) -> None:
        started.set()
        await asyncio.sleep(30)

    replica = ReplicaWorkers(replicas(), slow, Metrics(), holder="leaving", concurrency=3, poll=0.02)
    await replica.start()
    await started.wait()
    await wait_until(lambda: len(replica.held()) == 3, "the replica holds three lanes")
    assert set((await writer.leases()).values()) == {"leaving"}
    await replica.drain(0.05)  # the in-flight ones do not finish in time
    assert await writer.leases() == {}  # not 15 s later: at once


async def test_a_heads_not_before_holds_its_lane_back_on_every_replica(replicas):
    """The label settle and a retry's wait are rows, not timers in one process's memory."""
    writer = replicas()
    seq = await writer.record(
        NewDelivery("late", "pull_request", "labeled", REPO, 5, 1, b"{}", not_before=time.time() + 3600)
    )
    await writer.record(new(2, 5))
    recorder = Recorder()
    journal = replicas()
    claimed = []  # what each of the replica's claims took: it looks for work every poll
    real_claim = journal.claim

    async def claim(*args, **kw):
        got = await real_claim(*args, **kw)
        claimed.append(got.delivery.id if got else None)
        return got

    journal.claim = claim
    replica = ReplicaWorkers(journal, recorder.on("r"), Metrics(), holder="r", concurrency=2, poll=0.02)
    await replica.start()
    await wait_until(
        lambda: len(claimed) >= 6, "six claims made"
    )  # both workers looked three times or so, not a wait for a while
    assert claimed[:6] == [None] * 6 and recorder.order == {}  # d2 waits behind its head, which waits for its time
    assert await writer.claim("another replica") is None  # and no other replica may take either
    await writer.retry_later(seq, time.time(), "now")
    await replica.wait_idle(30)
    assert recorder.order == {5: ["late", "d2"]}
    await replica.drain(1)


async def test_the_write_budget_is_one_for_all_replicas(replicas):
    sleeps = Sleeps()
    pacers = [SharedWritePacer(replicas().pace, "installation:1", limit=3, window=60.0, sleep=sleeps) for _ in range(2)]
    for i in range(5):
        await pacers[i % 2].acquire()
    assert len(sleeps.calls) == 2 and all(50 < s <= 60 for s in sleeps.calls)  # the 4th and 5th wait a window


async def test_bots_on_postgresql_welcome_each_pr_once_whichever_replica_takes_it(
    postgres_db,
    make_harness,  # noqa: F811
    github,
):
    bots = [await make_harness(db_path=postgres_db) for _ in range(2)]
    assert all(type(h.bot.workers) is ReplicaWorkers for h in bots)
    for number in range(101, 121):
        github.add_pull(REPO, number=number, user=f"partner{number}", files=["inferencex-e2e/perf-changelog.yaml"])
        payload = github.pull_request_payload(REPO, number, "opened")
        await bots[number % 2].post("pull_request", payload)
    for h in bots:
        await h.idle()
    welcomes = collections.Counter(
        number
        for number in range(101, 121)
        for c in github.comments(REPO, number)
        if c["body"].startswith("<!-- sweepbot:welcome -->")
    )
    assert welcomes == {number: 1 for number in range(101, 121)}
    with psycopg.connect(postgres_db) as conn:
        assert conn.execute("SELECT count(*) FROM deliveries WHERE status <> 'done'").fetchone() == (0,)
    health = await (await bots[0].client.get("/healthz")).json()
    assert health["database"]["reachable"] is True and health["database"]["oldest_pending_seconds"] is None
    assert health["database"]["leases_held"] == 0 and "password" not in health["database"]["target"]
    metrics = await (await bots[0].client.get("/metrics")).text()
    assert f'sweepbot_replica_lanes{{replica="{bots[0].bot.workers.holder}"}} 0.0' in metrics


async def test_metrics_backlog_on_postgresql_counts_every_replicas_deliveries(
    postgres_db,
    make_harness,  # noqa: F811
    github,
):
    """Regression: /metrics read the in-memory count of the scheduler, which replicas never keep, so
    sweepbot_backlog said 0 on PostgreSQL whatever waited. It is the shared journal's backlog now: queued or
    running, recorded by any replica."""
    started, release = asyncio.Event(), asyncio.Event()
    bots = [await make_harness(db_path=postgres_db, router=holding_router(started, release)) for _ in range(2)]
    github.add_pull(REPO, number=2, user="partner2")
    for i, number in enumerate((1, 1, 1, 2)):
        payload = github.pull_request_payload(REPO, number, "opened")
        assert (await bots[i % 2].post("pull_request", payload, delivery=f"pg-b{i}")).status == 202
    await started.wait()
    for h in bots:
        assert backlog_of(await (await h.client.get("/metrics")).text()) == 4
    release.set()
    for h in bots:
        await h.idle()
    assert backlog_of(await (await bots[0].client.get("/metrics")).text()) == 0


async def test_an_idle_replica_takes_work_another_replica_recorded_at_once_not_at_its_poll(replicas):
    """Idle workers wait on a notification from the database, not only on their poll. The poll here is an hour:
    once both workers have looked and found nothing, only the notification can make them take d1."""
    writer = replicas()
    journal = replicas()
    looked: set[str] = set()  # the workers whose claim found nothing
    claim = journal.claim

    async def noted(*args, **kwargs):
        got = await claim(*args, **kwargs)
        if got is None:
            looked.add(asyncio.current_task().get_name())
        return got

    journal.claim = noted
    recorder = Recorder()
    replica = ReplicaWorkers(journal, recorder.on("idle"), Metrics(), holder="idle", concurrency=2, poll=3600.0)
    await replica.start()
    try:
        assert await asyncio.to_thread(replica._listener.listening.wait, 10)
        await wait_until(lambda: len(looked) == 2, "both workers looked, found nothing and wait")
        await writer.record(new(1, 4))
        await wait_until(lambda: recorder.order == {4: ["d1"]}, "the idle replica ran d1 (its poll is an hour away)")
        await writer.record(new(2, 4))  # behind a lane this replica handed back with its next claim
        await wait_until(lambda: recorder.order == {4: ["d1", "d2"]}, "the idle replica ran d2")
        assert await writer.leases() == {}  # handed back: nothing holds the lane once its head is done
    finally:
        await replica.drain(1)


# -- the doorbell: idle workers woken one at a time ------------------------------------------------------------


async def test_a_ring_wakes_one_idle_worker_and_a_ring_with_none_waiting_is_kept():
    bell = Doorbell(poll=30.0)
    woken: list[int] = []

    async def idle(i: int) -> None:
        await bell.wait()
        woken.append(i)

    tasks = [asyncio.create_task(idle(i)) for i in range(4)]
    await asyncio.sleep(0)
    bell.ring()
    await asyncio.sleep(0)
    assert woken == [3]  # one: the last to go idle (the first is the watch, which also polls)
    bell.ring()
    bell.ring()
    await asyncio.sleep(0)
    assert woken == [3, 2, 1]
    bell.ring()
    await asyncio.sleep(0.01)
    assert woken == [3, 2, 1, 0]  # the watch, once nobody else sleeps
    bell.ring()  # nobody waits: kept
    await asyncio.wait_for(bell.wait(), 1)
    await asyncio.gather(*tasks)


async def test_only_the_watch_looks_at_each_poll():
    """Of eight idle workers only the first to wait, the watch, looks at each poll; the others sleep until a ring.
    The watch looks four times and stops: by then no other worker has looked once."""
    bell = Doorbell(poll=0.05)
    looks = collections.Counter()

    async def idle(i: int) -> None:
        for _ in range(4):
            await bell.wait()
            looks[i] += 1

    tasks = [asyncio.create_task(idle(i)) for i in range(8)]
    await asyncio.wait_for(tasks[0], 30)
    assert looks == {0: 4}  # four polls, one look each, all the watch's
    bell.ring_all()
    await asyncio.sleep(0)
    assert all(looks[i] >= 1 for i in range(8))
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def test_an_idle_replica_of_many_workers_claims_once_a_poll_not_once_per_worker(replicas):
    """Regression: every idle worker looked at every poll and every notification, so 32 workers made
    32 claims a poll on an idle replica, and a burst woke them all onto one delivery. Once every worker has
    looked once, each poll's claim is the watch's: the claims that follow are all one worker's."""
    journal = replicas()
    first: set[str] = set()  # the workers whose first claim has come back
    later: list[str] = []  # the worker of each claim begun after all 32 had
    claim = journal.claim

    async def noted(*args, **kwargs):
        worker = asyncio.current_task().get_name()
        if len(first) == 32:
            later.append(worker)
        try:
            return await claim(*args, **kwargs)
        finally:
            first.add(worker)

    journal.claim = noted
    recorder = Recorder()
    replica = ReplicaWorkers(journal, recorder.on("many"), Metrics(), holder="many", concurrency=32, poll=0.05)
    await replica.start()
    try:
        await wait_until(lambda: len(later) >= 10, "ten claims after every worker had looked once")
        assert len(set(later)) == 1, collections.Counter(later)  # not 32 workers at each poll
        writer = replicas()
        for i in range(20):
            await writer.record(new(i, 100 + i))
        await wait_until(lambda: len(recorder.order) == 20, "the burst ran", seconds=20)
        assert sum(len(v) for v in recorder.order.values()) == 20
    finally:
        await replica.drain(1)


async def test_replicas_split_githubs_budget_of_requests_under_way(postgres_db, make_harness):  # noqa: F811
    """GitHub allows the App 100 requests under way at once, whatever the number of replicas: each takes an
    equal share of SWEEPBOT_GITHUB_IN_FLIGHT, and a replica that stops gives its share back to the others."""
    bots = [
        await make_harness(db_path=postgres_db, github_in_flight=60, lease_seconds=0.9, worker_thread=False)
        for _ in range(3)
    ]
    await wait_until(lambda: [h.bot.app.budget.limit for h in bots] == [20, 20, 20], "three shares", seconds=10)
    await bots[2].bot.workers.drain(1)
    await wait_until(lambda: [h.bot.app.budget.limit for h in bots[:2]] == [30, 30], "two shares", seconds=10)
    with psycopg.connect(postgres_db) as conn:
        assert conn.execute("SELECT count(*) FROM replicas").fetchone() == (2,)
