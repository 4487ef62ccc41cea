"""Draining when GitHub is slow: are the workers busy waiting on GitHub, or idle while deliveries are ready?

Every fake GitHub request is answered 100 ms late (`--latency`), as a real GitHub is. 300 PR-opened deliveries
(`--prs`) are sent at once; the clock runs from the first send until the backlog is empty. The floor is the
time the workers would take if each of them waited on GitHub all the time: requests made × latency ÷ workers
(every worker of every replica). Three set-ups, one run: SQLite with one process, PostgreSQL with one replica,
PostgreSQL with three replicas on one database (the deliveries spread over them). Each set-up gets its own fake
GitHub and `--rounds` rounds of fresh PRs on the same processes; the median round is reported. Every PR must be
welcomed exactly once.

    .venv/bin/python bench/slow_github.py [--db auto|postgresql://…] [--prs 300] [--latency 0.1] [--workers 8]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from bot.app.sandbox import _generate_key  # noqa: E402
from bot.testing.server import FakeGitHubProcess  # noqa: E402
from drain import REPO, SECRET, seed, send, welcomes_per_pr  # noqa: E402
from harness import free_port, start_server_process  # noqa: E402
from harness import process_health as health  # noqa: E402


def drained(port: int, started: float, timeout: float = 600.0) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if health(port).get("backlog") == 0:
            return time.perf_counter() - started
        time.sleep(0.02)
    raise RuntimeError(f"not drained within {timeout} s: {health(port)}")


def setup(name: str, dbs: list[str], args: argparse.Namespace, key: str) -> dict:
    """One set-up: its own fake GitHub, one server per entry of `dbs`, `args.rounds` rounds; the median round."""
    rounds = []
    with tempfile.TemporaryDirectory() as tmp, FakeGitHubProcess() as fake:
        fake.add_repo(REPO, default_branch="main", installation_id=1)
        fake.set_rate_limit(1_000_000)
        fake.set_latency(None, r"^/", args.latency)
        ports = [free_port() for _ in dbs]
        procs = []
        try:
            for db, port in zip(dbs, ports):
                env = {"APP_ID": "1", "PRIVATE_KEY": key, "WEBHOOK_SECRET": SECRET, "GITHUB_API_URL": fake.url,
                       "SWEEPBOT_DB": db, "SWEEPBOT_WORKERS": str(args.workers), "SWEEPBOT_WRITES_PER_MINUTE": "0",
                       "LOG_LEVEL": "ERROR"}
                procs.append(start_server_process(port, env, cwd=tmp, stdout=subprocess.DEVNULL,
                                                  stderr=subprocess.DEVNULL))
            for r in range(args.rounds):
                bodies = seed(fake, 1 + r * args.prs, args.prs)
                since = len(fake.requests())
                urls = [f"http://127.0.0.1:{port}/webhook" for port in ports]
                per_url = [bodies[i::len(urls)] for i in range(len(urls))]
                started = time.perf_counter()

                async def send_all() -> None:
                    await asyncio.gather(*(send(url, part, 20) for url, part in zip(urls, per_url)))

                asyncio.run(send_all())
                elapsed = max(drained(port, started) for port in ports)
                made = fake.requests(since)
                per_pr = welcomes_per_pr(fake, since)
                workers = args.workers * len(dbs)
                floor = len(made) * args.latency / workers
                rounds.append({"s": elapsed, "requests": len(made), "floor": floor, "ratio": elapsed / floor,
                               "once": sum(1 for n in per_pr.values() if n == 1),
                               "doubled": sum(1 for n in per_pr.values() if n > 1)})
                print(f"  {name} round {r + 1}: {elapsed:.1f} s, {len(made)} requests, floor {floor:.1f} s, "
                      f"{elapsed / floor:.2f}x, welcomed once {rounds[-1]['once']}/{args.prs}", flush=True)
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(30)
    median = sorted(rounds, key=lambda row: row["s"])[len(rounds) // 2]
    return {"name": name, "replicas": len(dbs), **median, "all_s": [row["s"] for row in rounds]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default="auto", help="PostgreSQL server URL (a fresh database per set-up); `auto`: "
                                                     "the tests' throwaway server; `none`: SQLite only")
    parser.add_argument("--prs", type=int, default=300)
    parser.add_argument("--latency", type=float, default=0.1, help="seconds each GitHub request is answered late")
    parser.add_argument("--workers", type=int, default=8, help="workers per process")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    key = _generate_key()
    server = None
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            rows.append(setup("SQLite, 1 process", [str(Path(tmp) / "bench.db")], args, key))
        if args.db != "none":
            from intake import fresh_database

            db = args.db
            if db == "auto":
                from postgres import _start  # initdb and pg_ctl in a temporary folder, fsync off

                server = _start()
                db = server.url
            rows.append(setup("PostgreSQL, 1 replica", [fresh_database(db)], args, key))
            rows.append(setup("PostgreSQL, 3 replicas", [fresh_database(db)] * 3, args, key))
    finally:
        if server is not None:
            server.stop()
    print(f"slow-GitHub drain: {args.prs} PR-opened deliveries per round, every GitHub request answered "
          f"{args.latency * 1000:.0f} ms late, {args.workers} workers per process, median of {args.rounds} rounds, "
          f"{os.cpu_count()} cores, everything on one machine")
    print("| set-up | workers | requests | floor s | drained s | × floor | rounds s | welcomed once | doubled |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |")
    for r in rows:
        print(f"| {r['name']} | {args.workers * r['replicas']} | {r['requests']} | {r['floor']:.1f} | {r['s']:.1f} | "
              f"{r['ratio']:.2f} | {' / '.join(f'{s:.1f}' for s in r['all_s'])} | {r['once']}/{args.prs} | "
              f"{r['doubled']} |")
    by_name = {r["name"]: r for r in rows}
    if "PostgreSQL, 3 replicas" in by_name:
        one, three = by_name["PostgreSQL, 1 replica"]["s"], by_name["PostgreSQL, 3 replicas"]["s"]
        print(f"3 replicas vs 1: {one / three:.2f}x faster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
