"""The real upstream InferenceX files the tests read are part of the repository (tests/data/inferencex/), so every
clone runs the tests that read them: a file missing or left untracked fails here by name, not deep in another
test or only on the machine that has it."""

from __future__ import annotations

import subprocess

from conftest import REAL_DATA

# Each file the folder's README.md describes; the tests and bench/parsers.py read them.
UPSTREAM_FILES = (
    "CODEOWNERS",
    "PR_REVIEW_CHECKLIST.md",
    "PR_REVIEW_CHECKLIST_zh.md",
    "perf-changelog.tail.yaml",
    "amd-master.yaml",
    "nvidia-master.yaml",
    "runners.yaml",
    "gitmodules",
)
THREADS = 4  # PR conversations under threads/


def tracked() -> set[str]:
    """The folder's files that git tracks, relative to the folder."""
    names = subprocess.run(["git", "ls-files", "-z", "."], cwd=REAL_DATA, capture_output=True, check=True).stdout
    return {name for name in names.decode().split("\0") if name}


def test_every_upstream_file_is_in_the_repository():
    files = tracked()
    missing = [name for name in UPSTREAM_FILES if name not in files or not (REAL_DATA / name).is_file()]
    assert not missing, f"{REAL_DATA} lacks (or git does not track) {', '.join(missing)}"
    threads = sorted(name for name in files if name.startswith("threads/") and name.endswith(".txt"))
    assert len(threads) == THREADS, threads


def test_the_folder_says_where_its_files_come_from():
    assert {"README.md", "SOURCE.md"} <= tracked()
    source = (REAL_DATA / "SOURCE.md").read_text(encoding="utf-8")
    assert "SemiAnalysisAI/InferenceX" in source and "test data only" in source
