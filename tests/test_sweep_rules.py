"""The sweep gate handler's rules as plain functions (no HTTP), and the record it keeps in its status comment."""

from __future__ import annotations

import pytest

from bot.core.config import default_policy
from bot.rules.changelog import check_append
from bot.rules.gate import AppliedLabel, Changelog, ChangelogOutcome, Dispatched, GateInput, decide, dispatch_id
from bot.rules.links import viewer_links
from bot.rules.pull_request import label_generation, last_applied, trusted_labels
from bot.rules.sweep_record import KEPT_FINISHED, Approval, Pin, RunRecord, SweepRecord, shows_status
from handlers.sweep_gate import approval_change, changelog_outcome, check_conclusion, headline, runs_to_cancel

POLICY = default_policy()
SHA = "a" * 40
FAIL_FAST = "full-sweep-fail-fast"
PREFIX = "https://github.com/SemiAnalysisAI/InferenceX/pull/"
HISTORY = b"- config-keys:\n    - a\n  description:\n    - b\n  pr-link: " + PREFIX.encode() + b"1\n"


def pr(**changes) -> GateInput:
    base = dict(
        number=5,
        head_sha=SHA,
        base_sha="b" * 40,
        head_ref="recipe",
        base_ref="main",
        default_branch="main",
        changelog=ChangelogOutcome(Changelog.VALID),
        labels=(AppliedLabel(FAIL_FAST, "m", True),),
    )
    return GateInput(**{**base, **changes})


# -- approvals ------------------------------------------------------------------------------------


AT = "2026-01-01T00:00:05Z"


@pytest.mark.parametrize(
    "action, label, is_fork, writer, expected",
    [
        ("labeled", FAIL_FAST, True, True, ("approve", Approval(FAIL_FAST, "m", SHA, AT))),
        ("labeled", "Full-Sweep-Fail-Fast", True, True, ("approve", Approval("Full-Sweep-Fail-Fast", "m", SHA, AT))),
        ("labeled", FAIL_FAST, True, False, None),  # a non-writer approves nothing
        ("labeled", FAIL_FAST, True, None, None),  # nor does someone whose permission GitHub would not confirm
        ("labeled", FAIL_FAST, False, True, None),  # same-repo PRs need no approval
        ("labeled", "evals-only", True, True, None),  # modifiers approve nothing
        ("labeled", "amd", True, True, None),
        ("unlabeled", FAIL_FAST, True, True, ("withdraw", Approval(FAIL_FAST, "m", SHA, AT))),
        # regression: a triager taking the primary off a fork withdrew the writer's approval
        ("unlabeled", FAIL_FAST, True, False, None),
        ("unlabeled", FAIL_FAST, False, True, None),
        ("edited", FAIL_FAST, True, True, None),
    ],
)
def test_approval_change(action, label, is_fork, writer, expected):
    assert (
        approval_change(action, label, "m", is_fork=is_fork, writer=writer, head_sha=SHA, at=AT, policy=POLICY)
        == expected
    )


def test_a_forks_labels_are_what_confirmed_writers_left():
    events = [
        event(1, "labeled", FAIL_FAST, "m"),
        event(2, "labeled", "all-evals", "m"),
        event(3, "unlabeled", "all-evals", "triager"),
        event(4, "labeled", "evals-only", "triager"),
        event(5, "unlabeled", FAIL_FAST, "m"),
        event(6, "labeled", FAIL_FAST, "m"),
    ]
    held = trusted_labels(events, {FAIL_FAST, "all-evals", "evals-only"}, {"m"})
    assert {name: e["id"] for name, e in held.items()} == {"all-evals": 2, FAIL_FAST: 6}


# -- label generation -----------------------------------------------------------------------------


def event(id_, kind, name, actor):
    return {"id": id_, "event": kind, "label": {"name": name}, "actor": {"login": actor}}


