"""The delivery journal on PostgreSQL (`SWEEPBOT_DB=postgresql://…`), for replicas that share one database.

The same interface and the same behaviour as the SQLite journal (`bot.delivery.journal`; tests/test_journal_contract.py
runs on both). The driver is psycopg 3, asynchronous. Its connection belongs to one event loop, while the
journal is used from two (intake's and the workers'), so the journal runs a loop of its own on a thread, as
the SQLite journal runs its writer thread: every operation goes through one queue to one connection, and the
operations waiting together are committed in one transaction (group commit). An operation that fails alone
fails only its caller: the batch is then run again one operation per transaction.

A connection that breaks (the server restarted, the network cut) fails the operations it held; the next
operation connects again, so the journal recovers by itself once the database is back.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

import psycopg
from psycopg.types.json import Jsonb

from bot.telemetry import logs
from bot.delivery.journal import (BATCH_MAX, COLUMNS, DONE, EFFECT_DONE, FAILED, IGNORED, INTENDED, QUEUED, RETRYING,
                         RUNNING, UNFINISHED, Delivery, Effect, JournalUnavailable, NewDelivery, Queued,
                         _log_failure, _settle, safe_target)
from bot.rules.lanes import kind, lane

CONNECT_TIMEOUT = 10  # seconds, unless the URL says (connect_timeout=)
# Two replicas starting together must not both migrate: the migration holds this advisory lock.
MIGRATION_LOCK = 0x5_77EE_0B07

# Versioned migrations, run at start: the one row of schema_version says how many have been applied.
# Times are seconds since the epoch (DOUBLE PRECISION), as in SQLite, so both backends return the same rows.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE deliveries (
        seq          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id           TEXT NOT NULL UNIQUE,
        event        TEXT NOT NULL,
        action       TEXT,
        repo         TEXT,
        number       BIGINT,
        installation BIGINT,
        lane         TEXT NOT NULL,
        received_at  DOUBLE PRECISION NOT NULL,
        body         BYTEA NOT NULL,
        status       TEXT NOT NULL,
        attempts     INTEGER NOT NULL DEFAULT 0,
        error        TEXT,
        finished_at  DOUBLE PRECISION,
        not_before   DOUBLE PRECISION,
        interrupted  INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX deliveries_unfinished ON deliveries (lane, seq) WHERE status IN ('queued', 'running', 'retrying');
    CREATE INDEX deliveries_status ON deliveries (status, seq);
    CREATE TABLE effects (
        seq         BIGINT NOT NULL,
        key         TEXT NOT NULL,
        state       TEXT NOT NULL,
        result      JSONB,
        intended_at DOUBLE PRECISION,
        done_at     DOUBLE PRECISION,
        PRIMARY KEY (seq, key)
    );
    CREATE TABLE probe (id INTEGER PRIMARY KEY, at DOUBLE PRECISION);
    """,
    # 2: what replicas share. A lane's lease (who runs its head delivery, until when: the database's clock, so
    # the replicas' clocks do not matter), and the write budget per installation (GitHub's secondary limit).
    """
    CREATE TABLE lanes (
        lane       TEXT PRIMARY KEY,
        holder     TEXT NOT NULL,
        expires_at TIMESTAMPTZ NOT NULL,
        renewed_at TIMESTAMPTZ NOT NULL
    );
    CREATE INDEX lanes_holder ON lanes (holder);
    CREATE TABLE write_pacing (
        key  TEXT PRIMARY KEY,
        sent DOUBLE PRECISION[] NOT NULL
    );
    """,
)

LEASE_SECONDS = 15.0  # a replica that stops renewing loses its lanes this long after its last renewal
CLAIM_TRIES = 8  # candidates looked at in one claim when other replicas take the same lanes meanwhile

# The head of each lane (its lowest unfinished seq), runnable now, whose lane no replica holds; heads that another
# replica is claiming right now are skipped, not waited for.
CANDIDATE = """
    SELECT d.seq, d.lane, d.status FROM deliveries d
    WHERE d.status IN ('queued', 'running', 'retrying')
      AND (d.not_before IS NULL OR d.not_before <= %(now)s)
      AND NOT EXISTS (SELECT 1 FROM deliveries e WHERE e.lane = d.lane
                      AND e.status IN ('queued', 'running', 'retrying') AND e.seq < d.seq)
      AND NOT EXISTS (SELECT 1 FROM lanes l WHERE l.lane = d.lane AND l.expires_at > clock_timestamp())
    ORDER BY d.seq
    LIMIT 1
    FOR UPDATE OF d SKIP LOCKED
"""
# The lease, taken only where none is live: the arbiter when two replicas pick the same lane.
TAKE_LEASE = """
    INSERT INTO lanes (lane, holder, expires_at, renewed_at)
    VALUES (%(lane)s, %(holder)s, clock_timestamp() + make_interval(secs => %(lease)s), clock_timestamp())
    ON CONFLICT (lane) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at,
        renewed_at = excluded.renewed_at
    WHERE lanes.expires_at <= clock_timestamp()
    RETURNING lane
"""


