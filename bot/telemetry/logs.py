"""JSON-line logging with the current delivery's context; secrets are scrubbed before anything is written."""

from __future__ import annotations

import contextvars
import json
import logging
import re
import sys
import time
from contextlib import contextmanager
from typing import Any, Iterator

CONTEXT: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("sweepbot_log_context", default={})

# Defence in depth: nothing should pass a secret to a log call, but if one slips through it is cut here.
SECRET_PATTERNS = [
    re.compile(r"gh[opsuvr]_[A-Za-z0-9_]{16,}"),
    re.compile(r"github_pat_[A-Za-z0-9_]{16,}"),
    re.compile(r"(?i)(bearer|token)\s+[A-Za-z0-9._\-]{16,}"),
    re.compile(r"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]+"),
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|$)", re.S),
    re.compile(r"sha256=[0-9a-f]{64}"),
]
_extra_secrets: list[str] = []

log = logging.getLogger("sweepbot")


def register_secret(value: str | None) -> None:
    """Literal values (webhook secrets, keys) that must never reach a log line."""
    if value and len(value) >= 4 and value not in _extra_secrets:
        _extra_secrets.append(value)


def scrub(text: str) -> str:
    for secret in _extra_secrets:
        text = text.replace(secret, "[redacted]")
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