@pytest.mark.parametrize(
    "events, trusted, expected",
    [
        ([], {"m"}, None),
        ([event(1, "labeled", FAIL_FAST, "m")], {"m"}, 1),
        ([event(1, "labeled", FAIL_FAST, "m"), event(2, "labeled", "amd", "m")], {"m"}, 1),  # not a sweep label
        ([event(1, "labeled", FAIL_FAST, "m"), event(3, "labeled", "all-evals", "x")], {"m"}, 1),  # untrusted
        ([event(1, "labeled", FAIL_FAST, "m"), event(4, "unlabeled", "all-evals", "m")], {"m"}, 4),  # removal counts
        ([event(1, "labeled", FAIL_FAST, "m"), event(5, "renamed", FAIL_FAST, "m")], {"m"}, 1),
        ([event("7", "labeled", FAIL_FAST, "m")], {"m"}, None),  # not an id GitHub gives
    ],
)
def test_label_generation(events, trusted, expected):
    sweep = {FAIL_FAST, "all-evals", "evals-only", "agentx-fast"}
    assert label_generation(events, sweep, trusted) == expected


def test_last_applied_is_none_once_the_label_is_removed():
    events = [event(1, "labeled", FAIL_FAST, "a"), event(2, "unlabeled", FAIL_FAST, "b")]
    assert last_applied(events, FAIL_FAST) is None
    assert last_applied(events + [event(3, "labeled", "FULL-SWEEP-FAIL-FAST", "c")], FAIL_FAST)["id"] == 3


def test_the_generation_changes_the_dispatch_id_and_only_it():
    assert dispatch_id(5, SHA, [FAIL_FAST], 1) != dispatch_id(5, SHA, [FAIL_FAST], 2)
    assert dispatch_id(5, SHA, [FAIL_FAST], 1) == dispatch_id(5, SHA, [FAIL_FAST.upper()], 1)
    assert decide(pr(label_generation=9), POLICY).dispatch_id == dispatch_id(5, SHA, [FAIL_FAST], 9)


# -- outcomes -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "head, expected",
    [
        (None, ChangelogOutcome(Changelog.ABSENT)),
        (HISTORY, ChangelogOutcome(Changelog.ABSENT)),  # touched, nothing appended
        (
            HISTORY + b"\n- config-keys:\n    - c\n  description:\n    - d\n  pr-link: XXX\n",
            ChangelogOutcome(Changelog.VALID),
        ),
        (
            HISTORY + b"\n- config-keys:\n    - c\n  description:\n    - d\n  pr-link: XXX\n  append-only: true\n",
            ChangelogOutcome(Changelog.VALID, append_only=True),
        ),
        (
            HISTORY + b"\n- config-keys:\n    - c\n  description:\n    - d\n  pr-link: TBD\n",
            ChangelogOutcome(Changelog.INVALID),
        ),
        (b"", ChangelogOutcome(Changelog.INVALID)),  # the file deleted: history removed
    ],
)
def test_changelog_outcome(head, expected):
    result = None if head is None else check_append(HISTORY, head, pr_number=5, canonical_prefix=PREFIX)
    assert changelog_outcome(result) == expected


@pytest.mark.parametrize(
    "changes, expected",
    [
        ({}, "success"),
        ({"changelog": ChangelogOutcome(Changelog.INVALID)}, "failure"),
        ({"changelog": ChangelogOutcome(Changelog.ABSENT)}, "failure"),  # a sweep is asked for: it needs an entry
        ({"changelog": ChangelogOutcome(Changelog.ABSENT), "labels": ()}, "neutral"),
        ({"changelog": ChangelogOutcome(Changelog.INVALID), "labels": ()}, "failure"),  # a bad entry fails anyway
        ({"labels": (AppliedLabel(FAIL_FAST, "m", True), AppliedLabel("full-sweep-enabled", "m", True))}, "failure"),
        ({"labels": (AppliedLabel("evals-only", "m", True),)}, "failure"),
        ({"draft": True}, "success"),  # not the contributor's error
        ({"base_ref": "release"}, "failure"),  # the author retargets it: marked ❌, so the check fails too
        ({"head_commit_message": "x [skip-sweep]"}, "success"),
        ({"is_fork": True, "labels": (AppliedLabel(FAIL_FAST, "m", True, "c" * 40),)}, "success"),  # approval pending
    ],
)
def test_check_conclusion(changes, expected):
    assert check_conclusion(decide(pr(**changes), POLICY)) == expected


