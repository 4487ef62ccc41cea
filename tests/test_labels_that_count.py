"""Labels count only from people GitHub trusts to write, on every PR: each hole of authority's second pass about
labels, through the webhook into the shared fake. A triage-role user can label any PR but not write: their sweep
labels start, restart and stop nothing, and change no pin, unless the policy lets the triage role start sweeps
on the repository's own branches."""

from __future__ import annotations

import pytest
from harness import REPO
from test_reuse_command import command, fake_clock, finished_run, pin, reactions, reply  # noqa: F401
from test_sweep_gate import (  # noqa: F401  the fixtures this module's tests take
    FAIL_FAST,
    english,
    label,
    make_harness,
    no_merge_wait,
    open_pull,  # noqa: F401
    repo,
    runs,
    status,
    unlabel,
)


@pytest.fixture
def triager(repo):
    repo.set_permission(REPO, "triager", "triage")
    return repo


def labels_line(github, number: int) -> str:
    return next(line for line in english(status(github, number)).splitlines() if "**Sweep labels:**" in line)


def going(github) -> list[dict]:
    return [r for r in runs(github) if r["conclusion"] != "cancelled"]


async def test_a_triagers_primary_on_a_same_repo_pr_starts_nothing_and_is_said_not_to_count(triager, make_harness):
    """Regression: on a same-repository PR a triager's primary label dispatched a sweep."""
    open_pull(triager, 101)
    h = await make_harness()
    await label(h, 101, FAIL_FAST, by="triager")
    assert runs(triager) == []
    line = labels_line(triager, 101)
    assert "Not counted" in line and f"`{FAIL_FAST}`" in line and "`triager`" in line, line
    assert FAIL_FAST in [lb["name"] for lb in triager.pull(REPO, 101)["labels"]], "left on, not removed"


async def test_a_triagers_modifier_and_removal_leave_a_maintainers_sweep_running(triager, make_harness):
    """Regression: a triager's modifier cancelled the maintainer's run and started another, and removing the
    label cancelled it."""
    open_pull(triager, 102)
    h = await make_harness()
    await label(h, 102, FAIL_FAST)
    (run,) = runs(triager)
    await label(h, 102, "all-evals", by="triager")
    await unlabel(h, 102, FAIL_FAST, by="triager")
    assert [r["id"] for r in going(triager)] == [run["id"]] and len(runs(triager)) == 1
    line = labels_line(triager, 102)
    assert "Still counted" in line and "removed by `triager`" in line, line
    # the primary is off the PR already: to stop the sweep a maintainer adds it and takes it off again
    await label(h, 102, FAIL_FAST)
    await unlabel(h, 102, FAIL_FAST)
    assert going(triager) == [], "a maintainer's removal stops the sweep"


async def test_with_the_policy_switch_a_triagers_primary_starts_a_same_repo_sweep(triager, make_harness):
    triager.set_file(REPO, ".github/sweepbot.yml", b"sweeps:\n  triage_may_start: true\n", ref="main")
    open_pull(triager, 103)
    h = await make_harness()
    await label(h, 103, FAIL_FAST, by="triager")
    assert len(runs(triager)) == 1


async def test_on_a_fork_a_triagers_evals_only_does_not_refuse_a_maintainers_pin(triager, make_harness):
    """Regression: on a fork, `evals-only` added by a triager made a maintainer's `/use` refused ("carries
    `evals-only`") while the status said that label did not count."""
    open_pull(triager, 104, fork=True)
    h = await make_harness()
    await label(h, 104, FAIL_FAST)
    run = finished_run(triager, 104)
    await label(h, 104, "evals-only", by="triager")
    c = await command(h, 104, f"/use {run['id']}")
    assert reactions(triager, c) == ["+1"] and pin(triager, 104).run_id == run["id"], reply(triager, 104, c)


async def test_on_a_fork_a_triager_removing_the_primary_does_not_stop_staging(triager, make_harness):
    """Regression: removing the writer's primary made `/use` answer that staging needs a primary label."""
    triager.add_repo("SemiAnalysisAI/InferenceX-app", installation_id=1)
    open_pull(triager, 105, fork=True)
    h = await make_harness()
    await label(h, 105, FAIL_FAST)
    run = finished_run(triager, 105)
    await unlabel(h, 105, FAIL_FAST, by="triager")
    c = await command(h, 105, f"/use {run['id']}")
    assert reactions(triager, c) == ["+1"]
    assert len(triager.repository_dispatches("SemiAnalysisAI/InferenceX-app")) == 1, reply(triager, 105, c)
