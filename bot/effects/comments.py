"""One comment per purpose per PR: found again by a hidden marker among the bot's own comments, edited in place."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any, Callable

import cachetools
import gidgethub
from gidgethub.abc import GitHubAPI

from bot.telemetry import logs
from bot.rules.links import repo_api

BODY_LIMIT = 65536  # GitHub rejects longer comment and issue bodies
MARKER_RE = re.compile(r"^<!-- sweepbot:([a-z0-9][a-z0-9:_.\-]*) -->")
PER_PAGE = 100
FENCE_CLOSE = "\n```"
JSON_GT = "\\u003e"  # `>` as a JSON escape

CREATED, UPDATED, UNCHANGED, KEPT = "created", "updated", "unchanged", "kept"


def marker(purpose: str) -> str:
    if not MARKER_RE.fullmatch(f"<!-- sweepbot:{purpose} -->"):
        raise ValueError(f"bad comment purpose {purpose!r}")
    return f"<!-- sweepbot:{purpose} -->"


def purpose_of(body: str | None) -> str | None:
    match = MARKER_RE.match(body or "")
    return match.group(1) if match else None


def fit(purpose: str, text: str, truncated_note: Callable[[int], str]) -> str:
    """The full body for `purpose`: marker, then text; over GitHub's limit the text is cut at a line with a visible note."""
    head = marker(purpose) + "\n"
    body = head + text
    if len(body) <= BODY_LIMIT:
        return body
    note = "\n\n" + truncated_note(BODY_LIMIT).strip() + "\n"
    room = BODY_LIMIT - len(head) - len(note) - len(FENCE_CLOSE)
    cut = text[:room]
    if "\n" in cut[room // 2:]:
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


def read_hidden_record(name: str, body: str | None) -> Any:
    """The data of the first `hidden_record(name, ...)` line of `body`; None when there is none or it is unreadable."""
    prefix = f"<!-- sweepbot-{name} "
    for line in (body or "").splitlines():
        if line.startswith(prefix) and line.endswith(" -->"):
            try:
                return json.loads(line[len(prefix):-len(" -->")])
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


class CommentStore:
    """Creates or updates the bot's marked comments; serialises writers of one (repo, PR, purpose) in this process."""

    def __init__(self) -> None:
        self._locks: cachetools.LRUCache = cachetools.LRUCache(maxsize=4096)
        # GitHub's comment listing can lag a fresh create; remember what this process made.
        self._known: cachetools.TTLCache = cachetools.TTLCache(maxsize=8192, ttl=600)

    def _lock(self, key: tuple) -> asyncio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        return lock

    async def find(self, gh: GitHubAPI, repo: str, number: int, purpose: str, bot_login: str,
                   listing: list[dict] | None = None, *, trust_memory: bool = True) -> dict | None:
        """The bot's comment for `purpose`, reading every page; a human's copy of the marker never counts.

        `trust_memory=False` answers from GitHub's listing alone (reconciling a create whose answer was lost).
        """
        known = self._known.get((repo, number, purpose)) if trust_memory else None
        if listing is None:
            listing = [c async for c in gh.getiter(repo_api(repo, "issues", number, "comments", per_page=PER_PAGE))]
        for comment in listing:
            if is_bots(comment, bot_login) and purpose_of(comment.get("body")) == purpose:
                return comment
        if known is not None:
            return known
        return None

    async def upsert(self, gh: GitHubAPI, repo: str, number: int, purpose: str, body: str, bot_login: str, *,
                     only_if_missing: bool = False, listing: Callable[[], Any] | None = None) -> tuple[str, dict]:
        key = (repo, number, purpose)
        async with self._lock(key):
            comments = await listing() if listing else None
            existing = await self.find(gh, repo, number, purpose, bot_login, comments)
            if existing is None:
                return CREATED, await self._create(gh, repo, number, purpose, body)
            if only_if_missing:
                return KEPT, existing
            if existing.get("body") == body:
                return UNCHANGED, existing
            try:
                updated = await gh.patch(repo_api(repo, "issues", "comments", existing["id"]), data={"body": body})
            except gidgethub.BadRequest as exc:
                if int(exc.status_code) != 404:
                    raise
                self._known.pop(key, None)  # deleted since it was listed or remembered: write it anew
                return CREATED, await self._create(gh, repo, number, purpose, body)
            self._known[key] = updated
            logs.event("comment updated", purpose=purpose, comment=existing["id"])
            return UPDATED, updated

    async def _create(self, gh: GitHubAPI, repo: str, number: int, purpose: str, body: str) -> dict:
        created = await gh.post(repo_api(repo, "issues", number, "comments"), data={"body": body})
        self._known[(repo, number, purpose)] = created
        logs.event("comment created", purpose=purpose, comment=created.get("id"))
        return created


async def find_bot_issue(gh: GitHubAPI, repo: str, purpose: str, bot_login: str) -> dict | None:
    """The bot's open issue for `purpose` (pull requests are listed by the issues API too; skip them)."""
    async for issue in gh.getiter(repo_api(repo, "issues", state="open", per_page=PER_PAGE)):
        if "pull_request" in issue:
            continue
        if is_bots(issue, bot_login) and purpose_of(issue.get("body")) == purpose:
            return issue
    return None
