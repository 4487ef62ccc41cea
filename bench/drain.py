"""Intake while the workers drain: the bot live against the fake GitHub in its own process, unpaced.

2,000 signed PR-opened deliveries (about 23 KB each, as GitHub sends them) at concurrency 20, from a cold
start (the process's first deliveries), then three times 2,000 more on the same process (warm), once with the
workers in a process of their own (live `serve`'s default) and once on a thread of the server's. First, in the
same run, the baseline: as many rounds to a server with the workers off. Reported: ack rate and latency while
the workers write, beside the baseline (medians of the warm phases), the time until every delivery is done, and
that every PR got exactly one welcome. Run as
`bench/intake.py --drain` or `python bench/drain.py`.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from harness import free_port, start_server_process  # noqa: E402
from harness import process_health as health  # noqa: E402

from bot.app.sandbox import _generate_key  # noqa: E402
from bot.app.webhook_signature import sign  # noqa: E402
from bot.testing.server import FakeGitHubProcess  # noqa: E402

SECRET = "bench-secret"
REPO = "bench/InferenceX"
CHANGELOG = "inferencex-e2e/perf-changelog.yaml"
PR_BODY_BYTES = 20 * 1024  # with the rest of a pull_request payload, about 23 KB


def fake_pid(fake: FakeGitHubProcess) -> int:
    """The process id of a started fake GitHub."""
    if fake._proc is None:
        raise RuntimeError("the fake GitHub is not running")
    return fake._proc.pid


def seed(fake: FakeGitHubProcess, first: int, count: int) -> list[bytes]:
    """Open PRs first..first+count-1 and return their signed-ready `opened` payloads."""
    bodies = []
    for number in range(first, first + count):
        fake.add_pull(
            REPO,
            number=number,
            user=f"partner{number}",
            head_repo=f"partner{number}/InferenceX",
            files=[CHANGELOG, "configs/amd-mi355x.yaml"],
            body="x" * PR_BODY_BYTES,
        )
        bodies.append(json.dumps(fake.pull_request_payload(REPO, number, "opened")).encode())
    return bodies


async def send(url: str, bodies: list[bytes], concurrency: int) -> dict:
    latencies: list[float] = []
    statuses: collections.Counter = collections.Counter()
    queue = list(reversed(bodies))

    async def client(session: aiohttp.ClientSession) -> None:
        while queue:
            body = queue.pop()
            headers = {
                "Content-Type": "application/json",
                "X-GitHub-Event": "pull_request",
                "X-GitHub-Delivery": hashlib.sha1(body).hexdigest(),
                "X-Hub-Signature-256": sign(body, SECRET),
            }
            started = time.perf_counter()
            async with session.post(url, data=body, headers=headers) as resp:
                await resp.read()
            latencies.append(time.perf_counter() - started)
            statuses[resp.status] += 1

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:
        started = time.perf_counter()
        await asyncio.gather(*(client(session) for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "acks_per_s": len(bodies) / elapsed,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
        "max_ms": latencies[-1] * 1000,
        "statuses": dict(statuses),
        "sent_s": elapsed,
    }


def drain(port: int, started: float, timeout: float = 600.0) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        report = health(port)
        if report.get("backlog") == 0:
            return time.perf_counter() - started
        time.sleep(0.25)
    raise RuntimeError(f"not drained within {timeout} s: {health(port)}")


def welcomes_per_pr(fake: FakeGitHubProcess, since: int) -> collections.Counter:
    posts = [
        r
        for r in fake.requests(since)
        if r.method == "POST"
        and r.path.endswith("/comments")
        and (r.json or {}).get("body", "").startswith("<!-- sweepbot:welcome -->")
    ]
    return collections.Counter(r.path for r in posts)


def phase(name: str, fake: FakeGitHubProcess, port: int, first: int, count: int, concurrency: int) -> dict:
    bodies = seed(fake, first, count)
    since = len(fake.requests())
    started = time.perf_counter()
    row = asyncio.run(send(f"http://127.0.0.1:{port}/webhook", bodies, concurrency))
    row["drained_s"] = drain(port, started)
    per_pr = welcomes_per_pr(fake, since)
    row["welcomed_once"] = sum(1 for n in per_pr.values() if n == 1)
    row["doubled"] = sum(1 for n in per_pr.values() if n > 1)
    row["name"], row["prs"] = name, count
    return row


def start_bot(fake: FakeGitHubProcess, folder: str, workers: int, worker_process: bool):
    port = free_port()
    env = {
        "APP_ID": "1",
        "PRIVATE_KEY": _generate_key(),
        "WEBHOOK_SECRET": SECRET,
        "GITHUB_API_URL": fake.url,
        "SWEEPBOT_DB": str(Path(folder) / "bench.db"),
        "SWEEPBOT_WORKERS": str(workers),
        "SWEEPBOT_WRITES_PER_MINUTE": "0",
        "LOG_LEVEL": "ERROR",
        "SWEEPBOT_WORKER_PROCESS": "1" if worker_process else "0",
    }
    return port, start_server_process(port, env, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop_bot(proc) -> None:
    proc.terminate()
    proc.wait(60)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--deliveries", type=int, default=2000, help="PR-opened deliveries per phase")
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument(
        "--fake-niceness",
        type=int,
        default=0,
        help="run the fake GitHub at this niceness: a stand-in for a GitHub that is not on this "
        "machine (its CPU then yields to the bot's intake, as a remote GitHub's does)",
    )
    parser.add_argument(
        "--warm-rounds",
        type=int,
        default=3,
        help="phases after the cold one on each server (and rounds to the workers-off server beside "
        "its first); the summary compares their medians",
    )
    parser.add_argument(
        "--modes",
        default="process,thread",
        help="where the workers run, one server each: process (their own, the default), thread",
    )
    args = parser.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    rows, lookups = [], {}
    first = 1
    with FakeGitHubProcess() as fake:
        if args.fake_niceness:
            os.setpriority(os.PRIO_PROCESS, fake_pid(fake), args.fake_niceness)
        fake.add_repo(REPO, default_branch="main", installation_id=1)
        fake.set_rate_limit(1_000_000)  # 8,000 PRs cost ~60,000 requests; GitHub's 5,000 an hour is not the subject
        with tempfile.TemporaryDirectory() as folder:  # the baseline: intake alone, nothing drains
            port, proc = start_bot(fake, folder, 0, False)
            try:
                offs = []
                for _ in range(1 + args.warm_rounds):
                    bodies = seed(fake, first, args.deliveries)
                    offs.append(asyncio.run(send(f"http://127.0.0.1:{port}/webhook", bodies, args.concurrency)))
                    first += args.deliveries
            finally:
                stop_bot(proc)
        for mode in modes:
            with tempfile.TemporaryDirectory() as folder:
                port, proc = start_bot(fake, folder, args.workers, mode == "process")
                since_app = fake.count("GET", r"^/app$")
                try:
                    for name in ["cold"] + [f"warm {i}" for i in range(1, args.warm_rounds + 1)]:
                        row = phase(name, fake, port, first, args.deliveries, args.concurrency)
                        row["mode"] = mode
                        rows.append(row)
                        first += args.deliveries
                    lookups[mode] = fake.count("GET", r"^/app$") - since_app
                finally:
                    stop_bot(proc)
    print(
        f"drain benchmark: {args.deliveries} PR-opened deliveries per phase (~23 KB), concurrency "
        f"{args.concurrency}, {args.workers} workers, unpaced, fake GitHub in its own process "
        f"(niceness {args.fake_niceness}), "
        f"{os.cpu_count()} cores, all on one machine"
    )
    off = {
        key: statistics.median(o[key] for o in offs[1:] or offs) for key in ("acks_per_s", "p50_ms", "p99_ms", "max_ms")
    }
    off["statuses"] = dict(sum((collections.Counter(o["statuses"]) for o in offs), collections.Counter()))
    print(
        f"workers off (intake alone, same run, median of {len(offs[1:] or offs)} warm rounds): "
        f"{off['acks_per_s']:.0f} acks/s, ack p50 {off['p50_ms']:.2f} ms, p99 {off['p99_ms']:.2f} ms, "
        f"max {off['max_ms']:.1f} ms; its cold round: p99 {offs[0]['p99_ms']:.2f} ms"
    )
    print(
        "| workers | phase | acks/s | ack p50 ms | ack p99 ms | p99 ÷ workers off | ack max ms | all done after s "
        "| welcomed once | doubled |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(
            f"| {r['mode']} | {r['name']} | {r['acks_per_s']:.0f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | "
            f"{r['p99_ms'] / off['p99_ms']:.2f}x | {r['max_ms']:.1f} | {r['drained_s']:.1f} | "
            f"{r['welcomed_once']}/{r['prs']} | {r['doubled']} |"
        )
    for mode in modes:
        warm = [r for r in rows if r["mode"] == mode and r["name"] != "cold"]
        if warm:
            p99 = statistics.median(r["p99_ms"] for r in warm)
            print(
                f"{mode}, median of {len(warm)} warm phases: {statistics.median(r['acks_per_s'] for r in warm):.0f}"
                f" acks/s, ack p99 {p99:.2f} ms = {p99 / off['p99_ms']:.2f}x the workers-off p99"
            )
    print(
        f"GET /app calls per server: {lookups}; statuses: "
        + ", ".join(f"{r['mode']} {r['name']} {r['statuses']}" for r in rows)
        + f", off {off['statuses']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
