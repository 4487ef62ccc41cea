"""What a sweep will run, before it runs (bot/rules/sweep_cost.py): the point counts as tables, checked against
upstream's real master configs counted by hand; then on the fake GitHub the status comment's line per runner pool,
the node-hours from past jobs, and `sweeps.confirm_over` with the check's "Confirm sweep" button."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import REAL_DATA
from harness import REPO, line_with
from test_check_buttons import button_ids, press
from test_sweep_gate import (  # noqa: F401  the fixtures this module's tests take
    CHANGELOG,
    FAIL_FAST,
    check,
    english,
    label,
    make_harness,
    no_merge_wait,
    open_pull,
    push,
    repo,
    runs,
    send,
    status,
)

from bot.core.config import default_policy, parse_repo_config
from bot.rules import check_buttons as cb
from bot.rules import sweep_cost as sc
from bot.rules.gate import AppliedLabel, Changelog, ChangelogOutcome, Dispatched, GateInput, decide
from bot.rules.master_config import read_master_configs
from bot.rules.sweep_record import Confirmation, SweepRecord
from handlers import sweep_gate

# ---- one search-space row ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "row, values",
    [
        ({"conc-list": [90]}, [90]),
        ({"conc-list": [10, 15, 30, 60]}, [10, 15, 30, 60]),
        ({"conc-start": 4, "conc-end": 64}, [4, 8, 16, 32, 64]),  # doubling, the end included
        ({"conc-start": 4, "conc-end": 100}, [4, 8, 16, 32, 64, 100]),  # the last one clamped to the end
        ({"conc-start": 4, "conc-end": 4}, [4]),
        ({"conc-start": 1, "conc-end": 100, "step-size": 4}, [1, 4, 16, 64, 100]),  # the row's own step
        ({"conc-start": 2, "conc-end": 3}, [2, 3]),
        ({"conc-start": 8, "conc-end": 4}, None),  # backwards
        ({"conc-start": 4, "conc-end": 64, "step-size": 1}, None),  # would never end
        ({"conc-start": 0, "conc-end": 64}, None),
        ({"conc-start": 4}, None),
        ({"conc-list": []}, None),
        ({"conc-list": [4, "8"]}, None),
        ({"conc-list": [True]}, None),  # YAML's `yes` is no concurrency
        ({"conc-list": list(range(1, sc.MAX_VALUES_PER_ROW + 2))}, None),  # capped
        ({"conc-start": 1, "conc-end": 10**400}, None),  # more values than the cap: not counted, not slow
        ({"tp": 8}, None),
    ],
)
def test_concurrencies_of_a_row(row, values):
    assert sc.concurrencies(row) == values


@pytest.mark.parametrize(
    "row, per_node, nodes",
    [
        ({"prefill": {"num-worker": 1, "tp": 4}, "decode": {"num-worker": 3, "tp": 8}}, 8, 4),
        ({"prefill": {"num-worker": 1, "tp": 4}, "decode": {"num-worker": 3, "tp": 8}}, 4, 7),  # tp 8: two nodes
        ({"prefill": {"num-worker": 2, "tp": 8, "pp": 2}, "decode": {"num-worker": 1, "tp": 16}}, 8, 6),
        ({"prefill": {"num-worker": 1, "tp": 4}}, 8, None),  # no decode part
        ({"prefill": {"num-worker": 1, "tp": 4}, "decode": {"tp": 8}}, 8, None),
    ],
)
def test_nodes_of_a_multinode_row(row, per_node, nodes):
    assert sc.row_nodes(row, per_node) == nodes


# ---- upstream's real master configs, counted by hand ---------------------------------------------------------


@pytest.fixture(scope="module")
def upstream():
    files = ("amd-master.yaml", "nvidia-master.yaml")
    return read_master_configs({name: (REAL_DATA / name).read_text(encoding="utf-8") for name in files})


@pytest.fixture(scope="module")
def costs(upstream):
    return sc.key_costs(upstream)


# (key, pool, points, jobs, node-jobs, most nodes a job holds), each counted from the YAML by hand:
HAND_COUNTED = [
    # amd-master.yaml line 1: one 8k1k row; tp4 and tp8 each 4..64 doubling = 4, 8, 16, 32, 64: 5 + 5 points,
    # single-node, a job a point on one node
    ("dsr1-fp4-mi355x-sglang", "mi355x", 10, 10, 10, 0),
    # line 32: tp4 4..256 = 4, 8, 16, 32, 64, 128, 256 (7); tp8 4..4 = 4 (1)
    ("dsr1-fp4-mi355x-atom", "mi355x", 8, 8, 8, 0),
    # line 48: one row (the tp4 one is commented out) 4..256: 7
    ("dsr1-fp4-mi355x-atom-mtp", "mi355x", 7, 7, 7, 0),
    # nvidia-master.yaml line 1: thirteen multinode rows in one 8k1k row, conc-lists of 1, 1, 1, 4, 1, 2, 1, 1, 5,
    # 1, 1, 1, 1 values = 21 points, one job a row = 13 jobs; every worker (tp 4 or 8) fits a node of 8 GPUs, so
    # a row holds prefill + decode workers: 1+1, 1+3, 1+5, 1+5, 3+1, 5+1, 5+2, 1+5, 1+5, 2+5, 4+1, 4+3, 7+2
    # = 2+4+6+6+4+6+7+6+6+7+5+7+9 = 75 node-jobs, at most 9 nodes
    ("dsr1-fp4-b200-dynamo-trt", "b200-multinode", 21, 13, 75, 9),
    # line 931: agentic-coding, one workload row, conc-lists of 5, 4 and 3 values
    ("dsv4-fp4-b200-sglang-agentic-hicache-mtp", "cluster:b200-dgxc", 12, 12, 12, 0),
]


@pytest.mark.parametrize(
    "key, pool, points, jobs, node_jobs, max_nodes", HAND_COUNTED, ids=[r[0] for r in HAND_COUNTED]
)
def test_upstream_keys_counted_by_hand(costs, key, pool, points, jobs, node_jobs, max_nodes):
    cost = costs[key]
    assert (cost.pool, cost.totals(), cost.max_nodes, cost.unreadable) == (
        pool,
        (points, jobs, node_jobs),
        max_nodes,
        0,
    )


def test_gpus_per_node_changes_the_nodes_not_the_points(upstream):
    block = upstream.blocks["dsr1-fp4-b200-dynamo-trt"]
    # four GPUs a node: a tp-8 decode worker takes two; the largest row is 2 prefill + 5 decode x 2 = 12 nodes
    cost = sc.key_cost(block, gpus_per_node=4)
    assert cost.totals()[0] == 21 and cost.max_nodes == 12


def test_every_upstream_row_is_read(costs):
    assert [key for key, cost in costs.items() if cost.unreadable] == []
    assert all(cost.totals()[0] > 0 for cost in costs.values())


@pytest.mark.parametrize(
    "entries, pools, unmatched",
    [
        # two entries, two pools: 10 + 8 on mi355x, 21 on b200-multinode
        (
            [sc.Named(("dsr1-fp4-mi355x-sglang", "dsr1-fp4-mi355x-atom")), sc.Named(("dsr1-fp4-b200-dynamo-trt",))],
            {"mi355x": 18, "b200-multinode": 21},
            (),
        ),
        # a wildcard: atom (8) and atom-mtp (7)
        ([sc.Named(("dsr1-fp4-mi355x-atom*",))], {"mi355x": 15}, ()),
        # a key named twice counts once
        ([sc.Named(("dsr1-fp4-mi355x-atom",)), sc.Named(("dsr1-fp4-mi355x-ato?",))], {"mi355x": 8}, ()),
        # limited to a scenario type the config does not have: nothing runs on its pool
        (
            [sc.Named(("dsv4-fp4-b200-sglang-agentic-hicache-mtp",), ("fixed-seq-len",))],
            {"cluster:b200-dgxc": 0},
            (),
        ),
        # the same key unlimited by another entry: all of it
        (
            [
                sc.Named(("dsv4-fp4-b200-sglang-agentic-hicache-mtp",), ("fixed-seq-len",)),
                sc.Named(("dsv4-fp4-b200-sglang-agentic-hicache-mtp",)),
            ],
            {"cluster:b200-dgxc": 12},
            (),
        ),
        ([sc.Named(("no-such-key", "dsr1-fp4-mi355x-atom"))], {"mi355x": 8}, ("no-such-key",)),
    ],
)
def test_points_per_pool_of_a_prs_entries(costs, entries, pools, unmatched):
    cost = sc.sweep_cost(entries, costs)
    assert {p.pool: p.points for p in cost.pools} == pools
    assert cost.unmatched == unmatched
    assert cost.points == sum(pools.values())
    assert all(p.node_hours is None for p in cost.pools)  # no history: unknown


def test_node_hours_from_the_median_of_past_jobs(costs):
    entries = [sc.Named(("dsr1-fp4-mi355x-sglang", "dsr1-fp4-b200-dynamo-trt"))]
    # mi355x: 10 jobs on a node x median 900 s = 2.5 node-hours; b200-multinode: 75 node-jobs x 1200 s = 25
    history = {"dsr1-fp4-mi355x-sglang": [600.0, 1200.0, 900.0], "dsr1-fp4-b200-dynamo-trt": [1200.0]}
    cost = sc.sweep_cost(entries, costs, history)
    assert {p.pool: p.node_hours for p in cost.pools} == {"mi355x": 2.5, "b200-multinode": 25.0}
    assert cost.node_hours == 27.5
    partial = sc.sweep_cost(
        [sc.Named(("dsr1-fp4-mi355x-sglang", "dsr1-fp4-mi355x-atom"))], costs, history
    )  # atom has no history: the pool's estimate is unknown, not a part of it
    assert [p.node_hours for p in partial.pools] == [None] and partial.node_hours is None


@pytest.mark.parametrize(
    "durations, median",
    [([], None), ([5.0], 5.0), ([1.0, 9.0], 5.0), ([100.0] * 5 + [1.0] * sc.MAX_HISTORY, 1.0)],  # the newest only
)
def test_median_of_the_newest_durations(durations, median):
    assert sc.median_seconds(durations) == median


def job(name: str, seconds: int, conclusion: str = "success") -> dict:
    return {
        "name": name,
        "conclusion": conclusion,
        "started_at": "2026-11-02T10:00:00Z",
        "completed_at": f"2026-11-02T10:{seconds // 60:02d}:{seconds % 60:02d}Z",
    }


@pytest.mark.parametrize(
    "name, key",
    [
        ("bmk (dsr1-fp4-mi355x-sglang, 4)", "dsr1-fp4-mi355x-sglang"),
        ("single-node / dsr1-fp4-mi355x-sglang-mtp tp8 conc64", "dsr1-fp4-mi355x-sglang-mtp"),  # the longer key
        ("canary", None),
        ("bmk (dsr1-fp4-mi355x-sglang-x, 4)", None),  # another word, not this key
    ],
)
def test_the_config_key_of_a_job(name, key):
    keys = ["dsr1-fp4-mi355x-sglang", "dsr1-fp4-mi355x-sglang-mtp"]
    assert sc.key_of_job(name, keys) == key


def test_durations_of_a_runs_jobs_by_word():
    jobs = [
        job("bmk (dsr1-fp4-mi355x-sglang, 4)", 600),
        job("bmk (dsr1-fp4-mi355x-sglang, 8)", 900),
        job("bmk (dsr1-fp4-mi355x-atom, 8)", 900, conclusion="failure"),  # a failed job says nothing of the time
        job("collect-results", 60),  # no word with a dash: no key
    ]
    assert sc.durations_by_word(jobs) == {"dsr1-fp4-mi355x-sglang": [600.0, 900.0], "collect-results": [60.0]}


# ---- on the fake GitHub ----------------------------------------------------------------------------------------

AMD = "inferencex-e2e/configs/amd-master.yaml"
# ENTRY (test_sweep_gate) names dsr1-fp8-mi355x-sglang: 4..64 is 4, 8, 16, 32, 64 (5) and a list of 2: 7 points
MASTER = b"""dsr1-fp8-mi355x-sglang:
  runner: mi355x
  multinode: false
  scenarios:
    fixed-seq-len:
    - isl: 1024
      osl: 1024
      search-space:
      - { tp: 8, conc-start: 4, conc-end: 64 }
      - { tp: 4, conc-list: [1, 2] }
