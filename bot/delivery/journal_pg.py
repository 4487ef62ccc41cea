"""The delivery journal on PostgreSQL (`SWEEPBOT_DB=postgresql://…`), for replicas that share one database.

The operations and their SQL are the base's (`bot.delivery.journal.Journal`, tests/test_journal_contract.py
runs on both backends); this is how PostgreSQL connects, migrates, inserts, commits a batch, and what only
replicas have: lanes under lease (`claim`, `renew`, `release`) and one write budget (`pace`). The driver is
psycopg 3; its connection belongs to the journal's writer thread, as SQLite's does. The operations waiting
together are committed in one transaction (group commit); an operation that fails alone fails only its
caller: the batch is then run again one operation per transaction. Two things have a connection and a thread of
their own, so that no operation queued at the writer delays them: the listener that hears of new work
(`WorkListener`) and the renewal of a replica's leases (`LeaseKeeper`).

A connection that breaks (the server restarted, the network cut) fails the operations it held; the next
operation connects again, so the journal recovers by itself once the database is back.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import psycopg

from bot.delivery.journal import (
    COLUMNS,
    FAILED,
    INSERT_DELIVERY,
    QUEUED,
    RUNNING,
    UNFINISHED,
    Delivery,
    Effect,
    Journal,
    JournalUnavailable,
    Op,
    Statements,
    read_effects,
    refuse_newer_schema,
    safe_target,
    statement,
)
from bot.delivery.lanes import kind
from bot.telemetry import logs

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
    # 3: the replicas at work, each seen at its heartbeat, so that they split GitHub's budget of requests under
    # way at once between them (`present`)
    """
    CREATE TABLE replicas (
        holder  TEXT PRIMARY KEY,
        seen_at TIMESTAMPTZ NOT NULL
    );
    """,
)

LEASE_SECONDS = 15.0  # a replica that stops renewing loses its lanes this long after its last renewal
# Sent in the transaction that makes work claimable (a delivery recorded, a lane handed back), so idle workers on
# every replica look at once instead of at their next poll; PostgreSQL delivers it at commit, once per transaction.
WORK_CHANNEL = "sweepbot_work"
NOTIFY_WORK = f"NOTIFY {WORK_CHANNEL}"
LISTEN_RECONNECT = 1.0  # seconds between tries when the listening connection is lost (the poll covers meanwhile)
CLAIM_TRIES = 8  # candidates looked at in one claim when other replicas take the same lanes meanwhile
RENEW_RETRY = 1.0  # seconds before a renewal that failed (the database away) is tried again, at most
RENEW_EVERY_MIN = 0.05  # seconds: however short a lease, its renewals never spin

# The head of each lane (its lowest unfinished seq), runnable now, whose lane no replica holds; heads that another
# replica is claiming right now are skipped, not waited for. `exclude`: the lanes the claiming replica runs now,
# never its own to take over, even when their lease ran out before its renewal (the renewal takes it back).
CANDIDATE = """
    SELECT d.seq, d.lane, d.status FROM deliveries d
    WHERE d.status IN ('queued', 'running', 'retrying')
      AND (d.not_before IS NULL OR d.not_before <= %(now)s)
      AND d.lane <> ALL(%(exclude)s::text[])
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
# A holder's leases from now, each with whether it had run out before this renewal came (no other replica took
# it meanwhile, or its holder would not be this one). `lanes`: only those (NULL: every lane of the holder).
RENEW = """
    UPDATE lanes SET expires_at = clock_timestamp() + make_interval(secs => %(lease)s),
        renewed_at = clock_timestamp()
    FROM (SELECT lane, expires_at FROM lanes WHERE holder = %(holder)s
          AND (%(lanes)s::text[] IS NULL OR lane = ANY(%(lanes)s::text[]))) AS before
    WHERE lanes.lane = before.lane AND lanes.holder = %(holder)s
    RETURNING lanes.lane, before.expires_at <= clock_timestamp()
"""


