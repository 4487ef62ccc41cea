"""A GitHub failure is retried and, if it keeps failing, recorded and visible: journal, CLI, /healthz, metrics."""

from __future__ import annotations

from harness import REPO

from bot.app import cli


async def test_a_create_github_keeps_failing_is_sent_at_most_twice_per_attempt_then_failed_and_visible(
    make_harness, capsys
):
    """Regression: one comment create was sent up to 15 times (5 client retries × 3 delivery attempts), and
    the old test pinned 10 POSTs as correct. A 502 on a POST is never retried blindly: the executor looks for
    the comment, sends once more only when GitHub shows none, and then the delivery waits for its next try."""
    h = await make_harness(max_attempts=2, retry_for=0.0)  # retry_for 0: give up at the first transient failure
    h.github.fail_next("POST", f"/repos/{REPO}/issues/1/comments", 502, times=1000)
    resp = await h.deliver("pull_request", h.github.pull_request_payload(REPO, 1, "opened"), delivery="bad-1")
    assert resp.status == 202  # the ack never waits for GitHub
    row = await h.journal_row("bad-1")
    assert (row.status, row.attempts) == ("failed", 1)
    assert row.error.startswith("AmbiguousWrite: POST /repos/acme/InferenceX/issues/1/comments")
    assert h.github.count("POST", r"/issues/1/comments$") == 2
    assert h.github.comments(REPO, 1) == []
    health = await (await h.client.get("/healthz")).json()
    assert health["failed"] == 1 and health["last_github_error"]["path"] == f"/repos/{REPO}/issues/1/comments"
    metrics = await (await h.client.get("/metrics")).text()
    assert 'sweepbot_deliveries_total{event="pull_request",outcome="failed"} 1.0' in metrics
    assert 'sweepbot_github_requests_total{method="POST",status="502"} 2.0' in metrics
    assert await cli.deliveries(h.bot.settings, failed_only=True, limit=5) == 0
    assert "bad-1" in capsys.readouterr().out


async def test_a_transient_failure_keeps_the_delivery_for_a_later_try(make_harness):
    h = await make_harness()
    h.github.fail_next("POST", f"/repos/{REPO}/issues/1/comments", 502, times=4)
    await h.deliver("pull_request", h.github.pull_request_payload(REPO, 1, "opened"), delivery="later-1")
    row = await h.journal_row("later-1")
    assert (row.status, row.attempts) == ("done", 3)  # 2 sends per attempt; the third attempt's first one lands
    assert len(h.github.comments(REPO, 1)) == 1


async def test_a_passing_502_on_a_read_costs_a_retry_not_the_delivery(harness):
    harness.github.fail_next("GET", f"/repos/{REPO}/pulls/1/files", 502, times=2)
    await harness.deliver("pull_request", harness.github.pull_request_payload(REPO, 1, "opened"), delivery="ok-1")
    row = await harness.journal_row("ok-1")
    assert (row.status, row.attempts) == ("done", 1)
    assert len(harness.github.comments(REPO, 1)) == 1


async def test_a_pr_that_is_gone_fails_at_once(harness):
    """Regression: a 404 (the PR was deleted, or the repository transferred) was retried 3 times anyway."""
    harness.github.fail_next("GET", f"/repos/{REPO}/pulls/1/files", 404, times=10)
    await harness.deliver("pull_request", harness.github.pull_request_payload(REPO, 1, "opened"), delivery="gone-1")
    row = await harness.journal_row("gone-1")
    assert (row.status, row.attempts, row.error) == ("failed", 1, "BadRequest: Not Found")
    assert harness.github.count("GET", r"/pulls/1/files$") == 1


async def test_writes_go_through_one_pacer_per_installation(harness):
    """Regression: the old check `not state_before or ...` was always true, so it could not fail."""
    h = harness
    await h.deliver("pull_request", h.github.pull_request_payload(REPO, 1, "opened"), delivery="pace-1")
    pacer = h.bot.app._states[1].pacer
    h.github.add_pull(REPO, number=2, user="partner", files=["inferencex-e2e/perf-changelog.yaml"])
    await h.deliver("pull_request", h.github.pull_request_payload(REPO, 2, "opened"), delivery="pace-2")
    assert h.bot.app._states[1].pacer is pacer  # the second delivery's client shares it
    writes = [r for r in h.github.writes if not r.path.startswith("/app/")]
    assert len(pacer._sent) == len(writes) == 5  # PR 1: label, labels, welcome; PR 2: labels, welcome


def test_a_missing_template_is_a_bug_not_a_wait():
    """Regression: jinja2.TemplateNotFound is an OSError, so a kind without its template files was retried
    for six hours as if GitHub were down."""
    import jinja2

    from bot.core.templates import KindNotFound
    from bot.delivery.failures import BUG, TRANSIENT, classify

    assert classify(KindNotFound("x", "missing")) == BUG
    assert classify(jinja2.TemplateNotFound("x")) == BUG
    assert classify(ConnectionResetError()) == TRANSIENT
