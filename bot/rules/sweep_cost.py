"""What a sweep will run, before it runs: the benchmark points of the configs a PR's changelog entries name, per
runner pool, and the node-hours they take by the history of past jobs.

A master config block (bot.rules.master_config) has `scenarios`: per scenario type (`fixed-seq-len`,
`agentic-coding`) a list of rows (an `isl`/`osl` pair, or an agentic workload), each with `search-space` rows. A
search-space row's concurrency values are its `conc-list`, or from `conc-start` multiplied by the step size (the
row's `step-size`, else 2) each time, the last one clamped to `conc-end`, which is always included. One
concurrency value of one search-space row of one scenario row is one benchmark point.

Jobs, as the sweep generator makes them: a single-node row runs one job a point; a multinode row runs all its
concurrency values in one job, holding the nodes of its `prefill` and `decode` workers (each `num-worker` workers
of `tp` x `pp` GPUs, a node being `gpus_per_node` GPUs) for that job. Node-hours are then the median duration of
past jobs of the same config key, times the nodes each of its jobs holds (`node_jobs`); "unknown" until a job of
that key has finished.

Which configs: the `config-keys` of the PR's appended entries, wildcards matched against every key (as the sweep
generator does), each limited to the entry's `scenario-type` when it names any. Whose file is read is the caller's
choice (docs/spec.md): the head's blocks say what the sweep runs, but a figure here is only ever shown or compared
to a maintainer's threshold; it never grants anything.
"""

from __future__ import annotations

import itertools
import math
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bot.rules.master_config import MasterConfigs, keys_matching, pool_of, read_master_configs

DEFAULT_STEP = 2
DEFAULT_GPUS_PER_NODE = 8
MAX_VALUES_PER_ROW = 256  # concurrency values of one search-space row: more is a row the bot does not count
MAX_HISTORY = 20  # job durations kept per config key; the median is of these
# Rows looked at in one set of master configs (scenario rows and search-space rows; upstream has about 750
# search-space rows). YAML aliases let a few bytes name a row thousands of times, and a PR that changes a master
# config has its head's file counted: past this budget rows are not counted (the figures say "at least").
MAX_ROWS = 20_000
MAX_KEYS = 5_000  # config keys counted (upstream has 208); more are left out, as if not there
MAX_PATTERNS = 500  # `config-keys` values matched against them, for one PR; more are named as matching nothing


@dataclass(frozen=True)
class KeyCost:
    """One config key's sweep: its pool, whether multinode, and per scenario type (points, jobs, node-jobs).

    `unreadable` counts search-space rows whose concurrencies or workers could not be read: the key's figures
    are then a lower bound, and said so."""

    pool: str | None
    multinode: bool
    scenarios: Mapping[str, tuple[int, int, int]] = field(default_factory=dict)
    max_nodes: int = 0
    unreadable: int = 0

    def totals(self, scenario_types: Iterable[str] = ()) -> tuple[int, int, int]:
        """(points, jobs, node_jobs) over the scenario types named (all when none is)."""
        wanted = set(scenario_types)
        rows = [v for k, v in self.scenarios.items() if not wanted or k in wanted]
        return sum(r[0] for r in rows), sum(r[1] for r in rows), sum(r[2] for r in rows)


@dataclass(frozen=True)
class PoolCost:
    """What a sweep runs on one runner pool. `node_hours` is None ("unknown") unless every key has history."""

    pool: str
    points: int
    keys: tuple[str, ...]
    max_nodes: int  # the most nodes one multinode job holds (0: single-node only)
    node_hours: float | None = None
    lower_bound: bool = False  # some row could not be counted


@dataclass(frozen=True)
class SweepCost:
    """The cost of a PR's sweep: per pool, the patterns that name no config, and the keys naming no pool."""

    pools: tuple[PoolCost, ...] = ()
    unmatched: tuple[str, ...] = ()
    no_pool: tuple[str, ...] = ()

    @property
    def points(self) -> int:
        return sum(p.points for p in self.pools)

    @property
    def node_hours(self) -> float | None:
        hours = [p.node_hours for p in self.pools]
        return None if not hours or any(h is None for h in hours) else sum(h for h in hours if h is not None)


