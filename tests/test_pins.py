"""Table-driven tests of the reuse-pin rules (bot/rules/pins.py): eligibility, selection, summaries, withdrawn pins."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.core.config import default_policy
from bot.rules.commands import parse
from bot.rules.pins import (
    AUTOMATIC_CONCLUSIONS,
    BLOCKED_BY_LABEL,
    CODES,
    CONCLUSION_NOT_ALLOWED,
    DELETED,
    EDITED,
    EDITED_BY_OTHER,
    ELIGIBLE,
    NEW_PIN_COMMAND,
    NO_RESULT_ARTIFACT,
    NOT_COMPLETED,
    NOT_DISPATCHED,
    PINNED_CONCLUSIONS,
    RESULT_ARTIFACTS,
    WRONG_WORKFLOW,
    Verdict,
    check_run,
    expiry,
    held_pin_change,
    is_result_artifact,
    newest_eligible,
)
from bot.rules.policy import Policy
from bot.rules.sweep_record import Pin, SweepRecord, Withdrawal

POLICY = default_policy()
NAMES = POLICY.commands.names()
NOW = datetime(2025, 7, 1, 12, 0, 0, tzinfo=UTC)
HEAD, STRANGER = "a" * 40, "c" * 40
RUN_ID = 101
LATER = (NOW + timedelta(days=30)).isoformat()
EARLIER = (NOW - timedelta(seconds=1)).isoformat()


def run(**changes):
    """A finished, successful run-sweep.yml run on the PR's head, with `changes` applied (None deletes a key)."""
    base = {
        "id": RUN_ID,
        "path": ".github/workflows/run-sweep.yml",
        "status": "completed",
        "conclusion": "success",
        "head_sha": HEAD,
        "run_attempt": 1,
        "name": "Run Sweep",
        "display_title": "Sweep sw-7-0123456789ab",
        "created_at": "2025-06-30T10:00:00Z",
        "run_started_at": "2025-06-30T10:00:05Z",
    }
    base.update(changes)
    return {key: value for key, value in base.items() if value is not None}


def artifact(name="results_bmk_mi355x", expired=False, expires_at=LATER):
    item = {"name": name, "expired": expired}
    if expires_at is not None:
        item["expires_at"] = expires_at
    return item


LIVE = [artifact()]


def check(
    r=None,
    *,
    pinned=True,
    dispatched=True,
    fork=False,
    artifacts=LIVE,
    labels=("full-sweep-enabled",),
    policy=POLICY,
    now=NOW,
) -> Verdict:
    return check_run(
        run() if r is None else r,
        pinned=pinned,
        dispatched=dispatched,
        fork=fork,
        artifacts=artifacts,
        labels=labels,
        now=now,
        policy=Policy.model_validate(policy) if isinstance(policy, dict) else policy,
    )


# --- check_run: one row per rule and boundary -----------------------------------------------------

