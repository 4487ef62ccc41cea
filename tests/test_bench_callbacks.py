"""bench/callbacks.py still runs, and on its callbacks the bot's verdicts are the same before and after (no
timing is asserted: the figures are for reading)."""

from __future__ import annotations

from bench import callbacks


def test_a_short_run_prints_one_row_per_callback_with_the_same_verdicts(capsys):
    assert callbacks.main(["--repeat", "3"]) == 0
    rows = [line.split(" | ") for line in capsys.readouterr().out.splitlines() if line.startswith("| ")][2:]
    assert len(rows) == len(callbacks.callbacks()) + 1  # and the judge's answer
    assert all(row[1] == row[2] for row in rows), rows
    assert {row[2] for row in rows} == {"accepted", "not-numeric", "wrong-source", "bad-counts"}
