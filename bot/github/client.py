"""The GitHub client: App JWT to installation tokens, ETag cache, retries with backoff, paced writes."""

from __future__ import annotations

import asyncio
import collections
import copy
import heapq
import itertools
import logging
import random
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import cachetools
import gidgethub
import gidgethub.abc
import gidgethub.apps
import gidgethub.httpx
import httpx
from gidgethub import sansio

from bot.github.connections import ConnectionShards
from bot.telemetry import logs
from bot.telemetry.metrics import Metrics

USER_AGENT = "sweepbot"
TOKEN_RENEW_MARGIN = 60.0  # renew installation tokens at least this long before expires_at
ETAG_CACHE_SIZE = 512
DEFAULT_PER_PAGE = 30  # GitHub's page size when a list request names none
SECONDARY_LIMIT_WAIT = 60.0  # GitHub: with no retry-after or reset header, wait at least a minute
# GitHub allows no more than 100 requests under way at once (REST and GraphQL together, a secondary limit): the
# process keeps under it with room for the App's other clients (a person's script, a second deploy starting)
IN_FLIGHT = 90
WRITE_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})
# Sending these twice leaves GitHub as sending them once; a POST may create a second thing.
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "PATCH", "DELETE"})
# Transport errors after which the request cannot have reached GitHub.
NOT_SENT_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


def http_timeout(seconds: float) -> httpx.Timeout:
    """`seconds` for reading, writing and waiting for a connection; connecting takes at most 5 s of it."""
    return httpx.Timeout(seconds, connect=min(5.0, seconds))


HTTP_TIMEOUT = http_timeout(10.0)


async def get_or_none(gh: gidgethub.abc.GitHubAPI, url: str) -> Any:
    """GET `url`; None when GitHub answers 404 (no such thing, or not visible to the App). Every other
    failure is raised."""
    try:
        return await gh.getitem(url)
    except gidgethub.BadRequest as exc:
        if int(exc.status_code) != 404:
            raise
        return None


class AmbiguousWrite(Exception):
    """A create whose answer was lost (5xx, read timeout, connection cut): GitHub may or may not have acted.

    It is never retried blindly; the executor reconciles against GitHub's state first.
    """

    def __init__(self, method: str, path: str, cause: BaseException):
        super().__init__(f"{method} {path}: no reliable answer ({_describe(cause)})")
        self.method, self.path, self.cause = method, path, cause


class AuthenticationFailed(Exception):
    """GitHub refused the App's credentials even after a fresh installation token."""


def _describe(exc: BaseException) -> str:
    status = getattr(exc, "status_code", None)
    return f"{int(status)} {exc}" if status is not None else type(exc).__name__


@dataclass
class RetryPolicy:
    attempts: int = 5
    base_delay: float = 0.5
    max_delay: float = 30.0
    max_wait: float = 900.0  # longest wait for a rate-limit reset before giving up
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    def backoff(self, attempt: int) -> float:
        """Exponential backoff with full jitter."""
        return random.uniform(0, min(self.max_delay, self.base_delay * 2 ** (attempt - 1)))


TRUSTED, UNTRUSTED = 0, 1  # write priorities: a delivery from someone the bot does not trust goes last


class Turns:
    """A lock taken in order of priority (lower first), then of arrival: whoever waits with a lower priority
    goes before every waiter of a higher one, whenever they came."""

    def __init__(self) -> None:
        self._held = False
        self._waiters: list[tuple[int, int, asyncio.Future]] = []  # a heap: (priority, arrival, turn)
        self._arrivals = itertools.count()

    async def acquire(self, priority: int = TRUSTED) -> None:
        if not self._held and not self._waiters:
            self._held = True
            return
        turn = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (priority, next(self._arrivals), turn))
        try:
            await turn
        except BaseException:
            if turn.done() and not turn.cancelled():
                self.release()  # given the turn as it was cancelled: hand it on
            else:
                turn.cancel()  # skipped when its turn comes
            raise

    def release(self) -> None:
        while self._waiters:
            _, _, turn = heapq.heappop(self._waiters)
            if not turn.done():
                turn.set_result(None)  # held on, by the next one
                return
        self._held = False

    def waiting(self) -> int:
        return sum(1 for _, _, turn in self._waiters if not turn.done())


