"""JSON-line logging with the current delivery's context; secrets are scrubbed before anything is written."""

from __future__ import annotations

import contextvars
import json
import logging
import re
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any

CONTEXT: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar(
    "sweepbot_log_context", default=MappingProxyType({})
)

# Defence in depth: nothing should pass a secret to a log call, but if one slips through it is cut here.
# GitHub's tokens (installation `ghs_`, OAuth `gho_`, user `ghu_`, personal `ghp_`/`github_pat_`, ...) are cut
# by their shape alone: a renewed installation token is never registered, so nothing grows with uptime.
GITHUB_TOKEN_PATTERNS = [
    re.compile(r"gh[opsuvr]_[A-Za-z0-9_]{16,}"),
    re.compile(r"github_pat_[A-Za-z0-9_]{16,}"),
]
SECRET_PATTERNS = [
    *GITHUB_TOKEN_PATTERNS,
    re.compile(r"(?i)(bearer|token)\s+[A-Za-z0-9._\-]{16,}"),
    re.compile(r"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]+"),
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|$)", re.S),
    re.compile(r"sha256=[0-9a-f]{64}"),
]
# The App's own secrets, registered once at start (webhook secrets, private key, database password): a few.
_extra_secrets: list[str] = []
_extra_pattern: re.Pattern[str] | None = None  # all of them in one alternation, longest first

log = logging.getLogger("sweepbot")


def register_secret(value: str | None) -> None:
    """Literal values of the App's own (webhook secrets, private key, database password) that must never reach
    a log line; registered once at start. Installation tokens are not for this list: `is_github_token`."""
    global _extra_pattern
    if value and len(value) >= 4 and value not in _extra_secrets:
        _extra_secrets.append(value)
        _extra_pattern = re.compile("|".join(re.escape(s) for s in sorted(_extra_secrets, key=len, reverse=True)))


def is_github_token(value: str) -> bool:
    """Whether the scrubber cuts `value` by its shape alone (as it does GitHub's tokens)."""
    return any(pattern.fullmatch(value) for pattern in GITHUB_TOKEN_PATTERNS)


def scrub(text: str) -> str:
    if _extra_pattern is not None:
        text = _extra_pattern.sub("[redacted]", text)
    for pattern in SECRET_PATTERNS:
        text = pattern.sub("[redacted]", text)
    return text


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "msg": record.getMessage(),
        }
        entry.update(CONTEXT.get())
        entry.update(getattr(record, "fields", {}))
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return scrub(json.dumps(entry, default=str, ensure_ascii=False))


def setup(level: str = "INFO", stream: Any = None) -> None:
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger("sweepbot")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False


def event(msg: str, level: int = logging.INFO, **fields: Any) -> None:
    log.log(level, msg, extra={"fields": fields})


@contextmanager
def context(**fields: Any) -> Iterator[None]:
    token = CONTEXT.set({**CONTEXT.get(), **{k: v for k, v in fields.items() if v is not None}})
    try:
        yield
    finally:
        CONTEXT.reset(token)
