"""The fake's data: recorded requests, per-repository state, early answers and small pure helpers."""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import hashlib
import json
import re
import string
from typing import Any

import httpx
import jwt
import yaml

RATE_LIMIT = 5000
CLOCK_START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
NOT_FOUND = {"message": "Not Found"}
TOKEN_ALPHABET = string.ascii_letters + string.digits
DOCS = "https://docs.github.com/rest"

# GitHub's own limits, enforced by the routes (and by the seeding helpers, which raise ValueError).
LABEL_NAME_MAX = 50
LABEL_DESCRIPTION_MAX = 100
BODY_MAX = 65536  # issue and comment bodies
CONTENTS_MAX = 1024 * 1024  # above this the contents API leaves `content` empty (encoding "none")
CHECK_TEXT_MAX = 65535  # check run output.summary and output.text
HEX_COLOR = re.compile(r"[0-9a-fA-F]{6}")


@dataclasses.dataclass(frozen=True)
class RecordedRequest:
    """One request the fake answered. status 0 means a transport error was raised instead.

    `route_status` is set for a fault injected after the commit (`fail_after_commit`, `raise_after_commit`):
    the status the route answered, i.e. GitHub acted, before the client was given `status` (or an exception).
    """

    method: str
    path: str
    query: dict[str, str]
    json: Any
    status: int
    token: str | None
    route_status: int | None = None
    at: float = dataclasses.field(default=0.0, compare=False)  # time.time() when the fake recorded it


class Reply(Exception):
    """Raised inside a route to answer early (404, 422, ...)."""

    def __init__(self, status: int, body: Any = None) -> None:
        super().__init__(status)
        self.status, self.body = status, body


def invalid(
    resource: str, code: str, field: str, *, doc: str = "", message: str | None = None, value: Any = None
) -> Reply:
    """GitHub's 422 for a model validation: {"message": "Validation Failed", "errors": [...]}."""
    error: dict[str, Any] = {"resource": resource, "code": code, "field": field}
    if message is not None:
        error["message"] = message
    if value is not None:
        error["value"] = value
    body: dict[str, Any] = {"message": "Validation Failed", "errors": [error]}
    if doc:
        body["documentation_url"] = f"{DOCS}/{doc}"
    return Reply(422, body)


def unprocessable(message: str, *, doc: str = "") -> Reply:
    """GitHub's 422 without an errors list, as the schema-validated endpoints (checks, dispatches) answer."""
    body: dict[str, Any] = {"message": message}
    if doc:
        body["documentation_url"] = f"{DOCS}/{doc}"
    return Reply(422, body)


def not_supplied(*fields: str, doc: str = "") -> Reply:
    names = ", ".join(json.dumps(f) for f in fields)
    verb = "wasn't" if len(fields) == 1 else "weren't"
    return unprocessable(f"Invalid request.\n\n{names} {verb} supplied.", doc=doc)


def too_long(resource: str, field: str, limit: int, *, doc: str = "") -> Reply:
    return invalid(resource, "custom", field, doc=doc, message=f"{field} is too long (maximum is {limit} characters)")


def label_problem(name: Any, color: Any = None, description: Any = None) -> tuple[str, str, str | None] | None:
    """(code, field, message) of the first reason GitHub refuses this label, or None."""
    if not isinstance(name, str) or not name.strip():
        return "missing_field", "name", None
    if len(name) > LABEL_NAME_MAX:
        return "custom", "name", f"name is too long (maximum is {LABEL_NAME_MAX} characters)"
    if color is not None and (not isinstance(color, str) or not HEX_COLOR.fullmatch(color)):
        return "invalid", "color", None
    if description is not None:
        if not isinstance(description, str):
            return "invalid", "description", None
        if len(description) > LABEL_DESCRIPTION_MAX:
            return "custom", "description", f"description is too long (maximum is {LABEL_DESCRIPTION_MAX} characters)"
    return None


def check_label(name: Any, color: Any = None, description: Any = None) -> None:
    """For the seeding helpers: a ValueError where GitHub would answer 422."""
    problem = label_problem(name, color, description)
    if problem is not None:
        code, field, message = problem
        raise ValueError(f"GitHub would refuse label {name!r}: {field} {message or code}")


def check_body(body: Any, what: str = "body") -> None:
    if isinstance(body, str) and len(body) > BODY_MAX:
        raise ValueError(f"GitHub would refuse this {what}: {len(body)} characters, at most {BODY_MAX}")


@dataclasses.dataclass
class Token:
    login: str
    expires_at: float | None  # None: never (tokens from add_token)
    installation_id: int | None = None  # None: a user's token (add_token)


@dataclasses.dataclass
class Workflow:
    id: int
    file: str
    name: str
    inputs: dict[str, dict[str, Any]]  # input name -> {"required": bool, "default": ...}
    run_name: str | None  # a `run-name:` template: `${{ inputs.NAME }}` is replaced

    def file_text(self) -> str:
        """The workflow's file in .github/workflows on the default branch, as far as the registration says: its
        name, run-name and `on.workflow_dispatch.inputs` (each input a string unless its spec gives a type)."""
        inputs = {
            name: {"description": name, "required": bool(spec.get("required", False))}
            | {"type": spec.get("type", "string")}
            | ({"default": spec["default"]} if "default" in spec else {})
            | ({"options": list(spec["options"])} if "options" in spec else {})
            for name, spec in self.inputs.items()
        }
        document: dict[str, Any] = {"name": self.name} | ({"run-name": self.run_name} if self.run_name else {})
        document |= {"on": {"workflow_dispatch": {"inputs": inputs}}, "jobs": {"run": {"runs-on": "ubuntu-latest"}}}
        return yaml.safe_dump(document, sort_keys=False)