def test_runs_to_cancel_on_close_takes_every_run_still_going():
    record = SweepRecord(
        runs=(
            RunRecord("sw-5-aaaaaaaaaaaa", 1, SHA, "w", "in_progress"),
            RunRecord("sw-5-bbbbbbbbbbbb", 2, SHA, "w", "completed", "success"),
            RunRecord("sw-5-cccccccccccc", 3, SHA, "w", "queued"),
        )
    )
    current = decide(pr(dispatched=tuple(Dispatched(r.dispatch_id, r.run_id, r.status) for r in record.runs)), POLICY)
    assert runs_to_cancel(current, record, closed_unmerged=True) == (1, 3)
    assert runs_to_cancel(current, record, closed_unmerged=False) == current.cancel == (1, 3)  # none is current
    running = decide(pr(dispatched=(Dispatched(current.dispatch_id, 4, "in_progress"),)), POLICY)
    record = record.add_run(RunRecord(current.dispatch_id, 4, SHA, "w", "in_progress"))
    assert runs_to_cancel(running, record, closed_unmerged=False) == ()
    assert 4 in runs_to_cancel(running, record, closed_unmerged=True)


@pytest.mark.parametrize(
    "touches, labels, exists, expected",
    [
        (False, [], False, False),
        (True, [], False, True),
        (False, ["amd"], False, False),
        (False, ["evals-only"], False, True),
        (False, [FAIL_FAST.upper()], False, True),
        (False, [], True, True),  # once shown it stays, updated
    ],
)
def test_shows_status(touches, labels, exists, expected):
    assert shows_status(touches, labels, POLICY, exists) is expected


def dispatched(status: str, conclusion: str | None = None) -> dict:
    """The run of the PR's current state (as `pr()` makes it), with this status and conclusion."""
    return {"dispatched": (Dispatched(decide(pr(), POLICY).dispatch_id, 1, status, conclusion),)}


@pytest.mark.parametrize(
    "changes, expected",
    [
        ({}, ("starting", ("dispatch",))),  # starting, but no run recorded: the dispatch has not answered
        ({"pin": 5}, ("paused", ("reuse_pin",))),
        ({"draft": True}, ("draft", ("pull_request",))),
        ({"open": False, "merged": True, "labels": ()}, ("merged", ("pull_request",))),
        ({"open": False}, ("closed", ("pull_request",))),
        ({"changelog": ChangelogOutcome(Changelog.LINKS_CORRECTED)}, ("links_corrected", ("changelog",))),
        ({"changelog": ChangelogOutcome(Changelog.LINKS_CORRECTED), "labels": ()}, ("links_corrected", ("changelog",))),
        ({"head_commit_message": "x [skip-sweep]"}, ("skipped", ("skip_marker",))),
        ({"base_ref": "release"}, ("blocked", ())),
        (dispatched("in_progress"), ("running", ("dispatch",))),
        (dispatched("completed", "success"), ("passed", ("dispatch",))),
        (dispatched("completed", "failure"), ("run_failed", ("dispatch",))),
        ({"open": False, "merged": True, **dispatched("completed", "success")}, ("merged", ("pull_request",))),
        ({"labels": ()}, ("idle", ("labels", "fork_approval", "merge_commit"))),
        ({"changelog": ChangelogOutcome(Changelog.INVALID)}, ("blocked", ())),
        (
            {"changelog": ChangelogOutcome(Changelog.ABSENT), "labels": ()},
            ("idle", ("labels", "fork_approval", "merge_commit")),
        ),
        ({"changelog": ChangelogOutcome(Changelog.INVALID), "labels": ()}, ("blocked", ())),  # a wrong entry is news
        (
            {"is_fork": True, "labels": (AppliedLabel(FAIL_FAST, "m", True, SHA),), "merge_commit_sha": None},
            ("waiting", ("merge_commit",)),
        ),
    ],
)
def test_headline(changes, expected):
    assert headline(decide(pr(**changes), POLICY)) == expected


def test_viewer_links_follow_the_policy():
    assert viewer_links("https://viewer.example/", 77) == {
        "perf_url": "https://viewer.example/inference?unofficialRun=77",
        "eval_url": "https://viewer.example/evaluation?unofficialRun=77",
    }


# -- the record -----------------------------------------------------------------------------------


def test_the_record_round_trips_and_cannot_close_its_comment_early():
    record = (
        SweepRecord()
        .approve(Approval("we-->ird", "m", SHA))
        .add_run(RunRecord("sw-5-aaaaaaaaaaaa", 1, SHA, "run-sweep.yml", html_url="https://x/-->"))
    )
    line = record.line()
    assert line.count("-->") == 1 and line.endswith(" -->") and "\n" not in line
    assert SweepRecord.parse(f"<!-- sweepbot:sweep-status -->\n{line}\n### text") == record


