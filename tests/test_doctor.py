"""`sweepbot doctor` against the fake GitHub: all ✅ on a correct install, and each broken piece one ❌ with its fix;
the credentials check `serve` makes before it listens (a wrong key, a malformed key, an unknown App id)."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest
from harness import free_port

from bot.app import cli
from bot.app.doctor import verify_credentials
from bot.core.config import Settings, load_app_yaml
from bot.rules.gate import DISPATCH_INPUTS, FORK_INPUTS
from bot.rules.install_check import failed_deliveries, input_problems, missing_permissions, same_webhook
from bot.testing.server import FakeGitHubProcess

BENCH, RESULTS = "acme/InferenceX", "acme/InferenceX-app"
HOOK = "https://bot.example.com/webhook"
CONFIG = f"results:\n  repository: {RESULTS}\n"
MANIFEST = load_app_yaml()["manifest"]


def settings(app_key: str, **changes: str) -> Settings:
    return Settings(app_id=changes.get("app_id", "1"), private_key=changes.get("private_key", app_key))


def correct_install(fake, app_key: str) -> None:
    """What a correct install holds: the App as the manifest asks, installed on both repositories in one
    installation, a valid config, both sweep workflows with the bot's inputs, the webhook here, no failures."""
    fake.set_app_key(app_key)
    fake.configure_app(
        permissions=dict(MANIFEST["default_permissions"]), events=list(MANIFEST["default_events"]), hook_url=HOOK
    )
    fake.add_repo(BENCH, installation_id=1)
    fake.add_repo(RESULTS, installation_id=1)
    fake.set_file(BENCH, ".github/sweepbot.yml", CONFIG)
    required = {name: {"required": name != "summary"} for name in FORK_INPUTS}
    fake.add_workflow(BENCH, "run-sweep.yml", inputs={n: required[n] for n in DISPATCH_INPUTS})
    fake.add_workflow(BENCH, "e2e-tests.yml", inputs=required)
    fake.add_hook_delivery("pull_request", action="opened", status_code=202)


async def run(app_key: str, *, repo: str | None = None, url: str | None = HOOK, **changes: str) -> tuple[int, str]:
    out = io.StringIO()
    code = await cli.doctor(settings(app_key, **changes), repo, url, out)
    return code, out.getvalue()


async def test_a_correct_install_is_all_ticks(github, app_key):
    correct_install(github, app_key)
    code, out = await run(app_key)
    lines = out.splitlines()
    assert code == 0, out
    assert all(line.startswith("✅") for line in lines), out
    assert len(lines) == 11, out  # credentials, permissions, events, the installation, 2 configs, 2 workflows,
    # the results repository, the webhook URL, the deliveries
    assert f"✅ {BENCH}: the results repository {RESULTS} is in installation 1 (acme) with contents: write" in out
    assert "(results.mode service)" in out
    assert not [r for r in github.requests if r.method != "GET" and "access_tokens" not in r.path]  # read-only
    assert github.count("GET", rf"^/repos/{BENCH}$") == 1  # its default branch, asked once


def _drop(mapping: dict, key: str) -> dict:
    return {k: v for k, v in mapping.items() if k != key}


def broken_permission(fake) -> None:
    fake.configure_app(permissions=dict(MANIFEST["default_permissions"], issues="read"))


def broken_event(fake) -> None:
    fake.configure_app(events=[e for e in MANIFEST["default_events"] if e != "workflow_run"])


def broken_results_installation(fake) -> None:
    fake.move_repo(RESULTS, None)


def broken_results_elsewhere(fake) -> None:
    fake.move_repo(RESULTS, 7)


def broken_workflow_input(fake) -> None:
    fake.delete_workflow(BENCH, "e2e-tests.yml")
    fake.add_workflow(BENCH, "e2e-tests.yml", inputs=list(DISPATCH_INPUTS))  # no merge-sha


def broken_workflow_missing(fake) -> None:
    fake.delete_workflow(BENCH, "run-sweep.yml")


def broken_config(fake) -> None:
    fake.set_file(BENCH, ".github/sweepbot.yml", CONFIG + "labels:\n  primry: []\n")