CHECK_CASES = [
    # (id, kwargs for check(), expected code)
    ("eligible-pinned", {}, ELIGIBLE),
    ("eligible-automatic", {"pinned": False}, ELIGIBLE),
    # the workflow
    ("fork-workflow-on-a-same-repo-pr", {"r": run(path=".github/workflows/e2e-tests.yml")}, WRONG_WORKFLOW),
    # regression: a fork PR's real sweep (the trusted e2e-tests.yml) was refused as "wrong workflow"
    ("fork-workflow-on-a-fork-pr", {"r": run(path=".github/workflows/e2e-tests.yml"), "fork": True}, ELIGIBLE),
    ("sweep-workflow-on-a-fork-pr", {"fork": True}, WRONG_WORKFLOW),
    ("other-workflow", {"r": run(path=".github/workflows/lint.yml")}, WRONG_WORKFLOW),
    ("same-name-elsewhere", {"r": run(path="ci/run-sweep.yml")}, WRONG_WORKFLOW),
    ("workflow-case", {"r": run(path=".github/workflows/Run-Sweep.yml")}, WRONG_WORKFLOW),
    ("no-path", {"r": run(path=None)}, WRONG_WORKFLOW),
    (
        "override-workflow",
        {"policy": {**POLICY.to_dict(), "workflows": {"sweep": "bench.yml", "fork_sweep": "e2e-tests.yml"}}},
        WRONG_WORKFLOW,
    ),
    # status
    ("queued", {"r": run(status="queued", conclusion=None)}, NOT_COMPLETED),
    ("in-progress", {"r": run(status="in_progress", conclusion=None)}, NOT_COMPLETED),
    ("rerun-in-progress", {"r": run(status="in_progress", conclusion=None, run_attempt=2)}, NOT_COMPLETED),
    ("rerun-finished", {"r": run(run_attempt=3)}, ELIGIBLE),
    ("rerun-finished-automatic", {"r": run(run_attempt=2), "pinned": False}, ELIGIBLE),
    # conclusions: pinned allows success, failure, cancelled; automatic only success
    ("pinned-failure", {"r": run(conclusion="failure")}, ELIGIBLE),
    ("pinned-cancelled", {"r": run(conclusion="cancelled")}, ELIGIBLE),
    ("pinned-timed-out", {"r": run(conclusion="timed_out")}, CONCLUSION_NOT_ALLOWED),
    ("pinned-skipped", {"r": run(conclusion="skipped")}, CONCLUSION_NOT_ALLOWED),
    ("pinned-neutral", {"r": run(conclusion="neutral")}, CONCLUSION_NOT_ALLOWED),
    ("pinned-startup-failure", {"r": run(conclusion="startup_failure")}, CONCLUSION_NOT_ALLOWED),
    ("pinned-action-required", {"r": run(conclusion="action_required")}, CONCLUSION_NOT_ALLOWED),
    ("pinned-no-conclusion", {"r": run(conclusion=None)}, CONCLUSION_NOT_ALLOWED),
    ("pinned-conclusion-case", {"r": run(conclusion="Success")}, CONCLUSION_NOT_ALLOWED),
    ("automatic-failure", {"r": run(conclusion="failure"), "pinned": False}, CONCLUSION_NOT_ALLOWED),
    ("automatic-cancelled", {"r": run(conclusion="cancelled"), "pinned": False}, CONCLUSION_NOT_ALLOWED),
    # who started it: only a sweep the bot dispatched for this PR, whatever commit it ran on
    ("not-dispatched", {"dispatched": False}, NOT_DISPATCHED),
    ("not-dispatched-automatic", {"dispatched": False, "pinned": False}, NOT_DISPATCHED),
    ("dispatched-on-another-commit", {"r": run(head_sha=STRANGER)}, ELIGIBLE),
    ("dispatched-without-head-sha", {"r": run(head_sha=None)}, ELIGIBLE),
    # artifacts
    ("no-artifacts", {"artifacts": []}, NO_RESULT_ARTIFACT),
    ("only-expired-flag", {"artifacts": [artifact(expired=True)]}, NO_RESULT_ARTIFACT),
    ("only-expired-date", {"artifacts": [artifact(expires_at=EARLIER)]}, NO_RESULT_ARTIFACT),
    ("expires-exactly-now", {"artifacts": [artifact(expires_at=NOW.isoformat())]}, NO_RESULT_ARTIFACT),
    ("expires-now-z", {"artifacts": [artifact(expires_at="2025-07-01T12:00:00Z")]}, NO_RESULT_ARTIFACT),
    ("expires-in-a-second", {"artifacts": [artifact(expires_at="2025-07-01T12:00:01Z")]}, ELIGIBLE),
    ("expires-naive-utc", {"artifacts": [artifact(expires_at="2025-07-01T12:00:01")]}, ELIGIBLE),
    ("expires-other-zone", {"artifacts": [artifact(expires_at="2025-07-01T13:00:00+02:00")]}, NO_RESULT_ARTIFACT),
    ("expires-garbled", {"artifacts": [artifact(expires_at="soon")]}, NO_RESULT_ARTIFACT),
    ("no-expiry-not-flagged", {"artifacts": [artifact(expires_at=None)]}, ELIGIBLE),
    ("no-expiry-flagged", {"artifacts": [artifact(expires_at=None, expired=True)]}, NO_RESULT_ARTIFACT),
    ("flag-beats-date", {"artifacts": [artifact(expired=True, expires_at=LATER)]}, NO_RESULT_ARTIFACT),
    (
        "non-result-names",
        {"artifacts": [artifact("logs"), artifact("server_logs_bmk"), artifact("results")]},
        NO_RESULT_ARTIFACT,
    ),
    (
        "near-miss-names",
        {
            "artifacts": [
                artifact("Results_bmk1"),
                artifact("eval_results_all_2"),
                artifact("bmk_agentic"),
                artifact("xresults_bmk"),
            ]
        },
        NO_RESULT_ARTIFACT,
    ),
    (
        "one-live-among-expired",
        {"artifacts": [artifact(expired=True), artifact("logs"), artifact("eval_results_all")]},
        ELIGIBLE,
    ),
    ("agentic-artifact", {"artifacts": [artifact("bmk_agentic_coding")]}, ELIGIBLE),
    ("bare-prefix", {"artifacts": [artifact("results_bmk")]}, ELIGIBLE),
    ("artifact-without-name", {"artifacts": [{"expired": False, "expires_at": LATER}]}, NO_RESULT_ARTIFACT),
    # labels: evals-only and agentx-fast block, all-evals does not; case-insensitive
    ("all-evals-allowed", {"labels": ("full-sweep-enabled", "all-evals")}, ELIGIBLE),
    ("evals-only", {"labels": ("full-sweep-enabled", "evals-only")}, BLOCKED_BY_LABEL),
    ("agentx-fast", {"labels": ("agentx-fast",)}, BLOCKED_BY_LABEL),
    ("label-upper-case", {"labels": ("EVALS-ONLY",)}, BLOCKED_BY_LABEL),
    ("label-mixed-case", {"labels": ("AgentX-Fast",)}, BLOCKED_BY_LABEL),
    ("label-lookalike", {"labels": ("evals-only-please", "agentx")}, ELIGIBLE),
    ("no-labels", {"labels": ()}, ELIGIBLE),
    (
        "renamed-modifier",
        {
            "labels": ("evals-only",),
            "policy": {
                **POLICY.to_dict(),
                "labels": {
                    **POLICY.to_dict()["labels"],
                    "modifiers": {"all_evals": "ae", "evals_only": "eo", "agentx_fast": "af"},
                },
            },
        },
        ELIGIBLE,
    ),
    # the first failing check is the one reported
    (
        "order-workflow-first",
        {"r": run(path="x", status="queued"), "dispatched": False, "artifacts": [], "labels": ("evals-only",)},
        WRONG_WORKFLOW,
    ),
    (
        "order-dispatched-before-status",
        {"r": run(status="queued", conclusion=None), "dispatched": False},
        NOT_DISPATCHED,
    ),
    (
        "order-status-before-conclusion",
        {"r": run(status="in_progress", conclusion=None, head_sha=STRANGER)},
        NOT_COMPLETED,
    ),
    (
        "order-conclusion-before-artifacts",
        {"r": run(conclusion="failure"), "pinned": False, "artifacts": []},
        CONCLUSION_NOT_ALLOWED,
    ),
    ("order-artifacts-before-labels", {"artifacts": [], "labels": ("evals-only",)}, NO_RESULT_ARTIFACT),
]


