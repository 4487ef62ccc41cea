"""`sweepbot setup` in a real browser (Debian's chromium driven by Playwright), against the fake GitHub as its own
HTTP process; the other cases (Enterprise, wrong state, expired code, network, unwritable env file) through
aiohttp's test client against the fake over respx.

A browser walk that fails keeps a screenshot of each page it visited under test-artifacts/setup-page/<test>/
(gitignored) and names the folder in the failure. With CI set (`.ci/run`) a missing chromium or playwright fails
the browser tests; elsewhere they skip with the reason.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import re
import select
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import respx
from aiohttp.test_utils import TestClient, TestServer
from dotenv import dotenv_values
from harness import free_port

from bot.app import setup_page
from bot.app.setup_page import SetupOptions, SetupPage
from bot.core.config import Settings
from bot.testing import InMemoryGitHub
from bot.testing.server import FakeGitHubProcess

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts" / "setup-page"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WEBHOOK = "https://bot.example.com/webhook"
RESULTS = "SemiAnalysisAI/InferenceX-app"  # app.yaml's policy.results.repository
STEP_TIMEOUT_MS = 15_000


# ---- the browser -----------------------------------------------------------------------------------------


def _browser_or_say_why() -> str:
    """The chromium to drive; skips (fails under CI) when it or Playwright is missing."""
    reason = None
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        reason = "the playwright package is not installed (pip install -e '.[test]')"
    executable = CHROMIUM if os.access(CHROMIUM, os.X_OK) else shutil.which("chromium")
    if reason is None and executable is None:
        reason = f"chromium is not installed ({CHROMIUM}; `.ci/run` installs Debian's package as root)"
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set, so the browser tests must run, but {reason}", pytrace=False)
        pytest.skip(reason)
    assert executable is not None  # else reason was set above
    return executable


@pytest.fixture
def chromium() -> str:
    return _browser_or_say_why()


@pytest.fixture(scope="module")
def fake_process():
    proc = FakeGitHubProcess().start()
    try:
        yield proc
    finally:
        proc.stop()


class Walk:
    """One browser page; `shot` keeps a screenshot of each page visited, written out only if the walk fails."""

    def __init__(self, page, name: str) -> None:
        self.page, self.name = page, name
        self.shots: list[tuple[str, bytes]] = []  # (step, PNG)

    async def shot(self, step: str) -> None:
        self.shots.append((step, await self.page.screenshot(full_page=True)))

    async def keep(self) -> Path:
        folder = ARTIFACTS / self.name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        with contextlib.suppress(Exception):
            await self.shot("at-failure")
        for index, (step, png) in enumerate(self.shots, 1):
            (folder / f"{index:02d}-{step}.png").write_bytes(png)
        return folder


@contextlib.asynccontextmanager
async def browser_walk(executable: str, name: str, *, locale: str = "en-US"):
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            context = await browser.new_context(locale=locale)  # a fresh profile: no cookies, no cache
            page = await context.new_page()
            page.set_default_timeout(STEP_TIMEOUT_MS)
            walk = Walk(page, name)
            try:
                yield walk
            except BaseException as exc:
                folder = await walk.keep()
                exc.add_note(f"screenshots of each page visited: {folder}")
                raise
        finally:
            await browser.close()


# ---- `sweepbot setup` as a process ---------------------------------------------------------------------


@contextlib.contextmanager
def setup_process(cwd: Path, *args: str, env: dict[str, str] | None = None):
    """`sweepbot setup ARGS` on a free port; yields (its URL, its first line), stopped with SIGINT at the end."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot.app.cli", "setup", "--port", str(port), *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ, PYTHONUNBUFFERED="1", **(env or {})),
    )
    assert proc.stdout is not None and proc.stderr is not None  # both PIPE
    try:
        line = _first_line(proc, time.monotonic() + 20)
        assert f"http://127.0.0.1:{port}/" in line, line
        yield f"http://127.0.0.1:{port}", line
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        proc.stdout.close()
        proc.stderr.close()


