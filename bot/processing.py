"""One delivery through the handlers: they read and decide (returning actions), the executor writes."""

from __future__ import annotations

import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Callable

import cachetools
import gidgethub
from gidgethub import routing, sansio

from bot import actions as act
from bot import logs
from bot.comments import PER_PAGE, CommentStore, find_bot_issue, fit
from bot.github import GitHubApp, GitHubClient
from bot.metrics import Metrics
from bot.repo_config import RepoConfigs
from bot.templates import Templates


@dataclass
class Context:
    """What a handler sees: the event, a reading client, the repository's policy, the templates."""

    event: sansio.Event
    gh: GitHubClient
    repo: str
    policy: dict[str, Any]
    bot_login: str
    templates: Templates
    configs: RepoConfigs
    _memo: dict[Any, Any] = field(default_factory=dict)

    @property
    def payload(self) -> dict[str, Any]:
        return self.event.data

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


class Executor:
    """Applies actions for one delivery; every GitHub write of the bot goes through here."""

    def __init__(self, ctx: Context, store: CommentStore, known_labels: cachetools.TTLCache):
        self.ctx = ctx
        self.store = store
        self.known_labels = known_labels  # (repo, label) pairs seen to exist, to spare a lookup per event

    def _truncated_note(self, limit: int) -> str:
        return self.ctx.templates.render("truncated", limit=limit)

    async def apply(self, action: act.Action) -> str:
        gh, repo = self.ctx.gh, self.ctx.repo
        if isinstance(action, act.Comment):
            body = fit(action.purpose, action.body, self._truncated_note)
            outcome, comment = await self.store.upsert(
                gh, repo, action.number, action.purpose, body, self.ctx.bot_login,
                only_if_missing=action.only_if_missing, listing=lambda: self.ctx.comments(action.number),
            )
            if outcome == "created":
                (await self.ctx.comments(action.number)).append(comment)
            return outcome
        if isinstance(action, act.AddLabels):
            await gh.post(f"/repos/{repo}/issues/{action.number}/labels", data={"labels": list(action.labels)})
            return "added"
        if isinstance(action, act.RemoveLabel):
            name = urllib.parse.quote(action.label, safe="")
            try:
                await gh.delete(f"/repos/{repo}/issues/{action.number}/labels/{name}")
            except gidgethub.BadRequest as exc:
                if int(exc.status_code) != 404:  # already gone: the goal is met
                    raise
                return "absent"
            return "removed"
        if isinstance(action, act.EnsureLabel):
            return await self._ensure_label(action)
        if isinstance(action, act.Issue):
            body = fit(action.purpose, action.body, self._truncated_note)
            issue = await find_bot_issue(gh, repo, action.purpose, self.ctx.bot_login)
            if issue is None:
                await gh.post(f"/repos/{repo}/issues", data={"title": action.title, "body": body})
                return "created"
            if issue.get("body") == body and issue.get("title") == action.title:
                return "unchanged"
            await gh.patch(f"/repos/{repo}/issues/{issue['number']}", data={"title": action.title, "body": body})
            return "updated"
        if isinstance(action, act.CloseIssue):
            issue = await find_bot_issue(gh, repo, action.purpose, self.ctx.bot_login)
            if issue is None:
                return "absent"
            await gh.patch(f"/repos/{repo}/issues/{issue['number']}", data={"state": "closed"})
            return "closed"
        raise TypeError(f"unknown action {action!r}")

    async def _ensure_label(self, action: act.EnsureLabel) -> str:
        gh, repo = self.ctx.gh, self.ctx.repo
        cache = self.known_labels
        if (repo, action.name) in cache:
            return "exists"
        try:
            await gh.getitem(f"/repos/{repo}/labels/{urllib.parse.quote(action.name, safe='')}")
        except gidgethub.BadRequest as exc:
            if int(exc.status_code) != 404:
                raise
            try:
                await gh.post(f"/repos/{repo}/labels", data={
                    "name": action.name, "color": action.color, "description": action.description})
            except gidgethub.InvalidField:
                pass  # created meanwhile by someone else
            cache[(repo, action.name)] = True
            return "created"
        cache[(repo, action.name)] = True
        return "exists"


Handler = Callable[[sansio.Event, Context], Any]


@dataclass
class Outcome:
    actions: list[act.Action]
    results: list[str]
    handlers: list[str]


class Processor:
    """Turns a delivery into actions (handlers), then applies them or, in a dry run, reports them."""

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

    async def process(self, event: sansio.Event, *, dry_run: bool = False,
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
        planned: list[act.Action] = []
        names = []
        for handler in handlers:
            names.append(f"{handler.__module__}.{handler.__name__}")
            planned.extend(await handler(event, ctx) or ())
        results = []
        if dry_run:
            say = report or print
            for action in planned:
                say(f"would {action.describe()}")
                for line in (getattr(action, "body", "") or "").splitlines():
                    say(f"    | {line}")
                results.append("planned")
        else:
            executor = Executor(ctx, self.store, self.known_labels)
            for action in planned:
                results.append(await executor.apply(action))
        self.metrics.handler_seconds.labels(event.event).observe(time.monotonic() - started)
        logs.event("delivery handled", handlers=names, actions=[type(a).__name__ for a in planned],
                   results=results, ms=round((time.monotonic() - started) * 1000, 1))
        return Outcome(planned, results, names)

