"""Reads of GitHub kept in a cache and made once: callers asking for the same key at once share one request."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Hashable, MutableMapping
from typing import Any


class SharedReads:
    """Answers kept in `cache` (a dict that lives as long as one delivery, or a process's TTL cache), each read
    once: a caller arriving while its key is in flight waits for the same request, so a burst of deliveries that
    all miss the cache at once (a cold process, an expired entry) makes one request, not one each.

    A failure reaches every waiter and is not kept: the next caller asks again. A waiter cancelled does not
    cancel the read the others wait for. `forget` drops the answer, and a read in flight then is not kept.
    Reads are shared within one event loop (a future belongs to its loop)."""

    def __init__(self, cache: MutableMapping[Any, Any] | None = None):
        self.cache: MutableMapping[Any, Any] = cache if cache is not None else {}
        self._pending: dict[tuple[int, Hashable], asyncio.Future] = {}

    async def get(self, key: Hashable, read: Callable[[], Awaitable[Any]]) -> Any:
        try:
            return self.cache[key]
        except KeyError:
            pass
        slot = (id(asyncio.get_running_loop()), key)
        pending = self._pending.get(slot)
        if pending is None:
            pending = self._pending[slot] = asyncio.ensure_future(self._read(slot, key, read))
            pending.add_done_callback(functools.partial(self._finished, slot))
        return await asyncio.shield(pending)

    def forget(self, key: Hashable) -> None:
        self.cache.pop(key, None)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._pending.pop((id(loop), key), None)

    async def _read(self, slot: tuple[int, Hashable], key: Hashable, read: Callable[[], Awaitable[Any]]) -> Any:
        value = await read()
        if self._pending.get(slot) is asyncio.current_task():  # not forgotten while it was in flight
            self.cache[key] = value
        return value

    def _finished(self, slot: tuple[int, Hashable], done: asyncio.Future) -> None:
        if self._pending.get(slot) is done:
            del self._pending[slot]
        if not done.cancelled():
            done.exception()  # its waiters may all have gone; the failure was theirs, not the loop's to report
