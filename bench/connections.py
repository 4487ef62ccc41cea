"""Connections to GitHub under a burst: one httpx pool against the App's small pools (`ConnectionShards`).

A plain aiohttp server in a process of its own answers every request `--latency` late (150 ms, as the gate
bench's GitHub). The client sends `--requests` GETs (300), at most `--in-flight` (90) under way at once, as
the App's budget allows, `--bursts` times (5) on the same clients, and measures each burst's wall time and the
client process's CPU per request. Three set-ups, one run:

- one client, httpx's default pool (100 connections, 20 kept open between requests): sweepbot before;
- one client keeping as many connections open as may be under way (90);
- `ConnectionShards.for_budget`: pools of 15, each request on the least busy one (sweepbot now).

The first burst opens the connections; the median burst is reported.

    .venv/bin/python bench/connections.py [--requests 300] [--in-flight 90] [--latency 0.15] [--bursts 5]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import sys
import time
from multiprocessing.sharedctypes import Synchronized
from pathlib import Path

import httpx
from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.github.client import HTTP_TIMEOUT  # noqa: E402
from bot.github.connections import ConnectionShards  # noqa: E402

BODY = {"sha": "0" * 40, "padding": "x" * 2000}  # about the size of a small GitHub answer


def serve(port: Synchronized[int], opened: Synchronized[int], latency: float) -> None:
    peers: set[object] = set()

    async def answer(request: web.Request) -> web.Response:
        peer = request.transport.get_extra_info("peername") if request.transport else None
        if peer not in peers:  # a connection not seen before (the client's port tells them apart)
            peers.add(peer)
            opened.value += 1
        await asyncio.sleep(latency)
        return web.json_response(BODY)

    async def main() -> None:
        app = web.Application()
        app.router.add_get("/item", answer)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port.value = runner.addresses[0][1]
        await asyncio.Event().wait()

    asyncio.run(main())


def setups(in_flight: int) -> list[tuple[str, ConnectionShards]]:
    kept = httpx.Limits(max_connections=100, max_keepalive_connections=in_flight)
    return [
        ("one pool, httpx's default (20 kept open)", ConnectionShards([httpx.AsyncClient(timeout=HTTP_TIMEOUT)])),
        (
            f"one pool keeping {in_flight} open",
            ConnectionShards([httpx.AsyncClient(timeout=HTTP_TIMEOUT, limits=kept)]),
        ),
        ("ConnectionShards.for_budget (pools of 15)", ConnectionShards.for_budget(in_flight, HTTP_TIMEOUT)),
    ]


async def burst(
    shards: ConnectionShards, url: str, requests: int, in_flight: int, opened: Synchronized[int]
) -> tuple[float, float, int]:
    """(wall seconds, client CPU seconds, connections opened) for `requests` GETs, at most `in_flight` at once."""
    places = asyncio.Semaphore(in_flight)

    async def one() -> None:
        async with places:
            response = await shards.request("GET", url, {"accept": "application/json"}, b"")
            assert response.status_code == 200 and response.json()["sha"] == BODY["sha"]

    wall, cpu, before = time.perf_counter(), time.process_time(), opened.value
    await asyncio.gather(*(one() for _ in range(requests)))
    return time.perf_counter() - wall, time.process_time() - cpu, opened.value - before


async def measure(url: str, args: argparse.Namespace, opened: Synchronized[int]) -> list[str]:
    lines = []
    for name, shards in setups(args.in_flight):
        try:
            figures = [await burst(shards, url, args.requests, args.in_flight, opened) for _ in range(args.bursts)]
        finally:
            await shards.aclose()
        first, rest = figures[0], figures[1:] or figures
        wall = statistics.median(f[0] for f in rest)
        cpu_ms = statistics.median(f[1] for f in rest) * 1000 / args.requests
        new = statistics.median(f[2] for f in rest)
        lines.append(
            f"{name}: median burst {wall:.2f} s, client CPU {cpu_ms:.2f} ms a request, {new:g} connections "
            f"opened a burst (first burst: {first[0]:.2f} s, {first[1] * 1000 / args.requests:.2f} ms, "
            f"{first[2]} opened)"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--in-flight", type=int, default=90)
    parser.add_argument("--latency", type=float, default=0.15, help="seconds the server waits before answering")
    parser.add_argument("--bursts", type=int, default=5)
    args = parser.parse_args(argv)
    port, opened = multiprocessing.Value("i", 0), multiprocessing.Value("i", 0)
    server = multiprocessing.Process(target=serve, args=(port, opened, args.latency), daemon=True)
    server.start()
    try:
        deadline = time.monotonic() + 10
        while not port.value:
            if time.monotonic() > deadline or not server.is_alive():
                raise RuntimeError("the answering server did not start")
            time.sleep(0.01)
        floor = -(-args.requests // args.in_flight) * args.latency
        print(
            f"connections: {args.requests} GETs a burst, at most {args.in_flight} under way, each answered "
            f"{args.latency * 1000:g} ms late by a server in its own process (floor {floor:.2f} s a burst); "
            f"{args.bursts} bursts per set-up, httpx {httpx.__version__}"
        )
        for line in asyncio.run(measure(f"http://127.0.0.1:{port.value}/item", args, opened)):
            print(line)
    finally:
        server.terminate()
        server.join(5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
