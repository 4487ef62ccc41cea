"""The fake GitHub as its own process (`python -m bot.testing.server`), on loopback only.

One process serves the whole module; every test uses its own repository. Waits are bounded: the
process must start within 20 s, every control call answers within 10 s, every client here times out.
"""

from __future__ import annotations

import json
import signal
import uuid

import httpx
import pytest
from harness import free_port, process_health, start_server_process, wait_until_blocking

from bot.app.cli import sign
from bot.github.client import GitHubApp
from bot.telemetry.metrics import Metrics
from bot.testing.server import FakeGitHubError, FakeGitHubProcess

CHANGELOG = "inferencex-e2e/perf-changelog.yaml"
SECRET = "fake-server-secret"


@pytest.fixture(scope="module")
def process():
    proc = FakeGitHubProcess(hang_seconds=5.0).start()
    try:
        yield proc
    finally:
        assert proc.stop() is not None


@pytest.fixture
def fake(process):
    process.reset_requests()
    process.clear_latency()
    return process


def repo_name() -> str:
    return f"org/r{uuid.uuid4().hex[:8]}"


def seeded(fake: FakeGitHubProcess) -> str:
    repo = repo_name()
    fake.add_repo(repo, installation_id=1)
    fake.add_pull(repo, number=1, user="partner", head_repo=f"partner-{repo.split('/')[1]}/fork", files=[CHANGELOG])
    fake.add_token("maintainer-token", "maintainer")
    return repo


def client(fake: FakeGitHubProcess, timeout: float = 5.0) -> httpx.Client:
    return httpx.Client(
        base_url=fake.url, headers={"authorization": "token maintainer-token"}, timeout=timeout, trust_env=False
    )


def test_it_listens_on_loopback_and_says_where(fake):
    assert fake.running and fake.url == f"http://127.0.0.1:{fake.port}" and fake.port > 0
    assert fake.state()["base_url"] == fake.url


async def test_bot_github_client_gets_a_token_the_app_and_writes_a_comment(fake, app_key):
    """bot/github/client.py as the bot runs it live: GITHUB_API_URL = the process, APP_ID=1, any RSA key."""
    repo = seeded(fake)
    fake.reset_requests()
    app = GitHubApp(app_id="1", private_key=app_key, api_url=fake.url, metrics=Metrics())
    try:
        token = await app.token(1)
        assert token.startswith("ghs_")
        assert await app.bot_login() == "sweepbot[bot]"
        gh = await app.client(1)
        posted = await gh.post(f"/repos/{repo}/issues/1/comments", data={"body": "hello from the bot"})
        assert posted["html_url"].startswith(f"{fake.url}/{repo}/pull/1#issuecomment-")
        labels = await gh.post(f"/repos/{repo}/issues/1/labels", data={"labels": ["perf-changelog"]})
        assert [label["name"] for label in labels] == ["perf-changelog"]
    finally:
        await app.close()
    [comment] = fake.comments(repo, 1)
    assert (comment["body"], comment["user"]["login"]) == ("hello from the bot", "sweepbot[bot]")
    assert fake.issue_labels(repo, 1) == ["perf-changelog"]
    assert [(r.method, r.path, r.status) for r in fake.requests()] == [
        ("POST", "/app/installations/1/access_tokens", 201),
        ("GET", "/app", 200),
        ("POST", f"/repos/{repo}/issues/1/comments", 201),
        ("POST", f"/repos/{repo}/issues/1/labels", 200),
    ]
    assert fake.requests()[2].token == token and fake.count("POST") == 3


