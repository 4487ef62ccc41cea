"""bench/connections.py still runs: a small burst through each set-up prints its figures."""

from __future__ import annotations

from bench import connections


def test_a_small_run_prints_every_set_up(capsys):
    assert connections.main(["--requests", "30", "--in-flight", "20", "--latency", "0.01", "--bursts", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("connections: 30 GETs a burst, at most 20 under way")
    names = [line.split(":")[0] for line in lines[1:]]
    assert names == [
        "one pool, httpx's default (20 kept open)",
        "one pool keeping 20 open",
        "ConnectionShards.for_budget (pools of 15)",
    ]
    shards = lines[3]
    assert "0 connections opened a burst" in shards, shards