def _first_line(proc: subprocess.Popen, deadline: float) -> str:
    assert proc.stdout is not None and proc.stderr is not None, "the process's stdout and stderr are pipes"
    data = b""
    while not data.endswith(b"\n"):
        ready, _, _ = select.select([proc.stdout], [], [], 0.2)
        if ready:
            chunk = os.read(proc.stdout.fileno(), 1)
            if not chunk:
                raise AssertionError(f"sweepbot setup exited {proc.wait()}: {proc.stderr.read().decode()}")
            data += chunk
        elif time.monotonic() > deadline:
            raise AssertionError("sweepbot setup printed no URL within 20 s")
    return data.decode()


def assert_env_file(path: Path, app: dict, *, webhook: str, api_url: str | None) -> None:
    """Mode 0600, the four (five) keys, and Settings reads back the same id, key and secret."""
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    values = dotenv_values(path)
    assert values["APP_ID"] == str(app["id"])
    assert values["PRIVATE_KEY"] == app["pem"] and app["pem"].startswith("-----BEGIN RSA PRIVATE KEY-----\n")
    assert values["WEBHOOK_SECRET"] == app["webhook_secret"]
    assert values["WEBHOOK_URL"] == webhook
    assert values.get("GITHUB_API_URL") == api_url
    env = {key: value for key, value in values.items() if value is not None}
    assert env.keys() == values.keys(), values  # every line is KEY=value
    settings = Settings.from_env(env)
    assert settings.live and settings.app_id == str(app["id"])
    assert settings.private_key == app["pem"] and settings.webhook_secrets == (app["webhook_secret"],)
    if api_url:
        assert settings.api_url == api_url


# ---- the browser walks -----------------------------------------------------------------------------------


async def test_an_organisation_registers_the_app_in_a_browser(chromium, fake_process, tmp_path):
    fake = fake_process
    env_file = tmp_path / ".env"
    with setup_process(
        tmp_path, "--github-url", fake.url, "--env-file", str(env_file), env={"GITHUB_API_URL": fake.url}
    ) as (url, line):
        assert str(env_file) in line
        async with browser_walk(chromium, "organisation") as walk:
            page = walk.page
            await page.goto(url + "/")
            await walk.shot("form")
            assert await page.input_value("#enterprise-url") == fake.url  # --github-url prefilled it
            assert await page.input_value("#results-repository") == RESULTS  # from app.yaml's policy
            assert await page.locator("button").count() == 1
            await page.check("#account-org")
            await page.fill("#org", "acme")
            await page.fill("#webhook-url", WEBHOOK)
            await page.click("#register")
            await page.wait_for_selector("#to-github")
            await walk.shot("confirm")
            assert await page.text_content("#confirm-github") == fake.url  # shown before anything goes there
            assert "acme" in await page.text_content("#confirm-owner")
            assert fake.url in await page.text_content("#enterprise-check")
            assert page.url == url + "/register" and fake.manifest_apps() == []  # still on this page
            await page.click("#continue")
            await page.wait_for_url(re.compile(re.escape(fake.url) + r"/organizations/acme/settings/apps/new\?state="))
            await walk.shot("github")
            assert await page.text_content("#webhook-url") == WEBHOOK
            assert await page.text_content("#app-name") == "sweepbot"
            await page.get_by_role("button", name="Create GitHub App").click()
            await page.wait_for_url(re.compile(re.escape(url) + r"/callback\?code=.+&state=.+"))
            await walk.shot("done")
            (app,) = fake.manifest_apps()
            assert app["owner"]["login"] == "acme" and app["owner"]["type"] == "Organization"
            assert await page.get_attribute("#registered a", "href") == app["html_url"] == f"{fake.url}/apps/sweepbot"
            assert await page.get_attribute("#install", "href") == f"{fake.url}/apps/sweepbot/installations/new"
            where = await page.text_content("#install-where")
            assert "benchmark repository" in where and RESULTS in where
            assert "make serve" in await page.text_content("body")
            assert_env_file(env_file, app, webhook=WEBHOOK, api_url=fake.url)
    conversions = [r for r in fake.requests() if r.path.startswith("/app-manifests/")]
    assert [(r.method, r.status, r.token) for r in conversions] == [("POST", 201, None)]  # once, no credentials


