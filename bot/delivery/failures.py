"""Which failures heal by waiting (GitHub down, rate limits, a full disk) and which never will (a PR that is gone)."""

from __future__ import annotations

import asyncio
import random
import sqlite3

import gidgethub
import httpx
import jinja2

from bot.github.client import AmbiguousWrite, AuthenticationFailed

TRANSIENT, PERMANENT, BUG = "transient", "permanent", "bug"
# 4xx answers that say "not now" rather than "never"
RETRYABLE_STATUSES = frozenset({401, 403, 408, 409, 429})


class NeedsAPerson(Exception):
    """A failure no wait heals and the bot must not guess around (e.g. an effect it cannot reconcile):
    recorded at once, for a person to look at. Raised by the rooms above, classified here."""


class NotListedYet(Exception):
    """GitHub took a write but does not list what it made yet (a workflow dispatch answered 204 without its run):
    the effect is never sent again; a later attempt finds it. Raised by the rooms above, classified here."""


def classify(exc: BaseException) -> str:
    """TRANSIENT: retried on a growing schedule for hours. PERMANENT: recorded at once. BUG: a few tries."""
    if isinstance(exc, NeedsAPerson):
        return PERMANENT  # a person must look: the bot will not guess whether a sweep started
    if isinstance(exc, NotListedYet):
        return TRANSIENT  # GitHub's lists trail its writes by seconds: the next attempt looks again
    if isinstance(exc, jinja2.TemplateError):
        return BUG  # a missing template is an OSError to Jinja, but no wait brings it back
    if isinstance(
        exc, (AmbiguousWrite, AuthenticationFailed, httpx.HTTPError, sqlite3.Error, OSError, asyncio.TimeoutError)
    ):
        return TRANSIENT
    if isinstance(exc, (gidgethub.GitHubBroken, gidgethub.RateLimitExceeded)):
        return TRANSIENT
    if isinstance(exc, gidgethub.BadRequest):
        return TRANSIENT if int(exc.status_code) in RETRYABLE_STATUSES else PERMANENT
    if isinstance(exc, gidgethub.HTTPException):
        return TRANSIENT if int(exc.status_code) >= 500 else PERMANENT
    return BUG


def retry_delay(kind: str, attempt: int, *, base: float, cap: float) -> float:
    """Growing delays with jitter: base, 2×base, 4×base … up to `cap` (transient); bugs stay short."""
    raw = base * 2 ** max(attempt - 1, 0)
    if kind == BUG:
        return raw
    return min(cap, raw) * random.uniform(0.8, 1.0)
