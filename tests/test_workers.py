"""Workers: per-PR order, PRs in parallel, retry budget, failures recorded, resume and drain."""

from __future__ import annotations

import asyncio
import http
import sqlite3
import time

import gidgethub
import pytest
from gidgethub import routing
from harness import REPO

from bot.delivery.journal import NewDelivery
from bot.delivery.journal_sqlite import SqliteJournal
from bot.delivery.workers import Workers
from bot.telemetry.metrics import Metrics

pytestmark = pytest.mark.timeout(60)  # every wait here is bounded: a hang fails the test instead


def new(i: int, repo: str = "o/r", number: int | None = 1) -> NewDelivery:
    return NewDelivery(
        id=f"d{i}", event="pull_request", action="opened", repo=repo, number=number, installation=1, body=b"{}"
    )


async def record(journal: SqliteJournal, *items: NewDelivery):
    for item in items:
        await journal.record(item)
    return await journal.unfinished()


async def test_one_pr_in_arrival_order_and_prs_concurrently(tmp_path):
    """Three PRs run at once, never two deliveries of one PR. The first delivery of each lane waits (bounded)
    until all three lanes are running, instead of sleeping and hoping they overlap: a scheduler that ran lanes one
    after another fails here, and one that ran two of a PR at once shows in `overlaps`."""
    journal = SqliteJournal(str(tmp_path / "j.db"))
    seen: list[str] = []
    running: set[int] = set()
    overlaps = 0
    three_at_once = asyncio.Event()

    async def process(d, *_):
        nonlocal overlaps
        if d.number in running:
            overlaps += 1
        running.add(d.number)
        if len(running) == 3:
            three_at_once.set()
        try:
            await asyncio.wait_for(three_at_once.wait(), 10)
        finally:
            running.discard(d.number)
        seen.append(d.id)

    await record(journal, *[new(i, number=i % 3) for i in range(12)])
    workers = Workers(journal, process, Metrics(), concurrency=4)
    await workers.start()
    await workers.wait_idle(30)
    for lane in range(3):
        mine = [d for d in seen if int(d[1:]) % 3 == lane]
        assert mine == sorted(mine, key=lambda d: int(d[1:]))
    assert three_at_once.is_set() and overlaps == 0  # three PRs at once (4 workers), never two of one PR
    assert (await journal.counts()) == {"done": 12}
    await workers.drain(1)
    journal.close()


async def test_failure_is_retried_then_recorded_and_the_lane_moves_on(tmp_path):
    journal = SqliteJournal(str(tmp_path / "j.db"))
    calls: list[str] = []

    async def process(d, *_):
        calls.append(d.id)
        if d.id == "d0":
            raise RuntimeError("GitHub said no")

    await record(journal, new(0), new(1))
    workers = Workers(journal, process, Metrics(), concurrency=2, max_attempts=3, retry_delay=0.001)
    await workers.start()
    await workers.wait_idle(5)
    assert calls == ["d0", "d0", "d0", "d1"]
    failed = await journal.get("d0")
    assert (failed.status, failed.attempts, failed.error) == ("failed", 3, "RuntimeError: GitHub said no")
    assert (await journal.get("d1")).status == "done"
    assert 'outcome="failed"' in workers.metrics.render().decode()
    await workers.drain(1)
    journal.close()


async def test_a_delivery_interrupted_too_often_is_failed_not_crash_looped(tmp_path):
    """Regression guard: a delivery that kills the process on every try must not be retried forever at start."""
    path = str(tmp_path / "j.db")
    journal = SqliteJournal(path)
    seq = await journal.record(new(0))
    for _ in range(3):  # started, then the process died; each restart counts the interruption
        await journal.begin(seq)
        assert await journal.recover(3) == []
    await journal.begin(seq)  # and a fourth time
    called = []

    async def process(d, *_):
        called.append(d.id)

    workers = Workers(journal, process, Metrics(), concurrency=1, max_attempts=3)
    await workers.start()
    await workers.wait_idle(5)
    assert called == []
    row = await journal.get("d0")
    assert (row.status, row.interrupted, row.error) == ("failed", 4, "interrupted by a crash more than 3 times")
    await workers.drain(1)
    journal.close()


async def test_drain_finishes_in_flight_work_and_leaves_the_rest_queued(tmp_path):
    path = str(tmp_path / "j.db")
    journal = SqliteJournal(path)
    started = asyncio.Event()
    release = asyncio.Event()

    async def process(d, *_):
        started.set()
        await release.wait()

    await record(journal, new(0), new(1), new(2))
    workers = Workers(journal, process, Metrics(), concurrency=1)
    await workers.start()
    await started.wait()
    asyncio.get_running_loop().call_soon(release.set)  # runs at drain's first wait: d0 is in flight until then
    left = await workers.drain(10)
    assert left == 2
    assert [(await journal.get(f"d{i}")).status for i in range(3)] == ["done", "queued", "queued"]
    assert [q.seq for q in await journal.unfinished()] == [2, 3]
    journal.close()


