"""A running sweepbot: settings, journal, GitHub App, processor and workers, started and stopped together."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Awaitable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict, TypeGuard

from gidgethub import routing

from bot.core import offload
from bot.core.config import Settings
from bot.core.processing import Processor
from bot.core.repo_config import RepoConfigs
from bot.core.templates import Templates
from bot.delivery.journal import Delivery, JournalBackend, NewDelivery, Queued
from bot.delivery.journal_open import open_journal
from bot.delivery.runner import Resolve, Scheduler
from bot.delivery.workers import Workers
from bot.github.client import GitHubApp, SharedWritePacer, WritePacer, http_timeout
from bot.telemetry import logs
from bot.telemetry.metrics import Metrics, merged_exposition

if TYPE_CHECKING:  # imported where used: psycopg only with a PostgreSQL journal
    from bot.delivery.journal_pg import PgJournal
    from bot.delivery.replica_workers import ReplicaWorkers

HEALTH_PROBE_TIMEOUT = 2.0  # each journal or database probe of /readyz and /healthz
LOOP_ANSWER_TIMEOUT = 1.0  # /livez: the workers' loop must run a no-op within this long
# How long a thread may hold the GIL while another waits (CPython's default is 5 ms): intake waits less.
SWITCH_INTERVAL = 0.001


def live_github(settings: Settings, metrics: Metrics) -> GitHubApp:
    """The App against the GitHub that settings name (no request is made until one is needed)."""
    return GitHubApp(
        app_id=settings.app_id or "",
        private_key=settings.private_key or "",
        api_url=settings.api_url,
        metrics=metrics,
        timeout=http_timeout(settings.http_timeout),
        in_flight=settings.github_in_flight,
        pacer_factory=lambda: WritePacer(limit=settings.writes_per_minute),
    )


class SchedulerOptions(TypedDict):
    """What the workers take from the settings, on either journal."""

    concurrency: int
    max_attempts: int
    retry_delay: float
    retry_for: float
    resolve: Resolve


def shared(journal: JournalBackend) -> TypeGuard[PgJournal]:
    """Whether `journal` is one that several replicas share (PostgreSQL)."""
    return hasattr(journal, "claim")


def replicated(workers: Scheduler | None) -> TypeGuard[ReplicaWorkers]:
    """Whether `workers` are one replica's, sharing the work through the database."""
    return hasattr(workers, "holder")


def default_router() -> routing.Router:
    from handlers.registry import router

    return router


