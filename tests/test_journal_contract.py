"""The journal's contract, run on both backends: SQLite in tmp_path and PostgreSQL on a fresh database per test.

Each test says what the server, the workers, the ledger and the CLI rely on (tests/test_intake.py,
test_crash*.py, test_exactly_once.py, test_workers.py show where): dedupe by delivery id, a delivery committed
when `record` returns (the ack comes after), `begin` counting the attempt and handing over the payload and the
ledger, intend/complete/withdraw, recovery of interrupted rows, retries with a not-before time, requeue,
relane, prune, counts and the oldest pending delivery. No test waits on a clock.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest
from harness import REPO
from postgres import postgres_db, postgres_url  # noqa: F401

from bot.delivery.journal import (
    DONE,
    EFFECT_DONE,
    FAILED,
    IGNORED,
    INTENDED,
    QUEUED,
    RETRYING,
    RUNNING,
    JournalBackend,
    NewDelivery,
)
from bot.delivery.journal_open import open_journal

BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(params=BACKENDS)
def target(request, tmp_path) -> str:
    """Where a journal lives: an SQLite file, or a fresh PostgreSQL database (asked for only on that side)."""
    if request.param == "sqlite":
        return str(tmp_path / "journal.db")
    return request.getfixturevalue("postgres_db")


@pytest.fixture
def opened(target):
    """Opens journals on the test's store (a second one is a second replica, or the same bot restarted)."""
    journals: list[JournalBackend] = []

    def open_one() -> JournalBackend:
        journals.append(open_journal(target))
        return journals[-1]

    yield open_one
    for journal in journals:
        journal.close()


@pytest.fixture
def journal(opened) -> JournalBackend:
    return opened()


def new(
    i: int | str,
    *,
    number: int | None = 1,
    repo: str | None = REPO,
    event: str = "pull_request",
    action: str | None = "opened",
    status: str = QUEUED,
    not_before: float | None = None,
    body: bytes | None = None,
    sha: str | None = None,
) -> NewDelivery:
    body = body if body is not None else json.dumps({"n": i}).encode()
    return NewDelivery(f"d{i}", event, action, repo, number, 7, body, status=status, sha=sha, not_before=not_before)


# -- record: dedupe by id, committed on return -----------------------------------------------------------


async def test_record_returns_rising_sequence_numbers_and_none_for_an_id_seen_before(journal):
    first, second = await journal.record(new(1)), await journal.record(new(2))
    assert isinstance(first, int) and second > first
    assert await journal.record(new(1)) is None  # GitHub reuses a delivery id on redelivery: one row
    assert await journal.record(new(1, number=9, body=b"other")) is None
    assert await journal.counts() == {QUEUED: 2}
    assert (await journal.get("d1")).number == 1  # the first one stays as it was


async def test_concurrent_records_of_the_same_ids_give_one_row_each(journal):
    results = await asyncio.gather(*(journal.record(new(i % 50)) for i in range(100)))
    assert len([r for r in results if r is not None]) == 50
    assert len({r for r in results if r is not None}) == 50
    assert await journal.counts() == {QUEUED: 50}


async def test_two_replicas_recording_one_delivery_give_one_row(opened):
    a, b = opened(), opened()
    results = await asyncio.gather(*(j.record(new(i)) for i in range(40) for j in (a, b)))
    assert sorted(r for r in results if r is not None) == sorted({r for r in results if r is not None})
    assert len([r for r in results if r is not None]) == 40
    assert await a.counts() == await b.counts() == {QUEUED: 40}


