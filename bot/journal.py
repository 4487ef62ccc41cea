"""The delivery journal: every accepted webhook is committed to SQLite (WAL) before it is acknowledged."""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

SCHEMA = """
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
"""

QUEUED, RUNNING, DONE, FAILED, IGNORED = "queued", "running", "done", "failed", "ignored"
UNFINISHED = (QUEUED, RUNNING)
COLUMNS = "seq, id, event, action, repo, number, installation, lane, received_at, status, attempts, error, finished_at"
BATCH_MAX = 256


@dataclass(frozen=True)
class Delivery:
    seq: int
    id: str
    event: str
    action: str | None
    repo: str | None
    number: int | None
    installation: int | None
    lane: str
    received_at: float
    status: str
    attempts: int
    error: str | None
    finished_at: float | None
    body: bytes | None = None


@dataclass(frozen=True)
class NewDelivery:
    id: str
    event: str
    action: str | None
    repo: str | None
    number: int | None
    installation: int | None
    body: bytes
    status: str = QUEUED

    def queued(self, seq: int) -> "Delivery":
        """The journal row this delivery became, with its sequence number, as the workers take it."""
        return Delivery(seq, self.id, self.event, self.action, self.repo, self.number, self.installation, self.lane,
                        time.time(), self.status, 0, None, None, self.body)

    @property
    def lane(self) -> str:
        """Deliveries in one lane are processed in arrival order; lanes run concurrently."""
        if self.repo and self.number is not None:
            return f"{self.repo}#{self.number}"
        if self.repo:
            return self.repo
        return f"delivery:{self.id}"