"""
WIDER = (
    MASTER
    + b"""    - isl: 8192
      osl: 1024
      search-space:
      - { tp: 8, conc-start: 4, conc-end: 64 }
"""
)


def with_configs(github, number: int, **options) -> dict:
    pr = open_pull(github, number, **options)
    github.set_file(REPO, AMD, MASTER, ref=pr["base"]["sha"])
    return pr


def headline(body: str) -> str:
    return line_with(english(body), "### ")


def pool_line(body: str, pool: str) -> str:
    return line_with(english(body), f"- `{pool}`:")


async def test_the_status_shows_the_points_per_pool_on_open_and_follows_a_change(repo, make_harness):
    """Pins: the status comment says what the sweep runs from the PR's first event, in both languages; a push
    that adds rows to the master config counts the head's config (what the sweep runs)."""
    with_configs(repo, 80)
    h = await make_harness()
    await send(h, 80, "opened", sender="partner")
    body = status(repo, 80)
    assert (
        pool_line(body, "mi355x")
        == "- `mi355x`: 7 benchmark points; node-hours unknown until jobs of this config have run."
    )
    assert "- `mi355x`：7 个测试点；节点小时未知" in body

    push(repo, 80, "8" * 40)
    repo.set_file(REPO, AMD, WIDER, ref="8" * 40)
    repo.pull_files(REPO, 80)[:] = [
        {"filename": CHANGELOG, "status": "modified"},
        {"filename": AMD, "status": "modified"},
    ]
    await send(h, 80, "synchronize", sender="partner")
    assert pool_line(status(repo, 80), "mi355x").startswith("- `mi355x`: 12 benchmark points;")


