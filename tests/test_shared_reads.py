"""Reads made once while in flight: `SharedReads`, and the bursts it spares GitHub, a cold process's
policy read and one writer's permission read for many PRs labeled at once."""

from __future__ import annotations

import asyncio

from harness import REPO, load_bench

from bot.github.shared_reads import SharedReads

BENCH = load_bench("github_requests")


class Reads:
    """A read that counts its calls and answers when released."""

    def __init__(self, answer="policy", fail: Exception | None = None):
        self.calls, self.answer, self.fail = 0, answer, fail
        self.release = asyncio.Event()

    async def __call__(self):
        self.calls += 1
        await self.release.wait()
        if self.fail is not None:
            raise self.fail
        return self.answer


async def test_callers_at_once_share_one_read_and_the_answer_is_kept():
    reads, read = SharedReads(), Reads()
    waiting = [asyncio.create_task(reads.get("k", read)) for _ in range(10)]
    await asyncio.sleep(0)
    read.release.set()
    assert await asyncio.gather(*waiting) == ["policy"] * 10
    assert read.calls == 1
    assert await reads.get("k", read) == "policy" and read.calls == 1
    assert reads.cache == {"k": "policy"}


async def test_a_failure_reaches_every_waiter_and_is_not_kept():
    reads, read = SharedReads(), Reads(fail=RuntimeError("GitHub said 502"))
    waiting = [asyncio.create_task(reads.get("k", read)) for _ in range(3)]
    await asyncio.sleep(0)
    read.release.set()
    results = await asyncio.gather(*waiting, return_exceptions=True)
    assert [str(r) for r in results] == ["GitHub said 502"] * 3
    assert reads.cache == {}
    read.fail = None
    assert await reads.get("k", read) == "policy" and read.calls == 2


async def test_the_first_caller_cancelled_leaves_the_read_to_the_others():
    reads, read = SharedReads(), Reads()
    first = asyncio.create_task(reads.get("k", read))
    await asyncio.sleep(0)
    second = asyncio.create_task(reads.get("k", read))
    await asyncio.sleep(0)
    first.cancel()
    await asyncio.sleep(0)
    read.release.set()
    assert await second == "policy"
    assert first.cancelled() and read.calls == 1


async def test_an_answer_forgotten_while_in_flight_is_not_kept():
    reads, read = SharedReads(), Reads(answer="old")
    stale = asyncio.create_task(reads.get("k", read))
    await asyncio.sleep(0)
    reads.forget("k")  # e.g. a push changed the policy file while it was being read
    read.release.set()
    assert await stale == "old"
    assert reads.cache == {}
    read.answer = "new"
    assert await reads.get("k", read) == "new" and read.calls == 2


def policy_reads(h) -> int:
    return sum(1 for r in h.github.requests if r.path == f"/repos/{REPO}/contents/.github/sweepbot.yml")


async def test_a_cold_process_reads_the_policy_once_for_a_burst(app_key):
    """Regression: every delivery that found the policy cache empty read `.github/sweepbot.yml` itself, so the
    first burst of a process (and each after the hour's expiry) made one read per busy worker (8 here)."""

    def setup(fake):
        for number in range(2, 10):
            BENCH.pull(number, [BENCH.BENCH_ONLY])(fake)

    async with BENCH.stage(app_key, warm=False, setup=setup, workers=8) as h:
        for number in range(2, 10):
            await h.post("pull_request", h.github.pull_request_payload(REPO, number, "opened", sender="partner"))
        await h.bot.wait_idle(30)
        welcomed = sum(1 for r in h.github.requests if r.method == "POST" and r.path.endswith("/comments"))
        assert welcomed == 8
        assert policy_reads(h) == 1


async def test_one_writers_labels_on_many_forks_at_once_read_the_permission_once(app_key):
    """Regression: six fork PRs labeled at once by the same maintainer each asked GitHub for the maintainer's
    permission (the cache was empty for all six): six reads of one answer."""
    numbers = range(40, 46)

    def setup(fake):
        for number in numbers:
            BENCH.gate_pull(number, fork=True, workflows=number == numbers[0])(fake)

    async with BENCH.gate_stage(app_key, setup) as h:
        for number in numbers:
            h.github.label_issue(REPO, number, BENCH.PRIMARY, actor="maintainer")
        BENCH.reset(h)
        for number in numbers:
            await h.post("pull_request", BENCH.labeled_payload(h, number, BENCH.PRIMARY, "maintainer"))
        await h.bot.wait_idle(30)
        dispatches = [r for r in h.github.requests if r.method == "POST" and r.path.endswith("/dispatches")]
        assert len(dispatches) == len(numbers)
        permission = [r for r in h.github.requests if r.path.endswith("/collaborators/maintainer/permission")]
        assert len(permission) == 1


async def test_a_label_new_to_the_repository_is_looked_up_and_created_once_for_a_burst(app_key):
    """Regression: eight PRs touching the changelog, opened at once, each looked up the `perf-changelog` label
    GitHub did not have yet and each tried to create it (8 lookups, 8 creates, 7 refused as existing). Now the
    first delivery's lookup and create serve them all, and every PR still gets the label."""
    numbers = range(2, 10)

    def setup(fake):
        for number in numbers:
            fake.add_pull(REPO, number=number, user="partner", head_repo=BENCH.FORK, files=[BENCH.CHANGELOG])

    async with BENCH.stage(app_key, setup=setup, workers=8) as h:
        for number in numbers:
            await h.post("pull_request", h.github.pull_request_payload(REPO, number, "opened", sender="partner"))
        await h.bot.wait_idle(30)
        names = [BENCH.short_name(r) for r in h.github.requests]
        assert names.count("look up label") == 1 and names.count("create label") == 1
        labelled = [
            r for r in h.github.requests if r.method == "POST" and r.path.endswith("/labels") and "/issues/" in r.path
        ]
        assert len(labelled) == len(numbers)
