"""`sweepbot doctor`: is this install able to work? Read-only checks against GitHub, one line each (✅ or ❌, and
for a ❌ the fix on the line below), and the credentials check `serve` makes before it listens."""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO
from urllib.parse import urlsplit

import gidgethub
import httpx
import yaml

from bot.core.config import REPO_CONFIG_PATH, ConfigError, default_policy, load_app_yaml, parse_repo_config
from bot.core.templates import Templates
from bot.github.client import GitHubApp, get_or_none
from bot.rules.gate import DISPATCH_INPUTS, FORK_INPUTS
from bot.rules.install_check import (
    InputProblem,
    expected_webhook,
    failed_deliveries,
    input_problems,
    missing_events,
    missing_permissions,
    same_webhook,
)
from bot.rules.policy import Policy
from handlers.signoff import JUDGE_INPUTS

DELIVERIES_LOOKED_AT = 100  # the newest webhook deliveries GitHub lists that doctor reads (one page)
DELIVERIES_SHOWN = 5  # failed ones named; the rest counted
CONFIG_HINTS = "_config_hint.en.j2"  # the config check's hints: the CLI speaks English
EXAMPLE_WORKFLOWS = "examples/workflows/"
MARKS = {True: "✅", False: "❌", None: "➖"}


@dataclass(frozen=True)
class Verdict:
    """The App's credentials: its JSON from GET /app, or why GitHub (or the key itself) refused them and the fix."""

    app: dict[str, Any] | None
    problem: str = ""
    fix: str = ""
    unreachable: bool = False  # no verdict: GitHub did not answer (a transport error, a 5xx)


def read_config(text: str | bytes, templates: Templates | None = None) -> Policy | list[tuple[str, str | None]]:
    """A `.github/sweepbot.yml` through the config check (`sweepbot check-config`, the bot's own): the policy,
    or each error with its hint in the CLI's words (None: no hint)."""
    try:
        return parse_repo_config(text)
    except ConfigError as exc:
        hints = (templates or Templates()).environment.get_template(CONFIG_HINTS).module
        # jinja2 sets a template's macros at run time, which mypy cannot see
        return [(str(e), hints.hint(e) if getattr(e, "hint", None) else None) for e in exc.errors]  # type: ignore[attr-defined]


async def verify_credentials(app: GitHubApp) -> Verdict:
    """Sign the App's JWT and GET /app with it: the first thing `serve` and `doctor` do. Never raises for what the
    operator must fix (a key that cannot sign, an App id GitHub does not know, a key of another App) nor for a
    GitHub that cannot be reached."""
    app_id = app.app_id
    if not app_id.isdigit():
        fix = "set APP_ID to the App ID on the App's settings page"
        return Verdict(None, f"APP_ID {app_id!r} is not a number", fix)
    try:
        app.signed_jwt()
    except Exception as exc:  # PyJWT's InvalidKeyError, cryptography's ValueError or TypeError: the key itself
        return Verdict(
            None,
            f"PRIVATE_KEY cannot sign a JWT ({type(exc).__name__}): it is not an RSA private key in PEM form",
            f"set PRIVATE_KEY (or PRIVATE_KEY_PATH) to the .pem file GitHub gave for App {app_id}",
        )
    try:
        found = await app.app_client().getitem("/app")
    except gidgethub.BadRequest as exc:
        status = int(exc.status_code)
        if status == 404:
            return Verdict(
                None,
                f"GitHub knows no App {app_id} (404 {exc})",
                "set APP_ID to the App ID on the App's settings page (GitHub Enterprise: set GITHUB_API_URL too)",
            )
        if status != 401:  # a rate limit, an Enterprise server's policy: not the key's fault
            return Verdict(
                None,
                f"GitHub answered GET /app with {status} {exc}",
                "see GitHub's message; check GITHUB_API_URL, then try again",
            )
        return Verdict(
            None,
            f"GitHub refused App {app_id}'s JWT ({status} {exc}): PRIVATE_KEY is not a key of App {app_id}",
            f"generate a private key on App {app_id}'s settings page and set PRIVATE_KEY to it; check that this"
            f" machine's clock is right",
        )
    except (gidgethub.GitHubException, httpx.HTTPError) as exc:
        return Verdict(
            None,
            f"cannot reach GitHub at {app.api_url} to verify the credentials ({type(exc).__name__}: {exc})",
            "check GITHUB_API_URL and this machine's network, then try again",
            unreachable=True,
        )
    return Verdict(found if isinstance(found, dict) else {})


