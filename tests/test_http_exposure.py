"""What a stranger who reaches the webhook's port can cost the bot: no body read before the signature header is
checked, no /metrics series of their choosing, no connection held open by trickled headers."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from aiohttp import web
from harness import REPO, SECRET

from bot.app import cli, header_deadline
from bot.app.header_deadline import HeaderDeadline
from bot.app.server import MAX_BODY, make_app
from bot.app.webhook_signature import sign


async def exchange(port: int, head: bytes, body: bytes = b"", *, seconds: float = 30.0) -> bytes:
    """Send `head` (and `body`) on a fresh connection; the server's answer, its head and then its body as long as
    its Content-Length says. Not until the server closes: after refusing a body it was never sent, aiohttp lingers
    10 s reading it first, which tested nothing and cost each test here 10 s."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head + body)
    await writer.drain()

    async def answer() -> bytes:
        got = await reader.readuntil(b"\r\n\r\n")
        length = re.search(rb"(?im)^content-length: *(\d+)", got)
        return got + (await reader.readexactly(int(length[1])) if length else b"")

    try:
        return await asyncio.wait_for(answer(), seconds)
    finally:
        writer.close()


async def test_an_unsigned_request_declaring_24_mb_is_refused_before_its_body_is_sent(harness):
    """Regression: the body was read before the signature header was looked at, so an unsigned request declaring
    24 MB held the connection until a 408 after the read timeout."""
    head = (
        f"POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-GitHub-Event: push\r\n"
        f"X-GitHub-Delivery: big\r\nContent-Length: {24 * 1024 * 1024}\r\n\r\n"
    ).encode()
    answer = await exchange(harness.client.server.port, head)  # not a byte of the body: the answer comes anyway
    assert answer.startswith(b"HTTP/1.1 401 "), answer[:80]
    assert b"X-Hub-Signature-256" in answer


async def test_a_signed_looking_request_over_the_limit_is_413_before_its_body_is_sent(harness):
    head = (
        f"POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-GitHub-Event: push\r\n"
        f"X-GitHub-Delivery: big\r\nX-Hub-Signature-256: sha256={'0' * 64}\r\n"
        f"Content-Length: {MAX_BODY + 1}\r\n\r\n"
    ).encode()
    answer = await exchange(harness.client.server.port, head)
    assert answer.startswith(b"HTTP/1.1 413 ")


async def test_event_names_a_request_makes_up_add_no_metrics_series(harness):
    """Regression: each unsigned request added a /metrics series named by its own X-GitHub-Event header (200 of
    them took /metrics from 846 to 53,903 bytes, without bound)."""
    before = len(await (await harness.client.get("/metrics")).read())
    for i in range(200):
        await harness.post(f"made-up-event-{i}", {"n": i}, secret="not-the-secret")
    for i in range(20):  # signed too: a name GitHub would never send is counted as "other"
        await harness.post(f"signed-made-up-{i}", {"action": "x", "repository": {"full_name": REPO}})
    text = (await (await harness.client.get("/metrics")).read()).decode()
    assert "made-up" not in text
    assert 'sweepbot_deliveries_total{event="other",outcome="unauthorized"} 200.0' in text
    assert 'sweepbot_deliveries_total{event="other",outcome="ignored"} 20.0' in text
    assert len(text) - before < 1_000


def test_every_event_the_manifest_asks_for_is_counted_by_name():
    from bot.core.config import load_app_yaml
    from bot.telemetry.metrics import COUNTED_EVENTS

    assert set(load_app_yaml()["manifest"]["default_events"]) <= COUNTED_EVENTS


# -- headers that never finish ---------------------------------------------------------------------------------


@pytest.fixture
async def listening(harness, monkeypatch):
    """The bot's server behind `cli.listen` as `sweepbot serve` starts it, with a short header deadline."""
    monkeypatch.setattr(header_deadline, "HEADER_TIMEOUT", 0.3)
    runner = web.AppRunner(make_app(harness.bot), access_log=None)
    await runner.setup()
    site = await cli.listen(runner, "127.0.0.1", 0, "unused")
    assert site is not None
    yield cli._bound_port(runner, 0)
    await runner.cleanup()