async def test_a_recorded_delivery_is_committed_when_record_returns(opened):
    """The ack goes out after `record` returns: by then another connection (another replica, or the bot after
    a SIGKILL) must see the row, payload and all."""
    writer, reader = opened(), opened()
    body = bytes(range(256)) + "ü中".encode()
    seq = await writer.record(new(1, body=body, not_before=1234.5))
    row = await reader.get("d1")
    assert row is not None and row.seq == seq and row.body == body
    assert (row.id, row.event, row.action, row.repo, row.number, row.installation) == (
        "d1",
        "pull_request",
        "opened",
        REPO,
        1,
        7,
    )
    assert (row.lane, row.status, row.attempts, row.error, row.finished_at, row.not_before, row.interrupted) == (
        f"{REPO}#1",
        QUEUED,
        0,
        None,
        None,
        1234.5,
        0,
    )
    assert isinstance(row.received_at, float) and abs(row.received_at - time.time()) < 3600


async def test_the_journal_survives_a_restart(opened):
    first = opened()
    seq = await first.record(new(1))
    await first.begin(seq)
    await first.intend(seq, "comment:welcome")
    first.close()
    again = opened()
    assert (await again.get("d1")).status == RUNNING
    assert (await again.effects(seq))["comment:welcome"].state == INTENDED


async def test_an_ignored_delivery_is_recorded_finished_and_not_unfinished(journal):
    seq = await journal.record(new(1, event="star", action="created", status=IGNORED))
    assert (await journal.load(seq)).status == IGNORED
    assert await journal.unfinished() == []
    assert await journal.begin(seq) is None


async def test_lanes_come_from_the_pr_or_the_head_sha(journal):
    sha = "a" * 40
    await journal.record(new(1, number=5))
    await journal.record(new(2, event="workflow_run", action="completed", number=None, sha=sha))
    await journal.record(new(3, event="installation", action="created", repo=None, number=None))
    lanes = [q.lane for q in await journal.unfinished()]
    assert lanes == [new(1, number=5).lane, new(2, number=None, sha=sha).lane, new(3, repo=None, number=None).lane]
    assert lanes[0] == f"{REPO}#5" and len(set(lanes)) == 3


# -- begin / load / finish -----------------------------------------------------------------------------------


async def test_begin_counts_the_attempt_and_hands_over_the_row_and_its_ledger(journal):
    seq = await journal.record(new(1, not_before=99.0))
    row, attempt, effects = await journal.begin(seq)
    assert (row.seq, row.id, row.status, row.attempts, row.not_before) == (seq, "d1", RUNNING, 1, None)
    assert attempt == 1 and effects == {} and row.body == new(1).body
    await journal.intend(seq, "k1")
    journal.complete(seq, "k1", {"id": 7001})
    await journal.intend(seq, "k2")
    await journal.retry_later(seq, 50.0, "TimeoutError")
    row, attempt, effects = await journal.begin(seq)  # a retry takes it again: second attempt, ledger as left
    assert (row.status, row.attempts, attempt, row.not_before) == (RUNNING, 2, 2, None)
    assert {k: (e.state, e.result) for k, e in effects.items()} == {
        "k1": (EFFECT_DONE, {"id": 7001}),
        "k2": (INTENDED, None),
    }
    assert (await journal.get("d1")).attempts == 2


async def test_begin_is_none_for_a_finished_or_unknown_delivery(journal):
    seq = await journal.record(new(1))
    await journal.begin(seq)
    await journal.finish(seq, DONE)
    assert await journal.begin(seq) is None  # e.g. `sweepbot redeliver` finished it from another process
    assert (await journal.get("d1")).attempts == 1
    assert await journal.begin(seq + 1000) is None


async def test_load_gives_the_whole_row_with_its_payload(journal):
    seq = await journal.record(new(1))
    row = await journal.load(seq)
    assert row.id == "d1" and row.body == new(1).body and row.status == QUEUED
    assert await journal.load(seq + 1000) is None


