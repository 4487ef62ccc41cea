"""The sandbox (`make serve` without credentials): it walks a PR's whole lifecycle through its own
webhook, one line per GitHub write on stdout and every text in full in a transcript; a port in use is one line
and exit 2."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import os
import re
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from bot.app import cli
from bot.app.sandbox import lifecycle
from bot.core.config import Settings

ROOT = Path(__file__).resolve().parent.parent
STEP = re.compile(r"^\[(\d+)/(\d+)\] (.*)$", re.M)
WRITE = re.compile(r"^  GitHub write: (\S+) (\S+) -> (\d+)(?:  (.*))?$")
COMMENT = re.compile(r"comment\[([^\]]+)\], ([\d,]+) chars")
FENCED = re.compile(r"^~~~~~~markdown\n(.*?)\n~~~~~~$", re.S | re.M)


def sandbox_settings(tmp_path, *, journal: bool = True, **changes) -> Settings:
    """The sandbox's settings, with SWEEPBOT_DB in `tmp_path` (unset with journal=False)."""
    env = {"SWEEPBOT_DB": str(tmp_path / "journal.db"), "SWEEPBOT_SETTLE_SECONDS": "0"}
    if not journal:
        del env["SWEEPBOT_DB"]
    return dataclasses.replace(Settings.from_env(env, dotenv=False), port=0, **changes)  # any free port


async def walk_sandbox(tmp_path) -> tuple[str, str]:
    """`sweepbot serve` in the sandbox with SWEEPBOT_DB unset, as `make serve` runs it, stopped as soon as it has
    walked its script: (stdout, transcript)."""
    out, transcript = io.StringIO(), tmp_path / "transcript.md"
    settings = sandbox_settings(tmp_path, journal=False)
    assert await cli.serve(settings, out, transcript=transcript, until_walked=True) == 0
    return out.getvalue(), transcript.read_text(encoding="utf-8")


def purpose(what: str) -> str:
    """The purpose of the comment a write line names (`comment[PURPOSE], N chars`); the line must name one."""
    found = COMMENT.search(what)
    assert found is not None, what
    return found[1]


def steps_of(out: str) -> dict[int, list[tuple[str, str, int, str]]]:
    """Each step's writes as stdout shows them: (method, path, status, what)."""
    found: dict[int, list] = {}
    current = 0
    for line in out.splitlines():
        if m := STEP.match(line):
            current = int(m[1])
            found[current] = []
        elif m := WRITE.match(line):
            found[current].append((m[1], m[2], int(m[3]), m[4] or ""))
    return found


def transcript_entries(transcript: str) -> list[tuple[str, str]]:
    """(the write's line, everything written under it) for each write, the fenced texts read as text."""
    entries: list[tuple[str, list[str]]] = []
    fenced = False
    for line in transcript.splitlines():
        if line.startswith("~~~~~~"):
            fenced = not fenced
        elif not fenced and line.startswith("#### "):
            entries.append((line[5:], []))
            continue
        elif not fenced and line.startswith("## "):
            entries.append(("", []))  # a step's heading: not a write
            continue
        if entries:
            entries[-1][1].append(line)
    return [(line, "\n".join(text)) for line, text in entries if line]


@pytest.fixture(scope="module")
def walk_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("sandbox")


@pytest.fixture(scope="module")
def walked(walk_dir):
    """One walk for the module, run as `make serve` runs it: SWEEPBOT_DB unset, `walk_dir` the working directory
    (where live mode's default journal, ./sweepbot.db, would go), temporary folders made in `walk_dir`/tmp."""
    (walk_dir / "tmp").mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(walk_dir)
        patch.setattr(tempfile, "tempdir", str(walk_dir / "tmp"))
        return asyncio.run(walk_sandbox(walk_dir))


