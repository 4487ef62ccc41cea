"""Per-repository policy: `.github/sweepbot.yml` read from the default branch, cached, last good kept on error."""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass
from typing import Any

import cachetools
from gidgethub.abc import GitHubAPI

from bot.core.config import REPO_CONFIG_PATH, ConfigError, parse_repo_config, policy_defaults
from bot.github.client import get_or_none
from bot.github.shared_reads import SharedReads
from bot.rules.links import Slashed, repo_api
from bot.rules.policy import Policy
from bot.telemetry import logs

CACHE_TTL = 3600.0  # a missed push event heals within the hour


@dataclass(frozen=True)
class ConfigProblem:
    repo: str
    errors: tuple[str, ...]
    seen_at: float
    last_good: str | None  # blob sha of the file in force, None when the defaults are


@dataclass(frozen=True)
class _Loaded:
    policy: Policy
    sha: str | None


class RepoConfigs:
    """The policy in force per repository. Only ever reads the default branch, never a PR head."""

    def __init__(self, defaults: dict[str, Any] | None = None, ttl: float = CACHE_TTL):
        self.defaults = defaults or policy_defaults()
        self._frozen_defaults = Policy.model_validate(self.defaults)
        # a burst of deliveries on a cold process (or after the expiry) reads the file once, not once each
        self._reads = SharedReads(cachetools.TTLCache(maxsize=1024, ttl=ttl))
        self._last_good: cachetools.LRUCache = cachetools.LRUCache(maxsize=1024)
        self.problems: dict[str, ConfigProblem] = {}

    def invalidate(self, repo: str) -> None:
        self._reads.forget(repo)

    async def policy(self, gh: GitHubAPI, repo: str, default_branch: str) -> Policy:
        loaded = await self._reads.get(repo, lambda: self._load(gh, repo, default_branch))
        return loaded.policy

    async def _load(self, gh: GitHubAPI, repo: str, default_branch: str) -> _Loaded:
        item = await get_or_none(gh, repo_api(repo, "contents", Slashed(REPO_CONFIG_PATH), ref=default_branch))
        if item is None:
            self.problems.pop(repo, None)
            loaded = _Loaded(self._frozen_defaults, None)
            self._last_good[repo] = loaded
            return loaded
        text = base64.b64decode(item.get("content") or "")
        try:
            policy = parse_repo_config(text, self.defaults)
        except ConfigError as exc:
            previous = self._last_good.get(repo) or _Loaded(self._frozen_defaults, None)
            self.problems[repo] = ConfigProblem(repo, tuple(exc.errors), time.time(), previous.sha)
            logs.event(
                "repository config invalid, keeping the last good one",
                repo=repo,
                errors=exc.errors,
                in_force=previous.sha or "defaults",
            )
            return previous
        self.problems.pop(repo, None)
        loaded = _Loaded(policy, item.get("sha"))
        self._last_good[repo] = loaded
        return loaded