def broken_webhook(fake) -> None:
    fake.configure_app(hook_url="https://old.example.com/webhook")


def broken_no_webhook(fake) -> None:
    fake.configure_app(hook_url="")


def broken_delivery(fake) -> None:
    fake.add_hook_delivery("issue_comment", action="created", status_code=503, guid="d-503")


def broken_installation_permission(fake) -> None:
    fake.set_installation(1, permissions=dict(MANIFEST["default_permissions"], checks="read"))


# each broken piece: what breaks it, then the ❌ line's words and its fix line's words
BROKEN = {
    "missing permission": (
        broken_permission,
        "❌ permissions: the App lacks issues: write (has read) that app.yaml's manifest asks for",
        "   fix: give them on https://github.com/organizations/acme/settings/apps/sweepbot/permissions, then accept",
    ),
    "missing event": (
        broken_event,
        "❌ events: the App is not subscribed to workflow_run",
        '   fix: tick them under "Subscribe to events" on',
    ),
    "installation has not accepted a permission": (
        broken_installation_permission,
        "❌ installation 1 (acme) has not accepted checks: write (has read)",
        "   fix: an owner of acme accepts the new permissions on https://github.com/organizations/acme/settings/",
    ),
    "not installed on the results repository": (
        broken_results_installation,
        f"❌ {BENCH}: the results repository {RESULTS} (results.repository) is not in any installation",
        f"   fix: add {RESULTS} to installation 1 (acme)'s repositories on",
    ),
    "results repository in another installation": (
        broken_results_elsewhere,
        f"❌ {BENCH}: the results repository {RESULTS} is in installation 7 (acme), not in installation 1",
        "   fix: install the App on both from one account, with both repositories selected",
    ),
    "a workflow without an input": (
        broken_workflow_input,
        f"❌ {BENCH}: .github/workflows/e2e-tests.yml on main would refuse the bot's dispatch:"
        " input `merge-sha` is not declared",
        "   fix: declare under on.workflow_dispatch.inputs exactly the inputs the bot sends",
    ),
    "a workflow not on the default branch": (
        broken_workflow_missing,
        f"❌ {BENCH}: .github/workflows/run-sweep.yml is not on main, and the bot dispatches it (workflows.sweep)",
        "   fix: add it to main (examples/workflows/run-sweep.yml is one), or set workflows.sweep",
    ),
    "a bad config": (
        broken_config,
        f"❌ {BENCH}: .github/sweepbot.yml on main is invalid: labels.primry",
        "   fix: correct it on main (`sweepbot check-config FILE` checks a copy)",
    ),
    "a webhook URL elsewhere": (
        broken_webhook,
        f"❌ webhook URL: GitHub sends deliveries to https://old.example.com/webhook, not to this server ({HOOK})",
        f"   fix: set the Webhook URL on https://github.com/organizations/acme/settings/apps/sweepbot to {HOOK}",
    ),
    "no webhook URL at all": (
        broken_no_webhook,
        "❌ webhook URL: GitHub has none on record, so it sends the App no deliveries",
        f"   fix: set the Webhook URL on https://github.com/organizations/acme/settings/apps/sweepbot to {HOOK}",
    ),
    "a failed delivery": (
        broken_delivery,
        "❌ webhook deliveries: 1 of the last 2 failed and were not delivered since: d-503 (issue_comment.created,",
        "   fix: find why in this server's log by the delivery's id, fix it, then redeliver them on"
        " https://github.com/organizations/acme/settings/apps/sweepbot/advanced",
    ),
}


@pytest.mark.parametrize("broken", BROKEN, ids=list(BROKEN))
async def test_each_broken_piece_is_one_cross_with_its_fix(github, app_key, broken):
    correct_install(github, app_key)
    breaking, line, fix = BROKEN[broken]
    breaking(github)
    code, out = await run(app_key)
    lines = out.splitlines()
    crosses = [i for i, text in enumerate(lines) if text.startswith("❌")]
    assert code == 1, out
    assert len(crosses) == 1, out
    assert lines[crosses[0]].startswith(line), out
    assert lines[crosses[0] + 1].startswith(fix), out


