"""The documentation: docs/ builds as a site with `mkdocs build --strict` (a broken link or anchor, or a page left
out of the nav, fails it), without reaching the network; the README stays a front page of at most 250 lines."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
README_LINES = 250

# mkdocs's own command line, run by this interpreter (the venv's mkdocs), in a process where every way to open a
# connection or look up a name raises: a plugin or theme that fetched anything at build time would fail the build.
OFFLINE_MKDOCS = """
import socket
import sys

def refuse(*args, **kwargs):
    raise OSError("the documentation build tried to reach the network")

socket.socket.connect = socket.socket.connect_ex = refuse
socket.create_connection = socket.getaddrinfo = refuse

from mkdocs.__main__ import cli

sys.exit(cli())
"""


def mkdocs_build(root: Path, site: Path) -> subprocess.CompletedProcess:
    """`mkdocs build --strict` of `root`'s mkdocs.yml into `site`, run from `root` (the figures page includes
    bench/RESULTS.md from there)."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [
            sys.executable,
            "-c",
            OFFLINE_MKDOCS,
            "build",
            "--strict",
            "--config-file",
            str(root / "mkdocs.yml"),
            "--site-dir",
            str(site),
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def nav_pages(nav: list) -> list[str]:
    """Every page a MkDocs nav names, in order (sections flattened)."""
    pages: list[str] = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        if isinstance(value, list):
            pages += nav_pages(value)
        else:
            pages.append(value)
    return pages


def test_the_site_builds_strictly_and_offline(tmp_path):
    site = tmp_path / "site"
    done = mkdocs_build(ROOT, site)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (site / "index.html").is_file()
    # the figures page is bench/RESULTS.md itself, included
    assert "Bench results" in (site / "figures" / "index.html").read_text(encoding="utf-8")


def test_a_broken_anchor_fails_the_build(tmp_path):
    """The build can fail: a copy of the docs with a link to an anchor that no heading makes is refused."""
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    (copy / "bench").mkdir()
    shutil.copy(ROOT / "bench" / "RESULTS.md", copy / "bench" / "RESULTS.md")
    with (copy / "docs" / "index.md").open("a", encoding="utf-8") as page:
        page.write("\nSee [the rules](spec.md#no-such-heading).\n")

    done = mkdocs_build(copy, tmp_path / "site")

    assert done.returncode != 0
    assert "no-such-heading" in done.stdout + done.stderr


def test_every_docs_page_is_in_the_nav():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    listed = nav_pages(config["nav"])
    docs = ROOT / config.get("docs_dir", "docs")
    on_disk = sorted(str(path.relative_to(docs)) for path in docs.rglob("*.md"))
    assert sorted(listed) == on_disk
    assert len(listed) == len(set(listed)), "a page is in the nav twice"


def test_the_readme_is_a_front_page():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_LINES, f"README.md has {len(lines)} lines; move detail to docs/"