async def test_a_personal_account_registers_it_in_chinese(chromium, fake_process, tmp_path):
    fake = fake_process
    before = len(fake.manifest_apps())
    env_file = tmp_path / "sweepbot.env"
    with setup_process(
        tmp_path,
        "--github-url",
        fake.url,
        "--env-file",
        str(env_file),
        "--webhook-url",
        WEBHOOK,
        env={"GITHUB_API_URL": fake.url},
    ) as (url, _):
        async with browser_walk(chromium, "personal-zh", locale="zh-CN") as walk:
            page = walk.page
            await page.goto(url + "/")
            await walk.shot("form")
            assert await page.get_attribute("html", "lang") == "zh"  # Accept-Language: zh-CN
            assert await page.text_content("#switch-language") == "English"
            assert await page.input_value("#webhook-url") == WEBHOOK  # --webhook-url prefilled it
            await page.click("#register")  # personal account is the default choice
            await page.wait_for_selector("#to-github")
            await walk.shot("confirm")
            assert await page.text_content("#confirm-github") == fake.url
            assert await page.text_content("#continue") == f"继续前往 {fake.url}"
            await page.click("#continue")
            await page.wait_for_url(re.compile(re.escape(fake.url) + r"/settings/apps/new\?state="))
            await walk.shot("github")
            await page.get_by_role("button", name="Create GitHub App").click()
            await page.wait_for_url(re.compile(re.escape(url) + r"/callback\?"))
            await walk.shot("done")
            app = fake.manifest_apps()[before]
            assert app["owner"]["type"] == "User"
            assert "已注册" in await page.text_content("#registered")
            assert RESULTS in await page.text_content("#install-where")
            assert await page.get_attribute("#install", "href") == app["html_url"] + "/installations/new"
            # not ./.env: the page says make serve reads only .env where it runs
            assert ".env" in await page.text_content("body") and str(env_file) in await page.text_content("body")
            assert_env_file(env_file, app, webhook=WEBHOOK, api_url=fake.url)


# ---- the same page through aiohttp's test client -------------------------------------------------------


ENTERPRISE = "https://ghe.example.com"


@pytest.fixture
def enterprise():
    """A fake GitHub Enterprise Server at ghe.example.com (API under /api/v3), over respx."""
    fake = InMemoryGitHub(f"{ENTERPRISE}/api/v3")
    with respx.mock(assert_all_called=False) as router:
        router.route(host="ghe.example.com").mock(side_effect=fake.handle)
        yield fake


@contextlib.asynccontextmanager
async def setup_client(tmp_path: Path, **options):
    options.setdefault("env_file", tmp_path / ".env")
    options.setdefault("results_repository", RESULTS)
    page = SetupPage(SetupOptions(**options))
    client = TestClient(TestServer(page.app))
    await client.start_server()
    try:
        yield client, page
    finally:
        await client.close()


FORM = {
    "account": "personal",
    "org": "",
    "github": "com",
    "enterprise_url": "",
    "webhook_url": WEBHOOK,
    "results_repository": RESULTS,
    "lang": "en",
}


async def post_form(client, **fields):
    """Press "Register on GitHub" as the browser does: the form's fields, its token, the page's Origin."""
    return await client.post(
        "/register",
        data=FORM | {"token": await page_token(client)} | fields,
        headers={"Origin": str(client.make_url("")).rstrip("/")},
    )


def first_group(pattern: str, text: str) -> str:
    """The first group of `pattern`'s first match in `text`, which must have one."""
    found = re.search(pattern, text)
    assert found is not None, (pattern, text)
    return found[1]


async def to_github(client, **fields) -> tuple[str, str, str]:
    """Press the button: (the confirmation's form action to GitHub, its state, the manifest JSON it carries)."""
    resp = await post_form(client, **fields)
    text = await resp.text()
    assert resp.status == 200, text
    action = html.unescape(first_group(r'<form method="post" action="([^"]+)" id="to-github">', text))
    manifest = html.unescape(first_group(r'name="manifest" value="([^"]*)"', text))
    state = httpx.URL(action).params["state"]
    return action, state, manifest