async def test_a_config_the_pr_does_not_change_is_read_from_the_base(repo, make_harness):
    """Pins: without a change to a master config the base commit's file counts, whatever the head holds."""
    pr = with_configs(repo, 81)
    repo.set_file(REPO, AMD, WIDER, ref=pr["head"]["sha"])  # not among the PR's files: not read
    h = await make_harness()
    await send(h, 81, "opened", sender="partner")
    assert "7 benchmark points" in pool_line(status(repo, 81), "mi355x")


async def test_node_hours_from_the_jobs_of_a_finished_sweep(repo, make_harness):
    """Pins: once a sweep the bot dispatched finishes, the median duration of its jobs of the key turns points
    into node-hours on the next status: 7 single-node jobs x median 10 minutes = 1.2 node-hours (1.17)."""
    with_configs(repo, 82)
    h = await make_harness()
    await label(h, 82, FAIL_FAST)
    (run,) = runs(repo)
    repo.set_jobs(
        REPO,
        run["id"],
        [
            job("bmk (dsr1-fp8-mi355x-sglang, 4)", 300),
            job("bmk (dsr1-fp8-mi355x-sglang, 8)", 600),
            job("bmk (dsr1-fp8-mi355x-sglang, 16)", 900),
        ],
    )
    repo.complete_run(REPO, run["id"], "success")
    await h.deliver("workflow_run", repo.workflow_run_payload(REPO, run["id"], "completed", conclusion="success"))
    push(repo, 82, "9" * 40)
    await send(h, 82, "synchronize", sender="partner")
    assert pool_line(status(repo, 82), "mi355x") == "- `mi355x`: 7 benchmark points; about 1.2 node-hours by past jobs."


