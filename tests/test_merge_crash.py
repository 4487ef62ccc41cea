"""SIGKILL between the merge's ref update and the merge notice: GitHub (a process of its own) has merged the PR,
the bot never heard back. The restarted bot resumes the `/merge` delivery from its journal, finds the merge
done (the ledger's intent, then GitHub: the PR merged) instead of merging again, and sends the notice and the
ingest request once; GitHub's `closed` event after it sends nothing more."""

from __future__ import annotations

import signal
import time

import pytest
from harness import free_port, post_webhook, process_health, wait_until_blocking
from test_crash_midwrite import SECRET, start_bot

from bot.app.sandbox import add_sweep_workflows
from bot.rules.markers import marker
from bot.rules.sweep_record import Pin, RunRecord, SweepRecord
from bot.testing.server import FakeGitHubProcess

REPO, FORK, RESULTS = "acme/merge-crash", "partner/merge-crash", "SemiAnalysisAI/InferenceX-app"
CHANGELOG = "inferencex-e2e/perf-changelog.yaml"
HISTORY = b'- config-keys:\n    - a-b-c-d\n  description:\n    - "Older"\n  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/1\n'
ENTRY = b'\n- config-keys:\n    - dsr1-fp8-mi355x-sglang\n  description:\n    - "New recipe"\n  pr-link: XXX\n'
LATENCY = 4.0  # the fast-forward's answer comes this late; the bot is killed meanwhile


@pytest.fixture(scope="module")
def fake():
    with FakeGitHubProcess() as process:
        yield process


def seed(fake: FakeGitHubProcess) -> dict:
    """A fork's PR ready to merge: a green sweep the bot dispatched, pinned in the record, and a passed sign-off."""
    fake.set_clock(time.strftime("%Y-%m-%dT00:00:00Z", time.gmtime()))  # the run's artifacts fresh for the bot
    fake.add_repo(REPO, default_branch="main", installation_id=1)
    fake.add_repo(RESULTS, default_branch="main", installation_id=1)
    fake.set_permission(REPO, "maintainer", "write")
    add_sweep_workflows(fake, REPO)
    pr = fake.add_pull(REPO, number=7, user="partner", head_repo=FORK, head_ref="recipe", files=[CHANGELOG])
    fake.update_pull(REPO, 7, merge_commit_sha="7" * 40)
    fake.set_file(REPO, CHANGELOG, HISTORY.decode(), ref="main")
    fake.set_file(REPO, CHANGELOG, HISTORY.decode(), ref=pr["base"]["sha"])
    fake.set_file(REPO, CHANGELOG, (HISTORY + ENTRY).decode(), ref=pr["head"]["sha"])
    fake.label_issue(REPO, 7, "full-sweep-fail-fast", actor="maintainer")
    run = fake.add_run(
        REPO,
        "e2e-tests.yml",
        head_sha=pr["head"]["sha"],
        head_branch="main",
        event="workflow_dispatch",
        conclusion="success",
        inputs={"dispatch-id": "sw-7-000000000001"},
        actor="sweepbot[bot]",
    )
    fake.add_artifact(REPO, run["id"], "results_bmk_dsr1")
    entry = RunRecord(
        "sw-7-000000000001", run["id"], pr["head"]["sha"], "e2e-tests.yml", "completed", "success", run["html_url"]
    )
    record = SweepRecord().add_run(entry).pinned(Pin(run["id"], 1, "maintainer", "2026-01-01T00:00:00Z"))
    fake.add_comment(REPO, 7, f"{marker('sweep-status')}\n{record.line()}\n", user="sweepbot[bot]", user_type="Bot")
    fake.add_check_run(REPO, "signoff", pr["head"]["sha"], "success")
    return pr


def notices(fake: FakeGitHubProcess) -> int:
    purpose = marker("merge-reuse") + "\n"
    return sum(c["body"].startswith(purpose) for c in fake.comments(REPO, 7))


def ingests(fake: FakeGitHubProcess) -> int:
    return sum(d["event_type"] == "ingest-results" for d in fake.repository_dispatches(RESULTS))


def test_sigkill_after_the_ref_update_resumes_to_one_notice_and_one_ingest(tmp_path, fake, app_key):
    seed(fake)
    fake.set_latency("PATCH", r"/git/refs/heads/main$", LATENCY, commit="start")
    http_timeout = LATENCY + 0.5
    port = free_port()
    comment = fake.add_comment(REPO, 7, "/merge", user="maintainer", author_association="MEMBER")
    payload = fake.issue_comment_payload(REPO, 7, comment)
    first = start_bot(tmp_path, fake, app_key, port, run=1, http_timeout=http_timeout)
    try:
        assert post_webhook(port, "issue_comment", "merge-7", payload, SECRET) == 202
        # GitHub moved main: the PR shows merged; the bot waits for the answer (a refusal would be a reply instead)
        wait_until_blocking(lambda: fake.pull(REPO, 7)["merged"], "GitHub shows the PR merged")
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    assert notices(fake) == 0 and ingests(fake) == 0  # killed before the notice
    fake.clear_latency()
    second = start_bot(tmp_path, fake, app_key, port, run=2, http_timeout=http_timeout)
    try:
        drained = lambda: process_health(port)["backlog"] == 0  # noqa: E731
        wait_until_blocking(drained, "the resumed /merge delivery finished")
        closed = fake.pull_request_payload(REPO, 7, "closed", sender="sweepbot[bot]")
        assert post_webhook(port, "pull_request", "closed-7", closed, SECRET) == 202
        wait_until_blocking(drained, "the closed delivery finished")
        report = process_health(port)
        assert report["backlog"] == 0 and report["failed"] == 0, report
    finally:
        second.send_signal(signal.SIGTERM)
        assert second.wait(30) == 0
    assert fake.count("PATCH", r"/git/refs/heads/main$") == 1  # merged once
    assert notices(fake) == 1 and ingests(fake) == 1
    resumed = (tmp_path / "log-2.jsonl").read_text()
    assert '"msg": "delivery done", "delivery": "merge-7"' in resumed  # the journal's delivery, finished by run 2
