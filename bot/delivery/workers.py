"""The in-memory scheduler (one process): one PR's deliveries in arrival order, different PRs concurrently.

It decides what runs and when; the shared `bot.delivery.runner.Runner` runs it (the processor, the outcome,
retries, moving SHA-only deliveries). The backlog in memory is sequence numbers and lanes; payloads stay in the
journal until a worker runs them. A delivery that fails transiently waits in the journal (`not_before`) while its
lane waits behind it, so order holds across retries and restarts.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
import time

from bot.delivery.failures import BUG, PERMANENT, TRANSIENT
from bot.delivery.journal import UNFINISHED, Delivery, JournalBackend, Queued
from bot.delivery.lanes import kind
from bot.delivery.runner import MAX_RETRY_DELAY, RETRY_FOR, Process, Resolve, Runner, finish_in_flight
from bot.telemetry import logs
from bot.telemetry.metrics import Metrics

ADOPT_EVERY = 1.0  # how often the journal is read for deliveries `sweepbot redeliver` queued from another process


class Workers:
    def __init__(
        self,
        journal: JournalBackend,
        process: Process,
        metrics: Metrics,
        *,
        concurrency: int = 8,
        max_attempts: int = 3,
        retry_delay: float = 2.0,
        retry_for: float = RETRY_FOR,
        max_retry_delay: float = MAX_RETRY_DELAY,
        resolve: Resolve | None = None,
        adopt_every: float = ADOPT_EVERY,
    ):
        self.journal = journal
        self.adopt_every = adopt_every
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
        self.pending = 0  # deliveries submitted and not yet finished: the backlog

    async def start(self) -> int:
        """Resume what the journal holds unfinished, then start the workers; returns how many were resumed."""
        given_up = await self.journal.recover(self.runner.max_attempts)
        for delivery_id in given_up:
            logs.event("delivery failed: interrupted again and again", logging.ERROR, delivery=delivery_id)
            self.metrics.deliveries.labels("unknown", "failed").inc()
        resumed = await self.journal.unfinished()
        for queued in resumed:
            self.submit(queued)
        self._tasks = [asyncio.create_task(self._work(), name=f"worker-{i}") for i in range(self.concurrency)]
        self._tasks.append(asyncio.create_task(self._adopt(), name="adopt-requeued"))
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

    @property
    def journal_error(self) -> str | None:
        return self.runner.journal_error

    def last_try(self, d: Delivery) -> bool:
        return self.runner.last_try(d)

    def tasks_alive(self) -> bool:
        """False once every worker task has ended (a crash in the loop); True before they start."""
        return not self._tasks or any(not task.done() for task in self._tasks)

    async def backlog(self) -> int:
        """Deliveries waiting or running here (this process is the only one on its journal)."""
        return self.pending

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
            assert task is not None  # this coroutine runs as a task
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

    async def _adopt(self) -> None:
        """Take in the deliveries `sweepbot redeliver` queued again in the journal: each joins its lane's
        order here (behind what the lane holds in memory), never running beside a delivery of its lane."""
        while not self._stopping:
            await asyncio.sleep(self.adopt_every)
            try:
                found = await self.journal.requeued()
            except Exception as exc:  # the journal is away: the workers report it; look again later
                logs.event("could not read requeued deliveries", logging.WARNING, error=f"{type(exc).__name__}: {exc}")
                continue
            held = {q.seq for q in self.queued()}
            for queued in found:
                if queued.seq not in held and not self._stopping:
                    logs.event("requeued delivery taken in", seq=queued.seq, lane=queued.lane)
                    self.submit(queued)

    async def _run(self, queued: Queued) -> float | None:
        """Run the head of a lane; returns when to try it again, or None once it is done with here."""
        if self.runner.may_move(queued.lane):
            d = await self.runner.write(lambda: self.journal.load(queued.seq))
            if d is not None and d.status in UNFINISHED:
                lane = await self.runner.moved(d)
                if lane is not None:  # it waits in its PR's lane, behind what that lane holds
                    self.submit(Queued(d.seq, lane, kind=kind(d.event, d.action)))
                    return None
        begun = await self.runner.write(lambda: self.journal.begin(queued.seq))
        if begun is None:
            return None  # finished meanwhile (e.g. `sweepbot redeliver` from another process)
        return await self.runner.run(*begun)

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
        await finish_in_flight(list(self._busy), self._tasks, timeout)
        left = self.pending
        if left:
            logs.event("left for the next start", count=left)
        return left


__all__ = ["Workers", "PERMANENT", "TRANSIENT", "BUG"]
