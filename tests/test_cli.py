"""The CLI: receive (dry run and real, in the sandbox), deliveries, redeliver (SQLite, PostgreSQL), manifest, setup."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from postgres import postgres_db, postgres_url  # noqa: F401

from bot.app import cli
from bot.core.config import Settings
from bot.delivery.journal import FAILED, NewDelivery
from bot.delivery.journal_open import open_journal

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "pull_request.opened.json"


def sandbox_settings(tmp_path) -> Settings:
    return Settings.from_env({"SWEEPBOT_DB": str(tmp_path / "j.db")})


async def test_receive_dry_run_prints_the_plan_and_writes_nothing(tmp_path, capsys):
    assert await cli.receive(sandbox_settings(tmp_path), "pull_request", str(EXAMPLE), dry_run=True) == 0
    out = capsys.readouterr().out
    assert "would comment[welcome] on #1" in out and "would add labels to #1: amd, perf-changelog" in out
    assert "    | ## 中文" in out  # the planned comment is shown in full, both languages
    assert "GitHub write" not in out  # the sandbox prints every write: there must be none
    assert "would comment[sweep-status] on #1" in out and "would check run 'sweep-gate'" in out
    assert "7 action(s) planned, none made" in out
    assert "retire earlier review[changelog-suggestions] on #1, if any (nothing to suggest" in out  # no new review


async def test_receive_without_dry_run_writes_to_the_sandbox(tmp_path, capsys):
    assert await cli.receive(sandbox_settings(tmp_path), "pull_request", str(EXAMPLE), dry_run=False) == 0
    out = capsys.readouterr().out
    # the welcome and, as the PR touches the changelog, the sweep status: one each
    assert out.count("GitHub write: POST /repos/demo-org/InferenceX/issues/1/comments -> 201") == 2
    assert "created: comment[welcome]" in out and "created: comment[sweep-status]" in out


async def test_receive_rejects_a_payload_that_is_not_an_object(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("[1]")
    assert await cli.receive(sandbox_settings(tmp_path), "pull_request", str(bad), dry_run=True) == 2
    assert "not a JSON object" in capsys.readouterr().err


async def test_receive_dry_run_shows_no_suggestion_review_that_would_not_be_written(tmp_path, capsys):
    """Regression: the dry run printed the body of the changelog suggestion review ("0 problems ... have
    one obvious fix each") when there was nothing to suggest, a review the executor never writes (with no line
    comments it only retires earlier ones). The dry run shows only what would be written."""
    assert await cli.receive(sandbox_settings(tmp_path), "pull_request", str(EXAMPLE), dry_run=True) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    retire = next(i for i, line in enumerate(lines) if line.startswith("would retire earlier review["))
    assert not lines[retire + 1].startswith("    |"), lines[retire + 1]  # no body under it
    assert "0 problems" not in out and "0 个问题" not in out and "sweepbot-suggestions" not in out
    assert "would comment[welcome] on #1" in out and "    | ## 中文" in out  # what is written is still shown


def payload_file(tmp_path, name: str, change) -> str:
    payload = json.loads(EXAMPLE.read_text())
    change(payload)
    path = tmp_path / name
    path.write_text(json.dumps(payload))
    return str(path)


def pr_number(n: int):
    def change(payload: dict) -> None:
        payload["number"] = payload["pull_request"]["number"] = n

    return change


@pytest.mark.parametrize("dry_run", [True, False])
async def test_receive_on_a_pr_the_sandbox_does_not_hold_is_one_line_and_exit_2(tmp_path, capsys, dry_run):
    """Regression: `sweepbot receive` on PR #5 of the sandbox's demo repository (which holds only #1)
    ended in a 71-line traceback of the fake GitHub's 404. Now one line on stderr saying what is missing, exit 2,
    and nothing written."""
    path = payload_file(tmp_path, "pr5.json", pr_number(5))
    assert await cli.receive(sandbox_settings(tmp_path), "pull_request", path, dry_run=dry_run) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert "demo-org/InferenceX" in err and "#5" in err and "#1" in err  # what is missing, and what is there
    assert "GitHub write" not in out and "would " not in out


async def test_receive_on_a_repository_the_sandbox_does_not_hold_is_one_line_and_exit_2(tmp_path, capsys):
    """Regression: a comment on a PR of a repository the sandbox did not hold: the repository was made
    from the payload but not its PR (an issue_comment names it as an issue), and the handlers' 404 ended in a
    traceback. Now one line, exit 2."""
    comment = {
        "action": "created",
        "issue": {"number": 7, "pull_request": {"url": "x"}, "user": {"login": "a"}},
        "comment": {"id": 1, "body": "/help", "user": {"login": "a", "type": "User"}},
        "repository": {"full_name": "someone/elsewhere", "default_branch": "main"},
        "installation": {"id": 1},
        "sender": {"login": "a", "type": "User"},
    }
    path = tmp_path / "comment.json"
    path.write_text(json.dumps(comment))
    assert await cli.receive(sandbox_settings(tmp_path), "issue_comment", str(path), dry_run=False) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "Traceback" not in err and "someone/elsewhere" in err and "#7" in err, err


async def test_receive_of_a_check_run_on_a_pr_the_sandbox_does_not_hold_is_one_line_and_exit_2(tmp_path, capsys):
    """Regression: "Re-run" of the sweep-gate check of PR #5, which the sandbox does not hold (the PR is
    named only inside check_run), ended in a traceback of the fake GitHub's 404. Now one line naming the request
    that found nothing, exit 2."""
    sha = json.loads(EXAMPLE.read_text())["pull_request"]["head"]["sha"]
    rerun = {
        "action": "rerequested",
        "check_run": {
            "id": 77,
            "name": "sweep-gate",
            "head_sha": sha,
            "app": {"slug": "sweepbot"},
            "check_suite": {"id": 1},
            "pull_requests": [{"number": 5, "head": {"sha": sha}, "base": {"ref": "main"}}],
        },
        "repository": {"full_name": "demo-org/InferenceX", "default_branch": "main"},
        "installation": {"id": 1},
        "sender": {"login": "maintainer", "type": "User"},
    }
    path = tmp_path / "rerun.json"
    path.write_text(json.dumps(rerun))
    assert await cli.receive(sandbox_settings(tmp_path), "check_run", str(path), dry_run=True) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "/repos/demo-org/InferenceX/issues/5/" in err, err


async def test_receive_an_unknown_event_name_is_one_line_and_exit_2(tmp_path, capsys):
    """Regression: `-e pull_requests` said "no handler wants pull_requests.opened" and exited 0, as if
    the bot had nothing to do. A name GitHub never sends the App is now one line naming the close one, exit 2."""
    settings = sandbox_settings(tmp_path)
    for event, suggested in (("pull_requests", "pull_request"), ("issue-comment", "issue_comment"), ("nonsense", None)):
        assert await cli.receive(settings, event, str(EXAMPLE), dry_run=True) == 2, event
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1 and repr(event) in err, err
        if suggested:
            assert f"did you mean {suggested}?" in err
        else:
            assert "did you mean" not in err and "pull_request" in err  # the names it takes instead
    # `ping` GitHub sends every App: no handler wants it, which is an answer, not a mistake
    assert await cli.receive(settings, "ping", str(EXAMPLE), dry_run=True) == 0
    assert "no handler wants ping.opened" in capsys.readouterr().out


# -- serve --help --------------------------------------------------------------------------------------


class ReadsRecorded(dict):
    """An environment that notes every variable asked of it."""

    def __init__(self):
        super().__init__()
        self.read: set[str] = set()

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)

    def __contains__(self, key):
        self.read.add(key)
        return super().__contains__(key)


def test_serve_help_lists_every_variable_the_settings_read(capsys):
    """Regression: `sweepbot serve --help` named no environment variable. It now lists each variable
    `Settings.from_env` reads (found by giving it an environment that notes what is asked), one line each, and
    none it does not read."""
    env = ReadsRecorded()
    Settings.from_env(env, dotenv=False)
    assert {
        "APP_ID",
        "PRIVATE_KEY",
        "PRIVATE_KEY_PATH",
        "WEBHOOK_SECRET",
        "HOST",
        "PORT",
    } <= env.read  # the probe works
    with pytest.raises(SystemExit) as done:
        cli.main(["serve", "--help"])
    assert done.value.code == 0
    listed = {}
    for line in capsys.readouterr().out.splitlines():
        if m := re.match(r"^  ([A-Z][A-Z0-9_]+) +(\S.*)$", line):
            listed[m[1]] = m[2]
    assert set(listed) == env.read, (sorted(env.read - set(listed)), sorted(set(listed) - env.read))
    assert set(cli.ENV_LINES) == env.read  # each with its own line, not the fallback
    assert listed["PORT"].endswith("(default: 3000)") and listed["SWEEPBOT_WORKERS"].endswith("(default: 64)")
    assert listed["SWEEPBOT_WORKER_PROCESS"].endswith("(default: 1)")


def backend_settings(backend, tmp_path, request) -> Settings:
    return (
        sandbox_settings(tmp_path)
        if backend == "sqlite"
        else Settings.from_env({"SWEEPBOT_DB": request.getfixturevalue("postgres_db")}, dotenv=False)
    )


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_deliveries_lists_failures_and_redeliver_queues_one_for_the_workers(backend, tmp_path, capsys, request):
    """Regression: `redeliver` ran the delivery in the CLI's own process (`journal.begin`) beside the
    running workers, so on PostgreSQL a replica could run the same row, or a newer one of its PR, at the same
    time, and both sent. It now only queues the row again; here no worker runs, so it stays queued."""
    settings = backend_settings(backend, tmp_path, request)
    journal = open_journal(settings.db_path)
    payload = json.loads(EXAMPLE.read_text())
    seq = await journal.record(
        NewDelivery("abc-1", "pull_request", "opened", "demo-org/InferenceX", 1, 1, json.dumps(payload).encode())
    )
    await journal.begin(seq)
    await journal.finish(seq, FAILED, "GitHubBroken: 502")
    journal.close()

    assert await cli.deliveries(settings, failed_only=True, limit=10) == 0
    listing = capsys.readouterr().out
    assert "abc-1" in listing and "error: GitHubBroken: 502" in listing and "failed 1" in listing

    assert await cli.redeliver(settings, "abc-1") == 0
    out = capsys.readouterr().out
    assert "delivery abc-1 queued again (it was failed, 1 attempt(s))" in out and "GitHub write" not in out
    assert "sweepbot redeliver --wait SECONDS abc-1" in out
    journal = open_journal(settings.db_path)
    row = await journal.get("abc-1")
    journal.close()
    assert (row.seq, row.status, row.attempts, row.error) == (seq, "queued", 1, None)  # nothing ran it here

    assert await cli.redeliver(settings, "abc-1", wait=0.0) == 1  # queued already, and no worker takes it
    out = capsys.readouterr().out
    assert "delivery abc-1 is queued already" in out and "still queued after 0 s" in out

    assert await cli.redeliver(settings, "nope") == 2
    assert f"no delivery 'nope' in {settings.db_path}" in capsys.readouterr().err


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_redeliver_wait_sees_the_running_workers_run_it_again(backend, make_harness, tmp_path, capsys, request):
    """The running server's workers (SQLite) or replicas (PostgreSQL, under the lane's lease) take the requeued
    row, and `--wait` reports their outcome: the second attempt, done."""
    from harness import REPO

    settings = backend_settings(backend, tmp_path, request)
    h = await make_harness(db_path=settings.db_path)
    await h.deliver("pull_request", h.github.pull_request_payload(REPO, 1, "opened"), delivery="again-1")
    assert ((await h.journal_row("again-1")).status, (await h.journal_row("again-1")).attempts) == ("done", 1)

    assert await cli.redeliver(settings, "again-1", wait=30.0, poll=0.05) == 0
    out = capsys.readouterr().out
    assert "delivery again-1 queued again (it was done, 1 attempt(s))" in out
    assert "delivery again-1 done (attempt 2)" in out
    await h.idle()


async def test_redeliver_unknown_id_says_so(tmp_path, capsys):
    assert await cli.redeliver(sandbox_settings(tmp_path), "nope") == 2
    assert "no delivery 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_redeliver_leaves_a_running_delivery_alone(backend, tmp_path, capsys, request):
    """A row a worker runs now is not queued a second time (which would let a second worker take it)."""
    settings = backend_settings(backend, tmp_path, request)
    journal = open_journal(settings.db_path)
    seq = await journal.record(NewDelivery("run-1", "pull_request", "opened", "demo-org/InferenceX", 1, 1, b"{}"))
    await journal.begin(seq)
    journal.close()
    assert await cli.redeliver(settings, "run-1") == 0
    assert "delivery run-1 is running already" in capsys.readouterr().out
    journal = open_journal(settings.db_path)
    assert await journal.requeue("run-1") is not None  # the journal refuses too, whoever asks
    row = await journal.get("run-1")
    journal.close()
    assert (row.status, row.attempts) == ("running", 1)


# -- manifest / setup -------------------------------------------------------------------------------


def test_manifest_prints_only_json_with_app_yamls_placeholders(capsys):
    assert cli.main(["manifest"]) == 0
    data = json.loads(capsys.readouterr().out)  # the whole output is one JSON document
    assert data["hook_attributes"]["url"] == "https://sweepbot.example.invalid/webhook"
    assert data["redirect_url"] == "https://sweepbot.example.invalid/"


def test_manifest_webhook_url_moves_the_redirect_url_and_keeps_the_homepage(capsys):
    assert cli.main(["manifest", "--webhook-url", "https://bot.example.com:8443/hooks/webhook"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["hook_attributes"] == {"url": "https://bot.example.com:8443/hooks/webhook", "active": True}
    assert data["redirect_url"] == "https://bot.example.com:8443/"
    assert data["url"] == "https://github.com/SemiAnalysisAI/InferenceX"
    assert "contents" in data["default_permissions"]


def test_manifest_redirect_url_and_url_when_given_are_used_as_they_are(capsys):
    assert (
        cli.main(
            [
                "manifest",
                "--webhook-url",
                "https://bot.example.com/webhook",
                "--redirect-url",
                "https://other.example.com/done",
                "--url",
                "https://home.example.com",
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert (data["redirect_url"], data["url"]) == ("https://other.example.com/done", "https://home.example.com")


def test_manifest_refuses_a_webhook_url_that_is_not_https(capsys):
    assert cli.main(["manifest", "--webhook-url", "http://bot.example.com/webhook"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "https://" in err


def test_setup_refuses_an_env_file_that_holds_an_app_id(tmp_path, capsys, monkeypatch):
    async def served(*args, **kwargs):  # had it started serving, the test would say so instead of hanging
        return 99

    monkeypatch.setattr(cli, "setup", served)
    env_file = tmp_path / "bot.env"
    env_file.write_text("APP_ID=42\nPRIVATE_KEY=x\n")
    assert cli.main(["setup", "--env-file", str(env_file), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(env_file) in err and "--env-file" in err
    assert env_file.read_text() == "APP_ID=42\nPRIVATE_KEY=x\n"


def test_setup_on_a_port_in_use_says_so_in_one_line(tmp_path, capsys):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert cli.main(["setup", "--env-file", str(tmp_path / ".env"), "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"127.0.0.1:{port}" in err and "--port" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "flag, value",
    [("--webhook-url", "http://bot.example.com/webhook"), ("--github-url", "https://ghe.example.com/some/path")],
)
def test_setup_refuses_a_bad_url_before_serving(tmp_path, capsys, flag, value):
    assert cli.main(["setup", "--env-file", str(tmp_path / ".env"), flag, value]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and flag in err
