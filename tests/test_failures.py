"""A GitHub failure is retried and, if it keeps failing, recorded and visible: journal, CLI, /healthz, metrics."""

from __future__ import annotations

from bot import cli
from harness import REPO


async def test_a_delivery_github_keeps_failing_ends_failed_and_visible(make_harness, capsys):
    h = await make_harness(max_attempts=2)
    h.github.fail_next("POST", f"/repos/{REPO}/issues/1/comments", 502, times=1000)
    resp = await h.deliver("pull_request", h.github.pull_request_payload(REPO, 1, "opened"), delivery="bad-1")
    assert resp.status == 202  # the ack never waits for GitHub
    row = await h.journal_row("bad-1")
    assert (row.status, row.attempts) == ("failed", 2)
    assert "GitHubBroken" in row.error
    # every attempt retried the request itself (5 tries each) before the delivery gave up
    assert h.github.count("POST", r"/issues/1/comments$") == 2 * 5
    health = await (await h.client.get("/healthz")).json()
    assert health["failed"] == 1 and health["last_github_error"]["path"] == f"/repos/{REPO}/issues/1/comments"
    metrics = await (await h.client.get("/metrics")).text()
    assert 'sweepbot_deliveries_total{event="pull_request",outcome="failed"} 1.0' in metrics
    assert 'sweepbot_github_requests_total{method="POST",status="502"} 10.0' in metrics
    assert await cli.deliveries(h.bot.settings, failed_only=True, limit=5) == 0
    assert "bad-1" in capsys.readouterr().out


async def test_a_passing_502_costs_a_retry_not_the_delivery(harness):
    harness.github.fail_next("GET", f"/repos/{REPO}/pulls/1/files", 502, times=2)
    await harness.deliver("pull_request", harness.github.pull_request_payload(REPO, 1, "opened"), delivery="ok-1")
    row = await harness.journal_row("ok-1")
    assert (row.status, row.attempts) == ("done", 1)
    assert len(harness.github.comments(REPO, 1)) == 1


async def test_writes_go_through_the_pacer_and_reads_do_not(harness):
    h = harness
    state_before = dict(h.bot.app._states)
    await h.deliver("pull_request", h.github.pull_request_payload(REPO, 1, "opened"), delivery="pace-1")
    pacer = h.bot.app._states[1].pacer
    assert not state_before or state_before[1].pacer is pacer  # one pacer per installation, kept
    writes = [r for r in h.github.writes if not r.path.startswith("/app/")]
    assert len(pacer._sent) == len(writes) > 0
