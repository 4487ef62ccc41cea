"""The GitHub client: App JWT to installation tokens, ETag cache, retries with backoff, paced writes."""

from __future__ import annotations

import asyncio
import collections
import logging
import random
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Awaitable, Callable, Mapping

import cachetools
import gidgethub
import gidgethub.apps
import gidgethub.httpx
import httpx
from gidgethub import sansio

from bot import logs
from bot.metrics import Metrics

USER_AGENT = "sweepbot"
TOKEN_RENEW_MARGIN = 60.0  # renew installation tokens at least this long before expires_at
HTTP_TIMEOUT = httpx.Timeout(10.0, connect=5.0)
ETAG_CACHE_SIZE = 512
SECONDARY_LIMIT_WAIT = 60.0  # GitHub: with no retry-after or reset header, wait at least a minute
WRITE_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})


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


class WritePacer:
    """At most `limit` content-creating requests in any `window` seconds (GitHub's secondary limit is ~80/min)."""

    def __init__(self, limit: int = 80, window: float = 60.0, sleep: Callable[[float], Awaitable[None]] | None = None):
        self.limit = limit
        self.window = window
        self._sent: collections.deque[float] = collections.deque()
        self._lock = asyncio.Lock()
        self._sleep = sleep or asyncio.sleep
        self.waited = 0.0

    async def acquire(self) -> None:
        async with self._lock:
            now = time.monotonic()
            while self._sent and now - self._sent[0] >= self.window:
                self._sent.popleft()
            if len(self._sent) >= self.limit:
                delay = self.window - (now - self._sent[0])
                self.waited += delay
                await self._sleep(delay)
                self._sent.popleft()
            self._sent.append(time.monotonic())


@dataclass
class InstallationState:
    """What every client of one installation shares: its ETag cache, write pacer and last rate limit seen."""

    installation_id: int
    pacer: WritePacer
    etags: cachetools.LRUCache = field(default_factory=lambda: cachetools.LRUCache(ETAG_CACHE_SIZE))
    rate_limit: sansio.RateLimit | None = None


@dataclass(frozen=True)
class Token:
    token: str
    expires_at: float


class GitHubClient(gidgethub.httpx.GitHubAPI):
    """gidgethub over the shared httpx client, with retries, pacing and metrics."""

    def __init__(self, http: httpx.AsyncClient, *, state: InstallationState | None, retry: RetryPolicy,
                 metrics: Metrics, **kwargs: Any):
        self._state = state
        self._retry = retry
        self._metrics = metrics
        super().__init__(http, USER_AGENT, cache=state.etags if state else None, **kwargs)

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
            await self._state.pacer.acquire()

    async def _request(self, method: str, url: str, headers: Mapping[str, str], body: bytes = b"") -> tuple:
        attempt = 0
        while True:
            attempt += 1
            started = time.monotonic()
            try:
                status, resp_headers, content = await super()._request(method, url, headers, body)
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                self._metrics.github_requests.labels(method, "error").inc()
                if attempt >= self._retry.attempts:
                    self._metrics.github_error(method, _path(url), type(exc).__name__)
                    raise
                delay = self._retry.backoff(attempt)
                logs.event("github transport error, retrying", logging.WARNING, method=method,
                           path=_path(url), error=type(exc).__name__, retry_in=round(delay, 2))
                await self.sleep(delay)
                continue
            self._metrics.github_requests.labels(method, str(status)).inc()
            if method in WRITE_METHODS:
                logs.event("github write", method=method, path=_path(url), status=status,
                           ms=round((time.monotonic() - started) * 1000, 1))
            return status, resp_headers, content

    async def handle_rate_limit_error(self, *, method: str, url: str, exception: gidgethub.HTTPException,
                                      attempt: int) -> bool:
        delay = retry_delay(exception, attempt, self._retry) if attempt < self._retry.attempts else None
        if delay is None:
            status = int(exception.status_code)
            if status >= 500 or status in (401, 403, 429):
                self._metrics.github_error(method, _path(url), f"{status} {exception}")
            return False
        logs.event("github request failed, retrying", logging.WARNING, method=method, path=_path(url),
                   status=int(exception.status_code), retry_in=round(delay, 2), attempt=attempt)
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


class GitHubApp:
    """The App's view of GitHub: one shared httpx client, tokens per installation, state per installation."""

    def __init__(self, *, app_id: str, private_key: str, api_url: str, metrics: Metrics,
                 http: httpx.AsyncClient | None = None, retry: RetryPolicy | None = None,
                 pacer_factory: Callable[[], WritePacer] | None = None):
        self.app_id = str(app_id)
        self._private_key = private_key
        logs.register_secret(private_key)
        self.api_url = api_url
        self.metrics = metrics
        self.http = http or httpx.AsyncClient(timeout=HTTP_TIMEOUT, http2=False)
        self.retry = retry or RetryPolicy()
        self._pacer_factory = pacer_factory or WritePacer
        self._tokens: cachetools.TLRUCache = cachetools.TLRUCache(
            maxsize=4096, ttu=lambda _k, tok, _now: tok.expires_at - TOKEN_RENEW_MARGIN, timer=time.time
        )
        self._token_locks: dict[int, asyncio.Lock] = {}
        self._states: dict[int, InstallationState] = {}
        self._bot_login: str | None = None
        self.last_error: str | None = None

    def _state(self, installation_id: int) -> InstallationState:
        state = self._states.get(installation_id)
        if state is None:
            state = self._states[installation_id] = InstallationState(installation_id, self._pacer_factory())
        return state

    def app_client(self) -> GitHubClient:
        """Authenticates as the App itself (JWT), for /app endpoints."""
        return GitHubClient(self.http, state=None, retry=self.retry, metrics=self.metrics, base_url=self.api_url,
                            app_id=self.app_id, private_key=self._private_key)

    async def token(self, installation_id: int) -> str:
        """An installation token valid for at least another minute; concurrent callers share one renewal."""
        cached = self._tokens.get(installation_id)
        if cached is not None:
            return cached.token
        lock = self._token_locks.setdefault(installation_id, asyncio.Lock())
        async with lock:
            cached = self._tokens.get(installation_id)
            if cached is not None:
                return cached.token
            try:
                data = await gidgethub.apps.get_installation_access_token(
                    self.app_client(), installation_id=str(installation_id), app_id=self.app_id,
                    private_key=self._private_key,
                )
            except gidgethub.GitHubException as exc:
                self.last_error = f"installation token for {installation_id}: {exc}"
                raise
            expires = datetime.fromisoformat(data["expires_at"].replace("Z", "+00:00")).timestamp()
            token = Token(data["token"], expires)
            logs.register_secret(token.token)
            self._tokens[installation_id] = token
            logs.event("installation token renewed", installation=installation_id,
                       expires_in=round(expires - time.time()))
            return token.token

    async def client(self, installation_id: int) -> GitHubClient:
        token = await self.token(installation_id)
        return GitHubClient(self.http, state=self._state(installation_id), retry=self.retry, metrics=self.metrics,
                            base_url=self.api_url, oauth_token=token)

    async def bot_login(self) -> str:
        """The login of the App's bot user, e.g. `sweepbot[bot]`: only its comments count as the bot's."""
        if self._bot_login is None:
            app = await self.app_client().getitem("/app")
            self._bot_login = f"{app['slug']}[bot]"
        return self._bot_login

    async def close(self) -> None:
        await self.http.aclose()