@pytest.mark.parametrize("kwargs, expected", [pytest.param(k, e, id=i) for i, k, e in CHECK_CASES])
def test_check_run(kwargs, expected):
    verdict = check(**kwargs)
    assert verdict.code == expected
    assert verdict.ok is (expected == ELIGIBLE)


def test_every_code_has_a_case():
    assert {expected for _, _, expected in CHECK_CASES} == set(CODES)


PARAM_CASES = [
    (
        "wrong-workflow",
        {"r": run(path=".github/workflows/e2e-tests.yml")},
        {"path": ".github/workflows/e2e-tests.yml", "workflow": ".github/workflows/run-sweep.yml"},
    ),
    ("not-completed", {"r": run(status="queued", conclusion=None)}, {"status": "queued"}),
    (
        "conclusion-automatic",
        {"r": run(conclusion="failure"), "pinned": False},
        {"conclusion": "failure", "allowed": ("success",)},
    ),
    (
        "conclusion-pinned",
        {"r": run(conclusion="timed_out")},
        {"conclusion": "timed_out", "allowed": ("success", "failure", "cancelled")},
    ),
    (
        "no-result-artifact",
        {"artifacts": [artifact("logs"), artifact(expired=True), artifact("eval_results_all", expires_at=EARLIER)]},
        {
            "artifacts": ("logs", "results_bmk_mi355x", "eval_results_all"),
            "expired": ("results_bmk_mi355x", "eval_results_all"),
            "patterns": RESULT_ARTIFACTS,
            "expiry": (
                {"name": "results_bmk_mi355x", "date": None},
                {"name": "eval_results_all", "date": "2025-07-01"},
            ),
        },
    ),
    (
        "blocked-by-label",
        {"labels": ("AgentX-Fast", "full-sweep-enabled", "Evals-Only")},
        {"labels": ("Evals-Only", "AgentX-Fast")},
    ),
    (
        "eligible",
        {
            "r": run(conclusion="cancelled", run_attempt=2),
            "artifacts": [artifact("logs"), artifact(), artifact("bmk_agentic_x", expired=True)],
        },
        {
            "conclusion": "cancelled",
            "artifacts": ("results_bmk_mi355x",),
            "expiry": ({"name": "results_bmk_mi355x", "date": "2025-07-31"},),
        },
    ),
]


