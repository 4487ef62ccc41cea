"""The delivery journal: every accepted webhook is committed before it is acknowledged.

This module is what both backends share: the records (`NewDelivery`, `Delivery`, `Queued`, `Effect`), the
states, the interface (`JournalBackend`), and `Journal`, the base that holds the operations' SQL and the writer
they go through. Two thin backends fill in the rest: SQLite (`bot.delivery.journal_sqlite`, WAL, the default) for
one process, and PostgreSQL (`bot.delivery.journal_pg`) for replicas that share one database, with its lanes under
lease. `bot.delivery.journal_open.open_journal` picks one by the target: a `postgresql://` URL or a file path.

One writer thread per journal owns its connection: every operation goes through one queue, and the operations
waiting together are committed in one transaction (group commit). An operation is a function of the
connection, run on that thread; the shared SQL uses `?` placeholders (sqlite3's; the PostgreSQL backend
translates them). What the engines do differently is a backend's few methods: inserting a delivery, giving up
on the deliveries interrupted too often, the probe, and how a batch is committed when one operation fails.
"""

from __future__ import annotations

import asyncio
import json
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit

from bot.delivery.lanes import kind, lane
from bot.telemetry import logs

QUEUED, RUNNING, RETRYING, DONE, FAILED, IGNORED = "queued", "running", "retrying", "done", "failed", "ignored"
UNFINISHED = (QUEUED, RUNNING, RETRYING)
INTENDED, EFFECT_DONE = "intended", "done"
COLUMNS = (
    "seq, id, event, action, repo, number, installation, lane, received_at, status, attempts, error,"
    " finished_at, not_before, interrupted"
)
BATCH_MAX = 256

# The shared SQL, in both engines' dialect. Times are seconds since the epoch in both (REAL, DOUBLE PRECISION).
INSERT_DELIVERY = (
    "INSERT INTO deliveries (id, event, action, repo, number, installation, lane, received_at, body,"
    " status, not_before) VALUES (?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (id) DO NOTHING"
)
GIVE_UP_ERROR = "interrupted by a crash more than {} times"


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


def refuse_newer_schema(found: int, known: int, where: str) -> None:
    """A journal migrated by a newer sweepbot is not run by an older one (a rollback): its rows may mean what
    this version does not know. Raises JournalUnavailable naming both versions."""
    if found > known:
        raise JournalUnavailable(
            f"the journal at {where} is at schema version {found}, newer than this sweepbot's {known}: a newer"
            " sweepbot migrated it. Run that version, or start this one on a new journal (docs/operating.md, 'Upgrade"
            " and roll back')"
        )


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
    async def requeued(self) -> list[Queued]: ...
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
    async def unfinished_count(self) -> int: ...
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
    return (
        f"{parts.scheme}://{netloc}{parts.path}"
        + (f"?{query}" if query else "")
        + (f"#{parts.fragment}" if parts.fragment else "")
    )


class Statements(Protocol):
    """A connection as the operations see it: `execute(sql, params)` with `?` placeholders, a DB-API cursor back."""

    def execute(self, sql: str, params: Any = ..., /) -> Any: ...


Op = Callable[[Statements], Any]


