"""The webhook server: verify, journal, acknowledge; plus /livez, /readyz, /healthz and /metrics."""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import math
import re
import sys
import time
from typing import TYPE_CHECKING, Any

from aiohttp import web
from gidgethub import sansio

from bot.app.webhook_signature import signature_ok
from bot.delivery import lanes
from bot.delivery.journal import IGNORED, QUEUED, NewDelivery
from bot.telemetry import logs
from bot.telemetry.metrics import CONTENT_TYPE, counted_event

if TYPE_CHECKING:
    from bot.app.runtime import Bot

MAX_BODY = 25 * 1024 * 1024  # GitHub caps webhook payloads at 25 MB
CHUNK = 64 * 1024
BOT_KEY: web.AppKey[Bot] = web.AppKey("bot")


SIGNATURE_FORM = re.compile(r"sha256=[0-9a-fA-F]{64}")


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def _refused_unread(status: int, message: str) -> web.Response:
    """A refusal before the body was read: the connection is closed after it, so its body is never read."""
    response = _error(status, message)
    response.force_close()
    return response


async def _read_body(request: web.Request, timeout: float) -> bytes | web.Response:
    chunks, size = [], 0
    try:
        async with asyncio.timeout(timeout):
            while True:
                chunk = await request.content.read(CHUNK)
                if not chunk:
                    break
                size += len(chunk)
                if size > MAX_BODY:
                    return _error(413, f"payload over {MAX_BODY} bytes")
                chunks.append(chunk)
    except TimeoutError:
        return _error(408, "the request body did not arrive in time")
    return b"".join(chunks)


# Top-level payload fields the bot reads as objects; GitHub's schema marks only client_payload nullable.
OBJECT_FIELDS = (
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
)
NULLABLE_FIELDS = frozenset({"client_payload"})
# GitHub owners are letters, digits and dashes; repository names add dots and underscores (never "." or
# ".."). The name goes into API paths, so nothing else (no second slash, no '..', no query) may pass.
FULL_NAME = re.compile(r"(?!\.\.?/)[A-Za-z0-9_.-]{1,100}/(?!\.\.?$)[A-Za-z0-9_.-]{1,100}")
SHOWN = 60  # at most this many characters of a sender's value are quoted back in an error


class BadPayload(ValueError):
    """A signed body that is not a webhook payload the bot can read; the message is the 400's text."""


def _shown(value: str) -> str:
    return repr(value if len(value) <= SHOWN else value[:SHOWN] + "...")


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise BadPayload(f"body has the key {_shown(key)} twice in one JSON object")
            seen.add(key)
    return obj


def _constant(name: str) -> Any:
    raise BadPayload(f"body is not valid JSON: {name} is not a JSON number")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BadPayload(f"body has a number out of range: {_shown(text)}")
    return value


_JSON_KINDS: dict[type, str] = {str: "a string", list: "an array", dict: "an object"}


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return _JSON_KINDS.get(type(value), type(value).__name__)