async def test_an_enterprise_server_gets_its_own_urls_and_api(enterprise, tmp_path):
    async with setup_client(tmp_path) as (client, _):
        action, state, manifest_json = await to_github(
            client, github="enterprise", enterprise_url=ENTERPRISE + "/", account="org", org="acme"
        )
        assert action.startswith(f"{ENTERPRISE}/organizations/acme/settings/apps/new?state=")
        manifest = json.loads(manifest_json)
        assert manifest["hook_attributes"]["url"] == WEBHOOK
        assert manifest["redirect_url"] == str(client.make_url("/callback"))
        assert manifest["url"] == "https://github.com/SemiAnalysisAI/InferenceX"  # app.yaml's homepage stays
        code = enterprise.create_app_from_manifest(manifest_json, "acme")
        resp = await client.get("/callback", params={"code": code, "state": state})
        text = await resp.text()
        assert resp.status == 200, text
        (app,) = enterprise.manifest_apps()
        assert f'href="{ENTERPRISE}/apps/sweepbot/installations/new"' in text
        again = await client.get("/callback", params={"code": code, "state": state})  # a reload of the page
        assert again.status == 200 and await again.text() == text
        assert enterprise.count("POST", r"^/app-manifests/") == 1  # the code was not sent twice
        assert_env_file(tmp_path / ".env", app, webhook=WEBHOOK, api_url=f"{ENTERPRISE}/api/v3")


@pytest.mark.parametrize("query", [{"code": "x", "state": "wrong"}, {"code": "x"}, {}])
async def test_a_wrong_or_missing_state_is_a_400_page_and_writes_nothing(github, tmp_path, query):
    async with setup_client(tmp_path) as (client, page):
        _, state, manifest_json = await to_github(client)
        resp = await client.get("/callback", params=query)
        text = await resp.text()
        assert resp.status == 400
        assert "does not belong to a registration started on this page" in text and "Start again" in text
        assert not (tmp_path / ".env").exists() and github.requests == []
        assert state in page.attempts  # the real attempt can still finish


async def test_a_used_or_expired_code_says_so_and_writes_nothing(github, tmp_path):
    async with setup_client(tmp_path) as (client, _):
        _, state, manifest_json = await to_github(client)
        code = github.create_app_from_manifest(manifest_json)
        github.age_manifest_codes(3601)
        resp = await client.get("/callback", params={"code": code, "state": state})
        assert resp.status == 400 and "used already or is more than an hour old" in await resp.text()
        assert not (tmp_path / ".env").exists()
        assert github.count("POST", r"^/app-manifests/") == 1


async def test_a_network_error_keeps_the_attempt_and_a_retry_finishes_it(github, tmp_path):
    async with setup_client(tmp_path) as (client, _):
        _, state, manifest_json = await to_github(client)
        code = github.create_app_from_manifest(manifest_json)
        github.raise_next("POST", r"^/app-manifests/", httpx.ConnectError("refused"))
        resp = await client.get("/callback", params={"code": code, "state": state})
        text = await resp.text()
        assert resp.status == 502 and "could not be reached (ConnectError)" in text
        assert not (tmp_path / ".env").exists()
        retry = html.unescape(re.search(r'id="retry" href="([^"]+)"', text)[1])
        resp = await client.get(retry)
        assert resp.status == 200, await resp.text()
        assert_env_file(tmp_path / ".env", github.manifest_apps()[0], webhook=WEBHOOK, api_url=None)


async def test_an_unwritable_env_file_loses_nothing(github, tmp_path):
    env_file = tmp_path / "no-such-folder" / ".env"
    async with setup_client(tmp_path, env_file=env_file) as (client, _):
        _, state, manifest_json = await to_github(client)
        resp = await client.get(
            "/callback", params={"code": github.create_app_from_manifest(manifest_json), "state": state}
        )
        text = html.unescape(await resp.text())
    (app,) = github.manifest_apps()
    saved = Path(re.search(r"so they are in (\S+), readable by you only", text)[1])
    try:
        assert f"could not go into {env_file}" in text and not env_file.exists()
        assert_env_file(saved, app, webhook=WEBHOOK, api_url=None)
    finally:
        saved.unlink()


async def test_an_env_file_that_got_an_app_id_meanwhile_is_not_overwritten(github, tmp_path):
    env_file = tmp_path / ".env"
    async with setup_client(tmp_path) as (client, _):
        _, state, manifest_json = await to_github(client)
        env_file.write_text("APP_ID=77\n")
        resp = await client.get(
            "/callback", params={"code": github.create_app_from_manifest(manifest_json), "state": state}
        )
        text = await resp.text()
    (app,) = github.manifest_apps()
    assert env_file.read_text() == "APP_ID=77\n" and "it holds an APP_ID already" in text
    assert_env_file(tmp_path / f".env.app-{app['id']}", app, webhook=WEBHOOK, api_url=None)


