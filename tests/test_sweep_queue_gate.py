"""The queue of a runner pool through the webhook endpoint into the fake GitHub: a sweep whose pool is full waits
with its place said on the PR, the next one starts when a run on the pool finishes, once, whatever is
redelivered and however many replicas hear it, and a PR that leaves makes room for the one behind it."""

from __future__ import annotations

import pytest
from harness import REPO
from postgres import postgres_db, postgres_url  # noqa: F401  the fixtures this module's tests take
from test_sweep_gate import (  # noqa: F401  the fixtures this module's tests take
    CHANGELOG,
    FAIL_FAST,
    english,
    gate_checks,
    inputs,
    label,
    make_harness,
    no_merge_wait,
    open_pull,
    repo,
    runs,
    send,
    status,
    unlabel,
)

from bot.rules.sweep_record import SweepRecord

MASTER = "inferencex-e2e/configs/amd-master.yaml"
POLICY = "sweeps:\n  concurrency:\n    mi355x: 1\n"
CONFIGS = "dsr1-fp8-mi355x-sglang:\n  runner: mi355x\n  model: deepseek-ai/DeepSeek-R1-0528\n"


@pytest.fixture
def pool_of_one(repo):
    repo.set_file(REPO, ".github/sweepbot.yml", POLICY)
    return repo


def opened(github, *numbers: int) -> None:
    for number in numbers:
        pr = open_pull(github, number)
        github.set_file(REPO, MASTER, CONFIGS, ref=pr["base"]["sha"])


def run_of(github, number: int) -> list[dict]:
    return [run for run in runs(github) if inputs(github, run)["pr-number"] == str(number)]


def headline(github, number: int) -> str:
    return english(status(github, number)).split("\n")[2]


def queued(github, number: int):
    return SweepRecord.parse(status(github, number)).queued


async def finish(h, number: int, *, conclusion: str = "success", delivery: str | None = None):
    (run,) = run_of(h.github, number)
    payload = h.github.workflow_run_payload(REPO, run["id"], "completed", conclusion=conclusion)
    return await h.deliver("workflow_run", payload, delivery=delivery)


async def test_two_prs_on_a_pool_of_one_the_second_starts_when_the_first_finishes(pool_of_one, make_harness):
    github = pool_of_one
    opened(github, 21, 22)
    h = await make_harness()
    await label(h, 21, FAIL_FAST)
    await label(h, 22, FAIL_FAST)

    assert len(run_of(github, 21)) == 1 and run_of(github, 22) == []
    assert headline(github, 22) == (
        "### ⏳ Queued: position 1 on `mi355x`. At most 1 sweep runs there at once (now #21); this one starts by itself"
        " when its turn comes, and keeps its place through a push. A maintainer can move it to the front with"
        " the “Move to front” button of the `sweep-gate` check."
    )
    (check,) = gate_checks(github, github.pull(REPO, 22)["head"]["sha"])
    assert "Queued: position 1 on `mi355x`" in check["output"]["summary"] and check["conclusion"] == "success"
    assert queued(github, 22).dispatch_id is None and queued(github, 22).pools == ("mi355x",)

    await finish(h, 21, delivery="done-21")

    (second,) = run_of(github, 22)
    assert queued(github, 22).dispatch_id == inputs(github, second)["dispatch-id"]
    assert "is running" in headline(github, 22)

    # the same completion again, under its id and under a new one: nothing more starts
    await finish(h, 21, delivery="done-21")
    await finish(h, 21, delivery="done-21-again")
    assert len(runs(github)) == 2


async def test_a_queued_pr_that_is_closed_leaves_the_queue_and_the_next_one_moves_up(pool_of_one, make_harness):
    github = pool_of_one
    opened(github, 31, 32, 33)
    h = await make_harness()
    for number in (31, 32, 33):
        await label(h, number, FAIL_FAST)
    assert "position 2 on `mi355x`, behind #32." in headline(github, 33)

    github.update_pull(REPO, 32, state="closed")
    await send(h, 32, "closed")

    assert queued(github, 32) is None
    assert "position 1 on `mi355x`. " in headline(github, 33)  # told at once, not at the next slot
    await finish(h, 31)
    assert run_of(github, 32) == [] and len(run_of(github, 33)) == 1


async def test_a_label_taken_off_leaves_the_queue_and_put_back_joins_at_the_end(pool_of_one, make_harness):
    github = pool_of_one
    opened(github, 41, 42, 43)
    h = await make_harness()
    for number in (41, 42, 43):
        await label(h, number, FAIL_FAST)

    await unlabel(h, 42, FAIL_FAST)
    assert queued(github, 42) is None
    await label(h, 42, FAIL_FAST)

    assert "behind #43." in headline(github, 42)
    await finish(h, 41)
    assert len(run_of(github, 43)) == 1 and run_of(github, 42) == []