async def test_a_redelivered_failure_no_longer_counts(github, app_key):
    correct_install(github, app_key)
    github.add_hook_delivery("push", status_code=0, status="timed out", guid="again")
    github.add_hook_delivery("push", status_code=202, guid="again", redelivery=True)
    code, out = await run(app_key)
    assert code == 0 and "✅ webhook deliveries: none of the last 3 failed" in out, out


async def test_repo_narrows_it_to_one_repository(github, app_key):
    correct_install(github, app_key)
    github.add_repo("other/Bench", installation_id=2)  # another installation, with no workflows: not looked at
    code, out = await run(app_key, repo=BENCH)
    assert code == 0, out
    assert "other/Bench" not in out and "installation 2" not in out
    code, out = await run(app_key, repo="other/Missing")
    assert code == 1
    assert "❌ other/Missing: the App is not installed on it" in out
    assert "   fix: install it there: https://github.com/apps/sweepbot/installations/new" in out


async def test_without_a_url_the_webhook_is_shown_not_compared(github, app_key, monkeypatch):
    correct_install(github, app_key)
    monkeypatch.delenv("WEBHOOK_URL", raising=False)
    code, out = await run(app_key, url=None)
    assert code == 0 and f"➖ webhook URL: GitHub sends deliveries to {HOOK}; not compared" in out, out
    monkeypatch.setenv("WEBHOOK_URL", "https://bot.example.com/")  # the server's address: its /webhook
    code, out = await run(app_key, url=None)
    assert code == 0 and f"✅ webhook URL: GitHub sends deliveries to {HOOK}, this server" in out, out


# -- credentials: doctor's first line, and what `serve` checks before it listens ---------------------------------


@pytest.fixture(scope="session")
def other_key() -> str:
    from bot.app.sandbox import _generate_key

    return _generate_key()


CREDENTIALS = {
    # what is wrong -> the settings' change, and the ❌ line's words
    "a key of another App": (
        {"private_key": "other"},
        "❌ credentials: GitHub refused App 1's JWT (401 A JSON web token could not be decoded): PRIVATE_KEY is not",
    ),
    "an unknown App id": ({"app_id": "2"}, "❌ credentials: GitHub knows no App 2 (404 Integration not found)"),
    "a malformed key": (
        {"private_key": "hello"},
        "❌ credentials: PRIVATE_KEY cannot sign a JWT (InvalidKeyError): it is not an RSA private key in PEM form",
    ),
    "an App id that is no number": ({"app_id": "abc"}, "❌ credentials: APP_ID 'abc' is not a number"),
}


async def test_without_credentials_doctor_says_which_are_missing(capsys):
    out = io.StringIO()
    assert await cli.doctor(Settings(app_id="1"), None, None, out) == 1
    assert out.getvalue().splitlines() == [
        "❌ credentials: PRIVATE_KEY or PRIVATE_KEY_PATH is not set",
        "   fix: set them in the environment or in .env (`sweepbot setup` writes them)",
    ]
    assert await cli.doctor(Settings(app_id="1"), "not a repo", None, out) == 2
    assert capsys.readouterr().err.startswith("sweepbot: --repo 'not a repo': expected OWNER/NAME")


async def test_a_refusal_that_is_not_the_keys_fault_says_what_github_said(github, app_key):
    correct_install(github, app_key)
    github.fail_next("GET", r"^/app$", 403, json={"message": "Resource not accessible by integration"})
    code, out = await run(app_key)
    assert code == 1
    assert out.startswith("❌ credentials: GitHub answered GET /app with 403 Resource not accessible by integration")


@pytest.mark.parametrize("wrong", CREDENTIALS, ids=list(CREDENTIALS))
async def test_credentials_github_refuses_stop_doctor_at_its_first_line(github, app_key, other_key, wrong):
    correct_install(github, app_key)
    changes, line = CREDENTIALS[wrong]
    changes = {k: other_key if v == "other" else v for k, v in changes.items()}
    code, out = await run(app_key, **changes)
    lines = out.splitlines()
    assert code == 1
    assert len(lines) == 2 and lines[0].startswith(line) and lines[1].startswith("   fix: "), out