async def test_finish_sets_status_error_and_time_and_clears_not_before(journal):
    done, failed = await journal.record(new(1)), await journal.record(new(2))
    await journal.retry_later(done, 10.0, "502")
    await journal.finish(done, DONE)
    await journal.finish(failed, FAILED, "GitHubBroken: 422")
    d1, d2 = await journal.get("d1"), await journal.get("d2")
    assert (d1.status, d1.error, d1.not_before) == (DONE, None, None) and isinstance(d1.finished_at, float)
    assert (d2.status, d2.error) == (FAILED, "GitHubBroken: 422") and d2.finished_at is not None
    assert await journal.unfinished() == []


# -- retries, requeue, relane, recover ---------------------------------------------------------------------


async def test_retry_later_keeps_it_unfinished_with_its_not_before(journal):
    seq = await journal.record(new(1))
    await journal.begin(seq)
    await journal.retry_later(seq, 4102444800.0, "ServerError: 502")
    row = await journal.get("d1")
    assert (row.status, row.error, row.not_before, row.finished_at) == (
        RETRYING,
        "ServerError: 502",
        4102444800.0,
        None,
    )
    [queued] = await journal.unfinished()
    assert (queued.seq, queued.lane, queued.not_before) == (seq, f"{REPO}#1", 4102444800.0)
    assert await journal.counts() == {RETRYING: 1}


async def test_requeue_makes_a_finished_delivery_queued_again_keeping_its_attempts(journal):
    seq = await journal.record(new(1))
    await journal.begin(seq)
    await journal.recover(3)  # interrupted once
    await journal.begin(seq)
    await journal.finish(seq, FAILED, "boom")
    assert (await journal.get("d1")).interrupted == 1
    row = await journal.requeue("d1")
    assert (row.seq, row.status, row.error, row.finished_at, row.not_before, row.interrupted, row.attempts) == (
        seq,
        QUEUED,
        None,
        None,
        None,
        0,
        2,
    )  # a fresh count of crashes; the attempts stay
    assert row.body == new(1).body
    assert await journal.requeue("nope") is None
    _, attempt, _ = await journal.begin(seq)
    assert attempt == 3


async def test_relane_moves_a_delivery_into_its_prs_lane(journal):
    sha = "b" * 40
    seq = await journal.record(new(1, event="workflow_run", action="completed", number=None, sha=sha))
    name = await journal.relane(seq, 42)
    assert name == f"{REPO}#42" == new(0, number=42).lane
    row = await journal.load(seq)
    assert (row.number, row.lane) == (42, name)
    assert [(q.seq, q.lane) for q in await journal.unfinished()] == [(seq, name)]


async def test_recover_requeues_interrupted_deliveries_and_fails_those_interrupted_too_often(journal):
    crashy, once, waiting, retrying, done = [await journal.record(new(i)) for i in range(5)]
    for _ in range(3):  # crashy: taken and interrupted three times
        await journal.begin(crashy)
        assert await journal.recover(3) == []
    await journal.begin(crashy)  # and a fourth time
    await journal.begin(once)
    await journal.begin(retrying)
    await journal.retry_later(retrying, 5.0, "502")
    await journal.begin(done)
    await journal.finish(done, DONE)
    assert await journal.recover(3) == ["d0"]
    rows = {d.id: d for d in await journal.listing(limit=10)}
    assert (rows["d0"].status, rows["d0"].interrupted) == (FAILED, 4)
    assert rows["d0"].error == "interrupted by a crash more than 3 times" and rows["d0"].finished_at
    assert (rows["d1"].status, rows["d1"].interrupted, rows["d1"].attempts) == (QUEUED, 1, 1)
    assert (rows["d2"].status, rows["d2"].interrupted) == (QUEUED, 0)
    assert (rows["d3"].status, rows["d3"].interrupted, rows["d3"].not_before) == (RETRYING, 0, 5.0)
    assert (rows["d4"].status, rows["d4"].interrupted) == (DONE, 0)
    assert await journal.recover(3) == []  # nothing left running


