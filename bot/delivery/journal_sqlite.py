"""The delivery journal on SQLite (a file path in SWEEPBOT_DB, the default): one process, WAL, synced commits.

The operations and their SQL are the base's (`bot.delivery.journal.Journal`); this is how SQLite connects,
migrates, inserts, commits a batch (one transaction, a savepoint per operation) and probes the disk.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from typing import Any

from bot.delivery.journal import (FAILED, INSERT_DELIVERY, QUEUED, Journal, JournalUnavailable, Op, Statements,
                                  refuse_newer_schema)

# Versioned migrations, run at start: PRAGMA user_version says how many have been applied.
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
)


class SqliteJournal(Journal):
    """SQLite journal with one writer thread; concurrent writes are committed together (group commit)."""

    def __init__(self, path: str):
        super().__init__(path, "journal-writer")
        self.path = path
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
        conn.execute("PRAGMA busy_timeout=5000")
        migrate(conn, self.path)
        return conn

    def _disconnect(self) -> None:
        self._conn.close()

    def _commit(self, batch: list[tuple[Op, asyncio.Future | None]]) -> list[tuple[asyncio.Future | None, Any,
                                                                                BaseException | None]]:
        conn = self._conn
        results: list[tuple[asyncio.Future | None, Any, BaseException | None]] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
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

    def _insert(self, db: Statements, params: tuple) -> int | None:
        cur = db.execute(INSERT_DELIVERY, params)
        return cur.lastrowid if cur.rowcount == 1 else None

    def _give_up(self, db: Statements, max_interrupted: int, error: str) -> list[str]:
        # One writer holds the file: the rows read are the rows failed.
        ids = [r[0] for r in db.execute("SELECT id FROM deliveries WHERE status=? AND interrupted>? ORDER BY seq",
                                        (QUEUED, max_interrupted)).fetchall()]
        db.execute("UPDATE deliveries SET status=?, finished_at=?, error=? WHERE status=? AND interrupted>?",
                   (FAILED, time.time(), error, QUEUED, max_interrupted))
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
