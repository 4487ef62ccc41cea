"""Test harness: a real bot (journal on disk, workers, aiohttp server) whose GitHub is the shared fake."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from bot.app.cli import sign
from bot.app.runtime import Bot
from bot.app.server import make_app
from bot.app.worker_process import WorkerProcess
from bot.core.config import Settings
from bot.github.client import GitHubApp, RetryPolicy, WritePacer
from bot.telemetry.metrics import Metrics
from bot.testing.server import FakeServer

SECRET = "test-secret"
HEALTH_TOKEN = "test-health-token-0123"  # /healthz's details, for the tests that read them
HEALTH_HEADERS = {"Authorization": f"Bearer {HEALTH_TOKEN}"}
COMMENT_LIMIT = 65_536  # GitHub's limit on a comment body: the worst case of every parser of comments
REPO = "acme/InferenceX"


class Sleeps:
    """Records the waits the code asks for instead of waiting."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def wait_until_blocking(condition: Callable[[], Any], what: str, *, seconds: float = 60.0, every: float = 0.05) -> Any:
    """`wait_until` for a test that is not a coroutine (one that drives server processes): the same bound, the
    same failure naming `what`, sleeping the thread between asks."""
    deadline = time.monotonic() + seconds
    while not (found := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds:g} s: {what}")
        time.sleep(every)
    return found


async def wait_until(condition: Callable[[], Any], what: str, *, seconds: float = 30.0, every: float = 0.01) -> Any:
    """Ask `condition` (a function, or a coroutine function) until it returns something true, and return that;
    fail the test saying `what` did not happen once `seconds` have passed. The bound only stops a wait that would
    never end: it is no timing assertion, and a slow machine only waits longer."""
    deadline = time.monotonic() + seconds
    while True:
        found = condition()
        if inspect.isawaitable(found):
            found = await found
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds:g} s: {what}")
        await asyncio.sleep(every)


def line_with(text: str, part: str) -> str:
    """The first line of `text` that holds `part` (StopIteration when none does: the test fails there)."""
    return next(line for line in text.splitlines() if part in line)