async def test_recover_returns_every_id_given_up_in_arrival_order(journal):
    seqs = [await journal.record(new(i)) for i in range(4)]
    for seq in seqs[:3]:
        await journal.begin(seq)
    assert await journal.recover(0) == ["d0", "d1", "d2"]


async def test_unfinished_is_queued_running_and_retrying_oldest_first_without_payloads(journal):
    seqs = [await journal.record(new(i, number=i % 2 + 1)) for i in range(6)]
    await journal.begin(seqs[1])
    await journal.begin(seqs[2])
    await journal.retry_later(seqs[2], 77.0, "502")
    await journal.finish(seqs[3], DONE)
    await journal.finish(seqs[4], FAILED, "x")
    unfinished = await journal.unfinished()
    assert [(q.seq, q.not_before, q.kind) for q in unfinished] == [
        (seqs[0], None, ("pull_request", "opened")),
        (seqs[1], None, ("pull_request", "opened")),
        (seqs[2], 77.0, ("pull_request", "opened")),
        (seqs[5], None, ("pull_request", "opened")),
    ]
    assert [q.lane for q in unfinished] == [f"{REPO}#1", f"{REPO}#2", f"{REPO}#1", f"{REPO}#2"]


# -- the ledger of effects -------------------------------------------------------------------------------------


async def test_intend_then_complete_records_the_result_and_keeps_when_it_was_intended(journal):
    seq = await journal.record(new(1))
    await journal.intend(seq, "comment:welcome")
    intended = (await journal.effects(seq))["comment:welcome"]
    assert (intended.key, intended.state, intended.result) == ("comment:welcome", INTENDED, None)
    assert isinstance(intended.intended_at, float)
    result = {"id": 7001, "html_url": "https://github.com/x/y#c", "names": ["a", "b"], "nested": {"ok": True}}
    assert await journal.complete(seq, "comment:welcome", result) is None
    done = (await journal.effects(seq))["comment:welcome"]
    assert (done.state, done.result, done.intended_at) == (EFFECT_DONE, result, intended.intended_at)


async def test_complete_without_an_intent_and_with_a_plain_result(journal):
    seq = await journal.record(new(1))
    await journal.complete(seq, "label:amd", None)
    await journal.complete(seq, "react:eyes", 12)
    effects = await journal.effects(seq)
    assert {k: (e.state, e.result, e.intended_at) for k, e in effects.items()} == {
        "label:amd": (EFFECT_DONE, None, None),
        "react:eyes": (EFFECT_DONE, 12, None),
    }


async def test_a_completion_not_waited_for_is_committed_before_what_the_worker_writes_next(opened):
    """JournalLedger does not await complete(): the next write of the same worker must find it committed."""
    journal, other = opened(), opened()
    seq = await journal.record(new(1))
    await journal.begin(seq)
    await journal.intend(seq, "k")
    journal.complete(seq, "k", {"id": 1})  # not awaited
    await journal.finish(seq, DONE)
    assert (await other.effects(seq))["k"].state == EFFECT_DONE


async def test_intend_again_refreshes_the_time_and_does_not_undo_a_done_effect(journal):
    seq = await journal.record(new(1))
    await journal.intend(seq, "k")
    await journal.complete(seq, "k", {"id": 3})
    await journal.intend(seq, "k")
    effect = (await journal.effects(seq))["k"]
    assert (effect.state, effect.result) == (EFFECT_DONE, {"id": 3}) and effect.intended_at is not None


async def test_withdraw_removes_an_intent_but_never_a_done_effect(journal):
    seq = await journal.record(new(1))
    await journal.intend(seq, "refused")
    await journal.intend(seq, "kept")
    await journal.complete(seq, "kept", {"id": 9})
    await journal.withdraw(seq, "refused")
    await journal.withdraw(seq, "kept")
    await journal.withdraw(seq, "never-there")
    assert list(await journal.effects(seq)) == ["kept"]