@pytest.fixture
def limited(repo):
    repo.set_file(REPO, ".github/sweepbot.yml", b"sweeps:\n  confirm_over: 5\n", ref="main")
    return repo


async def test_over_the_limit_a_label_alone_holds_and_a_writers_press_dispatches_once(limited, make_harness):
    """Pins: 7 points over a limit of 5: the label starts nothing (⏳, a maintainer's move, the button offered);
    a non-writer's press starts nothing; a writer's press starts exactly one sweep, recorded in the status
    comment's record for the dispatch id; the same press sent again starts nothing more."""
    pr = with_configs(limited, 83)
    sha = pr["head"]["sha"]
    h = await make_harness()
    await label(h, 83, FAIL_FAST)
    assert runs(limited) == []
    assert headline(status(limited, 83)).startswith(
        "### ⏳ Waiting for a maintainer to confirm this sweep of 7 benchmark points (over the limit of 5)"
    )
    assert button_ids(limited, sha) == [cb.SWEEP_AGAIN, cb.CONFIRM]
    assert check(limited, sha)["actions"][1]["label"] == "Confirm sweep / 确认"

    await press(h, sha, cb.CONFIRM, by="drive-by")
    assert runs(limited) == [] and SweepRecord.parse(status(limited, 83)).confirmation is None

    payload = await press(h, sha, cb.CONFIRM, delivery="confirm-1")
    (run,) = runs(limited)
    record = SweepRecord.parse(status(limited, 83))
    assert record.confirmation.by == "maintainer"
    assert record.confirmation.dispatch_id == record.by_dispatch(record.confirmation.dispatch_id).dispatch_id
    assert "confirmed for this commit and these labels" in line_with(english(status(limited, 83)), "**Sweep size:**")
    await press(h, sha, cb.CONFIRM, delivery="confirm-1-again", payload=payload)  # GitHub sends it again
    await send(h, 83, "edited", changes={"base": {}})  # and any later event
    assert len(runs(limited)) == 1
    assert cb.CONFIRM not in button_ids(limited, sha)


