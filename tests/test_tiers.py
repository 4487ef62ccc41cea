"""Every test is in exactly one tier (tests/tiers.py), so `make test-fast` (`-m "rules or handler"`) and the
other tiers together run the whole suite, none of it twice."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest
import tiers

ROOT = Path(__file__).resolve().parent.parent
ANY = " or ".join(tiers.ORDER)


def test_every_test_of_this_run_has_exactly_one_tier(request):
    many = {item.nodeid: sorted(tiers.written(item)) for item in request.session.items if len(tiers.written(item)) != 1}
    assert many == {}


def collected(*args: str) -> list[str]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-o",
            "addopts=",
            "--collect-only",
            "-q",
            *args,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode in (0, 5), done.stdout[-2000:] + done.stderr[-2000:]  # 5: none selected
    return [line for line in done.stdout.splitlines() if "::" in line]


@pytest.mark.process  # a collection of the whole suite in a pytest process of its own
def test_selecting_by_tier_leaves_no_test_out_and_takes_none_in_two():
    """Through `-m`, as `make test-fast` selects: the markers are there before pytest deselects by them. One
    collection selects every test in no tier or in two; there must be none."""
    pairs = " or ".join(f"({a} and {b})" for i, a in enumerate(tiers.ORDER) for b in tiers.ORDER[i + 1 :])
    assert collected("-m", f"not ({ANY}) or {pairs}") == []


def test_the_tiers_are_registered_as_the_markers_in_pyproject():
    markers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    assert dict(line.split(": ", 1) for line in markers if line.split(":")[0] in tiers.TIERS) == tiers.TIERS


def test_every_test_file_that_starts_something_is_in_the_tables():
    named = {key.split("::")[0] for key in (*tiers.FIXTURES, *tiers.TESTS) if "::" in key or key.endswith(".py")}
    starting = {
        path.name
        for path in (ROOT / "tests").glob("test_*.py")
        if re.search(tiers.STARTERS, path.read_text(encoding="utf-8"))
    }
    assert starting - named - {Path(__file__).name} == set(), "add them to tests/tiers.py with the tier they need"


def test_every_table_entry_names_a_test_file_and_a_tier():
    files = {path.name for path in (ROOT / "tests").glob("test_*.py")}
    for key, tier in (*tiers.FIXTURES.items(), *tiers.TESTS.items()):
        assert tier in tiers.TIERS, key
        if "::" in key or key.endswith(".py"):
            assert key.split("::")[0] in files, key
    for key in tiers.TESTS:
        if "::" in key:
            file, test = key.split("::")
            assert re.search(rf"def {test}\(", (ROOT / "tests" / file).read_text(encoding="utf-8")), key


def item(file: str = "test_x.py", name: str = "test_y", fixtures: tuple[str, ...] = (), **params):
    return SimpleNamespace(
        path=Path("tests") / file,
        originalname=name,
        name=name,
        fixturenames=list(fixtures),
        callspec=SimpleNamespace(params=params) if params else None,
    )


@pytest.mark.parametrize(
    "case, tier",
    [
        (item(), "rules"),
        (item(fixtures=("tmp_path", "monkeypatch")), "rules"),
        (item(fixtures=("github", "layout")), "handler"),
        (item(fixtures=("make_harness", "github", "layout")), "live"),
        (item(fixtures=("make_harness", "github", "layout"), layout="inline"), "live"),
        (item(fixtures=("make_harness", "github", "layout"), layout="apart"), "process"),  # the workers' process
        (item(fixtures=("postgres_db", "make_harness")), "process"),  # the heaviest
        (item(fixtures=("target",), target="sqlite"), "rules"),
        (item(fixtures=("target",), target="postgresql"), "process"),
        (item("test_setup_page.py", fixtures=("github",)), "handler"),
        (item("test_setup_page.py", fixtures=("chromium", "fake_process")), "browser"),
        (item("test_sandbox.py", fixtures=("walked",)), "live"),
        (item("test_other.py", fixtures=("walked",)), "rules"),  # another file's fixture of that name
        (item("test_crash.py"), "process"),
        (item("test_config.py", "test_the_sweepbot_command_exits_2_on_a_bad_setting"), "live"),
        (item("test_config.py", "test_defaults_hold_every_name_from_the_spec"), "rules"),
    ],
)
def test_a_test_is_in_the_heaviest_tier_of_what_it_uses(case, tier):
    assert tiers.found(case) == tier


def test_a_tier_written_on_a_test_wins_and_two_are_an_error():
    class Marked(SimpleNamespace):
        def iter_markers(self):
            return iter(self.marks)

        def add_marker(self, name):
            self.marks.append(SimpleNamespace(name=name))

    written = Marked(marks=[SimpleNamespace(name="rules")], **vars(item(fixtures=("harness",))))
    found = Marked(marks=[SimpleNamespace(name="timeout")], **vars(item(fixtures=("harness",))))
    tiers.assign([written, found])
    assert [m.name for m in written.marks] == ["rules"] and [m.name for m in found.marks] == ["timeout", "live"]
    two = Marked(
        marks=[SimpleNamespace(name="rules"), SimpleNamespace(name="live")], nodeid="tests/test_x.py::t", **vars(item())
    )
    with pytest.raises(pytest.UsageError, match="more than one tier"):
        tiers.assign([two])
