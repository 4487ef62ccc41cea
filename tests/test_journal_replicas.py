"""What replicas on one PostgreSQL share (bot/delivery/journal_pg.py): lanes taken under a lease (FOR UPDATE SKIP LOCKED
on the heads, one lease row per lane), per-PR order, leases that run out, renew, release, and one write budget.

Several journals on one database stand for several replicas. No test waits on a clock: a lease of 0 s is one
that has already run out, and the write budget is asked with an explicit `now`.
"""

from __future__ import annotations

import asyncio
import collections

import psycopg
import pytest
from postgres import postgres_db, postgres_url  # noqa: F401

from bot.delivery.journal import DONE, QUEUED, RUNNING, NewDelivery
from bot.delivery.journal_pg import LEASE_SECONDS, MIGRATIONS, TAKE_LEASE, PgJournal

REPO = "acme/InferenceX"


@pytest.fixture
def replicas(postgres_db):  # noqa: F811
    opened: list[PgJournal] = []

    def start(**kw) -> PgJournal:
        opened.append(PgJournal(postgres_db, **kw))
        return opened[-1]

    yield start
    for journal in opened:
        journal.close()


def new(i: int, number: int, *, not_before: float | None = None) -> NewDelivery:
    return NewDelivery(f"d{i}", "pull_request", "labeled", REPO, number, 1, b"{}", not_before=not_before)


def lane_of(number: int) -> str:
    return new(0, number).lane


async def test_the_schema_has_the_shared_tables(replicas):
    journal = replicas()
    assert journal.schema_version == len(MIGRATIONS) >= 2
    assert await journal.leases() == {}
    assert journal.lease_seconds == LEASE_SECONDS == 15.0


async def test_a_claim_takes_the_oldest_runnable_head_and_counts_the_attempt(replicas):
    journal = replicas()
    first = await journal.record(new(1, 5))
    await journal.record(new(2, 5))
    await journal.record(new(3, 6))
    claim = await journal.claim("a")
    assert (claim.delivery.seq, claim.attempt, claim.delivery.status, claim.taken_over) == (first, 1, RUNNING, False)
    assert claim.lane == lane_of(5) and claim.effects == {} and claim.delivery.body == b"{}"
    assert await journal.leases() == {lane_of(5): "a"}


async def test_a_held_lane_is_not_claimed_again_by_anyone_and_other_lanes_run_in_parallel(replicas):
    a, b = replicas(), replicas()
    for i, number in enumerate([1, 1, 2, 2, 3]):
        await a.record(new(i, number))
    first = await a.claim("a")
    second = await b.claim("b")
    third = await a.claim("a")  # the same replica does not take a lane it already runs: one at a time
    assert [c.lane for c in (first, second, third)] == [lane_of(1), lane_of(2), lane_of(3)]
    assert [c.delivery.id for c in (first, second, third)] == ["d0", "d2", "d4"]
    assert await b.claim("b") is None and await a.claim("a") is None  # d1, d3 wait behind their lanes' heads
    assert await a.leases() == {lane_of(1): "a", lane_of(2): "b", lane_of(3): "a"}


async def test_per_pr_order_holds_whichever_replica_takes_the_next(replicas):
    journals = [replicas(), replicas(), replicas()]
    numbers = [1, 2, 1, 3, 1, 2, 3, 3, 1, 2]
    for i, number in enumerate(numbers):
        await journals[0].record(new(i, number))
    ran: dict[str, list[int]] = collections.defaultdict(list)
    turn = 0
    for _ in range(len(numbers) + 1):  # bounded: a claim that never runs dry fails the test, not hangs it
        held = []
        for k, journal in enumerate(journals):  # each replica takes what it can, then all finish and release
            claim = await journal.claim(f"r{k}")
            if claim is not None:
                held.append((journal, f"r{k}", claim))
        if not held:
            break
        for journal, holder, claim in held:
            ran[claim.lane].append(claim.delivery.seq)
            await journal.finish(claim.delivery.seq, DONE)
            assert await journal.release(holder, claim.lane) == [claim.lane]
        turn += 1
    for lane, seqs in ran.items():
        assert seqs == sorted(seqs), lane
    assert sum(len(s) for s in ran.values()) == len(numbers)
    assert await journals[0].counts() == {DONE: len(numbers)}
    assert turn == 4  # lane 1 has four deliveries: four rounds, the three lanes side by side


async def test_concurrent_claims_never_take_one_lane_twice(replicas):
    """Three replicas claim at once (SKIP LOCKED skips a head another is taking); each lane goes to one."""
    journals = [replicas(), replicas(), replicas()]
    for i in range(30):
        await journals[0].record(new(i, i + 1))
    claims = []
    for _ in range(31):  # bounded, as above
        got = await asyncio.gather(*(j.claim(f"r{k}") for k, j in enumerate(journals) for _ in range(4)))
        got = [c for c in got if c is not None]
        if not got:
            break
        claims += got
    assert sorted(c.delivery.seq for c in claims) == sorted({c.delivery.seq for c in claims})
    assert len(claims) == 30 and all(c.attempt == 1 for c in claims)
    leases = await journals[0].leases()
    assert len(leases) == 30 and set(leases.values()) <= {"r0", "r1", "r2"}


