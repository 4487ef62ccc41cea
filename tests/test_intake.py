"""Webhook intake: signatures, every 4xx, ping, ignored events, the journal before the ack, duplicates."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest

from bot.cli import sign
from bot.server import MAX_BODY, signature_ok
from harness import REPO, SECRET

BODY = b'{"zen": "Keep it logically awesome."}'


@pytest.mark.parametrize("header, secrets, ok", [
    (sign(BODY, SECRET), (SECRET,), True),
    (sign(BODY, "new"), ("old", "new"), True),  # rotation: either secret verifies
    (sign(BODY, "other"), (SECRET,), False),
    (sign(BODY, SECRET).upper(), (SECRET,), False),
    (sign(BODY + b" ", SECRET), (SECRET,), False),  # computed over the raw body, byte for byte
    ("sha1=" + "0" * 40, (SECRET,), False),
    ("sha256=", (SECRET,), False),
    ("", (SECRET,), False),
    (None, (SECRET,), False),
    (sign(BODY, SECRET), (), False),  # no secret configured: nothing verifies
], ids=["valid", "rotated", "wrong-secret", "uppercased", "body-changed", "sha1", "empty-digest", "empty", "absent",
        "no-secret"])
def test_signature_table(header, secrets, ok):
    assert signature_ok(BODY, header, secrets) is ok


async def _count(h) -> int:
    counts = await h.bot.journal.counts()
    return sum(counts.values())


@pytest.mark.parametrize("case", ["missing", "wrong", "sha1-only"])
async def test_bad_signature_is_401_and_not_stored(harness, case):
    payload = {"action": "opened", "repository": {"full_name": REPO}}
    body = json.dumps(payload).encode()
    kwargs = {"missing": {"secret": None},
              "wrong": {"secret": "not-the-secret"},
              "sha1-only": {"secret": None, "headers": {"X-Hub-Signature": "sha1=" + "ab" * 20}}}[case]
    resp = await harness.post("pull_request", body=body, **kwargs)
    assert resp.status == 401
    assert await _count(harness) == 0
    assert harness.github.requests == []


@pytest.mark.parametrize("event, delivery, body, content_type, status", [
    (None, None, b"{}", "application/json", 400),
    ("pull_request", "", b"{}", "application/json", 400),
    ("pull_request", None, b"not json", "application/json", 400),
    ("pull_request", None, b"[1, 2]", "application/json", 400),
    ("pull_request", None, b"\xff\xfe", "application/json", 400),
    ("pull_request", None, b"payload=%7B%7D", "application/x-www-form-urlencoded", 415),
    ("pull_request", None, b"{}", "text/plain", 415),
], ids=["no-event", "no-delivery", "not-json", "json-array", "not-utf8", "form-encoded", "text"])
async def test_malformed_requests_get_4xx_and_are_not_stored(harness, event, delivery, body, content_type, status):
    resp = await harness.post(event, body=body, delivery=delivery, content_type=content_type)
    assert resp.status == status
    assert "error" in await resp.json()
    assert await _count(harness) == 0


async def test_oversized_declared_body_is_413_before_reading(harness):
    resp = await harness.post("pull_request", body=b"{}", headers={"Content-Length": str(MAX_BODY + 1)})
    assert resp.status == 413
    assert await _count(harness) == 0


async def test_oversized_streamed_body_is_413(harness):
    async def chunks():
        piece = b" " * (1024 * 1024)
        for _ in range(26):
            yield piece

    resp = await harness.client.post("/webhook", data=chunks(), headers={
        "Content-Type": "application/json", "X-GitHub-Event": "push", "X-GitHub-Delivery": "big",
        "X-Hub-Signature-256": "sha256=" + "0" * 64})
    assert resp.status == 413
    assert await _count(harness) == 0


async def test_ping_is_200(harness):
    resp = await harness.post("ping", {"zen": "Design for failure.", "hook_id": 1})
    assert resp.status == 200
    assert (await resp.json())["msg"] == "pong"


async def test_unwanted_event_is_2xx_and_recorded_as_ignored(harness):
    delivery = str(uuid.uuid4())
    resp = await harness.post("star", {"action": "created", "repository": {"full_name": REPO}}, delivery=delivery)
    assert resp.status == 202
    row = await harness.journal_row(delivery)
    assert row.status == "ignored"
    assert harness.github.requests == []


async def test_accepted_delivery_is_journaled_before_the_ack(make_harness):
    """With no workers the ack can only come from the journal write: the row must be there, queued, with its body."""
    harness = await make_harness(workers=0)
    payload = harness.github.pull_request_payload(REPO, 1, "opened")
    resp = await harness.post("pull_request", payload, delivery="d-1")
    assert resp.status == 202
    row = await harness.journal_row("d-1")
    assert (row.status, row.event, row.action, row.repo, row.number) == ("queued", "pull_request", "opened", REPO, 1)
    assert json.loads(row.body) == payload
    assert harness.github.requests == []


async def test_duplicate_delivery_is_2xx_and_processed_once(harness):
    h = harness
    payload = h.github.pull_request_payload(REPO, 1, "opened")
    first = await h.deliver("pull_request", payload, delivery="same-id")
    writes = len(h.github.writes)
    second = await h.deliver("pull_request", payload, delivery="same-id")
    assert (first.status, second.status) == (202, 200)
    assert (await second.json())["status"] == "duplicate"
    assert len(h.github.writes) == writes
    assert (await h.journal_row("same-id")).attempts == 1


async def test_slow_client_gets_408_and_does_not_stall_others(harness):
    """A client that sends headers and then stalls is cut off by the read timeout; others are served meanwhile."""
    host, port = harness.client.server.host, harness.client.server.port
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(b"POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"X-GitHub-Event: ping\r\nX-GitHub-Delivery: slow\r\nContent-Length: 100\r\n\r\n{")
    await writer.drain()
    started = asyncio.get_running_loop().time()
    fast = await harness.post("ping", {"zen": "x"})
    assert fast.status == 200
    assert asyncio.get_running_loop().time() - started < 0.5
    status_line = await asyncio.wait_for(reader.readline(), 5)
    assert b" 408 " in status_line
    writer.close()


async def test_healthz_and_metrics(harness):
    await harness.post("star", {"action": "created"})
    health = await harness.client.get("/healthz")
    report = await health.json()
    assert health.status == 200
    assert report["journal"] == "writable" and report["ok"] is True
    assert report["backlog"] == 0
    metrics = await harness.client.get("/metrics")
    text = await metrics.text()
    assert metrics.headers["Content-Type"].startswith("text/plain")
    assert 'sweepbot_deliveries_total{event="star",outcome="ignored"} 1.0' in text
    assert "sweepbot_backlog" in text and "sweepbot_handler_seconds" in text


async def test_healthz_is_503_when_the_journal_cannot_be_written(harness):
    harness.bot.journal.close()
    resp = await harness.client.get("/healthz")
    assert resp.status == 503
    assert "not writable" in (await resp.json())["journal"]