class WritePacer:
    """At most `limit` content-creating requests in any `window` seconds (GitHub's secondary limit is ~80/min).
    Writes wait their turn by priority: an UNTRUSTED delivery's (a command refused to someone without write
    permission) go after every TRUSTED one waiting, so outsiders cannot delay a maintainer's dispatch.

    A limit of 0 paces nothing: acquire() never waits (GitHub Enterprise Server without secondary limits).
    """

    def __init__(self, limit: int = 80, window: float = 60.0, sleep: Callable[[float], Awaitable[None]] | None = None):
        self.limit = limit
        self.window = window
        self._sent: collections.deque[float] = collections.deque()
        self._turns = Turns()
        self._sleep = sleep or asyncio.sleep
        self.waited = 0.0

    async def acquire(self, priority: int = TRUSTED) -> None:
        if self.limit <= 0:
            return
        await self._turns.acquire(priority)
        try:
            now = time.monotonic()
            while self._sent and now - self._sent[0] >= self.window:
                self._sent.popleft()
            if len(self._sent) >= self.limit:
                delay = self.window - (now - self._sent[0])
                self.waited += delay
                await self._sleep(delay)
                self._sent.popleft()
            self._sent.append(time.monotonic())
        finally:
            self._turns.release()


class InFlightBudget:
    """At most `limit` requests to GitHub under way at once from this process. A request that finds them all taken
    waits; the oldest delivery's requests go first (`priority`: (0, when its client was made), or (1, ...) once
    its client `waited_for` what a person waits for; equal ones in the order
    they came), so with many deliveries at once each finishes in about its own round trips, one after another,
    instead of all of them slowing together. The limit may change while requests wait (a replica's share of the
    App's budget, `share`). A request holds a place only while it is sent and answered, never while it sleeps
    before a retry. Used from one event loop (the workers'), as the App's httpx client is."""

    def __init__(self, limit: int = IN_FLIGHT, metrics: Metrics | None = None):
        self.limit = max(1, limit)
        self.in_flight = 0
        self.most = 0  # the most under way at once so far (tests, benchmarks)
        self.waited = 0  # requests that found the budget spent and waited for a place
        self._waiters: list[tuple[tuple[float, float], int, asyncio.Future]] = []  # a heap: (priority, arrival, place)
        self._arrivals = itertools.count()
        self._metrics = metrics

    def share(self, limit: int) -> None:
        """A new limit (at least 1); requests waiting go at once if it grew."""
        self.limit = max(1, limit)
        self._admit()

    async def acquire(self, priority: tuple[float, float] = (0, 0.0)) -> None:
        if self.in_flight < self.limit and not self._waiters:
            self._enter()
            return
        self.waited += 1
        place = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (priority, next(self._arrivals), place))
        try:
            await place
        except BaseException:
            if place.done() and not place.cancelled():
                self.release()  # it was given a place as it was cancelled: hand it on
            else:
                place.cancel()  # skipped when its turn comes
            raise

    def release(self) -> None:
        self.in_flight -= 1
        if self._metrics is not None:
            self._metrics.github_in_flight.set(self.in_flight)
        self._admit()

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self.release()

    def _enter(self) -> None:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        if self._metrics is not None:
            self._metrics.github_in_flight.set(self.in_flight)

    def _admit(self) -> None:
        while self._waiters and self.in_flight < self.limit:
            _, _, place = heapq.heappop(self._waiters)
            if not place.done():
                self._enter()
                place.set_result(None)