@pytest.mark.parametrize("kwargs, extra", [pytest.param(k, e, id=i) for i, k, e in PARAM_CASES])
def test_check_run_params(kwargs, extra):
    verdict = check(**kwargs)
    r = kwargs.get("r", run())
    assert verdict.params == {
        "run_id": r["id"],
        "head_sha": r.get("head_sha"),
        "run_attempt": r["run_attempt"],
        **extra,
    }


EXPIRY_CASES = [
    ("GitHub's form", {"name": "a", "expires_at": "2027-01-30T08:15:00Z"}, "2027-01-30"),
    ("an offset: the UTC day", {"name": "a", "expires_at": "2027-01-30T23:30:00-02:00"}, "2027-01-31"),
    ("no time", {"name": "a"}, None),
    ("a time that does not parse", {"name": "a", "expires_at": "soon"}, None),
    ("not a string", {"name": "a", "expires_at": 1769760000}, None),
]


@pytest.mark.parametrize("item, date", [pytest.param(a, d, id=i) for i, a, d in EXPIRY_CASES])
def test_expiry_is_the_utc_day_github_gives(item, date):
    assert expiry([item]) == ({"name": "a", "date": date},)


def test_an_artifact_flagged_expired_before_its_time_shows_no_day():
    verdict = check(
        artifacts=[artifact(expired=True, expires_at=LATER), artifact("eval_results_all", expires_at=EARLIER)]
    )
    assert verdict.code == NO_RESULT_ARTIFACT
    assert verdict.params["expiry"] == (
        {"name": "results_bmk_mi355x", "date": None},
        {"name": "eval_results_all", "date": "2025-07-01"},
    )


def test_not_dispatched_names_the_run_and_its_commit():
    verdict = check(run(head_sha=STRANGER), dispatched=False)
    assert verdict.params == {"run_id": RUN_ID, "head_sha": STRANGER, "run_attempt": 1}


def test_conclusion_lists():
    assert PINNED_CONCLUSIONS == ("success", "failure", "cancelled")
    assert AUTOMATIC_CONCLUSIONS == ("success",)


def test_artifacts_may_be_a_generator():
    assert check(artifacts=(a for a in [artifact()])).ok


@pytest.mark.parametrize(
    "name, expected",
    [
        ("results_bmk", True),
        ("results_bmk_dsr1_1k1k", True),
        ("eval_results_all", True),
        ("bmk_agentic_", True),
        ("bmk_agentic_swe", True),
        ("RESULTS_BMK1", False),
        ("eval_results_all.zip", False),
        ("eval_results", False),
        ("bmk_agentic", False),
        ("my_results_bmk", False),
        ("", False),
        (None, False),
        (7, False),
    ],
)
def test_is_result_artifact(name, expected):
    assert is_result_artifact(name) is expected


# --- newest_eligible -----------------------------------------------------------------------------


def pick(runs, artifacts_of=None, labels=("full-sweep-enabled",), dispatched=None):
    artifacts_of = {r["id"]: LIVE for r in runs} if artifacts_of is None else artifacts_of
    dispatched = {r["id"] for r in runs} if dispatched is None else dispatched
    return newest_eligible(
        runs,
        dispatched_run_ids=dispatched,
        fork=False,
        artifacts_of=artifacts_of,
        labels=labels,
        policy=POLICY,
        now=NOW,
    )


