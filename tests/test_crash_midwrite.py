"""SIGKILL while handlers are writing: GitHub (a separate process) has acted, the bot never heard back.

The fake GitHub runs in its own process, so its state outlives the bot. Comment creates take 3 s; the bot is
killed after the fake has received some of them (GitHub acted, or is about to), restarted at once, and must
end with exactly one welcome on every PR: the resumed deliveries find their intents in the ledger, wait out
the dead process's requests and reconcile instead of sending again.
"""

from __future__ import annotations

import signal
import time

import pytest
from harness import free_port, post_webhook, process_health, start_server_process

from bot.testing.server import FakeGitHubProcess

SECRET = "crash-secret"
CHANGELOG = "inferencex-e2e/perf-changelog.yaml"


@pytest.fixture(scope="module")
def fake():
    with FakeGitHubProcess() as process:
        yield process


def seed(fake: FakeGitHubProcess, repo: str, prs: int) -> None:
    fake.add_repo(repo, default_branch="main", installation_id=1)
    for number in range(1, prs + 1):
        fake.add_pull(
            repo, number=number, user=f"partner{number}", head_repo=f"partner{number}/fork", files=[CHANGELOG]
        )
        # GitHub has computed the merge commit: the sweep gate reads and writes at once, without waiting for it
        fake.update_pull(repo, number, merge_commit_sha=f"{number:040x}")


def start_bot(tmp_path, fake: FakeGitHubProcess, app_key: str, port: int, run: int, http_timeout: float):
    env = {
        "APP_ID": "1",
        "PRIVATE_KEY": app_key,
        "WEBHOOK_SECRET": SECRET,
        "GITHUB_API_URL": fake.url,
        "SWEEPBOT_DB": str(tmp_path / "journal.db"),
        "SWEEPBOT_WORKERS": "8",
        "SWEEPBOT_WRITES_PER_MINUTE": "0",
        "SWEEPBOT_HTTP_TIMEOUT": str(http_timeout),
        "LOG_LEVEL": "INFO",
    }
    return start_server_process(
        port,
        env,
        cwd=tmp_path,
        stdout=open(tmp_path / f"out-{run}.txt", "w"),
        stderr=open(tmp_path / f"log-{run}.jsonl", "w"),
    )


def post(port: int, delivery: str, payload: dict) -> int:
    return post_webhook(port, "pull_request", delivery, payload, SECRET)


health = process_health


def comment_posts(fake: FakeGitHubProcess) -> int:
    """Creates GitHub has answered (the fake records a request when it answers)."""
    return fake.count("POST", r"/issues/\d+/comments$")


def comment_reads(fake: FakeGitHubProcess) -> int:
    """A welcome handler reads the comments, then sends its create at once."""
    return fake.count("GET", r"/issues/\d+/comments$")


@pytest.mark.parametrize(
    "prs, kill_after, commit, latency",
    [
        (20, 1, "start", 3.0),  # the first create is under way: GitHub has written it, the bot waits for the answer
        # eight creates under way; GitHub writes them 6 s later, after the restarted bot has read the comments:
        # only the intents in the ledger stop it from writing them again
        (20, 8, "end", 6.0),
        (50, 25, "start", 3.0),  # half-way through 50 PRs
    ],
)
def test_sigkill_mid_write_then_immediate_restart_gives_exactly_one_of_each_comment_per_pr(
    tmp_path, fake, app_key, prs, kill_after, commit, latency
):
    http_timeout = latency + 0.5  # the client outwaits a slow create; the restart waits out the whole request
    fake.call("reset_requests")
    fake.clear_latency()
    repo = f"acme/crash-{prs}-{kill_after}-{commit}"  # a repository of its own per case
    seed(fake, repo, prs)
    fake.set_latency("POST", r"/issues/\d+/comments$", latency, commit=commit)
    port = free_port()
    first = start_bot(tmp_path, fake, app_key, port, run=1, http_timeout=http_timeout)
    try:
        for number in range(1, prs + 1):
            payload = fake.pull_request_payload(repo, number, "opened", sender=f"partner{number}")
            assert post(port, f"open-{number}", payload) == 202
        deadline = time.monotonic() + 60
        while comment_reads(fake) < kill_after and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(
            1.0
        )  # their creates are on the wire now (each PR reads a few files first), unanswered for `latency` s
        reads = comment_reads(fake)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    heard = (tmp_path / "log-1.jsonl").read_text().count('"msg": "comment created"')
    # the killed process really was writing: each PR it had read makes two comments (status, welcome), and
    # some of those creates were not answered when it died
    assert reads >= kill_after and heard < 2 * reads
    second = start_bot(tmp_path, fake, app_key, port, run=2, http_timeout=http_timeout)
    try:
        deadline = time.monotonic() + 120
        while health(port)["backlog"] and time.monotonic() < deadline:
            time.sleep(0.2)
        report = health(port)
        assert report["backlog"] == 0 and report["failed"] == 0, report
    finally:
        second.send_signal(signal.SIGTERM)
        assert second.wait(30) == 0
    # every handler wrote while the bot died: the sweep gate's status comment and check run, and the welcome
    found = {}
    for number in range(1, prs + 1):
        mine = [c["body"] for c in fake.comments(repo, number) if c["user"]["login"] == "sweepbot[bot]"]
        found[number] = (
            sum(b.startswith("<!-- sweepbot:welcome -->") for b in mine),
            sum(b.startswith("<!-- sweepbot:sweep-status -->") for b in mine),
        )
    assert found == {n: (1, 1) for n in range(1, prs + 1)}
    heads = [fake.pull(repo, n)["head"]["sha"] for n in range(1, prs + 1)]
    assert [len([c for c in fake.check_runs(repo, sha) if c["name"] == "sweep-gate"]) for sha in heads] == [1] * prs
    log = (tmp_path / "log-2.jsonl").read_text()
    assert "effect found done by an earlier attempt" in log or "waiting out an earlier attempt" in log