class SharedWritePacer:
    """The write budget of one installation shared by every replica: a row in the PostgreSQL journal
    (`PgJournal.pace`) reserves each write's slot, so N replicas together stay under `limit` per `window`."""

    def __init__(
        self,
        budget: Callable[..., Awaitable[float]],
        key: str,
        limit: int = 80,
        window: float = 60.0,
        sleep: Callable[[float], Awaitable[None]] | None = None,
    ):
        self._budget, self.key, self.limit, self.window = budget, key, limit, window
        self._sleep = sleep or asyncio.sleep
        self.waited = 0.0

    async def acquire(self, priority: int = TRUSTED) -> None:
        """Reserve the next slot. The slots are reserved in the database in the order asked, on every replica,
        so an UNTRUSTED write first waits for one of its own, smaller budget (a quarter of the limit): outsiders
        together never take more than that share of the installation's writes."""
        if self.limit <= 0:
            return
        if priority != TRUSTED:
            await self._wait(await self._budget(f"{self.key}:untrusted", max(1, self.limit // 4), self.window))
        await self._wait(await self._budget(self.key, self.limit, self.window))

    async def _wait(self, delay: float) -> None:
        if delay > 0:
            self.waited += delay
            await self._sleep(delay)


class ETagCache(cachetools.LRUCache):
    """gidgethub's ETag cache, except for a list page that was full and had no next page.

    GitHub's ETag covers a page's items, not its Link header: once a full last page gets a successor (the 101st
    comment of a PR listed 100 at a time), the page still answers 304, and gidgethub takes its cached, next-less
    Link with it, so the new page is never read. Such an entry is not offered (the page is fetched whole)."""

    def __getitem__(self, url: str) -> tuple:
        entry = super().__getitem__(url)
        _, _, data, more = entry
        if more is None and _page_items(data) >= _per_page(url):
            raise KeyError(url)
        return entry


def _page_items(data: Any) -> int:
    """How many items a list page holds: a list, or the list in a wrapped page (`workflow_runs`, `jobs`...)."""
    if isinstance(data, list):
        return len(data)
    if isinstance(data, dict) and "total_count" in data:
        return max((len(v) for v in data.values() if isinstance(v, list)), default=0)
    return -1  # not a list page


def _per_page(url: str) -> int:
    values = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query).get("per_page")
    try:
        return int(values[0]) if values else DEFAULT_PER_PAGE
    except ValueError:
        return DEFAULT_PER_PAGE


@dataclass
class InstallationState:
    """What every client of one installation shares: its ETag cache, write pacer and last rate limit seen,
    and whether it can authenticate (the times of the last success and failure, the failure's reason; never
    a token), for /healthz. A success after a failure clears `failing`: no restart is needed."""

    installation_id: int
    pacer: WritePacer | SharedWritePacer
    etags: cachetools.LRUCache = field(default_factory=lambda: ETagCache(ETAG_CACHE_SIZE))
    rate_limit: sansio.RateLimit | None = None
    failing: bool = False  # the last authentication (token fetch, or a request with a fresh token) failed
    last_success: float | None = None  # epoch seconds
    last_failure: float | None = None
    last_failure_reason: str | None = None

    def authenticated(self) -> None:
        self.failing, self.last_success = False, time.time()

    def refused(self, reason: str) -> None:
        self.failing, self.last_failure, self.last_failure_reason = True, time.time(), reason

    def authentication(self) -> dict[str, Any]:
        """This installation's authentication state as /healthz shows it."""
        return {
            "authenticated": not self.failing,
            "last_success": self.last_success,
            "last_failure": self.last_failure,
            "last_failure_reason": self.last_failure_reason,
        }


@dataclass(frozen=True)
class Token:
    token: str
    expires_at: float


class GitHubClient(gidgethub.httpx.GitHubAPI):
    """gidgethub over the App's shared connections, with retries, pacing and metrics."""

    _before_write: Callable[[], Awaitable[None]] | None = None

    def __init__(
        self,
        http: ConnectionShards,
        *,
        state: InstallationState | None,
        retry: RetryPolicy,
        metrics: Metrics,
        tokens: TokenSource | None = None,
        idempotent_posts: bool = False,
        budget: InFlightBudget | None = None,
        age: float | None = None,
        **kwargs: Any,
    ):
        self._state = state
        self._budget = budget
        # a client serves one delivery: its requests wait for a place in the budget by the delivery's age. A list,
        # shared by this client's views (announcing_writes), so that `waited_for` holds for all of them
        self._priority = [0, time.monotonic() if age is None else age]
        self._write_priority = [TRUSTED]  # shared by the views too, as `_priority`
        self._safe = IDEMPOTENT_METHODS | ({"POST"} if idempotent_posts else set())
        self._retry = retry
        self._metrics = metrics
        self._tokens = tokens
        self._shards = http
        # gidgethub wants a client; every request goes out through `_transport` instead
        super().__init__(http.clients[0], USER_AGENT, cache=state.etags if state else None, **kwargs)

    # gidgethub keeps the rate limit per client object; clients are made per delivery, so share it per installation.
    @property
    def rate_limit(self) -> sansio.RateLimit | None:
        return self._state.rate_limit if self._state else self.__dict__.get("_own_rate_limit")

    @rate_limit.setter
    def rate_limit(self, value: sansio.RateLimit | None) -> None:
        if value is None:
            return
        if self._state:
            self._state.rate_limit = value
            self._metrics.rate_limit_remaining.labels(str(self._state.installation_id)).set(value.remaining)
        else:
            self.__dict__["_own_rate_limit"] = value

    def announcing_writes(self, before_write: Callable[[], Awaitable[None]]) -> GitHubClient:
        """This client (the same connection, token, pacing and metrics) awaiting `before_write()` just before
        each request that is not safe to repeat is sent. The executor passes its ledger's intent here, so the
        intent is written as late as possible and this module knows nothing of the ledger."""
        view = copy.copy(self)
        view._before_write = before_write
        return view

    def untrusted(self) -> None:
        """This delivery comes from someone without write permission (a refused command): its writes wait behind
        those of every other delivery of the installation (WritePacer's priorities)."""
        self._write_priority[0] = UNTRUSTED

    def waited_for(self) -> None:
        """What a person waits for in this delivery is done (the dispatch): its later requests (the status comment,
        the check run) wait for a place behind every request of the deliveries that have not got there yet."""
        self._priority[0] = 1

    async def sleep(self, seconds: float) -> None:
        await self._retry.sleep(seconds)

    async def manage_rate_limit(self, *, method: str, url: str) -> None:
        limit = self.rate_limit
        if limit is not None and limit.remaining <= 0:
            wait = limit.reset_datetime.timestamp() - time.time() + 1
            if 0 < wait <= self._retry.max_wait:
                logs.event("rate limit exhausted, waiting for reset", logging.WARNING, seconds=round(wait, 1))
                await self.sleep(wait)
        if self._state and method in WRITE_METHODS:
            await self._state.pacer.acquire(self._write_priority[0])

    async def _request(self, method: str, url: str, headers: Mapping[str, str], body: bytes = b"") -> tuple:
        attempt, renewed = 0, False
        while True:
            attempt += 1
            headers = await self._authorised(headers)
            started = time.monotonic()
            if self._before_write is not None and method not in self._safe:
                await self._before_write()  # the caller's hook (the executor's ledger intent), as late as possible
            try:
                status, resp_headers, content = await self._send(method, url, headers, body)
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                self._metrics.github_requests.labels(method, "error").inc()
                if method not in self._safe and not isinstance(exc, NOT_SENT_ERRORS):
                    self._metrics.github_error(method, _path(url), f"ambiguous: {type(exc).__name__}")
                    raise AmbiguousWrite(method, _path(url), exc) from exc
                if attempt >= self._retry.attempts:
                    self._metrics.github_error(method, _path(url), type(exc).__name__)
                    raise
                delay = self._retry.backoff(attempt)
                logs.event(
                    "github transport error, retrying",
                    logging.WARNING,
                    method=method,
                    path=_path(url),
                    error=type(exc).__name__,
                    retry_in=round(delay, 2),
                )
                await self.sleep(delay)
                continue
            self._metrics.github_requests.labels(method, str(status)).inc()
            if status == 401 and self._tokens is not None:
                if not renewed:  # revoked or expired early: one fresh token, then the same request again
                    renewed = True
                    self._tokens.invalidate()
                    logs.event(
                        "github answered 401, renewing the installation token",
                        logging.WARNING,
                        method=method,
                        path=_path(url),
                    )
                    continue
                self._tokens.failed(f"{method} {_path(url)}: 401 with a fresh token")
            elif self._tokens is not None and status < 400:
                self._tokens.succeeded()
            if method in WRITE_METHODS:
                logs.event(
                    "github write",
                    method=method,
                    path=_path(url),
                    status=status,
                    ms=round((time.monotonic() - started) * 1000, 1),
                )
            return status, resp_headers, content

    async def _send(self, method: str, url: str, headers: Mapping[str, str], body: bytes) -> tuple:
        if self._budget is None:
            return await self._transport(method, url, headers, body)
        await self._budget.acquire((self._priority[0], self._priority[1]))
        try:
            return await self._transport(method, url, headers, body)
        finally:
            self._budget.release()

    async def _transport(self, method: str, url: str, headers: Mapping[str, str], body: bytes) -> tuple:
        response = await self._shards.request(method, url, headers, body)
        return response.status_code, response.headers, response.content

    async def _authorised(self, headers: Mapping[str, str]) -> Mapping[str, str]:
        """The headers with a token valid now: taken at each send, so a long wait never outlives its token."""
        if self._tokens is None:
            return headers
        token = await self._tokens.get()
        return {**headers, "authorization": f"token {token}"}

    async def handle_rate_limit_error(
        self, *, method: str, url: str, exception: gidgethub.HTTPException, attempt: int
    ) -> bool:
        delay = retry_delay(exception, attempt, self._retry) if attempt < self._retry.attempts else None
        status = int(exception.status_code)
        if delay is not None and status >= 500 and method not in self._safe:
            delay = None  # GitHub may have acted before failing: the caller reconciles instead
        if delay is None:
            if status >= 500 or status in (401, 403, 429):
                self._metrics.github_error(method, _path(url), f"{status} {exception}")
            if status >= 500 and method not in self._safe:
                raise AmbiguousWrite(method, _path(url), exception) from exception
            if status == 401 and self._tokens is not None:
                raise AuthenticationFailed(f"{method} {_path(url)}: {exception}") from exception
            return False
        logs.event(
            "github request failed, retrying",
            logging.WARNING,
            method=method,
            path=_path(url),
            status=status,
            retry_in=round(delay, 2),
            attempt=attempt,
        )
        await self.sleep(delay)
        return True


def retry_delay(exc: gidgethub.HTTPException, attempt: int, policy: RetryPolicy) -> float | None:
    """How long to wait before retrying a failed request, or None when it must not be retried."""
    status = int(exc.status_code)
    headers = exc.headers or {}
    retry_after = _float(headers.get("retry-after"))
    reset = _float(headers.get("x-ratelimit-reset"))
    exhausted = headers.get("x-ratelimit-remaining") == "0"
    if isinstance(exc, gidgethub.RateLimitExceeded) or (status == 429 and exhausted):
        wait = (reset - time.time() + 1) if reset else retry_after
        return wait if wait is not None and 0 <= wait <= policy.max_wait else None
    if status == 429 or (status == 403 and _is_secondary_limit(exc)):
        if retry_after is not None:
            return min(retry_after, policy.max_wait)
        if reset is not None and exhausted:
            return min(max(reset - time.time() + 1, 0), policy.max_wait)
        return SECONDARY_LIMIT_WAIT
    if status >= 500:
        return policy.backoff(attempt)
    return None


def _is_secondary_limit(exc: gidgethub.HTTPException) -> bool:
    if "retry-after" in (exc.headers or {}):
        return True
    text = " ".join(str(a) for a in exc.args).lower()
    return "secondary rate limit" in text or "abuse" in text


def _float(value: Any) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _path(url: str) -> str:
    return httpx.URL(url).path


class TokenSource:
    """The installation token of one client, renewed through the App when it is near expiry or refused."""

    def __init__(self, app: GitHubApp, installation_id: int):
        self._app, self._id = app, installation_id

    async def get(self) -> str:
        return await self._app.token(self._id)

    def invalidate(self) -> None:
        self._app.invalidate_token(self._id)

    def failed(self, reason: str) -> None:
        self._app.auth_failed(self._id, reason)

    def succeeded(self) -> None:
        self._app.auth_succeeded(self._id)


class GitHubApp:
    """The App's view of GitHub: shared connections, tokens per installation, state per installation."""

    def __init__(
        self,
        *,
        app_id: str,
        private_key: str,
        api_url: str,
        metrics: Metrics,
        http: httpx.AsyncClient | None = None,
        retry: RetryPolicy | None = None,
        pacer_factory: Callable[[], WritePacer] | None = None,
        timeout: httpx.Timeout | None = None,
        in_flight: int = IN_FLIGHT,
    ):
        self.app_id = str(app_id)
        self._private_key = private_key
        logs.register_secret(private_key)
        self._warned_token_shape = False
        self.api_url = api_url
        self.metrics = metrics
        self.timeout = timeout or HTTP_TIMEOUT
        # one pool of connections for a client given (a test's, the sandbox's), else pools for the whole budget
        self.http = (
            ConnectionShards([http]) if http is not None else ConnectionShards.for_budget(in_flight, self.timeout)
        )
        self.retry = retry or RetryPolicy()
        self._pacer_factory = pacer_factory or WritePacer
        self.budget = InFlightBudget(in_flight, metrics)  # every client of this App, every installation
        # set by a replica on PostgreSQL: installation id -> the pacer every replica shares for it
        self.shared_pacer: Callable[[int], WritePacer | SharedWritePacer] | None = None
        self._tokens: cachetools.TLRUCache = cachetools.TLRUCache(
            maxsize=4096, ttu=lambda _k, tok, _now: tok.expires_at - TOKEN_RENEW_MARGIN, timer=time.time
        )
        self._renewals: dict[int, asyncio.Future] = {}  # one fetch per installation serves every waiter
        self._states: dict[int, InstallationState] = {}
        self._bot_login: asyncio.Future | None = None
        self.last_error: str | None = None

    @property
    def auth_problems(self) -> dict[int, str]:
        """Installation -> why it cannot authenticate now (for /healthz); empty when every one can."""
        return {i: state.last_failure_reason or "" for i, state in dict(self._states).items() if state.failing}

    def installations(self) -> dict[int, dict[str, Any]]:
        """Every installation seen so far and its authentication state (InstallationState.authentication)."""
        states = dict(self._states)  # a copy: /healthz reads it while the workers' loop may add installations
        return {i: state.authentication() for i, state in sorted(states.items())}

    def auth_failed(self, installation_id: int, reason: str) -> None:
        self._state(installation_id).refused(reason)

    def auth_succeeded(self, installation_id: int) -> None:
        self._state(installation_id).authenticated()

    @property
    def request_window(self) -> float:
        """The longest one request can be under way before the client gives up on it."""
        t = self.timeout
        return sum(x or 0.0 for x in (t.connect, t.write, t.read, t.pool))

    def _state(self, installation_id: int) -> InstallationState:
        state = self._states.get(installation_id)
        if state is None:
            pacer = self.shared_pacer(installation_id) if self.shared_pacer else self._pacer_factory()
            state = self._states[installation_id] = InstallationState(installation_id, pacer)
        return state

    def app_client(self) -> GitHubClient:
        """Authenticates as the App itself (JWT), for /app endpoints."""
        return GitHubClient(
            self.http,
            state=None,
            retry=self.retry,
            metrics=self.metrics,
            base_url=self.api_url,
            app_id=self.app_id,
            private_key=self._private_key,
            idempotent_posts=True,
            budget=self.budget,
            age=0.0,
        )  # a token renewal: every delivery waits on it

    def invalidate_token(self, installation_id: int) -> None:
        self._tokens.pop(installation_id, None)

    async def token(self, installation_id: int) -> str:
        """An installation token valid for at least another minute; concurrent callers share one renewal."""
        cached = self._tokens.get(installation_id)
        if cached is not None:
            return cached.token
        renewal = self._renewals.get(installation_id)
        if renewal is None:
            renewal = asyncio.ensure_future(self._renew(installation_id))
            self._renewals[installation_id] = renewal
            renewal.add_done_callback(lambda _f: self._renewals.pop(installation_id, None))
        return await asyncio.shield(renewal)

    async def _renew(self, installation_id: int) -> str:
        try:
            data = await gidgethub.apps.get_installation_access_token(
                self.app_client(),
                installation_id=str(installation_id),
                app_id=self.app_id,
                private_key=self._private_key,
            )
        except (gidgethub.GitHubException, httpx.HTTPError) as exc:
            self.last_error = f"installation token for {installation_id}: {_describe(exc)}"
            self.auth_failed(installation_id, self.last_error)
            raise
        self.auth_succeeded(installation_id)  # a later fetch that works clears an earlier failure
        expires = datetime.fromisoformat(data["expires_at"].replace("Z", "+00:00")).timestamp()
        token = Token(data["token"], expires)
        if not logs.is_github_token(token.token):  # the scrubber cuts tokens by shape; say so once if it cannot
            if not self._warned_token_shape:
                self._warned_token_shape = True
                logs.event(
                    "installation token has an unexpected shape: log lines cannot cut it by pattern",
                    logging.WARNING,
                    installation=installation_id,
                )
        self._tokens[installation_id] = token
        logs.event("installation token renewed", installation=installation_id, expires_in=round(expires - time.time()))
        return token.token

    async def client(self, installation_id: int) -> GitHubClient:
        await self.token(installation_id)  # fail here, before any handler runs, when the App cannot authenticate
        return GitHubClient(
            self.http,
            state=self._state(installation_id),
            retry=self.retry,
            metrics=self.metrics,
            base_url=self.api_url,
            tokens=TokenSource(self, installation_id),
            budget=self.budget,
        )

    def signed_jwt(self) -> str:
        """The App's JWT, signed now with its key: raises (ValueError, TypeError or PyJWT's errors) when the key
        cannot sign, before any request is made."""
        return gidgethub.apps.get_jwt(app_id=self.app_id, private_key=self._private_key)

    async def bot_login(self) -> str:
        """The login of the App's bot user, e.g. `sweepbot[bot]`: looked up once, however many ask at start."""
        if self._bot_login is None or (self._bot_login.done() and self._bot_login.exception() is not None):
            self._bot_login = asyncio.ensure_future(self._fetch_bot_login())
        return await asyncio.shield(self._bot_login)

    async def _fetch_bot_login(self) -> str:
        app = await self.app_client().getitem("/app")
        return f"{app['slug']}[bot]"

    async def close(self) -> None:
        await self.http.aclose()
