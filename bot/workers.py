"""Workers over the journal: one PR's deliveries in arrival order, different PRs concurrently."""

from __future__ import annotations

import asyncio
import collections
import logging
import traceback
from typing import Awaitable, Callable

from bot import logs
from bot.journal import DONE, FAILED, Delivery, Journal
from bot.metrics import Metrics

Process = Callable[[Delivery], Awaitable[None]]


class Workers:
    def __init__(self, journal: Journal, process: Process, metrics: Metrics, *, concurrency: int = 8,
                 max_attempts: int = 3, retry_delay: float = 2.0):
        self.journal = journal
        self.process = process
        self.metrics = metrics
        self.concurrency = concurrency
        self.max_attempts = max_attempts
        self.retry_delay = retry_delay
        self._lanes: dict[str, collections.deque[Delivery]] = {}
        self._ready: asyncio.Queue[str] = asyncio.Queue()
        self._tasks: list[asyncio.Task] = []
        self._busy: set[asyncio.Task] = set()
        self._idle = asyncio.Event()
        self._idle.set()
        self._stopping = False
        self.pending = 0

    async def start(self) -> int:
        """Resume what the journal holds unfinished, then start the workers; returns how many were resumed."""
        resumed = await self.journal.unfinished()
        for delivery in resumed:
            self.submit(delivery)
        self._tasks = [asyncio.create_task(self._work(), name=f"worker-{i}") for i in range(self.concurrency)]
        if resumed:
            logs.event("resuming unfinished deliveries", count=len(resumed))
        return len(resumed)

    def submit(self, delivery: Delivery) -> None:
        self.pending += 1
        self._idle.clear()
        self.metrics.backlog.set(self.pending)
        lane = self._lanes.get(delivery.lane)
        if lane is not None:
            lane.append(delivery)  # the lane is queued or running: it picks this up in turn
            return
        self._lanes[delivery.lane] = collections.deque([delivery])
        self._ready.put_nowait(delivery.lane)

    async def _work(self) -> None:
        while not self._stopping:
            name = await self._ready.get()
            lane = self._lanes[name]
            task = asyncio.current_task()
            self._busy.add(task)
            try:
                await self._run(lane[0])
            except Exception as exc:  # the journal itself failed: the row stays unfinished and resumes at start
                logs.event("worker could not record a delivery", logging.ERROR, delivery=lane[0].id,
                           error=f"{type(exc).__name__}: {exc}")
            finally:
                self._busy.discard(task)
            lane.popleft()
            self.pending -= 1
            self.metrics.backlog.set(self.pending)
            if lane:
                self._ready.put_nowait(name)
            else:
                del self._lanes[name]
            if self.pending == 0:
                self._idle.set()

    async def _run(self, d: Delivery) -> None:
        with logs.context(delivery=d.id, event=d.event, action=d.action, repo=d.repo, pr=d.number):
            while True:
                attempt = await self.journal.start(d.seq)
                if attempt > self.max_attempts:  # interrupted again and again: stop, don't crash-loop
                    await self._fail(d, f"gave up after {attempt - 1} attempts")
                    return
                try:
                    await self.process(d)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    error = f"{type(exc).__name__}: {exc}"
                    if attempt >= self.max_attempts:
                        await self._fail(d, error, traceback.format_exc(limit=8))
                        return
                    delay = self.retry_delay * 2 ** (attempt - 1)
                    logs.event("delivery failed, will retry", logging.WARNING, attempt=attempt, error=error,
                               retry_in=delay)
                    await asyncio.sleep(delay)
                    continue
                await self.journal.finish(d.seq, DONE)
                self.metrics.deliveries.labels(d.event, "done").inc()
                logs.event("delivery done", attempt=attempt)
                return

    async def _fail(self, d: Delivery, error: str, trace: str | None = None) -> None:
        await self.journal.finish(d.seq, FAILED, error)
        self.metrics.deliveries.labels(d.event, "failed").inc()
        logs.event("delivery failed", logging.ERROR, error=error, trace=trace)

    async def wait_idle(self, timeout: float | None = None) -> None:
        await asyncio.wait_for(self._idle.wait(), timeout)

    async def drain(self, timeout: float) -> int:
        """Stop taking work, let in-flight deliveries finish up to `timeout`; the rest stays for the next start."""
        self._stopping = True
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
