"""The fake GitHub as its own process: one `InMemoryGitHub` served over real HTTP (aiohttp) on loopback.

    python -m bot.testing.server --port 8765        # prints "listening on http://127.0.0.1:8765"

A bot started with `GITHUB_API_URL=http://127.0.0.1:8765`, `APP_ID=1` and any RSA `PRIVATE_KEY` talks to
it as to GitHub (the fake checks only that the App's JWT has an issuer), and can be SIGKILLed while
GitHub's state lives on here. Tests and benchmarks drive it through JSON control endpoints:

    GET  /_fake/health                 {"ok": true, "base_url": ...}
    POST /_fake/call                   {"method": NAME, "args": [...], "kwargs": {...}} -> {"result": ...}
    GET  /_fake/requests?since=N       {"requests": [RecordedRequest as JSON, ...], "next": M}

GitHub's web pages of the App manifest flow are served too, at this server's root (its web URL):
`POST /settings/apps/new` and `POST /organizations/{org}/settings/apps/new` with a `manifest` form field
(and `?state=`) show the manifest and a "Create GitHub App" button, which redirects to the manifest's
redirect_url with `code` and `state`; `POST /app-manifests/{code}/conversions` exchanges the code.

`/_fake/call` calls one whitelisted public method of the fake (CALLS: seeding, reading, faults) or of
the server (SERVER_CALLS: `set_latency`, `clear_latency`, `state`). `raise_next` / `raise_after_commit`
take `exc`: "timeout" (the server never answers: the client's read times out) or "disconnect" (the
server closes the connection without an answer). `FakeGitHubProcess` is the synchronous Python client.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

import httpx
from aiohttp import web

from bot.testing.manifests import manifest_error_page, manifest_page, parse_manifest, redirect_location
from bot.testing.memory import InMemoryGitHub
from bot.testing.model import RecordedRequest, Reply

# Public methods of InMemoryGitHub that /_fake/call may run: arguments and results are JSON.
CALLS = frozenset(
    {
        # seeding
        "add_repo",
        "add_pull",
        "add_issue",
        "add_comment",
        "add_label",
        "label_issue",
        "unlabel_issue",
        "set_permission",
        "set_file",
        "delete_file",
        "add_token",
        "set_branch",
        "add_workflow",
        "delete_workflow",
        "add_run",
        "start_run",
        "complete_run",
        "add_artifact",
        "push_commit",
        "update_pull",
        "apply_suggestions",
        "set_jobs",
        "rerun_failed_jobs",
        "rerequest_check_run",
        "add_check_run",
        "set_clock",
        "set_merge_base",
        # reading
        "has_repo",
        "comments",
        "issue_labels",
        "repo_labels",
        "issues",
        "pull",
        "pull_files",
        "pull_commits",
        "events",
        "reactions",
        "runs",
        "workflows",
        "check_runs",
        "repository_dispatches",
        "count",
        "branch_sha",
        "reviews",
        "review_comments",
        # webhook payloads
        "pull_request_payload",
        "issue_comment_payload",
        "push_payload",
        "workflow_run_payload",
        "check_run_payload",
        # faults
        "fail_next",
        "fail_after_commit",
        "raise_next",
        "raise_after_commit",
        "revoke_tokens",
        "set_down",
        "reset_requests",
        "set_rate_limit",
        # the App manifest flow
        "create_app_from_manifest",
        "age_manifest_codes",
        "manifest_apps",
        # the App's settings, installations and webhook log
        "set_app_key",
        "configure_app",
        "set_installation",
        "move_repo",
        "add_hook_delivery",
    }
)
SERVER_CALLS = frozenset({"set_latency", "clear_latency", "state"})
RAISE_CALLS = frozenset({"raise_next", "raise_after_commit"})
DEFAULT_HANG = 300.0  # longest a "timeout" fault holds a connection open (ends early when the client leaves)


class Timeout(httpx.ReadTimeout):
    """Raised by the fake for a "timeout" fault: the server then never answers."""


class Disconnect(httpx.RemoteProtocolError):
    """Raised by the fake for a "disconnect" fault: the server then closes the connection."""


def fault(kind: str) -> BaseException:
    if kind == "timeout":
        return Timeout("the fake GitHub never answered")
    if kind == "disconnect":
        return Disconnect("the fake GitHub closed the connection")
    raise ValueError(f"exc must be 'timeout' or 'disconnect', not {kind!r}")


@dataclasses.dataclass
class Latency:
    method: str | None
    pattern: re.Pattern[str]
    seconds: float
    commit: str  # "start": GitHub acts at once and answers after the delay; "end": acts and answers after it
    times: int | None  # None: every matching request

    def matches(self, method: str, path: str) -> bool:
        return self.method in (None, "*", method) and self.pattern.search(path) is not None


class FakeServer:
    """The aiohttp application around one fake; every request runs on the event loop, one at a time."""

    def __init__(self, fake: InMemoryGitHub, *, hang_seconds: float = DEFAULT_HANG) -> None:
        self.fake = fake
        self.hang_seconds = hang_seconds
        self.latencies: list[Latency] = []
        self.app = web.Application(client_max_size=64 * 1024 * 1024)
        self.app.router.add_get("/_fake/health", self._health)
        self.app.router.add_post("/_fake/call", self._call)
        self.app.router.add_get("/_fake/requests", self._requests)
        self.app.router.add_route("*", "/_fake/{tail:.*}", self._unknown_control)
        # GitHub's web pages of the manifest flow (at the web URL, which is this server's root)
        self.app.router.add_post("/settings/apps/new", self._manifest_page)
        self.app.router.add_post("/organizations/{org}/settings/apps/new", self._manifest_page)
        self.app.router.add_route("*", "/{tail:.*}", self._github)

    # ---- server-level calls ---------------------------------------------------------------

    def set_latency(
        self, method: str | None, path_regex: str, seconds: float, *, commit: str = "start", times: int | None = None
    ) -> None:
        """Matching requests take `seconds`. commit="start": the state changes at once and the answer comes
        after the delay (GitHub acted, the client waits); "end": both happen after the delay."""
        if commit not in ("start", "end"):
            raise ValueError("commit must be 'start' or 'end'")
        if seconds < 0:
            raise ValueError("seconds must be >= 0")
        self.latencies.append(
            Latency(method.upper() if method else None, re.compile(path_regex), float(seconds), commit, times)
        )

    def clear_latency(self) -> None:
        self.latencies.clear()

    def state(self) -> dict[str, Any]:
        fake = self.fake
        return {
            "base_url": fake.base_url,
            "bot_login": fake.bot_login,
            "tokens_issued": fake.tokens_issued,
            "rate_remaining": fake.rate_remaining,
            "down": fake.down,
            "requests": len(fake.requests),
            "repos": sorted(fake.repos),
        }

    def _take_latency(self, method: str, path: str) -> Latency | None:
        for rule in self.latencies:
            if rule.matches(method, path):
                if rule.times is not None:
                    rule.times -= 1
                    if rule.times <= 0:
                        self.latencies.remove(rule)
                return rule
        return None

    # ---- control endpoints ----------------------------------------------------------------

    async def _health(self, request: web.Request) -> web.Response:
        return _json({"ok": True, "base_url": self.fake.base_url})

    async def _requests(self, request: web.Request) -> web.Response:
        try:
            since = int(request.query.get("since", "0"))
        except ValueError:
            return _json({"error": "since must be an integer"}, status=400)
        recorded = self.fake.requests[since:]
        return _json({"requests": [dataclasses.asdict(r) for r in recorded], "next": since + len(recorded)})

    async def _unknown_control(self, request: web.Request) -> web.Response:
        return _json({"error": f"no control endpoint {request.method} {request.path}"}, status=404)

    async def _call(self, request: web.Request) -> web.Response:
        try:
            spec = await request.json()
        except ValueError:
            return _json({"error": "the body must be JSON"}, status=400)
        if not isinstance(spec, dict) or not isinstance(spec.get("method"), str):
            return _json({"error": 'expected {"method": NAME, "args": [...], "kwargs": {...}}'}, status=400)
        name, args, kwargs = spec["method"], spec.get("args") or [], spec.get("kwargs") or {}
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            return _json({"error": "args must be a list and kwargs an object"}, status=400)
        if name in SERVER_CALLS:
            target = getattr(self, name)
        elif name in CALLS:
            target = getattr(self.fake, name)
        else:
            return _json({"error": f"{name!r} is not a method the fake's process lets you call"}, status=400)
        try:
            if name in RAISE_CALLS:
                if "exc" in kwargs:
                    kwargs["exc"] = fault(kwargs["exc"])
                elif len(args) >= 3:
                    args[2] = fault(args[2])
                else:
                    raise ValueError("exc ('timeout' or 'disconnect') is required")
            result = target(*args, **kwargs)
        except Reply as reply:  # e.g. an unknown repository
            message = reply.body.get("message") if isinstance(reply.body, dict) else reply.body
            return _json({"error": f"{name}: {reply.status} {message}", "status": reply.status}, status=400)
        except (TypeError, ValueError, KeyError) as exc:
            return _json({"error": f"{name}: {type(exc).__name__}: {exc}"}, status=400)
        return _json({"result": result})

    # ---- GitHub's web pages: the manifest flow ----------------------------------------------

    async def _manifest_page(self, request: web.Request) -> web.Response:
        """The form posted with `manifest` (and ?state=): the summary page; posted again with create=1 from
        that page's button, the App is created and the browser redirected (302) with code and state."""
        form = await request.post()
        posted = form.get("manifest")
        manifest_json = posted if isinstance(posted, str) else ""
        org = request.match_info.get("org")
        try:
            manifest = parse_manifest(manifest_json)
            if form.get("create") != "1":
                return _html(manifest_page(manifest, request.path_qs, manifest_json))
            code = self.fake.create_app_from_manifest(manifest_json, org)
        except Reply as reply:
            return _html(manifest_error_page(reply.body["message"]), status=reply.status)
        raise web.HTTPFound(redirect_location(manifest, code, request.query.get("state")))

    # ---- GitHub ---------------------------------------------------------------------------

    async def _github(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        outgoing = httpx.Request(
            request.method, self.fake.base_url + request.raw_path, headers=list(request.headers.items()), content=body
        )
        method, path = request.method.upper(), request.path
        rule = self._take_latency(method, path)
        if rule is not None and rule.commit == "end":
            await asyncio.sleep(rule.seconds)
        try:
            answer = self.fake.handle(outgoing)
        except httpx.TimeoutException:
            if rule is not None and rule.commit == "start":
                await asyncio.sleep(rule.seconds)
            await self._hang(request)
            return _drop(request)
        except Exception:  # noqa: BLE001 - any other injected error: the connection is closed, no answer
            return _drop(request)
        if rule is not None and rule.commit == "start":
            await asyncio.sleep(rule.seconds)
        headers = {
            k: v
            for k, v in answer.headers.items()
            if k.lower() not in ("content-length", "transfer-encoding", "content-encoding", "connection")
        }
        return web.Response(status=answer.status_code, body=answer.content, headers=headers)

    async def _hang(self, request: web.Request) -> None:
        deadline = time.monotonic() + self.hang_seconds
        while time.monotonic() < deadline:
            transport = request.transport
            if transport is None or transport.is_closing():
                return
            await asyncio.sleep(0.05)


def _drop(request: web.Request) -> web.Response:
    transport = request.transport
    if transport is not None:
        transport.abort()
    return web.Response(status=500)  # never reaches the client: the connection is already gone


def _html(text: str, status: int = 200) -> web.Response:
    return web.Response(status=status, text=text, content_type="text/html")


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(status=status, text=json.dumps(data, default=_jsonable), content_type="application/json")


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    raise TypeError(f"{type(value).__name__} is not JSON")


# ---- the process ----------------------------------------------------------------------------


async def serve(host: str, port: int, *, app_slug: str = "sweepbot", hang_seconds: float = DEFAULT_HANG) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound = sock.getsockname()[1]
    fake = InMemoryGitHub(f"http://{host}:{bound}", app_slug=app_slug)
    server = FakeServer(fake, hang_seconds=hang_seconds)
    runner = web.AppRunner(server.app, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"listening on {fake.base_url}", flush=True)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bot.testing.server", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback)")
    parser.add_argument("--port", type=int, default=0, help="port (default 0: a free one, printed at start)")
    parser.add_argument("--app-slug", default="sweepbot")
    parser.add_argument(
        "--hang-seconds", type=float, default=DEFAULT_HANG, help="longest a 'timeout' fault holds a connection open"
    )
    args = parser.parse_args(argv)
    asyncio.run(serve(args.host, args.port, app_slug=args.app_slug, hang_seconds=args.hang_seconds))


