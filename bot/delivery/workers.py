"""Workers over the journal: one PR's deliveries in arrival order, different PRs concurrently.

The backlog in memory is sequence numbers and lanes; payloads stay in the journal until a worker runs them.
A delivery that fails transiently waits in the journal (`not_before`) while its lane waits behind it, so order
holds across retries and restarts; a journal that cannot be written is retried in place until it can.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
import time
import traceback
from typing import Awaitable, Callable, TypeVar

from bot.telemetry import logs
from bot.delivery.failures import BUG, PERMANENT, TRANSIENT, classify, retry_delay
from bot.delivery.journal import DONE, FAILED, UNFINISHED, Delivery, Journal, Queued
from bot.rules.lanes import kind, unresolved_sha
from bot.telemetry.metrics import Metrics

Process = Callable[[Delivery, dict], Awaitable[None]]  # the delivery and its ledger rows
Resolve = Callable[[Delivery], Awaitable["int | None"]]
T = TypeVar("T")

RETRY_FOR = 6 * 3600.0  # transient failures are retried this long after the delivery arrived
MAX_RETRY_DELAY = 600.0
JOURNAL_RETRY_MAX = 30.0  # longest pause between tries of a journal write that keeps failing


class Workers:
    def __init__(self, journal: Journal, process: Process, metrics: Metrics, *, concurrency: int = 8,
                 max_attempts: int = 3, retry_delay: float = 2.0, retry_for: float = RETRY_FOR,
                 max_retry_delay: float = MAX_RETRY_DELAY, resolve: Resolve | None = None):
        self.journal = journal
        self.resolve = resolve
        self.process = process
        self.metrics = metrics
        self.concurrency = concurrency
        self.max_attempts = max_attempts
        self.retry_delay = retry_delay
        self.retry_for = retry_for
        self.max_retry_delay = max_retry_delay
        # A lane is its head; only a lane with more than one delivery has a deque (most PRs have one at a time).
        self._heads: dict[str, Queued] = {}
        self._behind: dict[str, collections.deque[Queued]] = {}
        self._ready: asyncio.Queue[str] = asyncio.Queue()
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._tasks: list[asyncio.Task] = []
        self._busy: set[asyncio.Task] = set()
        self._idle = asyncio.Event()
        self._idle.set()
        self._stopping = False
        self.pending = 0
        self.journal_error: str | None = None

    async def start(self) -> int:
        """Resume what the journal holds unfinished, then start the workers; returns how many were resumed."""
        given_up = await self.journal.recover(self.max_attempts)
        for delivery_id in given_up:
            logs.event("delivery failed: interrupted again and again", logging.ERROR, delivery=delivery_id)
            self.metrics.deliveries.labels("unknown", "failed").inc()
        resumed = await self.journal.unfinished()
        for queued in resumed:
            self.submit(queued)
        self._tasks = [asyncio.create_task(self._work(), name=f"worker-{i}") for i in range(self.concurrency)]
        if resumed:
            logs.event("resuming unfinished deliveries", count=len(resumed))
        return len(resumed)

    def submit(self, queued: Queued) -> None:
        self.pending += 1
        self._idle.clear()
        self.metrics.backlog.set(self.pending)
        if queued.lane in self._heads:  # the lane is queued, waiting or running: it picks this up in turn
            self._behind.setdefault(queued.lane, collections.deque()).append(queued)
            return
        self._heads[queued.lane] = queued
        self._schedule(queued.lane)

    def last_try(self, d: Delivery) -> bool:
        """Whether a transient failure of this attempt would be the last: the next try would fall past the
        retry window (so a handler can say "failed", not "retrying")."""
        soonest = min(self.max_retry_delay, self.retry_delay * 2 ** max(d.attempts - 1, 0)) * 0.8
        return time.time() + soonest - d.received_at > self.retry_for

    def waiting(self, lane: str) -> list[tuple[str, str | None]]:
        """The (event, action) of each delivery queued behind the head of `lane`, in order."""
        return [q.kind for q in self._behind.get(lane, ()) if q.kind is not None]

    def queued(self) -> list[Queued]:
        """Every delivery held in memory, lane by lane."""
        return [q for name, head in self._heads.items() for q in (head, *self._behind.get(name, ()))]

    def _schedule(self, name: str) -> None:
        head = self._heads[name]
        wait = (head.not_before or 0) - time.time()
        if wait <= 0:
            self._ready.put_nowait(name)
            return
        loop = asyncio.get_running_loop()
        self._timers[name] = loop.call_later(wait, self._wake, name)

    def _wake(self, name: str) -> None:
        self._timers.pop(name, None)
        if not self._stopping:
            self._ready.put_nowait(name)

    async def _work(self) -> None:
        while not self._stopping:
            name = await self._ready.get()
            task = asyncio.current_task()
            self._busy.add(task)
            try:
                later = await self._run(self._heads[name])
            finally:
                self._busy.discard(task)
            if later is not None:  # stays at the head of its lane: nothing behind it overtakes it
                self._heads[name] = dataclasses.replace(self._heads[name], not_before=later)
                self._schedule(name)
                continue
            self.pending -= 1
            self.metrics.backlog.set(self.pending)
            rest = self._behind.get(name)
            if rest:
                self._heads[name] = rest.popleft()
                if not rest:
                    del self._behind[name]
                self._schedule(name)
            else:
                del self._heads[name]
            if self.pending == 0:
                self._idle.set()

    async def _journal(self, op: Callable[[], Awaitable[T]]) -> T:
        """A journal operation, tried until it succeeds: the delivery is never skipped for a full disk."""
        pause = 0.1
        while True:
            try:
                result = await op()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
                if self.journal_error != error:
                    logs.event("journal write failed; trying again", logging.ERROR, error=error)
                self.journal_error = error
                await asyncio.sleep(pause)
                pause = min(pause * 2, JOURNAL_RETRY_MAX)
                continue
            if self.journal_error is not None:
                logs.event("journal writable again")
                self.journal_error = None
            return result

    async def _run(self, queued: Queued) -> float | None:
        """Run one delivery; returns when to try it again, or None once it is finished either way."""
        if self.resolve is not None and unresolved_sha(queued.lane):
            d = await self._journal(lambda: self.journal.load(queued.seq))
            if d is not None and d.status in UNFINISHED and await self._moved_to_its_pr(d):
                return None
        begun = await self._journal(lambda: self.journal.begin(queued.seq))
        if begun is None:
            return None  # finished meanwhile (e.g. `sweepbot redeliver` from another process)
        return await self._execute(*begun)

    async def _execute(self, d: Delivery, attempt: int, effects: dict) -> float | None:
        """Process a delivery this worker has begun; finish it, or schedule its retry (returned)."""
        with logs.context(delivery=d.id, event=d.event, action=d.action, repo=d.repo, pr=d.number):
            try:
                await self.process(d, effects)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                return await self._failed(d, attempt, exc)
            await self._journal(lambda: self.journal.finish(d.seq, DONE))
            self.metrics.deliveries.labels(d.event, "done").inc()
            logs.event("delivery done", attempt=attempt)
            return None

    async def _moved_to_its_pr(self, d: Delivery) -> bool:
        """Find the PR of a SHA-only delivery and move it to the end of that PR's lane."""
        try:
            number = await self.resolve(d)
        except Exception as exc:  # GitHub cannot say now: run it where it is rather than hold it
            logs.event("could not find the PR of a head SHA", logging.WARNING, delivery=d.id,
                       error=f"{type(exc).__name__}: {exc}")
            return False
        if number is None:
            return False
        name = await self._journal(lambda: self.journal.relane(d.seq, number))
        logs.event("delivery moved to its PR's lane", delivery=d.id, lane=name)
        await self._requeue(d, name)
        return True

    async def _requeue(self, d: Delivery, lane: str) -> None:
        """A delivery moved to `lane` waits there again, behind what the lane holds."""
        self.submit(Queued(d.seq, lane, kind=kind(d.event, d.action)))

    async def _failed(self, d: Delivery, attempt: int, exc: Exception) -> float | None:
        kind = classify(exc)
        error = f"{type(exc).__name__}: {exc}"
        trace = traceback.format_exc(limit=8)
        too_old = time.time() - d.received_at > self.retry_for
        if kind == PERMANENT or (kind == BUG and attempt >= self.max_attempts) or (kind == TRANSIENT and too_old):
            await self._journal(lambda: self.journal.finish(d.seq, FAILED, error))
            self.metrics.deliveries.labels(d.event, "failed").inc()
            logs.event("delivery failed", logging.ERROR, error=error, kind=kind, attempt=attempt, trace=trace)
            return None
        delay = retry_delay(kind, attempt, base=self.retry_delay, cap=self.max_retry_delay)
        not_before = time.time() + delay
        await self._journal(lambda: self.journal.retry_later(d.seq, not_before, error))
        self.metrics.deliveries.labels(d.event, "retrying").inc()
        logs.event("delivery failed, will retry", logging.WARNING, attempt=attempt, error=error, kind=kind,
                   retry_in=round(delay, 2), trace=trace if kind == BUG else None)
        return not_before

    async def wait_idle(self, timeout: float | None = None) -> None:
        await asyncio.wait_for(self._idle.wait(), timeout)

    async def drain(self, timeout: float) -> int:
        """Stop taking work, let in-flight deliveries finish up to `timeout`; the rest stays for the next start."""
        self._stopping = True
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        idle = [t for t in self._tasks if t not in self._busy]
        for task in idle:
            task.cancel()
        busy = list(self._busy)
        if busy:
            logs.event("draining in-flight deliveries", count=len(busy), timeout=timeout)
            await asyncio.wait(busy, timeout=timeout)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        left = self.pending
        if left:
            logs.event("left for the next start", count=left)
        return left


__all__ = ["Workers", "PERMANENT", "TRANSIENT", "BUG"]