async def test_the_env_file_keeps_the_operators_other_settings(github, tmp_path):
    env_file = tmp_path / ".env"
    env_file.write_text("LOG_LEVEL=DEBUG\nWEBHOOK_SECRET=old\n")
    async with setup_client(tmp_path) as (client, _):
        _, state, manifest_json = await to_github(client)
        await client.get("/callback", params={"code": github.create_app_from_manifest(manifest_json), "state": state})
    values = dotenv_values(env_file)
    assert values["LOG_LEVEL"] == "DEBUG" and values["WEBHOOK_SECRET"] == github.manifest_apps()[0]["webhook_secret"]
    assert env_file.read_text().count("WEBHOOK_SECRET=") == 1


@pytest.mark.parametrize(
    "fields, problem",
    [
        ({"webhook_url": "http://bot.example.com/webhook"}, "must start with https://"),
        ({"webhook_url": ""}, "Enter the webhook URL"),
        ({"account": "org", "org": ""}, "Enter the organisation"),
        ({"account": "org", "org": "-bad-"}, "not an organisation name"),
        ({"github": "enterprise", "enterprise_url": "http://ghe.example.com"}, "must be an https:// address"),
        ({"results_repository": "no-slash"}, "owner/name"),
    ],
)
async def test_a_bad_form_is_shown_again_with_the_problem_and_nothing_goes_to_github(tmp_path, fields, problem):
    async with setup_client(tmp_path) as (client, page):
        resp = await post_form(client, **fields)
        text = await resp.text()
        assert resp.status == 400 and problem in text and 'id="to-github"' not in text
        assert page.attempts == {}


async def test_the_manifest_field_is_escaped(tmp_path):
    async with setup_client(tmp_path) as (client, _):
        resp = await post_form(client, webhook_url='https://x.example/"><b>hi</b>')
        text = await resp.text()
    assert resp.status == 200 and "<b>hi" not in text and "&lt;b&gt;hi" in text


@pytest.mark.parametrize(
    "header, query, language",
    [
        ("zh-CN,zh;q=0.9,en;q=0.8", "", "zh"),
        ("en-US,zh;q=0.5", "", "en"),
        ("fr, zh;q=0.3", "", "zh"),
        ("", "", "en"),
        ("zh-CN", "?lang=en", "en"),
        ("en", "?lang=zh", "zh"),
    ],
)
async def test_the_language_follows_accept_language_or_the_switch(tmp_path, header, query, language):
    async with setup_client(tmp_path) as (client, _):
        resp = await client.get("/" + query, headers={"Accept-Language": header} if header else {})
        text = await resp.text()
    assert f'<html lang="{language}">' in text
    assert ('href="/?lang=en"' in text) == (language == "zh")


def _urls_and_code(text: str) -> list[str]:
    """Every URL, code span and CAPITALISED_NAME of a page (sentence punctuation after a URL left off)."""
    found = re.findall(r'https?://[^\s"<>，。（）：]*|<code>[^<]*</code>|\b[A-Z_]{6,}\b', text)
    return sorted(item.rstrip(".,:") for item in found)