# ---- the client -----------------------------------------------------------------------------


class FakeGitHubError(RuntimeError):
    """The fake's process refused a control call (unknown method, bad arguments, unknown repository)."""


class FakeGitHubProcess:
    """Starts `python -m bot.testing.server` on a free loopback port and drives it synchronously.

    with FakeGitHubProcess() as fake:
        fake.add_repo("org/repo")                       # any name in CALLS, as on InMemoryGitHub
        fake.set_latency("POST", r"/comments$", 3.0)    # commit at once, answer after 3 s
        ...  GITHUB_API_URL=fake.url ...
        fake.comments("org/repo", 1)
    """

    def __init__(
        self,
        *,
        port: int = 0,
        app_slug: str = "sweepbot",
        hang_seconds: float = DEFAULT_HANG,
        startup_timeout: float = 20.0,
        control_timeout: float = 10.0,
    ) -> None:
        self._argv = [
            sys.executable,
            "-m",
            "bot.testing.server",
            "--port",
            str(port),
            "--app-slug",
            app_slug,
            "--hang-seconds",
            str(hang_seconds),
        ]
        self.startup_timeout = startup_timeout
        self.control_timeout = control_timeout
        self.url = ""
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._http: httpx.Client | None = None
        self._stderr = tempfile.TemporaryFile()

    # ---- lifecycle ------------------------------------------------------------------------

    def start(self) -> FakeGitHubProcess:
        if self._proc is not None:
            raise RuntimeError("already started")
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self._proc = subprocess.Popen(self._argv, stdout=subprocess.PIPE, stderr=self._stderr, env=env)
        deadline = time.monotonic() + self.startup_timeout
        try:
            line = self._first_line(deadline)
            if not line.startswith("listening on "):
                raise RuntimeError(f"unexpected first line {line!r}")
            self.url = line.removeprefix("listening on ").strip()
            self.port = httpx.URL(self.url).port or 0
            self._http = httpx.Client(base_url=self.url, timeout=self.control_timeout, trust_env=False)
            while True:
                try:
                    if self._http.get("/_fake/health").json().get("ok"):
                        return self
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("the fake GitHub did not answer its health check")
                time.sleep(0.05)
        except BaseException as exc:
            self.stop()
            raise RuntimeError(f"the fake GitHub did not start: {exc}\n{self.stderr()}") from exc

    def _first_line(self, deadline: float) -> str:
        assert self._proc is not None and self._proc.stdout is not None
        out = self._proc.stdout
        data = b""
        while not data.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no 'listening on' line")
            ready, _, _ = select.select([out], [], [], min(remaining, 0.2))
            if ready:
                chunk = os.read(out.fileno(), 1)
                if not chunk:
                    raise RuntimeError(f"the process exited with {self._proc.wait()}")
                data += chunk
        return data.decode()

    def stop(self, timeout: float = 5.0) -> int | None:
        """SIGTERM, then SIGKILL after `timeout`; returns the exit status (None if never started)."""
        if self._http is not None:
            self._http.close()
            self._http = None
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout)
        if proc.stdout is not None:
            proc.stdout.close()
        return proc.returncode

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def stderr(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")

    def __enter__(self) -> FakeGitHubProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- control --------------------------------------------------------------------------

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Run one whitelisted method of the fake (or of the server) in the process; its JSON result."""
        if self._http is None:
            raise RuntimeError("the fake GitHub is not running")
        resp = self._http.post("/_fake/call", json={"method": method, "args": list(args), "kwargs": kwargs})
        data = resp.json()
        if resp.status_code != 200:
            raise FakeGitHubError(data.get("error") or resp.text)
        return data["result"]

    def requests(self, since: int = 0) -> list[RecordedRequest]:
        """The request log (from index `since`), as the fake recorded it."""
        if self._http is None:
            raise RuntimeError("the fake GitHub is not running")
        data = self._http.get("/_fake/requests", params={"since": since}).json()
        return [RecordedRequest(**r) for r in data["requests"]]

    def writes(self) -> list[RecordedRequest]:
        return [r for r in self.requests() if r.method != "GET"]

    def state(self) -> dict[str, Any]:
        return self.call("state")

    def raise_next(self, method: str | None, path_regex: str, exc: str = "timeout", times: int = 1) -> None:
        """The next matching requests get no answer: exc "timeout" (never answered) or "disconnect"."""
        self.call("raise_next", method, path_regex, exc=exc, times=times)

    def raise_after_commit(self, method: str | None, path_regex: str, exc: str = "timeout", *, times: int = 1) -> None:
        """The route acts, then the client gets no answer ("timeout") or a closed connection ("disconnect")."""
        self.call("raise_after_commit", method, path_regex, exc=exc, times=times)

    def set_latency(
        self, method: str | None, path_regex: str, seconds: float, *, commit: str = "start", times: int | None = None
    ) -> None:
        self.call("set_latency", method, path_regex, seconds, commit=commit, times=times)

    def clear_latency(self) -> None:
        self.call("clear_latency")

    def __getattr__(self, name: str) -> Any:
        if name in CALLS:
            return lambda *args, **kwargs: self.call(name, *args, **kwargs)
        raise AttributeError(name)


if __name__ == "__main__":
    main()