async def test_a_push_after_the_confirmation_needs_a_new_one(limited, make_harness):
    """Pins: the confirmation is bound to the dispatch id: a push holds the new head's sweep until a new press."""
    pr = with_configs(limited, 84)
    h = await make_harness()
    await label(h, 84, FAIL_FAST)
    await press(h, pr["head"]["sha"], cb.CONFIRM)
    assert len(runs(limited)) == 1
    push(limited, 84, "a" * 40)
    await send(h, 84, "synchronize", sender="partner")
    assert len(runs(limited)) == 1
    assert headline(status(limited, 84)).startswith("### ⏳ Waiting for a maintainer to confirm")
    assert cb.CONFIRM in button_ids(limited, "a" * 40)
    await press(h, "a" * 40, cb.CONFIRM)
    assert len(runs(limited)) == 2
    assert max(runs(limited), key=lambda r: r["id"])["head_sha"] == "a" * 40


async def test_within_the_limit_a_label_starts_the_sweep(repo, make_harness):
    """Pins: the limit holds only what is over it: 7 points under a limit of 7 start on the label alone."""
    repo.set_file(REPO, ".github/sweepbot.yml", b"sweeps:\n  confirm_over: 7\n", ref="main")
    with_configs(repo, 85)
    h = await make_harness()
    await label(h, 85, FAIL_FAST)
    assert len(runs(repo)) == 1
    assert "within the limit of 7" in line_with(english(status(repo, 85)), "**Sweep size:**")


