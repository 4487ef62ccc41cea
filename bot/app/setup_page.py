"""`sweepbot setup`: a local page that registers the App through GitHub's manifest flow and writes its env file."""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import os
import re
import secrets
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import httpx
import jinja2
from aiohttp import web
from dotenv import dotenv_values

from bot.core.config import DEFAULT_API_URL, load_app_yaml
from bot.core.templates import DEFAULT_DIRECTORY
from bot.github.client import http_timeout

DEFAULT_PORT = 3001  # beside `sweepbot serve`'s 3000, so the two never ask for the same port
DEFAULT_HOST = "127.0.0.1"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")  # where the page may listen: the names its Host may carry
DEFAULT_GITHUB_URL = "https://github.com"
DEFAULT_ENV_FILE = ".env"
PAGE_TEMPLATE = "setup_page.{language}.html.j2"
LANGUAGES = ("en", "zh")
PLACEHOLDER_HOST = "sweepbot.example.invalid"  # app.yaml's stand-in for the bot's public address
ATTEMPT_TTL = 3600.0  # GitHub's code lives an hour; an attempt older than that cannot finish
CONVERSION_TIMEOUT = 30.0  # seconds the code's exchange may take
CREDENTIAL_KEYS = ("APP_ID", "PRIVATE_KEY", "PRIVATE_KEY_PATH", "WEBHOOK_SECRET", "WEBHOOK_URL", "GITHUB_API_URL")
# GitHub's rules for account and repository names
_ORG_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?")
_REPOSITORY = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}")
# What the page has a sentence for: the form's problems and the callback's errors
PROBLEMS = (
    "account_bad",
    "org_missing",
    "org_bad",
    "github_missing",
    "github_bad",
    "webhook_missing",
    "webhook_not_https",
    "webhook_bad",
    "results_bad",
)
ERRORS = ("state", "code", "expired", "network", "answer", "address", "origin", "token")
HOLDS_APP_ID = "holds-app-id"  # Saved.problem when the env file got an APP_ID meanwhile (the page says so)
_ENV_KEY = re.compile(r"\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=")
# The Host a page on this machine is opened at: a loopback name, then the port (absent only for 80)
_LOOPBACK_HOST = re.compile(r"(127\.0\.0\.1|localhost|\[::1\])(?::([0-9]{1,5}))?", re.IGNORECASE)
HEADERS = {  # every answer: never cached, no address in a Referer to another site, never in another site's frame
    "Cache-Control": "no-store",
    "Referrer-Policy": "same-origin",  # not no-referrer: with it, a browser sends `Origin: null` on the page's POSTs
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
}


# ---- the manifest (also `sweepbot manifest`) -------------------------------------------------


def build_manifest(
    webhook_url: str | None = None, *, redirect_url: str | None = None, url: str | None = None
) -> dict[str, Any]:
    """app.yaml's manifest. `webhook_url` sets hook_attributes.url, and every URL of app.yaml's on the placeholder
    host (redirect_url; url is the homepage, a real one) moves to the webhook URL's origin; `redirect_url` and
    `url`, when given, are used as they are."""
    data = load_app_yaml()["manifest"]
    if webhook_url:
        data["hook_attributes"]["url"] = webhook_url
        origin = _origin(webhook_url)
        for key in ("redirect_url", "url"):
            if urlsplit(data.get(key) or "").hostname == PLACEHOLDER_HOST:
                data[key] = origin + (urlsplit(data[key]).path or "/")
    if redirect_url:
        data["redirect_url"] = redirect_url
    if url:
        data["url"] = url
    return data


def _origin(address: str) -> str:
    parts = urlsplit(address)
    return f"{parts.scheme}://{parts.netloc}"


def webhook_url_problem(address: str) -> str | None:
    """Why `address` cannot be the App's webhook URL (a problem code the page has a sentence for), or None."""
    if not address.strip():
        return "webhook_missing"
    try:
        parts = urlsplit(address.strip())
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return "webhook_bad"
    if parts.scheme != "https":
        return "webhook_not_https"
    if not parts.hostname or parts.username or parts.password or parts.fragment or " " in address.strip():
        return "webhook_bad"
    return None


def github_url_problem(address: str) -> str | None:
    """Why `address` is not a GitHub web URL (https; http only on loopback, for a local fake), or None."""
    try:
        parts = urlsplit(address.strip())
        parts.port  # noqa: B018
    except ValueError:
        return "github_bad"
    if not parts.hostname or parts.username or parts.query or parts.fragment or parts.path.strip("/"):
        return "github_bad"
    if parts.scheme == "https" or (parts.scheme == "http" and _loopback(parts.hostname)):
        return None
    return "github_bad"


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def api_url_for(github_url: str, override: str | None = None) -> str:
    """The REST base of a GitHub: GITHUB_API_URL when set, api.github.com for github.com, else HOST/api/v3."""
    if override:
        return override.rstrip("/")
    if urlsplit(github_url).hostname == "github.com":
        return DEFAULT_API_URL
    return github_url.rstrip("/") + "/api/v3"