def at(run_id, created_at, **changes):
    return run(id=run_id, created_at=created_at, **changes)


SELECT_CASES = [
    # (id, runs, artifacts_of (None: all live), chosen id, other ids newest first)
    ("none", [], None, None, []),
    ("single", [at(1, "2025-06-01T00:00:00Z")], None, 1, []),
    ("newest-by-date-not-id", [at(9, "2025-06-01T00:00:00Z"), at(3, "2025-06-02T00:00:00Z")], None, 3, [9]),
    ("tie-on-date-bigger-id", [at(4, "2025-06-01T00:00:00Z"), at(5, "2025-06-01T00:00:00Z")], None, 5, [4]),
    ("zones-compared-as-instants", [at(1, "2025-06-01T10:00:00+02:00"), at(2, "2025-06-01T09:00:00Z")], None, 2, [1]),
    (
        "newest-failed-falls-back",
        [at(1, "2025-06-01T00:00:00Z"), at(2, "2025-06-02T00:00:00Z", conclusion="failure")],
        None,
        1,
        [2],
    ),
    (
        "newest-running-falls-back",
        [at(1, "2025-06-01T00:00:00Z"), at(2, "2025-06-02T00:00:00Z", status="in_progress", conclusion=None)],
        None,
        1,
        [2],
    ),
    (
        "newest-expired-falls-back",
        [at(1, "2025-06-01T00:00:00Z"), at(2, "2025-06-02T00:00:00Z")],
        {1: LIVE, 2: [artifact(expired=True)]},
        1,
        [2],
    ),
    ("missing-artifacts-entry", [at(1, "2025-06-01T00:00:00Z"), at(2, "2025-06-02T00:00:00Z")], {1: LIVE}, 1, [2]),
    (
        "older-eligible-listed",
        [at(1, "2025-06-01T00:00:00Z"), at(2, "2025-06-02T00:00:00Z"), at(3, "2025-06-03T00:00:00Z")],
        None,
        3,
        [2, 1],
    ),
    (
        "none-eligible",
        [
            at(1, "2025-06-01T00:00:00Z", conclusion="cancelled"),
            at(2, "2025-06-02T00:00:00Z", status="queued", conclusion=None),
        ],
        None,
        None,
        [2, 1],
    ),
    (
        "duplicate-listed-once",
        [at(1, "2025-06-01T00:00:00Z"), at(1, "2025-06-01T00:00:00Z"), at(2, "2025-05-01T00:00:00Z")],
        None,
        1,
        [2],
    ),
    (
        "started-at-fallback",
        [at(1, None, run_started_at="2025-06-03T00:00:00Z"), at(2, "2025-06-02T00:00:00Z")],
        None,
        1,
        [2],
    ),
    ("undated-is-oldest", [at(8, None, run_started_at=None), at(2, "2025-06-02T00:00:00Z")], None, 2, [8]),
    ("garbled-date-is-oldest", [at(8, "yesterday", run_started_at=None), at(2, "2025-06-02T00:00:00Z")], None, 2, [8]),
]


@pytest.mark.parametrize(
    "runs, artifacts_of, chosen, others", [pytest.param(r, a, c, o, id=i) for i, r, a, c, o in SELECT_CASES]
)
def test_newest_eligible(runs, artifacts_of, chosen, others):
    selection = pick(runs, artifacts_of)
    assert (selection.run or {}).get("id") == chosen
    assert [r["id"] for r, _ in selection.others] == others
    assert (selection.verdict is None) == (chosen is None)
    if chosen is not None:
        assert selection.verdict.code == ELIGIBLE


def test_newest_eligible_is_automatic():
    """A failed run that a pin could take is not chosen automatically; its verdict says why."""
    selection = pick([at(1, "2025-06-01T00:00:00Z", conclusion="failure")])
    assert selection.run is None
    [(_, verdict)] = selection.others
    assert (verdict.code, verdict.params["allowed"]) == (CONCLUSION_NOT_ALLOWED, ("success",))


