"""One delivery through the handlers: they read and decide, the executor writes (or a dry run prints)."""

from __future__ import annotations

import asyncio
import base64
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import cachetools
import gidgethub
import httpx
from gidgethub import routing, sansio

from bot.effects import actions as act
from bot.rules import lanes
from bot.telemetry import logs
from bot.effects.comments import PER_PAGE, CommentStore
from bot.effects.executor import DryRun, Executor, Ledger, MemoryLedger
from bot.github.client import GitHubApp, GitHubClient
from bot.rules.links import Slashed, api, repo_api
from bot.telemetry.metrics import Metrics
from bot.core.policy import Policy
from bot.core.repo_config import ConfigProblem, RepoConfigs
from bot.core.templates import Templates
from bot.github.client import get_or_none


WRITER_ROLES = frozenset({"admin", "maintain", "write"})
PERMISSION_TTL = 300.0  # a role granted or taken away counts within five minutes


@dataclass
class Context:
    """What a handler sees: the event, a reading client, the repository's policy, the templates.

    `await ctx.apply(action)` has the framework perform one action now and returns what GitHub answered
    (a comment's or reaction's id, a run id), so a handler can react before slow checks and use the ids.
    """

    event: sansio.Event
    gh: GitHubClient
    repo: str
    policy: Policy
    bot_login: str
    templates: Templates
    configs: RepoConfigs
    _memo: dict[Any, Any] = field(default_factory=dict)
    _apply: Callable[[act.Action], Awaitable[act.Result]] | None = None
    permissions: cachetools.TTLCache | None = None  # (repo, login) -> role, shared by the process
    waiting: Callable[[], list[tuple[str, str | None]]] = lambda: []  # (event, action) queued behind this one
    last_try: bool = False  # a transient failure now is not retried: the delivery's retry window is over

    def superseded(self, kinds: set[tuple[str, str | None]]) -> bool:
        """Whether a later delivery of one of `kinds` waits in this PR's lane (it will decide on newer state)."""
        return any(kind in kinds for kind in self.waiting())

    async def apply(self, action: act.Action) -> act.Result:
        if self._apply is None:
            raise RuntimeError("this context cannot write")
        return await self._apply(action)

    def forget(self, key: tuple) -> None:
        """Drop a memoised listing, so the next read asks GitHub again."""
        self._memo.pop(key, None)

    @property
    def payload(self) -> dict[str, Any]:
        return self.event.data

    @property
    def pr_number(self) -> int | None:
        """The PR or issue this delivery is about, when its payload names one."""
        return lanes.pr_number(self.event.event, self.payload)

    @property
    def html_url(self) -> str:
        return self.payload["repository"].get("html_url") or f"https://github.com/{self.repo}"

    @property
    def default_branch(self) -> str:
        return self.payload["repository"].get("default_branch") or "main"

    async def reload_config(self) -> ConfigProblem | None:
        """Read `.github/sweepbot.yml` from the default branch again (a read: a dry run does it too, so the plan
        after it is true); what is wrong with it, or None when it is valid."""
        self.configs.invalidate(self.repo)
        await self.configs.policy(self.gh, self.repo, self.default_branch)
        return self.configs.problems.get(self.repo)

    def render(self, kind: str, **variables: Any) -> str:
        return self.templates.render(kind, **variables)

    async def _listing(self, key: tuple, *path: str | int, keep: Callable[[dict], bool] = lambda item: True
                       ) -> list[dict]:
        """Every page of this repository's list endpoint `path`, read once per delivery."""
        if key not in self._memo:
            url = repo_api(self.repo, *path, per_page=PER_PAGE)
            self._memo[key] = [item async for item in self.gh.getiter(url) if keep(item)]
        return self._memo[key]

    async def pr_file_entries(self, number: int) -> list[dict]:
        """The changed files of a PR as GitHub lists them (every page; a rename carries `previous_filename`)."""
        return await self._listing(("files", number), "pulls", number, "files")

    async def pr_files(self, number: int) -> list[str]:
        """Changed file names of a PR."""
        return [f["filename"] for f in await self.pr_file_entries(number)]

    async def labels(self, number: int) -> list[str]:
        """The labels on an issue or PR as GitHub has them now (a payload's list can be stale)."""
        return [label["name"] for label in
                await self._listing(("labels", number), "issues", number, "labels")]

    async def label_events(self, number: int) -> list[dict]:
        return await self._listing(("events", number), "issues", number, "events",
                                   keep=lambda e: e.get("event") in ("labeled", "unlabeled"))

    async def file_at(self, path: str, ref: str) -> bytes | None:
        """The exact bytes of a file at a commit, or None where it does not exist (above 1 MB via the blob API)."""
        key = ("file", path, ref)
        if key not in self._memo:
            item = await get_or_none(self.gh, repo_api(self.repo, "contents", Slashed(path), ref=ref))
            data = None
            if isinstance(item, dict) and item.get("type", "file") == "file":
                if item.get("encoding") == "base64":
                    data = base64.b64decode(item.get("content") or "")
                else:  # GitHub sends no content for files over 1 MB
                    blob = await self.gh.getitem(repo_api(self.repo, "git", "blobs", item["sha"]))
                    data = base64.b64decode(blob.get("content") or "")
            self._memo[key] = data
        return self._memo[key]

    async def merge_base(self, base_sha: str, head_sha: str) -> str:
        """The commit a PR's changes are counted from (its base branch may have moved on since)."""
        compared = await self.gh.getitem(repo_api(self.repo, "compare", f"{base_sha}...{head_sha}", per_page=1))
        return (compared.get("merge_base_commit") or {}).get("sha") or base_sha

    async def git_commit(self, sha: str) -> dict:
        """A commit as the git database API gives it (message, parents), read once per delivery."""
        key = ("commit", sha)
        if key not in self._memo:
            self._memo[key] = await self.gh.getitem(repo_api(self.repo, "git", "commits", sha))
        return self._memo[key]

    async def role(self, login: str) -> str:
        """The person's role on the repository: admin, maintain, write, triage, read or none."""
        key = (self.repo, login.casefold())
        cache = self.permissions if self.permissions is not None else self._memo
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
        cache = self.permissions if self.permissions is not None else self._memo
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

    async def comments(self, number: int) -> list[dict]:
        """Every comment on an issue or PR; the executor appends what it creates, so the list stays current."""
        return await self._listing(("comments", number), "issues", number, "comments")


