"""A stateful in-memory fake of GitHub's REST API, served at the httpx transport level."""

from __future__ import annotations

import base64
import copy
import dataclasses
import datetime as dt
import hashlib
import http
import json
import math
import re
import secrets
import string
import time
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import unquote

import httpx
import jwt

__all__ = ["InMemoryGitHub", "RecordedRequest"]

RATE_LIMIT = 5000
CLOCK_START = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
REACTIONS = frozenset({"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"})
# The `permission` field is GitHub's legacy one: maintain reads as write, triage as read.
# `role_name` carries the real role.
LEGACY_PERMISSION = {
    "admin": "admin", "maintain": "write", "write": "write",
    "triage": "read", "read": "read", "none": "none",
}
ISSUE_KEYS = (
    "id", "number", "title", "body", "state", "locked", "user", "labels", "html_url",
    "created_at", "updated_at", "closed_at", "author_association",
)
NOT_FOUND = {"message": "Not Found"}
TOKEN_ALPHABET = string.ascii_letters + string.digits

# Placeholders usable in ROUTES, and the regex each one matches in the raw (encoded) path.
PARAMS = {
    "owner": r"[^/]+", "repo": r"[^/]+", "name": r"[^/]+", "user": r"[^/]+", "path": r".+",
    "number": r"\d+", "id": r"\d+", "rid": r"\d+",
}
INT_PARAMS = frozenset({"number", "id", "rid"})
R = "/repos/{owner}/{repo}"
ROUTES = [
    ("GET", "/app", "get_app"),
    ("POST", "/app/installations/{id}/access_tokens", "post_access_token"),
    ("GET", R, "get_repo"),
    ("GET", R + "/contents/{path}", "get_contents"),
    ("GET", R + "/pulls/{number}", "get_pull"),
    ("GET", R + "/pulls/{number}/files", "list_pull_files"),
    ("GET", R + "/issues", "list_issues"),
    ("POST", R + "/issues", "post_issue"),
    ("GET", R + "/issues/{number}", "get_issue"),
    ("PATCH", R + "/issues/{number}", "patch_issue"),
    ("GET", R + "/issues/{number}/comments", "list_comments"),
    ("POST", R + "/issues/{number}/comments", "post_comment"),
    ("GET", R + "/issues/comments/{id}", "get_comment"),
    ("PATCH", R + "/issues/comments/{id}", "patch_comment"),
    ("DELETE", R + "/issues/comments/{id}", "delete_comment"),
    ("GET", R + "/issues/comments/{id}/reactions", "list_reactions"),
    ("POST", R + "/issues/comments/{id}/reactions", "post_reaction"),
    ("DELETE", R + "/issues/comments/{id}/reactions/{rid}", "delete_reaction"),
    ("GET", R + "/issues/{number}/labels", "list_issue_labels"),
    ("POST", R + "/issues/{number}/labels", "post_issue_labels"),
    ("DELETE", R + "/issues/{number}/labels/{name}", "delete_issue_label"),
    ("GET", R + "/issues/{number}/events", "list_events"),
    ("GET", R + "/labels/{name}", "get_label"),
    ("POST", R + "/labels", "post_label"),
    ("GET", R + "/collaborators/{user}/permission", "get_permission"),
]


def _compile(template: str) -> re.Pattern[str]:
    return re.compile(re.sub(r"\{(\w+)\}", lambda m: f"(?P<{m[1]}>{PARAMS[m[1]]})", template))


COMPILED_ROUTES = [(method, _compile(template), name) for method, template, name in ROUTES]


@dataclasses.dataclass(frozen=True)
class RecordedRequest:
    """One request the fake answered. status 0 means a transport error was raised instead."""

    method: str
    path: str
    query: dict[str, str]
    json: Any
    status: int
    token: str | None


class _Reply(Exception):
    """Raised inside a route to answer early (404, 422, ...)."""

    def __init__(self, status: int, body: Any = None) -> None:
        super().__init__(status)
        self.status, self.body = status, body


def _invalid(resource: str, code: str, field: str) -> _Reply:
    errors = [{"resource": resource, "code": code, "field": field}]
    return _Reply(422, {"message": "Validation Failed", "errors": errors})


@dataclasses.dataclass
class _Token:
    login: str
    expires_at: float | None  # None: never (tokens from add_token)