async def test_a_live_lease_is_never_taken_even_by_a_claim_that_raced_past_the_check(replicas, postgres_db):  # noqa: F811
    """The lease statement itself refuses a live lease: the last word when two replicas pick one lane at once
    (a claim whose snapshot predates the other's commit)."""
    journal = replicas()
    await journal.record(new(1, 1))
    claim = await journal.claim("a")
    with psycopg.connect(postgres_db, autocommit=True) as conn:
        taken = conn.execute(TAKE_LEASE, {"lane": claim.lane, "holder": "b", "lease": 15.0}).fetchone()
        assert taken is None
        conn.execute("UPDATE lanes SET expires_at = clock_timestamp() - interval '1 second'")
        taken = conn.execute(TAKE_LEASE, {"lane": claim.lane, "holder": "b", "lease": 15.0}).fetchone()
        assert taken == (claim.lane,)
    assert await journal.leases() == {claim.lane: "b"}


async def test_a_head_waiting_for_its_time_holds_its_lane_back(replicas):
    journal = replicas()
    head = await journal.record(new(1, 7, not_before=2_000_000_000.0))  # a label burst settling, or a retry
    await journal.record(new(2, 7))
    other = await journal.record(new(3, 8))
    claim = await journal.claim("a", now=1_900_000_000.0)
    assert claim.delivery.seq == other  # lane 7 waits: d2 does not overtake its head
    assert await journal.claim("a", now=1_900_000_000.0) is None
    later = await journal.claim("a", now=2_000_000_001.0)
    assert later.delivery.seq == head and later.delivery.not_before is None


async def test_a_retry_later_keeps_the_lane_in_order_after_release(replicas):
    journal = replicas()
    first = await journal.record(new(1, 4))
    await journal.record(new(2, 4))
    claim = await journal.claim("a")
    await journal.retry_later(claim.delivery.seq, 2_000_000_000.0, "ServerError: 502")
    await journal.release("a", claim.lane)
    assert await journal.claim("a", now=1_900_000_000.0) is None
    again = await journal.claim("a", now=2_000_000_001.0)
    assert (again.delivery.seq, again.attempt) == (first, 2)


async def test_a_lease_that_ran_out_is_taken_over_and_its_holder_hears_it_lost_the_lane(replicas):
    a, b = replicas(), replicas()
    seq = await a.record(new(1, 1))
    await a.intend(seq, "comment:welcome")
    await a.claim("a", lease=0)  # "a" dies at once: its lease has run out
    taken = await b.claim("b")
    assert (taken.delivery.seq, taken.taken_over, taken.attempt, taken.delivery.interrupted) == (seq, True, 2, 1)
    assert list(taken.effects) == ["comment:welcome"]  # the ledger goes with it: nothing is done twice
    assert await a.renew("a") == []  # "a" comes back: the lane is no longer its own
    assert await b.renew("b") == [taken.lane]
    assert await a.leases() == {taken.lane: "b"}


async def test_a_live_lease_is_not_taken_over(replicas):
    a, b = replicas(), replicas()
    await a.record(new(1, 1))
    await a.claim("a")  # the default lease, 15 s
    assert await b.claim("b") is None


async def test_the_lease_time_is_configurable(replicas):
    short = replicas(lease_seconds=0)
    other = replicas()
    await short.record(new(1, 1))
    await short.claim("a")  # with the journal's lease of 0 s
    assert (await other.claim("b")).taken_over


async def test_renew_is_the_heartbeat_that_keeps_a_lease(replicas):
    a, b = replicas(), replicas()
    await a.record(new(1, 1))
    await a.record(new(2, 2))
    await a.claim("a")
    await a.claim("a", lease=0)  # lane 2's lease has run out
    assert await a.renew("a") == [lane_of(1), lane_of(2)]  # renewed before anyone took it, for 15 s
    assert await b.claim("b") is None


async def test_release_hands_lanes_back_and_close_releases_all_of_them(replicas):
    a, b = replicas(), replicas()
    for i in range(3):
        await a.record(new(i, i + 1))
    claims = [await a.claim("a") for _ in range(3)]
    assert await a.release("a", claims[0].lane) == [claims[0].lane]
    assert await a.release("b", claims[1].lane) == []  # only the holder hands a lane back
    taken = await b.claim("b")
    assert taken.delivery.seq == claims[0].delivery.seq and taken.taken_over  # it was left running
    a.close()  # SIGTERM: the journal hands back every lane it took, at once
    assert "a" not in (await b.leases()).values()
    rest = [await b.claim("b"), await b.claim("b")]
    assert sorted(c.delivery.seq for c in rest) == sorted(c.delivery.seq for c in claims[1:])