def test_newest_eligible_labels_block_every_run():
    selection = pick([at(1, "2025-06-01T00:00:00Z"), at(2, "2025-06-02T00:00:00Z")], labels=iter(["evals-only"]))
    assert selection.run is None
    assert [v.code for _, v in selection.others] == [BLOCKED_BY_LABEL, BLOCKED_BY_LABEL]


def test_newest_eligible_takes_only_the_bots_dispatches():
    """Regression: a bare `/reuse-sweep-run` on a fork pinned the fork's own `pull_request` run, newer than the
    bot's dispatch and on a commit of the PR."""
    selection = pick([at(1, "2025-06-01T00:00:00Z", head_sha=STRANGER), at(2, "2025-06-02T00:00:00Z")], dispatched={1})
    assert selection.run["id"] == 1
    assert [(r["id"], v.code) for r, v in selection.others] == [(2, NOT_DISPATCHED)]


# --- held_pin_change: the pin a comment holds follows its latest text --------------------------------------

HELD_CASES = [
    # (id, body before, body after (None: deleted), what the author's edit does, what someone else's does)
    ("deleted", "/use 5", None, DELETED, DELETED),
    ("emptied", "/use 5", "", EDITED, EDITED),
    ("command-removed", "Pinning.\n/use 5", "Pinning.", EDITED, EDITED),
    ("became-usage-problem", "/use 5", "/use five", EDITED, EDITED),
    ("quoted-away", "/use 5", "> /use 5", EDITED, EDITED),
    ("fenced-away", "/use 5", "```\n/use 5\n```", EDITED, EDITED),
    ("replaced-by-help", "/use 5", "/use 5\n/help", EDITED, EDITED),
    ("became-stage", "/use 5", "/stage-results 5", EDITED, EDITED),
    ("bare-reuse-removed", "/reuse-sweep-run", "thanks", EDITED, EDITED),
    # an edit GitHub never delivered left no pin command: the latest text decides, not the body before
    ("no-pin-command-before-or-after", "hello", "hello again", EDITED, EDITED),
    ("run-id-changed", "/use 5", "/use 6", NEW_PIN_COMMAND, EDITED_BY_OTHER),
    ("kind-changed", "/use 5", "/reuse-sweep-run", NEW_PIN_COMMAND, EDITED_BY_OTHER),
    ("legacy-name-same-id", "/use 5", "/reuse-sweep-run 5", NEW_PIN_COMMAND, EDITED_BY_OTHER),
    ("usage-problem-fixed", "/use abc", "/use 5", NEW_PIN_COMMAND, EDITED_BY_OTHER),
    ("text-edited-only", "/use 5", "Pinning the green run:\n/use 5\nthanks", None, None),
    ("same-id-leading-zero", "/use 5", "/use 005", None, None),
    ("case-of-name", "/use 5", "/USE 5", None, None),
]


@pytest.mark.parametrize(
    "old, new, by_author, by_other", [pytest.param(o, n, a, b, id=i) for i, o, n, a, b in HELD_CASES]
)
def test_held_pin_change(old, new, by_author, by_other):
    before, after = parse(old, NAMES), parse(new, NAMES)
    assert held_pin_change(before, after, deleted=new is None, by_author=True) == by_author
    assert held_pin_change(before, after, deleted=new is None, by_author=False) == by_other


def test_a_withdrawn_pin_is_kept_in_the_record_until_a_new_pin():
    """The status says which pin was withdrawn and why: the record keeps it, written and read back,
    and a new pin clears it; a record from before it reads as none withdrawn."""
    pinned = SweepRecord().pinned(Pin(10260, 7, "maintainer", "2026-01-01T00:00:00Z"))
    gone = pinned.unpinned("refused", "maintainer")
    assert gone.pin is None and gone.withdrawn == Withdrawal(10260, 7, "refused", "maintainer")
    assert SweepRecord.parse(gone.line()) == gone
    assert SweepRecord.parse(pinned.line()).withdrawn is None
    again = gone.pinned(Pin(10261, 8, "maintainer", "2026-01-01T00:00:01Z"))
    assert again.withdrawn is None and SweepRecord.parse(again.line()) == again
    assert SweepRecord().unpinned("deleted") == SweepRecord(), "nothing pinned, nothing withdrawn"
