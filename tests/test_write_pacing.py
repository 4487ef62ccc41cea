"""SWEEPBOT_WRITES_PER_MINUTE: parsed by Settings.from_env, wired to the live App's WritePacer; 0 is unpaced."""

from __future__ import annotations

import pytest

from bot.app import cli
from bot.core.config import ConfigError, Settings
from bot.github.client import WritePacer
from bot.telemetry.metrics import Metrics
from harness import Sleeps


def from_env(**env: str) -> Settings:
    return Settings.from_env(env, dotenv=False)


@pytest.mark.parametrize("raw, expected", [
    (None, 80), ("", 80), ("  ", 80), ("0", 0), ("80", 80), ("120", 120), (" 40\n", 40), ("007", 7),
], ids=["unset", "blank", "spaces", "zero", "eighty", "more", "padded", "leading-zeros"])
def test_writes_per_minute_from_env(raw, expected):
    env = {} if raw is None else {"SWEEPBOT_WRITES_PER_MINUTE": raw}
    assert from_env(**env).writes_per_minute == expected


@pytest.mark.parametrize("raw", ["-1", "1.5", "eighty", "80/min", "1e3", "٣", "+5"],
                         ids=["negative", "fraction", "word", "unit", "exponent", "arabic-digit", "plus-sign"])
def test_bad_writes_per_minute_is_a_clear_error(raw):
    with pytest.raises(ConfigError) as caught:
        from_env(SWEEPBOT_WRITES_PER_MINUTE=raw)
    assert caught.value.errors == [
        f"SWEEPBOT_WRITES_PER_MINUTE must be a whole number of writes, 0 or more (0: unpaced), got {raw!r}"]


def test_cli_reports_a_bad_setting_and_exits_2(monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)  # no .env here
    monkeypatch.setenv("SWEEPBOT_WRITES_PER_MINUTE", "lots")
    monkeypatch.setenv("SWEEPBOT_DB", str(tmp_path / "j.db"))
    assert cli.main(["deliveries"]) == 2
    err = capsys.readouterr().err
    assert err == ("sweepbot: SWEEPBOT_WRITES_PER_MINUTE must be a whole number of writes, 0 or more (0: unpaced),"
                   " got 'lots'\n")


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