@dataclasses.dataclass
class _Repo:
    json: dict[str, Any]
    installation_id: int | None
    files: dict[str, dict[str, bytes]] = dataclasses.field(default_factory=dict)  # ref -> path -> bytes
    labels: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)  # casefolded name -> label
    items: dict[int, dict[str, Any]] = dataclasses.field(default_factory=dict)  # number -> issue or PR JSON
    pull_files: dict[int, list[dict[str, Any]]] = dataclasses.field(default_factory=dict)
    events: dict[int, list[dict[str, Any]]] = dataclasses.field(default_factory=dict)
    permissions: dict[str, str] = dataclasses.field(default_factory=dict)  # lowercased login -> role
    next_number: int = 1

    @property
    def full_name(self) -> str:
        return self.json["full_name"]


@dataclasses.dataclass
class _Comment:
    repo: _Repo
    number: int
    json: dict[str, Any]
    reactions: list[dict[str, Any]] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class _Injection:
    method: str | None
    pattern: re.Pattern[str]
    times: int
    status: int = 0
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    body: Any = None
    exc: BaseException | None = None

    def matches(self, method: str, path: str) -> bool:
        return self.method in (None, "*", method) and self.pattern.search(path) is not None


@dataclasses.dataclass
class _Call:
    """What a route method gets to look at: the request, its query and body, and who sent it."""

    request: httpx.Request
    query: dict[str, str]
    body: Any
    actor: dict[str, Any] | None


def _user_json(login: str, type_: str | None = None) -> dict[str, Any]:
    uid = int(hashlib.sha1(login.lower().encode()).hexdigest()[:8], 16)
    kind = type_ or ("Bot" if login.endswith("[bot]") else "User")
    return {"login": login, "id": uid, "type": kind}


def _fake_sha(*parts: object) -> str:
    return hashlib.sha1("\0".join(map(str, parts)).encode()).hexdigest()


