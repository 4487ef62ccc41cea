"""The lease scheduler: replicas that share one PostgreSQL journal; lanes under lease, per-PR order, any replica.

It decides what runs and when; the shared `bot.delivery.runner.Runner` runs it, as for the in-memory scheduler.
Nothing is held in memory between deliveries: each worker claims the next runnable delivery of a lane no
replica holds (`PgJournal.claim`, `FOR UPDATE SKIP LOCKED` and a lease row per lane), runs it, and hands the
lane back. The leases of the lanes this replica runs are renewed on a thread and a connection of their own
(`PgJournal.keep_leases`), three times a lease, so that no load on the event loop or the journal's writer can
delay a renewal; a lease that ran out before its renewal anyway, but that no other replica took, is taken back
and its run goes on. A replica that stops renewing (SIGKILL, a cut network) loses its lanes when their leases
run out, and another replica takes them over, the ledger of effects keeping every write once; the replica that
finds a lane taken stops its run there. Every lease lost is counted in /metrics and named in /healthz. Timers
are rows: a delivery's `not_before` (the label settle, a retry) holds its lane back on every replica, and
survives restarts.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from bot.delivery.journal import Delivery
from bot.delivery.journal_pg import Claim, LeaseKeeper, PgJournal, Renewal, WorkListener
from bot.delivery.runner import MAX_RETRY_DELAY, RETRY_FOR, Process, Resolve, Runner, finish_in_flight
from bot.telemetry import logs
from bot.telemetry.metrics import Metrics

POLL = 0.25  # how often an idle worker looks anyway: a head's not_before passing, a notification lost
HEARTBEATS_PER_LEASE = 3  # renewals in one lease time: two can be missed before the lease runs out
TAKEN_BACK, STOPPED = "taken_back", "stopped"  # what became of a lease lost (the metric's outcome)
BACKLOG_TIMEOUT = 2.0  # how long /metrics waits for the shared backlog before showing the last one it read


class Doorbell:
    """Wakes this replica's idle workers one at a time. A ring wakes the idle worker that went idle last (kept for
    the next one to wait when none waits); only one idle worker, the watch, also looks every `poll`. A worker that
    finds work rings again, so a burst is taken worker after worker, and an idle replica makes one claim a poll
    and one a notification, not one for each of its workers."""

    def __init__(self, poll: float):
        self.poll = poll
        self._rung = False
        self._sleepers: collections.deque[asyncio.Future] = collections.deque()
        self._watch: asyncio.Future | None = None

    def ring(self) -> None:
        while self._sleepers:
            sleeper = self._sleepers.pop()
            if not sleeper.done():
                sleeper.set_result(None)
                return
        if self._watch is not None and not self._watch.done():
            self._watch.set_result(None)
            return
        self._rung = True

    def ring_all(self) -> None:
        """Every idle worker (stopping)."""
        for waiter in (*self._sleepers, self._watch):
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
        self._rung = True

    async def wait(self) -> None:
        """Until a ring, or for the watch until `poll` has passed."""
        if self._rung:
            self._rung = False
            return
        waiter = asyncio.get_running_loop().create_future()
        if self._watch is not None:
            self._sleepers.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._sleepers:
                    self._sleepers.remove(waiter)
            return
        self._watch = waiter
        try:
            await asyncio.wait_for(waiter, self.poll)
        except TimeoutError:
            pass
        finally:
            # the watch is free again. If it found work, its ring wakes a sleeper, which finds none and waits as
            # the next watch; if not, it comes back as the watch
            self._watch = None


def replica_name() -> str:
    """Who holds a lease: host, process and a random part (a restarted process is a new holder)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class ReplicaWorkers:
    def __init__(
        self,
        journal: PgJournal,
        process: Process,
        metrics: Metrics,
        *,
        holder: str | None = None,
        lease: float | None = None,
        poll: float = POLL,
        concurrency: int = 8,
        max_attempts: int = 3,
        retry_delay: float = 2.0,
        retry_for: float = RETRY_FOR,
        max_retry_delay: float = MAX_RETRY_DELAY,
        resolve: Resolve | None = None,
        on_replicas: Callable[[int], None] | None = None,
    ) -> None:
        """`on_replicas(n)`: called with how many replicas are at work (this one counted) at start and at each
        heartbeat, to split what they share (GitHub's budget of requests under way at once)."""
        self.journal = journal
        self.on_replicas = on_replicas
        self.replicas = 1
        self.metrics = metrics
        self.concurrency = concurrency
        self.runner = Runner(
            journal,
            process,
            metrics,
            max_attempts=max_attempts,
            retry_delay=retry_delay,
            retry_for=retry_for,
            max_retry_delay=max_retry_delay,
            resolve=resolve,
        )
        self.holder = holder or replica_name()
        self.lease = journal.lease_seconds if lease is None else lease
        self.poll = poll
        self._doorbell = Doorbell(poll)
        self._tasks: list[asyncio.Task] = []
        self._busy: set[asyncio.Task] = set()
        self._stopping = False
        self._lanes: dict[str, asyncio.Task] = {}  # lane -> the run of its head here (read by the lease keeper too)
        self._guard = threading.Lock()  # around each change of _lanes and the lease keeper's copy of it
        self._waiting: dict[str, list[tuple[str, str | None]]] = {}
        self._keeper: LeaseKeeper | None = None
        self._listener: WorkListener | None = None
        self._backlog = 0  # the shared backlog as last read

    async def start(self) -> int:
        """Start the workers, the lease keeper and the listener that wakes idle workers when any replica commits
        work; nothing to resume here: unfinished rows are claimed."""
        await self._present()
        loop = asyncio.get_running_loop()
        self._listener = self.journal.listen(lambda: loop.call_soon_threadsafe(self._doorbell.ring))
        self._keeper = self.journal.keep_leases(
            self.holder,
            lease=self.lease,
            every=self.lease / HEARTBEATS_PER_LEASE,
            held=self._running,
            on_renewal=lambda renewal: loop.call_soon_threadsafe(self._renewed, renewal),
        )
        self._tasks = [asyncio.create_task(self._work(), name=f"replica-worker-{i}") for i in range(self.concurrency)]
        logs.event("replica started", holder=self.holder, lease=self.lease, workers=self.concurrency)
        return 0

    def submit(self, queued: object) -> None:
        """This replica recorded a delivery: look for work now (the notification would come a little later)."""
        self._doorbell.ring()

    @property
    def journal_error(self) -> str | None:
        return self.runner.journal_error

    def last_try(self, d: Delivery) -> bool:
        return self.runner.last_try(d)

    def waiting(self, lane: str) -> list[tuple[str, str | None]]:
        return list(self._waiting.get(lane, ()))

    def held(self) -> list[str]:
        return sorted(self._lanes)

    def renew_now(self) -> None:
        """Renew the leases now, not at the next renewal (tests)."""
        if self._keeper is not None:
            self._keeper.wake()

    def tasks_alive(self) -> bool:
        """False once every worker task has ended (a crash in the loop); True before they start."""
        return not self._tasks or any(not task.done() for task in self._tasks)

    async def backlog(self) -> int:
        """Deliveries waiting or running on any replica: the work is shared, so the backlog is the database's.
        When it cannot be read in time (the database is away), the last one read."""
        try:
            self._backlog = await asyncio.wait_for(self.journal.unfinished_count(), BACKLOG_TIMEOUT)
        except Exception as exc:
            logs.event("could not read the shared backlog", logging.WARNING, error=f"{type(exc).__name__}: {exc}")
        return self._backlog

    async def _work(self) -> None:
        done: str | None = None  # the lane this worker ran last: handed back in the same round trip as the claim
        while not self._stopping:
            # never a lane this replica runs, even one whose lease ran out before its renewal (which takes it back);
            # the lanes are read on the journal's thread, as late as possible, and the claim is done before this
            # loop goes on, so the closure sees this turn's `done`
            async def claim_next(done: str | None = done) -> Claim | None:
                return await self.journal.claim(self.holder, lease=self.lease, release=done, exclude=tuple(self._lanes))

            claim = await self.runner.write(claim_next)
            done = None
            if claim is None:
                # a ring while the claim looked was kept: work committed meanwhile is looked for at once
                await self._doorbell.wait()
                continue
            self._doorbell.ring()  # more may be waiting: the next idle worker looks
            lane = claim.lane
            run = asyncio.create_task(self._run(claim), name=f"run-{claim.delivery.id}")
            with self._guard:
                self._lanes[lane] = run
            self._busy.add(run)
            try:
                await run
            except asyncio.CancelledError:
                worker = asyncio.current_task()
                assert worker is not None  # this coroutine runs as a task
                if worker.cancelling():
                    raise  # this worker is stopping
                # the lease keeper cancelled the run: another replica took its lane
            finally:
                self._busy.discard(run)
                with self._guard:
                    self._lanes.pop(lane, None)
                self._waiting.pop(lane, None)
            done = lane
        if done is not None:  # stopping: no next claim to hand it back with
            await self.runner.write(lambda: self.journal.release(self.holder, done))

    async def _run(self, claim: Claim) -> None:
        d = claim.delivery
        if claim.taken_over:
            logs.event(
                "delivery taken over from a replica whose lease ran out",
                delivery=d.id,
                lane=d.lane,
                interrupted=d.interrupted,
            )
            if d.interrupted >= self.runner.max_attempts:
                await self.runner.give_up(d, "interrupted again and again")
                return
        if await self.runner.moved(d) is not None:
            # In the database, for whichever replica takes the PR's lane next (nothing is held in memory here).
            await self.runner.write(lambda: self.journal.retry_later(d.seq, time.time(), "moved to its PR's lane"))
            return
        self._waiting[d.lane] = list(claim.waiting)
        await self.runner.run(d, claim.attempt, claim.effects)  # a retry is a row: its time is in the journal

    def _running(self) -> dict[str, Any]:
        """The lanes run here and their runs (the lease keeper asks, on its thread)."""
        with self._guard:
            return dict(self._lanes)

    def _renewed(self, renewal: Renewal) -> None:
        """A renewal's answer, on this loop: a lease taken back is said; a run whose lane another replica took
        is stopped, unless it ended meanwhile (the lane handed back, perhaps run again here since)."""
        for lane in renewal.taken_back:
            logs.event(
                "lease ran out before its renewal; taken back, no other replica had taken the lane",
                logging.WARNING,
                lane=lane,
            )
            self.metrics.lease_lost(lane, TAKEN_BACK)
        for lane, lost in renewal.lost.items():
            run = self._lanes.get(lane)
            if run is None or run is not lost:
                continue
            logs.event("lease lost: another replica took this lane; its run here stops", logging.ERROR, lane=lane)
            self.metrics.lease_lost(lane, STOPPED)
            run.cancel()  # its ledger rows stay: whoever took the lane reconciles them
        self._count(renewal.replicas)

    async def _present(self) -> None:
        """Say this replica is at work, and pass on how many are (their count as last read if it cannot be read)."""
        try:
            count = await self.journal.present(self.holder, lease=self.lease)
        except Exception as exc:
            logs.event("could not count the replicas", logging.WARNING, error=f"{type(exc).__name__}: {exc}")
            return
        self._count(count)

    def _count(self, count: int) -> None:
        if count != self.replicas:
            logs.event("replicas at work", count=count, holder=self.holder)
        self.replicas = max(1, count)
        if self.on_replicas is not None:
            self.on_replicas(self.replicas)

    async def wait_idle(self, timeout: float | None = None) -> None:
        """Until no delivery is unfinished anywhere (tests and benchmarks)."""

        async def idle() -> None:
            while self._busy or await self.journal.oldest_pending() is not None:
                await asyncio.sleep(0.02)

        await asyncio.wait_for(idle(), timeout)

    async def drain(self, timeout: float) -> int:
        """SIGTERM: take no more work, let what runs finish up to `timeout`, then hand every lane back at once."""
        self._stopping = True
        self._doorbell.ring_all()
        if self._listener is not None:
            await asyncio.to_thread(self._listener.stop)
        await finish_in_flight(list(self._busy), self._tasks, timeout)
        if self._keeper is not None:  # renewing until the runs have ended: a drain may outlast a lease
            await asyncio.to_thread(self._keeper.stop)
        try:
            await self.journal.absent(self.holder)
            released = await self.journal.release(self.holder)
        except Exception as exc:  # the database is away: the leases run out on their own
            logs.event("could not hand the leases back", logging.WARNING, error=f"{type(exc).__name__}: {exc}")
            return 0
        if released:
            logs.event("leases handed back", lanes=len(released))
        return len(released)
