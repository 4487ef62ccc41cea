"""Round trips a delivery waits for (bot/testing/round_trips.py) and the reader that lets independent reads overlap
(bot/core/reader.py): one request per key in flight, at most READS_IN_FLIGHT at once."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from bot.core import reader as reader_module
from bot.core.reader import PRReader
from bot.testing.round_trips import Trip, chain_depths, critical_path


def trip(sent: float, answered: float, path: str = "/x") -> Trip:
    return Trip("GET", path, sent, answered)


def test_requests_made_one_after_another_are_each_a_round_trip():
    trips = [trip(0, 1), trip(1, 2), trip(2, 3)]
    assert chain_depths(trips) == [1, 2, 3]
    assert critical_path(trips) == 3


def test_requests_in_flight_together_are_one_round_trip():
    trips = [trip(0, 1), trip(0.01, 1.01), trip(0.02, 1.02), trip(1.02, 2.02, "/dispatches")]
    assert chain_depths(trips) == [1, 1, 1, 2]
    assert critical_path(trips, lambda t: t.path == "/dispatches") == 2
    assert critical_path([]) == 0


def test_the_longest_chain_counts_not_the_last_request():
    # a long chain (3) and a short one (1) ending later: the path is the long one's
    trips = [trip(0, 1), trip(1, 2), trip(2, 3), trip(0.5, 3.5)]
    assert critical_path(trips) == 3


class SlowGitHub:
    """`getitem` answered after a delay, counting what was asked and how much was in flight at once."""

    def __init__(self, fail: Iterable[str] = frozenset()) -> None:
        self.asked: list[str] = []
        self.in_flight = self.most_in_flight = 0
        self.fail = set(fail)

    async def getitem(self, url: str) -> dict:
        self.asked.append(url)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0.01)
            if url in self.fail:
                self.fail.discard(url)
                raise RuntimeError("boom")
            return {"url": url}
        finally:
            self.in_flight -= 1


async def test_the_same_read_asked_twice_at_once_is_one_request():
    gh = SlowGitHub()
    reader = PRReader(gh, "o/r")
    first, second = await asyncio.gather(reader.pull(7), reader.pull(7))
    assert first == second and len(gh.asked) == 1
    await reader.pull(7)
    assert len(gh.asked) == 1  # memoised for the delivery
    reader.forget(("pull", 7))
    await reader.pull(7)
    assert len(gh.asked) == 2


async def test_reads_in_flight_are_bounded_per_delivery():
    gh = SlowGitHub()
    reader = PRReader(gh, "o/r")
    await asyncio.gather(*(reader.git_commit(f"{n:040x}") for n in range(10)))
    assert len(gh.asked) == 10
    assert gh.most_in_flight == reader_module.READS_IN_FLIGHT == 4


async def test_a_failed_read_is_not_kept():
    gh = SlowGitHub()
    reader = PRReader(gh, "o/r")
    gh.fail.add("/repos/o/r/pulls/7")
    results = await asyncio.gather(reader.pull(7), reader.pull(7), return_exceptions=True)
    assert all(isinstance(r, RuntimeError) for r in results) and len(gh.asked) == 1
    assert (await reader.pull(7))["url"] == "/repos/o/r/pulls/7"
    assert len(gh.asked) == 2


async def test_one_read_at_a_time_when_bounded_to_one(monkeypatch):
    monkeypatch.setattr(reader_module, "READS_IN_FLIGHT", 1)
    gh = SlowGitHub()
    reader = PRReader(gh, "o/r")
    await asyncio.gather(*(reader.git_commit(f"{n:040x}") for n in range(3)))
    assert gh.most_in_flight == 1