@dataclass(frozen=True)
class Claim:
    """A delivery a replica took with its lane's lease: run it, finish it, then release the lane."""

    delivery: Delivery
    attempt: int
    effects: dict[str, Effect]
    taken_over: bool  # it was running under a lease that ran out: that replica died (interrupted counts it)
    waiting: tuple[tuple[str, str | None], ...] = ()  # (event, action) of what waits behind it in its lane

    @property
    def lane(self) -> str:
        return self.delivery.lane


@dataclass(frozen=True)
class Renewal:
    """What one renewal of a replica's leases found, lane by lane."""

    kept: tuple[str, ...]  # renewed: still this replica's
    taken_back: tuple[str, ...]  # among them, those whose lease had run out before the renewal (nobody took them)
    lost: dict[str, Any]  # lanes asked for that are this replica's no more (another took them), with what `held` said
    replicas: int  # replicas at work, this one counted (`present`)


class PgStatements:
    """A psycopg connection as the shared operations see it: `?` placeholders, as sqlite3 takes them (psycopg's
    named `%(name)s` pass through: CANDIDATE, TAKE_LEASE, RENEW)."""

    __slots__ = ("conn",)

    def __init__(self, conn: psycopg.Connection):
        self.conn = conn

    def execute(self, sql: str, params: Any = None) -> psycopg.Cursor:
        return self.conn.execute(placeholders(sql), params)


@functools.lru_cache(maxsize=512)
def placeholders(sql: str) -> str:
    """SQL in psycopg's paramstyle: each `?` becomes `%s` (no statement here has a `?` of another kind, such as
    JSONB's operator, nor a literal `%`)."""
    return sql.replace("?", "%s")


