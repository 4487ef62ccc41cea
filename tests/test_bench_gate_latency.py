"""bench/gate_latency.py runs end to end at a small size: one dispatch per PR, and the figures lines print."""

from __future__ import annotations

import sys
from pathlib import Path

from bench import gate_latency

# --live imports its bench siblings as a script run from bench/ finds them (`from slow_github import ...`).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))


def test_five_prs_give_five_dispatches_and_the_figures(capsys):
    assert gate_latency.main(["--prs", "5"]) == 0
    out = capsys.readouterr().out
    assert "labeled -> dispatch, warm, 5 PRs unpaced: median " in out
    assert "labeled -> status comment written, warm, 5 PRs unpaced: median " in out
    assert "p99 " in out and "max " in out and "throughput: 5 dispatches" in out
    assert "GitHub requests per labeled PR: median " in out
    assert "runs: 5 for 5 PRs (5 PRs with exactly one)" in out
    assert "checked: exactly 5 runs" in out


def test_live_the_bot_in_its_own_processes_gives_one_dispatch_per_pr_and_the_figures(capsys):
    """--live: the intake, the workers' process and the fake GitHub each in a process of their own; the times
    come from the fake's log of requests, each stamped as it arrived."""
    assert gate_latency.main(["--prs", "4", "--live", "--github-latency", "20", "--in-flight", "7"]) == 0
    out = capsys.readouterr().out
    assert "in a process of their own beside the intake's (live `sweepbot serve`)" in out
    assert "at most 7 GitHub requests under way at once" in out and "fake GitHub in a process of its own" in out
    assert "labeled -> dispatch, warm, 4 PRs unpaced: median " in out
    assert "GitHub requests: 60 for 4 PRs (15.0 a PR)" in out  # with the `sweep` check on the tested head
    assert "CPU from the first POST until drained, a PR: intake " in out and ", fake GitHub " in out
    assert "acks: {202: 4}; journal: {'done': 4}" in out and "checked: exactly 4 runs" in out


def test_live_with_the_prs_opened_first_the_label_reads_no_changelog_again(capsys):
    """--live --opened-first: each PR opened and handled (untimed) before its label, as in production; the
    labeled delivery then finds the changelog check, the merge base and the commit already read."""
    assert gate_latency.main(["--prs", "3", "--live", "--opened-first", "--github-latency", "20"]) == 0
    out = capsys.readouterr().out
    assert "each PR opened and handled first" in out and "labeled -> dispatch, warm, PRs opened first" in out
    assert "GitHub requests: 33 for 3 PRs (11.0 a PR)" in out
    assert "checked: exactly 3 runs" in out