async def test_recover_at_start_leaves_lanes_another_replica_holds(replicas):
    a, b = replicas(), replicas()
    held = await a.record(new(1, 1))
    lost = await a.record(new(2, 2))
    await a.claim("a")  # live
    await a.claim("a", lease=0)  # ran out
    assert await b.recover(3) == []
    assert (await b.load(held)).status == RUNNING and (await b.load(held)).interrupted == 0
    assert (await b.load(lost)).status == QUEUED and (await b.load(lost)).interrupted == 1


# -- one write budget for all replicas -------------------------------------------------------------------


async def test_the_write_budget_allows_limit_per_window_then_spaces_the_rest(replicas):
    journal = replicas()
    waits = [await journal.pace("installation:1", 3, 60.0, now=1000.0) for _ in range(7)]
    assert waits == [0, 0, 0, 60, 60, 60, 120]
    assert await journal.pace("installation:1", 3, 60.0, now=1200.0) == 0  # the window has passed
    assert await journal.pace("installation:2", 3, 60.0, now=1000.0) == 0  # another installation's own


async def test_replicas_share_one_write_budget(replicas):
    a, b = replicas(), replicas()
    assert [await a.pace("installation:1", 4, now=50.0), await a.pace("installation:1", 4, now=50.0)] == [0, 0]
    assert [await b.pace("installation:1", 4, now=50.0), await b.pace("installation:1", 4, now=50.0)] == [0, 0]
    assert await b.pace("installation:1", 4, now=70.0) == 40.0  # the first of the four is 60 s old at 110
    waits = await asyncio.gather(*(j.pace("installation:9", 4, now=0.0) for j in (a, b) for _ in range(5)))
    assert sorted(waits) == [0] * 4 + [60] * 4 + [120] * 2


async def test_the_write_budget_uses_the_databases_clock_and_zero_paces_nothing(replicas):
    journal = replicas()
    assert await journal.pace("installation:1", 1) == 0
    assert 0 < await journal.pace("installation:1", 1) <= 60
    assert await journal.pace("installation:1", 0) == 0


async def test_a_claim_hands_the_last_lane_back_and_says_what_waits_behind_in_one_transaction(replicas):
    """A worker done with its head asks for the next delivery in one round trip: the release is in the claim."""
    journal, other = replicas(), replicas()
    await journal.record(new(1, 8))
    second = await journal.record(NewDelivery("d2", "issue_comment", "created", REPO, 8, 1, b"{}"))
    await journal.record(new(3, 9))
    claim = await journal.claim("a")
    assert claim.waiting == (("issue_comment", "created"),)  # read with the claim, not a round trip later
    await journal.finish(claim.delivery.seq, DONE)
    batches = []
    real_commit = journal._commit
    journal._commit = lambda batch: batches.append(len(batch)) or real_commit(batch)
    claim = await journal.claim("a", release=lane_of(8))
    assert claim.delivery.seq == second and claim.waiting == ()
    assert batches == [1]  # one operation, one transaction
    assert await other.leases() == {lane_of(8): "a"}  # handed back and taken again: its next head is its own
    await journal.finish(second, DONE)
    assert (await journal.claim("a", release=lane_of(8))).lane == lane_of(9)
    assert await other.leases() == {lane_of(9): "a"}
    assert await journal.claim("b", release=lane_of(9)) is None  # only the holder hands a lane back
    assert await other.leases() == {lane_of(9): "a"}


async def test_recording_a_delivery_or_handing_a_lane_back_notifies_every_replica(replicas):
    journal, listening = replicas(), replicas()
    heard: list[float] = []
    listener = listening.listen(lambda: heard.append(1))
    try:
        assert await asyncio.to_thread(listener.listening.wait, 10)

        async def heard_one() -> None:
            count = len(heard)
            for _ in range(500):
                if len(heard) > count:
                    return
                await asyncio.sleep(0.01)
            raise AssertionError("no notification")

        async def silent() -> None:
            count = len(heard)
            await asyncio.sleep(0.3)
            assert len(heard) == count

        waiting = asyncio.create_task(heard_one())
        await journal.record(new(1, 3))
        await waiting
        waiting = asyncio.create_task(silent())
        await journal.record(new(1, 3))  # a duplicate id: nothing new to claim
        await waiting
        claim = await journal.claim("a")
        waiting = asyncio.create_task(silent())
        await journal.renew("a")
        await waiting
        waiting = asyncio.create_task(heard_one())
        await journal.release("a", claim.lane)
        await waiting
    finally:
        await asyncio.to_thread(listener.stop)
    assert not listener.listening.is_set()
