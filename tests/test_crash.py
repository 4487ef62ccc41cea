"""Crash safety: SIGKILL the server with 100 deliveries queued, start it again, and each is processed exactly once."""

from __future__ import annotations

import collections
import json
import re
import signal
import sqlite3
import time
from pathlib import Path

from harness import free_port, post_webhook, process_health, start_server_process

from bot.app.sandbox import DEMO_REPO, DEMO_SECRET

COUNT = 100
WALKED = "sweepbot sandbox: every text in full"  # the sandbox's line once its lifecycle walk is over


def start(tmp: Path, port: int, workers: int, run: int):
    return start_server_process(
        # Unpaced: the 100 replies and the sandbox's lifecycle walk make more than the default 80 writes a minute,
        # and a write waiting out the pacing window (up to 60 s) outlasted the drain's deadline.
        port,
        {
            "SWEEPBOT_DB": str(tmp / "journal.db"),
            "LOG_LEVEL": "INFO",
            "SWEEPBOT_WORKERS": str(workers),
            "SWEEPBOT_WRITES_PER_MINUTE": "0",
            "TMPDIR": str(tmp),
        },  # TMPDIR: the sandbox transcript
        cwd=tmp,
        stdout=open(tmp / f"out-{run}.txt", "w"),
        stderr=open(tmp / f"log-{run}.jsonl", "w"),
    )


def help_comment(i: int) -> dict:
    return {
        "action": "created",
        "issue": {"number": 1, "pull_request": {"url": "x"}},
        "comment": {"id": 5000 + i, "body": "/help", "user": {"login": "partner-dev", "type": "User"}},
        "repository": {"full_name": DEMO_REPO, "default_branch": "main", "html_url": f"https://github.com/{DEMO_REPO}"},
        "installation": {"id": 1},
        "sender": {"login": "partner-dev", "type": "User"},
    }


def post(port: int, delivery: str, payload: dict) -> int:
    return post_webhook(port, "issue_comment", delivery, payload, DEMO_SECRET)


def backlog(port: int) -> int:
    return process_health(port)["backlog"]


def unfinished(journal) -> list[tuple]:
    """The deliveries not finished yet, for a failure's message."""
    with sqlite3.connect(journal) as db:
        return db.execute(
            "SELECT id, event, action, status, attempts, error FROM deliveries"
            " WHERE status NOT IN ('done', 'ignored', 'failed')"
        ).fetchall()


def test_sigkill_with_100_queued_then_restart_processes_each_exactly_once(tmp_path):
    port = free_port()
    ids = [f"crash-{i:03d}" for i in range(COUNT)]
    first = start(tmp_path, port, workers=0, run=1)  # intake only: everything stays queued
    try:
        assert [post(port, d, help_comment(i)) for i, d in enumerate(ids)] == [202] * COUNT
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    with sqlite3.connect(tmp_path / "journal.db") as db:
        queued = {row[0] for row in db.execute("SELECT id FROM deliveries WHERE status='queued'")}
    assert set(ids) <= queued  # acknowledged means committed, even when killed right after

    second = start(tmp_path, port, workers=4, run=2)
    try:
        deadline = time.monotonic() + 60
        # The sandbox walks its lifecycle beside the replies, one delivery at a time: the backlog is 0 between two of
        # its steps, so wait for the walk's last line first (waiting for 0 alone raced with its next step).
        while WALKED not in (tmp_path / "out-2.txt").read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        while backlog(port) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert backlog(port) == 0, unfinished(tmp_path / "journal.db")
    finally:
        second.send_signal(signal.SIGTERM)
        assert second.wait(30) == 0  # a clean, drained stop

    with sqlite3.connect(tmp_path / "journal.db") as db:
        rows = dict(db.execute("SELECT id, status || ':' || attempts FROM deliveries WHERE id LIKE 'crash-%'"))
    assert rows == {d: "done:1" for d in ids}
    done = collections.Counter()
    for run in (1, 2):
        for line in (tmp_path / f"log-{run}.jsonl").read_text().splitlines():
            entry = json.loads(line)
            if entry["msg"] == "delivery done" and entry.get("delivery", "").startswith("crash-"):
                done[entry["delivery"]] += 1
    assert done == {d: 1 for d in ids}
    replies = re.findall(r"comment\[reply-(\d+)\]", (tmp_path / "out-2.txt").read_text())  # one line per write
    assert sorted(int(r) for r in replies if 5000 <= int(r) < 5000 + COUNT) == list(range(5000, 5000 + COUNT))