@dataclass
class Installed:
    """One installation and the repositories it covers."""

    json: dict[str, Any]
    repos: list[str] = field(default_factory=list)

    @property
    def id(self) -> int:
        return int(self.json["id"])

    @property
    def name(self) -> str:
        return f"installation {self.id} ({self.json.get('account', {}).get('login', '?')})"


class Doctor:
    """The checks of one `sweepbot doctor` run, printed as they are made."""

    def __init__(self, app: GitHubApp, out: TextIO, *, repo: str | None, url: str | None):
        self.app, self.out, self.repo, self.url = app, out, repo, url
        self.failed = 0
        self.manifest = load_app_yaml()["manifest"]
        self.templates = Templates()
        self.branches: dict[str, str] = {}

    def say(self, ok: bool | None, what: str, fix: str = "") -> None:
        print(f"{MARKS[ok]} {what}", file=self.out)
        if ok is False:
            self.failed += 1
            if fix:
                print(f"   fix: {fix}", file=self.out)

    async def run(self) -> int:
        verdict = await verify_credentials(self.app)
        if verdict.app is None:
            self.say(False, f"credentials: {verdict.problem}", verdict.fix)
            return 1
        found = verdict.app
        self.say(True, f"credentials: App {found.get('slug')} (id {self.app.app_id}) signs in with its key")
        settings_url = _settings_url(found)
        self.check_app(found, settings_url)
        installed = await self.installations(found)
        await self.repositories(installed, found)
        await self.webhook(settings_url)
        return 1 if self.failed else 0

    # -- the App ---------------------------------------------------------------------------------------------

    def check_app(self, found: dict[str, Any], settings_url: str) -> None:
        wanted = self.manifest.get("default_permissions") or {}
        missing = missing_permissions(wanted, found.get("permissions") or {})
        if missing:
            self.say(
                False,
                f"permissions: the App lacks {_permissions(missing, wanted)} that app.yaml's manifest asks for",
                f"give them on {settings_url}/permissions, then accept them on each installation",
            )
        else:
            self.say(True, f"permissions: {', '.join(f'{k}: {v}' for k, v in sorted(wanted.items()))}")
        events = missing_events(self.manifest.get("default_events") or [], found.get("events") or [])
        if events:
            self.say(
                False,
                f"events: the App is not subscribed to {', '.join(events)}",
                f'tick them under "Subscribe to events" on {settings_url}/permissions',
            )
        else:
            self.say(True, f"events: {', '.join(self.manifest.get('default_events') or [])}")

    async def installations(self, found: dict[str, Any]) -> list[Installed]:
        installed = [Installed(i) async for i in self.app.app_client().getiter("/app/installations")]
        install_url = f"{found.get('html_url', '').rstrip('/')}/installations/new"
        if not installed:
            self.say(
                False,
                "installations: the App is installed nowhere",
                f"install it on the benchmark repository and the results repository: {install_url}",
            )
            return []
        # what the App has that an installation has not accepted (what the App lacks is said above)
        wanted = {
            name: level
            for name, level in (self.manifest.get("default_permissions") or {}).items()
            if not missing_permissions({name: level}, found.get("permissions") or {})
        }
        usable = []
        for one in installed:
            try:
                gh = await self.app.client(one.id)
                listing = gh.getiter("/installation/repositories", iterable_key="repositories")
                one.repos = [r["full_name"] async for r in listing]
            except (gidgethub.GitHubException, httpx.HTTPError) as exc:
                self.say(
                    False,
                    f"{one.name}: cannot list its repositories ({type(exc).__name__}: {exc})",
                    f"check the installation on {one.json.get('html_url')} (suspended?)",
                )
                continue
            usable.append(one)
        shown = [one for one in usable if self.repo is None or _covers(one, self.repo)]
        for one in shown:
            missing = missing_permissions(wanted, one.json.get("permissions") or {})
            if missing:
                self.say(
                    False,
                    f"{one.name} has not accepted {_permissions(missing, wanted)}",
                    f"an owner of {one.json.get('account', {}).get('login')} accepts the new permissions on"
                    f" {one.json.get('html_url')}",
                )
            else:
                self.say(True, f"{one.name}: {', '.join(one.repos) or 'no repository'}")
        return usable

    # -- each repository -------------------------------------------------------------------------------------

    async def repositories(self, installed: list[Installed], found: dict[str, Any]) -> None:
        covering = {name.lower(): one for one in installed for name in one.repos}
        install_url = f"{found.get('html_url', '').rstrip('/')}/installations/new"
        if self.repo is not None and self.repo.lower() not in covering:
            self.say(False, f"{self.repo}: the App is not installed on it", f"install it there: {install_url}")
            return
        names = [self.repo] if self.repo else [name for one in installed for name in one.repos]
        policies: dict[str, Policy | str] = {}
        for name in names:
            policies[name] = await self.config(name, covering[name.lower()])
        results = {(p if isinstance(p, str) else p.results.repository).lower() for p in policies.values()}
        for name, policy in policies.items():
            if name.lower() in results and self.repo is None:
                continue  # a results repository: no sweep runs there
            if isinstance(policy, str):
                self.say(None, f"{name}: its workflows and results repository are checked once its config is valid")
                continue
            one = covering[name.lower()]
            await self.workflows(name, one, policy)
            self.results(name, one, policy, covering, install_url)

    async def branch(self, gh: Any, name: str) -> str:
        """The repository's default branch, asked once."""
        if name not in self.branches:
            self.branches[name] = (await gh.getitem(f"/repos/{name}")).get("default_branch", "main")
        return self.branches[name]

    async def config(self, name: str, one: Installed) -> Policy | str:
        """The repository's policy, or (its file invalid) the results repository the file names, else the
        default's: what tells a results repository from a benchmark one."""
        gh = await self.app.client(one.id)
        branch = await self.branch(gh, name)
        file = await get_or_none(gh, f"/repos/{name}/contents/{REPO_CONFIG_PATH}?ref={branch}")
        if file is None:
            self.say(True, f"{name}: no {REPO_CONFIG_PATH} on {branch}: app.yaml's defaults apply")
            return default_policy()
        text = await _file_text(gh, name, file)
        policy = read_config(text, self.templates)
        if isinstance(policy, list):
            shown = [error + (f" (hint: {hint})" if hint else "") for error, hint in policy]
            self.say(
                False,
                f"{name}: {REPO_CONFIG_PATH} on {branch} is invalid: {'; '.join(shown)}",
                f"correct it on {branch} (`sweepbot check-config FILE` checks a copy); until then the bot keeps the"
                f" last valid policy",
            )
            return _named_results(text) or default_policy().results.repository
        self.say(True, f"{name}: {REPO_CONFIG_PATH} on {branch} is valid")
        return policy

    async def workflows(self, name: str, one: Installed, policy: Policy) -> None:
        gh = await self.app.client(one.id)
        branch = await self.branch(gh, name)
        wanted: list[tuple[str, str, Sequence[str]]] = [
            ("workflows.sweep", policy.workflows.sweep, DISPATCH_INPUTS),
            ("workflows.fork_sweep", policy.workflows.fork_sweep, FORK_INPUTS),
        ]
        if policy.signoff.judge.enabled:
            wanted.append(("signoff.judge.workflow", policy.signoff.judge.workflow, JUDGE_INPUTS))
        for key, file, inputs in wanted:
            path = f".github/workflows/{file}"
            found = await get_or_none(gh, f"/repos/{name}/contents/{path}?ref={branch}")
            if found is None:
                example = f" (examples/workflows/{file} is one)" if file in EXAMPLE_FILES else ""
                self.say(
                    False,
                    f"{name}: {path} is not on {branch}, and the bot dispatches it ({key})",
                    f"add it to {branch}{example}, or set {key} to the workflow's file name",
                )
                continue
            problems = input_problems(await _file_text(gh, name, found), inputs)
            if problems:
                self.say(
                    False,
                    f"{name}: {path} on {branch} would refuse the bot's dispatch: {_input_problems(problems)}",
                    f"declare under on.workflow_dispatch.inputs exactly the inputs the bot sends ({', '.join(inputs)}),"
                    f" each `type: string`, as examples/workflows/ does",
                )
            else:
                self.say(True, f"{name}: {path} on {branch} takes the {len(inputs)} inputs the bot sends")

    def results(
        self, name: str, one: Installed, policy: Policy, covering: Mapping[str, Installed], install_url: str
    ) -> None:
        target = policy.results.repository
        if not policy.results.enabled:
            self.say(
                None,
                f"{name}: results.mode is none: no results service; /use pins and reports, nothing is staged or"
                " ingested",
            )
            return
        theirs = covering.get(target.lower())
        contents = (one.json.get("permissions") or {}).get("contents", "none")
        if theirs is None:
            self.say(
                False,
                f"{name}: the results repository {target} (results.repository) is not in any installation: the bot"
                f" cannot send it {policy.results.stage} or {policy.results.ingest}",
                f"add {target} to {one.name}'s repositories on {one.json.get('html_url')}, or install the App"
                f" there: {install_url}",
            )
        elif theirs.id != one.id:
            self.say(
                False,
                f"{name}: the results repository {target} is in {theirs.name}, not in {one.name} with {name}: the"
                f" bot sends the dispatch with {name}'s installation",
                f"install the App on both from one account, with both repositories selected: {install_url}",
            )
        elif missing_permissions({"contents": "write"}, {"contents": contents}):
            self.say(
                False,
                f"{name}: {one.name} has contents: {contents}: the bot cannot send {target} a repository_dispatch",
                f"give the App contents: write and accept it on {one.json.get('html_url')}",
            )
        else:
            self.say(
                True,
                f"{name}: the results repository {target} is in {one.name} with contents: write: the bot may send"
                f" it repository_dispatch (results.mode service)",
            )

    # -- the webhook -----------------------------------------------------------------------------------------

    async def webhook(self, settings_url: str) -> None:
        client = self.app.app_client()
        config = await client.getitem("/app/hook/config")
        recorded = config.get("url")
        expected = self.url or os.environ.get("WEBHOOK_URL", "").strip()
        ours = expected_webhook(expected) if expected else ""
        if not recorded:
            self.say(
                False,
                "webhook URL: GitHub has none on record, so it sends the App no deliveries",
                f"set the Webhook URL on {settings_url} to {ours or 'this server’s https://…/webhook'} and tick Active",
            )
        elif not expected:
            self.say(None, f"webhook URL: GitHub sends deliveries to {recorded}; not compared (--url or WEBHOOK_URL)")
        elif same_webhook(recorded, expected):
            self.say(True, f"webhook URL: GitHub sends deliveries to {recorded}, this server")
        else:
            self.say(
                False,
                f"webhook URL: GitHub sends deliveries to {recorded}, not to this server ({ours})",
                f"set the Webhook URL on {settings_url} to {ours}",
            )
        if config.get("content_type") != "json":
            self.say(
                False,
                f"webhook content type: {config.get('content_type')}: the bot reads JSON only",
                f"set the content type to application/json on {settings_url}",
            )
        deliveries = await client.getitem(f"/app/hook/deliveries?per_page={DELIVERIES_LOOKED_AT}")
        failed = failed_deliveries(deliveries if isinstance(deliveries, list) else [])
        if failed:
            named = "; ".join(_delivery(d) for d in failed[:DELIVERIES_SHOWN])
            more = f"; and {len(failed) - DELIVERIES_SHOWN} more" if len(failed) > DELIVERIES_SHOWN else ""
            self.say(
                False,
                f"webhook deliveries: {len(failed)} of the last {len(deliveries)} failed and were not delivered"
                f" since: {named}{more}",
                f"find why in this server's log by the delivery's id, fix it, then redeliver them on"
                f" {settings_url}/advanced",
            )
        else:
            self.say(True, f"webhook deliveries: none of the last {len(deliveries)} failed")