class Journal:
    """What both backends share: the operations (their SQL and what they return) and the writer thread.

    A backend opens its connection, starts the writer (`_start_writer`) and says how its engine commits a batch
    (`_commit`), inserts a delivery (`_insert`), gives up on deliveries interrupted too often (`_give_up`),
    probes (`probe`) and closes its connection (`_disconnect`). `interrupted_where` is the condition under
    which a running row was interrupted (PostgreSQL: unless another replica holds its lane).
    """

    CLOSE_TIMEOUT = 10.0  # how long close() waits for the writer to commit what is queued
    interrupted_where = "status=?"

    def __init__(self, where: str, thread_name: str):
        self.where = where
        self.last_error: str | None = None
        self._closed = False
        self._ops: queue.Queue[tuple[Op, asyncio.Future | None] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._write, name=thread_name, daemon=True)

    # -- what a backend fills in ---------------------------------------------------------------

    def _commit(
        self, batch: list[tuple[Op, asyncio.Future | None]]
    ) -> list[tuple[asyncio.Future | None, Any, BaseException | None]]:
        """Run a batch in one transaction; each operation's (future, value, error). Only the failing ones fail."""
        raise NotImplementedError

    def _insert(self, db: Statements, params: tuple) -> int | None:
        """INSERT_DELIVERY: the new row's seq, or None when its id is in the journal already."""
        raise NotImplementedError

    def _give_up(self, db: Statements, max_interrupted: int, error: str) -> list[str]:
        """Fail the queued deliveries interrupted more than `max_interrupted` times, with `error`; their ids,
        in seq order."""
        raise NotImplementedError

    def _closing_ops(self) -> list[Op]:
        """Written last, at close, nobody waiting for them."""
        return []

    def _disconnect(self) -> None:
        raise NotImplementedError

    async def probe(self) -> None:
        """A write that reaches the disk or the database: raises if the journal cannot be written."""
        raise NotImplementedError

    # -- the writer thread ---------------------------------------------------------------------

    def _start_writer(self) -> None:
        self._thread.start()

    def _write(self) -> None:
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
            for fut, value, exc in self._commit(batch):
                if fut is None:  # queued by close(): nobody waits for it
                    continue
                try:
                    fut.get_loop().call_soon_threadsafe(_settle, fut, value, exc)
                except RuntimeError:  # the caller's loop is gone; nobody is waiting
                    pass
        self._disconnect()

    async def _submit(self, fn: Op) -> Any:
        if self._closed:
            raise RuntimeError("journal is closed")
        fut = asyncio.get_running_loop().create_future()
        self._ops.put((fn, fut))
        return await fut

    def _post(self, fn: Op) -> asyncio.Future:
        """Queue a write without waiting for it; a failure is logged, and the future holds it for whoever asks."""
        if self._closed:
            raise RuntimeError("journal is closed")
        fut = asyncio.get_running_loop().create_future()
        fut.add_done_callback(_log_failure)
        self._ops.put((fn, fut))
        return fut

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for fn in self._closing_ops():
            self._ops.put((fn, None))
        self._ops.put(None)
        if self._thread.is_alive():
            self._thread.join(timeout=self.CLOSE_TIMEOUT)

    # -- operations ----------------------------------------------------------------------------

    async def record(self, d: NewDelivery) -> int | None:
        """Commit a delivery and return its sequence number; None when its id was seen before (GitHub reuses ids),
        by any replica."""
        return await self._submit(
            lambda db: self._insert(
                db,
                (
                    d.id,
                    d.event,
                    d.action,
                    d.repo,
                    d.number,
                    d.installation,
                    d.lane,
                    time.time(),
                    d.body,
                    d.status,
                    d.not_before,
                ),
            )
        )

    async def begin(self, seq: int) -> tuple[Delivery, int, dict[str, Effect]] | None:
        """One transaction when a worker takes a delivery: count the attempt, mark it running, read its row
        (payload included) and its ledger. None when it is no longer unfinished."""

        def op(db: Statements) -> tuple[Delivery, int, dict[str, Effect]] | None:
            cur = db.execute(
                "UPDATE deliveries SET status=?, attempts=attempts+1, not_before=NULL"
                " WHERE seq=? AND status IN (?, ?, ?)",
                (RUNNING, seq, *UNFINISHED),
            )
            if cur.rowcount != 1:
                return None
            row = fetch_one(db, "WHERE seq=?", (seq,), with_body=True)
            return None if row is None else (row, row.attempts, read_effects(db, seq))

        return await self._submit(op)

    async def load(self, seq: int) -> Delivery | None:
        """The whole row with its payload, by sequence number (the backlog in memory holds only that)."""
        return await self._submit(lambda db: fetch_one(db, "WHERE seq=?", (seq,), with_body=True))

    async def finish(self, seq: int, status: str, error: str | None = None) -> None:
        await self._submit(
            statement(
                "UPDATE deliveries SET status=?, error=?, finished_at=?, not_before=NULL WHERE seq=?",
                (status, error, time.time(), seq),
            )
        )

    async def retry_later(self, seq: int, not_before: float, error: str) -> None:
        """A transient failure: the delivery waits in the journal until `not_before`, across restarts too."""
        await self._submit(
            statement(
                "UPDATE deliveries SET status=?, error=?, not_before=? WHERE seq=?", (RETRYING, error, not_before, seq)
            )
        )

    async def requeue(self, delivery_id: str) -> Delivery | None:
        """A finished delivery queued again, keeping its seq, attempts and ledger: the workers take it in its
        lane's order, as any queued row. An unfinished one (queued, running, retrying) is left as it is. The row
        as it is now; None when there is no such delivery."""

        def op(db: Statements) -> Delivery | None:
            db.execute(
                "UPDATE deliveries SET status=?, error=NULL, finished_at=NULL, not_before=NULL, interrupted=0"
                " WHERE id=? AND status NOT IN (?, ?, ?)",
                (QUEUED, delivery_id, *UNFINISHED),
            )
            return fetch_one(db, "WHERE id=?", (delivery_id,), with_body=True)

        return await self._submit(op)

    async def requeued(self) -> list[Queued]:
        """Queued rows that ran before (attempts > 0), oldest first: what `requeue` handed back from another
        process, for the in-memory workers to take in (a delivery just recorded has no attempt yet)."""

        def op(db: Statements) -> list[Queued]:
            rows = db.execute(
                "SELECT seq, lane, not_before, event, action FROM deliveries"
                " WHERE status=? AND attempts>0 ORDER BY seq",
                (QUEUED,),
            ).fetchall()
            return [Queued(seq, name, not_before, kind(event, action)) for seq, name, not_before, event, action in rows]

        return await self._query(op)  # a read every second: never inside the writer's transaction

    async def relane(self, seq: int, number: int) -> str:
        """A delivery found to belong to PR `number`: it moves to that PR's lane; returns the lane."""

        def op(db: Statements) -> str:
            found = db.execute("SELECT repo FROM deliveries WHERE seq=?", (seq,)).fetchone()
            if found is None:
                raise LookupError(f"no delivery with seq {seq}")
            name = lane(found[0], number, None, "")
            db.execute("UPDATE deliveries SET number=?, lane=? WHERE seq=?", (number, name, seq))
            return name

        return await self._submit(op)

    async def recover(self, max_interrupted: int) -> list[str]:
        """At start: deliveries left running were interrupted; fail those interrupted too often (ids returned)."""

        def op(db: Statements) -> list[str]:
            db.execute(
                f"UPDATE deliveries SET interrupted=interrupted+1, status=? WHERE {self.interrupted_where}",
                (QUEUED, RUNNING),
            )
            return self._give_up(db, max_interrupted, GIVE_UP_ERROR.format(max_interrupted))

        return await self._submit(op)

    async def unfinished(self) -> list[Queued]:
        """Queued, retrying and interrupted deliveries, oldest first, without payloads: resumed at start."""

        def op(db: Statements) -> list[Queued]:
            rows = db.execute(
                "SELECT seq, lane, not_before, event, action FROM deliveries WHERE status IN (?, ?, ?) ORDER BY seq",
                UNFINISHED,
            ).fetchall()
            return [Queued(seq, name, not_before, kind(event, action)) for seq, name, not_before, event, action in rows]

        return await self._submit(op)

    # -- the ledger of effects -----------------------------------------------------------------

    async def effects(self, seq: int) -> dict[str, Effect]:
        return await self._submit(lambda db: read_effects(db, seq))

    async def intend(self, seq: int, key: str) -> None:
        """Written (and synced) just before a create is sent: a resumed delivery knows it may have happened."""
        await self._submit(
            statement(
                "INSERT INTO effects (seq, key, state, intended_at) VALUES (?,?,?,?)"
                " ON CONFLICT (seq, key) DO UPDATE SET intended_at=excluded.intended_at",
                (seq, key, INTENDED, time.time()),
            )
        )

    async def withdraw(self, seq: int, key: str) -> None:
        """An intent whose send GitHub answered with a refusal: it surely did not happen."""
        await self._submit(statement("DELETE FROM effects WHERE seq=? AND key=? AND state=?", (seq, key, INTENDED)))

    def complete(self, seq: int, key: str, result: Any) -> asyncio.Future:
        """Queued, not waited for: the intent already guards the effect, so losing this row in a crash costs
        only a reconciliation, and it is committed before anything the same worker writes after it."""

        # JSON text in both: SQLite keeps it as TEXT, PostgreSQL casts it into its JSONB column.
        def op(db: Statements) -> None:
            db.execute(
                "INSERT INTO effects (seq, key, state, result, done_at) VALUES (?,?,?,?,?)"
                " ON CONFLICT (seq, key) DO UPDATE SET state=excluded.state, result=excluded.result,"
                " done_at=excluded.done_at",
                (seq, key, EFFECT_DONE, json.dumps(result), time.time()),
            )

        return self._post(op)

    async def get(self, delivery_id: str) -> Delivery | None:
        return await self._submit(lambda db: fetch_one(db, "WHERE id=?", (delivery_id,), with_body=True))

    async def listing(self, *, status: str | None = None, limit: int = 50) -> list[Delivery]:
        if status:
            return await self._submit(lambda db: fetch(db, "WHERE status=? ORDER BY seq DESC LIMIT ?", (status, limit)))
        return await self._submit(lambda db: fetch(db, "ORDER BY seq DESC LIMIT ?", (limit,)))

    async def _query(self, fn: Op) -> Any:
        """A read for the health and metrics endpoints: through the writer here; a backend that can read
        beside its writer (SQLite in WAL mode) does, so an ack never waits behind a count."""
        return await self._submit(fn)

    async def oldest_pending(self) -> float | None:
        """When the oldest unfinished delivery arrived (its age is the backlog's lag)."""
        return await self._query(
            lambda db: db.execute(
                "SELECT MIN(received_at) FROM deliveries WHERE status IN (?, ?, ?)", UNFINISHED
            ).fetchone()[0]
        )

    async def unfinished_count(self) -> int:
        """How many deliveries wait or run (queued, running, retrying): the backlog, on every replica."""
        return await self._query(
            lambda db: int(
                db.execute("SELECT COUNT(*) FROM deliveries WHERE status IN (?, ?, ?)", UNFINISHED).fetchone()[0]
            )
        )

    async def counts(self) -> dict[str, int]:
        def op(db: Statements) -> dict[str, int]:
            rows = db.execute("SELECT status, COUNT(*) FROM deliveries GROUP BY status").fetchall()
            return {status: int(n) for status, n in rows}

        return await self._query(op)

    async def prune(self, older_than_days: float = 30.0) -> int:
        """Forget finished deliveries older than the cut-off; failed ones stay until handled."""
        cutoff = time.time() - older_than_days * 86400

        def op(db: Statements) -> int:
            db.execute(
                "DELETE FROM effects WHERE seq IN (SELECT seq FROM deliveries WHERE status IN (?, ?)"
                " AND received_at < ?)",
                (DONE, IGNORED, cutoff),
            )
            return db.execute(
                "DELETE FROM deliveries WHERE status IN (?, ?) AND received_at < ?", (DONE, IGNORED, cutoff)
            ).rowcount

        return await self._submit(op)