async def test_without_readable_master_configs_the_size_is_unknown_and_holds_nothing(limited, make_harness):
    """Pins: no master config at the base commit: no points are shown and the limit does not hold the sweep
    (a missing figure never blocks); the size line says the points are not known."""
    open_pull(limited, 86)
    h = await make_harness()
    await label(h, 86, FAIL_FAST)
    assert len(runs(limited)) == 1
    body = english(status(limited, 86))
    assert "What the sweep runs" not in body
    assert "benchmark points are not known" in line_with(body, "**Sweep size:**")


async def test_a_confirmation_is_kept_in_the_record_when_github_turns_the_dispatch_away(limited, make_harness):
    """Pins: GitHub turns the confirmed sweep's dispatch away for a while (429): the press is already in the status
    comment's record, and the delivery's retry, reading it back from GitHub, starts the sweep once with no new
    press (the button is gone by then: the record says this dispatch id is confirmed)."""
    pr = with_configs(limited, 87)
    h = await make_harness()
    await label(h, 87, FAIL_FAST)
    limited.fail_next("POST", r"/dispatches$", 429, times=8, headers={"Retry-After": "0"})
    sweep_gate._key_costs.clear()  # nothing the process kept: only GitHub's copy counts
    await press(h, pr["head"]["sha"], cb.CONFIRM, delivery="confirm-429")
    assert (await h.journal_row("confirm-429")).attempts > 1, "the workers tried the press again"
    assert len(runs(limited)) == 1
    assert SweepRecord.parse(status(limited, 87)).confirmation.by == "maintainer"


def test_a_confirmation_survives_the_records_round_trip():
    record = SweepRecord().confirmed(Confirmation("sw-1-abc", "maintainer", "2026-12-07T06:00:00Z", "tok"))
    assert SweepRecord.parse(record.line()).confirmation == record.confirmation
    assert SweepRecord.parse(SweepRecord().line()).confirmation is None


# ---- the gate's size condition, as a table --------------------------------------------------------------------

HEAD = "1" * 40


def gate_pr(**changes) -> GateInput:
    labels = (AppliedLabel(FAIL_FAST, applied_by="maintainer", writer=True, head_sha=HEAD),)
    pr = GateInput(
        number=42,
        head_sha=HEAD,
        base_sha="b" * 40,
        head_ref="recipe",
        base_ref="main",
        default_branch="main",
        changelog=ChangelogOutcome(Changelog.VALID),
        labels=labels,
    )
    return replace(pr, **changes)


LIMIT_10 = parse_repo_config("sweeps:\n  confirm_over: 10\n")
KEY = decide(gate_pr(), LIMIT_10).dispatch_id


@pytest.mark.parametrize(
    "policy, changes, code, starts",
    [
        (default_policy(), {"points": 10_000}, "no_limit", True),  # no limit set: today's behaviour
        (LIMIT_10, {"points": None}, "unknown", True),  # a missing figure never holds a sweep
        (LIMIT_10, {"points": 10}, "within", True),
        (LIMIT_10, {"points": 11}, "awaiting", False),
        (LIMIT_10, {"points": 11, "confirmed": KEY}, "confirmed", True),
        (LIMIT_10, {"points": 11, "confirmed": "sw-42-an-older-state"}, "awaiting", False),
        (LIMIT_10, {"points": 11, "labels": ()}, "over", False),  # nothing asked for: nothing to confirm
        (LIMIT_10, {"points": 11, "draft": True}, "over", False),  # held by something else first
        (LIMIT_10, {"points": 11, "pin": 7}, "over", False),  # a pin pauses sweeps (and offers Merge)
        (LIMIT_10, {"points": 11, "dispatched": (Dispatched(KEY, 7, "in_progress"),)}, "confirmed", False),
    ],
)
def test_the_size_condition(policy, changes, code, starts):
    decision = decide(gate_pr(**changes), policy)
    assert decision.condition("cost").reason_code == code
    assert (decision.start is not None) == starts
    assert (cb.CONFIRM in cb.offered(decision.conditions, open=True, is_fork=False)) == (code == "awaiting")