async def test_the_queue_is_read_back_from_the_prs_after_losing_the_journal(pool_of_one, make_harness, tmp_path):
    github = pool_of_one
    opened(github, 51, 52)
    h = await make_harness()
    await label(h, 51, FAIL_FAST)
    await label(h, 52, FAIL_FAST)
    await h.bot.stop()

    fresh = await make_harness(db_path=str(tmp_path / "other.db"))
    await finish(fresh, 51)

    assert len(run_of(github, 52)) == 1


async def test_no_cap_starts_every_sweep_at_once_as_before(repo, make_harness):
    opened(repo, 61, 62)
    h = await make_harness()
    await label(h, 61, FAIL_FAST)
    await label(h, 62, FAIL_FAST)
    assert len(run_of(repo, 61)) == len(run_of(repo, 62)) == 1
    assert queued(repo, 62) is None


async def test_three_replicas_hearing_one_slot_freed_dispatch_once(pool_of_one, postgres_db, make_harness):  # noqa: F811
    github = pool_of_one
    opened(github, 71, 72, 73)
    bots = [await make_harness(db_path=postgres_db) for _ in range(3)]
    for number in (71, 72, 73):
        await label(bots[0], number, FAIL_FAST)
    (run,) = run_of(github, 71)
    payload = github.workflow_run_payload(REPO, run["id"], "completed", conclusion="success")

    for i, bot in enumerate(bots):  # GitHub redelivers; each replica takes one
        await bot.post("workflow_run", payload, delivery=f"freed-{i}")
    for bot in bots:
        await bot.idle()

    assert len(run_of(github, 72)) == 1 and run_of(github, 73) == []
    assert len(runs(github)) == 2
    assert "position 1 on `mi355x`. " in headline(github, 73)


async def test_a_writer_moves_a_queued_sweep_to_the_front_with_the_checks_button(pool_of_one, make_harness):
    github = pool_of_one
    opened(github, 81, 82, 83)
    h = await make_harness()
    for number in (81, 82, 83):
        await label(h, number, FAIL_FAST)
    sha = github.pull(REPO, 83)["head"]["sha"]
    (gate,) = gate_checks(github, sha)
    assert [a["identifier"] for a in gate["actions"]] == ["sweep-again", "queue-front"]

    async def press(by: str, delivery: str) -> None:
        (current,) = gate_checks(github, sha)
        payload = github.check_run_payload(REPO, current["id"], "requested_action", sender=by, identifier="queue-front")
        await h.deliver("check_run", payload, delivery=delivery)

    await press("partner", "front-by-author")  # the author cannot push their own sweep ahead
    assert "behind #82." in headline(github, 83) and queued(github, 83).priority is None
    await press("maintainer", "front")

    assert "position 1 on `mi355x`. " in headline(github, 83)
    assert "behind #83." in headline(github, 82)  # told at once that it moved back
    await finish(h, 81)
    assert len(run_of(github, 83)) == 1 and run_of(github, 82) == []


async def test_two_slots_freed_at_once_start_the_next_two_each_once(repo, make_harness):
    """Two runs finish together and their lanes run side by side: each lane sees both slots free (GitHub says the
    other run completed, though its record does not yet), and the two sweeps next in line start once each."""
    repo.set_file(REPO, ".github/sweepbot.yml", POLICY.replace("mi355x: 1", "mi355x: 2"))
    opened(repo, 91, 92, 93, 94, 95)
    h = await make_harness()
    for number in (91, 92, 93, 94, 95):
        await label(h, number, FAIL_FAST)
    assert run_of(repo, 93) == [] and "behind #93." in headline(repo, 94)
    payloads = []
    for number in (91, 92):
        (run,) = run_of(repo, number)
        payloads.append(repo.workflow_run_payload(REPO, run["id"], "completed", conclusion="success"))

    for payload in payloads:
        await h.post("workflow_run", payload)
    await h.idle()

    assert len(run_of(repo, 93)) == 1 and len(run_of(repo, 94)) == 1 and run_of(repo, 95) == []
    assert "position 1 on `mi355x`. " in headline(repo, 95)


async def test_regression_two_prs_labelled_at_once_on_a_pool_of_one_start_one_sweep(pool_of_one, make_harness):
    """Regression: each PR's gate decided in its own lane from the other's record, which neither had written yet,
    so both started and the pool ran two sweeps over its cap of one. A process now takes the pool's turn one
    decision at a time, and counts a sweep it just started before that PR's record says so."""
    github = pool_of_one
    opened(github, 61, 62, 63)
    h = await make_harness()
    for number in (61, 62, 63):
        github.label_issue(REPO, number, FAIL_FAST, actor="maintainer")
    for number in (61, 62, 63):  # all posted before any is handled: three lanes decide at once
        payload = github.pull_request_payload(REPO, number, "labeled", sender="maintainer", label=FAIL_FAST)
        assert (await h.post("pull_request", payload)).status == 202
    await h.idle()
    assert len(runs(github)) == 1
    started = [n for n in (61, 62, 63) if run_of(github, n)]
    waiting = [n for n in (61, 62, 63) if n not in started]
    assert all("Queued: position" in headline(github, n) for n in waiting), [headline(github, n) for n in waiting]