def test_every_step_of_the_lifecycle_leaves_its_write(walked):
    """The sandbox once sent three deliveries; it now walks opened → label → dispatch → run failed → rerun →
    sign-off → run green → /use → staging started and completed → merge → ingest, each delivered signed to its own
    webhook, and each step shows what the bot wrote about it, in this order."""
    out, _ = walked
    steps = steps_of(out)
    assert sorted(steps) == list(range(1, len(lifecycle()) + 1)) == list(range(1, 13))
    for number, writes in steps.items():
        assert writes, f"step {number} left no write"
        assert all(status < 300 for _, _, status, _ in writes), writes
    assert "webhook answered" not in out  # every delivery was accepted (202)

    def comments(number: int) -> list[str]:
        return [
            purpose(what)
            for method, path, _, what in steps[number]
            if method == "POST" and path.endswith("/issues/1/comments")
        ]

    assert comments(1) == ["welcome", "sweep-status"]  # the welcome first
    assert any(path.endswith("/actions/workflows/e2e-tests.yml/dispatches") for _, path, _, _ in steps[2])
    assert comments(6)[0].startswith("signoff-") and any("check run signoff in_progress" in w for *_, w in steps[6])
    assert comments(8)[0].startswith("reply-")
    assert any(
        path == "/repos/SemiAnalysisAI/InferenceX-app/dispatches" and "stage-results" in what
        for _, path, _, what in steps[8]
    )
    for number in (9, 10):  # the staging callbacks edit the /use reply
        assert [(m, purpose(w)) for m, _, _, w in steps[number]] == [("PATCH", comments(8)[0])]
    assert comments(11) == ["merge-reuse"]
    # the ingest's counts join the merge notice: an edit, no comment of their own
    assert [(m, COMMENT.search(w)[1]) for m, _, _, w in steps[12] if COMMENT.search(w)] == [("PATCH", "merge-reuse")]
    assert comments(12) == []


def test_nothing_is_written_twice(walked):
    """No comment is created twice (each purpose once on the PR), and no write repeats the one before it to the
    same place (a status going back to an earlier text, "running" again for the rerun, is a change)."""
    out, transcript = walked
    created = [
        purpose(what)
        for writes in steps_of(out).values()
        for method, path, _, what in writes
        if method == "POST" and path.endswith("/comments")
    ]
    assert len(created) == len(set(created)) >= 6, created
    entries = transcript_entries(transcript)
    assert len(entries) == sum(map(len, steps_of(out).values()))
    last: dict[str, tuple[str, str]] = {}
    repeated = []
    for line, text in entries:
        target = line.split(" -> ")[0]
        if target.startswith(("POST /repos/demo-org/InferenceX/issues/comments/", "DELETE ")):
            continue  # the bot's 👀 and its removal, once per command
        if last.get(target) == (line, text):
            repeated.append(line)
        last[target] = (line, text)
    assert repeated == []


def test_stdout_has_one_line_per_write_and_the_transcript_every_text_in_full(walked):
    """Comments were cut at 14 lines on stdout; now stdout has one line per write, naming the transcript, and the
    transcript holds every comment whole: as many texts as comment writes, each of the length the line gives."""
    out, transcript = walked
    assert "      | " not in out and "## 中文" not in out  # no comment text on stdout
    lengths = [int(m[2].replace(",", "")) for line in out.splitlines() if (m := COMMENT.search(line))]
    bodies = [text for text in FENCED.findall(transcript) if text.startswith("<!-- sweepbot:")]
    assert sorted(len(body) for body in bodies) == sorted(lengths) and len(lengths) >= 15
    named = re.search(r"^  transcript +(\S+)  ", out, re.M)  # the banner names it, and the last line again
    assert named and named[1].endswith("/transcript.md") and f"every text in full: {named[1]}." in out
    welcome = next(body for body in bodies if body.startswith("<!-- sweepbot:welcome -->"))
    assert welcome.rstrip().endswith("。") and "\n## 中文\n" in welcome  # whole, both languages
    assert "output.summary:" in transcript  # the check runs' texts too


