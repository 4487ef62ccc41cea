"""The delivery journal: every accepted webhook is committed before it is acknowledged.

Two backends behind one interface (`JournalBackend`): SQLite (WAL, this module, the default) for one process,
and PostgreSQL (`bot.delivery.journal_pg`) for replicas that share one database. `open_journal` picks by the target:
a `postgresql://` URL or a file path.
"""

from __future__ import annotations

import asyncio
import json
import queue
import sqlite3
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit

from bot.telemetry import logs
from bot.rules.lanes import kind, lane

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

QUEUED, RUNNING, RETRYING, DONE, FAILED, IGNORED = "queued", "running", "retrying", "done", "failed", "ignored"
UNFINISHED = (QUEUED, RUNNING, RETRYING)
INTENDED, EFFECT_DONE = "intended", "done"
COLUMNS = ("seq, id, event, action, repo, number, installation, lane, received_at, status, attempts, error,"
           " finished_at, not_before, interrupted")
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
    not_before: float | None = None
    interrupted: int = 0
    body: bytes | None = None


@dataclass(frozen=True, slots=True)
class Queued:
    """What the workers keep in memory for a waiting delivery: where it goes, never its payload."""

    seq: int
    lane: str
    not_before: float | None = None
    kind: tuple[str, str | None] | None = None  # (event, action), shared: see lanes.kind


@dataclass(frozen=True)
class Effect:
    """One row of a delivery's ledger: a write intended (sent, answer not yet recorded) or done with its result."""

    key: str
    state: str
    result: Any
    intended_at: float | None


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
    sha: str | None = None  # head SHA of a run or suite that does not name its PR
    not_before: float | None = None  # held back until then (a burst of label events settles first)

    def queued(self, seq: int) -> Queued:
        """The journal row this delivery became, as the workers hold it."""
        return Queued(seq, self.lane, self.not_before, kind(self.event, self.action))

    @property
    def lane(self) -> str:
        return lane(self.repo, self.number, self.sha, self.id)


class JournalUnavailable(RuntimeError):
    """The journal cannot be opened at start; the message names where, never a password."""


class JournalBackend(Protocol):
    """What the server, the workers, the ledger and the CLI use; both backends pass tests/test_journal_contract.py.

    Each method may be awaited from any event loop and thread (intake and the workers run on two).
    """

    where: str  # what to call it in messages: a path, or a URL without its password
    last_error: str | None

    async def record(self, d: NewDelivery) -> int | None: ...
    async def begin(self, seq: int) -> tuple[Delivery, int, dict[str, Effect]] | None: ...
    async def load(self, seq: int) -> Delivery | None: ...
    async def finish(self, seq: int, status: str, error: str | None = None) -> None: ...
    async def retry_later(self, seq: int, not_before: float, error: str) -> None: ...
    async def requeue(self, delivery_id: str) -> Delivery | None: ...
    async def relane(self, seq: int, number: int) -> str: ...
    async def recover(self, max_interrupted: int) -> list[str]: ...
    async def unfinished(self) -> list[Queued]: ...
    async def effects(self, seq: int) -> dict[str, Effect]: ...
    async def intend(self, seq: int, key: str) -> None: ...
    async def withdraw(self, seq: int, key: str) -> None: ...
    def complete(self, seq: int, key: str, result: Any) -> asyncio.Future: ...
    async def get(self, delivery_id: str) -> Delivery | None: ...
    async def listing(self, *, status: str | None = None, limit: int = 50) -> list[Delivery]: ...
    async def oldest_pending(self) -> float | None: ...
    async def counts(self) -> dict[str, int]: ...
    async def prune(self, older_than_days: float = 30.0) -> int: ...
    async def probe(self) -> None: ...
    def close(self) -> None: ...


def is_postgres(target: str) -> bool:
    return target.startswith(("postgresql://", "postgres://"))


def safe_target(target: str) -> str:
    """The journal's target fit for a message or a log line: a URL's password (in it or in its query) masked."""
    if not is_postgres(target):
        return target
    try:
        parts = urlsplit(target)
    except ValueError:
        return f"{target.split(':', 1)[0]}://(a URL that cannot be parsed)"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, hosts = netloc.rsplit("@", 1)
        if ":" in userinfo:
            netloc = f"{userinfo.split(':', 1)[0]}:***@{hosts}"
    query = parts.query
    if any(k == "password" for k, _ in parse_qsl(query, True)):
        query = urlencode([(k, "***" if k == "password" else v) for k, v in parse_qsl(query, True)], safe="/*")
    return (f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "")
            + (f"#{parts.fragment}" if parts.fragment else ""))


