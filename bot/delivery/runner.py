"""Running one delivery that a scheduler took: the processor called, the outcome written, a retry scheduled.

Both schedulers own one `Runner` (composition): the in-memory scheduler (`bot.delivery.workers.Workers`, one
process) and the lease scheduler for replicas (`bot.delivery.replica_workers.ReplicaWorkers`, PostgreSQL). They
decide what to take and when; the runner does the same for whatever they took: a SHA-only delivery moved to its
PR's lane once GitHub names the PR, the processor called with the delivery and its ledger, the delivery finished,
retried on a growing schedule or failed (bot.delivery.failures says which), and every journal write tried again
in place until it goes through, so a delivery is never skipped for a full disk.
"""

from __future__ import annotations

import asyncio
import logging
import time
import traceback
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from bot.delivery.failures import BUG, PERMANENT, TRANSIENT, classify, retry_delay
from bot.delivery.journal import DONE, FAILED, Delivery, JournalBackend, Queued
from bot.delivery.lanes import unresolved_sha
from bot.telemetry import logs
from bot.telemetry.metrics import Metrics, counted_event

Process = Callable[[Delivery, dict], Awaitable[None]]  # the delivery and its ledger rows
Resolve = Callable[[int, str, str], Awaitable["int | None"]]  # (installation, repo, head SHA) -> its open PR
T = TypeVar("T")

RETRY_FOR = 6 * 3600.0  # transient failures are retried this long after the delivery arrived
MAX_RETRY_DELAY = 600.0
JOURNAL_RETRY_MAX = 30.0  # longest pause between tries of a journal write that keeps failing


class Scheduler(Protocol):
    """What the runtime and the server use of a scheduler (`Workers`, `ReplicaWorkers`)."""

    runner: Runner
    concurrency: int

    @property
    def journal_error(self) -> str | None: ...
    async def start(self) -> int: ...
    def submit(self, queued: Queued) -> None: ...
    def waiting(self, lane: str) -> list[tuple[str, str | None]]: ...
    def last_try(self, d: Delivery) -> bool: ...
    def tasks_alive(self) -> bool: ...
    async def backlog(self) -> int: ...
    async def wait_idle(self, timeout: float | None = None) -> None: ...
    async def drain(self, timeout: float) -> int: ...


async def finish_in_flight(
    busy: list[asyncio.Task], tasks: list[asyncio.Task], timeout: float, *others: asyncio.Task
) -> None:
    """A scheduler's drain: let the `busy` tasks finish up to `timeout`, then cancel every task and wait for all."""
    if busy:
        logs.event("draining in-flight deliveries", count=len(busy), timeout=timeout)
        await asyncio.wait(busy, timeout=timeout)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, *others, return_exceptions=True)


class Runner:
    def __init__(
        self,
        journal: JournalBackend,
        process: Process,
        metrics: Metrics,
        *,
        max_attempts: int = 3,
        retry_delay: float = 2.0,
        retry_for: float = RETRY_FOR,
        max_retry_delay: float = MAX_RETRY_DELAY,
        resolve: Resolve | None = None,
    ):
        self.journal = journal
        self.process = process
        self.metrics = metrics
        self.max_attempts = max_attempts
        self.retry_delay = retry_delay
        self.retry_for = retry_for
        self.max_retry_delay = max_retry_delay
        self.resolve = resolve
        self.journal_error: str | None = None  # the journal write failing right now, shown in /healthz

    async def write(self, op: Callable[[], Awaitable[T]]) -> T:
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

    def last_try(self, d: Delivery) -> bool:
        """Whether a transient failure of this attempt would be the last: the next try would fall past the
        retry window (so a handler can say "failed", not "retrying")."""
        soonest = min(self.max_retry_delay, self.retry_delay * 2 ** max(d.attempts - 1, 0)) * 0.8
        return time.time() + soonest - d.received_at > self.retry_for

    def may_move(self, lane: str) -> bool:
        """Whether a delivery of `lane` may belong to another: a SHA-only lane, and a way to ask GitHub."""
        return self.resolve is not None and unresolved_sha(lane) is not None

    async def moved(self, d: Delivery) -> str | None:
        """A SHA-only delivery (a fork's run names no PR) whose PR GitHub now names: moved to that PR's lane in
        the journal; returns the lane, for the scheduler to queue it there. None when it stays where it is."""
        found = unresolved_sha(d.lane) if self.resolve is not None else None
        if self.resolve is None or found is None or d.installation is None:
            return None
        try:
            number = await self.resolve(d.installation, *found)
        except Exception as exc:  # GitHub cannot say now: run it where it is rather than hold it
            logs.event(
                "could not find the PR of a head SHA",
                logging.WARNING,
                delivery=d.id,
                error=f"{type(exc).__name__}: {exc}",
            )
            return None
        if number is None:
            return None
        name = await self.write(lambda: self.journal.relane(d.seq, number))
        logs.event("delivery moved to its PR's lane", delivery=d.id, lane=name)
        return name

    async def run(self, d: Delivery, attempt: int, effects: dict) -> float | None:
        """Process a delivery the scheduler has begun; finish it, or schedule its retry (returned)."""
        with logs.context(delivery=d.id, event=d.event, action=d.action, repo=d.repo, pr=d.number):
            try:
                await self.process(d, effects)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                return await self._failed(d, attempt, exc)
            await self.write(lambda: self.journal.finish(d.seq, DONE))
            self.metrics.deliveries.labels(counted_event(d.event), "done").inc()
            logs.event("delivery done", attempt=attempt)
            return None

    async def give_up(self, d: Delivery, error: str) -> None:
        """Fail a delivery without running it (interrupted by crashes again and again)."""
        await self.write(lambda: self.journal.finish(d.seq, FAILED, error))
        logs.event("delivery failed: interrupted again and again", logging.ERROR, delivery=d.id)
        self.metrics.deliveries.labels(counted_event(d.event), "failed").inc()

    async def _failed(self, d: Delivery, attempt: int, exc: Exception) -> float | None:
        kind = classify(exc)
        error = f"{type(exc).__name__}: {exc}"
        trace = traceback.format_exc(limit=8)
        too_old = time.time() - d.received_at > self.retry_for
        if kind == PERMANENT or (kind == BUG and attempt >= self.max_attempts) or (kind == TRANSIENT and too_old):
            await self.write(lambda: self.journal.finish(d.seq, FAILED, error))
            self.metrics.deliveries.labels(counted_event(d.event), "failed").inc()
            logs.event("delivery failed", logging.ERROR, error=error, kind=kind, attempt=attempt, trace=trace)
            return None
        delay = retry_delay(kind, attempt, base=self.retry_delay, cap=self.max_retry_delay)
        not_before = time.time() + delay
        await self.write(lambda: self.journal.retry_later(d.seq, not_before, error))
        self.metrics.deliveries.labels(counted_event(d.event), "retrying").inc()
        logs.event(
            "delivery failed, will retry",
            logging.WARNING,
            attempt=attempt,
            error=error,
            kind=kind,
            retry_in=round(delay, 2),
            trace=trace if kind == BUG else None,
        )
        return not_before