def results_repository_default() -> str:
    """The results repository of app.yaml's policy, if it names one."""
    results = load_app_yaml().get("policy", {}).get("results") or {}
    return str(results.get("repository") or "")


# ---- the env file -----------------------------------------------------------------------------


def env_file_app_id(path: Path) -> str | None:
    """The APP_ID the env file at `path` holds (None when it holds none, or there is no file)."""
    if not path.is_file():
        return None
    return dotenv_values(path).get("APP_ID") or None


def env_text(values: dict[str, str], *, comment: str) -> str:
    """KEY="value" lines python-dotenv reads back (the PEM as one double-quoted multi-line value)."""
    lines = [f"# {comment}"]
    for key, value in values.items():
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        lines.append(f'{key}="{escaped}"')
    return "\n".join(lines) + "\n"


def write_private(path: Path, text: str) -> None:
    """Write `text` to `path` atomically: a temp file in the same folder, mode 0600 from creation, then renamed."""
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def _kept_lines(path: Path) -> str:
    """An existing env file's lines, without the keys setup writes (single-line entries): the operator's other
    settings stay."""
    if not path.is_file():
        return ""
    kept = [
        line
        for line in path.read_text(encoding="utf-8").splitlines()
        if not ((m := _ENV_KEY.match(line)) and m[1] in CREDENTIAL_KEYS)
    ]
    text = "\n".join(kept).strip("\n")
    return text + "\n\n" if text else ""


@dataclasses.dataclass
class Saved:
    """Where the credentials went: `path` (the env file, or a fallback file beside it or in the temp folder), the
    reason the env file was not used (`problem`), and `text` itself when no file could be written at all."""

    path: Path | None
    problem: str | None = None
    text: str | None = None


def save_credentials(env_file: Path, values: dict[str, str], comment: str) -> Saved:
    """The env file, else a new 0600 file beside it, else one in the temp folder, else nowhere (the text is
    returned to show): GitHub shows the private key only once, so it is never dropped."""
    block = env_text(values, comment=comment)
    problem: str | None = None
    if env_file_app_id(env_file) is not None:
        problem = HOLDS_APP_ID
    else:
        try:
            write_private(env_file, _kept_lines(env_file) + block)
            return Saved(env_file)
        except (OSError, UnicodeDecodeError) as exc:
            problem = getattr(exc, "strerror", None) or str(exc)
    beside = env_file.with_name(f"{env_file.name}.app-{values['APP_ID']}")
    try:
        write_private(beside, block)
        return Saved(beside, problem)
    except OSError:
        pass
    try:
        fd, name = tempfile.mkstemp(prefix=f"sweepbot-app-{values['APP_ID']}-", suffix=".env")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(block)
        return Saved(Path(name), problem)
    except OSError:
        return Saved(None, problem, block)


# ---- the page -----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class SetupOptions:
    env_file: Path
    webhook_url: str = ""
    github_url: str = DEFAULT_GITHUB_URL
    results_repository: str = ""
    api_url: str | None = None  # GITHUB_API_URL when set: the conversion goes there, whatever the GitHub URL
    on_saved: Any = None  # called with (app JSON, Saved) after a registration: the CLI says where it went


@dataclasses.dataclass
class Attempt:
    """One press of the button: what the form said, until GitHub sends the browser back with the state."""

    github_url: str
    api_url: str
    org: str | None
    webhook_url: str
    results_repository: str
    language: str
    created: float = dataclasses.field(default_factory=time.monotonic)


def _environment() -> jinja2.Environment:
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(DEFAULT_DIRECTORY),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.globals["fail"] = _fail
    return environment


def _fail(message: str) -> None:
    """Stop rendering: the page reached a case it has no sentence for."""
    raise jinja2.UndefinedError(message)


def served_host(request: web.Request) -> str | None:
    """The request's Host when it names this page on this machine: 127.0.0.1, localhost or [::1] with the port the
    connection came in on, from a loopback address; else None. It is what a DNS-rebinding page cannot send: its
    Host is its own name."""
    listening = _listening(request)
    if listening is None or not _loopback_peer(request.remote):
        return None
    match = _LOOPBACK_HOST.fullmatch(request.headers.get("Host", ""))
    if match is None or int(match[2] or 80) != listening[1]:
        return None
    return match[0].lower()