def test_the_verdict_waits_and_ends_at_pass_without_a_new_signoff(walked):
    """Pins the bug "FAIL while only waiting": the sign-off posted while the rerun goes said "❌ FAIL" (and its
    check failed) though it only waited for the run and a pin. It waits (⏳, nothing for the signer to change); the
    bot verifies it again when the run finishes and when the pin is set, editing the one verdict in place, which
    ends at PASS."""
    _, transcript = walked
    verdicts = [text for text in FENCED.findall(transcript) if text.startswith("<!-- sweepbot:signoff-")]
    assert len({text.split(" -->", 1)[0] for text in verdicts}) == 1  # one verdict, edited
    firsts = [text.split("\n")[2] for text in verdicts]  # after the marker and the hidden record
    assert firsts[0] == (
        "### ⏳ WAITING: sign-off by `amd-partner` waits for a maintainer to pin a green sweep;"
        " nothing for `amd-partner` to change"
    )
    assert firsts[-1] == "### ✅ PASS: sign-off by `amd-partner`; nothing left to do"
    assert not [text for text in verdicts if "FAIL" in text or "❌" in text], "nothing in it is the signer's to fix"


async def test_the_sandbox_journal_is_temporary_and_never_live_modes_default(walked, walk_dir, monkeypatch, capsys):
    """Regression: the sandbox journaled its deliveries in ./sweepbot.db, live mode's default journal,
    where `sweepbot deliveries` then listed them. With SWEEPBOT_DB unset its journal is now in a temporary folder,
    named in the banner and removed at exit; `sweepbot deliveries` there afterwards shows nothing of it."""
    out, _ = walked
    assert sorted(p.name for p in walk_dir.iterdir()) == ["tmp", "transcript.md"]  # no sweepbot.db, -wal, -shm
    named = re.search(r"^  journal +(\S+)  ", out, re.M)
    assert named, out
    journal = Path(named[1])
    assert journal.is_relative_to(walk_dir / "tmp") and not journal.parent.exists()  # removed at exit
    assert list((walk_dir / "tmp").iterdir()) == []
    monkeypatch.chdir(walk_dir)
    assert await cli.deliveries(Settings.from_env({}, dotenv=False), False, 50) == 0
    listing = capsys.readouterr().out
    assert "sandbox-" not in listing and "totals: empty journal" in listing


# -- a port in use ---------------------------------------------------------------------------------------


def test_a_port_in_use_is_one_clear_line_and_exit_2(tmp_path):
    """With port 3000 taken, `make serve` died with a raw OSError traceback and eight "Task was
    destroyed" lines. Now: one line naming the address and PORT, exit 2, nothing else on stderr or stdout."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**os.environ, "PORT": str(port), "SWEEPBOT_DB": str(tmp_path / "j.db"), "TMPDIR": str(tmp_path)}
        env.pop("APP_ID", None), env.pop("PRIVATE_KEY", None), env.pop("PRIVATE_KEY_PATH", None)
        done = subprocess.run(
            [sys.executable, "-m", "bot.app.cli", "serve"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"sweepbot: cannot listen on 127.0.0.1:{port}: address already in use (set PORT to another port)"
    ]
    assert done.stdout == ""
    assert not list(tmp_path.glob("*.md"))  # no transcript begun for a walk that never happens


async def test_with_no_workers_nothing_is_walked_and_no_transcript_begun(tmp_path):
    """SWEEPBOT_WORKERS=0 (intake only, as bench/intake.py and tests/test_crash.py run it): no worker would answer
    the first step, so the walk says so and does not start; the server serves as before."""
    out, transcript = io.StringIO(), tmp_path / "transcript.md"
    assert await cli.serve(sandbox_settings(tmp_path, workers=0), out, transcript=transcript, until_walked=True) == 0
    text = out.getvalue()
    assert "SWEEPBOT_WORKERS=0, so no worker handles the lifecycle's deliveries: not walked" in text
    assert "GitHub write" not in text and not STEP.search(text) and not transcript.exists()


def test_the_lifecycle_notifies_at_most_six_times_and_asks_little_reading(walked):
    """The words goal, measured as bench/comments.py measures it: at most 6 new comments (each a notification) and
    5,000 visible characters in the final versions of all the bot's comments, both languages (before: 8 and
    8,427)."""
    from harness import load_bench

    found = load_bench("comments").measure(walked[1])
    assert len(found["new"]) <= 6, found["new"]
    assert found["visible"] <= 5_000, found["rows"]
    assert set(found["rows"]) >= {"welcome", "sweep-status", "merge-reuse"}, "the measure found the comments"
