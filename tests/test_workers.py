"""Workers: per-PR order, PRs in parallel, retry budget, failures recorded, resume and drain."""

from __future__ import annotations

import asyncio

from bot.journal import Journal, NewDelivery
from bot.metrics import Metrics
from bot.workers import Workers


def new(i: int, repo: str = "o/r", number: int | None = 1) -> NewDelivery:
    return NewDelivery(id=f"d{i}", event="pull_request", action="opened", repo=repo, number=number, installation=1,
                       body=b"{}")


async def record(journal: Journal, *items: NewDelivery):
    for item in items:
        await journal.record(item)
    return await journal.unfinished()


async def test_one_pr_in_arrival_order_and_prs_concurrently(tmp_path):
    journal = Journal(str(tmp_path / "j.db"))
    seen: list[str] = []
    running = 0
    most = 0

    async def process(d):
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.01)
        seen.append(d.id)
        running -= 1

    await record(journal, *[new(i, number=i % 3) for i in range(12)])
    workers = Workers(journal, process, Metrics(), concurrency=4)
    await workers.start()
    await workers.wait_idle(5)
    for lane in range(3):
        mine = [d for d in seen if int(d[1:]) % 3 == lane]
        assert mine == sorted(mine, key=lambda d: int(d[1:]))
    assert most == 3  # three PRs at once, never two deliveries of one PR
    assert (await journal.counts()) == {"done": 12}
    await workers.drain(1)
    journal.close()


async def test_failure_is_retried_then_recorded_and_the_lane_moves_on(tmp_path):
    journal = Journal(str(tmp_path / "j.db"))
    calls: list[str] = []

    async def process(d):
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
    journal = Journal(path)
    await journal.record(new(0))
    row = (await journal.unfinished())[0]
    for _ in range(3):
        await journal.start(row.seq)  # three starts that never finished
    called = []

    async def process(d):
        called.append(d.id)

    workers = Workers(journal, process, Metrics(), concurrency=1, max_attempts=3)
    await workers.start()
    await workers.wait_idle(5)
    assert called == []
    assert (await journal.get("d0")).error == "gave up after 3 attempts"
    await workers.drain(1)
    journal.close()


async def test_drain_finishes_in_flight_work_and_leaves_the_rest_queued(tmp_path):
    path = str(tmp_path / "j.db")
    journal = Journal(path)
    started = asyncio.Event()
    release = asyncio.Event()

    async def process(d):
        started.set()
        await release.wait()

    await record(journal, new(0), new(1), new(2))
    workers = Workers(journal, process, Metrics(), concurrency=1)
    await workers.start()
    await started.wait()
    asyncio.get_running_loop().call_later(0.05, release.set)
    left = await workers.drain(2)
    assert left == 2
    assert (await journal.get("d0")).status == "done"
    assert [d.id for d in await journal.unfinished()] == ["d1", "d2"]
    journal.close()


async def test_drain_timeout_leaves_a_stuck_delivery_for_the_next_start(tmp_path):
    path = str(tmp_path / "j.db")
    journal = Journal(path)

    async def stuck(d):
        await asyncio.sleep(60)

    await record(journal, new(0))
    workers = Workers(journal, stuck, Metrics(), concurrency=1)
    await workers.start()
    await asyncio.sleep(0.05)
    await workers.drain(0.1)
    journal.close()
    reopened = Journal(path)
    assert [(d.id, d.status) for d in await reopened.unfinished()] == [("d0", "running")]
    reopened.close()


async def test_concurrent_records_commit_together_and_duplicates_are_refused(tmp_path):
    journal = Journal(str(tmp_path / "j.db"))
    results = await asyncio.gather(*(journal.record(new(i % 50)) for i in range(100)))
    assert sum(r is not None for r in results) == 50
    assert (await journal.counts()) == {"queued": 50}
    journal.close()


async def test_a_journal_failure_does_not_kill_the_worker(tmp_path):
    """Regression: an exception from the journal inside a worker ended that worker task for good, so its lane
    (and every later delivery on it) was never processed again."""
    journal = Journal(str(tmp_path / "j.db"))
    await record(journal, new(0), new(1))
    real_start = journal.start
    failures = iter([RuntimeError("disk full")])

    async def flaky_start(seq):
        for exc in failures:
            raise exc
        return await real_start(seq)

    journal.start = flaky_start
    seen = []

    async def process(d):
        seen.append(d.id)

    workers = Workers(journal, process, Metrics(), concurrency=1)
    await workers.start()
    await workers.wait_idle(5)
    assert seen == ["d1"]  # d0 could not be started; the worker lived on and took the next one
    assert [d.id for d in await journal.unfinished()] == ["d0"]  # left for the next start, not lost
    await workers.drain(1)
    journal.close()
