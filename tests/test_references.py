"""Nothing in the repository points outside it: a clone from GitHub must resolve every reference it reads.

The project's tracker is not part of a clone, so a comment, docstring, template or page that gives a tracker
number instead of saying what it means cannot be followed; nor can a path to a folder beside the repository or
the old domain reference that lived there (the domain reference is docs/spec.md). Every text file `git ls-files`
names is read, except binary files, tests/data/ (upstream sample files kept byte for byte) and this file.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_DATA = "tests/data/"
THIS_FILE = "tests/test_references.py"  # its patterns and samples are what it looks for

# A tracker number: "issue 7", "issue #7", "Issues 15/17", "issues 17 and 28" (the first number is enough).
TRACKER_NUMBER = re.compile(r"\bissues?\s*#?\d", re.IGNORECASE)
# A path outside the repository: the folder beside it, in any spelling, and the spec that lived there. SPECS and
# SPEC_NAMES are code names, not the file; a word boundary on both sides keeps them out.
OUTSIDE_PATH = re.compile(r"\.\./shared|/work/shared|shared/data|\"shared\"\s*/\s*\"data\"|\bSPEC\b")


def tracked_text_files() -> dict[str, str]:
    """Each tracked file's path and text, binary files (a NUL byte, or not UTF-8) and the sample data left out."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    files = {}
    for name in names.decode().split("\0"):
        path = ROOT / name
        if not name or name.startswith(SAMPLE_DATA) or name == THIS_FILE or not path.is_file():
            continue  # a tracked file deleted in the working tree is not read by anyone
        data = path.read_bytes()
        if b"\0" in data:
            continue
        try:
            files[name] = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
    return files


def references(text: str) -> list[tuple[int, str]]:
    """Each line of `text` (numbered from 1) that holds a tracker number or a path outside the repository."""
    return [
        (number, line.strip())
        for number, line in enumerate(text.splitlines(), 1)
        if TRACKER_NUMBER.search(line) or OUTSIDE_PATH.search(line)
    ]


def test_no_tracked_file_points_outside_the_repository():
    found = [
        f"{name}:{number}: {line}"
        for name, text in sorted(tracked_text_files().items())
        for number, line in references(text)
    ]
    assert not found, (
        f"{len(found)} references a clone cannot resolve (say what the tracker issue meant, without its number; "
        "cite docs/spec.md by its section's heading; keep data in the repository):\n" + "\n".join(found)
    )


# The samples are put together so that this file does not hold what it looks for.
ISSUE, SHARED = "issue", "../" + "shared"


@pytest.mark.parametrize(
    "line",
    [
        f"Regression ({ISSUE} 18): a lease ran out",
        f"{ISSUE} #7 through the webhook",
        f"Pins {ISSUE.title()} 17:",
        f"{ISSUE}s 15/17",
        f"({ISSUE}s 17 and 28)",
        f"before {ISSUE} 19: 17 round trips",
        f"{ISSUE}#9",
        f"{SHARED}/SPEC.md",
        "SPEC §4",
        "valid by SPEC §3",
        "the SPEC text",
        f"{SHARED}/data/inferencex/",
        "/work/" + "shared/data",
        'ROOT.parent / "shared" / "data" / "inferencex"',
    ],
)
def test_a_reference_outside_is_found(line):
    assert references(f"first line\n{line}\n") == [(2, line)]


@pytest.mark.parametrize(
    "line",
    [
        "from bot.rules.commands import SPECS",
        "SPEC_NAMES = [",
        "docs/spec.md, Reuse commands",
        "the bot closes this issue itself",
        "its issue's label events",
        "PR #5 of the demo repository",
        "tissue 3",
        "issues and PRs",
        "shared reads (bot.github.shared)",
        "specs = dict(SPECS)",
    ],
)
def test_text_that_points_nowhere_outside_is_not_found(line):
    assert references(line) == []
