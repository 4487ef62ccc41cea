"""bench/gate_latency.py runs end to end at a small size: one dispatch per PR, and the figures lines print."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import gate_latency  # noqa: E402


def test_five_prs_give_five_dispatches_and_the_figures(capsys):
    assert gate_latency.main(["--prs", "5"]) == 0
    out = capsys.readouterr().out
    assert "labeled -> dispatch, warm, 5 PRs unpaced: median " in out
    assert "labeled -> status comment written, warm, 5 PRs unpaced: median " in out
    assert "p99 " in out and "max " in out and "throughput: 5 dispatches" in out
    assert "GitHub requests per labeled PR: median " in out
    assert "runs: 5 for 5 PRs (5 PRs with exactly one)" in out
    assert "checked: exactly 5 runs" in out
