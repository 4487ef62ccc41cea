"""Who may do what: a person's role on the repository and team memberships, as GitHub's APIs say, cached."""

from __future__ import annotations

import asyncio
from typing import Any, MutableMapping

import gidgethub
import httpx
from gidgethub.abc import GitHubAPI

from bot.github.client import get_or_none
from bot.rules.links import api, repo_api
from bot.telemetry import logs

WRITER_ROLES = frozenset({"admin", "maintain", "write"})
PERMISSION_TTL = 300.0  # a role granted or taken away counts within five minutes


class Permissions:
    """The permission lookups of one delivery. `cache` is the process's (a TTL cache, PERMISSION_TTL) or, where
    none is given, one that lives as long as the delivery."""

    def __init__(self, gh: GitHubAPI, repo: str, cache: MutableMapping[Any, Any] | None = None):
        self.gh, self.repo = gh, repo
        self._cache: MutableMapping[Any, Any] = cache if cache is not None else {}

    async def role(self, login: str) -> str:
        """The person's role on the repository: admin, maintain, write, triage, read or none."""
        key = (self.repo, login.casefold())
        cache = self._cache
        if key not in cache:
            answer = await get_or_none(self.gh, repo_api(self.repo, "collaborators", login, "permission")) or {}
            # `permission` is the legacy field (maintain reads as write); `role_name` is the real role.
            cache[key] = answer.get("role_name") or answer.get("permission") or "none"
        return cache[key]

    async def writer(self, login: str) -> bool | None:
        """Whether `login` has write, maintain or admin permission, as the collaborator-permission API says
        (cached a few minutes); None when GitHub would not say (a 403, or a 5xx or timeout after the client's
        retries): the caller then refuses with "could not confirm", and nothing is cached."""
        try:
            return await self.role(login) in WRITER_ROLES
        except (gidgethub.GitHubException, httpx.HTTPError, asyncio.TimeoutError) as exc:
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