def _listening(request: web.Request) -> tuple[str, int] | None:
    """The address and port the request's connection came in on."""
    sockname = request.transport.get_extra_info("sockname") if request.transport is not None else None
    if not isinstance(sockname, tuple) or len(sockname) < 2:
        return None
    return str(sockname[0]), int(sockname[1])


def _loopback_peer(address: str | None) -> bool:
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return False
    return ip.is_loopback or bool(
        isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped and ip.ipv4_mapped.is_loopback
    )


def language_of(request: web.Request) -> str:
    """?lang= when it names one; else the first of Accept-Language's languages (by q) that is zh or en."""
    asked = request.query.get("lang")
    if asked in LANGUAGES:
        return asked
    ranked = []
    for index, part in enumerate(request.headers.get("Accept-Language", "").split(",")):
        tag, _, params = part.strip().partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                q = 0.0
        ranked.append((-q, index, tag.strip().lower()))
    for _, _, tag in sorted(ranked):
        primary = tag.split("-")[0]
        if primary in LANGUAGES:
            return primary
    return "en"


class SetupPage:
    """The aiohttp app of `sweepbot setup`: GET / (the form), POST /register (the confirmation, whose button goes to
    GitHub), GET /callback. Only for this machine's browser (`served_host`); a POST only from the page itself."""

    def __init__(self, options: SetupOptions) -> None:
        self.options = options
        self.token = secrets.token_urlsafe(24)  # in every form of this run's pages; another site cannot read it
        self.attempts: dict[str, Attempt] = {}
        self.finished: dict[str, dict[str, Any]] = {}  # state -> the done page's values: a reload shows it again
        self.templates = _environment()
        self.app = web.Application(middlewares=[self._guard])
        self.app.router.add_get("/", self._form)
        self.app.router.add_post("/register", self._register)
        self.app.router.add_get("/callback", self._callback)

    def _render(self, language: str, page: str, *, status: int = 200, **values: Any) -> web.Response:
        template = self.templates.get_template(PAGE_TEMPLATE.format(language=language))
        text = template.render(page=page, **values)
        return web.Response(status=status, text=text, content_type="text/html", headers=HEADERS)

    @web.middleware
    async def _guard(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """Nothing is processed for a Host or a peer off this machine (421, 403), nor for a POST without this page's
        Origin (403, the body unread) or its token (403)."""
        host = served_host(request)
        if host is None:
            address, port = _listening(request) or (DEFAULT_HOST, DEFAULT_PORT)
            shown = f"[{address}]" if ":" in address else address
            return self._render(
                language_of(request),
                "error",
                status=421 if _loopback_peer(request.remote) else 403,
                error="address",
                home=f"http://{shown}:{port}/",
            )
        home = f"http://{host}/"
        if request.method == "POST":
            if (request.headers.get("Origin") or "").lower() != f"http://{host}":
                return self._render(language_of(request), "error", status=403, error="origin", home=home)
            form = await request.post()
            if not secrets.compare_digest(str(form.get("token", "")).encode(), self.token.encode()):
                return self._render(language_of(request), "error", status=403, error="token", home=home)
        return await handler(request)

    async def _form(self, request: web.Request) -> web.Response:
        github_url = self.options.github_url.rstrip("/")
        enterprise = urlsplit(github_url).hostname != "github.com"
        return self._render(
            language_of(request),
            "form",
            problems=[],
            token=self.token,
            values={
                "account": "personal",
                "org": "",
                "github": "enterprise" if enterprise else "com",
                "enterprise_url": github_url if enterprise else "",
                "webhook_url": self.options.webhook_url,
                "results_repository": self.options.results_repository,
            },
        )

    async def _register(self, request: web.Request) -> web.Response:
        form = await request.post()
        values = {
            key: str(form.get(key, "")).strip()
            for key in ("account", "org", "github", "enterprise_url", "webhook_url", "results_repository", "lang")
        }
        language = values["lang"] if values["lang"] in LANGUAGES else language_of(request)
        problems = []
        org = values["org"] if values["account"] == "org" else None
        if values["account"] not in ("personal", "org"):
            problems.append("account_bad")
        elif org is not None and not _ORG_NAME.fullmatch(org):
            problems.append("org_missing" if not org else "org_bad")
        github_url = DEFAULT_GITHUB_URL if values["github"] != "enterprise" else values["enterprise_url"].rstrip("/")
        if values["github"] == "enterprise" and github_url_problem(github_url):
            problems.append("github_missing" if not github_url else "github_bad")
        if problem := webhook_url_problem(values["webhook_url"]):
            problems.append(problem)
        if values["results_repository"] and not _REPOSITORY.fullmatch(values["results_repository"]):
            problems.append("results_bad")
        if problems:
            return self._render(language, "form", status=400, problems=problems, token=self.token, values=values)
        parts = urlsplit(github_url)
        github_url = f"{parts.scheme}://{parts.netloc.lower()}"
        self._prune()
        state = secrets.token_urlsafe(24)
        attempt = Attempt(
            github_url,
            api_url_for(github_url, self.options.api_url),
            org,
            values["webhook_url"],
            values["results_repository"],
            language,
        )
        self.attempts[state] = attempt
        where = f"/organizations/{org}/settings/apps/new" if org else "/settings/apps/new"
        # the Host the guard let through (a loopback name and this port), never one a request merely says
        manifest = build_manifest(values["webhook_url"], redirect_url=f"http://{served_host(request)}/callback")
        return self._render(
            language,
            "confirm",
            github_url=github_url,
            org=org,
            api_url=attempt.api_url,
            enterprise=urlsplit(github_url).hostname != "github.com",
            webhook_url=attempt.webhook_url,
            results_repository=attempt.results_repository,
            action=github_url + where + "?" + urlencode({"state": state}),
            manifest=json.dumps(manifest),
        )

    async def _callback(self, request: web.Request) -> web.Response:
        state = request.query.get("state", "")
        if state in self.finished:
            return self._render(language_of(request), "done", **self.finished[state])
        attempt = self.attempts.get(state) if state else None
        if attempt is None or time.monotonic() - attempt.created > ATTEMPT_TTL:
            return self._render(language_of(request), "error", status=400, error="state")
        asked = request.query.get("lang", "")
        language = asked if asked in LANGUAGES else attempt.language
        code = request.query.get("code", "")
        if not code or "/" in code:
            return self._render(language, "error", status=400, error="code")
        del self.attempts[state]  # taken before the code is sent: a second callback with it meanwhile is refused
        try:
            async with httpx.AsyncClient(timeout=http_timeout(CONVERSION_TIMEOUT), trust_env=False) as client:
                resp = await client.post(
                    f"{attempt.api_url}/app-manifests/{code}/conversions",
                    headers={"Accept": "application/vnd.github+json"},
                )
        except httpx.HTTPError as exc:  # the code may still be good: the attempt is given back, the page offers a retry
            self.attempts[state] = attempt
            return self._render(
                language,
                "error",
                status=502,
                error="network",
                api_url=attempt.api_url,
                detail=type(exc).__name__,
                retry=str(request.rel_url),
            )
        if resp.status_code in (404, 422):
            return self._render(language, "error", status=400, error="expired")
        try:
            app = resp.json() if resp.status_code == 201 else None
            if not isinstance(app, dict):
                raise TypeError("the conversion did not answer 201 with an object")
            values = _credentials(app, attempt)
        except (ValueError, KeyError, TypeError):
            return self._render(
                language, "error", status=502, error="answer", api_url=attempt.api_url, detail=str(resp.status_code)
            )
        saved = save_credentials(
            self.options.env_file,
            values,
            comment=f"sweepbot setup, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}: "
            f"the GitHub App {app.get('name')} ({app['html_url']})",
        )
        if self.options.on_saved is not None:
            self.options.on_saved(app, saved)
        env_file = self.options.env_file
        self.finished[state] = dict(
            app_name=str(app.get("name") or app.get("slug") or ""),
            html_url=app["html_url"],
            install_url=app["html_url"].rstrip("/") + "/installations/new",
            owner=str((app.get("owner") or {}).get("login") or ""),
            results_repository=attempt.results_repository,
            results_default=self.options.results_repository,
            env_file=str(env_file),
            env_is_served=env_file.resolve() == (Path.cwd() / DEFAULT_ENV_FILE).resolve(),
            saved_path=str(saved.path) if saved.path else None,
            save_problem=saved.problem,
            saved_text=saved.text,
        )
        return self._render(language, "done", **self.finished[state])

    def _prune(self) -> None:
        now = time.monotonic()
        for state in [s for s, a in self.attempts.items() if now - a.created > ATTEMPT_TTL]:
            del self.attempts[state]


def _credentials(app: Mapping[str, Any], attempt: Attempt) -> dict[str, str]:
    """The env file's values from the conversion's answer (KeyError/TypeError when it lacks one)."""
    values = {
        "APP_ID": str(int(app["id"])),
        "PRIVATE_KEY": _str(app["pem"]),
        "WEBHOOK_SECRET": _str(app["webhook_secret"]),
        "WEBHOOK_URL": attempt.webhook_url,
    }
    _str(app["html_url"])
    if attempt.api_url != DEFAULT_API_URL:
        values["GITHUB_API_URL"] = attempt.api_url
    return values


def _str(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise TypeError("expected a non-empty string")
    return value