# -- one config ------------------------------------------------------------------------------------


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def concurrencies(row: Mapping[str, Any]) -> list[int] | None:
    """A search-space row's concurrency values, or None when they cannot be read (the row is then not counted)."""
    listed = row.get("conc-list")
    if listed is not None:
        if not isinstance(listed, list) or not listed or len(listed) > MAX_VALUES_PER_ROW:
            return None
        values = [v for v in (_whole(v) for v in listed) if v is not None and v > 0]
        return values if len(values) == len(listed) else None
    start, end = _whole(row.get("conc-start")), _whole(row.get("conc-end"))
    step = _whole(row.get("step-size", DEFAULT_STEP))
    if start is None or end is None or step is None or start <= 0 or step < 2 or end < start:
        return None
    values = []
    value = start
    while value < end:  # at most log2(end / start) turns, and capped
        values.append(value)
        if len(values) >= MAX_VALUES_PER_ROW:
            return None
        value *= step
    return values + [end]


def row_nodes(row: Mapping[str, Any], gpus_per_node: int = DEFAULT_GPUS_PER_NODE) -> int | None:
    """The nodes a multinode search-space row holds: each of its `prefill` and `decode` parts runs `num-worker`
    workers of `tp` x `pp` GPUs (`pp` 1 unless given), a worker on whole nodes. None when a part is missing or
    not whole numbers."""
    nodes = 0
    for part in ("prefill", "decode"):
        spec = row.get(part)
        if not isinstance(spec, dict):
            return None
        workers, tp, pp = _whole(spec.get("num-worker")), _whole(spec.get("tp")), _whole(spec.get("pp", 1))
        if workers is None or tp is None or pp is None or workers < 0 or tp <= 0 or pp <= 0:
            return None
        nodes += workers * math.ceil(tp * pp / gpus_per_node)
    return nodes


class _Budget:
    """How many more rows may be looked at (MAX_ROWS for a whole set of master configs)."""

    def __init__(self, rows: int = MAX_ROWS) -> None:
        self.rows = rows

    def take(self) -> bool:
        self.rows -= 1
        return self.rows >= 0


def key_cost(
    block: Mapping[str, Any], gpus_per_node: int = DEFAULT_GPUS_PER_NODE, budget: _Budget | None = None
) -> KeyCost:
    """The points, jobs and node-jobs of one master config block, per scenario type. Once `budget` is spent no
    more rows are looked at (each level stops at once, so aliases cannot multiply the work) and the key counts
    as not wholly read."""
    budget = budget or _Budget()
    multinode = block.get("multinode") is True
    scenarios: dict[str, tuple[int, int, int]] = {}
    max_nodes = unreadable = 0
    given = block.get("scenarios")
    for scenario, rows in given.items() if isinstance(given, dict) else ():
        if not budget.take():
            unreadable += 1
            break
        points = jobs = node_jobs = 0
        for scenario_row in rows if isinstance(rows, list) else ():
            space = scenario_row.get("search-space") if isinstance(scenario_row, dict) else None
            if not budget.take():
                unreadable += 1
                break
            for row in space if isinstance(space, list) else ():
                if not budget.take():
                    unreadable += 1
                    break
                values = concurrencies(row) if isinstance(row, dict) else None
                nodes = row_nodes(row, gpus_per_node) if multinode and isinstance(row, dict) else 1
                if values is None or nodes is None:
                    unreadable += 1
                    continue
                points += len(values)
                if multinode:  # the whole row is one job on its nodes
                    jobs, node_jobs, max_nodes = jobs + 1, node_jobs + nodes, max(max_nodes, nodes)
                else:  # a job a point, on one node
                    jobs, node_jobs = jobs + len(values), node_jobs + len(values)
        scenarios[str(scenario)] = (points, jobs, node_jobs)
    return KeyCost(pool_of(block), multinode, scenarios, max_nodes, unreadable)


def key_costs(configs: MasterConfigs, gpus_per_node: int = DEFAULT_GPUS_PER_NODE) -> dict[str, KeyCost]:
    """Every key's cost, within one budget of MAX_ROWS rows for them all."""
    budget = _Budget()
    blocks = itertools.islice(configs.blocks.items(), MAX_KEYS)
    return {key: key_cost(block, gpus_per_node, budget) for key, block in blocks}


def costs_of_files(texts: Mapping[str, str | None]) -> dict[str, KeyCost]:
    """Every key's cost in the master config files `texts` (path -> text): parsed and counted in one go, so a
    caller can do it in a worker process and keep only this small result."""
    return key_costs(read_master_configs(texts))