async def test_a_connection_trickling_its_headers_is_closed_at_the_deadline(listening):
    """Regression: connections that sent one header byte every 10 s stayed open (20 of 20 after 95 s)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", listening)
    closed = False
    try:
        for byte in b"GET /livez HTTP/1.1\r\nHost: x\r\n":
            writer.write(bytes([byte]))
            await writer.drain()
            try:
                if await asyncio.wait_for(reader.read(1), 0.05) == b"":
                    closed = True
                    break
            except (TimeoutError, ConnectionError):
                continue
        if not closed:
            closed = await asyncio.wait_for(reader.read(), 30) == b""
    except ConnectionError:
        closed = True
    finally:
        writer.close()
    assert closed


async def test_a_connection_that_never_sends_a_byte_is_closed_at_the_deadline(listening):
    reader, writer = await asyncio.open_connection("127.0.0.1", listening)
    try:
        assert await asyncio.wait_for(reader.read(), 30) == b""
    finally:
        writer.close()


async def test_requests_in_time_pass_one_after_another_on_one_connection(listening):
    """Keep-alive still works: two requests on one connection, the first with a body holding a blank line."""
    body = json.dumps({"zen": "a\r\n\r\nb", "hook_id": 1}).encode()
    first = (
        f"POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-GitHub-Event: ping\r\n"
        f"X-GitHub-Delivery: ping-1\r\nX-Hub-Signature-256: {sign(body, SECRET)}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    second = b"GET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    reader, writer = await asyncio.open_connection("127.0.0.1", listening)
    try:
        writer.write(first)
        await writer.drain()
        answer = await asyncio.wait_for(reader.readuntil(b"}"), 30)  # the pong's JSON body ends with }
        assert answer.startswith(b"HTTP/1.1 200 ") and b"pong" in answer
        writer.write(second)
        await writer.drain()
        rest = await asyncio.wait_for(reader.read(), 30)
    finally:
        writer.close()
    assert re.search(rb"HTTP/1.1 200 .*\{\"ok\": true\}", rest, re.S), rest[:200]


class Recorder:
    """A stand-in for aiohttp's protocol: what it was handed."""

    def __init__(self) -> None:
        self.data = b""

    def connection_made(self, transport) -> None:
        pass

    def data_received(self, data: bytes) -> None:
        self.data += data

    def connection_lost(self, exc) -> None:
        pass


class Transport:
    def __init__(self) -> None:
        self.closed = False

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize(
    "pieces, watching_after, timer_after",
    [
        ([b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"], True, False),
        ([b"GET / HTTP/1.1\r\n", b"Host: x\r", b"\n\r\n"], True, False),  # the blank line split across packets
        ([b"POST / HTTP/1.1\r\nContent-Length: 4\r\n\r\nab", b"\r\n"], True, False),
        ([b"POST / HTTP/1.1\r\nContent-Length: 4\r\n\r\nabcdGET"], True, True),  # the next request has begun
        ([b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n"], False, False),
        ([b"GET / HTTP/1.1\r\nHost: x"], True, True),
    ],
    ids=["one packet", "split blank line", "body in two", "next request", "chunked", "unfinished"],
)
async def test_the_deadline_follows_each_requests_headers(pieces, watching_after, timer_after):
    inner, transport = Recorder(), Transport()
    guard = HeaderDeadline(inner, timeout=60)
    guard.connection_made(transport)
    for piece in pieces:
        guard.data_received(piece)
    assert inner.data == b"".join(pieces), "every byte reaches aiohttp unchanged"
    assert guard.watching is watching_after
    assert (guard._timer is not None) is timer_after
    guard.connection_lost(None)
    assert guard._timer is None
