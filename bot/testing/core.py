"""The transport: routing, authentication, recording, fault injection, ETags, rate limit and pagination.

Every resource module adds a mixin with a `ROUTES` table of (method, path template, name) whose route
`_route_<name>` methods answer (status, JSON body[, headers]); `GitHubCore` collects the tables of every class
in the final class's MRO.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import http
import json
import math
import re
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import unquote

import httpx

from bot.testing.model import (
    CLOCK_START,
    NOT_FOUND,
    RATE_LIMIT,
    Call,
    Comment,
    Injection,
    RecordedRequest,
    Reply,
    Repo,
    Token,
    Workflow,
    credentials,
    json_body,
    jwt_has_issuer,
    to_int,
    upper,
    user_json,
)

# Placeholders usable in ROUTES, and the regex each one matches in the raw (encoded) path.
PARAMS = {
    "owner": r"[^/]+",
    "repo": r"[^/]+",
    "name": r"[^/]+",
    "user": r"[^/]+",
    "path": r".+",
    "workflow": r"[^/]+",
    "ref": r"[^/]+",
    "org": r"[^/]+",
    "team": r"[^/]+",
    "number": r"\d+",
    "id": r"\d+",
    "rid": r"\d+",
    "code": r"[^/]+",
}
INT_PARAMS = frozenset({"number", "id", "rid"})
R = "/repos/{owner}/{repo}"
SERVICE_UNAVAILABLE = {"message": "Service Unavailable"}

Route = tuple[str, str, str]  # (method, path template, route name)


def _compile(template: str) -> re.Pattern[str]:
    return re.compile(re.sub(r"\{(\w+)\}", lambda m: f"(?P<{m[1]}>{PARAMS[m[1]]})", template))


class GitHubCore:
    """The HTTP side of the fake. `handle` is an httpx MockTransport / respx side effect."""

    ROUTES: ClassVar[list[Route]] = []
    # Route names that GitHub answers without authentication (e.g. the manifest code's conversion)
    PUBLIC_ROUTES: ClassVar[frozenset[str]] = frozenset()
    _compiled: ClassVar[list[tuple[str, re.Pattern[str], str]]] = []
    _public: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        routes: list[Route] = []
        public: set[str] = set()
        for klass in reversed(cls.__mro__):
            routes += klass.__dict__.get("ROUTES", [])
            public |= klass.__dict__.get("PUBLIC_ROUTES", frozenset())
        cls._public = frozenset(public)
        cls._compiled = [(method, _compile(template), name) for method, template, name in routes]

    def __init__(
        self,
        base_url: str = "https://api.github.com",
        *,
        app_slug: str = "sweepbot",
        app_id: int = 1,
        token_ttl: int = 3600,
        on_write: Callable[[RecordedRequest], None] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        url = httpx.URL(self.base_url)
        self._prefix = url.raw_path.decode("ascii").rstrip("/")
        host = "github.com" if url.host == "api.github.com" else url.host
        self.web_url = f"{url.scheme}://{host}"
        if url.port is not None and host != "github.com":
            self.web_url += f":{url.port}"
        self.app_slug, self.app_id, self.token_ttl, self.on_write = app_slug, app_id, token_ttl, on_write
        self.requests: list[RecordedRequest] = []
        self.tokens_issued = 0
        self.rate_remaining = RATE_LIMIT
        self.rate_reset = int(time.time()) + 3600
        self.down = False
        self._tokens: dict[str, Token] = {}
        self._injections: list[Injection] = []
        self._repos: dict[str, Repo] = {}
        self._installations: dict[int, dict[str, Any]] = {}
        self._comments: dict[int, Comment] = {}
        self._teams: dict[tuple[str, str], dict[str, str]] = {}  # (org, slug) -> login -> active|pending
        self._known_users: set[str] = set()
        self._ids = iter(range(1001, 1 << 62))
        self._ticks = 0

    @property
    def bot_login(self) -> str:
        return f"{self.app_slug}[bot]"

    # ---- recording ------------------------------------------------------------------------

    @property
    def writes(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method != "GET"]

    def count(self, method: str | None = None, path_regex: str | None = None) -> int:
        """How many recorded requests have this method and a path that re.search-matches."""
        return sum(
            1
            for r in self.requests
            if (method is None or r.method == method.upper()) and (path_regex is None or re.search(path_regex, r.path))
        )

    def reset_requests(self) -> None:
        self.requests.clear()

    # ---- failure injection ----------------------------------------------------------------

    def fail_next(
        self,
        method: str | None,
        path_regex: str,
        status: int,
        *,
        times: int = 1,
        headers: dict[str, str] | None = None,
        json: Any = None,
    ) -> None:
        """Answer the next `times` matching requests with `status` (method None or "*": any); the route never runs."""
        self._injections.append(_fault(method, path_regex, times, status, headers, json))

    def raise_next(self, method: str | None, path_regex: str, exc: BaseException, times: int = 1) -> None:
        """Raise `exc` from `handle` for the next `times` matching requests; the route never runs."""
        self._injections.append(Injection(upper(method), re.compile(path_regex), times, exc=exc))

    def fail_after_commit(
        self,
        method: str | None,
        path_regex: str,
        status: int = 502,
        *,
        times: int = 1,
        headers: dict[str, str] | None = None,
        json: Any = None,
    ) -> None:
        """The route runs and changes state (the comment IS created), then the client gets `status`.

        Applies to the next `times` matching requests the route answers with a success (2xx or 304).
        """
        self._injections.append(_fault(method, path_regex, times, status, headers, json, after_commit=True))

    def raise_after_commit(self, method: str | None, path_regex: str, exc: BaseException, *, times: int = 1) -> None:
        """The route runs and changes state, then `handle` raises `exc` (e.g. httpx.ReadTimeout)."""
        self._injections.append(Injection(upper(method), re.compile(path_regex), times, exc=exc, after_commit=True))

    def set_rate_limit(self, remaining: int, *, reset_in: float = 3600.0) -> None:
        """Requests left in the primary rate limit until it resets (a benchmark sends more than 5,000)."""
        self.rate_remaining, self.rate_reset = int(remaining), int(time.time() + reset_in)

    def set_down(self, down: bool = True) -> None:
        """While down, every request (the token exchange included) is answered 503 and changes nothing."""
        self.down = bool(down)

    def _take_injection(self, method: str, path: str, *, after_commit: bool) -> Injection | None:
        for injection in self._injections:
            if injection.after_commit == after_commit and injection.matches(method, path):
                injection.times -= 1
                if injection.times <= 0:
                    self._injections.remove(injection)
                return injection
        return None

    # ---- the transport --------------------------------------------------------------------

    def handle(self, request: httpx.Request) -> httpx.Response:
        method = request.method.upper()
        raw_path = self._relative_path(request.url)
        path = unquote(raw_path if raw_path is not None else request.url.path)
        query = dict(request.url.params)
        scheme, token = credentials(request)
        try:
            body, bad_json = json_body(request), False
        except ValueError:
            body, bad_json = None, True

        if self.down:
            self._record(RecordedRequest(method, path, query, body, 503, token))
            return self._response(request, 503, json.dumps(SERVICE_UNAVAILABLE).encode(), {})
        injection = self._take_injection(method, path, after_commit=False)
        if injection is not None and injection.exc is not None:
            self._record(RecordedRequest(method, path, query, body, 0, token))
            raise _bound(injection.exc, request)
        if injection is not None:
            status, payload, headers, counted = injection.status, injection.body, dict(injection.headers), False
        elif bad_json:
            status, payload, headers, counted = 400, {"message": "Problems parsing JSON"}, {}, False
        else:
            status, payload, headers, counted = self._answer(request, method, raw_path, query, scheme, token, body)

        content = b"" if payload is None or status in (204, 304) else json.dumps(payload).encode()
        if method == "GET" and status == 200:
            etag = f'W/"{hashlib.sha1(content).hexdigest()}"'
            headers["etag"] = etag
            sent = {t.strip() for t in request.headers.get("if-none-match", "").split(",")}
            if etag in sent:
                status, content, counted = 304, b"", False
        if counted:
            self.rate_remaining -= 1

        late = None
        if injection is None and not bad_json and status < 400:
            late = self._take_injection(method, path, after_commit=True)
        if late is not None:
            if late.exc is not None:
                self._record(RecordedRequest(method, path, query, body, 0, token, route_status=status))
                raise _bound(late.exc, request)
            self._record(RecordedRequest(method, path, query, body, late.status, token, route_status=status))
            late_content = b"" if late.body is None or late.status in (204, 304) else json.dumps(late.body).encode()
            return self._response(request, late.status, late_content, dict(late.headers))
        self._record(RecordedRequest(method, path, query, body, status, token))
        return self._response(request, status, content, headers)

    def _relative_path(self, url: httpx.URL) -> str | None:
        raw = url.raw_path.decode("ascii").partition("?")[0]
        if self._prefix:
            if raw != self._prefix and not raw.startswith(self._prefix + "/"):
                return None
            raw = raw[len(self._prefix) :]
        return raw or "/"

    def _answer(
        self,
        request: httpx.Request,
        method: str,
        raw_path: str | None,
        query: dict[str, str],
        scheme: str | None,
        token: str | None,
        body: Any,
    ) -> tuple[int, Any, dict[str, str], bool]:
        """(status, JSON body, headers, counts against the rate limit)."""
        if raw_path is None:
            return 404, NOT_FOUND, {}, False
        found = self._match(method, raw_path)
        public = found is not None and found[0] in self._public
        app_route = raw_path == "/app" or raw_path.startswith("/app/")
        actor = None
        if public:  # GitHub answers it without credentials and does not count it
            app_route = True
        elif token is None:
            return 401, {"message": "Requires authentication"}, {}, False
        elif app_route:
            if scheme != "bearer" or not jwt_has_issuer(token):
                return 401, {"message": "A JSON web token could not be decoded"}, {}, False
            if (refused := self._jwt_refusal(token)) is not None:
                return *refused, {}, False
        else:
            actor = self._actor(token)
            if actor is None:
                return 401, {"message": "Bad credentials"}, {}, False
            if time.time() >= self.rate_reset:
                self.rate_remaining, self.rate_reset = RATE_LIMIT, int(time.time()) + 3600
            if self.rate_remaining <= 0:
                return 403, {"message": f"API rate limit exceeded for {actor['login']}."}, {}, False
        counted = not app_route
        if found is None:
            return 404, NOT_FOUND, {}, counted
        name, match = found
        args: dict[str, Any] = {
            key: int(value) if key in INT_PARAMS else unquote(value) for key, value in match.groupdict().items()
        }
        try:
            if "owner" in args:
                args["repo"] = self._repo(f"{args.pop('owner')}/{args['repo']}")
            status, payload, *rest = getattr(self, "_route_" + name)(Call(request, query, body, actor), **args)
        except Reply as reply:
            status, payload, rest = reply.status, reply.body, []
        return status, payload, dict(rest[0]) if rest else {}, counted

    def _match(self, method: str, raw_path: str) -> tuple[str, re.Match[str]] | None:
        for route_method, pattern, name in self._compiled:
            match = pattern.fullmatch(raw_path)
            if route_method == method and match:
                return name, match
        return None

    def _actor(self, token: str) -> dict[str, Any] | None:
        entry = self._tokens.get(token)
        if entry is None or (entry.expires_at is not None and time.time() >= entry.expires_at):
            return None
        return user_json(entry.login)

    def _response(self, request: httpx.Request, status: int, content: bytes, extra: dict[str, str]) -> httpx.Response:
        remaining = max(self.rate_remaining, 0)
        headers = {
            "x-ratelimit-limit": str(RATE_LIMIT),
            "x-ratelimit-remaining": str(remaining),
            "x-ratelimit-used": str(RATE_LIMIT - remaining),
            "x-ratelimit-reset": str(self.rate_reset),
            "x-ratelimit-resource": "core",
        }
        if content:
            headers["content-type"] = "application/json; charset=utf-8"
        headers.update(extra)
        return httpx.Response(status, headers=headers, content=content, request=request)

    def _record(self, recorded: RecordedRequest) -> None:
        recorded = dataclasses.replace(recorded, at=time.time())
        self.requests.append(recorded)
        if recorded.method != "GET" and self.on_write is not None:
            self.on_write(recorded)

    def _paginate(self, call: Call, items: list[Any]) -> tuple[int, list[Any], dict[str, str]]:
        per_page = min(max(to_int(call.query.get("per_page"), 30), 1), 100)
        page = max(to_int(call.query.get("page"), 1), 1)
        last = max(1, math.ceil(len(items) / per_page))

        def link(n: int, rel: str) -> str:
            url = call.request.url.copy_set_param("per_page", per_page).copy_set_param("page", n)
            return f'<{url}>; rel="{rel}"'

        links = []
        if page > 1:
            links.append(link(page - 1, "prev"))
        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links.append(link(1, "first"))
        headers = {"link": ", ".join(links)} if links else {}
        return 200, items[(page - 1) * per_page : page * per_page], headers

    def _paginate_wrapped(self, call: Call, key: str, items: list[Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        """Pagination of the list endpoints that answer {"total_count": N, key: [one page]}."""
        status, page, headers = self._paginate(call, items)
        return status, {"total_count": len(items), key: page}, headers

    # ---- internal state helpers -----------------------------------------------------------

    def _next_id(self) -> int:
        return next(self._ids)

    def set_clock(self, moment: str) -> None:
        """The clock's next stamp is `moment` (ISO 8601, UTC; not before the clock's start): a fake whose runs and
        artifacts must look recent to a bot on the real clock (artifacts expire 90 days after their stamp)."""
        when = dt.datetime.strptime(moment, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
        self._ticks = max(0, int((when - CLOCK_START).total_seconds()))

    def _stamp(self) -> str:
        """The internal clock: every call is one second after the previous one."""
        moment = CLOCK_START + dt.timedelta(seconds=self._ticks)
        self._ticks += 1
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")

    def _know(self, login: str, type_: str | None = None) -> dict[str, Any]:
        self._known_users.add(login.lower())
        return user_json(login, type_)

    def _repo(self, full_name: str) -> Repo:
        try:
            return self._repos[full_name.lower()]
        except KeyError:
            raise Reply(404, NOT_FOUND) from None

    def _item(self, repo: Repo, number: int, *, pull: bool = False) -> dict[str, Any]:
        item = repo.items.get(number)
        if item is None or (pull and "head" not in item):
            raise Reply(404, NOT_FOUND)
        return item

    if TYPE_CHECKING:  # what one resource's mixin calls of another's; InMemoryGitHub (memory.py) has them all

        def add_repo(
            self,
            full_name: str,
            *,
            default_branch: str = ...,
            installation_id: int | None = ...,
            private: bool = ...,
            owner_type: str = ...,
            fork: bool = ...,
        ) -> dict[str, Any]: ...
        def _branch_sha(self, repo: Repo, branch: str) -> str | None: ...
        def _jwt_refusal(self, token: str) -> tuple[int, dict[str, str]] | None: ...
        def comments(self, full_name: str, number: int) -> list[dict[str, Any]]: ...
        def _comment(self, repo: Repo, comment_id: int) -> Comment: ...
        def _new_item(self, repo: Repo, number: int | None, title: str, body: str, user: str) -> dict[str, Any]: ...
        def _issue_json(self, repo: Repo, item: dict[str, Any]) -> dict[str, Any]: ...
        def _find_label(self, repo: Repo, name: str) -> dict[str, Any] | None: ...
        def _label_names(self, names: Iterable[Any], doc: str) -> list[str]: ...
        def _apply_label(self, repo: Repo, number: int, name: str, actor: dict[str, Any]) -> None: ...
        def push_commit(
            self,
            full_name: str,
            number: int,
            *,
            sha: str | None = ...,
            message: str = ...,
            merge: bool = ...,
            committed_at: str | None = ...,
        ) -> dict[str, Any]: ...
        def _pull_commits(self, repo: Repo, number: int) -> list[dict[str, Any]]: ...
        def complete_run(self, full_name: str, run_id: int, conclusion: str = ...) -> dict[str, Any]: ...
        def _run(self, repo: Repo, run_id: int) -> dict[str, Any]: ...
        def _run_json(self, repo: Repo, run: dict[str, Any]) -> dict[str, Any]: ...
        def _workflow_json(self, repo: Repo, wf: Workflow) -> dict[str, Any]: ...
        def _envelope(self, repo: Repo, sender: dict[str, Any]) -> dict[str, Any]: ...


def _fault(
    method: str | None,
    path_regex: str,
    times: int,
    status: int,
    headers: dict[str, str] | None,
    body: Any,
    *,
    after_commit: bool = False,
) -> Injection:
    if body is None and status >= 400:
        body = {"message": http.HTTPStatus(status).phrase}
    return Injection(
        upper(method), re.compile(path_regex), times, status, dict(headers or {}), body, after_commit=after_commit
    )


def _bound(exc: BaseException, request: httpx.Request) -> BaseException:
    """An httpx.RequestError made without a request gets this one, as httpx's own errors carry it."""
    if isinstance(exc, httpx.RequestError):
        try:
            _ = exc.request  # httpx raises here when the error was made without one
        except RuntimeError:
            exc.request = request
    return exc
