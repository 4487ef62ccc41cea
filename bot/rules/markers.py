"""The bot's marks in what it writes: a comment's hidden purpose marker, hidden JSON records, and who sent what."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

BODY_LIMIT = 65536  # GitHub rejects longer comment and issue bodies
MARKER_RE = re.compile(r"^<!-- sweepbot:([a-z0-9][a-z0-9:_.\-]*) -->")
FENCE_CLOSE = "\n```"
JSON_GT = "\\u003e"  # `>` as a JSON escape


def marker(purpose: str) -> str:
    if not MARKER_RE.fullmatch(f"<!-- sweepbot:{purpose} -->"):
        raise ValueError(f"bad comment purpose {purpose!r}")
    return f"<!-- sweepbot:{purpose} -->"


def purpose_of(body: str | None) -> str | None:
    match = MARKER_RE.match(body or "")
    return match.group(1) if match else None


def fit(purpose: str, text: str, truncated_note: Callable[[int], str]) -> str:
    """The body for `purpose`: marker, then text; over GitHub's limit, cut at a line with a visible note."""
    head = marker(purpose) + "\n"
    body = head + text
    if len(body) <= BODY_LIMIT:
        return body
    note = "\n\n" + truncated_note(BODY_LIMIT).strip() + "\n"
    room = BODY_LIMIT - len(head) - len(note) - len(FENCE_CLOSE)
    cut = text[:room]
    if "\n" in cut[room // 2 :]:
        cut = cut[: cut.rindex("\n")]
    cut = cut.rstrip()
    if cut.count("```") % 2:  # don't leave a code fence open above the note: close it, keeping what it holds
        cut += FENCE_CLOSE
    return head + cut + note


def hidden_record(name: str, data: Any) -> str:
    """One HTML comment line that holds `data` as JSON for the bot to read back (`read_hidden_record`); `>` is
    escaped, so no value can close the comment early."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=list)
    return f"<!-- sweepbot-{name} {text.replace('>', JSON_GT)} -->"


def is_hidden_record(name: str, line: str) -> bool:
    """Whether `line` is a `hidden_record(name, ...)` line (readable or not)."""
    return line.startswith(f"<!-- sweepbot-{name} ") and line.endswith(" -->")


def read_hidden_record(name: str, body: str | None) -> Any:
    """The data of the first `hidden_record(name, ...)` line of `body`; None when there is none or it is unreadable."""
    prefix = f"<!-- sweepbot-{name} "
    for line in (body or "").splitlines():
        if is_hidden_record(name, line):
            try:
                return json.loads(line[len(prefix) : -len(" -->")])
            except ValueError:
                return None
    return None


def is_bots(item: dict[str, Any], bot_login: str) -> bool:
    return (item.get("user") or {}).get("login") == bot_login


def sender_login(event: dict[str, Any]) -> str | None:
    """The login GitHub says sent a delivery (its `sender`: no payload field sets it)."""
    sender = event.get("sender")
    login = sender.get("login") if isinstance(sender, dict) else None
    return login if isinstance(login, str) and login else None


def sent_by(event: dict[str, Any], bot_login: str, senders: Any) -> str | None:
    """The delivery's sender when it is the App's own bot account or one of `senders` (a policy list; logins
    compare ignoring case, as on GitHub); else None."""
    login = sender_login(event)
    if login is None:
        return None
    allowed = {bot_login.casefold(), *(s.casefold() for s in senders or () if isinstance(s, str))}
    return login if login.casefold() in allowed else None