def statement(sql: str, params: tuple) -> Op:
    """An operation that runs one statement and returns nothing (its cursor stays on the writer thread)."""

    def op(db: Statements) -> None:
        db.execute(sql, params)

    return op


def read_effects(db: Statements, seq: int) -> dict[str, Effect]:
    """A delivery's ledger rows by key; results are JSON in both engines (text here, whatever the column)."""
    rows = db.execute(
        "SELECT key, state, CAST(result AS TEXT), intended_at FROM effects WHERE seq=?", (seq,)
    ).fetchall()
    return {k: Effect(k, state, json.loads(result) if result else None, at) for k, state, result, at in rows}


def fetch(db: Statements, where: str, params: tuple, *, with_body: bool = False) -> list[Delivery]:
    cols = COLUMNS + (", body" if with_body else "")
    return [Delivery(*row) for row in db.execute(f"SELECT {cols} FROM deliveries {where}", params).fetchall()]


def fetch_one(db: Statements, where: str, params: tuple, *, with_body: bool = False) -> Delivery | None:
    rows = fetch(db, where, params, with_body=with_body)
    return rows[0] if rows else None


def _log_failure(fut: asyncio.Future) -> None:
    if not fut.cancelled() and fut.exception() is not None:
        logs.event(
            "journal write failed (ledger row); a resumed delivery reconciles instead",
            error=f"{type(fut.exception()).__name__}: {fut.exception()}",
        )


def _settle(fut: asyncio.Future, value: Any, exc: BaseException | None) -> None:
    if fut.done():
        return
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(value)
