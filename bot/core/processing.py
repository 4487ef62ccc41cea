"""One delivery through the handlers: they read and decide, the executor writes (or a dry run prints)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass

import cachetools
from gidgethub import routing, sansio

from bot.core.context import Context
from bot.core.permissions import PERMISSION_TTL
from bot.core.reader import open_pr_of_head
from bot.core.repo_config import RepoConfigs
from bot.core.routing import ordered
from bot.core.templates import Templates
from bot.delivery.journal import Delivery, JournalBackend
from bot.delivery.runner import Scheduler
from bot.effects import actions as act
from bot.effects.comments import CommentStore
from bot.effects.executor import DryRun, Executor, JournalLedger, Ledger, MemoryLedger
from bot.github.client import GitHubApp
from bot.github.shared_reads import SharedReads
from bot.telemetry import logs
from bot.telemetry.metrics import Metrics, counted_event

REFUSAL_QUIET = 3600.0  # seconds: one person refused on one PR is answered once in this long


@dataclass
class Outcome:
    actions: list[act.Action]
    results: list[str]
    handlers: list[str]


class Processor:
    """Runs a delivery through its handlers; their actions are applied (once each, by the ledger) or printed."""

    def __init__(
        self,
        app: GitHubApp,
        router: routing.Router,
        configs: RepoConfigs,
        templates: Templates,
        metrics: Metrics,
        store: CommentStore | None = None,
    ):
        self.app = app
        self.router = router
        self.configs = configs
        self.templates = templates
        self.metrics = metrics
        self.store = store or CommentStore()
        self.known_labels = SharedReads(cachetools.TTLCache(maxsize=4096, ttl=3600))
        self.known_checks: cachetools.TTLCache = cachetools.TTLCache(maxsize=4096, ttl=3600)
        self.permissions = SharedReads(cachetools.TTLCache(maxsize=4096, ttl=PERMISSION_TTL))
        self.refusals: cachetools.TTLCache = cachetools.TTLCache(maxsize=16_384, ttl=REFUSAL_QUIET)

    async def process_delivery(
        self, d: Delivery, effects: dict, journal: JournalBackend, scheduler: Scheduler | None
    ) -> None:
        """One delivery as a scheduler took it, with its ledger rows read in the same journal round trip: the one
        way bot/delivery reaches the processor (with `pr_of_sha`, for a delivery in a SHA lane)."""
        assert d.body is not None  # a scheduler takes a delivery with its payload (Journal.begin)
        event = sansio.Event(json.loads(d.body), event=d.event, delivery_id=d.id)
        await self.process(
            event,
            ledger=JournalLedger(journal, d.seq, effects),
            waiting=(lambda: scheduler.waiting(d.lane)) if scheduler is not None else None,
            last_try=scheduler is not None and scheduler.last_try(d),
        )

    async def pr_of_sha(self, installation: int, repo: str, sha: str) -> int | None:
        """The open PR of `repo` whose head is `sha` (a fork's run names no PR), as GitHub says."""
        return await open_pr_of_head(await self.app.client(installation), repo, sha)

    def wants(self, event: sansio.Event) -> bool:
        return bool(self.router.fetch(event))

    async def process(
        self,
        event: sansio.Event,
        *,
        ledger: Ledger | None = None,
        dry_run: bool = False,
        report: Callable[[str], None] | None = None,
        waiting: Callable[[], list[tuple[str, str | None]]] | None = None,
        last_try: bool = False,
    ) -> Outcome:
        started = time.monotonic()
        handlers = ordered(self.router, event)  # the registry's order (handlers/registry.py ORDER)
        repo = (event.data.get("repository") or {}).get("full_name")
        installation = (event.data.get("installation") or {}).get("id")
        if not handlers or not repo or not installation:
            return Outcome([], [], [])
        gh = await self.app.client(int(installation))
        bot_login = await self.app.bot_login()
        default_branch = event.data["repository"].get("default_branch") or "main"
        policy = await self.configs.policy(gh, repo, default_branch)
        ctx = Context(
            event,
            gh,
            repo,
            policy,
            bot_login,
            self.templates,
            self.configs,
            permission_reads=self.permissions,
            waiting=waiting or (lambda: []),
            last_try=last_try,
            refusals=self.refusals,
        )
        if dry_run:
            writer: Executor | DryRun = DryRun(ctx, report or print)
        else:
            writer = Executor(
                ctx,
                self.store,
                self.known_labels,
                ledger or MemoryLedger(),
                request_window=self.app.request_window,
                sleep=self.app.retry.sleep,
                on_unreconciled=self.metrics.unreconciled_effect,
                known_checks=self.known_checks,
            )
        ctx._apply = writer.apply
        names = []
        for handler in handlers:
            names.append(f"{handler.__module__}.{handler.__name__}")
            for action in await handler(event, ctx) or ():
                await writer.apply(action)
        planned = [a for a, _ in writer.applied]
        results = [r.outcome for _, r in writer.applied]
        self.metrics.handler_seconds.labels(counted_event(event.event)).observe(time.monotonic() - started)
        logs.event(
            "delivery handled",
            handlers=names,
            actions=[type(a).__name__ for a in planned],
            results=results,
            ms=round((time.monotonic() - started) * 1000, 1),
        )
        return Outcome(planned, results, names)
