"""Intake benchmark: signed 20 KB deliveries at rising concurrency; acks/s and ack latency with the journal on."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))  # bench.drain, for --drain

from harness import free_port, start_server_process  # noqa: E402  (shared with the crash test)

from bot.app.webhook_signature import sign  # noqa: E402

SECRET = "bench-secret"
PAYLOAD_BYTES = 20 * 1024
LEVELS = (1, 4, 16, 64)


def payload(size: int = PAYLOAD_BYTES) -> bytes:
    comment: dict[str, object] = {"id": 1, "body": "", "user": {"login": "someone", "type": "User"}}
    base = {
        "action": "created",
        "issue": {"number": 7, "pull_request": {"url": "x"}},
        "comment": comment,
        "repository": {"full_name": "bench/InferenceX", "default_branch": "main"},
        "installation": {"id": 1},
    }
    filler = size - len(json.dumps(base))
    comment["body"] = "benchmark text " * (filler // 15) + "x" * (filler % 15)
    return json.dumps(base).encode()


def start_server(db: str, port: int, workers: int):
    return start_server_process(
        port,
        {"SWEEPBOT_DB": db, "WEBHOOK_SECRET": SECRET, "LOG_LEVEL": "ERROR", "SWEEPBOT_WORKERS": str(workers)},
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def level(url: str | list[str], body: bytes, concurrency: int, total: int) -> dict:
    """`total` deliveries from `concurrency` clients; with several URLs (replicas), client i posts to URL i mod n."""
    urls = [url] if isinstance(url, str) else url
    signature = sign(body, SECRET)
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    remaining = total

    async def client(session: aiohttp.ClientSession, url: str) -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            headers = {
                "Content-Type": "application/json",
                "X-GitHub-Event": "issue_comment",
                "X-GitHub-Delivery": str(uuid.uuid4()),
                "X-Hub-Signature-256": signature,
            }
            started = time.perf_counter()
            async with session.post(url, data=body, headers=headers) as resp:
                await resp.read()
            latencies.append(time.perf_counter() - started)
            statuses[resp.status] = statuses.get(resp.status, 0) + 1

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        started = time.perf_counter()
        await asyncio.gather(*(client(session, urls[i % len(urls)]) for i in range(concurrency)))
        elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "concurrency": concurrency,
        "requests": total,
        "acks_per_s": total / elapsed,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
        "statuses": statuses,
    }


async def run(url: str | list[str], requests: int, rounds: int) -> list[dict]:
    body = payload()
    await level(url, body, 4, 200)  # warm-up: connections, page cache, WAL file
    rows = []
    for concurrency in LEVELS:
        samples = [await level(url, body, concurrency, requests) for _ in range(rounds)]
        best = sorted(samples, key=lambda s: s["acks_per_s"])[len(samples) // 2]  # the median round
        rows.append(best)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--url",
        help="a running server's /webhook (its WEBHOOK_SECRET must be bench-secret); "
        "default: start one with a fresh journal",
    )
    parser.add_argument("--requests", type=int, default=2000, help="requests per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per level; the median round is printed")
    parser.add_argument(
        "--workers",
        type=int,
        default=0,
        help="server workers (0: intake only, so the figures are the intake's and the journal's)",
    )
    parser.add_argument(
        "--db",
        help="also measure the journal on PostgreSQL at this URL (a fresh database is "
        "created there per configuration), 1 and 3 replicas beside SQLite; `auto`: "
        "start a throwaway server with initdb/pg_ctl",
    )
    parser.add_argument(
        "--drain", action="store_true", help="workers on, the fake GitHub in its own process: see bench/drain.py"
    )
    args, rest = parser.parse_known_args()
    if args.drain:
        from bench import drain

        return drain.main(rest)
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.db:
        return compare_backends(args.db, args.requests, args.rounds)
    proc = None
    tmp = tempfile.TemporaryDirectory()
    url = args.url
    if url is None:
        port = free_port()
        proc = start_server(str(Path(tmp.name) / "bench.db"), port, args.workers)
        url = f"http://127.0.0.1:{port}/webhook"
    try:
        rows = asyncio.run(run(url, args.requests, args.rounds))
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(30)
        tmp.cleanup()
    print(
        f"intake benchmark: {PAYLOAD_BYTES // 1024} KB signed deliveries, journal SQLite WAL synchronous=FULL, "
        f"{os.cpu_count()} cores, client and server on one machine; median of {args.rounds} rounds"
    )
    print("| concurrency | requests | acks/s | p50 ms | p99 ms | statuses |")
    print("| ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        print(
            f"| {r['concurrency']} | {r['requests']} | {r['acks_per_s']:.0f} | {r['p50_ms']:.2f} | "
            f"{r['p99_ms']:.2f} | {r['statuses']} |"
        )
    return 0


def fresh_database(url: str) -> str:
    """A new empty database beside the one `url` names; its URL."""
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    name = f"sweepbot_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(url)  # a URL again (a key=value conninfo would read as an SQLite file name)
    return urlunsplit(parts._replace(path="/" + name))


def journal_rows(url: str) -> int:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM deliveries").fetchone()
        assert row is not None  # count(*) answers one row
        return row[0]


def measure(dbs: list[str], requests: int, rounds: int) -> list[dict]:
    """Intake only (no workers) on one server per entry of `dbs`, the clients spread over them."""
    from bot.delivery.journal import is_postgres

    assert all(is_postgres(db) for db in dbs) or len(dbs) == 1, dbs
    ports = [free_port() for _ in dbs]
    procs = [start_server(db, port, 0) for db, port in zip(dbs, ports)]
    try:
        return asyncio.run(run([f"http://127.0.0.1:{port}/webhook" for port in ports], requests, rounds))
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(30)


def compare_backends(db: str, requests: int, rounds: int) -> int:
    server = None
    if db == "auto":
        from postgres import _start  # the tests' throwaway server: initdb and pg_ctl in a temporary folder

        server = _start()
        db = server.url
    results = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            results["SQLite, 1 replica"] = measure([str(Path(tmp) / "bench.db")], requests, rounds)
        single, shared = fresh_database(db), fresh_database(db)
        results["PostgreSQL, 1 replica"] = measure([single], requests, rounds)
        results["PostgreSQL, 3 replicas"] = measure([shared] * 3, requests, rounds)
        rows = {name: journal_rows(url) for name, url in (("1 replica", single), ("3 replicas", shared))}
    finally:
        if server is not None:
            server.stop()
    print(
        f"intake benchmark: {PAYLOAD_BYTES // 1024} KB signed deliveries, intake only (no workers), "
        f"{os.cpu_count()} cores, clients, servers and database on one machine; median of {rounds} rounds of "
        f"{requests}; PostgreSQL with fsync=off when `auto`"
    )
    print("| journal | concurrency | acks/s | p50 ms | p99 ms | statuses |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    print(f"(deliveries recorded in PostgreSQL, warm-up included: {rows})")
    for name, measured in results.items():
        for r in measured:
            print(
                f"| {name} | {r['concurrency']} | {r['acks_per_s']:.0f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | "
                f"{r['statuses']} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