def fill(piece: str, prefix: str = "", suffix: str = "") -> str:
    """`prefix`, `piece` repeated, `suffix`: at most COMMENT_LIMIT characters."""
    return prefix + piece * ((COMMENT_LIMIT - len(prefix) - len(suffix)) // len(piece)) + suffix


def settings(tmp_path, **changes: Any) -> Settings:
    base = Settings(
        app_id="1",
        private_key="unused",
        webhook_secrets=(SECRET,),
        db_path=str(tmp_path / "journal.db"),
        workers=4,
        retry_delay=0.01,
        drain_timeout=2.0,
        read_timeout=1.0,
        worker_thread=False,  # one loop: tests read the fake GitHub between deliveries
        settle_seconds=0.0,  # label events at once unless a test holds them
        health_token=HEALTH_TOKEN,
    )
    return dataclasses.replace(base, **changes)


def github_app(
    key: str, sleeps: Sleeps | None = None, *, in_flight: int = Settings.github_in_flight, **retry: Any
) -> GitHubApp:
    return GitHubApp(
        app_id="1",
        private_key=key,
        api_url="https://api.github.com",
        metrics=Metrics(),
        retry=RetryPolicy(sleep=sleeps or Sleeps(), **retry),
        pacer_factory=lambda: WritePacer(sleep=sleeps or Sleeps()),
        in_flight=in_flight,
    )


class Harness:
    def __init__(self, bot: Bot, client: TestClient, github: Any, sleeps: Sleeps):
        self.bot = bot
        self.client = client
        self.github = github
        self.sleeps = sleeps
        self.served: web.AppRunner | None = None  # the fake over HTTP, for workers in their own process

    async def post(
        self,
        event: str | None,
        payload: Any = None,
        *,
        delivery: str | None = None,
        secret: str | None = SECRET,
        body: bytes | None = None,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
        signature: str | None = None,
    ):
        if body is None:
            body = json.dumps(payload).encode()
        sent = {"Content-Type": content_type}
        if event is not None:
            sent["X-GitHub-Event"] = event
        if delivery != "":
            sent["X-GitHub-Delivery"] = delivery or str(uuid.uuid4())
        if signature is not None:
            sent["X-Hub-Signature-256"] = signature
        elif secret is not None:
            sent["X-Hub-Signature-256"] = sign(body, secret)
        sent.update(headers or {})
        return await self.client.post("/webhook", data=body, headers=sent)

    async def deliver(self, event: str, payload: Any, **kw: Any):
        """Post a signed delivery and wait until the workers have finished with it."""
        resp = await self.post(event, payload, **kw)
        await self.idle()
        return resp

    async def idle(self) -> None:
        await self.bot.wait_idle(10)

    async def journal_row(self, delivery: str):
        return await self.bot.journal.get(delivery)


async def start_harness(
    tmp_path, github: Any, key: str, *, router: Any = None, apart: dict | None = None, **changes: Any
) -> Harness:
    """A bot against the fake `github`. `apart` (tests/apart_worker.py's spec): its workers in a process of their
    own, as live `sweepbot serve` runs them, the fake served at its own address (`github.base_url`) for them."""
    sleeps = Sleeps()
    chosen = settings(tmp_path, **changes)
    app = github_app(key, sleeps, in_flight=chosen.github_in_flight)
    served = workers = None
    if apart is not None:
        served = await serve_fake(github)
        chosen = dataclasses.replace(
            chosen, app_id="1", private_key=key, api_url=github.base_url, writes_per_minute=0
        )  # the workers' own pacer would really wait
        app = GitHubApp(app_id="1", private_key=key, api_url=github.base_url, metrics=Metrics())
        workers = WorkerProcess(
            chosen, command=(sys.executable, str(Path(__file__).with_name("apart_worker.py")), json.dumps(apart))
        )
    bot = Bot(chosen, app, router=router, apart=workers)
    await bot.start()
    client = TestClient(TestServer(make_app(bot)), headers=HEALTH_HEADERS)
    await client.start_server()
    h = Harness(bot, client, github, sleeps)
    h.served = served
    return h


async def serve_fake(github: Any) -> web.AppRunner:
    """The fake GitHub answering over real HTTP at its own base URL (a loopback port), on this loop."""
    url = httpx.URL(github.base_url)
    runner = web.AppRunner(FakeServer(github).app, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    await web.TCPSite(runner, url.host, url.port).start()
    return runner


async def stop_harness(h: Harness) -> None:
    await h.client.close()
    await h.bot.stop()
    if h.served is not None:
        await h.served.cleanup()


def load_bench(script: str) -> Any:
    """A script of bench/ (not a package) as a module, loaded once and registered first (for its dataclasses)."""
    import importlib.util
    import sys
    from pathlib import Path

    name = f"bench_{script}"
    if name in sys.modules:
        return sys.modules[name]
    path = Path(__file__).resolve().parent.parent / "bench" / f"{script}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- the bot as a separate process (crash test, intake benchmark) -------------------------------

CREDENTIALS = ("APP_ID", "PRIVATE_KEY", "PRIVATE_KEY_PATH", "WEBHOOK_SECRET")


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server_process(port: int, env: dict[str, str], *, cwd, stdout, stderr, timeout: float = 30.0):
    """`sweepbot serve` as a child process, returned once /readyz answers 200."""
    import os
    import subprocess
    import sys
    import time
    import urllib.request

    full_env = {k: v for k, v in os.environ.items() if k not in CREDENTIALS}
    full_env.update(HOST="127.0.0.1", PORT=str(port), SWEEPBOT_HEALTH_TOKEN=HEALTH_TOKEN, **env)
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot.app.cli", "serve"], cwd=cwd, env=full_env, stdout=stdout, stderr=stderr
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1).read()
            return proc
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"sweepbot serve exited with {proc.returncode}") from None
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"sweepbot serve was not ready (/readyz) within {timeout} s")


def post_webhook(port: int, event: str, delivery: str, payload: dict, secret: str) -> int:
    """One signed delivery to a bot process on this machine; returns the HTTP status."""
    import urllib.request

    body = json.dumps(payload).encode()
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/webhook",
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery,
            "X-Hub-Signature-256": sign(body, secret),
        },
    )
    with urllib.request.urlopen(req, timeout=5) as resp:
        return resp.status


def process_health(port: int, timeout: float = 5.0) -> dict:
    """/healthz of a bot process; its body also when it answers 503 (not ok)."""
    import urllib.error
    import urllib.request

    try:
        request = urllib.request.Request(f"http://127.0.0.1:{port}/healthz", headers=HEALTH_HEADERS)
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return json.loads(exc.read())
