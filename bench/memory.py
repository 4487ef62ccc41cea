"""Memory of a backlog: RSS of `sweepbot serve` with 10,000 deliveries queued behind a slow GitHub, vs none.

The bot runs live against the fake GitHub in its own process; every GitHub request takes 60 s there, so the
one worker is stuck on its first delivery and everything else waits in the backlog. Then the bot is killed
and started again on the same journal, with the same 10,000 unfinished, and measured once more.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from harness import free_port, start_server_process  # noqa: E402

from bench.drain import REPO, SECRET, health, send  # noqa: E402
from bot.app.sandbox import _generate_key  # noqa: E402
from bot.testing.server import FakeGitHubProcess  # noqa: E402


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def settle(pid: int) -> float:
    time.sleep(2.0)
    return rss_mb(pid)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--deliveries", type=int, default=10_000)
    args = parser.parse_args(argv)
    tmp = tempfile.TemporaryDirectory()
    with FakeGitHubProcess() as fake:
        fake.add_repo(REPO, default_branch="main", installation_id=1)
        fake.add_pull(REPO, number=1, files=["inferencex-e2e/perf-changelog.yaml"], body="x" * 20 * 1024)
        template = fake.pull_request_payload(REPO, 1, "opened")
        fake.set_latency(None, r"^/repos/", 60.0)
        env = {
            "APP_ID": "1",
            "PRIVATE_KEY": _generate_key(),
            "WEBHOOK_SECRET": SECRET,
            "GITHUB_API_URL": fake.url,
            "SWEEPBOT_DB": str(Path(tmp.name) / "bench.db"),
            "SWEEPBOT_WORKERS": "1",
            "SWEEPBOT_HTTP_TIMEOUT": "120",
            "LOG_LEVEL": "ERROR",
        }
        port = free_port()
        proc = start_server_process(port, env, cwd=tmp.name, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import json

        bodies = []
        for i in range(args.deliveries):  # different PRs, so each is a lane of its own
            template["pull_request"]["number"] = i + 1
            template["number"] = i + 1
            bodies.append(json.dumps(template).encode())
        try:
            empty = settle(proc.pid)
            asyncio.run(send(f"http://127.0.0.1:{port}/webhook", bodies, 20))
            queued = settle(proc.pid)
            backlog = health(port)["backlog"]
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        proc = start_server_process(port, env, cwd=tmp.name, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            resumed = settle(proc.pid)
            resumed_backlog = health(port)["backlog"]
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
    tmp.cleanup()
    size = len(bodies[0]) / 1024
    print(
        f"backlog memory: {args.deliveries} PR-opened deliveries of {size:.1f} KB held back by a GitHub that "
        f"answers in 60 s; RSS of sweepbot serve, {os.cpu_count()} cores"
    )
    print("| state | backlog | RSS MB | vs none |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| none queued | 0 | {empty:.1f} | 1.00x |")
    print(f"| queued | {backlog} | {queued:.1f} | {queued / empty:.2f}x |")
    print(f"| restarted with them unfinished | {resumed_backlog} | {resumed:.1f} | {resumed / empty:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