@pytest.mark.parametrize(
    "page, values",
    [
        (
            "form",
            {
                "problems": list(setup_page.PROBLEMS),
                "token": "t",
                "values": dict(FORM, account="org", org="acme", github="enterprise", enterprise_url=ENTERPRISE),
            },
        ),
        (
            "confirm",
            {
                "github_url": ENTERPRISE,
                "org": "acme",
                "action": ENTERPRISE + "/x",
                "manifest": "{}",
                "enterprise": True,
                "api_url": ENTERPRISE + "/api/v3",
                "webhook_url": WEBHOOK,
                "results_repository": RESULTS,
            },
        ),
        (
            "confirm",
            {
                "github_url": "https://github.com",
                "org": None,
                "action": "https://github.com/x",
                "manifest": "{}",
                "enterprise": False,
                "api_url": "https://api.github.com",
                "webhook_url": WEBHOOK,
                "results_repository": "",
            },
        ),
        (
            "done",
            {
                "app_name": "sweepbot",
                "html_url": "https://github.com/apps/sweepbot",
                "owner": "acme",
                "install_url": "https://github.com/apps/sweepbot/installations/new",
                "results_repository": "o/r",
                "results_default": RESULTS,
                "env_file": "/x/.env",
                "env_is_served": False,
                "saved_path": "/x/.env.app-1",
                "save_problem": "holds-app-id",
                "saved_text": None,
            },
        ),
        *[
            (
                "error",
                {
                    "error": error,
                    "api_url": "https://api.github.com",
                    "detail": "ConnectError",
                    "retry": "/r",
                    "home": "http://127.0.0.1:3001/",
                },
            )
            for error in setup_page.ERRORS
        ],
    ],
)
def test_both_languages_render_every_page_with_the_same_links_and_names(tmp_path, page, values):
    templates = SetupPage(SetupOptions(env_file=tmp_path / ".env")).templates
    texts = {
        language: templates.get_template(f"setup_page.{language}.html.j2").render(page=page, **values)
        for language in ("en", "zh")
    }
    assert re.search(r"[\u4e00-\u9fff]", texts["en"]) is None or "中文" in texts["en"]
    assert re.search(r"[\u4e00-\u9fff]", texts["zh"].split("<h1>")[1])
    english = [u for u in _urls_and_code(texts["en"]) if "lang=" not in u]
    chinese = [u for u in _urls_and_code(texts["zh"]) if "lang=" not in u]
    assert english == chinese


# ---- an attacker's requests ----------------------------------------------------------------------------


ATTACKER = "https://ghe.attacker.example"  # the Enterprise Server a forged registration names: the attacker's
ATTACKER_SITE = "https://attacker.example"  # the website whose form POSTs to the page


@pytest.fixture
def attacker(github):
    """The attacker's own GitHub Enterprise Server (over respx, beside the operator's github.com): it creates Apps
    from any manifest and converts their codes, so whatever it answers is the attacker's App."""
    fake = InMemoryGitHub(f"{ATTACKER}/api/v3")
    with respx.mock(assert_all_called=False) as router:  # inside `github`'s: other hosts still go to it
        router.route(host="ghe.attacker.example").mock(side_effect=fake.handle)
        yield fake


async def page_token(client, host: str | None = None) -> str:
    """The token a browser finds in the form (GET /), as the page's own or a rebinding attacker's script would."""
    resp = await client.get("/", headers={"Host": host} if host else {})
    found = re.search(r'name="token" value="([^"]*)"', await resp.text())
    return found[1] if found else ""


async def cross_site_attack(client, attacker) -> tuple[int, str, int, str]:
    """The cross-site attack as the operator's browser runs it. A page on the attacker's website POSTs /register
    (its Origin, no token of the page's) naming the attacker's Enterprise Server; if the answer is a form to that
    server, the browser submits it there, so the attacker learns the state and the manifest; it creates an App from
    a manifest and sends the browser back to /callback with its own code and that state (a guess when it has none).
    Returns (status, text) of the POST and of the callback."""
    resp = await client.post(
        "/register", data=FORM | {"github": "enterprise", "enterprise_url": ATTACKER}, headers={"Origin": ATTACKER_SITE}
    )
    text = await resp.text()
    state, manifest_json = "guessed-" + "x" * 24, json.dumps(setup_page.build_manifest(WEBHOOK))
    form = re.search(r'<form method="post" action="([^"]+)" id="to-github">', text)
    if form and form[1].startswith(ATTACKER):
        state = httpx.URL(html.unescape(form[1])).params["state"]
        manifest_json = html.unescape(first_group(r'name="manifest" value="([^"]*)"', text))
    code = attacker.create_app_from_manifest(manifest_json)
    callback = await client.get("/callback", params={"code": code, "state": state})
    return resp.status, text, callback.status, await callback.text()