EXAMPLE_FILES = frozenset({"run-sweep.yml", "e2e-tests.yml", "signoff-judge.yml"})


def _named_results(text: str) -> str | None:
    """results.repository as an invalid config file names it, if it does."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    named = (data.get("results") or {}).get("repository") if isinstance(data, dict) else None
    return named if isinstance(named, str) else None


def _covers(one: Installed, repo: str) -> bool:
    return repo.lower() in {name.lower() for name in one.repos}


def _permissions(missing: Mapping[str, str], wanted: Mapping[str, str]) -> str:
    return ", ".join(f"{name}: {wanted[name]} (has {has})" for name, has in missing.items())


def _settings_url(app: Mapping[str, Any]) -> str:
    """The App's settings page: under the organisation that owns it, else under the owner's personal settings."""
    html = urlsplit(str(app.get("html_url") or "https://github.com"))
    owner = app.get("owner") or {}
    slug = app.get("slug")
    base = f"{html.scheme}://{html.netloc}"
    if owner.get("type") == "Organization":
        return f"{base}/organizations/{owner.get('login')}/settings/apps/{slug}"
    return f"{base}/settings/apps/{slug}"


def _input_problems(problems: Sequence[InputProblem]) -> str:
    """The problems of one workflow's inputs, those of a kind together: `a`, `b` are not declared; ..."""
    by_code: dict[str, list[InputProblem]] = {}
    for problem in problems:
        by_code.setdefault(problem.code, []).append(problem)
    said = []
    for code, same in by_code.items():
        first, names = same[0], ", ".join(f"`{p.name}`" for p in same)
        inputs = "input" if len(same) == 1 else "inputs"
        said.append(
            {
                "too_big": f"the file is over {first.detail} bytes",
                "not_yaml": f"it is not valid YAML ({first.detail})",
                "no_inputs": "it has no `on: workflow_dispatch`",
                "undeclared": f"{inputs} {names} {'is' if len(same) == 1 else 'are'} not declared",
                "not_sent": f"{inputs} {names} {'is' if len(same) == 1 else 'are'} required, and the bot does not"
                f" send {'it' if len(same) == 1 else 'them'}",
                "wrong_type": "; ".join(
                    f"input `{p.name}` is `type: {p.detail}`, which cannot take the value the bot sends" for p in same
                ),
            }[code]
        )
    return "; ".join(said)


def _delivery(d: Mapping[str, Any]) -> str:
    what = str(d.get("event")) + (f".{d['action']}" if d.get("action") else "")
    return f"{d.get('guid')} ({what}, {d.get('delivered_at')}: {d.get('status_code')} {d.get('status')})"


async def _file_text(gh: Any, name: str, found: Mapping[str, Any]) -> str:
    """A contents API answer's text; a file over 1 MB comes without content, so it is read through its blob."""
    content = found.get("content") or ""
    if found.get("encoding") != "base64":
        content = (await gh.getitem(f"/repos/{name}/git/blobs/{found.get('sha')}")).get("content") or ""
    return base64.b64decode(content).decode("utf-8", errors="replace")


async def doctor(app: GitHubApp, out: TextIO, *, repo: str | None = None, url: str | None = None) -> int:
    """Every check, printed to `out`; 1 when one fails, else 0. `repo` narrows the installations and
    repositories to one benchmark repository (and its results repository); `url` is this server's address or
    webhook URL (default: WEBHOOK_URL)."""
    return await Doctor(app, out, repo=repo, url=url).run()
