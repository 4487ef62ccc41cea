"""The `sweepbot` command: serve, receive, deliveries, redeliver, manifest, setup, check-config, init, doctor."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import difflib
import json
import logging
import os
import signal
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, TextIO

import gidgethub
from aiohttp import ClientSession, web
from gidgethub import sansio

from bot.app import init_config, setup_page
from bot.app.doctor import doctor as run_doctor
from bot.app.doctor import read_config, verify_credentials
from bot.app.header_deadline import DeadlineSite
from bot.app.runtime import Bot, default_router, live_github, log_secrets
from bot.app.server import FULL_NAME, make_app
from bot.app.webhook_signature import sign
from bot.app.worker_process import WorkerProcess, WorkersUnavailable
from bot.core.config import DEFAULT_DB, ENV_SETTINGS, ConfigError, Settings
from bot.core.processing import Processor
from bot.core.repo_config import RepoConfigs
from bot.core.templates import Templates
from bot.delivery.journal import DONE, FAILED, IGNORED, UNFINISHED, JournalBackend, JournalUnavailable
from bot.delivery.journal_open import open_journal
from bot.github.client import GitHubApp
from bot.telemetry import logs
from bot.telemetry.metrics import COUNTED_EVENTS, Metrics


def build_github(settings: Settings, metrics: Metrics, out: TextIO, on_write: Any = None) -> tuple[GitHubApp, Any]:
    """The live App when credentials are set, else the sandbox's in-memory GitHub (returned second)."""
    if settings.live:
        return live_github(settings, metrics), None
    from bot.app.sandbox import demo_github, sandbox_app

    fake = demo_github(out, on_write=on_write)
    return sandbox_app(fake, metrics), fake


def wants_live(env_settings: Settings) -> bool:
    return bool(env_settings.app_id or env_settings.private_key)


# -- serve -------------------------------------------------------------------------------------

SANDBOX_SETTLE_TIMEOUT = 60.0  # seconds one sandbox step may take to settle (a label waits out its settle first)
SANDBOX_JOURNAL_PREFIX = "sweepbot-sandbox-journal-"  # the sandbox's journal folder, in the temp directory


async def serve(
    settings: Settings,
    out: TextIO | None = None,
    *,
    transcript: Path | None = None,
    until_walked: bool = False,
    unready_on_bad_credentials: bool = False,
) -> int:
    """The webhook server until SIGTERM or SIGINT. In the sandbox it first walks a PR's whole lifecycle through
    its own webhook and writes every text in full to `transcript` (default: a new file in the temp directory);
    `until_walked` returns once the walk is over (tests). A port in use is one line and exit 2.

    The sandbox journals its deliveries in a folder of its own in the temp directory, removed at exit, unless
    SWEEPBOT_DB names a journal: never in live mode's default (./sweepbot.db), where `sweepbot deliveries` would
    list them.

    Live, the App's credentials are verified (a JWT signed, GET /app) before the port is opened: refused, they are
    one line and exit 2, or with `unready_on_bad_credentials` the server listens, not ready, answering webhooks
    503 and checking them again every CREDENTIALS_RETRY seconds."""
    if wants_live(settings) or settings.db_path != DEFAULT_DB:
        return await _serve(
            settings,
            out,
            transcript=transcript,
            until_walked=until_walked,
            unready_on_bad_credentials=unready_on_bad_credentials,
        )
    with tempfile.TemporaryDirectory(prefix=SANDBOX_JOURNAL_PREFIX, ignore_cleanup_errors=True) as folder:
        own = dataclasses.replace(settings, db_path=str(Path(folder) / "journal.db"))
        return await _serve(own, out, transcript=transcript, until_walked=until_walked, journal_removed=True)