# -- a PR's sweep ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Named:
    """What one appended entry names: its `config-keys` values and its `scenario-type` values (none: all)."""

    patterns: tuple[str, ...]
    scenario_types: tuple[str, ...] = ()


def sweep_cost(
    entries: Iterable[Named],
    costs: Mapping[str, KeyCost],
    history: Mapping[str, Sequence[float]] | None = None,
) -> SweepCost:
    """The points per runner pool of the configs `entries` name; with `history` (config key -> durations of its
    past jobs, in seconds), the node-hours too."""
    scenarios: dict[str, set[str] | None] = {}  # key -> scenario types asked for (None: all)
    unmatched: dict[str, None] = {}  # in order, each once
    seen = 0
    for entry in entries:
        for pattern in entry.patterns:
            seen += 1
            matched = keys_matching(pattern, costs) if seen <= MAX_PATTERNS else []
            if not matched:
                unmatched[pattern] = None
            for key in matched:
                current = scenarios.get(key, set())
                if current is None or not entry.scenario_types:
                    scenarios[key] = None
                else:
                    scenarios[key] = current | set(entry.scenario_types)
    history = history or {}
    pools: dict[str, list[str]] = {}
    no_pool = []
    for key in scenarios:
        pool = costs[key].pool
        if pool is None:
            no_pool.append(key)
        else:
            pools.setdefault(pool, []).append(key)
    shown = []
    for pool, keys in pools.items():
        points = max_nodes = 0
        hours: float | None = 0.0
        lower = False
        for key in keys:
            cost = costs[key]
            key_points, _, node_jobs = cost.totals(scenarios[key] or ())
            points += key_points
            max_nodes = max(max_nodes, cost.max_nodes)
            lower = lower or cost.unreadable > 0
            median = median_seconds(history.get(key, ()))
            hours = None if hours is None or median is None else hours + node_jobs * median / 3600
        shown.append(PoolCost(pool, points, tuple(keys), max_nodes, hours, lower))
    return SweepCost(tuple(shown), tuple(unmatched), tuple(no_pool))


def median_seconds(durations: Sequence[float]) -> float | None:
    """The median of the last MAX_HISTORY durations, or None when there are none."""
    kept = list(durations)[-MAX_HISTORY:]
    return statistics.median(kept) if kept else None


# -- history: which config key a finished job ran ------------------------------------------------

_KEY_CHARS = re.compile(r"[A-Za-z0-9._-]+")
MAX_JOB_NAME = 512


def key_of_job(name: str, keys: Iterable[str]) -> str | None:
    """The config key a sweep job ran, from its name: the longest key that is a whole word of the name (keys are
    runs of letters, digits, `.`, `_` and `-`; the sweep's job names carry the key, e.g. `bmk (dsr1-fp4-mi355x-
    sglang, 4)`). None for a job of no key (the canary, setup, collection)."""
    words = set(_KEY_CHARS.findall(name[:MAX_JOB_NAME]))
    found = [key for key in keys if key in words]
    return max(found, key=len) if found else None


def job_seconds(job: Mapping[str, Any]) -> float | None:
    """How long a finished, successful job ran (its `started_at` to `completed_at`), or None."""
    if job.get("conclusion") != "success":
        return None
    try:
        start = datetime.fromisoformat(str(job["started_at"]).replace("Z", "+00:00"))
        end = datetime.fromisoformat(str(job["completed_at"]).replace("Z", "+00:00"))
    except (KeyError, ValueError, TypeError):
        return None
    seconds = (end - start).total_seconds()
    return seconds if seconds > 0 else None


def durations_by_word(jobs: Iterable[Mapping[str, Any]]) -> dict[str, list[float]]:
    """The durations of one run's finished, successful jobs under each word of their names that could be a config
    key (it has a `-`): `key_of_job` read the other way round, so the keys need not be known when a run finishes.
    The history of key K is then what is kept under the word K."""
    found: dict[str, list[float]] = {}
    for job in jobs:
        seconds = job_seconds(job)
        if seconds is None:
            continue
        words = {w for w in _KEY_CHARS.findall(str(job.get("name") or "")[:MAX_JOB_NAME]) if "-" in w}
        for word in sorted(words):
            found.setdefault(word, []).append(seconds)
    return found