class PgJournal(Journal):
    """PostgreSQL journal: one connection on the writer thread; concurrent writes committed together."""

    CLOSE_TIMEOUT = 30.0
    # A running row is interrupted only where no replica holds its lane: another replica's delivery is not.
    interrupted_where = (
        "status=? AND NOT EXISTS (SELECT 1 FROM lanes l WHERE l.lane = deliveries.lane"
        " AND l.expires_at > clock_timestamp())"
    )

    def __init__(self, url: str, *, connect_timeout: float = CONNECT_TIMEOUT, lease_seconds: float = LEASE_SECONDS):
        super().__init__(safe_target(url), "journal-pg")
        self.lease_seconds = lease_seconds
        self._holders: set[str] = set()  # whose leases this process took: handed back at close
        self._url = url
        self._connect_timeout = connect_timeout
        self.schema_version = 0
        self._conn: psycopg.Connection | None = None
        self._conninfo = _conninfo(url)
        password = self._conninfo.get("password")
        self._password = str(password) if password else None
        logs.register_secret(self._password)
        try:
            self.schema_version = migrate(self._connection(), self.where)
        except JournalUnavailable:
            self._disconnect()
            raise
        except Exception as exc:
            self._disconnect()
            raise JournalUnavailable(f"cannot open the journal at {self.where}: {self._describe(exc)}") from None
        self._start_writer()

    def _connection(self) -> psycopg.Connection:
        if self._conn is not None and not self._conn.closed and not self._conn.broken:
            return self._conn
        self._disconnect()
        self._conn = psycopg.connect(self._url, **self._params())
        return self._conn

    def _params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"autocommit": True, "application_name": "sweepbot"}
        if "connect_timeout" not in self._conninfo:
            params["connect_timeout"] = max(1, round(self._connect_timeout))
        return params

    def listen(self, on_work: Callable[[], object]) -> WorkListener:
        """Call `on_work` (from a thread of its own) whenever a replica commits work that may be claimable: a
        delivery recorded, a lane handed back. Stop it with `stop()`."""
        listener = WorkListener(self._url, self._params(), on_work, self._describe)
        listener.start()
        return listener

    def _disconnect(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _describe(self, exc: BaseException) -> str:
        text = f"{type(exc).__name__}: {' '.join(str(exc).split())}"  # libpq's several lines as one
        if self._password:
            text = text.replace(self._password, "***")
        return text

    def _commit(
        self, batch: list[tuple[Op, asyncio.Future | None]]
    ) -> list[tuple[asyncio.Future | None, Any, BaseException | None]]:
        outcomes: list[tuple[asyncio.Future | None, Any, BaseException | None]] = []
        try:
            conn = self._connection()
            db = PgStatements(conn)
            try:
                with conn.transaction():
                    values = [fn(db) for fn, _ in batch]
                outcomes = [(fut, value, None) for (_, fut), value in zip(batch, values)]
            except psycopg.OperationalError:
                raise
            except Exception:  # one operation failed (a constraint, a bug): each alone, so that only it fails
                for fn, fut in batch:
                    try:
                        with conn.transaction():
                            outcomes.append((fut, fn(db), None))
                    except psycopg.OperationalError:
                        raise
                    except Exception as exc:
                        outcomes.append((fut, None, exc))
            self.last_error = None
        except (psycopg.Error, OSError) as exc:  # the database is down or gone: the rest of the batch hears of it
            self.last_error = self._describe(exc)
            settled = {id(fut) for fut, _, _ in outcomes}
            outcomes += [(fut, None, exc) for _, fut in batch if id(fut) not in settled]
        return outcomes

    def _closing_ops(self) -> list[Op]:
        """SIGTERM: the lanes go back at once, not when their leases run out."""
        return [_release_op(holder, None) for holder in sorted(self._holders)]

    def _insert(self, db: Statements, params: tuple) -> int | None:
        row = db.execute(INSERT_DELIVERY + " RETURNING seq", params).fetchone()
        if row is None:
            return None
        db.execute(NOTIFY_WORK)
        return row[0]

    def _give_up(self, db: Statements, max_interrupted: int, error: str) -> list[str]:
        # One statement: a row another replica changes meanwhile is either failed here and named, or not at all.
        rows = db.execute(
            "UPDATE deliveries SET status=?, finished_at=?, error=? WHERE status=? AND interrupted>? RETURNING seq, id",
            (FAILED, time.time(), error, QUEUED, max_interrupted),
        ).fetchall()
        return [delivery_id for _, delivery_id in sorted(rows)]

    async def probe(self) -> None:
        """A write that reaches the database: raises if the journal cannot be written."""
        await self._submit(
            statement(
                "INSERT INTO probe (id, at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET at=excluded.at", (time.time(),)
            )
        )

    # -- what several replicas share: lanes under lease, one write budget --------------------------------

    async def claim(
        self,
        holder: str,
        *,
        lease: float | None = None,
        now: float | None = None,
        release: str | None = None,
        exclude: Iterable[str] = (),
    ) -> Claim | None:
        """Take the next runnable delivery of a lane that no replica holds, with that lane's lease for `lease`
        seconds (default: the journal's, 15 s). Per PR: the lowest unfinished seq of the lane, and only one at a
        time (the lane is held until released or its lease runs out); a head waiting for its `not_before` holds
        its lane back. None when there is nothing to take. A head left running under a lease that ran out is
        taken over, its `interrupted` counted (the caller fails it past its limit, as recover does).
        `release`: a lane of `holder` handed back first, in the same transaction (a worker done with its head
        asks for the next one in one round trip). `exclude`: lanes not to take, whatever their lease (those the
        claiming replica runs now). The claim carries what waits behind it in its lane."""
        seconds = self.lease_seconds if lease is None else lease
        self._holders.add(holder)
        hand_back = _release_op(holder, release) if release is not None else None
        others = sorted(exclude)

        def op(db: Statements) -> Claim | None:
            if hand_back is not None:
                hand_back(db)
            at = time.time() if now is None else now
            for _ in range(CLAIM_TRIES):
                cur = db.execute(CANDIDATE, {"now": at, "exclude": others})
                found = cur.fetchone()
                if found is None:
                    return None
                seq, name, status = found
                cur = db.execute(TAKE_LEASE, {"lane": name, "holder": holder, "lease": seconds})
                if cur.fetchone() is None:
                    continue  # another replica took this lane meanwhile: look again
                cur = db.execute(
                    "UPDATE deliveries SET status=?, attempts=attempts+1, not_before=NULL,"
                    " interrupted=interrupted + CASE WHEN status=? THEN 1 ELSE 0 END"
                    f" WHERE seq=? RETURNING {COLUMNS}, body",
                    (RUNNING, RUNNING, seq),
                )
                d = Delivery(*cur.fetchone())
                return Claim(
                    d,
                    d.attempts,
                    read_effects(db, seq),
                    taken_over=status == RUNNING,
                    waiting=tuple(_behind(db, seq, name)),
                )
            return None

        return await self._submit(op)

    async def renew(self, holder: str, *, lease: float | None = None) -> list[str]:
        """Every lane `holder` holds gets its lease again from now; returns those lanes. A lane missing from the
        answer was lost (its lease ran out and another replica took it). A replica renews on a connection of its
        own instead (`keep_leases`), so that nothing queued here delays it."""
        seconds = self.lease_seconds if lease is None else lease
        return await self._submit(lambda db: sorted(lane for lane, _ in _renew(db, holder, seconds)))

    async def present(self, holder: str, *, lease: float | None = None) -> int:
        """The heartbeat's other half: `holder` is at work now. Returns how many replicas are (each seen within one
        lease time, this one counted); one not seen for two is forgotten."""
        seconds = self.lease_seconds if lease is None else lease
        return await self._submit(lambda db: _present(db, holder, seconds))

    def keep_leases(
        self,
        holder: str,
        *,
        lease: float,
        every: float,
        held: Callable[[], dict[str, Any]],
        on_renewal: Callable[[Renewal], object],
    ) -> LeaseKeeper:
        """Renew `holder`'s leases every `every` seconds on a thread and a connection of their own, started here;
        stop it with `stop()`. See LeaseKeeper."""
        keeper = LeaseKeeper(
            self._url,
            self._params(),
            holder,
            lease=lease,
            every=every,
            held=held,
            on_renewal=on_renewal,
            describe=self._describe,
        )
        keeper.start()
        return keeper

    async def absent(self, holder: str) -> None:
        """`holder` stops (SIGTERM): the others take its share of the budget at their next heartbeat."""
        await self._submit(lambda db: db.execute("DELETE FROM replicas WHERE holder=?", (holder,)))

    async def release(self, holder: str, lane: str | None = None) -> list[str]:
        """Hand a lane back (its head finished or will wait), or every lane of `holder` (SIGTERM); returns them."""
        return await self._submit(_release_op(holder, lane))

    async def behind(self, seq: int, lane: str) -> list[tuple[str, str | None]]:
        """The (event, action) of each unfinished delivery of `lane` after `seq`, in order: what a handler
        running `seq` may leave to a later delivery (the label settle)."""

        return await self._submit(lambda db: _behind(db, seq, lane))

    async def leases(self) -> dict[str, str]:
        """The lanes held now, and by whom."""

        def op(db: Statements) -> dict[str, str]:
            cur = db.execute("SELECT lane, holder FROM lanes WHERE expires_at > clock_timestamp() ORDER BY lane")
            return dict(cur.fetchall())

        return await self._submit(op)

    async def pace(self, key: str, limit: int, window: float = 60.0, *, now: float | None = None) -> float:
        """Reserve one write of the budget `key` shares across replicas (e.g. one installation's): at most
        `limit` in any `window` seconds. Returns how long to wait before sending it (0 when at once); the slot is
        reserved, so concurrent callers, on any replica, are spread one after another. Times are the database's
        clock unless `now` is given. A limit of 0 paces nothing."""
        if limit <= 0:
            return 0.0

        def op(db: Statements) -> float:
            db.execute("INSERT INTO write_pacing (key, sent) VALUES (?, '{}') ON CONFLICT DO NOTHING", (key,))
            cur = db.execute(
                "SELECT sent, extract(epoch FROM clock_timestamp())::float8 FROM write_pacing WHERE key=? FOR UPDATE",
                (key,),
            )
            sent, clock = cur.fetchone()
            at = clock if now is None else now
            kept = sorted(t for t in sent if t > at - window)  # reservations still inside a window from now
            slot = at if len(kept) < limit else max(at, kept[-limit] + window)
            kept = sorted([*kept, slot])[-limit:]  # only the last `limit` can hold a later one back
            db.execute("UPDATE write_pacing SET sent=? WHERE key=?", (kept, key))
            return slot - at

        return await self._submit(op)


class WorkListener:
    """Its own connection, LISTENing on WORK_CHANNEL: `on_work` is called for each notification, on this thread.
    A lost connection is opened again after LISTEN_RECONNECT; meanwhile the workers' poll finds the work."""

    def __init__(
        self, url: str, params: dict[str, Any], on_work: Callable[[], object], describe: Callable[[BaseException], str]
    ) -> None:
        self._url = url
        self._params = params
        self._on_work = on_work
        self._describe = describe
        self._stop = threading.Event()
        self.listening = threading.Event()  # set while the LISTEN is in place (tests wait for it)
        self._thread = threading.Thread(target=self._run, name="journal-pg-listen", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        failed = None
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._url, **self._params) as conn:
                    conn.execute(f"LISTEN {WORK_CHANNEL}")
                    self.listening.set()
                    if failed is not None:
                        logs.event("listening for work again")
                        failed = None
                    while not self._stop.is_set():
                        for _ in conn.notifies(timeout=0.2):
                            try:
                                self._on_work()
                            except RuntimeError:  # the workers' loop is gone: nobody to wake
                                pass
            except (psycopg.Error, OSError) as exc:
                self.listening.clear()
                error = self._describe(exc)
                if error != failed:
                    logs.event("cannot listen for work; polling meanwhile", logging.WARNING, error=error)
                failed = error
                self._stop.wait(LISTEN_RECONNECT)
        self.listening.clear()


class LeaseKeeper:
    """A replica's leases, renewed every `every` seconds on a connection and a thread of their own: however busy the
    replica's event loop and its journal's writer are, a renewal is never queued behind them.

    Each renewal asks `held()` for the lanes the replica runs now (lane -> whatever identifies that run) before it
    renews them, so every lane asked for was claimed, and committed, before the renewal; a lane claimed later is
    renewed the next time (its claim gave it a whole lease). In one transaction it renews those lanes that are still
    this holder's, a lease that ran out before the renewal came included (taken back: no other replica took it,
    or its holder would have changed), and says the replica is at work (`present`). It hands `on_renewal`, on this
    thread, a `Renewal`: what was kept, taken back and lost (no longer this holder's: another replica took it over).
    A renewal that fails (the database away) is tried again within RENEW_RETRY, on a new connection."""

    def __init__(
        self,
        url: str,
        params: dict[str, Any],
        holder: str,
        *,
        lease: float,
        every: float,
        held: Callable[[], dict[str, Any]],
        on_renewal: Callable[[Renewal], object],
        describe: Callable[[BaseException], str],
    ) -> None:
        self._url = url
        self._params = params
        self.holder = holder
        self.lease = lease
        self.every = max(every, RENEW_EVERY_MIN)
        self._held = held
        self._on_renewal = on_renewal
        self._describe = describe
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name="journal-pg-leases", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        """Renew now, not at the next time."""
        self._wake.set()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        conn: psycopg.Connection | None = None
        failed: str | None = None
        while True:
            self._wake.wait(self.every if failed is None else min(self.every, RENEW_RETRY))
            self._wake.clear()
            if self._stop.is_set():
                break
            try:
                if conn is None or conn.closed or conn.broken:
                    conn = self._connect()
                renewal = self._renew_once(conn)
            except Exception as exc:  # the database away, or a bug: said, and tried again soon on a new connection
                error = self._describe(exc)
                if error != failed:
                    logs.event("could not renew the leases; trying again", logging.WARNING, error=error)
                failed = error
                if conn is not None:
                    conn.close()
                    conn = None
                continue
            if failed is not None:
                logs.event("leases renewed again")
                failed = None
            try:
                self._on_renewal(renewal)
            except Exception as exc:  # the replica's loop is gone: nobody to tell
                logs.event(
                    "a lease renewal could not be handed on", logging.WARNING, error=f"{type(exc).__name__}: {exc}"
                )
        if conn is not None:
            conn.close()

    def _connect(self) -> psycopg.Connection:
        conn = psycopg.connect(self._url, **self._params)
        # a renewal waits for no lock longer than its own period: the next one tries again
        conn.execute("SELECT set_config('statement_timeout', %s, false)", (str(max(1000, round(self.every * 1000))),))
        return conn

    def _renew_once(self, conn: psycopg.Connection) -> Renewal:
        held = self._held()  # before the renewal: each of these lanes was claimed (committed) before it
        db = PgStatements(conn)
        with conn.transaction():
            rows = _renew(db, self.holder, self.lease, sorted(held))
            replicas = _present(db, self.holder, self.lease)
        kept = dict(rows)
        return Renewal(
            kept=tuple(sorted(kept)),
            taken_back=tuple(lane for lane, ran_out in rows if ran_out),
            lost={lane: run for lane, run in held.items() if lane not in kept},
            replicas=replicas,
        )


def _renew(db: Statements, holder: str, seconds: float, lanes: list[str] | None = None) -> list[tuple[str, bool]]:
    """RENEW: (lane, whether its lease had run out before) for each lane renewed."""
    cur = db.execute(RENEW, {"lease": seconds, "holder": holder, "lanes": lanes})
    return sorted((lane, bool(ran_out)) for lane, ran_out in cur.fetchall())


def _present(db: Statements, holder: str, seconds: float) -> int:
    db.execute(
        "INSERT INTO replicas (holder, seen_at) VALUES (?, clock_timestamp())"
        " ON CONFLICT (holder) DO UPDATE SET seen_at = EXCLUDED.seen_at",
        (holder,),
    )
    db.execute("DELETE FROM replicas WHERE seen_at < clock_timestamp() - make_interval(secs => ?)", (2 * seconds,))
    cur = db.execute(
        "SELECT count(*) FROM replicas WHERE seen_at > clock_timestamp() - make_interval(secs => ?)", (seconds,)
    )
    return int(cur.fetchone()[0])


def _release_op(holder: str, lane: str | None) -> Op:
    def op(db: Statements) -> list[str]:
        if lane is None:
            cur = db.execute("DELETE FROM lanes WHERE holder=? RETURNING lane", (holder,))
        else:
            cur = db.execute("DELETE FROM lanes WHERE holder=? AND lane=? RETURNING lane", (holder, lane))
        released = sorted(name for (name,) in cur.fetchall())
        if released:  # the next delivery of those lanes may be claimable now, on any replica
            db.execute(NOTIFY_WORK)
        return released

    return op


def _behind(db: Statements, seq: int, lane: str) -> list[tuple[str, str | None]]:
    cur = db.execute(
        "SELECT event, action FROM deliveries WHERE lane=? AND seq>? AND status IN (?, ?, ?) ORDER BY seq",
        (lane, seq, *UNFINISHED),
    )
    return [kind(event, action) for event, action in cur.fetchall()]


def migrate(conn: psycopg.Connection, where: str = "") -> int:
    """Apply the migrations this database has not had yet, in one transaction; returns the schema version."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version (one BOOLEAN PRIMARY KEY DEFAULT TRUE"
            " CHECK (one), version INTEGER NOT NULL)"
        )
        conn.execute("INSERT INTO schema_version (version) VALUES (0) ON CONFLICT DO NOTHING")
        row = conn.execute("SELECT version FROM schema_version").fetchone()
        assert row is not None  # inserted above
        version = row[0]
        refuse_newer_schema(version, len(MIGRATIONS), where)
        for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
            conn.execute(script)
            conn.execute("UPDATE schema_version SET version=%s", (number,))
    return max(version, len(MIGRATIONS))


def _conninfo(url: str) -> dict[str, Any]:
    """The URL's parameters as libpq reads them ({} when it cannot: connecting then says why)."""
    try:
        return psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.Error:
        return {}