def test_a_sigkilled_bot_leaves_githubs_state_behind_and_the_next_one_finds_it(fake, app_key, tmp_path):
    """The point of the process: the bot dies, GitHub's state does not. The second bot finds the first
    one's welcome on the fake and writes no second one."""
    repo = seeded(fake)
    port = free_port()
    env = {
        "APP_ID": "1",
        "PRIVATE_KEY": app_key,
        "WEBHOOK_SECRET": SECRET,
        "GITHUB_API_URL": fake.url,
        "SWEEPBOT_DB": str(tmp_path / "journal.db"),
        "LOG_LEVEL": "INFO",
    }
    payload = fake.pull_request_payload(repo, 1, "opened", sender="partner")

    def deliver() -> int:
        body = json.dumps(payload).encode()
        req = httpx.post(
            f"http://127.0.0.1:{port}/webhook",
            content=body,
            timeout=5,
            headers={
                "Content-Type": "application/json",
                "X-GitHub-Event": "pull_request",
                "X-GitHub-Delivery": str(uuid.uuid4()),
                "X-Hub-Signature-256": sign(body, SECRET),
            },
        )
        return req.status_code

    for run in (1, 2):
        with open(tmp_path / f"out-{run}.txt", "w") as out, open(tmp_path / f"log-{run}.jsonl", "w") as log:
            bot = start_server_process(port, env, cwd=tmp_path, stdout=out, stderr=log)
            try:
                before = fake.count("GET", r"/issues/1/comments$")
                assert deliver() == 202
                try:
                    wait_until_blocking(
                        lambda before=before, run=run: (
                            fake.count("GET", r"/issues/1/comments$") > before
                            and (run == 2 or len(fake.comments(repo, 1)) == 2)
                        ),
                        "the bot read the comments (and, first run, wrote its two)",
                        seconds=20,
                    )
                except AssertionError as exc:
                    raise AssertionError(f"{exc}\n" + (tmp_path / f"log-{run}.jsonl").read_text()[-3000:]) from None
                # the delivery finished: every write it makes (a duplicate among them) has been made
                wait_until_blocking(lambda: process_health(port)["backlog"] == 0, "the delivery finished", seconds=20)
            finally:
                bot.send_signal(signal.SIGKILL)
                bot.wait(10)
        # the welcome and the sweep status (the PR touches the changelog): one each
        assert (
            sorted(c["body"].split("\n")[0] for c in fake.comments(repo, 1))
            == ["<!-- sweepbot:sweep-status -->", "<!-- sweepbot:welcome -->"]
            and fake.running
        )
    assert {c["user"]["login"] for c in fake.comments(repo, 1)} == {"sweepbot[bot]"}
    assert fake.count("POST", r"/issues/1/comments$") == 2
    assert fake.count("POST", r"/access_tokens$") == 2  # each bot process got its own token


def test_latency_commit_at_start_github_acts_while_the_client_waits(fake):
    repo = seeded(fake)
    fake.set_latency("POST", r"/issues/1/comments$", 2.0, commit="start", times=1)
    with client(fake, timeout=0.5) as http:
        with pytest.raises(httpx.ReadTimeout):  # no answer within 0.5 s...
            http.post(f"/repos/{repo}/issues/1/comments", json={"body": "slow"})
        assert [c["body"] for c in fake.comments(repo, 1)] == ["slow"]  # ...but created: the client gave up

        resp = http.post(f"/repos/{repo}/issues/1/comments", json={"body": "fast"})  # times=1: back to normal
        assert resp.status_code == 201


def test_latency_commit_at_end_acts_only_after_the_delay(fake):
    repo = seeded(fake)
    fake.set_latency(None, r"/issues/1/labels$", 1.0, commit="end")
    with client(fake, timeout=0.3) as http:
        with pytest.raises(httpx.ReadTimeout):
            http.post(f"/repos/{repo}/issues/1/labels", json={"labels": ["late"]})
        assert fake.issue_labels(repo, 1) == []
        wait_until_blocking(
            lambda: fake.issue_labels(repo, 1) == ["late"], "the delayed label applied", seconds=20
        )  # GitHub acts once the delay is over
        with pytest.raises(httpx.ReadTimeout):  # the rule holds until cleared
            http.get(f"/repos/{repo}/issues/1/labels")
        fake.clear_latency()
        assert [label["name"] for label in http.get(f"/repos/{repo}/issues/1/labels").json()] == ["late"]
    wait_until_blocking(
        lambda: fake.count("GET", r"/labels$") == 2, "the delayed GET answered", seconds=20
    )  # the delayed GET is answered too, in this test
    with pytest.raises(FakeGitHubError, match="commit must be"):
        fake.set_latency("GET", ".", 1.0, commit="middle")


def test_timeout_and_disconnect_faults(fake):
    repo = seeded(fake)
    with client(fake, timeout=0.5) as http:
        fake.raise_next("POST", r"/comments$", "timeout")
        with pytest.raises(httpx.ReadTimeout):
            http.post(f"/repos/{repo}/issues/1/comments", json={"body": "never"})
        assert fake.comments(repo, 1) == []

        fake.raise_after_commit("POST", r"/comments$", "disconnect")
        with pytest.raises(httpx.RemoteProtocolError):
            http.post(f"/repos/{repo}/issues/1/comments", json={"body": "acted"})
        assert [c["body"] for c in fake.comments(repo, 1)] == ["acted"]

        fake.raise_after_commit("POST", r"/labels$", "timeout")
        with pytest.raises(httpx.ReadTimeout):
            http.post(f"/repos/{repo}/issues/1/labels", json={"labels": ["x"]})
        assert fake.issue_labels(repo, 1) == ["x"]
    assert [(r.status, r.route_status) for r in fake.requests()] == [(0, None), (0, 201), (0, 200)]
    with pytest.raises(FakeGitHubError, match="'timeout' or 'disconnect'"):
        fake.raise_next("GET", ".", "explode")