async def test_drain_timeout_leaves_a_stuck_delivery_for_the_next_start(tmp_path):
    path = str(tmp_path / "j.db")
    journal = SqliteJournal(path)
    started = asyncio.Event()

    async def stuck(d, *_):
        started.set()
        await asyncio.Event().wait()  # never finishes

    await record(journal, new(0))
    workers = Workers(journal, stuck, Metrics(), concurrency=1)
    await workers.start()
    await started.wait()  # running (begun in the journal), not merely queued
    assert await workers.drain(0.1) == 1
    journal.close()
    reopened = SqliteJournal(path)
    assert (await reopened.get("d0")).status == "running"
    assert [q.seq for q in await reopened.unfinished()] == [1]
    reopened.close()


async def test_concurrent_records_commit_together_and_duplicates_are_refused(tmp_path):
    journal = SqliteJournal(str(tmp_path / "j.db"))
    results = await asyncio.gather(*(journal.record(new(i % 50)) for i in range(100)))
    assert sum(r is not None for r in results) == 50
    assert (await journal.counts()) == {"queued": 50}
    journal.close()


async def test_a_journal_failure_is_retried_in_place_and_order_holds(tmp_path):
    """Regression: a delivery whose journal update failed was skipped in its lane and replayed after a restart
    behind newer events, so a labeled/unlabeled pair could flip. Now the lane waits and tries again."""
    journal = SqliteJournal(str(tmp_path / "j.db"))
    await record(journal, new(0), new(1))
    real_begin = journal.begin
    failures = iter([sqlite3.OperationalError("database or disk is full")] * 2)
    tried = []

    async def flaky_begin(seq):
        tried.append(seq)
        for exc in failures:
            raise exc
        return await real_begin(seq)

    journal.begin = flaky_begin
    seen = []

    async def process(d, *_):
        seen.append(d.id)

    workers = Workers(journal, process, Metrics(), concurrency=1)
    await workers.start()
    await workers.wait_idle(5)
    assert tried == [1, 1, 1, 2]  # two failed writes for d0, tried again in place
    assert seen == ["d0", "d1"]  # d0 first, once the journal took the write; nothing left behind
    assert await journal.counts() == {"done": 2}
    assert workers.journal_error is None
    await workers.drain(1)
    journal.close()


async def test_transient_failures_wait_in_the_journal_and_the_lane_waits_behind_them(tmp_path):
    journal = SqliteJournal(str(tmp_path / "j.db"))
    await record(journal, new(0), new(1), new(2, number=2))
    seen: list[str] = []
    outage = iter([True, True])

    async def process(d, *_):
        seen.append(d.id)
        if d.id == "d0" and next(outage, False):
            raise gidgethub.GitHubBroken(http.HTTPStatus(502))

    workers = Workers(journal, process, Metrics(), concurrency=2, retry_delay=0.05)
    await workers.start()
    await workers.wait_idle(5)
    assert [d for d in seen if d != "d2"] == ["d0", "d0", "d0", "d1"]  # d1 only after d0 went through
    assert seen.index("d2") < seen.index("d1")  # another PR's lane did not wait for this one
    row = await journal.get("d0")
    assert (row.status, row.attempts) == ("done", 3)
    await workers.drain(1)
    journal.close()


async def test_a_permanent_failure_is_recorded_at_once(tmp_path):
    """Regression: a 404 (the PR is gone) was retried 3 times anyway."""
    journal = SqliteJournal(str(tmp_path / "j.db"))
    await record(journal, new(0), new(1))
    calls: list[str] = []

    async def process(d, *_):
        calls.append(d.id)
        if d.id == "d0":
            raise gidgethub.BadRequest(http.HTTPStatus(404), "Not Found")

    workers = Workers(journal, process, Metrics(), concurrency=1, retry_delay=0.01)
    await workers.start()
    await workers.wait_idle(5)
    assert calls == ["d0", "d1"]
    row = await journal.get("d0")
    assert (row.status, row.attempts, row.error) == ("failed", 1, "BadRequest: Not Found")
    await workers.drain(1)
    journal.close()


