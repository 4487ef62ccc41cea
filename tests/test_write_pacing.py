"""SWEEPBOT_WRITES_PER_MINUTE: parsed by Settings.from_env, wired to the live App's WritePacer; 0 is unpaced."""

from __future__ import annotations

import asyncio

import pytest
from harness import Sleeps

from bot.app import cli
from bot.core.config import ConfigError, Settings
from bot.github.client import TRUSTED, UNTRUSTED, SharedWritePacer, Turns, WritePacer
from bot.telemetry.metrics import Metrics


def from_env(**env: str) -> Settings:
    return Settings.from_env(env, dotenv=False)


@pytest.mark.parametrize(
    "raw, expected",
    [
        (None, 80),
        ("", 80),
        ("  ", 80),
        ("0", 0),
        ("80", 80),
        ("120", 120),
        (" 40\n", 40),
        ("007", 7),
    ],
    ids=["unset", "blank", "spaces", "zero", "eighty", "more", "padded", "leading-zeros"],
)
def test_writes_per_minute_from_env(raw, expected):
    env = {} if raw is None else {"SWEEPBOT_WRITES_PER_MINUTE": raw}
    assert from_env(**env).writes_per_minute == expected


@pytest.mark.parametrize(
    "raw",
    ["-1", "1.5", "eighty", "80/min", "1e3", "٣", "+5"],
    ids=["negative", "fraction", "word", "unit", "exponent", "arabic-digit", "plus-sign"],
)
def test_bad_writes_per_minute_is_a_clear_error(raw):
    with pytest.raises(ConfigError) as caught:
        from_env(SWEEPBOT_WRITES_PER_MINUTE=raw)
    assert caught.value.errors == [
        f"SWEEPBOT_WRITES_PER_MINUTE must be a whole number of writes, 0 or more (0: unpaced), got {raw!r}"
    ]


def test_cli_reports_a_bad_setting_and_exits_2(monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)  # no .env here
    monkeypatch.setenv("SWEEPBOT_WRITES_PER_MINUTE", "lots")
    monkeypatch.setenv("SWEEPBOT_DB", str(tmp_path / "j.db"))
    assert cli.main(["deliveries"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "sweepbot: SWEEPBOT_WRITES_PER_MINUTE must be a whole number of writes, 0 or more (0: unpaced), got 'lots'\n"
    )


async def test_pacer_with_limit_zero_never_sleeps():
    """Regression: WritePacer(limit=0) raised IndexError on its first write (an empty deque was read)."""
    sleeps = Sleeps()
    pacer = WritePacer(limit=0, window=60.0, sleep=sleeps)
    for _ in range(1000):
        await pacer.acquire()
    assert sleeps.calls == [] and pacer.waited == 0.0


async def test_pacer_with_a_limit_still_waits():
    sleeps = Sleeps()
    pacer = WritePacer(limit=2, window=60.0, sleep=sleeps)
    for _ in range(3):
        await pacer.acquire()
    assert len(sleeps.calls) == 1


@pytest.mark.parametrize("raw, limit", [("0", 0), ("5", 5), (None, 80)])
async def test_live_app_paces_writes_by_the_setting(raw, limit, capsys):
    env = {"APP_ID": "1", "PRIVATE_KEY": "unused", "WEBHOOK_SECRET": "s"}
    if raw is not None:
        env["SWEEPBOT_WRITES_PER_MINUTE"] = raw
    settings = from_env(**env)
    app, fake = cli.build_github(settings, Metrics(), out=None)
    try:
        assert fake is None  # live: the real GitHubApp
        assert app._pacer_factory().limit == limit
        assert app._pacer_factory() is not app._pacer_factory()  # one pacer per installation
    finally:
        await app.close()


async def test_sandbox_is_unpaced(capsys):
    app, fake = cli.build_github(from_env(SWEEPBOT_WRITES_PER_MINUTE="3"), Metrics(), out=None)
    try:
        assert fake is not None
        assert app._pacer_factory().limit == 0  # the in-memory GitHub has no write limits to respect
    finally:
        await app.close()


# -- outsiders go last ---------------------------------------------------------------------------------------


class HeldSleeps:
    """Sleeps that last until the test lets them end, so writes queue behind the pacer."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        await self.release.wait()


async def test_a_writers_write_goes_before_every_outsiders_waiting():
    """Regression: refused commands' writes queued in the one installation pacer in arrival order, so an
    outsider editing a refused command 24 times a second delayed a maintainer's dispatch by 55 s."""
    sleeps = HeldSleeps()
    pacer = WritePacer(limit=1, window=60.0, sleep=sleeps)
    await pacer.acquire()  # the window's one write is spent: the next waits for it
    order: list[str] = []

    async def write(name: str, priority: int) -> None:
        await pacer.acquire(priority)
        order.append(name)

    waiting = [asyncio.create_task(write(f"outsider-{i}", UNTRUSTED)) for i in range(5)]
    await asyncio.sleep(0)
    waiting.append(asyncio.create_task(write("maintainer", TRUSTED)))
    await asyncio.sleep(0)
    sleeps.release.set()
    await asyncio.gather(*waiting)
    assert order[:2] == ["outsider-0", "maintainer"], "the one already sleeping for its slot, then the writer"
    assert order[2:] == [f"outsider-{i}" for i in range(1, 5)]


async def test_a_cancelled_wait_hands_its_turn_on():
    turns = Turns()
    await turns.acquire()
    first = asyncio.create_task(turns.acquire(UNTRUSTED))
    second = asyncio.create_task(turns.acquire(UNTRUSTED))
    await asyncio.sleep(0)
    first.cancel()
    turns.release()
    await asyncio.wait_for(second, 5)
    assert turns.waiting() == 0


async def test_outsiders_together_take_at_most_a_quarter_of_a_shared_budget():
    """Across replicas the slots are reserved in the database in the order asked: an untrusted write first takes
    one of its own, smaller budget."""
    asked: list[tuple[str, int]] = []

    async def budget(key: str, limit: int, window: float) -> float:
        asked.append((key, limit))
        return 0.0

    pacer = SharedWritePacer(budget, "installation:1", limit=80)
    await pacer.acquire(TRUSTED)
    await pacer.acquire(UNTRUSTED)
    assert asked == [("installation:1", 80), ("installation:1:untrusted", 20), ("installation:1", 80)]
