"""Logs: one JSON line per delivery and per GitHub write, with delivery, event, repository and PR; never a secret."""

from __future__ import annotations

import io
import json
import logging

import pytest
from harness import REPO, SECRET, github_app

from bot.telemetry import logs


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


@pytest.mark.parametrize(
    "leak",
    [
        "ghs_" + "a" * 36,
        "github_pat_" + "b" * 40,
        "Bearer eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiIxIn0.c2lnbmF0dXJl",
        "token abcdefghijklmnopqrstuvwxyz012345",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
        "sha256=" + "f" * 64,
    ],
)
def test_scrubber_cuts_secret_shapes_even_if_code_passes_one(leak, log_lines):
    logs.event("oops", detail=f"header was {leak}")
    (line,) = log_lines()
    assert leak not in json.dumps(line) and "[redacted]" in line["detail"]


def test_registered_literal_secrets_are_cut(log_lines):
    logs.register_secret("hunter2-rotated")
    logs.event("config", value="secret is hunter2-rotated")
    assert log_lines()[0]["value"] == "secret is [redacted]"


@pytest.fixture
def installation(github):
    github.add_repo(REPO, installation_id=1)
    return github


async def test_a_renewed_installation_token_is_cut_by_its_shape_never_registered(installation, app_key, log_lines):
    """Regression: each renewed installation token was appended to the literal secret list, never
    pruned, and every log line ran one `str.replace` per entry; tokens are now cut by their `ghs_` shape."""
    app = github_app(app_key)
    before = list(logs._extra_secrets)
    token = await app.token(1)
    assert token not in logs._extra_secrets and logs._extra_secrets == before
    logs.event("oops", detail=f"sent with {token} inside")
    (line,) = [line for line in log_lines() if line["msg"] == "oops"]
    assert token not in json.dumps(line) and line["detail"] == "sent with [redacted] inside"


async def test_the_secret_list_stays_the_same_size_after_a_hundred_renewals(installation, app_key):
    """Regression: memory and per-line cost of scrubbing grew with uptime x installations. A hundred renewals
    show it as well as a thousand did (each one more entry), at a tenth of the time: each renewal signs a JWT."""
    app = github_app(app_key)
    await app.token(1)
    size = len(logs._extra_secrets)
    for _ in range(100):
        app.invalidate_token(1)
        await app.token(1)
    assert installation.tokens_issued == 101
    assert len(logs._extra_secrets) == size


def test_the_fake_github_issues_tokens_of_githubs_shape(installation):
    """The tests above hold only if the fake's tokens look like GitHub's (`ghs_` and 36 characters)."""
    status, body = installation._route_post_access_token(None, 1)
    assert status == 201 and logs.is_github_token(body["token"]) and not logs.is_github_token("not-a-token-at-all")