@dataclasses.dataclass
class Repo:
    json: dict[str, Any]
    installation_id: int | None
    files: dict[str, dict[str, bytes]] = dataclasses.field(default_factory=dict)  # ref -> path -> bytes
    labels: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)  # casefolded name -> label
    items: dict[int, dict[str, Any]] = dataclasses.field(default_factory=dict)  # number -> issue or PR JSON
    pull_files: dict[int, list[dict[str, Any]]] = dataclasses.field(default_factory=dict)
    pull_commits: dict[int, list[dict[str, Any]]] = dataclasses.field(default_factory=dict)  # oldest first
    pushed_at: dict[str, str] = dataclasses.field(default_factory=dict)  # commit sha -> when it was pushed
    head_before: dict[int, str] = dataclasses.field(default_factory=dict)  # PR -> its head before the last push
    events: dict[int, list[dict[str, Any]]] = dataclasses.field(default_factory=dict)
    permissions: dict[str, str] = dataclasses.field(default_factory=dict)  # lowercased login -> role
    branches: dict[str, str] = dataclasses.field(default_factory=dict)  # branch name -> head sha
    workflows: dict[str, Workflow] = dataclasses.field(default_factory=dict)  # file name -> workflow
    runs: dict[int, dict[str, Any]] = dataclasses.field(default_factory=dict)  # run id -> run JSON
    run_inputs: dict[int, dict[str, Any]] = dataclasses.field(default_factory=dict)
    artifacts: dict[int, list[dict[str, Any]]] = dataclasses.field(default_factory=dict)  # run id -> artifacts
    jobs: dict[int, list[dict[str, Any]]] = dataclasses.field(default_factory=dict)  # run id -> jobs, every attempt
    check_runs: dict[int, dict[str, Any]] = dataclasses.field(default_factory=dict)
    annotations: dict[int, list[dict[str, Any]]] = dataclasses.field(default_factory=dict)  # check run id -> notes
    merge_commits: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # a PR's merge commit -> parents
    reviews: dict[int, tuple[int, dict[str, Any]]] = dataclasses.field(default_factory=dict)  # id -> (PR, review)
    review_comments: dict[int, dict[str, Any]] = dataclasses.field(default_factory=dict)  # id -> comment
    dispatches: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # repository_dispatch bodies
    parents: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # commit sha -> parent shas (history)
    path_history: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # path -> commits, newest first
    submodules: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)  # ref -> path -> gitlink sha
    next_number: int = 1

    @property
    def full_name(self) -> str:
        return self.json["full_name"]


@dataclasses.dataclass
class Comment:
    repo: Repo
    number: int
    json: dict[str, Any]
    reactions: list[dict[str, Any]] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Injection:
    """A fault: answered instead of the route (before) or in place of the route's answer (after_commit)."""

    method: str | None
    pattern: re.Pattern[str]
    times: int
    status: int = 0
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    body: Any = None
    exc: BaseException | None = None
    after_commit: bool = False

    def matches(self, method: str, path: str) -> bool:
        return self.method in (None, "*", method) and self.pattern.search(path) is not None


@dataclasses.dataclass
class Call:
    """What a route method gets to look at: the request, its query and body, and who sent it."""

    request: httpx.Request
    query: dict[str, str]
    body: Any
    actor: dict[str, Any] | None

    @property
    def fields(self) -> dict[str, Any]:
        return self.body if isinstance(self.body, dict) else {}

    @property
    def user(self) -> dict[str, Any]:
        """`actor`, on a route an installation's token reaches (only the App's own routes have no actor)."""
        assert self.actor is not None
        return self.actor


def user_json(login: str, type_: str | None = None) -> dict[str, Any]:
    uid = int(hashlib.sha1(login.lower().encode()).hexdigest()[:8], 16)
    kind = type_ or ("Bot" if login.endswith("[bot]") else "User")
    return {"login": login, "id": uid, "type": kind}


def fake_sha(*parts: object) -> str:
    return hashlib.sha1("\0".join(map(str, parts)).encode()).hexdigest()


def blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def wrapped_base64(data: bytes) -> str:
    encoded = base64.b64encode(data).decode("ascii")
    return "".join(encoded[i : i + 60] + "\n" for i in range(0, len(encoded), 60))


def to_int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def iso(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def credentials(request: httpx.Request) -> tuple[str | None, str | None]:
    scheme, _, value = request.headers.get("authorization", "").strip().partition(" ")
    if not value.strip():
        return None, None
    return scheme.lower(), value.strip()


def json_body(request: httpx.Request) -> Any:
    try:
        raw = request.content
    except httpx.RequestNotRead:
        raw = request.read()
    return json.loads(raw) if raw else None


def jwt_has_issuer(token: str) -> bool:
    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        return False
    return bool(claims.get("iss"))


def upper(method: str | None) -> str | None:
    return method.upper() if method else None
