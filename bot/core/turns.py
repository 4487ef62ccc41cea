"""One turn at a time per key, among the deliveries this process runs: an asyncio lock per key and event loop.

Lanes keep one PR's deliveries in order; some decisions span PRs (the merges onto one base branch, the sweeps of
one runner pool) and take a turn here instead. A lock belongs to the event loop that made it, so each loop (a
test's, a restarted worker's) has its own; waiters are woken in the order they asked."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Hashable

_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Hashable, asyncio.Lock]] = weakref.WeakKeyDictionary()


def turn(key: Hashable) -> asyncio.Lock:
    """The lock of `key` on the running event loop."""
    return _locks.setdefault(asyncio.get_running_loop(), {}).setdefault(key, asyncio.Lock())