@pytest.mark.parametrize(
    "origin, token",
    [
        (ATTACKER_SITE, None),
        (None, None),
        ("null", None),  # another website; an Origin left out or hidden
        ("http://127.0.0.1:1", None),  # another local page (another port is another origin)
        ("same", ""),
        ("same", "wrong"),  # this page's origin without the page's token
    ],
)
async def test_a_post_from_another_origin_or_without_the_pages_token_is_refused(tmp_path, origin, token):
    """Cross-site POST (high): a form on any website could POST /register, and the page answered with a
    form that sends the attacker's Enterprise Server a state of this page's. Now a POST needs this page's Origin and
    its token: anything else is a 403 page, and no registration starts."""
    async with setup_client(tmp_path) as (client, page):
        headers = {}
        if origin is not None:
            headers["Origin"] = str(client.make_url("")).rstrip("/") if origin == "same" else origin
        data = FORM | {"github": "enterprise", "enterprise_url": ATTACKER}
        if token is not None:
            data["token"] = token
        resp = await client.post("/register", data=data, headers=headers)
        text = await resp.text()
    assert resp.status == 403, text
    assert "was refused" in text and "Nothing was sent to GitHub or written" in text
    assert ATTACKER not in text and "state=" not in text and 'id="to-github"' not in text
    assert page.attempts == {}


async def test_a_forged_registration_and_its_callback_write_nothing(github, attacker, tmp_path):
    """Cross-site POST (high): the attacker's callback converted its own code against its own API and
    wrote its APP_ID, PRIVATE_KEY, WEBHOOK_SECRET and GITHUB_API_URL to .env."""
    async with setup_client(tmp_path) as (client, page):
        post_status, _, callback_status, callback_text = await cross_site_attack(client, attacker)
    assert (post_status, callback_status) == (403, 400), callback_text
    assert "does not belong to a registration started on this page" in callback_text
    assert not (tmp_path / ".env").exists() and list(tmp_path.iterdir()) == []
    assert attacker.count("POST", r"^/app-manifests/") == 0 and page.attempts == {}


async def test_the_real_registration_after_a_forged_one_lands_in_the_env_file(github, attacker, tmp_path):
    """Cross-site POST (high): once the forged registration had written .env, the operator's own
    credentials went to .env.app-<id> because .env "already holds an APP_ID", and `make serve` ran as the
    attacker's App."""
    async with setup_client(tmp_path) as (client, _):
        await cross_site_attack(client, attacker)
        _, state, manifest_json = await to_github(client)
        resp = await client.get(
            "/callback", params={"code": github.create_app_from_manifest(manifest_json), "state": state}
        )
        text = await resp.text()
    assert resp.status == 200, text
    (app,) = github.manifest_apps()
    assert "it holds an APP_ID already" not in text
    assert_env_file(tmp_path / ".env", app, webhook=WEBHOOK, api_url=None)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".env"]  # no .env.app-<id> beside it


async def test_only_loopback_hosts_at_its_own_port_are_served_and_make_the_redirect_url(tmp_path):
    """Host header trusted (medium): `Host: rebind.example` was served and became the manifest's
    redirect_url, so with DNS rebinding GitHub sent the one-time code (and so the App's key) to the attacker."""
    async with setup_client(tmp_path) as (client, page):
        port = client.port
        answers = {}
        for host in [
            f"127.0.0.1:{port}",
            f"localhost:{port}",
            f"LocalHost:{port}",
            f"[::1]:{port}",
            f"rebind.example:{port}",
            "rebind.example",
            f"127.0.0.1:{port + 1}",
            "127.0.0.1",
            f"127.0.0.2:{port}",
            f"localhost.rebind.example:{port}",
            f"127.0.0.1:{port}@rebind.example",
            "",
        ]:
            token = await page_token(client, host)  # a rebinding attacker's script reads the form first
            resp = await client.post(
                "/register", data=FORM | {"token": token}, headers={"Host": host, "Origin": f"http://{host}"}
            )
            answers[host] = (resp.status, await resp.text())
        allowed = [f"127.0.0.1:{port}", f"localhost:{port}", f"LocalHost:{port}", f"[::1]:{port}"]
        assert {host: status for host, (status, _) in answers.items()} == {
            host: 200 if host in allowed else 421 for host in answers
        }
        redirects = {
            host: json.loads(html.unescape(re.search(r'name="manifest" value="([^"]*)"', text)[1]))["redirect_url"]
            for host, (status, text) in answers.items()
            if status == 200
        }
        assert redirects == {host: f"http://{host.lower()}/callback" for host in allowed}
        for _host, (status, text) in answers.items():
            if status != 200:
                assert "rebind" not in text and "This page answers only at" in text
                assert f"http://127.0.0.1:{port}/" in text
        assert len(page.attempts) == len(allowed)


