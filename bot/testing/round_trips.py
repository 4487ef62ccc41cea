"""The fake GitHub answering late, and the round trips a delivery waited for: with every request answered after
the same delay, the longest chain of requests made one after another is what a person waits for."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx


@dataclass(frozen=True)
class Trip:
    """One request as the bot saw it: sent at `sent`, answered at `answered` (perf_counter seconds)."""

    method: str
    path: str
    sent: float
    answered: float


def chain_depths(trips: list[Trip]) -> list[int]:
    """For each trip, the round trips on the longest chain ending with it: 1 + the deepest trip answered before
    it was sent (a request sent while another is in flight did not wait for it)."""
    order = sorted(range(len(trips)), key=lambda i: trips[i].sent)
    depth = [0] * len(trips)
    for i in order:
        depth[i] = 1 + max((depth[j] for j in order if trips[j].answered <= trips[i].sent and j != i), default=0)
    return depth


def critical_path(trips: list[Trip], until: Callable[[Trip], bool] = lambda trip: True) -> int:
    """Round trips on the longest chain ending with a trip `until` accepts (every trip: the whole delivery)."""
    depths = chain_depths(trips)
    return max((d for trip, d in zip(trips, depths) if until(trip)), default=0)


@dataclass
class LateGitHub:
    """A respx side effect: every request answered by `handle` after `seconds`, each noted per `key` (the delivery
    the request was made for, from the caller's context)."""

    handle: Callable[[httpx.Request], httpx.Response]
    seconds: float
    key: Callable[[], str | None] = lambda: None
    trips: dict[str | None, list[Trip]] = field(default_factory=dict)

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        sent = time.perf_counter()
        if self.seconds > 0:
            await asyncio.sleep(self.seconds)
        response = self.handle(request)
        self.trips.setdefault(self.key(), []).append(
            Trip(request.method.upper(), request.url.path, sent, time.perf_counter())
        )
        return response

    def reset(self) -> None:
        self.trips.clear()
