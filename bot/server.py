"""The webhook server: verify, journal, acknowledge; plus /healthz and /metrics."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
from typing import TYPE_CHECKING, Any

from aiohttp import web
from gidgethub import sansio

from bot import logs
from bot.journal import IGNORED, QUEUED, NewDelivery
from bot.metrics import CONTENT_TYPE

if TYPE_CHECKING:
    from bot.runtime import Bot

MAX_BODY = 25 * 1024 * 1024  # GitHub caps webhook payloads at 25 MB
CHUNK = 64 * 1024
BOT_KEY = web.AppKey("bot", object)


def signature_ok(body: bytes, header: str | None, secrets: tuple[str, ...]) -> bool:
    """HMAC-SHA256 of the raw body against each configured secret (several during rotation), in constant time."""
    if not header or not header.startswith("sha256=") or not secrets:
        return False
    given = header.encode()
    ok = False
    for secret in secrets:
        expected = b"sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest().encode()
        ok |= hmac.compare_digest(expected, given)
    return ok


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


async def _read_body(request: web.Request, timeout: float) -> bytes | web.Response:
    declared = request.content_length
    if declared is not None and declared > MAX_BODY:
        return _error(413, f"payload over {MAX_BODY} bytes")
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


def describe(event: str, data: dict[str, Any], delivery_id: str, body: bytes, wanted: bool) -> NewDelivery:
    repo = (data.get("repository") or {}).get("full_name")
    number = None
    for key in ("pull_request", "issue"):
        if isinstance(data.get(key), dict) and isinstance(data[key].get("number"), int):
            number = data[key]["number"]
            break
    installation = (data.get("installation") or {}).get("id")
    return NewDelivery(
        id=delivery_id, event=event, action=data.get("action") if isinstance(data.get("action"), str) else None,
        repo=repo, number=number, installation=installation if isinstance(installation, int) else None,
        body=body, status=QUEUED if wanted else IGNORED,
    )


async def webhook(request: web.Request) -> web.Response:
    bot: Bot = request.app[BOT_KEY]
    body = await _read_body(request, bot.settings.read_timeout)
    if isinstance(body, web.Response):
        return body
    if not signature_ok(body, request.headers.get("X-Hub-Signature-256"), bot.settings.webhook_secrets):
        bot.metrics.deliveries.labels(request.headers.get("X-GitHub-Event", "unknown")[:64], "unauthorized").inc()
        logs.event("webhook refused: bad or missing X-Hub-Signature-256", logging.WARNING,
                   delivery=request.headers.get("X-GitHub-Delivery", "")[:64])
        return _error(401, "missing or invalid X-Hub-Signature-256")
    if request.content_type != "application/json":
        return _error(415, "expected Content-Type: application/json (set the webhook's content type to JSON)")
    event = request.headers.get("X-GitHub-Event")
    delivery_id = request.headers.get("X-GitHub-Delivery")
    if not event or not delivery_id:
        return _error(400, "missing X-GitHub-Event or X-GitHub-Delivery header")
    if len(event) > 64 or len(delivery_id) > 128:
        return _error(400, "X-GitHub-Event or X-GitHub-Delivery header too long")
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return _error(400, "body is not valid JSON")
    if not isinstance(data, dict):
        return _error(400, "body is not a JSON object")
    if event == "ping":
        bot.metrics.deliveries.labels("ping", "pong").inc()
        return web.json_response({"msg": "pong", "zen": data.get("zen")})
    wanted = bot.processor.wants(sansio.Event(data, event=event, delivery_id=delivery_id))
    new = describe(event, data, delivery_id, body, wanted)
    with logs.context(delivery=delivery_id, event=event, action=new.action, repo=new.repo, pr=new.number):
        try:
            seq = await bot.journal.record(new)
        except Exception as exc:  # nothing acknowledged: GitHub shows the failure and the delivery can be redelivered
            logs.event("journal write failed", logging.ERROR, error=f"{type(exc).__name__}: {exc}")
            return _error(503, "could not record the delivery; try again")
        if seq is None:
            bot.metrics.deliveries.labels(event, "duplicate").inc()
            logs.event("duplicate delivery ignored")
            return web.json_response({"status": "duplicate"}, status=200)
        if not wanted:
            bot.metrics.deliveries.labels(event, "ignored").inc()
            logs.event("delivery recorded, no handler wants it")
            return web.json_response({"status": "ignored"}, status=202)
        bot.metrics.deliveries.labels(event, "accepted").inc()
        logs.event("delivery accepted")
        bot.enqueue(new, seq)
    return web.json_response({"status": "queued"}, status=202)


async def healthz(request: web.Request) -> web.Response:
    bot: Bot = request.app[BOT_KEY]
    report = await bot.health()
    return web.json_response(report, status=200 if report["ok"] else 503)


async def metrics(request: web.Request) -> web.Response:
    bot: Bot = request.app[BOT_KEY]
    bot.metrics.backlog.set(bot.workers.pending if bot.workers else 0)
    return web.Response(body=bot.metrics.render(), headers={"Content-Type": CONTENT_TYPE})


def make_app(bot: "Bot") -> web.Application:
    app = web.Application(client_max_size=MAX_BODY)
    app[BOT_KEY] = bot
    app.router.add_post("/webhook", webhook)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics)
    return app