Handler = Callable[[sansio.Event, Context], Any]


@dataclass
class Outcome:
    actions: list[act.Action]
    results: list[str]
    handlers: list[str]


class Processor:
    """Runs a delivery through its handlers; their actions are applied (once each, by the ledger) or printed."""

    def __init__(self, app: GitHubApp, router: routing.Router, configs: RepoConfigs, templates: Templates,
                 metrics: Metrics, store: CommentStore | None = None):
        self.app = app
        self.router = router
        self.configs = configs
        self.templates = templates
        self.metrics = metrics
        self.store = store or CommentStore()
        self.known_labels: cachetools.TTLCache = cachetools.TTLCache(maxsize=4096, ttl=3600)
        self.known_checks: cachetools.TTLCache = cachetools.TTLCache(maxsize=4096, ttl=3600)
        self.permissions: cachetools.TTLCache = cachetools.TTLCache(maxsize=4096, ttl=PERMISSION_TTL)

    def wants(self, event: sansio.Event) -> bool:
        return bool(self.router.fetch(event))

    async def process(self, event: sansio.Event, *, ledger: Ledger | None = None, dry_run: bool = False,
                      report: Callable[[str], None] | None = None,
                      waiting: Callable[[], list[tuple[str, str | None]]] | None = None,
                      last_try: bool = False) -> Outcome:
        started = time.monotonic()
        handlers = sorted(self.router.fetch(event), key=lambda f: (f.__module__, f.__name__))
        repo = (event.data.get("repository") or {}).get("full_name")
        installation = (event.data.get("installation") or {}).get("id")
        if not handlers or not repo or not installation:
            return Outcome([], [], [])
        gh = await self.app.client(int(installation))
        bot_login = await self.app.bot_login()
        default_branch = event.data["repository"].get("default_branch") or "main"
        policy = await self.configs.policy(gh, repo, default_branch)
        ctx = Context(event, gh, repo, policy, bot_login, self.templates, self.configs, permissions=self.permissions,
                      waiting=waiting or (lambda: []), last_try=last_try)
        if dry_run:
            writer: Executor | DryRun = DryRun(ctx, report or print)
        else:
            writer = Executor(ctx, self.store, self.known_labels, ledger or MemoryLedger(),
                              request_window=self.app.request_window, sleep=self.app.retry.sleep,
                              on_unreconciled=self.metrics.unreconciled_effect, known_checks=self.known_checks)
        ctx._apply = writer.apply
        names = []
        for handler in handlers:
            names.append(f"{handler.__module__}.{handler.__name__}")
            for action in await handler(event, ctx) or ():
                await writer.apply(action)
        planned = [a for a, _ in writer.applied]
        results = [r.outcome for _, r in writer.applied]
        self.metrics.handler_seconds.labels(event.event).observe(time.monotonic() - started)
        logs.event("delivery handled", handlers=names, actions=[type(a).__name__ for a in planned],
                   results=results, ms=round((time.monotonic() - started) * 1000, 1))
        return Outcome(planned, results, names)
