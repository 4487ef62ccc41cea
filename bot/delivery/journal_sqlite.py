"""The delivery journal on SQLite (a file path in SWEEPBOT_DB, the default): one process, WAL, synced commits.

The operations and their SQL are the base's (`bot.delivery.journal.Journal`); this is how SQLite connects,
migrates, inserts, commits a batch (one transaction, a savepoint per operation) and probes the disk.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sqlite3
import time
from typing import Any

from bot.delivery.journal import (
    FAILED,
    INSERT_DELIVERY,
    QUEUED,
    Journal,
    JournalUnavailable,
    Op,
    Statements,
    refuse_newer_schema,
)

# Versioned migrations, run at start: PRAGMA user_version says how many have been applied.
BUSY_TIMEOUT_MS = 5000
# The intake beside a workers' process asks for the write lock this often: SQLite's own busy handler sleeps up to
# 100 ms between tries, and a waiter that sleeps through the moments the lock is free can lose it again and again.
INTAKE_LOCK_POLL = 0.0005

MIGRATIONS = (
    """
    CREATE TABLE IF NOT EXISTS deliveries (
        seq          INTEGER PRIMARY KEY AUTOINCREMENT,
        id           TEXT NOT NULL UNIQUE,
        event        TEXT NOT NULL,
        action       TEXT,
        repo         TEXT,
        number       INTEGER,
        installation INTEGER,
        lane         TEXT NOT NULL,
        received_at  REAL NOT NULL,
        body         BLOB NOT NULL,
        status       TEXT NOT NULL,
        attempts     INTEGER NOT NULL DEFAULT 0,
        error        TEXT,
        finished_at  REAL
    );
    CREATE INDEX IF NOT EXISTS deliveries_unfinished ON deliveries(status) WHERE status IN ('queued', 'running');
    """,
    # 2: retries on a schedule that survives restarts, crash counts apart from attempts, the ledger of effects
    """
    ALTER TABLE deliveries ADD COLUMN not_before REAL;
    ALTER TABLE deliveries ADD COLUMN interrupted INTEGER NOT NULL DEFAULT 0;
    DROP INDEX IF EXISTS deliveries_unfinished;
    CREATE INDEX deliveries_unfinished ON deliveries(status) WHERE status IN ('queued', 'running', 'retrying');
    CREATE TABLE effects (
        seq         INTEGER NOT NULL,
        key         TEXT NOT NULL,
        state       TEXT NOT NULL,
        result      TEXT,
        intended_at REAL,
        done_at     REAL,
        PRIMARY KEY (seq, key)
    );
    """,
    # 3: the status and the attempts beside the row: the payload sits before them in the row, so without this
    # index a count by status (/healthz) or the look for requeued rows (every second) read through every
    # payload's overflow pages, and the second did it inside the writer's transaction
    """
    CREATE INDEX deliveries_by_status ON deliveries(status, attempts);
    """,
)


class SqliteJournal(Journal):
    """SQLite journal with one writer thread; concurrent writes are committed together (group commit)."""

    def __init__(self, path: str, *, intake: bool = False):
        """`intake`: this is the webhook intake's connection, beside a workers' process writing the same file. It
        leaves the WAL's checkpoints (tens of milliseconds, paid by whichever commit crosses the threshold) to the
        workers, and asks for the write lock every INTAKE_LOCK_POLL instead of by SQLite's backoff, so that an ack
        waits for the workers' transaction in hand and no longer."""
        super().__init__(path, "journal-writer")
        self.path = path
        self.intake = intake
        self._reads = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="journal-reader")
        self._reader: sqlite3.Connection | None = None  # opened on the reader's thread at its first read
        try:
            self._conn = self._connect()
        except sqlite3.Error as exc:
            raise JournalUnavailable(f"cannot open the journal at {path}: {type(exc).__name__}: {exc}") from None
        self._start_writer()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        # FULL: the WAL is synced at every commit, so an acknowledged delivery survives a power cut too.
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        migrate(conn, self.path)
        if self.intake:
            conn.execute("PRAGMA wal_autocheckpoint=0")
            conn.execute("PRAGMA busy_timeout=0")  # _begin asks again itself
        return conn

    def _disconnect(self) -> None:
        self._conn.close()

    def _commit(
        self, batch: list[tuple[Op, asyncio.Future | None]]
    ) -> list[tuple[asyncio.Future | None, Any, BaseException | None]]:
        conn = self._conn
        results: list[tuple[asyncio.Future | None, Any, BaseException | None]] = []
        try:
            self._begin(conn)
            for fn, fut in batch:
                conn.execute("SAVEPOINT op")
                try:
                    results.append((fut, fn(conn), None))
                    conn.execute("RELEASE op")
                except Exception as exc:  # this operation alone fails (a bug too): the writer goes on
                    conn.execute("ROLLBACK TO op")
                    conn.execute("RELEASE op")
                    results.append((fut, None, exc))
            conn.execute("COMMIT")
            self.last_error = None
        except sqlite3.Error as exc:  # the disk is full or gone: every caller in the batch hears of it
            self.last_error = f"{type(exc).__name__}: {exc}"
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            results = [(fut, None, exc) for _, fut in batch]
        return results

    async def _query(self, fn: Op) -> Any:
        """On a connection of its own, on its own thread: WAL readers neither wait for the writer nor hold it."""
        if self._closed:
            raise RuntimeError("journal is closed")
        return await asyncio.get_running_loop().run_in_executor(self._reads, self._read, fn)

    def _read(self, fn: Op) -> Any:
        if self._reader is None:
            self._reader = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._reader.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        return fn(self._reader)

    def _close_reader(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def close(self) -> None:
        if not self._closed:
            self._reads.submit(self._close_reader)
            self._reads.shutdown(wait=True)
        super().close()

    def _begin(self, conn: sqlite3.Connection) -> None:
        """BEGIN IMMEDIATE: the write lock, waited for by SQLite's busy handler, or for the intake by polling."""
        if not self.intake:
            conn.execute("BEGIN IMMEDIATE")
            return
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                    raise
            time.sleep(INTAKE_LOCK_POLL)

    def _insert(self, db: Statements, params: tuple) -> int | None:
        cur = db.execute(INSERT_DELIVERY, params)
        return cur.lastrowid if cur.rowcount == 1 else None

    def _give_up(self, db: Statements, max_interrupted: int, error: str) -> list[str]:
        # One writer holds the file: the rows read are the rows failed.
        ids = [
            r[0]
            for r in db.execute(
                "SELECT id FROM deliveries WHERE status=? AND interrupted>? ORDER BY seq", (QUEUED, max_interrupted)
            ).fetchall()
        ]
        db.execute(
            "UPDATE deliveries SET status=?, finished_at=?, error=? WHERE status=? AND interrupted>?",
            (FAILED, time.time(), error, QUEUED, max_interrupted),
        )
        return ids

    async def probe(self) -> None:
        """A write that touches the disk: raises if the journal cannot be written."""

        def op(db: Statements) -> None:
            db.execute("CREATE TABLE IF NOT EXISTS probe (id INTEGER PRIMARY KEY, at REAL)")
            db.execute("INSERT OR REPLACE INTO probe (id, at) VALUES (1, ?)", (time.time(),))

        await self._submit(op)


def migrate(conn: sqlite3.Connection, where: str = "") -> int:
    """Apply the migrations this file has not had yet; returns the schema version."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    refuse_newer_schema(version, len(MIGRATIONS), where)
    for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
        conn.executescript(f"BEGIN IMMEDIATE; {script}; PRAGMA user_version={number}; COMMIT;")
    return len(MIGRATIONS)
