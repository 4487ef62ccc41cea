"""One comment per purpose per PR: found again by its hidden marker among the bot's own comments, edited in place."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import cachetools
import gidgethub
from gidgethub.abc import GitHubAPI

from bot.rules.links import repo_api
from bot.rules.markers import is_bots, purpose_of
from bot.telemetry import logs

PER_PAGE = 100
CREATED, UPDATED, UNCHANGED, KEPT = "created", "updated", "unchanged", "kept"


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

    async def find(
        self,
        gh: GitHubAPI,
        repo: str,
        number: int,
        purpose: str,
        bot_login: str,
        listing: list[dict] | None = None,
        *,
        trust_memory: bool = True,
    ) -> dict | None:
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

    async def upsert(
        self,
        gh: GitHubAPI,
        repo: str,
        number: int,
        purpose: str,
        body: str,
        bot_login: str,
        *,
        only_if_missing: bool = False,
        listing: Callable[[], Any] | None = None,
    ) -> tuple[str, dict]:
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


async def find_bot_issue(
    gh: GitHubAPI, repo: str, purpose: str, bot_login: str, *, state: str = "open", labels: tuple[str, ...] = ()
) -> dict | None:
    """The bot's issue for `purpose`, open (or in `state`), carrying `labels` when given (pull requests are listed
    by the issues API too; skip them)."""
    query: dict[str, str | int] = {"state": state, "per_page": PER_PAGE}
    if labels:
        query["labels"] = ",".join(labels)
    async for issue in gh.getiter(repo_api(repo, "issues", **query)):
        if "pull_request" in issue:
            continue
        if is_bots(issue, bot_login) and purpose_of(issue.get("body")) == purpose:
            return issue
    return None