@pytest.mark.parametrize("wrong", CREDENTIALS, ids=list(CREDENTIALS))
async def test_serve_refuses_to_listen_with_credentials_github_refuses(
    github, app_key, other_key, tmp_path, capsys, wrong
):
    """Live `serve` with each wrong credential: one line (the same words as doctor's), exit 2, and the port never
    opened (the journal is not even created: nothing can be acknowledged)."""
    correct_install(github, app_key)
    changes, line = CREDENTIALS[wrong]
    changes = {k: other_key if v == "other" else v for k, v in changes.items()}
    live = Settings(
        app_id=changes.get("app_id", "1"),
        private_key=changes.get("private_key", app_key),
        webhook_secrets=("s",),
        port=0,
        db_path=str(tmp_path / "j.db"),
    )
    assert await cli.serve(live, io.StringIO()) == 2
    err = capsys.readouterr().err.splitlines()
    said = line.removeprefix("❌ credentials: ")
    assert len(err) == 1 and err[0].startswith(f"sweepbot: cannot start live: {said}"), err
    assert "; set " in err[0] or "; generate " in err[0]  # the fix follows
    assert not (tmp_path / "j.db").exists()


async def test_a_github_that_does_not_answer_at_start_does_not_stop_serve(github, app_key, tmp_path, capsys):
    """No verdict is no refusal: GitHub down at start leaves serve starting as before (GitHub cannot deliver while
    it is down), with the check made again later; doctor says it cannot reach GitHub."""
    correct_install(github, app_key)
    github.set_down(True)
    live = Settings(
        app_id="1", private_key=app_key, webhook_secrets=("s",), port=0, db_path=str(tmp_path / "j.db"), workers=0
    )
    out = io.StringIO()
    assert await cli.serve(live, out, until_walked=True) == 0
    assert "sweepbot live on http://127.0.0.1:" in out.getvalue() and "NOT READY" not in out.getvalue()
    assert capsys.readouterr().err == ""
    code, said = await run(app_key)
    assert code == 1 and said.startswith("❌ credentials: cannot reach GitHub at https://api.github.com"), said


async def test_with_the_flag_serve_listens_not_ready_and_refuses_webhooks(github, app_key, other_key, tmp_path):
    from aiohttp.test_utils import TestClient, TestServer

    from bot.app.runtime import Bot
    from bot.app.server import make_app
    from bot.telemetry.metrics import Metrics

    correct_install(github, app_key)
    live = Settings(
        app_id="1", private_key=other_key, webhook_secrets=("s",), db_path=str(tmp_path / "j.db"), workers=0
    )
    app = cli.live_github(live, Metrics())
    verdict = await verify_credentials(app)
    assert verdict.app is None
    bot = Bot(live, app)
    bot.unverified = verdict.problem
    try:
        report = await bot.readiness()
        assert report["ok"] is False and report["credentials"].startswith("refused by GitHub: GitHub refused App 1")
        async with TestClient(TestServer(make_app(bot))) as client:
            answer = await client.post("/webhook", data=b"{}", headers={"X-Hub-Signature-256": "sha256=" + "0" * 64})
            assert answer.status == 503
            assert (await client.get("/readyz")).status == 503
            bot.unverified = None  # accepted on a later check: ready again
            assert (await client.get("/readyz")).status == 200
    finally:
        await bot.stop()