@dataclass(frozen=True)
class Claim:
    """A delivery a replica took with its lane's lease: run it, finish it, then release the lane."""

    delivery: Delivery
    attempt: int
    effects: dict[str, Effect]
    taken_over: bool  # it was running under a lease that ran out: that replica died (interrupted counts it)

    @property
    def lane(self) -> str:
        return self.delivery.lane

Op = Callable[[psycopg.AsyncConnection], Awaitable[Any]]


class PgJournal:
    """PostgreSQL journal: one connection on a thread and loop of its own; concurrent writes committed together."""

    def __init__(self, url: str, *, connect_timeout: float = CONNECT_TIMEOUT, lease_seconds: float = LEASE_SECONDS):
        self.where = safe_target(url)
        self.lease_seconds = lease_seconds
        self._holders: set[str] = set()  # whose leases this process took: handed back at close
        self._url = url
        self._connect_timeout = connect_timeout
        self.last_error: str | None = None
        self.schema_version = 0
        self._closed = False
        self._conn: psycopg.AsyncConnection | None = None
        self._queue: asyncio.Queue | None = None
        self._conninfo = _conninfo(url)
        password = self._conninfo.get("password")
        self._password = str(password) if password else None
        logs.register_secret(self._password)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run_loop, name="journal-pg", daemon=True)
        self._thread.start()
        try:
            self.schema_version = asyncio.run_coroutine_threadsafe(self._open(), self._loop).result()
        except Exception as exc:
            self._stop_loop()
            raise JournalUnavailable(f"cannot open the journal at {self.where}: {self._describe(exc)}") from None
        self._writer = asyncio.run_coroutine_threadsafe(self._write(), self._loop)

    # -- the journal's own loop ----------------------------------------------------------------

    def _run_loop(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()
        self._loop.close()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    async def _open(self) -> int:
        self._queue = asyncio.Queue()
        conn = await self._connection()
        return await migrate(conn)

    async def _connection(self) -> psycopg.AsyncConnection:
        if self._conn is not None and not self._conn.closed and not self._conn.broken:
            return self._conn
        if self._conn is not None:
            await self._conn.close()
            self._conn = None
        params: dict[str, Any] = {"autocommit": True, "application_name": "sweepbot"}
        if "connect_timeout" not in self._conninfo:
            params["connect_timeout"] = max(1, round(self._connect_timeout))
        self._conn = await psycopg.AsyncConnection.connect(self._url, **params)
        return self._conn

    def _describe(self, exc: BaseException) -> str:
        text = f"{type(exc).__name__}: {' '.join(str(exc).split())}"  # libpq's several lines as one
        if self._password:
            text = text.replace(self._password, "***")
        return text

    async def _write(self) -> None:
        assert self._queue is not None
        stop = False
        while not stop:
            first = await self._queue.get()
            if first is None:
                break
            batch = [first]
            while len(batch) < BATCH_MAX and not self._queue.empty():
                nxt = self._queue.get_nowait()
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
            await self._commit(batch)
        if self._conn is not None:
            await self._conn.close()

    async def _commit(self, batch: list[tuple[Op, asyncio.Future]]) -> None:
        outcomes: list[tuple[asyncio.Future, Any, BaseException | None]] = []
        try:
            conn = await self._connection()
            try:
                async with conn.transaction():
                    values = [await fn(conn) for fn, _ in batch]
                outcomes = [(fut, value, None) for (_, fut), value in zip(batch, values)]
            except psycopg.OperationalError:
                raise
            except Exception:  # one operation failed (a constraint, a bug): each alone, so that only it fails
                for fn, fut in batch:
                    try:
                        async with conn.transaction():
                            outcomes.append((fut, await fn(conn), None))
                    except psycopg.OperationalError:
                        raise
                    except Exception as exc:
                        outcomes.append((fut, None, exc))
            self.last_error = None
        except (psycopg.Error, OSError) as exc:  # the database is down or gone: the rest of the batch hears of it
            self.last_error = self._describe(exc)
            settled = {id(fut) for fut, _, _ in outcomes}
            outcomes += [(fut, None, exc) for _, fut in batch if id(fut) not in settled]
        for fut, value, exc in outcomes:
            if fut is None:  # queued by close(): nobody waits for it
                continue
            try:
                fut.get_loop().call_soon_threadsafe(_settle, fut, value, exc)
            except RuntimeError:  # the caller's loop is gone; nobody is waiting
                pass

    def _enqueue(self, fn: Op) -> asyncio.Future:
        if self._closed:
            raise RuntimeError("journal is closed")
        fut = asyncio.get_running_loop().create_future()
        self._loop.call_soon_threadsafe(self._queue.put_nowait, (fn, fut))
        return fut

    async def _submit(self, fn: Op) -> Any:
        return await self._enqueue(fn)

    def _post(self, fn: Op) -> asyncio.Future:
        """Queue a write without waiting for it; a failure is logged, and the future holds it for whoever asks."""
        fut = self._enqueue(fn)
        fut.add_done_callback(_log_failure)
        return fut

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for holder in sorted(self._holders):  # SIGTERM: the lanes go back at once, not when their leases run out
            self._loop.call_soon_threadsafe(self._queue.put_nowait, (_release_op(holder, None), None))
        self._loop.call_soon_threadsafe(self._queue.put_nowait, None)
        try:
            self._writer.result(timeout=30)
        except Exception:
            pass
        self._stop_loop()

    # -- operations ----------------------------------------------------------------------------

    async def record(self, d: NewDelivery) -> int | None:
        """Commit a delivery and return its sequence number; None when its id was seen before, by any replica."""

        async def op(conn: psycopg.AsyncConnection) -> int | None:
            cur = await conn.execute(
                "INSERT INTO deliveries (id, event, action, repo, number, installation, lane, received_at, body,"
                " status, not_before) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) ON CONFLICT (id) DO NOTHING"
                " RETURNING seq",
                (d.id, d.event, d.action, d.repo, d.number, d.installation, d.lane, time.time(), d.body, d.status,
                 d.not_before))
            row = await cur.fetchone()
            return row[0] if row else None

        return await self._submit(op)

    async def begin(self, seq: int) -> tuple[Delivery, int, dict[str, Effect]] | None:
        """Count the attempt, mark it running, read its row (payload included) and its ledger; None when it is
        no longer unfinished."""

        async def op(conn: psycopg.AsyncConnection) -> tuple[Delivery, int, dict[str, Effect]] | None:
            cur = await conn.execute(
                f"UPDATE deliveries SET status=%s, attempts=attempts+1, not_before=NULL"
                f" WHERE seq=%s AND status IN (%s, %s, %s) RETURNING {COLUMNS}, body", (RUNNING, seq, *UNFINISHED))
            row = await cur.fetchone()
            if row is None:
                return None
            d = _delivery(row)
            return d, d.attempts, await _effects(conn, seq)

        return await self._submit(op)

    async def load(self, seq: int) -> Delivery | None:
        return await self._submit(lambda conn: _fetch_one(conn, "WHERE seq=%s", (seq,), with_body=True))

    async def finish(self, seq: int, status: str, error: str | None = None) -> None:
        async def op(conn: psycopg.AsyncConnection) -> None:
            await conn.execute("UPDATE deliveries SET status=%s, error=%s, finished_at=%s, not_before=NULL"
                               " WHERE seq=%s", (status, error, time.time(), seq))

        await self._submit(op)

    async def retry_later(self, seq: int, not_before: float, error: str) -> None:
        async def op(conn: psycopg.AsyncConnection) -> None:
            await conn.execute("UPDATE deliveries SET status=%s, error=%s, not_before=%s WHERE seq=%s",
                               (RETRYING, error, not_before, seq))

        await self._submit(op)

    async def requeue(self, delivery_id: str) -> Delivery | None:
        async def op(conn: psycopg.AsyncConnection) -> Delivery | None:
            cur = await conn.execute(
                "UPDATE deliveries SET status=%s, error=NULL, finished_at=NULL, not_before=NULL, interrupted=0"
                f" WHERE id=%s RETURNING {COLUMNS}, body", (QUEUED, delivery_id))
            row = await cur.fetchone()
            return _delivery(row) if row else None

        return await self._submit(op)

    async def relane(self, seq: int, number: int) -> str:
        async def op(conn: psycopg.AsyncConnection) -> str:
            cur = await conn.execute("SELECT repo FROM deliveries WHERE seq=%s", (seq,))
            row = await cur.fetchone()
            if row is None:
                raise LookupError(f"no delivery with seq {seq}")
            name = lane(row[0], number, None, "")
            await conn.execute("UPDATE deliveries SET number=%s, lane=%s WHERE seq=%s", (number, name, seq))
            return name

        return await self._submit(op)

    async def recover(self, max_interrupted: int) -> list[str]:
        """At start: deliveries left running were interrupted; fail those interrupted too often (ids returned)."""

        async def op(conn: psycopg.AsyncConnection) -> list[str]:
            # Only where no replica holds the lane: another replica's running delivery is not interrupted.
            await conn.execute("UPDATE deliveries d SET interrupted=interrupted+1, status=%s WHERE status=%s"
                               " AND NOT EXISTS (SELECT 1 FROM lanes l WHERE l.lane = d.lane"
                               " AND l.expires_at > clock_timestamp())", (QUEUED, RUNNING))
            cur = await conn.execute(
                "UPDATE deliveries SET status=%s, finished_at=%s, error=%s WHERE status=%s AND interrupted>%s"
                " RETURNING seq, id",
                (FAILED, time.time(), f"interrupted by a crash more than {max_interrupted} times", QUEUED,
                 max_interrupted))
            return [delivery_id for _, delivery_id in sorted(await cur.fetchall())]

        return await self._submit(op)

    async def unfinished(self) -> list[Queued]:
        async def op(conn: psycopg.AsyncConnection) -> list[Queued]:
            cur = await conn.execute("SELECT seq, lane, not_before, event, action FROM deliveries"
                                     " WHERE status IN (%s, %s, %s) ORDER BY seq", UNFINISHED)
            return [Queued(seq, name, not_before, kind(event, action))
                    for seq, name, not_before, event, action in await cur.fetchall()]

        return await self._submit(op)

    # -- the ledger of effects -----------------------------------------------------------------

    async def effects(self, seq: int) -> dict[str, Effect]:
        return await self._submit(lambda conn: _effects(conn, seq))

    async def intend(self, seq: int, key: str) -> None:
        async def op(conn: psycopg.AsyncConnection) -> None:
            await conn.execute("INSERT INTO effects (seq, key, state, intended_at) VALUES (%s,%s,%s,%s)"
                               " ON CONFLICT (seq, key) DO UPDATE SET intended_at=excluded.intended_at",
                               (seq, key, INTENDED, time.time()))

        await self._submit(op)

    async def withdraw(self, seq: int, key: str) -> None:
        async def op(conn: psycopg.AsyncConnection) -> None:
            await conn.execute("DELETE FROM effects WHERE seq=%s AND key=%s AND state=%s", (seq, key, INTENDED))

        await self._submit(op)

    def complete(self, seq: int, key: str, result: Any) -> asyncio.Future:
        """Queued, not waited for: committed before anything the same worker writes after it."""

        async def op(conn: psycopg.AsyncConnection) -> None:
            await conn.execute("INSERT INTO effects (seq, key, state, result, done_at) VALUES (%s,%s,%s,%s,%s)"
                               " ON CONFLICT (seq, key) DO UPDATE SET state=excluded.state, result=excluded.result,"
                               " done_at=excluded.done_at", (seq, key, EFFECT_DONE, Jsonb(result), time.time()))

        return self._post(op)

    async def get(self, delivery_id: str) -> Delivery | None:
        return await self._submit(lambda conn: _fetch_one(conn, "WHERE id=%s", (delivery_id,), with_body=True))

    async def listing(self, *, status: str | None = None, limit: int = 50) -> list[Delivery]:
        if status:
            return await self._submit(
                lambda conn: _fetch(conn, "WHERE status=%s ORDER BY seq DESC LIMIT %s", (status, limit)))
        return await self._submit(lambda conn: _fetch(conn, "ORDER BY seq DESC LIMIT %s", (limit,)))

    async def oldest_pending(self) -> float | None:
        async def op(conn: psycopg.AsyncConnection) -> float | None:
            cur = await conn.execute("SELECT MIN(received_at) FROM deliveries WHERE status IN (%s, %s, %s)",
                                     UNFINISHED)
            return (await cur.fetchone())[0]

        return await self._submit(op)

    async def counts(self) -> dict[str, int]:
        async def op(conn: psycopg.AsyncConnection) -> dict[str, int]:
            cur = await conn.execute("SELECT status, COUNT(*) FROM deliveries GROUP BY status")
            return {status: int(n) for status, n in await cur.fetchall()}

        return await self._submit(op)

    async def prune(self, older_than_days: float = 30.0) -> int:
        """Forget finished deliveries older than the cut-off; failed ones stay until handled."""
        cutoff = time.time() - older_than_days * 86400

        async def op(conn: psycopg.AsyncConnection) -> int:
            await conn.execute("DELETE FROM effects e USING deliveries d WHERE e.seq = d.seq"
                               " AND d.status IN (%s, %s) AND d.received_at < %s", (DONE, IGNORED, cutoff))
            cur = await conn.execute("DELETE FROM deliveries WHERE status IN (%s, %s) AND received_at < %s",
                                     (DONE, IGNORED, cutoff))
            return cur.rowcount

        return await self._submit(op)

    async def probe(self) -> None:
        """A write that reaches the database: raises if the journal cannot be written."""

        async def op(conn: psycopg.AsyncConnection) -> None:
            await conn.execute("INSERT INTO probe (id, at) VALUES (1, %s) ON CONFLICT (id) DO UPDATE"
                               " SET at=excluded.at", (time.time(),))

        await self._submit(op)


    # -- what several replicas share: lanes under lease, one write budget --------------------------------

    async def claim(self, holder: str, *, lease: float | None = None, now: float | None = None) -> Claim | None:
        """Take the next runnable delivery of a lane that no replica holds, with that lane's lease for `lease`
        seconds (default: the journal's, 15 s). Per PR: the lowest unfinished seq of the lane, and only one at a
        time (the lane is held until released or its lease runs out); a head waiting for its `not_before` holds
        its lane back. None when there is nothing to take. A head left running under a lease that ran out is
        taken over, its `interrupted` counted (the caller fails it past its limit, as recover does)."""
        seconds = self.lease_seconds if lease is None else lease
        self._holders.add(holder)

        async def op(conn: psycopg.AsyncConnection) -> Claim | None:
            at = time.time() if now is None else now
            for _ in range(CLAIM_TRIES):
                cur = await conn.execute(CANDIDATE, {"now": at})
                found = await cur.fetchone()
                if found is None:
                    return None
                seq, name, status = found
                cur = await conn.execute(TAKE_LEASE, {"lane": name, "holder": holder, "lease": seconds})
                if await cur.fetchone() is None:
                    continue  # another replica took this lane meanwhile: look again
                cur = await conn.execute(
                    "UPDATE deliveries SET status=%s, attempts=attempts+1, not_before=NULL,"
                    " interrupted=interrupted + CASE WHEN status=%s THEN 1 ELSE 0 END"
                    f" WHERE seq=%s RETURNING {COLUMNS}, body", (RUNNING, RUNNING, seq))
                d = _delivery(await cur.fetchone())
                return Claim(d, d.attempts, await _effects(conn, seq), taken_over=status == RUNNING)
            return None

        return await self._submit(op)

    async def renew(self, holder: str, *, lease: float | None = None) -> list[str]:
        """The heartbeat: every lane `holder` holds gets its lease again from now; returns those lanes. A lane
        missing from the answer was lost (its lease ran out and another replica took it): stop working on it."""
        seconds = self.lease_seconds if lease is None else lease

        async def op(conn: psycopg.AsyncConnection) -> list[str]:
            cur = await conn.execute(
                "UPDATE lanes SET expires_at = clock_timestamp() + make_interval(secs => %s),"
                " renewed_at = clock_timestamp() WHERE holder=%s RETURNING lane", (seconds, holder))
            return sorted(name for (name,) in await cur.fetchall())

        return await self._submit(op)

    async def release(self, holder: str, lane: str | None = None) -> list[str]:
        """Hand a lane back (its head finished or will wait), or every lane of `holder` (SIGTERM); returns them."""
        return await self._submit(_release_op(holder, lane))

    async def behind(self, seq: int, lane: str) -> list[tuple[str, str | None]]:
        """The (event, action) of each unfinished delivery of `lane` after `seq`, in order: what a handler
        running `seq` may leave to a later delivery (the label settle)."""

        async def op(conn: psycopg.AsyncConnection) -> list[tuple[str, str | None]]:
            cur = await conn.execute("SELECT event, action FROM deliveries WHERE lane=%s AND seq>%s"
                                     " AND status IN (%s, %s, %s) ORDER BY seq", (lane, seq, *UNFINISHED))
            return [kind(event, action) for event, action in await cur.fetchall()]

        return await self._submit(op)

    async def leases(self) -> dict[str, str]:
        """The lanes held now, and by whom."""

        async def op(conn: psycopg.AsyncConnection) -> dict[str, str]:
            cur = await conn.execute("SELECT lane, holder FROM lanes WHERE expires_at > clock_timestamp()"
                                     " ORDER BY lane")
            return dict(await cur.fetchall())

        return await self._submit(op)

    async def pace(self, key: str, limit: int, window: float = 60.0, *, now: float | None = None) -> float:
        """Reserve one write of the budget `key` shares across replicas (e.g. one installation's): at most
        `limit` in any `window` seconds. Returns how long to wait before sending it (0 when at once); the slot is
        reserved, so concurrent callers, on any replica, are spread one after another. Times are the database's
        clock unless `now` is given. A limit of 0 paces nothing."""
        if limit <= 0:
            return 0.0

        async def op(conn: psycopg.AsyncConnection) -> float:
            await conn.execute("INSERT INTO write_pacing (key, sent) VALUES (%s, '{}') ON CONFLICT DO NOTHING",
                               (key,))
            cur = await conn.execute("SELECT sent, extract(epoch FROM clock_timestamp())::float8 FROM write_pacing"
                                     " WHERE key=%s FOR UPDATE", (key,))
            sent, clock = await cur.fetchone()
            at = clock if now is None else now
            kept = sorted(t for t in sent if t > at - window)  # reservations still inside a window from now
            slot = at if len(kept) < limit else max(at, kept[-limit] + window)
            kept = sorted([*kept, slot])[-limit:]  # only the last `limit` can hold a later one back
            await conn.execute("UPDATE write_pacing SET sent=%s WHERE key=%s", (kept, key))
            return slot - at

        return await self._submit(op)


def _release_op(holder: str, lane: str | None) -> Op:
    async def op(conn: psycopg.AsyncConnection) -> list[str]:
        if lane is None:
            cur = await conn.execute("DELETE FROM lanes WHERE holder=%s RETURNING lane", (holder,))
        else:
            cur = await conn.execute("DELETE FROM lanes WHERE holder=%s AND lane=%s RETURNING lane", (holder, lane))
        return sorted(name for (name,) in await cur.fetchall())

    return op


async def migrate(conn: psycopg.AsyncConnection) -> int:
    """Apply the migrations this database has not had yet, in one transaction; returns the schema version."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        await conn.execute("CREATE TABLE IF NOT EXISTS schema_version (one BOOLEAN PRIMARY KEY DEFAULT TRUE"
                           " CHECK (one), version INTEGER NOT NULL)")
        await conn.execute("INSERT INTO schema_version (version) VALUES (0) ON CONFLICT DO NOTHING")
        cur = await conn.execute("SELECT version FROM schema_version")
        version = (await cur.fetchone())[0]
        for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
            await conn.execute(script)
            await conn.execute("UPDATE schema_version SET version=%s", (number,))
    return max(version, len(MIGRATIONS))


def _conninfo(url: str) -> dict[str, Any]:
    """The URL's parameters as libpq reads them ({} when it cannot: connecting then says why)."""
    try:
        return psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.Error:
        return {}


def _delivery(row: tuple) -> Delivery:
    *fields, body = row
    return Delivery(*fields, body=bytes(body))


async def _effects(conn: psycopg.AsyncConnection, seq: int) -> dict[str, Effect]:
    cur = await conn.execute("SELECT key, state, result, intended_at FROM effects WHERE seq=%s", (seq,))
    return {k: Effect(k, state, result, at) for k, state, result, at in await cur.fetchall()}


async def _fetch(conn: psycopg.AsyncConnection, where: str, params: tuple, *,
                 with_body: bool = False) -> list[Delivery]:
    cols = COLUMNS + (", body" if with_body else "")
    cur = await conn.execute(f"SELECT {cols} FROM deliveries {where}", params)
    rows = await cur.fetchall()
    return [_delivery(row) if with_body else Delivery(*row) for row in rows]


async def _fetch_one(conn: psycopg.AsyncConnection, where: str, params: tuple, *,
                     with_body: bool = False) -> Delivery | None:
    rows = await _fetch(conn, where, params, with_body=with_body)
    return rows[0] if rows else None