def test_control_api_faults_state_and_refusals(fake):
    repo = seeded(fake)
    with client(fake) as http:
        fake.fail_next("GET", r"/pulls/1$", 502)
        assert http.get(f"/repos/{repo}/pulls/1").status_code == 502
        fake.fail_after_commit("POST", r"/comments$", 500)
        assert http.post(f"/repos/{repo}/issues/1/comments", json={"body": "b"}).status_code == 500
        assert len(fake.comments(repo, 1)) == 1
        fake.set_down(True)
        assert http.get(f"/repos/{repo}").status_code == 503
        fake.set_down(False)
        assert http.get(f"/repos/{repo}").json()["full_name"] == repo
    assert fake.count() == 4 and fake.count("POST", r"/comments$") == 1
    log = fake.requests()
    assert [r.status for r in log] == [502, 500, 503, 200] and log[1].json == {"body": "b"}
    assert [r.status for r in fake.requests(since=3)] == [200]

    fake.add_workflow(repo, "run-sweep.yml", inputs=["dispatch-id"])
    with client(fake) as http:
        resp = http.post(
            f"/repos/{repo}/actions/workflows/run-sweep.yml/dispatches",
            json={"ref": "main", "inputs": {"dispatch-id": "abc"}, "return_run_details": True},
        )
    assert resp.status_code == 200
    [run] = fake.runs(repo)
    assert run["id"] == resp.json()["workflow_run_id"] and run["inputs"] == {"dispatch-id": "abc"}
    assert fake.complete_run(repo, run["id"], "success")["conclusion"] == "success"

    for bad, message in (
        (lambda: fake.call("_repo", repo), "not a method"),
        (lambda: fake.call("comments", "org/missing", 1), "404"),
        (lambda: fake.call("add_pull", repo, nope=1), "TypeError"),
        (lambda: fake.add_label(repo, "x", color="#fff"), "GitHub would refuse"),
    ):
        with pytest.raises(FakeGitHubError, match=message):
            bad()
    with pytest.raises(AttributeError):
        fake.not_a_call  # noqa: B018
    unknown = httpx.get(f"{fake.url}/_fake/nothing", timeout=5, trust_env=False)
    assert unknown.status_code == 404 and "no control endpoint" in unknown.json()["error"]
    anonymous = httpx.get(f"{fake.url}/repos/{repo}", timeout=5, trust_env=False)
    assert anonymous.status_code == 401 and anonymous.json() == {"message": "Requires authentication"}


def test_the_manifest_pages_show_the_manifest_and_redirect_back_with_code_and_state(fake):
    import html
    import re

    manifest = json.dumps(
        {
            "name": "sweepbot",
            "url": "https://example.com",
            "redirect_url": "http://127.0.0.1:9/cb",
            "hook_attributes": {"url": "https://bot.example.com/webhook"},
            "default_permissions": {"checks": "write"},
        }
    )
    with httpx.Client(base_url=fake.url, timeout=5.0, trust_env=False) as web:
        page = web.post("/organizations/acme/settings/apps/new?state=s1", data={"manifest": manifest})
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        assert "https://bot.example.com/webhook" in page.text and "checks: write" in page.text
        assert ">Create GitHub App</button>" in page.text
        action = html.unescape(re.search(r'<form method="post" action="([^"]+)"', page.text)[1])
        hidden = html.unescape(re.search(r'name="manifest" value="([^"]*)"', page.text)[1])
        assert action == "/organizations/acme/settings/apps/new?state=s1" and hidden == manifest
        created = web.post(action, data={"manifest": hidden, "create": "1"})
        assert created.status_code == 302
        location = httpx.URL(created.headers["location"])
        assert str(location).startswith("http://127.0.0.1:9/cb?") and location.params["state"] == "s1"
        app = web.post(f"/app-manifests/{location.params['code']}/conversions").json()
        assert app["owner"]["login"] == "acme" and app["html_url"] == f"{fake.url}/apps/sweepbot"
        assert [a["id"] for a in fake.manifest_apps()][-1] == app["id"]
        personal = web.post("/settings/apps/new", data={"manifest": manifest, "create": "1"})
        assert personal.status_code == 302 and "state" not in httpx.URL(personal.headers["location"]).params
        bad = web.post("/settings/apps/new?state=s2", data={"manifest": "{not json"})
        assert bad.status_code == 422 and "not valid JSON" in bad.text