class Bot:
    def __init__(
        self,
        settings: Settings,
        app: GitHubApp,
        *,
        router: routing.Router | None = None,
        templates: Templates | None = None,
        configs: RepoConfigs | None = None,
        journal: JournalBackend | None = None,
        apart: Any = None,
    ):
        """`apart`: a WorkerProcess (bot/app/worker_process.py) running the workers in a process of their own;
        this one is then the intake. Only a live App can be handed over, the sandbox's in-memory GitHub cannot."""
        self.settings = settings
        self.app = app
        self.metrics = app.metrics
        self.templates = templates or Templates()
        self.configs = configs or RepoConfigs()
        self.apart = apart if settings.workers > 0 else None
        # SQLite file or postgresql:// URL; beside a workers' process, this process is the intake
        self.journal = journal or open_journal(settings.db_path, intake=self.apart is not None)
        self.processor = Processor(app, router or default_router(), self.configs, self.templates, self.metrics)
        self.workers: Scheduler | None = None
        self._loop: WorkerLoop | None = None
        self._stopped = False
        # why GitHub refused the App's credentials at start (serve --unready-on-bad-credentials); None: accepted
        self.unverified: str | None = None

    async def start(self) -> int:
        """Start the workers (here, on their thread, or in their process); returns how many deliveries they
        resumed from the journal (0 on PostgreSQL: there they are claimed)."""
        await self.journal.prune()
        if self.apart is not None:
            await self.apart.start()
            return 0
        resumed = 0
        if self.settings.workers > 0:
            if self.settings.worker_thread:
                self._loop = WorkerLoop()
            options = SchedulerOptions(
                concurrency=self.settings.workers,
                max_attempts=self.settings.max_attempts,
                retry_delay=self.settings.retry_delay,
                retry_for=self.settings.retry_for,
                resolve=self.processor.pr_of_sha,
            )
            journal = self.journal
            if shared(journal):  # replicas share the work, the timers and the write budget through the database
                from bot.delivery.replica_workers import ReplicaWorkers

                self.workers = ReplicaWorkers(
                    journal,
                    self._process,
                    self.metrics,
                    lease=self.settings.lease_seconds,
                    on_replicas=self._share,
                    **options,
                )
                limit = self.settings.writes_per_minute
                self.app.shared_pacer = lambda installation: SharedWritePacer(
                    journal.pace, f"installation:{installation}", limit, sleep=self.app.retry.sleep
                )
            else:
                self.workers = Workers(self.journal, self._process, self.metrics, **options)
            resumed = await self._on_workers(self.workers.start())
        return resumed

    def _share(self, replicas: int) -> None:
        """This replica's part of GitHub's budget of requests under way at once: an equal share of the App's."""
        self.app.budget.share(self.settings.github_in_flight // replicas)

    async def _on_workers(self, coro: Any) -> Any:
        """Run a coroutine where the workers live: their own thread and loop, or this loop."""
        if self._loop is None:
            return await coro
        return await self._loop.run(coro)

    def enqueue(self, new: NewDelivery, seq: int) -> None:
        self.enqueue_queued(new.queued(seq))

    def enqueue_queued(self, queued: Queued) -> None:
        if self.apart is not None:
            self.apart.submit(queued)
        elif self.workers is None:
            return  # intake only (SWEEPBOT_WORKERS=0): stays queued in the journal for the next start
        elif self._loop is None:
            self.workers.submit(queued)
        else:
            self._loop.call(self.workers.submit, queued)

    async def wait_idle(self, timeout: float | None = None) -> None:
        if self.apart is not None:
            await self.apart.ask("idle", timeout)
        elif self.workers is not None:
            await self._on_workers(self.workers.wait_idle(timeout))

    async def metrics_text(self) -> bytes:
        """/metrics: this process's figures, with the workers' process's added in when they run apart."""
        if self.apart is not None:
            try:
                theirs = await self.apart.ask("metrics", HEALTH_PROBE_TIMEOUT)
            except Exception:  # not running: the intake's own figures still answer
                return self.metrics.render()
            return merged_exposition([self.metrics.render(), theirs.encode()])
        self.metrics.backlog.set(await self.workers.backlog() if self.workers else 0)  # on PostgreSQL: every replica's
        if replicated(self.workers):
            self.metrics.replica_lanes.labels(self.workers.holder).set(len(self.workers.held()))
        return self.metrics.render()

    def _process(self, d: Delivery, effects: dict) -> Awaitable[None]:
        """The scheduler's one call into the processor: the delivery, its ledger rows, this journal and scheduler."""
        return self.processor.process_delivery(d, effects, self.journal, self.workers)

    async def _database_health(self, journal: PgJournal) -> dict[str, Any]:
        """The shared database: reachable, how long the oldest pending delivery has waited, the leases held."""
        found: dict[str, Any] = {"target": journal.where, "replica": getattr(self.workers, "holder", None)}
        try:
            oldest = await asyncio.wait_for(journal.oldest_pending(), HEALTH_PROBE_TIMEOUT)
            leases = await asyncio.wait_for(journal.leases(), HEALTH_PROBE_TIMEOUT)
        except Exception as exc:
            return {**found, "reachable": False, "error": f"{type(exc).__name__}: {exc}"}
        mine = sum(1 for holder in leases.values() if holder == found["replica"])
        return {
            **found,
            "reachable": True,
            "oldest_pending_seconds": None if oldest is None else round(max(0.0, time.time() - oldest), 3),
            "leases_held": mine,
            "leases_total": len(leases),
        }

    async def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self.apart is not None:
            await self.apart.stop(self.settings.drain_timeout)
        if self.workers is not None:
            await self._on_workers(self.workers.drain(self.settings.drain_timeout))
        await self._on_workers(self.app.close())  # its HTTP connections belong to the workers' loop
        offload.shutdown()
        self.journal.close()
        if self._loop is not None:
            self._loop.stop()

    async def liveness(self) -> dict[str, Any]:
        """/livez: the server's loop answers (this runs on it) and so does the workers' loop; never GitHub
        or the database. Not live means only a restart helps."""
        report: dict[str, Any] = {"ok": True, "server_loop": "answering"}
        if self.apart is not None and self.apart.state == "running":  # one that is starting again is live
            try:
                theirs = await self.apart.ask("liveness", LOOP_ANSWER_TIMEOUT)
                report["ok"] = theirs["ok"]
                report["workers_loop"] = theirs["server_loop"]
            except Exception as exc:
                report["ok"], report["workers_loop"] = False, _unanswered(exc)
        if self._loop is not None:
            try:
                await asyncio.wait_for(self._loop.run(_answer()), LOOP_ANSWER_TIMEOUT)
                report["workers_loop"] = "answering"
            except Exception as exc:  # a stopped or stuck loop: the wait runs out
                report["ok"], report["workers_loop"] = False, _unanswered(exc)
        return report

    def _workers_state(self) -> str:
        """'running', 'none configured', or why the workers are not running."""
        if self.settings.workers <= 0:
            return "none configured"
        if self.apart is not None:
            return self.apart.state
        if self.workers is None:
            return "not started"
        if self._loop is not None and not self._loop.thread.is_alive():
            return "stopped: the workers' thread has ended"
        if not self.workers.tasks_alive():
            return "stopped: every worker task has ended"
        return "running"

    async def readiness(self) -> dict[str, Any]:
        """/readyz: this process can take deliveries: the journal (or database) answers a probe within
        HEALTH_PROBE_TIMEOUT and the workers, when configured, are running. One installation or one effect
        never makes it not ready."""
        report: dict[str, Any] = {"ok": True}
        try:
            await asyncio.wait_for(self.journal.probe(), HEALTH_PROBE_TIMEOUT)
            report["journal"] = "writable"
        except Exception as exc:
            report["ok"] = False
            report["journal"] = f"not writable: {type(exc).__name__}: {exc}"
        if self.workers is not None and self.workers.journal_error:
            report["ok"] = False
            report["journal"] = f"workers cannot write: {self.workers.journal_error}"
        report["workers_state"] = self._workers_state()
        if self.apart is not None and report["workers_state"] == "running":
            try:
                theirs = await self.apart.ask("readiness", HEALTH_PROBE_TIMEOUT)
                report["workers_state"] = theirs["workers_state"]
                if not theirs["ok"] and report["journal"] == "writable":
                    report["journal"] = f"workers cannot write: {theirs['journal']}"
            except Exception as exc:
                report["workers_state"] = f"not answering: {type(exc).__name__}: {exc}".rstrip(": ")
        if report["workers_state"] not in ("running", "none configured"):
            report["ok"] = False
        if report["journal"] != "writable":
            report["ok"] = False
        if self.unverified:
            report["ok"], report["credentials"] = False, f"refused by GitHub: {self.unverified}"
        return report

    async def health(self) -> dict[str, Any]:
        """/healthz: the details. `ok` is live and ready (what /livez and /readyz answer together); what is
        wrong for one installation, one effect or one repository is a named warning that never makes it false."""
        live = await self.liveness()
        report: dict[str, Any] = await self.readiness()
        report["ok"] = report["ok"] and live["ok"]
        report["live"] = live
        try:
            counts = await asyncio.wait_for(self.journal.counts(), HEALTH_PROBE_TIMEOUT)
        except Exception:  # already said under "journal" when the journal is away
            counts = {}
        report["backlog"] = counts.get("queued", 0) + counts.get("running", 0) + counts.get("retrying", 0)
        report["retrying"] = counts.get("retrying", 0)
        report["failed"] = counts.get("failed", 0)
        if self.apart is None:
            report.update(await self._details())
        else:
            report.update(await self._details_apart())
        if "database" in report:
            report["ok"] = report["ok"] and report["database"]["reachable"]
        return report

    async def _details(self) -> dict[str, Any]:
        """What the workers know: GitHub's errors, each installation's authentication, unreconciled effects,
        repositories whose config is refused."""
        found: dict[str, Any] = {"workers": self.workers.concurrency if self.workers else 0}
        if shared(self.journal):
            found["database"] = await self._database_health(self.journal)
        found["last_github_error"] = self.metrics.last_github_error
        problems = self.app.auth_problems
        found["authentication"] = {str(i): reason for i, reason in problems.items()} or "ok"
        found["installations"] = {str(i): state for i, state in self.app.installations().items()}
        found["unreconciled_effects"] = list(self.metrics.unreconciled)
        found["config_errors"] = {repo: list(problem.errors) for repo, problem in self.configs.problems.items()}
        found["warnings"] = self._warnings(
            problems, found["unreconciled_effects"], found["config_errors"], self.metrics.lost_leases
        )
        return found

    async def _details_apart(self) -> dict[str, Any]:
        """The workers' process's details, and that process itself; a warning when it cannot say."""
        assert self.apart is not None
        process = {
            "pid": self.apart.proc.pid if self.apart.proc else None,
            "state": self.apart.state,
            "restarts": self.apart.restarts,
        }
        try:
            theirs = await self.apart.ask("health", HEALTH_PROBE_TIMEOUT)
        except Exception as exc:
            return {
                "workers": self.settings.workers,
                "workers_process": process,
                "last_github_error": None,
                "authentication": "unknown",
                "installations": {},
                "unreconciled_effects": [],
                "config_errors": {},
                "warnings": [
                    {
                        "name": "workers_process_not_answering",
                        "state": self.apart.state,
                        "error": f"{type(exc).__name__}: {exc}",
                    }
                ],
            }
        keys = (
            "workers",
            "database",
            "last_github_error",
            "authentication",
            "installations",
            "unreconciled_effects",
            "config_errors",
            "warnings",
        )
        return {"workers_process": process, **{key: theirs[key] for key in keys if key in theirs}}

    @staticmethod
    def _warnings(
        auth: dict[int, str],
        unreconciled: Sequence[Mapping[str, Any]],
        config_errors: dict[str, list[str]],
        lost_leases: Sequence[Mapping[str, Any]] = (),
    ) -> list[dict[str, Any]]:
        """What someone should look at, each named; none of them fails readiness. A lease lost (PostgreSQL): taken
        back (it ran out before its renewal: the replica or its database was too slow) or stopped (another replica
        took the lane over)."""
        warnings: list[dict[str, Any]] = [
            {"name": "installation_cannot_authenticate", "installation": i, "reason": reason}
            for i, reason in sorted(auth.items())
        ]
        warnings += [{"name": "unreconciled_effect", **effect} for effect in unreconciled]
        warnings += [
            {"name": "repository_config_invalid", "repo": repo, "errors": errors}
            for repo, errors in sorted(config_errors.items())
        ]
        warnings += [{"name": "lease_lost", **lost} for lost in lost_leases]
        return warnings


def _unanswered(exc: BaseException) -> str:
    """Why the workers' loop (on its thread or in its process) gave /livez no answer."""
    if isinstance(exc, TimeoutError):
        return f"not answering within {LOOP_ANSWER_TIMEOUT:g} s"
    return f"{type(exc).__name__}: {exc}"


async def _answer() -> None:
    """A no-op run on the workers' loop: that it returns at all says the loop is turning."""


class WorkerLoop:
    """A thread with its own event loop for the workers and every GitHub request they make.

    The webhook server's loop then only verifies, journals and acknowledges: a handler rendering a template
    or parsing a large answer never delays an ack behind it.
    """

    def __init__(self) -> None:
        sys.setswitchinterval(SWITCH_INTERVAL)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="sweepbot-workers", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    async def run(self, coro: Any) -> Any:
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    def call(self, fn: Any, *args: Any) -> None:
        self.loop.call_soon_threadsafe(fn, *args)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


def log_secrets(settings: Settings) -> None:
    for secret in (*settings.webhook_secrets, settings.health_token):
        logs.register_secret(secret)
