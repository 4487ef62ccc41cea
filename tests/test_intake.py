"""Webhook intake: signatures, every 4xx, ping, ignored events, the journal before the ack, duplicates."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from harness import REPO, SECRET

from bot.app.server import MAX_BODY
from bot.app.webhook_signature import sign, signature_ok

BODY = b'{"zen": "Keep it logically awesome."}'


@pytest.mark.parametrize(
    "header, secrets, ok",
    [
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
    ],
    ids=[
        "valid",
        "rotated",
        "wrong-secret",
        "uppercased",
        "body-changed",
        "sha1",
        "empty-digest",
        "empty",
        "absent",
        "no-secret",
    ],
)
def test_signature_table(header, secrets, ok):
    assert signature_ok(BODY, header, secrets) is ok


async def _count(h) -> int:
    counts = await h.bot.journal.counts()
    return sum(counts.values())


@pytest.mark.parametrize("case", ["missing", "wrong", "sha1-only"])
async def test_bad_signature_is_401_and_not_stored(harness, case):
    payload = {"action": "opened", "repository": {"full_name": REPO}}
    body = json.dumps(payload).encode()
    kwargs = {
        "missing": {"secret": None},
        "wrong": {"secret": "not-the-secret"},
        "sha1-only": {"secret": None, "headers": {"X-Hub-Signature": "sha1=" + "ab" * 20}},
    }[case]
    resp = await harness.post("pull_request", body=body, **kwargs)
    assert resp.status == 401
    assert await _count(harness) == 0
    assert harness.github.requests == []


@pytest.mark.parametrize(
    "event, delivery, body, content_type, status",
    [
        (None, None, b"{}", "application/json", 400),
        ("pull_request", "", b"{}", "application/json", 400),
        ("pull_request", None, b"not json", "application/json", 400),
        ("pull_request", None, b"[1, 2]", "application/json", 400),
        ("pull_request", None, b"\xff\xfe", "application/json", 400),
        ("pull_request", None, b"payload=%7B%7D", "application/x-www-form-urlencoded", 415),
        ("pull_request", None, b"{}", "text/plain", 415),
    ],
    ids=["no-event", "no-delivery", "not-json", "json-array", "not-utf8", "form-encoded", "text"],
)
async def test_malformed_requests_get_4xx_and_are_not_stored(harness, event, delivery, body, content_type, status):
    resp = await harness.post(event, body=body, delivery=delivery, content_type=content_type)
    assert resp.status == status
    assert "error" in await resp.json()
    assert await _count(harness) == 0


async def test_oversized_declared_body_is_413_before_reading(harness):
    resp = await harness.post("pull_request", body=b"{}", headers={"Content-Length": str(MAX_BODY + 1)})
    assert resp.status == 413
    assert await _count(harness) == 0


async def test_a_streamed_body_of_unknown_length_is_411_before_reading(harness):
    """GitHub says how long its payload is; a body streamed in chunks (no Content-Length) is not read at all."""

    async def chunks():
        piece = b" " * (1024 * 1024)
        for _ in range(26):
            yield piece

    resp = await harness.client.post(
        "/webhook",
        data=chunks(),
        headers={
            "Content-Type": "application/json",
            "X-GitHub-Event": "push",
            "X-GitHub-Delivery": "big",
            "X-Hub-Signature-256": "sha256=" + "0" * 64,
        },
    )
    assert resp.status == 411
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
    writer.write(
        b"POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"X-GitHub-Event: ping\r\nX-GitHub-Delivery: slow\r\nContent-Length: 100\r\n"
        b"X-Hub-Signature-256: sha256=" + b"0" * 64 + b"\r\n\r\n{"
    )
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
    assert 'sweepbot_deliveries_total{event="other",outcome="ignored"} 1.0' in text, "not an event the App asks for"
    assert "sweepbot_backlog" in text and "sweepbot_handler_seconds" in text


async def test_healthz_is_503_when_the_journal_cannot_be_written(harness):
    harness.bot.journal.close()
    resp = await harness.client.get("/healthz")
    assert resp.status == 503
    assert "not writable" in (await resp.json())["journal"]


# -- malformed bodies: every one is a 400 with a clear message, nothing journaled, the server unharmed ---------

DEEP_ARRAYS = b'{"action": "opened", "x": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"
DEEP_OBJECTS = b'{"a": ' * 50_000 + b"1" + b"}" * 50_000


@pytest.mark.parametrize(
    "body, message",
    [
        (DEEP_ARRAYS, "body is nested too deeply to read"),
        (DEEP_OBJECTS, "body is nested too deeply to read"),
        (b'{"action": "opened", "number": ' + b"9" * 5_000 + b"}", "body has a number with more than 4300 digits"),
        (
            b'{"action": "opened", "title": "caf\xe9"}',
            "body is not valid UTF-8 (at byte 34); GitHub sends JSON as UTF-8",
        ),
        ('{"action": "opened"}'.encode("utf-16"), "body is not valid UTF-8 (at byte 0); GitHub sends JSON as UTF-8"),
        (b'{"action": "opened", "action": "closed"}', "body has the key 'action' twice in one JSON object"),
        (b'{"pull_request": {"number": 1, "number": 2}}', "body has the key 'number' twice in one JSON object"),
        (b'{"score": NaN}', "body is not valid JSON: NaN is not a JSON number"),
        (b'{"score": Infinity}', "body is not valid JSON: Infinity is not a JSON number"),
        (b'{"score": -Infinity}', "body is not valid JSON: -Infinity is not a JSON number"),
        (b'{"score": 1e400}', "body has a number out of range: '1e400'"),
        (
            b'{"action": "opened",}',
            "body is not valid JSON: Expecting property name enclosed in double quotes at line 1, column 21",
        ),
        (b'"opened"', "body is not a JSON object (got a string)"),
    ],
    ids=[
        "deep-arrays",
        "deep-objects",
        "huge-int",
        "latin-1",
        "utf-16",
        "duplicate-key",
        "nested-duplicate-key",
        "nan",
        "infinity",
        "minus-infinity",
        "float-overflow",
        "trailing-comma",
        "string",
    ],
)
async def test_malformed_body_is_400_with_its_reason_and_not_journaled(harness, body, message):
    """Regression: a body nested 50,000 deep got HTTP 500 (RecursionError out of json.loads); a huge integer,
    a duplicate key or NaN got a 500, a vague 400 or passed. Each is a 400 saying what is wrong."""
    resp = await harness.post("pull_request", body=body)
    assert resp.status == 400
    assert (await resp.json()) == {"error": message}
    assert await _count(harness) == 0
    assert harness.github.requests == []


async def test_server_still_serves_after_a_deeply_nested_body(harness):
    """The deep body is refused in the handler; the same server then journals a good delivery."""
    assert (await harness.post("pull_request", body=DEEP_OBJECTS)).status == 400
    resp = await harness.post("star", {"action": "created", "repository": {"full_name": REPO}}, delivery="after")
    assert resp.status == 202
    assert (await harness.journal_row("after")).status == "ignored"
    metrics = await (await harness.client.get("/metrics")).text()
    assert 'sweepbot_deliveries_total{event="pull_request",outcome="malformed"} 1.0' in metrics


OBJECT_FIELDS = [
    "repository",
    "installation",
    "sender",
    "pull_request",
    "issue",
    "comment",
    "review",
    "workflow_run",
    "check_suite",
    "check_run",
    "requested_action",
    "client_payload",
]


@pytest.mark.parametrize("field", OBJECT_FIELDS)
@pytest.mark.parametrize(
    "value, kind",
    [("x", "a string"), ([], "an array"), (7, "a number"), (True, "a boolean")],
    ids=["string", "array", "number", "boolean"],
)
async def test_payload_field_that_must_be_an_object_is_400(harness, field, value, kind):
    resp = await harness.post("pull_request", {"action": "opened", field: value})
    assert resp.status == 400
    assert (await resp.json()) == {"error": f"payload field {field!r} must be a JSON object, got {kind}"}
    assert await _count(harness) == 0


@pytest.mark.parametrize("field", [f for f in OBJECT_FIELDS if f != "client_payload"])
async def test_payload_field_that_must_be_an_object_is_400_when_null(harness, field):
    resp = await harness.post("pull_request", {"action": "opened", field: None})
    assert resp.status == 400
    assert (await resp.json()) == {"error": f"payload field {field!r} must be a JSON object, got null"}
    assert await _count(harness) == 0


@pytest.mark.parametrize(
    "full_name, got",
    [
        (7, "a number"),
        (None, "null"),
        (["acme", "x"], "an array"),
        ("", "''"),
        ("acme", "'acme'"),
        ("acme/x/y", "'acme/x/y'"),
        ("../x", "'../x'"),
        ("acme/..", "'acme/..'"),
        ("acme/x?page=2", "'acme/x?page=2'"),
        ("acme /x", "'acme /x'"),
        ("a" * 200 + "/x", repr("a" * 60 + "...")),
    ],
    ids=[
        "number",
        "null",
        "array",
        "empty",
        "no-slash",
        "two-slashes",
        "dot-dot-owner",
        "dot-dot-name",
        "query",
        "space",
        "long",
    ],
)
async def test_repository_full_name_must_be_owner_slash_name(harness, full_name, got):
    resp = await harness.post("pull_request", {"action": "opened", "repository": {"full_name": full_name}})
    assert resp.status == 400
    assert (await resp.json()) == {
        "error": f"payload field 'repository.full_name' must be a string owner/name, got {got}"
    }
    assert await _count(harness) == 0


@pytest.mark.parametrize(
    "installation_id, kind",
    [("1", "a string"), (1.0, "a number"), (True, "a boolean"), (None, "null"), ({"id": 1}, "an object")],
    ids=["string", "float", "boolean", "null", "object"],
)
async def test_installation_id_must_be_an_integer(harness, installation_id, kind):
    resp = await harness.post("pull_request", {"action": "opened", "installation": {"id": installation_id}})
    assert resp.status == 400
    assert (await resp.json()) == {"error": f"payload field 'installation.id' must be an integer, got {kind}"}
    assert await _count(harness) == 0


@pytest.mark.parametrize(
    "payload",
    [
        {"action": "go", "client_payload": None, "repository": {"full_name": REPO}, "installation": {"id": 1}},
        {"action": "created", "repository": {"full_name": "acme/.github"}},
        {"action": "created", "repository": {"full_name": "some_org/my.repo-2"}, "installation": {"id": 12345678901}},
        {"action": "created", "repository": {}, "installation": {}},
        {"action": "created", "score": 0.5, "title": "café 中文 \u2028"},
    ],
    ids=["null-client-payload", "dot-github", "underscore-dot-dash", "empty-objects", "float-and-unicode"],
)
async def test_well_formed_payloads_still_pass(harness, payload):
    delivery = str(uuid.uuid4())
    resp = await harness.post("star", payload, delivery=delivery)
    assert resp.status == 202, await resp.text()
    assert (await harness.journal_row(delivery)).status == "ignored"
