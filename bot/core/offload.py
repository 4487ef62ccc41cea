"""Pure checks whose cost grows with a big input (a changelog of megabytes) run in a worker process: no input
holds the event loop, or the GIL the loop needs, and a memory bomb ends in the worker, not in the bot."""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import multiprocessing
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from bot.telemetry import logs

T = TypeVar("T")

IN_PROCESS_BYTES = 128 * 1024  # below this a check costs a few milliseconds: run it where it is asked for
WORKER_MEMORY = 1024 * 1024 * 1024  # the worker's address space; past it a check ends in MemoryError there
WORKER_SECONDS = 60.0  # a check still running after this is abandoned and its worker replaced

_lock = threading.Lock()
_pool: concurrent.futures.ProcessPoolExecutor | None = None


class OffloadFailed(Exception):
    """The worker died or took too long: the input, not GitHub, is why; retrying would fail the same way."""


def _limit_memory() -> None:
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY, WORKER_MEMORY))
    except (ImportError, ValueError, OSError):  # not on this platform, or already lower
        pass


def _executor() -> concurrent.futures.ProcessPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            # spawn, not fork: the bot has threads (the workers' loop, the journal's writer)
            _pool = concurrent.futures.ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn"), initializer=_limit_memory
            )
        return _pool


def _discard(pool: concurrent.futures.ProcessPoolExecutor) -> None:
    global _pool
    with _lock:
        if _pool is pool:
            _pool = None
    # ProcessPoolExecutor has no way to stop a worker that is busy: kill it (its processes are private; read
    # them before shutdown() forgets them)
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.kill()


async def run(fn: Callable[..., T], *args: Any, size: int, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)`: here when `size` (the input's bytes) is small, else in the worker process."""
    if size < IN_PROCESS_BYTES:
        return fn(*args, **kwargs)
    pool = _executor()
    future = asyncio.get_running_loop().run_in_executor(pool, functools.partial(fn, *args, **kwargs))
    try:
        return await asyncio.wait_for(future, WORKER_SECONDS)
    except (TimeoutError, concurrent.futures.process.BrokenProcessPool) as exc:
        logs.event(
            "offloaded check failed; its worker is replaced",
            check=getattr(fn, "__name__", "?"),
            error=type(exc).__name__,
            bytes=size,
        )
        _discard(pool)
        raise OffloadFailed(f"{getattr(fn, '__name__', 'the check')} did not finish on {size} bytes") from exc


def shutdown() -> None:
    """Stop the worker (at the bot's stop; a check still running is one its delivery retries); the next check
    starts a new one."""
    pool = _pool
    if pool is not None:
        _discard(pool)