async def test_each_delivery_has_a_ledger_of_its_own(journal):
    a, b = await journal.record(new(1)), await journal.record(new(2))
    await journal.intend(a, "k")
    await journal.complete(b, "k", {"id": 2})
    assert (await journal.effects(a))["k"].state == INTENDED
    assert (await journal.effects(b))["k"].state == EFFECT_DONE
    assert await journal.effects(b + 1000) == {}


# -- reading: get, listing, counts, oldest_pending ------------------------------------------------------------------


async def test_get_by_delivery_id(journal):
    seq = await journal.record(new(1))
    assert (await journal.get("d1")).seq == seq and (await journal.get("d1")).body == new(1).body
    assert await journal.get("d2") is None


async def test_listing_is_newest_first_with_a_limit_and_a_status_filter_and_no_payloads(journal):
    seqs = [await journal.record(new(i)) for i in range(5)]
    await journal.finish(seqs[1], FAILED, "one")
    await journal.finish(seqs[3], FAILED, "three")
    assert [d.id for d in await journal.listing(limit=3)] == ["d4", "d3", "d2"]
    assert [d.id for d in await journal.listing(limit=50)] == ["d4", "d3", "d2", "d1", "d0"]
    failed = await journal.listing(status=FAILED)
    assert [(d.id, d.error) for d in failed] == [("d3", "three"), ("d1", "one")]
    assert all(d.body is None for d in await journal.listing())
    assert await journal.listing(status=RETRYING) == []


async def test_counts_per_status(journal):
    assert await journal.counts() == {}
    seqs = [await journal.record(new(i)) for i in range(6)]
    await journal.record(new(9, status=IGNORED))
    await journal.begin(seqs[0])
    await journal.retry_later(seqs[1], 1.0, "502")
    await journal.finish(seqs[2], DONE)
    await journal.finish(seqs[3], FAILED, "x")
    assert await journal.counts() == {QUEUED: 2, RUNNING: 1, RETRYING: 1, DONE: 1, FAILED: 1, IGNORED: 1}
    assert await journal.unfinished_count() == 4  # the backlog: queued, running and retrying


async def test_oldest_pending_is_when_the_oldest_unfinished_delivery_arrived(journal):
    assert await journal.oldest_pending() is None
    seqs = [await journal.record(new(i)) for i in range(3)]
    arrived = [(await journal.load(seq)).received_at for seq in seqs]
    assert await journal.oldest_pending() == arrived[0]
    await journal.finish(seqs[0], DONE)
    assert await journal.oldest_pending() == arrived[1]
    await journal.begin(seqs[1])
    await journal.retry_later(seqs[1], 1.0, "502")
    assert await journal.oldest_pending() == arrived[1]  # retrying is still pending
    await journal.finish(seqs[1], FAILED, "gave up")
    await journal.finish(seqs[2], DONE)
    assert await journal.oldest_pending() is None


# -- prune, probe, close ------------------------------------------------------------------------------------------


async def test_prune_forgets_old_done_and_ignored_deliveries_with_their_ledgers(journal):
    done, ignored, failed, queued, retrying = [await journal.record(new(i)) for i in range(5)]
    await journal.finish(done, DONE)
    await journal.complete(done, "k", {"id": 1})
    await journal.finish(ignored, IGNORED)
    await journal.finish(failed, FAILED, "x")
    await journal.complete(failed, "k", {"id": 2})
    await journal.retry_later(retrying, 1.0, "502")
    assert await journal.prune() == 0  # nothing is 30 days old
    assert await journal.prune(older_than_days=-1) == 2  # a cut-off in the future: every finished one is old
    assert await journal.counts() == {FAILED: 1, QUEUED: 1, RETRYING: 1}  # failed ones stay until handled
    assert await journal.effects(done) == {}
    assert list(await journal.effects(failed)) == ["k"]


