"""Logs: one JSON line per delivery and per GitHub write, with delivery, event, repository and PR; never a secret."""

from __future__ import annotations

import io
import json
import logging

import pytest

from bot.telemetry import logs
from harness import REPO, SECRET


@pytest.fixture
def log_lines():
    stream = io.StringIO()
    logs.setup("INFO", stream)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    logging.getLogger("sweepbot").handlers[:] = []


async def test_delivery_and_write_lines_carry_context_and_no_secret(harness, log_lines, app_key):
    payload = harness.github.pull_request_payload(REPO, 1, "opened")
    await harness.deliver("pull_request", payload, delivery="log-1")
    lines = log_lines()
    text = "\n".join(json.dumps(line) for line in lines)
    writes = [line for line in lines if line["msg"] == "github write"]
    assert writes, "no GitHub write was logged"
    for line in writes + [line for line in lines if line["msg"] in ("delivery accepted", "delivery done")]:
        assert (line["delivery"], line["event"], line["repo"], line["pr"]) == ("log-1", "pull_request", REPO, 1)
    tokens = {r.token for r in harness.github.requests if r.token}
    assert tokens
    for secret in tokens | {SECRET}:
        assert secret not in text
    assert "PRIVATE KEY" not in text and app_key.splitlines()[1] not in text


@pytest.mark.parametrize("leak", [
    "ghs_" + "a" * 36,
    "github_pat_" + "b" * 40,
    "Bearer eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiIxIn0.c2lnbmF0dXJl",
    "token abcdefghijklmnopqrstuvwxyz012345",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
    "sha256=" + "f" * 64,
])
def test_scrubber_cuts_secret_shapes_even_if_code_passes_one(leak, log_lines):
    logs.event("oops", detail=f"header was {leak}")
    (line,) = log_lines()
    assert leak not in json.dumps(line) and "[redacted]" in line["detail"]


def test_registered_literal_secrets_are_cut(log_lines):
    logs.register_secret("hunter2-rotated")
    logs.event("config", value="secret is hunter2-rotated")
    assert log_lines()[0]["value"] == "secret is [redacted]"