async def _serve(
    settings: Settings,
    out: TextIO | None,
    *,
    transcript: Path | None,
    until_walked: bool,
    journal_removed: bool = False,
    unready_on_bad_credentials: bool = False,
) -> int:
    out = out or sys.stdout
    sandbox = not wants_live(settings)
    if not sandbox:
        problems = settings.live_problems()
        if problems:
            for problem in problems:
                print(f"sweepbot: cannot start live: {problem}", file=sys.stderr)
            return 2
    elif not settings.webhook_secrets:
        settings = dataclasses.replace(settings, webhook_secrets=(_sandbox_secret(),))
    log_secrets(settings)
    metrics = Metrics()
    recorder = None
    if sandbox:
        from bot.app.sandbox import Recorder

        recorder = Recorder(out)
    app, fake = build_github(settings, metrics, out, on_write=recorder)
    unverified, recheck_needed = None, False
    if not sandbox:  # nothing listens before GitHub has accepted the App's credentials
        verdict = await verify_credentials(app)
        if verdict.unreachable:  # no verdict: GitHub sends no deliveries it cannot take back, so serve and ask again
            logs.event("credentials not verified: GitHub did not answer", logging.WARNING, error=verdict.problem)
            recheck_needed = True
        elif verdict.app is None:
            if not unready_on_bad_credentials:
                print(f"sweepbot: cannot start live: {verdict.problem}; {verdict.fix}", file=sys.stderr)
                await app.close()
                return 2
            unverified = f"{verdict.problem}; {verdict.fix}"
            recheck_needed = True
    try:
        bot = Bot(settings, app, apart=WorkerProcess(settings) if settings.worker_process and not sandbox else None)
    except JournalUnavailable as exc:  # a bad or unreachable database: said once, without its password
        print(f"sweepbot: {exc}", file=sys.stderr)
        await app.close()
        return 2
    bot.unverified = unverified
    runner = web.AppRunner(make_app(bot), access_log=None, shutdown_timeout=5)
    await runner.setup()
    # listen before any worker starts: a port in use leaves nothing running behind it
    site = await listen(runner, settings.host, settings.port, "set PORT to another port")
    if site is None:
        await bot.stop()
        return 2
    if recorder is not None and settings.workers > 0:  # with no worker nothing is walked: no transcript
        try:
            transcript = _open_transcript(recorder, transcript)
        except OSError as exc:
            await runner.cleanup()
            await bot.stop()
            print(f"sweepbot: cannot write the sandbox transcript: {exc}", file=sys.stderr)
            return 2
    try:
        await bot.start()
    except WorkersUnavailable as exc:  # the workers' process said why on stderr
        print(f"sweepbot: {exc}", file=sys.stderr)
        await site.stop()
        await runner.cleanup()
        await bot.stop()
        return 2
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    recheck = asyncio.ensure_future(_verify_until_accepted(bot)) if recheck_needed else None
    url = f"http://{settings.host}:{_bound_port(runner, settings.port)}"
    logs.event("listening", url=url, mode="sandbox" if sandbox else "live", workers=settings.workers)
    try:
        if recorder is not None:  # the sandbox
            _sandbox_banner(out, url, settings, transcript, bot.journal.where, journal_removed)
            await _walk_unless_stopped(_walk_lifecycle(out, url, settings, fake, bot, recorder), stop)
            if recorder.transcript is not None:
                print(f"sweepbot sandbox: every text in full: {transcript}.", file=out)
            print(f"sweepbot sandbox: still serving {url}/webhook; Ctrl-C stops.", file=out)
        elif unverified:
            print(f"sweepbot live on {url}/webhook, NOT READY: {unverified}", file=out)
        else:
            print(f"sweepbot live on {url}/webhook (App {settings.app_id}, GitHub API {settings.api_url})", file=out)
        out.flush()
        if not until_walked:
            await stop.wait()
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        if recheck is not None:
            recheck.cancel()
            await asyncio.gather(recheck, return_exceptions=True)
        print("sweepbot: stopping intake, draining in-flight work", file=out)
        await site.stop()
        await bot.stop()
        await runner.cleanup()
        if recorder is not None and recorder.transcript is not None:
            recorder.transcript.close()
    return 0


CREDENTIALS_RETRY = 30.0  # seconds between checks of credentials GitHub refused (serve --unready-on-bad-credentials)


async def _verify_until_accepted(bot: Bot) -> None:
    """Check the App's credentials again until GitHub accepts them; the server is then ready. While GitHub does not
    answer the server stays as it is; credentials GitHub then refuses make it not ready (a log line says why)."""
    while True:
        await asyncio.sleep(CREDENTIALS_RETRY)
        verdict = await verify_credentials(bot.app)
        if verdict.unreachable:
            continue
        bot.unverified = None if verdict.app is not None else f"{verdict.problem}; {verdict.fix}"
        level = logging.INFO if bot.unverified is None else logging.ERROR
        logs.event("credentials checked again", level, accepted=bot.unverified is None, problem=bot.unverified)
        if bot.unverified is None:
            return


async def listen(runner: web.AppRunner, host: str, port: int, hint: str) -> web.BaseSite | None:
    """The site listening on host:port (each request's headers must arrive in time: bot/app/header_deadline.py),
    or None after one line saying why it cannot (a port in use: `hint` says what to change), with `runner`
    cleaned up."""
    site = DeadlineSite(runner, host, port)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        reason = os.strerror(exc.errno).lower() if exc.errno else str(exc)  # not asyncio's "error while ..."
        print(f"sweepbot: cannot listen on {host}:{port}: {reason} ({hint})", file=sys.stderr)
        return None
    return site