async def test_probe_writes_and_a_closed_journal_refuses(journal):
    await journal.probe()
    await journal.probe()
    journal.close()
    journal.close()  # twice is fine
    with pytest.raises(RuntimeError, match="closed"):
        await journal.probe()
    with pytest.raises(RuntimeError, match="closed"):
        await journal.record(new(1))


async def test_close_commits_what_was_queued_before_it(opened):
    journal, other = opened(), opened()
    seq = await journal.record(new(1))
    journal.complete(seq, "k", {"id": 5})  # not awaited, then closed at once
    journal.close()
    assert (await other.effects(seq))["k"].result == {"id": 5}


# -- one journal, many callers ------------------------------------------------------------------------------------


async def test_an_operation_that_fails_fails_only_its_caller(journal):
    """relane of a delivery that is not there raises; the writes batched with it are committed, and the journal
    goes on (a writer that died would leave every later caller waiting for ever)."""
    results = await asyncio.wait_for(
        asyncio.gather(
            journal.record(new(1)), journal.relane(10_000, 3), journal.record(new(2)), return_exceptions=True
        ),
        30,
    )
    assert isinstance(results[0], int) and isinstance(results[2], int)
    assert isinstance(results[1], Exception)
    assert await asyncio.wait_for(journal.record(new(3)), 10) is not None
    assert await journal.counts() == {QUEUED: 3}


def test_callers_on_several_loops_and_threads(journal):
    """Intake's loop and the workers' loop (their own thread) share one journal."""
    results: list = []
    errors: list = []

    def on_a_loop_of_its_own(start: int) -> None:
        async def go() -> list:
            seqs = await asyncio.gather(*(journal.record(new(i)) for i in range(start, start + 20)))
            for seq in seqs:
                await journal.begin(seq)
                await journal.finish(seq, DONE)
            return seqs

        try:
            results.extend(asyncio.run(go()))
        except Exception as exc:  # pragma: no cover - what the test looks for
            errors.append(exc)

    threads = [threading.Thread(target=on_a_loop_of_its_own, args=(s,)) for s in (0, 100, 200)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)

    async def counts() -> dict:
        return await journal.counts()

    assert errors == [] and len(set(results)) == 60 and None not in results
    assert asyncio.run(counts()) == {DONE: 60}


# -- the bot on either backend -----------------------------------------------------------------------------


async def test_the_bot_acks_after_the_commit_and_processes_each_delivery_once(make_harness, target, opened):
    h = await make_harness(db_path=target)
    payload = h.github.pull_request_payload(REPO, 1, "opened")
    first = await h.deliver("pull_request", payload, delivery="pr-1")
    again = await h.deliver("pull_request", payload, delivery="pr-1")
    assert (first.status, again.status) == (202, 200) and (await again.json())["status"] == "duplicate"
    welcomes = [c for c in h.github.comments(REPO, 1) if c["body"].startswith("<!-- sweepbot:welcome -->")]
    assert len(welcomes) == 1
    other = opened()  # what another replica, or `sweepbot deliveries`, sees
    row = await other.get("pr-1")
    assert (row.status, row.attempts) == (DONE, 1) and json.loads(row.body) == payload
    ledger = await other.effects(row.seq)
    assert any(
        e.state == EFFECT_DONE and isinstance(e.result, dict) and e.result.get("id") == welcomes[0]["id"]
        for e in ledger.values()
    )
    health = await (await h.client.get("/healthz")).json()
    assert health["journal"] == "writable" and health["backlog"] == 0


async def test_the_bot_journals_before_the_ack_with_no_workers(make_harness, target, opened):
    h = await make_harness(db_path=target, workers=0)
    payload = h.github.pull_request_payload(REPO, 1, "opened")
    assert (await h.post("pull_request", payload, delivery="q-1")).status == 202
    row = await opened().get("q-1")
    assert (row.status, row.repo, row.number) == (QUEUED, REPO, 1) and json.loads(row.body) == payload
    assert h.github.requests == []