class Journal:
    """SQLite journal with one writer thread; concurrent writes are committed together (group commit)."""

    def __init__(self, path: str):
        self.path = path
        self._ops: "queue.Queue[tuple[Callable[[sqlite3.Connection], Any], asyncio.Future | None] | None]" = queue.Queue()
        self._conn = self._connect()
        self._thread = threading.Thread(target=self._run, name="journal-writer", daemon=True)
        self._closed = False
        self.last_error: str | None = None
        self._thread.start()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        # FULL: the WAL is synced at every commit, so an acknowledged delivery survives a power cut too.
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA busy_timeout=5000")
        conn.executescript(SCHEMA)
        return conn

    # -- writer thread -------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            first = self._ops.get()
            if first is None:
                break
            batch = [first]
            while len(batch) < BATCH_MAX:
                try:
                    nxt = self._ops.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    self._ops.put(None)
                    break
                batch.append(nxt)
            self._commit(batch)
        self._conn.close()

    def _commit(self, batch: list) -> None:
        results: list[tuple[asyncio.Future | None, Any, BaseException | None]] = []
        try:
            self._conn.execute("BEGIN IMMEDIATE")
            for fn, fut in batch:
                self._conn.execute("SAVEPOINT op")
                try:
                    results.append((fut, fn(self._conn), None))
                    self._conn.execute("RELEASE op")
                except sqlite3.Error as exc:
                    self._conn.execute("ROLLBACK TO op")
                    self._conn.execute("RELEASE op")
                    results.append((fut, None, exc))
            self._conn.execute("COMMIT")
            self.last_error = None
        except sqlite3.Error as exc:  # the disk is full or gone: every caller in the batch hears of it
            self.last_error = f"{type(exc).__name__}: {exc}"
            try:
                self._conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            results = [(fut, None, exc) for _, fut in batch]
        for fut, value, exc in results:
            if fut is not None:
                fut.get_loop().call_soon_threadsafe(_settle, fut, value, exc)

    async def _submit(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        if self._closed:
            raise RuntimeError("journal is closed")
        fut = asyncio.get_running_loop().create_future()
        self._ops.put((fn, fut))
        return await fut

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._ops.put(None)
            self._thread.join(timeout=10)

    # -- operations ----------------------------------------------------------------------------

    async def record(self, d: NewDelivery) -> int | None:
        """Commit a delivery and return its sequence number; None when its id was seen before (GitHub reuses ids)."""

        def op(conn: sqlite3.Connection) -> int | None:
            cur = conn.execute(
                "INSERT OR IGNORE INTO deliveries (id, event, action, repo, number, installation, lane,"
                " received_at, body, status) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (d.id, d.event, d.action, d.repo, d.number, d.installation, d.lane, time.time(), d.body, d.status),
            )
            return cur.lastrowid if cur.rowcount == 1 else None

        return await self._submit(op)

    async def start(self, seq: int) -> int:
        """Mark a delivery running and count the attempt; returns the attempt number."""

        def op(conn: sqlite3.Connection) -> int:
            conn.execute("UPDATE deliveries SET status=?, attempts=attempts+1 WHERE seq=?", (RUNNING, seq))
            return conn.execute("SELECT attempts FROM deliveries WHERE seq=?", (seq,)).fetchone()[0]

        return await self._submit(op)

    async def finish(self, seq: int, status: str, error: str | None = None) -> None:
        def op(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE deliveries SET status=?, error=?, finished_at=? WHERE seq=?",
                (status, error, time.time(), seq),
            )

        await self._submit(op)

    async def requeue(self, delivery_id: str) -> Delivery | None:
        def op(conn: sqlite3.Connection) -> Delivery | None:
            conn.execute(
                "UPDATE deliveries SET status=?, error=NULL, finished_at=NULL WHERE id=?", (QUEUED, delivery_id)
            )
            return _fetch_one(conn, "WHERE id=?", (delivery_id,), with_body=True)

        return await self._submit(op)

    async def unfinished(self) -> list[Delivery]:
        """Queued and interrupted deliveries, oldest first, with their bodies: resumed at start."""
        return await self._submit(
            lambda conn: _fetch(conn, "WHERE status IN (?, ?) ORDER BY seq", UNFINISHED, with_body=True)
        )

    async def get(self, delivery_id: str) -> Delivery | None:
        return await self._submit(lambda conn: _fetch_one(conn, "WHERE id=?", (delivery_id,), with_body=True))

    async def listing(self, *, status: str | None = None, limit: int = 50) -> list[Delivery]:
        if status:
            return await self._submit(
                lambda conn: _fetch(conn, "WHERE status=? ORDER BY seq DESC LIMIT ?", (status, limit))
            )
        return await self._submit(lambda conn: _fetch(conn, "ORDER BY seq DESC LIMIT ?", (limit,)))

    async def counts(self) -> dict[str, int]:
        return await self._submit(
            lambda conn: dict(conn.execute("SELECT status, COUNT(*) FROM deliveries GROUP BY status").fetchall())
        )

    async def prune(self, older_than_days: float = 30.0) -> int:
        """Forget finished deliveries older than the cut-off; failed ones stay until handled."""
        cutoff = time.time() - older_than_days * 86400

        def op(conn: sqlite3.Connection) -> int:
            return conn.execute(
                "DELETE FROM deliveries WHERE status IN (?, ?) AND received_at < ?", (DONE, IGNORED, cutoff)
            ).rowcount

        return await self._submit(op)

    async def probe(self) -> None:
        """A write that touches the disk: raises if the journal cannot be written."""
        def op(conn: sqlite3.Connection) -> None:
            conn.execute("CREATE TABLE IF NOT EXISTS probe (id INTEGER PRIMARY KEY, at REAL)")
            conn.execute("INSERT OR REPLACE INTO probe (id, at) VALUES (1, ?)", (time.time(),))

        await self._submit(op)


def _settle(fut: asyncio.Future, value: Any, exc: BaseException | None) -> None:
    if fut.done():
        return
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(value)


def _fetch(conn: sqlite3.Connection, where: str, params: tuple, *, with_body: bool = False) -> list[Delivery]:
    cols = COLUMNS + (", body" if with_body else "")
    return [Delivery(*row) for row in conn.execute(f"SELECT {cols} FROM deliveries {where}", params)]


def _fetch_one(conn: sqlite3.Connection, where: str, params: tuple, *, with_body: bool = False) -> Delivery | None:
    rows = _fetch(conn, where, params, with_body=with_body)
    return rows[0] if rows else None