async def test_a_scheduled_retry_survives_a_restart(tmp_path):
    path = str(tmp_path / "j.db")
    journal = SqliteJournal(path)
    await record(journal, new(0))

    async def down(d, *_):
        raise gidgethub.GitHubBroken(http.HTTPStatus(503))

    first = Workers(journal, down, Metrics(), concurrency=1, retry_delay=0.3)
    await first.start()
    for _ in range(100):
        if (await journal.get("d0")).status == "retrying":
            break
        await asyncio.sleep(0.01)
    await first.drain(1)
    row = await journal.get("d0")
    assert (
        row.status == "retrying" and row.not_before > time.time() and row.error == "GitHubBroken: Service Unavailable"
    )
    seen = []

    async def up(d, *_):
        seen.append((d.id, time.time() >= row.not_before))

    second = Workers(journal, up, Metrics(), concurrency=1)
    await second.start()
    await second.wait_idle(5)
    assert seen == [("d0", True)]  # resumed after the restart, and not before its time
    await second.drain(1)
    journal.close()


async def test_the_backlog_holds_no_payloads(tmp_path):
    """Regression: 10,000 queued deliveries held every payload in memory (297 MB); a restart loaded them all."""
    journal = SqliteJournal(str(tmp_path / "j.db"))
    for i in range(50):
        await journal.record(
            NewDelivery(
                id=f"big{i}",
                event="pull_request",
                action="opened",
                repo="o/r",
                number=i,
                installation=1,
                body=b"x" * 20000,
            )
        )
    workers = Workers(journal, lambda d, *_: asyncio.sleep(0), Metrics(), concurrency=1)
    for queued in await journal.unfinished():
        workers.submit(queued)
    held = workers.queued()
    assert len(held) == 50 and all(not hasattr(q, "body") for q in held)
    assert sum(len(repr(q)) for q in held) < 50 * 200
    journal.close()


def backlog_of(metrics: str) -> float:
    """The sweepbot_backlog gauge in a /metrics page."""
    return float(next(line.split()[1] for line in metrics.splitlines() if line.startswith("sweepbot_backlog ")))


def holding_router(started: asyncio.Event, release: asyncio.Event) -> routing.Router:
    """A router whose one handler (pull_request opened) holds every delivery until `release` is set."""
    router = routing.Router()

    @router.register("pull_request", action="opened")
    async def hold(event, ctx):
        started.set()
        await release.wait()
        return []

    return router


async def test_metrics_backlog_counts_what_waits_and_runs(make_harness, github):
    """/metrics' sweepbot_backlog is the deliveries queued or running (SQLite, the in-memory scheduler)."""
    started, release = asyncio.Event(), asyncio.Event()
    h = await make_harness(router=holding_router(started, release))
    github.add_pull(REPO, number=2, user="partner2")
    for i, number in enumerate((1, 1, 1, 2)):
        assert (
            await h.post("pull_request", github.pull_request_payload(REPO, number, "opened"), delivery=f"b{i}")
        ).status == 202
    await started.wait()
    assert backlog_of(await (await h.client.get("/metrics")).text()) == 4  # two running (PRs 1, 2), two behind
    release.set()
    await h.idle()
    assert backlog_of(await (await h.client.get("/metrics")).text()) == 0


async def test_a_delivery_requeued_from_another_process_waits_behind_its_lane_and_runs_here(tmp_path):
    """`sweepbot redeliver` only queues the row again (another process, another connection); the
    running workers take it in, behind the delivery of its PR that runs now, never beside it."""
    journal = SqliteJournal(str(tmp_path / "j.db"))
    calls: list[str] = []
    release = asyncio.Event()
    d1_running = asyncio.Event()

    async def process(d, *_):
        calls.append(d.id)
        if d.id == "d1":
            d1_running.set()
            await asyncio.wait_for(release.wait(), 10)

    await record(journal, new(0), new(1))  # one PR: d0, then d1
    workers = Workers(journal, process, Metrics(), concurrency=4, adopt_every=0.01)
    await workers.start()
    await asyncio.wait_for(d1_running.wait(), 10)
    assert (await journal.get("d0")).status == "done"

    cli_side = SqliteJournal(str(tmp_path / "j.db"))
    requeued = await cli_side.requeue("d0")
    cli_side.close()
    seq0 = requeued.seq
    for _ in range(1000):  # bounded: until the workers hold it
        if seq0 in {q.seq for q in workers.queued()}:
            break
        await asyncio.sleep(0.01)
    assert seq0 in {q.seq for q in workers.queued()}
    await asyncio.sleep(0.05)  # several adoption rounds: it is held once and has not run beside d1
    assert calls == ["d0", "d1"] and [q.seq for q in workers.queued()].count(seq0) == 1
    release.set()
    await workers.wait_idle(10)
    assert calls == ["d0", "d1", "d0"]
    row = await journal.get("d0")
    assert (row.status, row.attempts) == ("done", 2)
    await workers.drain(1)
    journal.close()
