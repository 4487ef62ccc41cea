"""The queue per runner pool as a pure rule: a table of cases, then properties over random arrivals, moves to the
front and finished runs, checked against what the rules (docs/spec.md, "The queue per runner pool") promise: a
pool never runs more sweeps than its cap, a freed slot starts one sweep, a plan carried out starts nothing more,
the order holds, and nobody waits forever while runs finish."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.rules.sweep_queue import Entry, Place, ordered, plan

MI, GB = "mi355x", "gb200"


def e(number: int, *pools: str, since: str = "", priority: str | None = None) -> Entry:
    return Entry(number, tuple(pools), since or f"2026-01-01T00:00:{number:02d}Z", priority)


@pytest.mark.parametrize(
    "limits, running, waiting, start, places",
    [
        # no cap: everything starts, as before the queue existed
        ({}, [e(1, MI)], [e(2, MI), e(3, MI)], (2, 3), {}),
        # a pool of one, taken: both wait, in the order they joined, behind the running one
        (
            {MI: 1},
            [e(1, MI)],
            [e(3, MI), e(2, MI)],
            (),
            {2: Place(MI, 1, (), (1,), 1), 3: Place(MI, 2, (2,), (1,), 1)},
        ),
        # the slot freed: the first in line starts, the next moves up
        ({MI: 1}, [], [e(3, MI), e(2, MI)], (2,), {3: Place(MI, 1, (), (2,), 1)}),
        # moved to the front: ahead of those who joined earlier
        ({MI: 1}, [], [e(2, MI), e(3, MI, priority="2026-01-02T00:00:00Z")], (3,), {2: Place(MI, 1, (), (3,), 1)}),
        # another pool's sweep is not held back by a full pool
        ({MI: 1, GB: 1}, [e(1, MI)], [e(2, MI), e(3, GB)], (3,), {2: Place(MI, 1, (), (1,), 1)}),
        # a sweep over two pools waits for both, and holds its place on the free one too: no overtaking
        (
            {MI: 1, GB: 1},
            [e(1, MI)],
            [e(2, MI, GB), e(3, GB)],
            (),
            {2: Place(MI, 1, (), (1,), 1), 3: Place(GB, 2, (2,), (), 1)},
        ),
        # a pool without a cap never holds anyone back
        ({MI: 1}, [e(1, GB)], [e(2, GB), e(3, MI)], (2, 3), {}),
        # a PR whose sweep runs is not waiting too
        ({MI: 1}, [e(1, MI)], [e(1, MI)], (), {}),
    ],
    ids=["uncapped", "full", "freed", "priority", "other-pool", "two-pools", "uncapped-pool", "running-not-waiting"],
)
def test_plan(limits, running, waiting, start, places):
    result = plan(limits, running, waiting)
    assert result.start == start
    assert dict(result.waiting) == places


# ---- properties ----------------------------------------------------------------------------------------

POOLS = (MI, GB, "h100-multinode")
limits_st = st.dictionaries(st.sampled_from(POOLS), st.integers(1, 3), min_size=1)
pools_st = st.lists(st.sampled_from(POOLS), min_size=1, max_size=2, unique=True).map(tuple)
# a step: a PR joins (its pools, whether a writer moves it to the front), or the n-th running sweep finishes
step_st = st.one_of(
    st.tuples(st.just("join"), pools_st, st.booleans()),
    st.tuples(st.just("finish"), st.integers(0, 5)),
)


def usage(limits, running):
    counts = {p: 0 for p in limits}
    for entry in running:
        for p in set(entry.pools) & set(limits):
            counts[p] += 1
    return counts


class Pools:
    """A repository's pools, driven by the rule alone: every step plans, and the plan is carried out."""

    def __init__(self, limits):
        self.limits, self.running, self.waiting, self.started, self.clock = limits, [], [], [], 0

    def tick(self) -> str:
        self.clock += 1
        return f"2026-01-01T{self.clock // 3600:02d}:{self.clock // 60 % 60:02d}:{self.clock % 60:02d}Z"

    def settle(self) -> tuple[int, ...]:
        result = plan(self.limits, self.running, self.waiting)
        chosen = {n: w for w in self.waiting for n in result.start if w.number == n}
        self.running += [chosen[n] for n in result.start]
        self.waiting = [w for w in self.waiting if w.number not in chosen]
        self.started += list(result.start)
        return result.start

    def join(self, pools, front) -> None:
        at = self.tick()
        self.waiting.append(Entry(100 + self.clock, pools, at, at if front else None))

    def finish(self, index) -> Entry | None:
        if not self.running:
            return None
        return self.running.pop(index % len(self.running))

    def take(self, step) -> None:
        """One drawn step (`step_st`), not yet settled."""
        if step[0] == "join":
            self.join(step[1], step[2])
        else:
            self.finish(step[1])


@settings(max_examples=300, deadline=None)
@given(limits_st, st.lists(step_st, max_size=40))
def test_a_pool_never_runs_more_than_its_cap_and_a_plan_carried_out_starts_nothing_more(limits, steps):
    pools = Pools(limits)
    for step in steps:
        pools.take(step)
        pools.settle()
        assert all(used <= limits[p] for p, used in usage(limits, pools.running).items())
        assert plan(limits, pools.running, pools.waiting).start == ()  # a redelivery starts nothing more


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 3), st.lists(st.booleans(), min_size=1, max_size=12), st.integers(0, 11))
def test_one_freed_slot_starts_one_sweep_the_first_in_line(limit, fronts, which):
    """On one pool: a run that finishes starts exactly the first waiting sweep, when any waits."""
    pools = Pools({MI: limit})
    for front in fronts:
        pools.join((MI,), front)
    pools.settle()
    if not pools.waiting:
        return
    first = ordered(pools.waiting)[0].number
    pools.finish(which)
    assert pools.settle() == (first,)


@settings(max_examples=300, deadline=None)
@given(limits_st, st.lists(step_st, max_size=40))
def test_order_kept_and_nobody_waits_forever(limits, steps):
    pools = Pools(limits)
    for step in steps:
        pools.take(step)
        before = ordered(pools.waiting)
        started = set(pools.settle())
        # order: on a capped pool, no sweep that still waits was ahead of one that started
        for index, entry in enumerate(before):
            if entry.number in started:
                shared = {p for p in entry.pools if p in limits}
                assert not any(
                    shared & set(earlier.pools) and earlier.number not in started for earlier in before[:index]
                )
    # with no more arrivals, every waiting sweep starts once the runs ahead finish: at most one finish each
    waiting = {w.number for w in pools.waiting}
    for _ in range(len(pools.running) + len(pools.waiting)):
        pools.finish(0)
        pools.settle()
    assert waiting <= set(pools.started)
    assert pools.waiting == []