@pytest.mark.parametrize(
    "body",
    [
        None,
        "",
        "no record here",
        "<!-- sweepbot-record {not json} -->",
        '<!-- sweepbot-record {"runs": [{}]} -->',
        '<!-- sweepbot-record {"approvals": "x"} -->',
        '<!-- sweepbot-record {"runs": [{"run_id": "x"}]} -->',
    ],
)
def test_an_unreadable_record_approves_nothing_and_names_no_run(body):
    assert SweepRecord.parse(body) == SweepRecord()


def test_the_record_keeps_every_run_still_going_the_pinned_one_and_the_newest_finished():
    """Regression: the record kept the newest 20 runs of any kind; 20 runs injected by a fork pushed the real,
    still queued run out of it, and the next push did not cancel it."""
    record = SweepRecord().add_run(RunRecord("sw-5-000000000000", 1, SHA, "w"))  # queued: kept whatever follows
    record = record.add_run(RunRecord("sw-5-111111111111", 2, SHA, "w", status="completed"))
    record = record.pinned(Pin(2, 9, "m", "2026-01-01T00:00:00Z"))
    for i in range(KEPT_FINISHED + 5):
        record = record.add_run(RunRecord(f"sw-5-{i + 10:012x}", i + 10, SHA, "w", status="completed"))
    ids = [r.run_id for r in record.runs]
    assert ids[:2] == [1, 2] and len(ids) == KEPT_FINISHED + 2
    assert ids[-1] == KEPT_FINISHED + 14 and 10 not in ids, "the oldest finished ones go first"


def test_one_approval_per_label_and_an_older_label_event_never_overrides_a_newer_one():
    record = SweepRecord().approve(Approval(FAIL_FAST, "a", SHA)).approve(Approval(FAIL_FAST.upper(), "b", "c" * 40))
    assert record.approvals == (Approval(FAIL_FAST.upper(), "b", "c" * 40),)
    assert record.withdraw(FAIL_FAST).approvals == ()
    newer = SweepRecord().approve(Approval(FAIL_FAST, "a", "d" * 40, at="2026-01-01T00:00:09Z"))
    assert newer.approve(Approval(FAIL_FAST, "a", SHA, at="2026-01-01T00:00:05Z")) == newer
    assert newer.withdraw(FAIL_FAST, at="2026-01-01T00:00:05Z") == newer
    assert newer.withdraw(FAIL_FAST, at="2026-01-01T00:00:10Z").approvals == ()


def test_a_run_seen_for_the_first_time_fills_in_the_id_its_dispatch_answer_lacked():
    record = SweepRecord().add_run(RunRecord("sw-5-aaaaaaaaaaaa", 0, SHA, "w"))
    entry = record.by_dispatch("sw-5-aaaaaaaaaaaa")
    record = record.observe(entry, 77, status="completed", conclusion="success")
    assert record.runs == (RunRecord("sw-5-aaaaaaaaaaaa", 77, SHA, "w", "completed", "success"),)


def test_a_record_written_into_a_status_comment_replaces_its_record_and_keeps_the_rest():
    """A pin goes onto GitHub before the status is rendered again: the record line changes, every other
    line stays, the purpose marker is left to the comment store."""
    run = RunRecord("sw-1", 7, SHA, "run-sweep.yml", "completed", "success")
    before = SweepRecord().add_run(run)
    text = f"{before.line()}\n### Sweep gate for `aaaaaaa`\n\n- ✅ **Reuse pin:** none\n"
    body = "<!-- sweepbot:sweep-status -->\n" + text
    after = before.pinned(Pin(7, 99, "maintainer", "2026-01-01T00:00:00Z"))
    written = after.written_into(body)
    assert written == text.replace(before.line(), after.line())
    assert SweepRecord.parse(written) == after
    assert after.written_into(after.written_into(body)) == written, "the same again: nothing to edit"
    assert after.written_into("<!-- sweepbot:sweep-status -->\nno record") == after.line() + "\nno record"
    assert SweepRecord.parse(after.written_into(None)) == after
