"""One delivery through the handlers: they read and decide, the executor writes (or a dry run prints)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import cachetools
from gidgethub import routing, sansio

from bot import actions as act
from bot import lanes, logs
from bot.comments import PER_PAGE, CommentStore
from bot.executor import DryRun, Executor, Ledger, MemoryLedger
from bot.github import GitHubApp, GitHubClient
from bot.metrics import Metrics
from bot.policy import Policy
from bot.repo_config import RepoConfigs
from bot.templates import Templates


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

    def render(self, kind: str, **variables: Any) -> str:
        return self.templates.render(kind, **variables)

    async def _listing(self, key: tuple, url: str, keep: Callable[[dict], bool] = lambda item: True) -> list[dict]:
        """Every page of a list endpoint, read once per delivery."""
        if key not in self._memo:
            self._memo[key] = [item async for item in self.gh.getiter(f"{url}?per_page={PER_PAGE}") if keep(item)]
        return self._memo[key]

    async def pr_files(self, number: int) -> list[str]:
        """Changed file names of a PR."""
        files = await self._listing(("files", number), f"/repos/{self.repo}/pulls/{number}/files")
        return [f["filename"] for f in files]

    async def labels(self, number: int) -> list[str]:
        """The labels on an issue or PR as GitHub has them now (a payload's list can be stale)."""
        return [label["name"] for label in
                await self._listing(("labels", number), f"/repos/{self.repo}/issues/{number}/labels")]

    async def label_events(self, number: int) -> list[dict]:
        return await self._listing(("events", number), f"/repos/{self.repo}/issues/{number}/events",
                                   lambda e: e.get("event") in ("labeled", "unlabeled"))

    async def comments(self, number: int) -> list[dict]:
        """Every comment on an issue or PR; the executor appends what it creates, so the list stays current."""
        return await self._listing(("comments", number), f"/repos/{self.repo}/issues/{number}/comments")


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

    def wants(self, event: sansio.Event) -> bool:
        return bool(self.router.fetch(event))

    async def process(self, event: sansio.Event, *, ledger: Ledger | None = None, dry_run: bool = False,
                      report: Callable[[str], None] | None = None) -> Outcome:
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
        ctx = Context(event, gh, repo, policy, bot_login, self.templates, self.configs)
        if dry_run:
            writer: Executor | DryRun = DryRun(ctx, report or print)
        else:
            writer = Executor(ctx, self.store, self.known_labels, ledger or MemoryLedger(),
                              request_window=self.app.request_window, sleep=self.app.retry.sleep,
                              on_unreconciled=self.metrics.unreconciled_effect)
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
