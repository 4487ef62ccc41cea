"""bench/parsers.py still runs: its inputs have the sizes it claims, and a --quick run prints its rows."""

from __future__ import annotations

import os

from bench import parsers


def test_the_bench_reads_the_folder_the_tests_check(real_data):
    """The bench builds its inputs on the real upstream files the tests read (tests/data/inferencex/)."""
    assert parsers.DATA.resolve() == real_data.resolve()
    assert {parsers.CHECKLIST_FILE.name, parsers.CHANGELOG_TAIL.name} <= set(os.listdir(real_data))


def test_comment_sized_inputs_are_exactly_the_size_asked_and_changelog_heads_at_most():
    sizes = parsers.Sizes(n=4096, c=131_072, payload=1_000_000, deep=100, laughs=3)
    for case in parsers.CASES:
        data = case.make(sizes)
        if case.parser.startswith(("commands.", "signoff.has_phrase", "checklist.")):
            assert len(data) == 4096, case.key
        if case.parser.startswith("changelog."):
            base, head = data
            assert len(base) < len(head) <= 131_072, case.key


def test_quick_run_prints_one_row_per_case_and_the_loop_figure(capsys):
    assert parsers.main(["--quick", "--only", "| `[` x N"]) == 0
    assert parsers.main(["--quick", "--only", "check_append | normal"]) == 0
    out = capsys.readouterr().out
    assert "cores, Python 3." in out
    for parser in ("commands.parse", "commands.find_commands", "checklist.normalise"):
        assert f"| {parser} | `[` x N | 2,048 | " in out
    assert "| changelog.check_append | normal: 2 MB history + 1 entry |" in out
    assert "loop held (after): check_append on 'normal: 2 MB history + 1 entry'" in out
    assert "lateness during the call max " in out