def parse_payload(body: bytes) -> dict[str, Any]:
    """The webhook body as a dict, or BadPayload saying what is wrong with it (the 400's message).

    Stricter than Python's json, which would accept all of these: bytes that are not UTF-8, a key twice
    in one object, NaN and Infinity, a number that overflows a float. Nesting past the recursion limit
    and integers past Python's digit limit become BadPayload instead of RecursionError and ValueError.
    The top-level fields the bot reads as objects must be objects.
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadPayload(f"body is not valid UTF-8 (at byte {exc.start}); GitHub sends JSON as UTF-8") from None
    try:
        data = json.loads(text, object_pairs_hook=_object, parse_constant=_constant, parse_float=_float)
    except BadPayload:
        raise
    except RecursionError:
        raise BadPayload("body is nested too deeply to read") from None
    except json.JSONDecodeError as exc:
        raise BadPayload(f"body is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    except ValueError:  # int() refuses more digits than sys.get_int_max_str_digits()
        raise BadPayload(f"body has a number with more than {sys.get_int_max_str_digits()} digits") from None
    if not isinstance(data, dict):
        raise BadPayload(f"body is not a JSON object (got {_json_kind(data)})")
    for key in OBJECT_FIELDS:
        value = data.get(key)
        if key in data and not isinstance(value, dict) and not (value is None and key in NULLABLE_FIELDS):
            raise BadPayload(f"payload field {key!r} must be a JSON object, got {_json_kind(value)}")
    repository = data.get("repository", {})
    if "full_name" in repository:
        name = repository["full_name"]
        if not (isinstance(name, str) and FULL_NAME.fullmatch(name)):
            got = _shown(name) if isinstance(name, str) else _json_kind(name)
            raise BadPayload(f"payload field 'repository.full_name' must be a string owner/name, got {got}")
    installation = data.get("installation", {})
    if "id" in installation and (type(installation["id"]) is not int):  # bool is an int subclass: not an id
        raise BadPayload(f"payload field 'installation.id' must be an integer, got {_json_kind(installation['id'])}")
    return data


def describe(
    event: str, data: dict[str, Any], delivery_id: str, body: bytes, wanted: bool, settle: float = 0.0
) -> NewDelivery:
    repo = (data.get("repository") or {}).get("full_name")
    number = lanes.pr_number(event, data)
    installation = (data.get("installation") or {}).get("id")
    action = data.get("action") if isinstance(data.get("action"), str) else None
    held = settle > 0 and number is not None and (event, action) in lanes.SETTLING
    return NewDelivery(
        id=delivery_id,
        event=event,
        action=action,
        not_before=time.time() + settle if held else None,
        repo=repo,
        number=number,
        installation=installation if isinstance(installation, int) else None,
        body=body,
        status=QUEUED if wanted else IGNORED,
        sha=lanes.head_sha(event, data) if number is None else None,
    )


def _unauthorized(request: web.Request, bot: Bot, *, read: bool) -> web.Response:
    bot.metrics.deliveries.labels(counted_event(request.headers.get("X-GitHub-Event")), "unauthorized").inc()
    logs.event(
        "webhook refused: bad or missing X-Hub-Signature-256",
        logging.WARNING,
        delivery=request.headers.get("X-GitHub-Delivery", "")[:64],
    )
    message = "missing or invalid X-Hub-Signature-256"
    return _error(401, message) if read else _refused_unread(401, message)


async def webhook(request: web.Request) -> web.Response:
    bot: Bot = request.app[BOT_KEY]
    if bot.unverified:  # GitHub refused the App's credentials (serve --unready-on-bad-credentials): nothing taken
        return _refused_unread(503, "not ready: GitHub refused the App's credentials")
    # what can be refused from the headers alone is refused before a byte of the body is read
    if not SIGNATURE_FORM.fullmatch(request.headers.get("X-Hub-Signature-256", "")):
        return _unauthorized(request, bot, read=False)
    declared = request.content_length
    if declared is None:  # GitHub always says how long its payload is
        return _refused_unread(411, "Content-Length is required")
    if declared > MAX_BODY:
        return _refused_unread(413, f"payload over {MAX_BODY} bytes")
    body = await _read_body(request, bot.settings.read_timeout)
    if isinstance(body, web.Response):
        return body
    if not signature_ok(body, request.headers.get("X-Hub-Signature-256"), bot.settings.webhook_secrets):
        return _unauthorized(request, bot, read=True)
    if request.content_type != "application/json":
        return _error(415, "expected Content-Type: application/json (set the webhook's content type to JSON)")
    event = request.headers.get("X-GitHub-Event")
    delivery_id = request.headers.get("X-GitHub-Delivery")
    if not event or not delivery_id:
        return _error(400, "missing X-GitHub-Event or X-GitHub-Delivery header")
    if len(event) > 64 or len(delivery_id) > 128:
        return _error(400, "X-GitHub-Event or X-GitHub-Delivery header too long")
    try:
        data = parse_payload(body)
    except BadPayload as exc:
        bot.metrics.deliveries.labels(counted_event(event), "malformed").inc()
        logs.event(
            "webhook refused: malformed payload", logging.WARNING, delivery=delivery_id, event=event, error=str(exc)
        )
        return _error(400, str(exc))
    if event == "ping":
        bot.metrics.deliveries.labels("ping", "pong").inc()
        return web.json_response({"msg": "pong", "zen": data.get("zen")})
    wanted = bot.processor.wants(sansio.Event(data, event=event, delivery_id=delivery_id))
    new = describe(event, data, delivery_id, body, wanted, bot.settings.settle_seconds)
    with logs.context(delivery=delivery_id, event=event, action=new.action, repo=new.repo, pr=new.number):
        try:
            seq = await bot.journal.record(new)
        except Exception as exc:  # nothing acknowledged: GitHub shows the failure and the delivery can be redelivered
            logs.event("journal write failed", logging.ERROR, error=f"{type(exc).__name__}: {exc}")
            return _error(503, "could not record the delivery; try again")
        if seq is None:
            bot.metrics.deliveries.labels(counted_event(event), "duplicate").inc()
            logs.event("duplicate delivery ignored")
            return web.json_response({"status": "duplicate"}, status=200)
        if not wanted:
            bot.metrics.deliveries.labels(counted_event(event), "ignored").inc()
            logs.event("delivery recorded, no handler wants it")
            return web.json_response({"status": "ignored"}, status=202)
        bot.metrics.deliveries.labels(counted_event(event), "accepted").inc()
        logs.event("delivery accepted")
        bot.enqueue(new, seq)
    return web.json_response({"status": "queued"}, status=202)


def _health_response(report: dict[str, Any]) -> web.Response:
    return web.json_response(report, status=200 if report["ok"] else 503)


def _state_only(report: dict[str, Any]) -> web.Response:
    """What anyone who reaches the port may read: healthy or not, nothing else (the reasons are in /healthz)."""
    return _health_response({"ok": bool(report["ok"])})


def may_see_details(request: web.Request, bot: Bot) -> bool:
    """Whether the request may read /healthz's details: it bears the health token, or the bot runs the sandbox
    (its GitHub is in memory: nothing to hide)."""
    if not bot.settings.live:
        return True
    token = bot.settings.health_token
    given = request.headers.get("Authorization", "")
    return bool(token) and hmac.compare_digest(given.encode(), f"Bearer {token}".encode())


async def livez(request: web.Request) -> web.Response:
    """Liveness: the server's loop and the workers' loop answer (never GitHub, never the database)."""
    bot: Bot = request.app[BOT_KEY]
    return _state_only(await bot.liveness())


async def readyz(request: web.Request) -> web.Response:
    """Readiness: the journal or database answers and the workers run; 503 takes this process out of rotation."""
    bot: Bot = request.app[BOT_KEY]
    return _state_only(await bot.readiness())


async def healthz(request: web.Request) -> web.Response:
    """The details as JSON, for a request bearing the health token; 503 exactly when /livez or /readyz would be,
    never for a warning. Without the token: only whether the bot is healthy."""
    bot: Bot = request.app[BOT_KEY]
    report = await bot.health()
    if may_see_details(request, bot):
        return _health_response(report)
    return _health_response(
        {"ok": bool(report["ok"]), "details": "send Authorization: Bearer <SWEEPBOT_HEALTH_TOKEN> to read them"}
    )


async def metrics(request: web.Request) -> web.Response:
    bot: Bot = request.app[BOT_KEY]
    return web.Response(body=await bot.metrics_text(), headers={"Content-Type": CONTENT_TYPE})


def make_app(bot: Bot) -> web.Application:
    app = web.Application(client_max_size=MAX_BODY)
    app[BOT_KEY] = bot
    app.router.add_post("/webhook", webhook)
    app.router.add_get("/livez", livez)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics)
    return app