async def test_a_request_from_another_machine_is_refused(tmp_path):
    """The page is for the operator's own browser; a request from another address (as when
    `--host 0.0.0.0` put it on the network) got the form and could start a registration."""
    from aiohttp import web

    @web.middleware
    async def from_the_network(request, handler):  # what a peer at 192.0.2.7 looks like to the page
        return await handler(request.clone(remote="192.0.2.7"))

    page = SetupPage(SetupOptions(env_file=tmp_path / ".env"))
    page.app.middlewares.insert(0, from_the_network)
    client = TestClient(TestServer(page.app))
    await client.start_server()
    try:
        form = await client.get("/")
        text = await form.text()
        post = await client.post("/register", data=FORM, headers={"Origin": str(client.make_url("")).rstrip("/")})
    finally:
        await client.close()
    assert (form.status, post.status) == (403, 403)
    assert "This page answers only at" in text and 'name="webhook_url"' not in text
    assert page.attempts == {}


async def test_the_github_server_is_shown_to_confirm_before_anything_is_sent_to_it(tmp_path):
    """The answer to /register submitted itself at once to whatever GitHub the form named (an
    attacker's Enterprise Server for a forged POST); now the operator reads the address and presses the button."""
    async with setup_client(tmp_path) as (client, _):
        resp = await post_form(client, github="enterprise", enterprise_url=ENTERPRISE)
        text = await resp.text()
    assert resp.status == 200, text
    assert "<script" not in text.lower() and "onload" not in text.lower()
    assert re.search(r'id="confirm-github">\s*' + re.escape(ENTERPRISE), text)
    assert f"Continue to {ENTERPRISE}" in text and f"{ENTERPRISE}/api/v3" in text


async def test_no_page_can_be_framed_by_another_site(tmp_path):
    """Clickjacking: another site could show the page in a frame and have the operator press its buttons."""
    async with setup_client(tmp_path) as (client, _):
        resp = await client.get("/")
    policy = resp.headers.get("Content-Security-Policy", "")
    assert "frame-ancestors 'none'" in policy and resp.headers.get("X-Frame-Options") == "DENY"


async def test_a_state_is_used_once_even_by_two_callbacks_at_once(tmp_path):
    """Two callbacks with one state at the same time both sent the code to GitHub (the state was taken only once
    the conversion had answered), and the second then failed with a KeyError: a 500."""
    import asyncio

    fake = InMemoryGitHub()
    arrived, release = asyncio.Event(), asyncio.Event()

    async def held(request):  # the conversion answers once the second callback is refused or converting too
        arrived.set()
        await release.wait()
        return fake.handle(request)

    with respx.mock(assert_all_called=False) as router:
        router.route(host="api.github.com").mock(side_effect=held)
        async with setup_client(tmp_path) as (client, _):
            _, state, manifest_json = await to_github(client)
            query = {"code": fake.create_app_from_manifest(manifest_json), "state": state}
            first = asyncio.ensure_future(client.get("/callback", params=query))
            await arrived.wait()
            arrived.clear()
            second = asyncio.ensure_future(client.get("/callback", params=query))
            again = asyncio.ensure_future(arrived.wait())
            await asyncio.wait([second, again], return_when=asyncio.FIRST_COMPLETED)
            release.set()
            statuses = sorted([(await first).status, (await second).status])
            again.cancel()
    assert fake.count("POST", r"^/app-manifests/") == 1 and statuses == [200, 400]
    assert_env_file(tmp_path / ".env", fake.manifest_apps()[0], webhook=WEBHOOK, api_url=None)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.7", "::", "127.0.0.2", "bot.example.com"])
def test_setup_refuses_a_host_off_this_machine_before_serving(tmp_path, capsys, monkeypatch, host):
    """Regression: `--host 0.0.0.0` served the page to the network (and 127.0.0.2 printed an address whose Host the
    page now refuses)."""
    from bot.app import cli

    async def served(*args, **kwargs):  # had it started serving, the test would say so instead of hanging
        return 99

    monkeypatch.setattr(cli, "setup", served)
    assert cli.main(["setup", "--env-file", str(tmp_path / ".env"), "--host", host]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--host" in err and "127.0.0.1" in err
