"""The SQLite journal of an intake beside a workers' process: both processes write one file, and an
ack must wait for no more than the workers' transaction in hand, never for a checkpoint or a count."""

from __future__ import annotations

import asyncio
import sqlite3
import threading

from bot.delivery.journal import NewDelivery
from bot.delivery.journal_sqlite import SqliteJournal


def delivery(i: int) -> NewDelivery:
    return NewDelivery(f"d{i}", "pull_request", "opened", "acme/repo", i, 7, b"{}")


async def test_the_intake_takes_the_write_lock_as_soon_as_the_workers_let_it_go(tmp_path):
    """The intake's connection asks for the lock itself (SQLite's busy handler would sleep up to 100 ms between
    tries); it still gets it, and the delivery is committed, once the other process's transaction ends."""
    path = str(tmp_path / "j.db")
    intake = SqliteJournal(path, intake=True)
    workers = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    workers.execute("BEGIN IMMEDIATE")
    release = threading.Timer(0.3, lambda: workers.execute("COMMIT"))
    release.start()
    try:
        seq = await asyncio.wait_for(intake.record(delivery(1)), 5)
        assert seq is not None and (await intake.load(seq)).id == "d1"
    finally:
        release.join()
        workers.close()
        intake.close()


async def test_the_intake_leaves_the_checkpoints_to_the_workers(tmp_path):
    path = str(tmp_path / "j.db")
    intake, alone = SqliteJournal(path, intake=True), SqliteJournal(str(tmp_path / "alone.db"))
    try:
        autocheckpoint = await intake._submit(lambda db: db.execute("PRAGMA wal_autocheckpoint").fetchone()[0])
        assert autocheckpoint == 0
        assert await alone._submit(lambda db: db.execute("PRAGMA wal_autocheckpoint").fetchone()[0]) == 1000
    finally:
        intake.close()
        alone.close()


async def test_a_count_for_healthz_does_not_wait_behind_the_writer(tmp_path):
    """Regression: /healthz's counts went through the writer thread, so every ack queued behind a count of the
    whole table (about 30 ms at 10,000 rows while the workers drained) and a health probe behind the acks."""
    journal = SqliteJournal(str(tmp_path / "j.db"))
    await journal.record(delivery(1))
    writer_busy, let_go = threading.Event(), threading.Event()

    def hold(db):
        writer_busy.set()
        let_go.wait(10)

    held = asyncio.ensure_future(journal._submit(hold))
    try:
        await asyncio.to_thread(writer_busy.wait, 5)
        counts = await asyncio.wait_for(journal.counts(), 2)  # the writer is still held
        assert counts == {"queued": 1}
        assert await asyncio.wait_for(journal.unfinished_count(), 2) == 1
        assert not held.done()
    finally:
        let_go.set()
        await held
        journal.close()