def _blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _wrapped_base64(data: bytes) -> str:
    encoded = base64.b64encode(data).decode("ascii")
    return "".join(encoded[i : i + 60] + "\n" for i in range(0, len(encoded), 60))


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def _iso(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _credentials(request: httpx.Request) -> tuple[str | None, str | None]:
    scheme, _, value = request.headers.get("authorization", "").strip().partition(" ")
    if not value.strip():
        return None, None
    return scheme.lower(), value.strip()


def _json_body(request: httpx.Request) -> Any:
    try:
        raw = request.content
    except httpx.RequestNotRead:
        raw = request.read()
    return json.loads(raw) if raw else None


def _jwt_has_issuer(token: str) -> bool:
    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        return False
    return bool(claims.get("iss"))


class InMemoryGitHub:
    """GitHub as far as sweepbot uses it. `handle` is an httpx MockTransport / respx side effect."""

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
        self.app_slug, self.app_id, self.token_ttl, self.on_write = app_slug, app_id, token_ttl, on_write
        self.requests: list[RecordedRequest] = []
        self.tokens_issued = 0
        self.rate_remaining = RATE_LIMIT
        self.rate_reset = int(time.time()) + 3600
        self._tokens: dict[str, _Token] = {}
        self._injections: list[_Injection] = []
        self._repos: dict[str, _Repo] = {}
        self._installations: dict[int, dict[str, Any]] = {}
        self._comments: dict[int, _Comment] = {}
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
            if (method is None or r.method == method.upper())
            and (path_regex is None or re.search(path_regex, r.path))
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
        """Answer the next `times` matching requests with `status` (method None or "*": any)."""
        if json is None and status >= 400:
            json = {"message": http.HTTPStatus(status).phrase}
        self._injections.append(
            _Injection(_method(method), re.compile(path_regex), times, status, dict(headers or {}), json)
        )

    def raise_next(self, method: str | None, path_regex: str, exc: BaseException, times: int = 1) -> None:
        """Raise `exc` from `handle` for the next `times` matching requests."""
        self._injections.append(_Injection(_method(method), re.compile(path_regex), times, exc=exc))

    def _take_injection(self, method: str, path: str) -> _Injection | None:
        for injection in self._injections:
            if injection.matches(method, path):
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
        scheme, token = _credentials(request)
        try:
            body, bad_json = _json_body(request), False
        except ValueError:
            body, bad_json = None, True

        injection = self._take_injection(method, path)
        if injection is not None and injection.exc is not None:
            self._record(RecordedRequest(method, path, query, body, 0, token))
            exc = injection.exc
            if isinstance(exc, httpx.RequestError):
                try:
                    exc.request
                except RuntimeError:
                    exc.request = request
            raise exc
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
        if token is None:
            return 401, {"message": "Requires authentication"}, {}, False
        app_route = raw_path == "/app" or raw_path.startswith("/app/")
        actor = None
        if app_route:
            if scheme != "bearer" or not _jwt_has_issuer(token):
                return 401, {"message": "A JSON web token could not be decoded"}, {}, False
        else:
            actor = self._actor(token)
            if actor is None:
                return 401, {"message": "Bad credentials"}, {}, False
            if time.time() >= self.rate_reset:
                self.rate_remaining, self.rate_reset = RATE_LIMIT, int(time.time()) + 3600
            if self.rate_remaining <= 0:
                return 403, {"message": f"API rate limit exceeded for {actor['login']}."}, {}, False
        counted = not app_route
        for route_method, pattern, name in COMPILED_ROUTES:
            match = pattern.fullmatch(raw_path)
            if route_method == method and match:
                break
        else:
            return 404, NOT_FOUND, {}, counted
        args: dict[str, Any] = {
            key: int(value) if key in INT_PARAMS else unquote(value) for key, value in match.groupdict().items()
        }
        try:
            if "owner" in args:
                args["repo"] = self._repo(f"{args.pop('owner')}/{args['repo']}")
            status, payload, *rest = getattr(self, "_route_" + name)(_Call(request, query, body, actor), **args)
        except _Reply as reply:
            status, payload, rest = reply.status, reply.body, []
        return status, payload, dict(rest[0]) if rest else {}, counted

    def _actor(self, token: str) -> dict[str, Any] | None:
        entry = self._tokens.get(token)
        if entry is None or (entry.expires_at is not None and time.time() >= entry.expires_at):
            return None
        return _user_json(entry.login)

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
        self.requests.append(recorded)
        if recorded.method != "GET" and self.on_write is not None:
            self.on_write(recorded)

    def _paginate(self, call: _Call, items: list[Any]) -> tuple[int, list[Any], dict[str, str]]:
        per_page = min(max(_int(call.query.get("per_page"), 30), 1), 100)
        page = max(_int(call.query.get("page"), 1), 1)
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

    # ---- internal state helpers -----------------------------------------------------------

    def _next_id(self) -> int:
        return next(self._ids)

    def _stamp(self) -> str:
        """The internal clock: every call is one second after the previous one."""
        moment = CLOCK_START + dt.timedelta(seconds=self._ticks)
        self._ticks += 1
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")

    def _know(self, login: str, type_: str | None = None) -> dict[str, Any]:
        self._known_users.add(login.lower())
        return _user_json(login, type_)

    def _repo(self, full_name: str) -> _Repo:
        try:
            return self._repos[full_name.lower()]
        except KeyError:
            raise _Reply(404, NOT_FOUND) from None

    def _item(self, repo: _Repo, number: int, *, pull: bool = False) -> dict[str, Any]:
        item = repo.items.get(number)
        if item is None or (pull and "head" not in item):
            raise _Reply(404, NOT_FOUND)
        return item

    def _comment(self, repo: _Repo, comment_id: int) -> _Comment:
        comment = self._comments.get(comment_id)
        if comment is None or comment.repo is not repo:
            raise _Reply(404, NOT_FOUND)
        return comment

    def _find_label(self, repo: _Repo, name: str) -> dict[str, Any] | None:
        return repo.labels.get(name.casefold())

    def _ensure_label(self, repo: _Repo, name: str) -> dict[str, Any]:
        return self._find_label(repo, name) or self._new_label(repo, name, "ededed", "")

    def _new_label(self, repo: _Repo, name: str, color: str, description: str) -> dict[str, Any]:
        label = {"id": self._next_id(), "name": name, "color": color, "description": description, "default": False}
        repo.labels[name.casefold()] = label
        return label

    def _event(self, repo: _Repo, number: int, kind: str, label: dict[str, Any], actor: dict[str, Any]) -> None:
        repo.events.setdefault(number, []).append({
            "id": self._next_id(),
            "event": kind,
            "actor": dict(actor),
            "label": {"name": label["name"], "color": label["color"]},
            "commit_id": None,
            "created_at": self._stamp(),
        })

    def _apply_label(self, repo: _Repo, number: int, name: str, actor: dict[str, Any]) -> None:
        item = self._item(repo, number)
        label = self._ensure_label(repo, name)
        if all(existing is not label for existing in item["labels"]):
            item["labels"].append(label)
            self._event(repo, number, "labeled", label, actor)

    def _remove_label(self, repo: _Repo, number: int, name: str, actor: dict[str, Any]) -> bool:
        item = self._item(repo, number)
        for existing in item["labels"]:
            if existing["name"].casefold() == name.casefold():
                item["labels"].remove(existing)
                self._event(repo, number, "unlabeled", existing, actor)
                return True
        return False

    def _issue_json(self, repo: _Repo, item: dict[str, Any]) -> dict[str, Any]:
        issue = {key: item[key] for key in ISSUE_KEYS if key in item}
        issue["repository_url"] = f"{self.base_url}/repos/{repo.full_name}"
        issue["comments"] = sum(1 for c in self._comments.values() if c.repo is repo and c.number == item["number"])
        if "head" in item:
            issue["draft"] = item["draft"]
            issue["pull_request"] = {
                "url": f"{self.base_url}/repos/{repo.full_name}/pulls/{item['number']}",
                "html_url": item["html_url"],
                "merged_at": item["merged_at"],
            }
        return copy.deepcopy(issue)

    def _new_comment(
        self, repo: _Repo, number: int, body: str, user: dict[str, Any], association: str, created_at: str | None
    ) -> dict[str, Any]:
        item = self._item(repo, number)
        comment_id = self._next_id()
        stamp = created_at or self._stamp()
        comment = {
            "id": comment_id,
            "body": body,
            "user": user,
            "created_at": stamp,
            "updated_at": stamp,
            "html_url": f"{item['html_url']}#issuecomment-{comment_id}",
            "issue_url": f"{self.base_url}/repos/{repo.full_name}/issues/{number}",
            "url": f"{self.base_url}/repos/{repo.full_name}/issues/comments/{comment_id}",
            "author_association": association,
        }
        self._comments[comment_id] = _Comment(repo, number, comment)
        return comment

    def _association(self, repo: _Repo, user: dict[str, Any]) -> str:
        if user["type"] == "Bot":
            return "NONE"
        if user["login"].lower() == repo.json["owner"]["login"].lower():
            return "OWNER"
        return "COLLABORATOR" if user["login"].lower() in repo.permissions else "NONE"

    def _new_item(self, repo: _Repo, number: int | None, title: str, body: str, user: str) -> dict[str, Any]:
        if number is None:
            number = repo.next_number
        if number in repo.items:
            raise ValueError(f"{repo.full_name}#{number} already exists")
        repo.next_number = max(repo.next_number, number + 1)
        stamp = self._stamp()
        item = {
            "id": self._next_id(),
            "number": number,
            "title": title,
            "body": body,
            "state": "open",
            "locked": False,
            "user": self._know(user),
            "labels": [],
            "html_url": f"{self.web_url}/{repo.full_name}/issues/{number}",
            "created_at": stamp,
            "updated_at": stamp,
            "closed_at": None,
            "author_association": "CONTRIBUTOR",
        }
        repo.items[number] = item
        return item

    # ---- state setup ----------------------------------------------------------------------

    def add_token(self, token: str, login: str) -> None:
        """Accept `token` as `login` (type User, or Bot when the login ends in [bot]); never expires."""
        self._know(login)
        self._tokens[token] = _Token(login, None)

    def add_repo(
        self,
        full_name: str,
        *,
        default_branch: str = "main",
        installation_id: int | None = 1,
        private: bool = False,
        owner_type: str = "Organization",
        fork: bool = False,
    ) -> dict[str, Any]:
        if full_name.lower() in self._repos:
            raise ValueError(f"repository {full_name} already exists")
        owner, name = full_name.split("/")
        owner_json = self._know(owner, owner_type)
        repo_json = {
            "id": self._next_id(),
            "name": name,
            "full_name": full_name,
            "owner": owner_json,
            "private": private,
            "visibility": "private" if private else "public",
            "fork": fork,
            "default_branch": default_branch,
            "html_url": f"{self.web_url}/{full_name}",
            "url": f"{self.base_url}/repos/{full_name}",
        }
        self._repos[full_name.lower()] = _Repo(repo_json, installation_id)
        if installation_id is not None:
            self._installations.setdefault(installation_id, {"id": installation_id, "account": owner_json})
        return repo_json

    def set_file(self, full_name: str, path: str, content: str | bytes, *, ref: str | None = None) -> None:
        repo = self._repo(full_name)
        data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        repo.files.setdefault(ref or repo.json["default_branch"], {})[path.lstrip("/")] = data

    def delete_file(self, full_name: str, path: str, *, ref: str | None = None) -> None:
        repo = self._repo(full_name)
        repo.files.get(ref or repo.json["default_branch"], {}).pop(path.lstrip("/"), None)

    def add_pull(
        self,
        full_name: str,
        *,
        number: int | None = None,
        title: str = "Update benchmark recipe",
        user: str = "contributor",
        head_repo: str | None = None,
        head_ref: str = "feature",
        head_sha: str | None = None,
        base_ref: str | None = None,
        draft: bool = False,
        files: Iterable[str | dict[str, Any]] = (),
        labels: Iterable[str] = (),
        body: str = "",
    ) -> dict[str, Any]:
        """Open a PR. `labels` are applied by the author (recorded as `labeled` events by `user`)."""
        repo = self._repo(full_name)
        head = repo
        if head_repo is not None and head_repo.lower() != full_name.lower():
            if head_repo.lower() not in self._repos:
                self.add_repo(head_repo, installation_id=None, owner_type="User", fork=True)
            head = self._repos[head_repo.lower()]
            head.json["fork"] = True
        item = self._new_item(repo, number, title, body, user)
        number = item["number"]
        base_ref = base_ref or repo.json["default_branch"]
        item["html_url"] = f"{self.web_url}/{full_name}/pull/{number}"
        item.update({
            "draft": draft,
            "head": {
                "label": f"{head.json['owner']['login']}:{head_ref}",
                "ref": head_ref,
                "sha": head_sha or _fake_sha(full_name, number, "head"),
                "user": head.json["owner"],
                "repo": head.json,
            },
            "base": {
                "label": f"{repo.json['owner']['login']}:{base_ref}",
                "ref": base_ref,
                "sha": _fake_sha(full_name, base_ref),
                "user": repo.json["owner"],
                "repo": repo.json,
            },
            "merged": False,
            "merged_at": None,
            "merge_commit_sha": None,
        })
        repo.pull_files[number] = [self._file_entry(f) for f in files]
        for name in labels:
            self._apply_label(repo, number, name, item["user"])
        return item

    @staticmethod
    def _file_entry(entry: str | dict[str, Any]) -> dict[str, Any]:
        """A pulls/files entry. `patch` is present only when given (GitHub omits it for big diffs)."""
        out: dict[str, Any] = {"filename": entry} if isinstance(entry, str) else dict(entry)
        out.setdefault("status", "modified")
        out.setdefault("additions", 0)
        out.setdefault("deletions", 0)
        out.setdefault("changes", out["additions"] + out["deletions"])
        out.setdefault("sha", _fake_sha("file", out["filename"]))
        return out

    def add_issue(
        self, full_name: str, *, title: str, body: str = "", user: str = "contributor", labels: Iterable[str] = ()
    ) -> dict[str, Any]:
        repo = self._repo(full_name)
        item = self._new_item(repo, None, title, body, user)
        for name in labels:
            self._apply_label(repo, item["number"], name, item["user"])
        return item

    def add_comment(
        self,
        full_name: str,
        number: int,
        body: str,
        *,
        user: str = "someone",
        user_type: str = "User",
        created_at: str | None = None,
        author_association: str = "CONTRIBUTOR",
    ) -> dict[str, Any]:
        """A comment written by someone else than the bot (a live object: mutate with care)."""
        user_json = self._know(user, user_type)
        return self._new_comment(self._repo(full_name), number, body, user_json, author_association, created_at)

    def add_label(self, full_name: str, name: str, *, color: str = "ededed", description: str = "") -> dict[str, Any]:
        repo = self._repo(full_name)
        label = self._find_label(repo, name)
        if label is None:
            return self._new_label(repo, name, color, description)
        label.update(color=color, description=description)
        return label

    def label_issue(self, full_name: str, number: int, name: str, *, actor: str = "maintainer") -> None:
        """A human applies a label (no-op if already present, like GitHub)."""
        self._apply_label(self._repo(full_name), number, name, self._know(actor))

    def unlabel_issue(self, full_name: str, number: int, name: str, *, actor: str = "maintainer") -> None:
        """A human removes a label (no-op if absent)."""
        self._remove_label(self._repo(full_name), number, name, self._know(actor))

    def set_permission(self, full_name: str, login: str, permission: str) -> None:
        if permission not in LEGACY_PERMISSION:
            raise ValueError(f"unknown permission {permission!r}")
        self._know(login)
        self._repo(full_name).permissions[login.lower()] = permission

    # ---- inspection -----------------------------------------------------------------------

    def has_repo(self, full_name: str) -> bool:
        return full_name.lower() in self._repos

    @property
    def repos(self) -> dict[str, dict[str, Any]]:
        """Full name -> repository JSON, for every repository added (forks included)."""
        return {repo.full_name: repo.json for repo in self._repos.values()}

    def comments(self, full_name: str, number: int) -> list[dict[str, Any]]:
        repo = self._repo(full_name)
        return [c.json for c in self._comments.values() if c.repo is repo and c.number == number]

    def issue_labels(self, full_name: str, number: int) -> list[str]:
        return [label["name"] for label in self._item(self._repo(full_name), number)["labels"]]

    def repo_labels(self, full_name: str) -> dict[str, dict[str, Any]]:
        return {label["name"]: label for label in self._repo(full_name).labels.values()}

    def issues(self, full_name: str) -> list[dict[str, Any]]:
        """Every issue and PR, as issue JSON, oldest first."""
        repo = self._repo(full_name)
        return [self._issue_json(repo, item) for item in repo.items.values()]

    def pull(self, full_name: str, number: int) -> dict[str, Any]:
        """The live PR object: mutate it (head.sha, merge_commit_sha, draft, state...) to move the PR on."""
        return self._item(self._repo(full_name), number, pull=True)

    def pull_files(self, full_name: str, number: int) -> list[dict[str, Any]]:
        """The live list behind pulls/{n}/files."""
        repo = self._repo(full_name)
        self._item(repo, number, pull=True)
        return repo.pull_files[number]

    def events(self, full_name: str, number: int) -> list[dict[str, Any]]:
        return list(self._repo(full_name).events.get(number, []))

    def reactions(self, comment_id: int) -> list[str]:
        comment = self._comments.get(comment_id)
        return [r["content"] for r in comment.reactions] if comment else []

    # ---- webhook payloads -----------------------------------------------------------------

    def _envelope(self, repo: _Repo, sender: dict[str, Any]) -> dict[str, Any]:
        return {
            "repository": copy.deepcopy(repo.json),
            "sender": dict(sender),
            "installation": {"id": repo.installation_id},
        }

    def pull_request_payload(
        self, full_name: str, number: int, action: str, *, sender: str = "contributor", **extra: Any
    ) -> dict[str, Any]:
        repo = self._repo(full_name)
        pull = copy.deepcopy(self._item(repo, number, pull=True))
        if isinstance(extra.get("label"), str):
            name = extra["label"]
            label = self._find_label(repo, name) or {"name": name, "color": "ededed", "description": ""}
            extra["label"] = copy.deepcopy(label)
        payload = {"action": action, "number": number, "pull_request": pull}
        payload.update(self._envelope(repo, _user_json(sender)))
        payload.update(extra)
        return payload

    def issue_comment_payload(
        self,
        full_name: str,
        number: int,
        comment: dict[str, Any],
        action: str = "created",
        *,
        changes: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        repo = self._repo(full_name)
        payload = {
            "action": action,
            "issue": self._issue_json(repo, self._item(repo, number)),
            "comment": copy.deepcopy(comment),
        }
        payload.update(self._envelope(repo, comment["user"]))
        if changes is not None:
            payload["changes"] = copy.deepcopy(changes)
        return payload

    def push_payload(
        self,
        full_name: str,
        *,
        ref: str,
        after: str,
        commits: Iterable[dict[str, Any]] = (),
        sender: str = "contributor",
        before: str | None = None,
    ) -> dict[str, Any]:
        repo = self._repo(full_name)
        full_commits = [
            {
                "id": c.get("id") or _fake_sha(full_name, ref, after, i),
                "message": c.get("message", ""),
                "timestamp": c.get("timestamp") or self._stamp(),
                "author": {"name": sender, "username": sender},
                "added": list(c.get("added", ())),
                "modified": list(c.get("modified", ())),
                "removed": list(c.get("removed", ())),
            }
            for i, c in enumerate(commits)
        ]
        payload = {
            "ref": ref,
            "before": before or _fake_sha(full_name, ref, after, "before"),
            "after": after,
            "commits": full_commits,
            "head_commit": copy.deepcopy(full_commits[-1]) if full_commits else None,
            "pusher": {"name": sender},
        }
        payload.update(self._envelope(repo, _user_json(sender)))
        return payload

    # ---- routes: app ----------------------------------------------------------------------

    def _route_get_app(self, call: _Call) -> tuple[int, Any]:
        return 200, {"id": self.app_id, "slug": self.app_slug, "name": self.app_slug}

    def _route_post_access_token(self, call: _Call, id: int) -> tuple[int, Any]:
        if id not in self._installations:
            raise _Reply(404, NOT_FOUND)
        token = "ghs_" + "".join(secrets.choice(TOKEN_ALPHABET) for _ in range(36))
        expires_at = time.time() + self.token_ttl
        self._tokens[token] = _Token(self.bot_login, expires_at)
        self.tokens_issued += 1
        return 201, {"token": token, "expires_at": _iso(expires_at)}

    # ---- routes: repository, contents, pulls ----------------------------------------------

    def _route_get_repo(self, call: _Call, repo: _Repo) -> tuple[int, Any]:
        return 200, copy.deepcopy(repo.json)

    def _route_get_contents(self, call: _Call, repo: _Repo, path: str) -> tuple[int, Any]:
        ref = call.query.get("ref") or repo.json["default_branch"]
        data = repo.files.get(ref, {}).get(path.strip("/"))
        if data is None:
            raise _Reply(404, NOT_FOUND)
        return 200, {
            "type": "file",
            "encoding": "base64",
            "size": len(data),
            "name": path.rsplit("/", 1)[-1],
            "path": path.strip("/"),
            "content": _wrapped_base64(data),
            "sha": _blob_sha(data),
            "html_url": f"{repo.json['html_url']}/blob/{ref}/{path.strip('/')}",
        }

    def _route_get_pull(self, call: _Call, repo: _Repo, number: int) -> tuple[int, Any]:
        return 200, copy.deepcopy(self._item(repo, number, pull=True))

    def _route_list_pull_files(self, call: _Call, repo: _Repo, number: int) -> tuple[int, Any, dict[str, str]]:
        self._item(repo, number, pull=True)
        return self._paginate(call, copy.deepcopy(repo.pull_files[number]))

    # ---- routes: issues -------------------------------------------------------------------

    def _route_list_issues(self, call: _Call, repo: _Repo) -> tuple[int, Any, dict[str, str]]:
        state = call.query.get("state", "open")
        wanted = {n.strip().casefold() for n in call.query.get("labels", "").split(",") if n.strip()}
        items = [
            item
            for item in repo.items.values()
            if state in ("all", item["state"]) and wanted <= {label["name"].casefold() for label in item["labels"]}
        ]
        if call.query.get("direction", "desc") != "asc":
            items.reverse()  # GitHub's default: newest first
        return self._paginate(call, [self._issue_json(repo, item) for item in items])

    def _route_post_issue(self, call: _Call, repo: _Repo) -> tuple[int, Any]:
        body = call.body if isinstance(call.body, dict) else {}
        if not body.get("title"):
            raise _invalid("Issue", "missing_field", "title")
        item = self._new_item(repo, None, body["title"], body.get("body") or "", call.actor["login"])
        item["user"] = dict(call.actor)
        item["author_association"] = self._association(repo, call.actor)
        for name in body.get("labels") or ():
            self._apply_label(repo, item["number"], name if isinstance(name, str) else name["name"], call.actor)
        return 201, self._issue_json(repo, item)

    def _route_get_issue(self, call: _Call, repo: _Repo, number: int) -> tuple[int, Any]:
        return 200, self._issue_json(repo, self._item(repo, number))

    def _route_patch_issue(self, call: _Call, repo: _Repo, number: int) -> tuple[int, Any]:
        item = self._item(repo, number)
        body = call.body if isinstance(call.body, dict) else {}
        if "state" in body and body["state"] not in ("open", "closed"):
            raise _invalid("Issue", "invalid", "state")
        stamp = self._stamp()
        if body.get("state") and body["state"] != item["state"]:
            item["state"] = body["state"]
            item["closed_at"] = stamp if body["state"] == "closed" else None
        for key in ("title", "body"):
            if key in body:
                item[key] = body[key]
        item["updated_at"] = stamp
        return 200, self._issue_json(repo, item)

    # ---- routes: comments and reactions ---------------------------------------------------

    def _route_list_comments(self, call: _Call, repo: _Repo, number: int) -> tuple[int, Any, dict[str, str]]:
        self._item(repo, number)
        return self._paginate(call, copy.deepcopy(self.comments(repo.full_name, number)))

    def _route_post_comment(self, call: _Call, repo: _Repo, number: int) -> tuple[int, Any]:
        body = call.body.get("body") if isinstance(call.body, dict) else None
        if not body:
            raise _invalid("IssueComment", "missing_field", "body")
        association = self._association(repo, call.actor)
        return 201, copy.deepcopy(self._new_comment(repo, number, body, dict(call.actor), association, None))

    def _route_get_comment(self, call: _Call, repo: _Repo, id: int) -> tuple[int, Any]:
        return 200, copy.deepcopy(self._comment(repo, id).json)

    def _route_patch_comment(self, call: _Call, repo: _Repo, id: int) -> tuple[int, Any]:
        comment = self._comment(repo, id)
        body = call.body.get("body") if isinstance(call.body, dict) else None
        if not body:
            raise _invalid("IssueComment", "missing_field", "body")
        comment.json.update(body=body, updated_at=self._stamp())
        return 200, copy.deepcopy(comment.json)

    def _route_delete_comment(self, call: _Call, repo: _Repo, id: int) -> tuple[int, Any]:
        self._comment(repo, id)
        del self._comments[id]
        return 204, None

    def _route_list_reactions(self, call: _Call, repo: _Repo, id: int) -> tuple[int, Any, dict[str, str]]:
        reactions = self._comment(repo, id).reactions
        wanted = call.query.get("content")
        return self._paginate(call, copy.deepcopy([r for r in reactions if wanted in (None, r["content"])]))

    def _route_post_reaction(self, call: _Call, repo: _Repo, id: int) -> tuple[int, Any]:
        comment = self._comment(repo, id)
        content = call.body.get("content") if isinstance(call.body, dict) else None
        if content is None:
            raise _invalid("Reaction", "missing_field", "content")
        if content not in REACTIONS:
            raise _invalid("Reaction", "invalid", "content")
        for reaction in comment.reactions:
            if reaction["content"] == content and reaction["user"]["login"] == call.actor["login"]:
                return 200, copy.deepcopy(reaction)
        reaction = {"id": self._next_id(), "user": dict(call.actor), "content": content, "created_at": self._stamp()}
        comment.reactions.append(reaction)
        return 201, copy.deepcopy(reaction)

    def _route_delete_reaction(self, call: _Call, repo: _Repo, id: int, rid: int) -> tuple[int, Any]:
        comment = self._comment(repo, id)
        for reaction in comment.reactions:
            if reaction["id"] == rid:
                comment.reactions.remove(reaction)
                return 204, None
        raise _Reply(404, NOT_FOUND)

    # ---- routes: labels and events --------------------------------------------------------

    def _route_list_issue_labels(self, call: _Call, repo: _Repo, number: int) -> tuple[int, Any, dict[str, str]]:
        return self._paginate(call, copy.deepcopy(self._item(repo, number)["labels"]))

    def _route_post_issue_labels(self, call: _Call, repo: _Repo, number: int) -> tuple[int, Any]:
        item = self._item(repo, number)
        names = call.body.get("labels") if isinstance(call.body, dict) else call.body
        if not isinstance(names, list):
            raise _invalid("Label", "missing_field", "labels")
        for name in names:
            self._apply_label(repo, number, name if isinstance(name, str) else name["name"], call.actor)
        return 200, copy.deepcopy(item["labels"])

    def _route_delete_issue_label(self, call: _Call, repo: _Repo, number: int, name: str) -> tuple[int, Any]:
        if not self._remove_label(repo, number, name, call.actor):
            raise _Reply(404, {"message": "Label does not exist"})
        return 200, copy.deepcopy(self._item(repo, number)["labels"])

    def _route_list_events(self, call: _Call, repo: _Repo, number: int) -> tuple[int, Any, dict[str, str]]:
        self._item(repo, number)
        return self._paginate(call, copy.deepcopy(repo.events.get(number, [])))

    def _route_get_label(self, call: _Call, repo: _Repo, name: str) -> tuple[int, Any]:
        label = self._find_label(repo, name)
        if label is None:
            raise _Reply(404, NOT_FOUND)
        return 200, copy.deepcopy(label)

    def _route_post_label(self, call: _Call, repo: _Repo) -> tuple[int, Any]:
        body = call.body if isinstance(call.body, dict) else {}
        if not body.get("name"):
            raise _invalid("Label", "missing_field", "name")
        if self._find_label(repo, body["name"]) is not None:
            raise _invalid("Label", "already_exists", "name")
        label = self._new_label(repo, body["name"], body.get("color") or "ededed", body.get("description") or "")
        return 201, copy.deepcopy(label)

    # ---- routes: permissions --------------------------------------------------------------

    def _route_get_permission(self, call: _Call, repo: _Repo, user: str) -> tuple[int, Any]:
        role = repo.permissions.get(user.lower())
        if role is None:
            known = user.lower() in self._known_users and not repo.json["private"]
            role = "read" if known else "none"
        return 200, {"permission": LEGACY_PERMISSION[role], "role_name": role, "user": _user_json(user)}


def _method(method: str | None) -> str | None:
    return method.upper() if method else None
