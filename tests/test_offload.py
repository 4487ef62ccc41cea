"""Big pure checks in a worker process (bot/core/offload.py): apart from the loop, replaced when it dies or hangs."""

from __future__ import annotations

import os
import time

import pytest

from bot.core import offload


def pid_of(_data: bytes) -> int:
    return os.getpid()


def die(_data: bytes) -> None:
    os._exit(3)


def hang(_data: bytes) -> None:
    time.sleep(30)


def allocate(_data: bytes) -> int:
    return len(bytearray(2 * offload.WORKER_MEMORY))


@pytest.fixture(autouse=True)
def fresh_worker():
    yield
    offload.shutdown()


async def test_a_small_input_is_checked_in_place_and_a_big_one_in_the_worker():
    small = b"x" * (offload.IN_PROCESS_BYTES - 1)
    big = b"x" * offload.IN_PROCESS_BYTES
    assert await offload.run(pid_of, small, size=len(small)) == os.getpid()
    worker = await offload.run(pid_of, big, size=len(big))
    assert worker != os.getpid()
    assert await offload.run(pid_of, big, size=len(big)) == worker, "one worker, kept between checks"


async def test_a_worker_that_dies_is_a_failure_of_that_check_and_the_next_gets_a_new_worker():
    big = b"x" * offload.IN_PROCESS_BYTES
    first = await offload.run(pid_of, big, size=len(big))
    with pytest.raises(offload.OffloadFailed):
        await offload.run(die, big, size=len(big))
    assert await offload.run(pid_of, big, size=len(big)) not in (first, os.getpid())


async def test_a_check_that_hangs_is_abandoned_and_its_worker_killed(monkeypatch):
    monkeypatch.setattr(offload, "WORKER_SECONDS", 0.5)
    big = b"x" * offload.IN_PROCESS_BYTES
    started = time.monotonic()
    with pytest.raises(offload.OffloadFailed):
        await offload.run(hang, big, size=len(big))
    assert time.monotonic() - started < 10
    assert await offload.run(pid_of, big, size=len(big)) != os.getpid()


async def test_a_memory_bomb_ends_in_the_worker():
    big = b"x" * offload.IN_PROCESS_BYTES
    with pytest.raises(MemoryError):
        await offload.run(allocate, big, size=len(big))
