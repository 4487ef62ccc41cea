"""Who may do what: a person's role on the repository and team memberships, as GitHub's APIs say, cached."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import gidgethub
import httpx
from gidgethub.abc import GitHubAPI

from bot.github.client import get_or_none
from bot.github.shared_reads import SharedReads
from bot.rules.links import api, repo_api
from bot.telemetry import logs

WRITER_ROLES = frozenset({"admin", "maintain", "write"})
PERMISSION_TTL = 300.0  # a role granted or taken away counts within five minutes


class Permissions:
    """The permission lookups of one delivery. `reads` are the process's (over a TTL cache, PERMISSION_TTL: the
    deliveries that ask about one person at once share one request) or, where none are given, this delivery's."""

    def __init__(self, gh: GitHubAPI, repo: str, reads: SharedReads | None = None):
        self.gh, self.repo = gh, repo
        self._reads = reads if reads is not None else SharedReads()
        self._cache: MutableMapping[Any, Any] = self._reads.cache

    async def role(self, login: str) -> str:
        """The person's role on the repository: admin, maintain, write, triage, read or none."""

        async def read() -> str:
            answer = await get_or_none(self.gh, repo_api(self.repo, "collaborators", login, "permission")) or {}
            # `permission` is the legacy field (maintain reads as write); `role_name` is the real role.
            return answer.get("role_name") or answer.get("permission") or "none"

        return await self._reads.get((self.repo, login.casefold()), read)

    def known_writer(self, login: str) -> bool | None:
        """Whether `login` is a writer as the cache knows it now, without asking GitHub; None when not known."""
        role = self._cache.get((self.repo, login.casefold()))
        return None if role is None else role in WRITER_ROLES

    async def writer(self, login: str) -> bool | None:
        """Whether `login` has write, maintain or admin permission, as the collaborator-permission API says
        (cached a few minutes); None when GitHub would not say (a 403, or a 5xx or timeout after the client's
        retries): the caller then refuses with "could not confirm", and nothing is cached."""
        try:
            return await self.role(login) in WRITER_ROLES
        except (TimeoutError, gidgethub.GitHubException, httpx.HTTPError) as exc:
            logs.event("permission lookup failed", login=login, error=f"{type(exc).__name__}: {exc}"[:300])
            return None

    async def team_member(self, team: str, login: str) -> bool | None:
        """Whether `login` is an active member of `org/slug` (a pending invitation is not); None when GitHub
        will not say (403: the App lacks `members: read`, or the team is secret to it)."""
        org, _, slug = team.partition("/")
        key = ("team", org.casefold(), slug.casefold(), login.casefold())
        cache = self._cache
        if key not in cache:
            url = api("orgs", org, "teams", slug, "memberships", login)
            try:
                answer = await self.gh.getitem(url)
            except gidgethub.BadRequest as exc:
                if int(exc.status_code) == 403:
                    return None  # not cached: granting the permission counts at once
                if int(exc.status_code) != 404:
                    raise
                answer = {}  # not a member, or no such team
            cache[key] = answer.get("state") == "active"
        return cache[key]