def _open_transcript(recorder: Any, path: Path | None) -> Path:
    """The sandbox's transcript file, given to the recorder: `path`, else a new file in the temp directory (one
    per server, so two sandboxes never write into one)."""
    from bot.app.sandbox import TRANSCRIPT_PREFIX

    if path is None:
        fd, name = tempfile.mkstemp(prefix=TRANSCRIPT_PREFIX, suffix=".md")
        recorder.transcript, path = os.fdopen(fd, "w", encoding="utf-8"), Path(name)
    else:
        recorder.transcript = open(path, "w", encoding="utf-8")
    recorder.transcript.write(
        "# sweepbot sandbox transcript\n\nEvery write the bot made to the in-memory GitHub,"
        " step by step, each text in full.\n"
    )
    return path


async def _walk_unless_stopped(walk: Any, stop: asyncio.Event) -> None:
    """The sandbox's walk, cut short by SIGTERM or SIGINT (the server then drains as always)."""
    walking, stopped = asyncio.ensure_future(walk), asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({walking, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (walking, stopped):
            task.cancel()
        await asyncio.gather(walking, stopped, return_exceptions=True)
    if walking.done() and not walking.cancelled() and walking.exception() is not None:
        raise walking.exception()


def _bound_port(runner: web.AppRunner, asked: int) -> int:
    """The port listened on (PORT=0 lets the system choose one)."""
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            return int(address[1])
    return asked


def _sandbox_secret() -> str:
    from bot.app.sandbox import DEMO_SECRET

    return DEMO_SECRET


def _sandbox_banner(
    out: TextIO, url: str, settings: Settings, transcript: Path | None, journal: str, journal_removed: bool
) -> None:
    from bot.app.sandbox import DEMO_REPO, DEMO_SECRET

    print("sweepbot sandbox: no GitHub App credentials (APP_ID, PRIVATE_KEY), so GitHub is in memory here.", file=out)
    print(f"  demo repository  {DEMO_REPO}, PR #1 from a fork, touching the changelog and an AMD config", file=out)
    secret = f"here {DEMO_SECRET!r}" if settings.webhook_secrets == (DEMO_SECRET,) else "yours"
    print(f"  webhook          POST {url}/webhook  (signed with WEBHOOK_SECRET, {secret})", file=out)
    print(f"  health, metrics  {url}/healthz  {url}/metrics", file=out)
    kept = "removed at exit; SWEEPBOT_DB names one that stays" if journal_removed else "SWEEPBOT_DB"
    print(f"  journal          {journal}  ({kept})", file=out)
    if settings.workers > 0:
        print(f"  transcript       {transcript}  (every comment and check run the bot writes, in full)", file=out)
        print(
            f"  below: the PR's whole lifecycle, one step at a time, each a signed delivery to the webhook and the"
            f" bot left to settle ({settings.settle_seconds:g} s label settle); one line per GitHub write.",
            file=out,
        )
    print("", file=out)


async def _walk_lifecycle(out: TextIO, url: str, settings: Settings, fake: Any, bot: Bot, recorder: Any) -> None:
    """The sandbox's script (bot/app/sandbox.py `lifecycle`), each step's delivery posted signed to our own
    webhook, the workers left to finish each one before the next."""
    from bot.app.sandbox import lifecycle, walk

    async with ClientSession() as session:

        async def deliver(event: str, payload: dict) -> str:
            body = json.dumps(payload).encode()
            async with session.post(
                f"{url}/webhook",
                data=body,
                headers={
                    "Content-Type": "application/json",
                    "X-GitHub-Event": event,
                    "X-GitHub-Delivery": f"sandbox-{uuid.uuid4()}",
                    "X-Hub-Signature-256": sign(body, settings.webhook_secrets[0]),
                },
            ) as resp:
                return "" if resp.status == 202 else f"{resp.status} {await resp.text()}"

        async def settle() -> None:
            await bot.wait_idle(SANDBOX_SETTLE_TIMEOUT + settings.settle_seconds)

        if settings.workers == 0:  # intake only: nothing would answer the first step
            print(
                "sweepbot sandbox: SWEEPBOT_WORKERS=0, so no worker handles the lifecycle's deliveries: not walked",
                file=out,
            )
            return
        await walk(lifecycle(), fake, deliver, settle, recorder, out)


# -- receive / redeliver -----------------------------------------------------------------------


RECEIVED_EVENTS = COUNTED_EVENTS  # the manifest's events and those GitHub sends every App (bot/telemetry/metrics.py)


async def receive(
    settings: Settings, event_name: str, payload_path: str, dry_run: bool, out: TextIO | None = None
) -> int:
    """One delivery through the handlers, outside the journal. An event name GitHub never sends the App, or a
    payload that cannot be read, is one line on stderr and exit 2."""
    out = out or sys.stdout
    if event_name not in RECEIVED_EVENTS:
        print(
            f"sweepbot: -e {event_name!r} is not an event GitHub sends this App; {_closest_event(event_name)}",
            file=sys.stderr,
        )
        return 2
    try:
        payload = json.loads(Path(payload_path).read_text())
    except (OSError, ValueError) as exc:
        print(f"sweepbot: cannot read {payload_path}: {exc}", file=sys.stderr)
        return 2
    if not isinstance(payload, dict):
        print(f"sweepbot: {payload_path} is not a JSON object", file=sys.stderr)
        return 2
    return await _run_once(settings, event_name, payload, f"cli-{uuid.uuid4()}", dry_run, out)


def _closest_event(name: str) -> str:
    close = difflib.get_close_matches(name, sorted(RECEIVED_EVENTS), n=1)
    return f"did you mean {close[0]}?" if close else f"the events are {', '.join(sorted(RECEIVED_EVENTS))}"


async def _run_once(
    settings: Settings, event_name: str, payload: dict, delivery_id: str, dry_run: bool, out: TextIO
) -> int:
    metrics = Metrics()
    app, fake = build_github(settings, metrics, out)
    if fake is not None:
        from bot.app.sandbox import not_held, seed_from_payload

        seed_from_payload(fake, payload)
        if missing := not_held(fake, payload):
            print(f"sweepbot: {missing}", file=sys.stderr)
            await app.close()
            return 2
        print("(sandbox: in-memory GitHub; set APP_ID and PRIVATE_KEY to act on real GitHub)", file=out)
    processor = Processor(app, default_router(), RepoConfigs(), Templates(), app.metrics)  # one delivery, no journal
    try:
        event = sansio.Event(payload, event=event_name, delivery_id=delivery_id)
        if not processor.wants(event):
            print(f"no handler wants {event_name}.{payload.get('action')}", file=out)
            return 0
        outcome = await processor.process(event, dry_run=dry_run, report=lambda line: print(line, file=out))
        print(
            f"handled by {', '.join(outcome.handlers) or 'nothing'}: "
            f"{len(outcome.actions)} action(s){' planned, none made' if dry_run else ''}",
            file=out,
        )
        if not dry_run:
            for action, result in zip(outcome.actions, outcome.results):
                print(f"  {result}: {action.describe()}", file=out)
        return 0
    except gidgethub.BadRequest as exc:  # in the sandbox: something else the payload names that it lacks
        if fake is None or int(exc.status_code) != 404:
            raise
        from bot.app.sandbox import sandbox_holds

        asked = next((f"{r.method} {r.path}" for r in reversed(fake.requests) if r.status == 404), "a request")
        print(f"sweepbot: the sandbox holds nothing at {asked} ({sandbox_holds(fake)})", file=sys.stderr)
        return 2
    finally:
        await app.close()


def _journal_or_say_why(settings: Settings) -> JournalBackend | None:
    """The configured journal; None, with the reason on stderr (without a password), when it cannot be opened."""
    try:
        return open_journal(settings.db_path)
    except JournalUnavailable as exc:
        print(f"sweepbot: {exc}", file=sys.stderr)
        return None


REDELIVER_POLL = 0.5  # how often `redeliver --wait` reads the row


async def redeliver(
    settings: Settings,
    delivery_id: str,
    out: TextIO | None = None,
    *,
    wait: float | None = None,
    poll: float = REDELIVER_POLL,
) -> int:
    """Hand a journal entry back to the running workers: queued again (seq, attempts and ledger kept), it runs in
    its PR's lane order on whichever worker or replica takes the lane, never here beside them. With `wait`
    (seconds), read the row until it finishes: 0 done or ignored, 1 failed again or still unfinished; 2 when
    there is no such delivery or no journal."""
    out = out or sys.stdout
    journal = _journal_or_say_why(settings)
    if journal is None:
        return 2
    try:
        found = await journal.get(delivery_id)
        if found is not None and found.status in UNFINISHED:
            print(f"delivery {delivery_id} is {found.status} already: the workers take it in its lane's turn", file=out)
        elif found is None or await journal.requeue(delivery_id) is None:  # None from requeue: pruned meanwhile
            print(f"sweepbot: no delivery {delivery_id!r} in {journal.where}", file=sys.stderr)
            return 2
        else:
            print(
                f"delivery {delivery_id} queued again (it was {found.status}, {found.attempts} attempt(s)):"
                f" the running workers take it in its lane's turn",
                file=out,
            )
        if wait is None:
            print(
                f"  see its outcome with `sweepbot deliveries`, or wait for it with"
                f" `sweepbot redeliver --wait SECONDS {delivery_id}`",
                file=out,
            )
            return 0
        return await _wait_for(journal, delivery_id, wait, poll, out)
    finally:
        journal.close()


async def _wait_for(journal: JournalBackend, delivery_id: str, wait: float, poll: float, out: TextIO) -> int:
    """Read the row until it is finished or `wait` seconds have passed; say which."""
    deadline = time.monotonic() + wait
    while True:
        row = await journal.get(delivery_id)
        if row is None:
            print(f"sweepbot: delivery {delivery_id!r} is gone from {journal.where} (pruned)", file=sys.stderr)
            return 2
        if row.status == DONE or row.status == IGNORED:
            print(f"delivery {delivery_id} {row.status} (attempt {row.attempts})", file=out)
            return 0
        if row.status == FAILED:
            print(f"delivery {delivery_id} failed again (attempt {row.attempts}): {row.error}", file=out)
            return 1
        if time.monotonic() >= deadline:
            print(
                f"delivery {delivery_id} still {row.status} after {wait:g} s (is a server running on"
                f" {journal.where}?); see `sweepbot deliveries`",
                file=out,
            )
            return 1
        await asyncio.sleep(min(poll, max(deadline - time.monotonic(), 0.0)))


async def deliveries(settings: Settings, failed_only: bool, limit: int, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    journal = _journal_or_say_why(settings)
    if journal is None:
        return 2
    try:
        rows = await journal.listing(status=FAILED if failed_only else None, limit=limit)
        counts = await journal.counts()
    finally:
        journal.close()
    print(f"{'received':19}  {'status':8} {'tries':>5}  {'event':28} {'where':34} id", file=out)
    for d in rows:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(d.received_at))
        what = d.event + (f".{d.action}" if d.action else "")
        where = (d.repo or "-") + (f"#{d.number}" if d.number is not None else "")
        print(f"{when}  {d.status:8} {d.attempts:>5}  {what[:28]:28} {where[:34]:34} {d.id}", file=out)
        if d.error:
            print(f"{'':30}error: {d.error}", file=out)
        if d.status == "retrying" and d.not_before:
            again = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(d.not_before))
            print(f"{'':30}next try: {again}", file=out)
    print("totals: " + (", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "empty journal"), file=out)
    return 0


# -- manifest / check-config -------------------------------------------------------------------


def manifest(
    webhook_url: str | None = None,
    out: TextIO | None = None,
    *,
    redirect_url: str | None = None,
    url: str | None = None,
) -> int:
    """The manifest JSON, and nothing else, on `out`; a webhook URL that is not https is one line, exit 2."""
    out = out or sys.stdout
    if webhook_url and (problem := setup_page.webhook_url_problem(webhook_url)):
        print(f"sweepbot: --webhook-url {webhook_url!r}: {SETUP_PROBLEMS[problem]}", file=sys.stderr)
        return 2
    data = setup_page.build_manifest(webhook_url, redirect_url=redirect_url, url=url)
    print(json.dumps(data, indent=2), file=out)
    return 0


SETUP_PROBLEMS = {  # the CLI's lines for the problem codes of setup_page (the page has its own, bilingual)
    "webhook_missing": "it is empty",
    "webhook_not_https": "it must start with https://",
    "webhook_bad": "it is not a usable URL (a host, no password, no #fragment)",
    "github_bad": "it must be an https:// server address without a path, e.g. https://github.example.com",
}


async def setup(options: setup_page.SetupOptions, host: str, port: int, out: TextIO | None = None) -> int:
    """Serve the set-up page until Ctrl-C (SIGINT or SIGTERM); a port in use is one line and exit 2."""
    out = out or sys.stdout

    def saved(app: dict, where: setup_page.Saved) -> None:
        place = str(where.path) if where.path else "no file: copy them from the page now"
        print(
            f"sweepbot setup: App {app.get('name')} (id {app.get('id')}) registered; credentials in {place}."
            f" Install it: {app['html_url'].rstrip('/')}/installations/new",
            file=out,
            flush=True,
        )

    page = setup_page.SetupPage(dataclasses.replace(options, on_saved=saved))
    runner = web.AppRunner(page.app, access_log=None, shutdown_timeout=2)
    await runner.setup()
    if await listen(runner, host, port, "choose another with --port") is None:
        return 2
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    shown = f"[{host}]" if ":" in host else host
    print(
        f"sweepbot setup: open http://{shown}:{port}/ in a browser to register the GitHub App"
        f" (credentials go to {options.env_file}). Ctrl-C stops.",
        file=out,
        flush=True,
    )
    await stop.wait()
    await runner.cleanup()
    return 0


def setup_command(args: argparse.Namespace) -> int:
    """Check the options and the env file before serving: an env file holding an APP_ID is never overwritten."""
    env_file = Path(args.env_file)
    try:
        app_id = setup_page.env_file_app_id(env_file)
    except (OSError, UnicodeDecodeError) as exc:
        print(f"sweepbot: cannot read {env_file}: {exc}", file=sys.stderr)
        return 2
    if app_id is not None:
        print(
            f"sweepbot: {env_file} already holds APP_ID {app_id}: nothing overwritten; move it away or choose"
            f" another file with --env-file",
            file=sys.stderr,
        )
        return 2
    if args.host not in setup_page.LOOPBACK_HOSTS:
        print(
            f"sweepbot: --host {args.host!r}: the page answers only on this machine: 127.0.0.1 (the default),"
            f" localhost or ::1",
            file=sys.stderr,
        )
        return 2
    for flag, value, check in (
        ("--webhook-url", args.webhook_url, setup_page.webhook_url_problem),
        ("--github-url", args.github_url, setup_page.github_url_problem),
    ):
        if value and (problem := check(value)):
            print(f"sweepbot: {flag} {value!r}: {SETUP_PROBLEMS[problem]}", file=sys.stderr)
            return 2
    try:
        settings = Settings.from_env(dotenv=False)
    except ConfigError as exc:
        for error in exc.errors:
            print(f"sweepbot: {error}", file=sys.stderr)
        return 2
    api_url = os.environ.get("GITHUB_API_URL", "").strip() and settings.api_url
    options = setup_page.SetupOptions(
        env_file=env_file,
        webhook_url=args.webhook_url or "",
        github_url=args.github_url.rstrip("/"),
        results_repository=setup_page.results_repository_default(),
        api_url=api_url or None,
    )
    return asyncio.run(setup(options, args.host, args.port))


def check_config(path: str, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    try:
        text = Path(path).read_bytes()
    except OSError as exc:
        print(f"{path}: cannot read: {exc}", file=sys.stderr)
        return 2
    errors = read_config(text)
    if isinstance(errors, list):
        print(f"{path}: invalid", file=out)
        for error, hint in errors:
            print(f"  - {error}", file=out)
            if hint:
                print(f"    hint: {hint}", file=out)
        return 1
    print(f"{path}: valid", file=out)
    return 0


# -- doctor ----------------------------------------------------------------------------------------


async def doctor(settings: Settings, repo: str | None, url: str | None, out: TextIO | None = None) -> int:
    """`sweepbot doctor`: every check of the install against GitHub, read-only; 1 when one fails."""
    out = out or sys.stdout
    if repo is not None and not FULL_NAME.fullmatch(repo):
        print(f"sweepbot: --repo {repo!r}: expected OWNER/NAME, e.g. acme/InferenceX", file=sys.stderr)
        return 2
    missing = [problem for problem in settings.live_problems() if not problem.startswith("WEBHOOK_SECRET")]
    if missing:
        print(f"❌ credentials: {'; '.join(missing)}", file=out)
        print("   fix: set them in the environment or in .env (`sweepbot setup` writes them)", file=out)
        return 1
    app = live_github(settings, Metrics())
    try:
        return await run_doctor(app, out, repo=repo, url=url)
    finally:
        await app.close()


# `serve --help`'s environment: one short line for each variable Settings.from_env reads. The variables of
# ENV_SETTINGS are listed from that table, in its order, each with its default from Settings; the others are read
# by from_env itself. tests/test_cli.py checks that the listing is exactly what from_env reads.
ENV_LINES = {
    "APP_ID": "the GitHub App's id; with its key, live mode, else the sandbox",
    "PRIVATE_KEY": "the App's PEM private key (one-line \\n escapes are accepted)",
    "PRIVATE_KEY_PATH": "a file holding the PEM key, read when PRIVATE_KEY is unset",
    "WEBHOOK_SECRET": "the webhook secret, several comma-separated to rotate; required live",
    "HOST": "the address to listen on",
    "PORT": "the port to listen on, 1 to 65535",
    "LOG_LEVEL": "DEBUG, INFO, WARNING or ERROR (default: INFO live, WARNING in the sandbox)",
    "GITHUB_API_URL": "the REST API, https://HOST/api/v3 on Enterprise",
    "SWEEPBOT_DB": "the journal: SQLite file or postgresql:// URL; sandbox: temporary",
    "SWEEPBOT_WORKERS": "deliveries handled at once; 0 only journals them",
    "SWEEPBOT_WRITES_PER_MINUTE": "content-creating requests per installation a minute; 0: unpaced",
    "SWEEPBOT_HTTP_TIMEOUT": "seconds one GitHub request may take",
    "SWEEPBOT_GITHUB_IN_FLIGHT": "GitHub requests under way at once, 1 to 100",
    "SWEEPBOT_SETTLE_SECONDS": "seconds a label change waits before it is handled; 0: at once",
    "SWEEPBOT_LEASE_SECONDS": "PostgreSQL: seconds before a silent replica's lanes are taken over",
    "SWEEPBOT_WORKER_PROCESS": "live: 1 runs the workers in a process of their own, 0 on a thread",
    "SWEEPBOT_HEALTH_TOKEN": "the bearer token (16 or more characters) that reads /healthz's details",
}
ENV_READ_DIRECTLY = ("APP_ID", "PRIVATE_KEY", "PRIVATE_KEY_PATH", "WEBHOOK_SECRET", "HOST")  # not in ENV_SETTINGS
ENV_FIELDS = {"HOST": "host", **{variable: name for variable, name, _ in ENV_SETTINGS}}  # whose default is shown


def environment_help() -> str:
    """The environment `serve` reads, one line per variable: what it is, and its default where it has one."""
    defaults = {f.name: f.default for f in dataclasses.fields(Settings)}
    variables = [*ENV_READ_DIRECTLY, *(variable for variable, _, _ in ENV_SETTINGS)]
    width = max(map(len, variables)) + 2
    lines = ["environment (also read from a .env file in the working directory):"]
    for variable in variables:
        line = ENV_LINES.get(variable, f"see docs/operating.md (Settings.{ENV_FIELDS.get(variable)})")
        default = defaults.get(ENV_FIELDS.get(variable, ""))
        if default is not None:
            line += f" (default: {_as_set(default)})"
        lines.append(f"  {variable:{width}}{line}")
    return "\n".join(lines)


def _as_set(value: Any) -> str:
    """A default as one would set it: a switch 1 or 0, seconds without a trailing .0."""
    if isinstance(value, bool):
        return "1" if value else "0"
    return f"{value:g}" if isinstance(value, float) else str(value)


def add_init_parser(sub: Any) -> None:
    i = sub.add_parser(
        "init",
        help="write a commented .github/sweepbot.yml from what a checkout holds",
        description="Look through a checkout of the benchmark repository (its changelog, master configs, runner"
        " pools, CODEOWNERS, checklist and sweep workflows) and write CHECKOUT/.github/sweepbot.yml with what"
        " was found, each key commented; the file passes check-config.",
    )
    i.add_argument("checkout", nargs="?", default=".", help="the checkout's directory (default: here)")
    i.add_argument("--repo", metavar="OWNER/NAME", help="the repository on GitHub (default: the origin remote's)")
    i.add_argument("--print", action="store_true", help="print the file instead of writing it")
    i.add_argument("--force", action="store_true", help="replace an existing .github/sweepbot.yml")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sweepbot", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    sv = sub.add_parser(
        "serve",
        help="run the webhook server (sandbox without credentials)",
        description="Run the webhook server: live with APP_ID and the App's key, else the sandbox. Live, GitHub"
        " must accept the App's credentials (GET /app) before the server listens, else one line and exit 2.",
        epilog=environment_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sv.add_argument(
        "--unready-on-bad-credentials",
        action="store_true",
        help="for orchestrators that restart on exit: credentials GitHub refuses leave the server listening,"
        " /readyz not ready with the reason and webhooks answered 503, checked again every"
        f" {CREDENTIALS_RETRY:g} s",
    )
    r = sub.add_parser("receive", help="run one delivery through the handlers")
    r.add_argument("-e", "--event", required=True, help="the X-GitHub-Event name, e.g. pull_request")
    r.add_argument("-p", "--payload", required=True, help="a JSON payload file")
    r.add_argument("--dry-run", action="store_true", help="print the planned writes instead of making them")
    d = sub.add_parser("deliveries", help="list journal entries, newest first")
    d.add_argument("--failed", action="store_true", help="only failed deliveries")
    d.add_argument("-n", "--limit", type=int, default=50)
    rd = sub.add_parser("redeliver", help="queue a journal entry again for the running workers")
    rd.add_argument("id", help="the delivery id (X-GitHub-Delivery)")
    rd.add_argument(
        "--wait",
        type=float,
        metavar="SECONDS",
        help="then wait up to SECONDS for its outcome (exit 0 done, 1 failed or not finished)",
    )
    m = sub.add_parser(
        "manifest",
        help="print the GitHub App manifest JSON (only the JSON)",
        description="Print app.yaml's App manifest as JSON, for GitHub's manifest flow.",
    )
    m.add_argument(
        "--webhook-url",
        metavar="URL",
        help="hook_attributes.url: where GitHub sends webhooks (https), e.g. https://bot.example.com/webhook;"
        " redirect_url becomes that URL's origin + / (e.g. https://bot.example.com/)",
    )
    m.add_argument(
        "--redirect-url",
        metavar="URL",
        help="redirect_url: where GitHub sends the browser with the code after creating the App"
        " (default: from --webhook-url, else app.yaml's placeholder)",
    )
    m.add_argument(
        "--url", metavar="URL", help="url: the App's homepage (default: app.yaml's, the benchmark repository)"
    )
    st = sub.add_parser(
        "setup",
        help="register the App on GitHub from a local page and write its .env",
        description="Serve a local page (this machine only) that registers the App through GitHub's"
        " manifest flow (personal account or organisation, GitHub.com or Enterprise),"
        " then writes APP_ID, PRIVATE_KEY, WEBHOOK_SECRET and WEBHOOK_URL to the env file"
        " (mode 0600). The manifest's redirect_url is this page's /callback,"
        " hook_attributes.url the webhook URL given on the page, url app.yaml's homepage.",
    )
    st.add_argument("--webhook-url", metavar="URL", help="prefills the page's webhook URL (https)")
    st.add_argument(
        "--github-url",
        metavar="URL",
        default=setup_page.DEFAULT_GITHUB_URL,
        help="prefills the page's GitHub: https://github.com (default) or a GitHub Enterprise Server"
        " address (its API: HOST/api/v3, or GITHUB_API_URL when set)",
    )
    st.add_argument(
        "--host",
        default=setup_page.DEFAULT_HOST,
        help="address of the page: 127.0.0.1 (default), localhost or ::1, never one off this machine",
    )
    st.add_argument(
        "--port",
        type=int,
        default=setup_page.DEFAULT_PORT,
        help="port of the page (default: %(default)s, beside serve's 3000)",
    )
    st.add_argument(
        "--env-file",
        metavar="PATH",
        default=setup_page.DEFAULT_ENV_FILE,
        help="where the credentials go (default: .env here; refused if it holds an APP_ID)",
    )
    c = sub.add_parser("check-config", help="validate a .github/sweepbot.yml")
    c.add_argument("file")
    add_init_parser(sub)
    dr = sub.add_parser(
        "doctor",
        help="check the install against GitHub, read-only: one line per check, exit 1 when one fails",
        description="Check, read-only, what the bot needs from GitHub: the App's credentials, its permissions and"
        " events against app.yaml's manifest, its installations and their repositories, each repository's"
        " .github/sweepbot.yml, the workflows the bot dispatches and their inputs, the results repository's"
        " dispatch permission, the webhook URL on record and recent failed deliveries. Reads APP_ID,"
        " PRIVATE_KEY and GITHUB_API_URL as serve does.",
    )
    dr.add_argument("--repo", metavar="OWNER/NAME", help="only this benchmark repository (and its results repository)")
    dr.add_argument(
        "--url",
        metavar="URL",
        help="this server's webhook URL or address, compared with GitHub's (default: WEBHOOK_URL, as setup writes)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "manifest":
        return manifest(args.webhook_url, redirect_url=args.redirect_url, url=args.url)
    if args.command == "setup":
        return setup_command(args)
    if args.command == "check-config":
        return check_config(args.file)
    if args.command == "init":
        return init_config.init_command(args.checkout, repository=args.repo, to_stdout=args.print, force=args.force)
    try:
        settings = Settings.from_env()
    except ConfigError as exc:
        for error in exc.errors:
            print(f"sweepbot: {error}", file=sys.stderr)
        return 2
    logs.setup(settings.logging_level())
    if args.command == "serve":
        return asyncio.run(serve(settings, unready_on_bad_credentials=args.unready_on_bad_credentials))
    if args.command == "doctor":
        return asyncio.run(doctor(settings, args.repo, args.url))
    if args.command == "receive":
        return asyncio.run(receive(settings, args.event, args.payload, args.dry_run))
    if args.command == "deliveries":
        return asyncio.run(deliveries(settings, args.failed, args.limit))
    if args.command == "redeliver":
        return asyncio.run(redeliver(settings, args.id, wait=args.wait))
    return 2


if __name__ == "__main__":
    sys.exit(main())
