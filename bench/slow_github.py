"""Draining when GitHub is slow: are the workers busy waiting on GitHub, or idle while deliveries are ready?

Every fake GitHub request is answered 100 ms late (`--latency`), as a real GitHub is. 300 PR-opened deliveries
(`--prs`) are sent at once; the clock runs from the first send until the backlog is empty. The floor is the
time the workers would take if each of them waited on GitHub all the time: requests made × latency ÷ workers
(every worker of every replica). Three set-ups, one run: SQLite with one process, PostgreSQL with one replica,
PostgreSQL with three replicas on one database (the deliveries spread over them). Each set-up gets its own fake
GitHub and `--rounds` rounds of fresh PRs on the same processes; the median round is reported. Every PR must be
welcomed exactly once.

    .venv/bin/python bench/slow_github.py [--db auto|postgresql://…] [--prs 300] [--latency 0.1] [--workers 8]
        [--setups sqlite,pg1,pg3] [--log-dir DIR] [--log-level WARNING]

`--setups pg1` runs only the one-replica PostgreSQL set-up (where a lone replica once locked itself out).
Each server's log (JSON lines at `--log-level`, warnings and up by default) is kept in `--log-dir` when given;
the table counts its "lease lost" lines either way.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from harness import free_port, start_server_process  # noqa: E402
from harness import process_health as health  # noqa: E402

from bench.drain import REPO, SECRET, seed, send, welcomes_per_pr  # noqa: E402
from bot.app.sandbox import _generate_key  # noqa: E402
from bot.testing.server import FakeGitHubProcess  # noqa: E402


def drained(port: int, started: float, timeout: float = 600.0) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if health(port).get("backlog") == 0:
            return time.perf_counter() - started
        time.sleep(0.02)
    raise RuntimeError(f"not drained within {timeout} s: {health(port)}")


SETUPS = {"sqlite": "SQLite, 1 process", "pg1": "PostgreSQL, 1 replica", "pg3": "PostgreSQL, 3 replicas"}
LEASE_LOST = "lease lost"


def setup(name: str, dbs: list[str], args: argparse.Namespace, key: str) -> dict:
    """One set-up: its own fake GitHub, one server per entry of `dbs`, `args.rounds` rounds; the median round."""
    rounds = []
    logs: list[Path] = []
    with tempfile.TemporaryDirectory() as tmp, FakeGitHubProcess() as fake:
        fake.add_repo(REPO, default_branch="main", installation_id=1)
        fake.set_rate_limit(1_000_000)
        fake.set_latency(None, r"^/", args.latency)
        ports = [free_port() for _ in dbs]
        procs = []
        try:
            folder = Path(args.log_dir) if args.log_dir else Path(tmp)
            folder.mkdir(parents=True, exist_ok=True)
            for i, (db, port) in enumerate(zip(dbs, ports)):
                env = {
                    "APP_ID": "1",
                    "PRIVATE_KEY": key,
                    "WEBHOOK_SECRET": SECRET,
                    "GITHUB_API_URL": fake.url,
                    "SWEEPBOT_DB": db,
                    "SWEEPBOT_WORKERS": str(args.workers),
                    "SWEEPBOT_WRITES_PER_MINUTE": "0",
                    "LOG_LEVEL": args.log_level,
                }
                logs.append(folder / f"{name.replace(' ', '').replace(',', '-')}-{i}.log")
                with logs[-1].open("wb") as log:
                    procs.append(start_server_process(port, env, cwd=tmp, stdout=log, stderr=subprocess.STDOUT))
            for r in range(args.rounds):
                bodies = seed(fake, 1 + r * args.prs, args.prs)
                since = len(fake.requests())
                urls = [f"http://127.0.0.1:{port}/webhook" for port in ports]
                per_url = [bodies[i :: len(urls)] for i in range(len(urls))]
                started = time.perf_counter()

                async def send_all(urls: list[str], per_url: list[list[bytes]]) -> None:
                    await asyncio.gather(*(send(url, part, 20) for url, part in zip(urls, per_url)))

                asyncio.run(send_all(urls, per_url))
                elapsed = max(drained(port, started) for port in ports)
                made = fake.requests(since)
                per_pr = welcomes_per_pr(fake, since)
                workers = args.workers * len(dbs)
                floor = len(made) * args.latency / workers
                rounds.append(
                    {
                        "s": elapsed,
                        "requests": len(made),
                        "floor": floor,
                        "ratio": elapsed / floor,
                        "once": sum(1 for n in per_pr.values() if n == 1),
                        "doubled": sum(1 for n in per_pr.values() if n > 1),
                    }
                )
                print(
                    f"  {name} round {r + 1}: {elapsed:.1f} s, {len(made)} requests, floor {floor:.1f} s, "
                    f"{elapsed / floor:.2f}x, welcomed once {rounds[-1]['once']}/{args.prs}",
                    flush=True,
                )
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(30)
        lost = sum(log.read_text(errors="replace").count(LEASE_LOST) for log in logs)
    median = sorted(rounds, key=lambda row: row["s"])[len(rounds) // 2]
    return {"name": name, "replicas": len(dbs), **median, "all_s": [row["s"] for row in rounds], "lost": lost}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--db",
        default="auto",
        help="PostgreSQL server URL (a fresh database per set-up); `auto`: "
        "the tests' throwaway server; `none`: SQLite only",
    )
    parser.add_argument("--prs", type=int, default=300)
    parser.add_argument("--latency", type=float, default=0.1, help="seconds each GitHub request is answered late")
    parser.add_argument("--workers", type=int, default=8, help="workers per process")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--setups",
        default=",".join(SETUPS),
        help=f"which set-ups, comma-separated, of {', '.join(SETUPS)} (default: all)",
    )
    parser.add_argument("--log-dir", help="keep each server's log in this folder")
    parser.add_argument("--log-level", default="WARNING", help="the servers' LOG_LEVEL (default: WARNING)")
    args = parser.parse_args(argv)
    chosen = [s.strip() for s in args.setups.split(",") if s.strip()]
    unknown = sorted(set(chosen) - set(SETUPS))
    if unknown:
        parser.error(f"unknown set-up {', '.join(unknown)}: choose among {', '.join(SETUPS)}")
    key = _generate_key()
    server = None
    rows = []
    try:
        if "sqlite" in chosen:
            with tempfile.TemporaryDirectory() as tmp:
                rows.append(setup(SETUPS["sqlite"], [str(Path(tmp) / "bench.db")], args, key))
        if args.db != "none" and {"pg1", "pg3"} & set(chosen):
            from bench.intake import fresh_database

            db = args.db
            if db == "auto":
                from postgres import _start  # initdb and pg_ctl in a temporary folder, fsync off

                server = _start()
                db = server.url
            if "pg1" in chosen:
                rows.append(setup(SETUPS["pg1"], [fresh_database(db)], args, key))
            if "pg3" in chosen:
                rows.append(setup(SETUPS["pg3"], [fresh_database(db)] * 3, args, key))
    finally:
        if server is not None:
            server.stop()
    print(
        f"slow-GitHub drain: {args.prs} PR-opened deliveries per round, every GitHub request answered "
        f"{args.latency * 1000:.0f} ms late, {args.workers} workers per process, median of {args.rounds} rounds, "
        f"{os.cpu_count()} cores, everything on one machine"
    )
    print(
        "| set-up | workers | requests | floor s | drained s | × floor | rounds s | welcomed once | doubled "
        "| leases lost |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |")
    for r in rows:
        print(
            f"| {r['name']} | {args.workers * r['replicas']} | {r['requests']} | {r['floor']:.1f} | {r['s']:.1f} | "
            f"{r['ratio']:.2f} | {' / '.join(f'{s:.1f}' for s in r['all_s'])} | {r['once']}/{args.prs} | "
            f"{r['doubled']} | {r['lost']} |"
        )
    by_name = {r["name"]: r for r in rows}
    if "PostgreSQL, 3 replicas" in by_name and "PostgreSQL, 1 replica" in by_name:
        one, three = by_name["PostgreSQL, 1 replica"]["s"], by_name["PostgreSQL, 3 replicas"]["s"]
        print(f"3 replicas vs 1: {one / three:.2f}x faster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