def open_journal(target: str) -> JournalBackend:
    """The journal at `target` (SWEEPBOT_DB): PostgreSQL for a postgresql:// URL, else an SQLite file there.
    Connected and migrated on return; JournalUnavailable, naming the target without its password, otherwise."""
    if is_postgres(target):
        from bot.delivery.journal_pg import PgJournal

        return PgJournal(target)
    try:
        return Journal(target)
    except sqlite3.Error as exc:
        raise JournalUnavailable(f"cannot open the journal at {target}: {type(exc).__name__}: {exc}") from None


class Journal:
    """SQLite journal with one writer thread; concurrent writes are committed together (group commit)."""

    def __init__(self, path: str):
        self.path = path
        self.where = path
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
        migrate(conn)
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
                except Exception as exc:  # this operation alone fails (a bug too): the writer goes on
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

    def _post(self, fn: Callable[[sqlite3.Connection], Any]) -> asyncio.Future:
        """Queue a write without waiting for it; a failure is logged, and the future holds it for whoever asks."""
        if self._closed:
            raise RuntimeError("journal is closed")
        fut = asyncio.get_running_loop().create_future()
        fut.add_done_callback(_log_failure)
        self._ops.put((fn, fut))
        return fut

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
                " received_at, body, status, not_before) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (d.id, d.event, d.action, d.repo, d.number, d.installation, d.lane, time.time(), d.body, d.status,
                 d.not_before),
            )
            return cur.lastrowid if cur.rowcount == 1 else None

        return await self._submit(op)

    async def begin(self, seq: int) -> tuple[Delivery, int, dict[str, Effect]] | None:
        """One round trip when a worker takes a delivery: count the attempt, mark it running, read its row
        (payload included) and its ledger. None when it is no longer unfinished."""

        def op(conn: sqlite3.Connection) -> tuple[Delivery, int, dict[str, Effect]] | None:
            cur = conn.execute("UPDATE deliveries SET status=?, attempts=attempts+1, not_before=NULL"
                               " WHERE seq=? AND status IN (?, ?, ?)", (RUNNING, seq, *UNFINISHED))
            if cur.rowcount != 1:
                return None
            row = _fetch_one(conn, "WHERE seq=?", (seq,), with_body=True)
            return row, row.attempts, _effects(conn, seq)

        return await self._submit(op)

    async def load(self, seq: int) -> Delivery | None:
        """The whole row with its payload, by sequence number (the backlog in memory holds only that)."""
        return await self._submit(lambda conn: _fetch_one(conn, "WHERE seq=?", (seq,), with_body=True))

    async def finish(self, seq: int, status: str, error: str | None = None) -> None:
        def op(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE deliveries SET status=?, error=?, finished_at=?, not_before=NULL WHERE seq=?",
                (status, error, time.time(), seq),
            )

        await self._submit(op)

    async def retry_later(self, seq: int, not_before: float, error: str) -> None:
        """A transient failure: the delivery waits in the journal until `not_before`, across restarts too."""

        def op(conn: sqlite3.Connection) -> None:
            conn.execute("UPDATE deliveries SET status=?, error=?, not_before=? WHERE seq=?",
                         (RETRYING, error, not_before, seq))

        await self._submit(op)

    async def requeue(self, delivery_id: str) -> Delivery | None:
        def op(conn: sqlite3.Connection) -> Delivery | None:
            conn.execute(
                "UPDATE deliveries SET status=?, error=NULL, finished_at=NULL, not_before=NULL, interrupted=0"
                " WHERE id=?", (QUEUED, delivery_id)
            )
            return _fetch_one(conn, "WHERE id=?", (delivery_id,), with_body=True)

        return await self._submit(op)

    async def relane(self, seq: int, number: int) -> str:
        """A delivery found to belong to PR `number`: it moves to that PR's lane; returns the lane."""

        def op(conn: sqlite3.Connection) -> str:
            found = conn.execute("SELECT repo FROM deliveries WHERE seq=?", (seq,)).fetchone()
            if found is None:
                raise LookupError(f"no delivery with seq {seq}")
            repo = found[0]
            name = lane(repo, number, None, "")
            conn.execute("UPDATE deliveries SET number=?, lane=? WHERE seq=?", (number, name, seq))
            return name

        return await self._submit(op)

    async def recover(self, max_interrupted: int) -> list[str]:
        """At start: deliveries left running were interrupted; fail those interrupted too often (ids returned)."""

        def op(conn: sqlite3.Connection) -> list[str]:
            conn.execute("UPDATE deliveries SET interrupted=interrupted+1, status=? WHERE status=?", (QUEUED, RUNNING))
            ids = [r[0] for r in conn.execute(
                "SELECT id FROM deliveries WHERE status=? AND interrupted>?", (QUEUED, max_interrupted))]
            conn.execute(
                "UPDATE deliveries SET status=?, finished_at=?, error=? WHERE status=? AND interrupted>?",
                (FAILED, time.time(), f"interrupted by a crash more than {max_interrupted} times",
                 QUEUED, max_interrupted))
            return ids

        return await self._submit(op)

    async def unfinished(self) -> list[Queued]:
        """Queued, retrying and interrupted deliveries, oldest first, without payloads: resumed at start."""

        def op(conn: sqlite3.Connection) -> list[Queued]:
            rows = conn.execute("SELECT seq, lane, not_before, event, action FROM deliveries"
                                " WHERE status IN (?, ?, ?) ORDER BY seq", UNFINISHED)
            return [Queued(seq, name, not_before, kind(event, action)) for seq, name, not_before, event, action in rows]

        return await self._submit(op)

    # -- the ledger of effects -----------------------------------------------------------------

    async def effects(self, seq: int) -> dict[str, Effect]:
        return await self._submit(lambda conn: _effects(conn, seq))

    async def intend(self, seq: int, key: str) -> None:
        """Written (and synced) just before a create is sent: a resumed delivery knows it may have happened."""

        def op(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT INTO effects (seq, key, state, intended_at) VALUES (?,?,?,?)"
                         " ON CONFLICT(seq, key) DO UPDATE SET intended_at=excluded.intended_at",
                         (seq, key, INTENDED, time.time()))

        await self._submit(op)

    async def withdraw(self, seq: int, key: str) -> None:
        """An intent whose send GitHub answered with a refusal: it surely did not happen."""
        await self._submit(lambda conn: conn.execute(
            "DELETE FROM effects WHERE seq=? AND key=? AND state=?", (seq, key, INTENDED)))

    def complete(self, seq: int, key: str, result: Any) -> asyncio.Future:
        """Queued, not waited for: the intent already guards the effect, so losing this row in a crash costs
        only a reconciliation, and it is committed before anything the same worker writes after it."""

        def op(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT INTO effects (seq, key, state, result, done_at) VALUES (?,?,?,?,?)"
                         " ON CONFLICT(seq, key) DO UPDATE SET state=excluded.state, result=excluded.result,"
                         " done_at=excluded.done_at", (seq, key, EFFECT_DONE, json.dumps(result), time.time()))

        return self._post(op)

    async def get(self, delivery_id: str) -> Delivery | None:
        return await self._submit(lambda conn: _fetch_one(conn, "WHERE id=?", (delivery_id,), with_body=True))

    async def listing(self, *, status: str | None = None, limit: int = 50) -> list[Delivery]:
        if status:
            return await self._submit(
                lambda conn: _fetch(conn, "WHERE status=? ORDER BY seq DESC LIMIT ?", (status, limit))
            )
        return await self._submit(lambda conn: _fetch(conn, "ORDER BY seq DESC LIMIT ?", (limit,)))

    async def oldest_pending(self) -> float | None:
        """When the oldest unfinished delivery arrived (its age is the backlog's lag)."""
        return await self._submit(lambda conn: conn.execute(
            "SELECT MIN(received_at) FROM deliveries WHERE status IN (?, ?, ?)", UNFINISHED).fetchone()[0])

    async def counts(self) -> dict[str, int]:
        return await self._submit(
            lambda conn: dict(conn.execute("SELECT status, COUNT(*) FROM deliveries GROUP BY status").fetchall())
        )

    async def prune(self, older_than_days: float = 30.0) -> int:
        """Forget finished deliveries older than the cut-off; failed ones stay until handled."""
        cutoff = time.time() - older_than_days * 86400

        def op(conn: sqlite3.Connection) -> int:
            conn.execute("DELETE FROM effects WHERE seq IN (SELECT seq FROM deliveries WHERE status IN (?, ?)"
                         " AND received_at < ?)", (DONE, IGNORED, cutoff))
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


def migrate(conn: sqlite3.Connection) -> int:
    """Apply the migrations this file has not had yet; returns the schema version."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
        conn.executescript(f"BEGIN IMMEDIATE; {script}; PRAGMA user_version={number}; COMMIT;")
    return len(MIGRATIONS)


def _effects(conn: sqlite3.Connection, seq: int) -> dict[str, Effect]:
    rows = conn.execute("SELECT key, state, result, intended_at FROM effects WHERE seq=?", (seq,))
    return {k: Effect(k, state, json.loads(result) if result else None, at) for k, state, result, at in rows}


def _log_failure(fut: asyncio.Future) -> None:
    if not fut.cancelled() and fut.exception() is not None:
        logs.event("journal write failed (ledger row); a resumed delivery reconciles instead",
                   error=f"{type(fut.exception()).__name__}: {fut.exception()}")


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