def test_live_serve_with_a_wrong_key_is_one_line_and_exit_2(tmp_path, other_key, app_key):
    """The operator's mistake as it happens: `sweepbot serve` in a process of its own, a GitHub that knows the
    App's real key, a key of another App in the environment."""
    with FakeGitHubProcess() as fake:
        fake.set_app_key(app_key)
        env = {
            **os.environ,
            "APP_ID": "1",
            "PRIVATE_KEY": other_key,
            "WEBHOOK_SECRET": "s",
            "GITHUB_API_URL": fake.url,
            "PORT": str(free_port()),
            "SWEEPBOT_DB": str(tmp_path / "j.db"),
        }
        done = subprocess.run(
            [sys.executable, "-m", "bot.app.cli", "serve"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith("sweepbot: cannot start live: GitHub refused App 1's JWT (401"), done.stderr
    assert "live on" not in done.stdout and not (tmp_path / "j.db").exists()


# -- the rules alone ---------------------------------------------------------------------------------------------

WORKFLOWS = {
    # a workflow's text -> the problems' codes and names for the gate's inputs
    "every input, strings": (
        "on:\n  workflow_dispatch:\n    inputs:\n" + "".join(f"      {n}: {{type: string}}\n" for n in DISPATCH_INPUTS),
        [],
    ),
    "flags as booleans, the PR as a number": (
        "on:\n  workflow_dispatch:\n    inputs:\n"
        + "".join(f"      {n}: {{type: string}}\n" for n in DISPATCH_INPUTS if n not in ("canary", "pr-number"))
        + "      canary: {type: boolean}\n      pr-number: {type: number}\n",
        [],
    ),
    "a head sha as a boolean": (
        "on:\n  workflow_dispatch:\n    inputs:\n"
        + "".join(f"      {n}: {{type: {'boolean' if n == 'head-sha' else 'string'}}}\n" for n in DISPATCH_INPUTS),
        [("wrong_type", "head-sha")],
    ),
    "a required input the bot never sends": (
        "on:\n  workflow_dispatch:\n    inputs:\n"
        + "".join(f"      {n}: {{}}\n" for n in DISPATCH_INPUTS)
        + "      region: {required: true}\n",
        [("not_sent", "region")],
    ),
    "a required input with a default": (
        "on:\n  workflow_dispatch:\n    inputs:\n"
        + "".join(f"      {n}: {{}}\n" for n in DISPATCH_INPUTS)
        + "      region: {required: true, default: eu}\n",
        [],
    ),
    "no workflow_dispatch": ("on: push\n", [("no_inputs", None)]),
    "workflow_dispatch without inputs": (
        "on: [push, workflow_dispatch]\n",
        [("undeclared", n) for n in DISPATCH_INPUTS],
    ),
    "not YAML": ("on: [\n", [("not_yaml", None)]),
    "too big": ("#" * (512 * 1024 + 1), [("too_big", None)]),
}


@pytest.mark.parametrize("case", WORKFLOWS, ids=list(WORKFLOWS))
def test_workflow_inputs_against_what_the_bot_sends(case):
    text, expected = WORKFLOWS[case]
    assert [(p.code, p.name) for p in input_problems(text, DISPATCH_INPUTS)] == expected


@pytest.mark.parametrize(
    ("wanted", "granted", "missing"),
    [
        ({"contents": "write"}, {"contents": "write"}, {}),
        ({"contents": "write"}, {"contents": "admin"}, {}),
        ({"contents": "write"}, {"contents": "read"}, {"contents": "read"}),
        ({"members": "read"}, {}, {"members": "none"}),
    ],
)
def test_a_permission_is_covered_by_its_level_or_a_higher_one(wanted, granted, missing):
    assert missing_permissions(wanted, granted) == missing


@pytest.mark.parametrize(
    ("recorded", "ours", "same"),
    [
        (HOOK, HOOK, True),
        (HOOK, "https://bot.example.com", True),
        (HOOK + "/", "https://BOT.example.com/webhook", True),
        (HOOK, "https://bot.example.com/hooks", False),
        (HOOK, "http://bot.example.com/webhook", False),
        (None, HOOK, False),
    ],
)
def test_the_webhook_url_on_record_against_this_server(recorded, ours, same):
    assert same_webhook(recorded, ours) is same


def test_failed_deliveries_newest_first_and_not_once_redelivered():
    log = [  # newest first, as GitHub lists them
        {"guid": "a", "status_code": 202},
        {"guid": "b", "status_code": 500},
        {"guid": "a", "status_code": 0},
        {"guid": "c", "status_code": 404},
        {"guid": "b", "status_code": 502},
    ]
    assert [d["guid"] for d in failed_deliveries(log)] == ["b", "c"]


async def test_with_no_results_service_doctor_says_which_mode_is_on_and_checks_no_results_repository(github, app_key):
    correct_install(github, app_key)
    github.set_file(BENCH, ".github/sweepbot.yml", CONFIG + "  mode: none\n")
    code, out = await run(app_key)
    assert code == 0, out
    assert f"➖ {BENCH}: results.mode is none: no results service" in out
    assert "the bot may send it repository_dispatch" not in out
