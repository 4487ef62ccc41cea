"""The one definition of a run the bot dispatched (bot/rules/dispatched_runs.py), as a table and as a property."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.rules.dispatched_runs import bot_run, dispatch_id_of, not_the_bots, recorded, workflow_file
from bot.rules.sweep_record import RunRecord, SweepRecord

BOT = "sweepbot[bot]"
REPO = "acme/InferenceX"
WORKFLOWS = ("run-sweep.yml", "e2e-tests.yml")
DISPATCH = "sw-81-0123456789ab"
RECORD = SweepRecord().add_run(RunRecord(DISPATCH, 500, "a" * 40, "run-sweep.yml"))


def run(**changes) -> dict:
    base = {
        "id": 500,
        "event": "workflow_dispatch",
        "path": ".github/workflows/run-sweep.yml",
        "actor": {"login": BOT},
        "triggering_actor": {"login": BOT},
        "repository": {"full_name": REPO},
        "head_repository": {"full_name": REPO},
        "name": "Run Sweep",
        "display_title": f"Sweep {DISPATCH} model=x",
    }
    base.update(changes)
    return base


@pytest.mark.parametrize(
    "changes, counts",
    [
        pytest.param({}, True, id="the-bots-dispatch"),
        pytest.param({"triggering_actor": {"login": "maintainer"}}, True, id="re-run-by-a-person"),
        pytest.param({"path": ".github/workflows/e2e-tests.yml"}, True, id="fork-workflow"),
        pytest.param({"path": ".github/workflows/run-sweep.yml@refs/heads/main"}, True, id="path-with-ref"),
        pytest.param({"actor": {"login": BOT.upper()}}, True, id="login-case"),
        pytest.param({"event": "pull_request"}, False, id="a-forks-pull_request-run"),
        pytest.param({"event": "push"}, False, id="push"),
        pytest.param({"event": None}, False, id="no-event"),
        pytest.param({"actor": {"login": "partner"}}, False, id="started-by-a-person"),
        pytest.param({"actor": None}, False, id="no-actor"),
        pytest.param({"path": ".github/workflows/ci.yml"}, False, id="other-workflow"),
        pytest.param({"path": "run-sweep.yml"}, False, id="path-outside-workflows"),
        pytest.param({"path": ".github/workflows/x/run-sweep.yml"}, False, id="nested-path"),
        pytest.param({"repository": {"full_name": "partner/InferenceX"}}, False, id="other-repository"),
        pytest.param({"head_repository": {"full_name": "partner/InferenceX"}}, False, id="fork-head-repository"),
        pytest.param({"display_title": "Sweep", "name": "Run Sweep"}, False, id="no-dispatch-id"),
        pytest.param({"display_title": "Sweep sw-81-ffffffffffff"}, False, id="unrecorded-dispatch-id"),
        pytest.param({"display_title": "Sweep sw-82-0123456789ab"}, False, id="other-prs-id"),
        pytest.param({"id": 501}, False, id="recorded-id-other-run"),
        pytest.param({"id": "500"}, False, id="id-not-an-int"),
    ],
)
def test_a_run_counts_only_when_the_bot_dispatched_it_for_this_pr(changes, counts):
    found = bot_run(run(**changes), RECORD, bot_login=BOT, repository=REPO, workflows=WORKFLOWS)
    assert (found is not None) is counts


def test_a_recorded_dispatch_without_a_run_id_is_claimed_by_its_run():
    record = SweepRecord().add_run(RunRecord(DISPATCH, 0, "a" * 40, "run-sweep.yml"))
    assert recorded(run(id=777), record) is record.runs[0]


def test_the_reason_a_run_is_not_the_bots_is_said():
    assert "pull_request" in not_the_bots(
        run(event="pull_request"), bot_login=BOT, repository=REPO, workflows=WORKFLOWS
    )
    assert not_the_bots(run(), bot_login=BOT, repository=REPO, workflows=WORKFLOWS) is None


def test_dispatch_ids_and_workflow_files_are_read_from_the_run():
    assert dispatch_id_of({"display_title": "x", "name": f"y {DISPATCH}"}) == DISPATCH
    assert dispatch_id_of({"display_title": "sw-81-0123456789abc"}) is None, "a longer digest is not an id"
    assert workflow_file({"path": ".github/workflows/run-sweep.yml"}) == "run-sweep.yml"
    assert workflow_file({"path": 3}) is None


LOGINS = st.sampled_from([BOT, "partner", "maintainer", "github-actions[bot]", "", "sweepbot"])
EVENTS = st.sampled_from(
    [
        "workflow_dispatch",
        "pull_request",
        "pull_request_target",
        "push",
        "schedule",
        "workflow_run",
        "repository_dispatch",
        "",
    ]
)


@given(event=EVENTS, actor=LOGINS, title=st.text(max_size=80) | st.just(f"Sweep {DISPATCH}"))
def test_no_run_but_a_bot_dispatch_ever_counts(event, actor, title):
    """Property: whatever its name says, a run whose event is not `workflow_dispatch` or whose actor is not the
    bot never matches a record entry."""
    found = bot_run(
        run(event=event, actor={"login": actor}, display_title=title),
        RECORD,
        bot_login=BOT,
        repository=REPO,
        workflows=WORKFLOWS,
    )
    if event != "workflow_dispatch" or actor.casefold() != BOT:
        assert found is None
