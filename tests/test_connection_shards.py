"""The App's connections to GitHub: small pools that together hold the whole budget of requests under
way, each request on the least busy pool, and every connection kept open from one burst to the next."""

from __future__ import annotations

import asyncio

import httpx
import respx
from aiohttp import web
from aiohttp.test_utils import TestServer
from harness import REPO

from bot.github.client import HTTP_TIMEOUT, IN_FLIGHT, GitHubApp
from bot.github.connections import SHARD_CONNECTIONS, ConnectionShards
from bot.telemetry.metrics import Metrics
from bot.testing import InMemoryGitHub


def held_transport(seen: list[int], gate: asyncio.Event, shard: int) -> httpx.MockTransport:
    async def answer(_request: httpx.Request) -> httpx.Response:
        seen.append(shard)
        await gate.wait()
        return httpx.Response(200, json={"shard": shard})

    return httpx.MockTransport(answer)


async def test_each_request_goes_to_the_least_busy_pool():
    seen: list[int] = []
    gate = asyncio.Event()
    shards = ConnectionShards([httpx.AsyncClient(transport=held_transport(seen, gate, i)) for i in range(3)])
    sent = [asyncio.create_task(shards.request("GET", "http://github.test/x", {}, b"")) for _ in range(7)]
    await asyncio.sleep(0.01)
    assert shards.busy == (3, 2, 2)
    assert sorted(seen) == [0, 0, 0, 1, 1, 2, 2]
    gate.set()
    answers = await asyncio.gather(*sent)
    assert [a.status_code for a in answers] == [200] * 7
    assert shards.busy == (0, 0, 0)
    await shards.aclose()


async def test_a_request_that_fails_gives_its_place_back():
    async def refuse(_request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused")

    shards = ConnectionShards([httpx.AsyncClient(transport=httpx.MockTransport(refuse))])
    try:
        await shards.request("GET", "http://github.test/x", {}, b"")
    except httpx.ConnectError:
        pass
    else:
        raise AssertionError("the transport's error was swallowed")
    assert shards.busy == (0,)
    await shards.aclose()


def test_the_pools_hold_the_whole_budget():
    shards = ConnectionShards.for_budget(IN_FLIGHT, HTTP_TIMEOUT)
    assert len(shards.clients) * SHARD_CONNECTIONS >= IN_FLIGHT
    assert len(ConnectionShards.for_budget(1, HTTP_TIMEOUT).clients) == 1
    assert len(ConnectionShards.for_budget(SHARD_CONNECTIONS + 1, HTTP_TIMEOUT).clients) == 2


async def test_a_second_burst_opens_no_connection():
    """Regression: through httpx's one default pool (20 connections kept open), a burst of requests under way
    together opened a connection for nearly every request (280 for 300 in `bench/connections.py`), each a TLS
    handshake against api.github.com. The App's pools keep every connection of the first burst for the next."""
    peers: set = set()

    async def answer(request: web.Request) -> web.Response:
        assert request.transport is not None  # the request's connection is open while it is answered
        peers.add(request.transport.get_extra_info("peername"))
        await asyncio.sleep(0.05)
        return web.json_response({"ok": True})

    server = web.Application()
    server.router.add_get("/x", answer)
    async with TestServer(server) as running:
        shards = ConnectionShards.for_budget(IN_FLIGHT, HTTP_TIMEOUT)
        url = str(running.make_url("/x"))

        async def burst() -> None:
            answers = await asyncio.gather(*(shards.request("GET", url, {}, b"") for _ in range(IN_FLIGHT)))
            assert all(a.status_code == 200 for a in answers)

        try:
            await burst()
            first = len(peers)
            await burst()
        finally:
            await shards.aclose()
    assert first == IN_FLIGHT
    assert len(peers) == first, f"the second burst opened {len(peers) - first} connections"


async def test_the_app_sends_through_its_pools(app_key):
    fake = InMemoryGitHub()
    fake.add_repo(REPO, default_branch="main", installation_id=1)
    fake.add_pull(REPO, number=1, head_sha="a" * 40)
    app = GitHubApp(app_id="1", private_key=app_key, api_url="https://api.github.com", metrics=Metrics())
    assert isinstance(app.http, ConnectionShards)
    assert len(app.http.clients) * SHARD_CONNECTIONS >= IN_FLIGHT
    with respx.mock(assert_all_called=False) as router:
        router.route(host="api.github.com").mock(side_effect=fake.handle)
        gh = await app.client(1)
        pull = await gh.getitem(f"/repos/{REPO}/pulls/1")
    await app.close()
    assert pull["head"]["sha"] == "a" * 40
    assert app.http.busy == (0,) * len(app.http.clients)
