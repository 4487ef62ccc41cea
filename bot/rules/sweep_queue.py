"""The sweep queue of each runner pool (docs/spec.md, "The queue per runner pool").

A sweep holds nodes of the runner pools its config keys run on. `policy.sweeps.concurrency` caps how many
sweeps may hold a pool at once; a pool it does not name has no cap. A sweep whose pools are all below their cap
starts; any other waits, in order: sweeps a writer moved to the front first (in the order they were moved), then
first labelled, first served (ties by PR number).

`plan(limits, running, waiting)` is a pure function over plain data. A waiting sweep that cannot start holds its
place on every capped pool it needs: no later sweep overtakes it there, so nobody waits forever while the runs
ahead of them finish, and a freed slot goes to the first in line.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


@dataclass(frozen=True)
class Entry:
    """One PR's sweep on the queue: the runner pools it runs on, when it joined (ISO 8601) and when a writer moved
    it to the front (None: never)."""

    number: int
    pools: tuple[str, ...]
    since: str = ""
    priority: str | None = None


@dataclass(frozen=True)
class Place:
    """Where a waiting sweep stands: on `pool` (the first capped pool it waits for), at `position` (1 is next),
    behind the waiting sweeps `ahead`, while the sweeps `running` hold the pool's slots."""

    pool: str
    position: int
    ahead: tuple[int, ...]
    running: tuple[int, ...]
    limit: int


@dataclass(frozen=True)
class Plan:
    """The sweeps to start now, in order, and where each sweep that waits stands."""

    start: tuple[int, ...] = ()
    waiting: Mapping[int, Place] = field(default_factory=lambda: MappingProxyType({}))


def ordered(waiting: Iterable[Entry]) -> list[Entry]:
    """The queue's order: moved to the front first (earliest move first), then the earliest to join."""
    return sorted(waiting, key=lambda e: (e.priority is None, e.priority or "", e.since, e.number))


def capped(entry: Entry, limits: Mapping[str, int]) -> tuple[str, ...]:
    """The pools of `entry` that have a cap, each once, in the entry's order."""
    return tuple(dict.fromkeys(p for p in entry.pools if p in limits))


def plan(limits: Mapping[str, int], running: Iterable[Entry], waiting: Iterable[Entry]) -> Plan:
    """Which of `waiting` start now, given the sweeps `running` hold their pools, and where the rest stand.

    A PR in both `running` and `waiting` is running (its sweep already holds its pools)."""
    holding = list(running)
    busy = {e.number for e in holding}
    used: Counter[str] = Counter(p for e in holding for p in capped(e, limits))
    holders: dict[str, list[int]] = {}
    for e in holding:
        for p in capped(e, limits):
            holders.setdefault(p, []).append(e.number)
    reserved: set[str] = set()
    start: list[int] = []
    stays: list[tuple[Entry, str]] = []
    for entry in ordered(e for e in waiting if e.number not in busy):
        pools = capped(entry, limits)
        full = [p for p in pools if p in reserved or used[p] >= limits[p]]
        if not full:
            start.append(entry.number)
            busy.add(entry.number)
            for p in pools:
                used[p] += 1
                holders.setdefault(p, []).append(entry.number)
            continue
        reserved.update(pools)  # it holds its place on every pool it needs: nobody after it overtakes it there
        stays.append((entry, full[0]))
    places: dict[int, Place] = {}
    for index, (entry, pool) in enumerate(stays):
        ahead = tuple(e.number for e, _ in stays[:index] if pool in capped(e, limits))
        places[entry.number] = Place(pool, len(ahead) + 1, ahead, tuple(holders.get(pool, ())), limits[pool])
    return Plan(tuple(start), MappingProxyType(places))
