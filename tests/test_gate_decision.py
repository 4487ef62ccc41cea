"""The sweep gate's decision (bot/rules/gate.py): exhaustively against tests/gate_reference.py, then named cases."""

from __future__ import annotations

import itertools
import re
from dataclasses import FrozenInstanceError, dataclass, field, replace

import pytest
from gate_reference import expected

from bot.core.config import default_policy, parse_repo_config, policy_defaults
from bot.effects.actions import DispatchWorkflow
from bot.rules.gate import (
    ACTIVE_STATUSES,
    CONDITIONS,
    DISPATCH_INPUTS,
    DONE,
    FIX,
    FORK_INPUTS,
    NOT_APPLICABLE,
    REASONS,
    SET_BY_HANDLER,
    WAIT,
    AppliedLabel,
    Changelog,
    ChangelogOutcome,
    Decision,
    Dispatched,
    GateInput,
    decide,
    dispatch_id,
    mark,
)
from bot.rules.policy import Policy
from bot.rules.stale_branch import INFO, REFUSE, WARN, Finding

POLICY = default_policy()
PRIMARIES = [p.name for p in POLICY.labels.primary]  # fail-fast, enabled, non-canary
MODIFIERS = POLICY.labels.modifiers.names()  # key -> name
FAIL_FAST, ENABLED, NON_CANARY = PRIMARIES
ALL_EVALS, EVALS_ONLY, AGENTX_FAST = MODIFIERS["all_evals"], MODIFIERS["evals_only"], MODIFIERS["agentx_fast"]

HEAD = "1" * 40
OLD_HEAD = "0" * 40
BASE = "b" * 40
MERGE = "c" * 40

VALID = ChangelogOutcome(Changelog.VALID)
VALID_APPEND_ONLY = ChangelogOutcome(Changelog.VALID, append_only=True)
ABSENT = ChangelogOutcome(Changelog.ABSENT)
INVALID = ChangelogOutcome(Changelog.INVALID)


def writer(name, sha=HEAD, by="maintainer"):
    return AppliedLabel(name, applied_by=by, writer=True, head_sha=sha)


def non_writer(name, sha=HEAD, by="triager"):
    return AppliedLabel(name, applied_by=by, writer=False, head_sha=sha)


def make_pr(**changes) -> GateInput:
    """An open same-repo PR #42 into main with a valid changelog append and `full-sweep-fail-fast` by a writer."""
    pr = GateInput(
        number=42,
        head_sha=HEAD,
        base_sha=BASE,
        head_ref="recipe/mi355x",
        base_ref="main",
        default_branch="main",
        changelog=VALID,
        labels=(writer(FAIL_FAST),),
        head_commit_message="Tune MI355X recipe",
    )
    return replace(pr, **changes)


def fork_pr(**changes) -> GateInput:
    return make_pr(
        **{"is_fork": True, "head_ref": "patch-1", "merge_commit_sha": MERGE, "merge_parents": (BASE, HEAD), **changes}
    )


def failing(decision: Decision) -> set[str]:
    return {c.name for c in decision.conditions if c.ok is False}


def reasons(decision: Decision) -> dict[str, tuple[bool | None, str]]:
    return {c.name: (c.ok, c.reason_code) for c in decision.conditions}


# -- exhaustive: every combination, against the reference -------------------------------------------

PRIMARY_SETS = [combo for n in range(len(PRIMARIES) + 1) for combo in itertools.combinations(PRIMARIES, n)]
MODIFIER_SETS = [combo for n in range(len(MODIFIERS) + 1) for combo in itertools.combinations(MODIFIERS.values(), n)]
ORIGINS = [
    "same-repo",
    "same-repo, labelled by a non-writer",
    "fork, labelled by a writer",
    "fork, labelled by a writer before the last push",
    "fork, labelled by a non-writer",
    "fork, primary by a writer, modifiers by a non-writer",
]
DRAFTS = [False, True]
CHANGELOGS = {"absent": ABSENT, "valid": VALID, "valid, append-only": VALID_APPEND_ONLY, "invalid": INVALID}
SKIPS = [False, True]
PINS = ["not pinned", "pinned", "pinned, primary re-added"]
SPELLINGS = ["as configured", "upper case"]
DIMENSIONS = (PRIMARY_SETS, MODIFIER_SETS, ORIGINS, DRAFTS, list(CHANGELOGS), SKIPS, PINS, SPELLINGS)


def build(primaries, modifiers, origin, draft, changelog, skip, pin, spelling) -> GateInput:
    spell = str.upper if spelling == "upper case" else str

    def applied(name, kind):
        name = spell(name)
        if origin in ("same-repo", "fork, labelled by a writer"):
            return writer(name)
        if origin == "fork, labelled by a writer before the last push":
            return writer(name, sha=OLD_HEAD)
        if origin == "fork, primary by a writer, modifiers by a non-writer":
            return writer(name) if kind == "primary" else non_writer(name)
        return non_writer(name)  # "same-repo, labelled by a non-writer", "fork, labelled by a non-writer"

    labels = (
        [applied(n, "primary") for n in primaries]
        + [applied(n, "modifier") for n in modifiers]
        + [non_writer("amd", by="sweepbot[bot]")]
    )  # a label that is not a sweep label never matters
    message = "Tune MI355X recipe\n\n[skip-sweep] numbers unchanged" if skip else "Tune MI355X recipe"
    fork = origin.startswith("fork")
    return make_pr(
        labels=tuple(labels),
        is_fork=fork,
        head_ref="patch-1" if fork else "recipe/mi355x",
        merge_commit_sha=MERGE if fork else None,
        merge_parents=(BASE, HEAD) if fork else None,
        draft=draft,
        changelog=CHANGELOGS[changelog],
        head_commit_message=message,
        pin=None if pin == "not pinned" else 9001,
        primary_readded_after_pin=pin == "pinned, primary re-added",
    )


def compare(pr: GateInput, decision: Decision) -> list[str]:
    """Every way `decision` differs from the reference's answer for `pr`."""
    want = expected(pr, POLICY)
    problems = []
    if (decision.start is not None) != want.starts:
        problems.append(f"starts={decision.start is not None}, reference {want.starts}")
    if decision.start is not None and want.starts:
        inputs = decision.start.inputs
        if inputs["sweep-label"] != want.primary:
            problems.append(f"sweep-label {inputs['sweep-label']!r}, reference {want.primary!r}")
        flags = {key for key in MODIFIERS if inputs[key.replace("_", "-")] == "true"}
        if flags != want.modifiers:
            problems.append(f"modifiers {sorted(flags)}, reference {sorted(want.modifiers)}")
        workflow = POLICY.workflows.fork_sweep if pr.is_fork else POLICY.workflows.sweep
        ref = pr.default_branch if pr.is_fork else pr.head_ref
        if (decision.start.workflow, decision.start.ref) != (workflow, ref):
            problems.append(
                f"dispatches {decision.start.workflow} on {decision.start.ref}, expected {workflow} on {ref}"
            )
    if set(decision.remove_labels) != want.removed:
        problems.append(f"removes {sorted(decision.remove_labels)}, reference {sorted(want.removed)}")
    if failing(decision) != want.blocked_by:
        problems.append(f"failing conditions {sorted(failing(decision))}, reference {sorted(want.blocked_by)}")
    if tuple(c.name for c in decision.conditions) != CONDITIONS:
        problems.append(f"conditions {[c.name for c in decision.conditions]}")
    for c in decision.conditions:
        if c.reason_code not in REASONS[c.name]:
            problems.append(f"{c.name}: unknown reason {c.reason_code!r}")
    starting = decision.condition("dispatch").reason_code == "starting"
    if starting != (decision.start is not None):
        problems.append(f"dispatch condition {decision.condition('dispatch').reason_code} with start={decision.start}")
    return problems


@dataclass
class Grid:
    count: int = 0
    started: int = 0
    mismatches: list[str] = field(default_factory=list)
    seen: dict[str, set[str]] = field(default_factory=lambda: {name: set() for name in CONDITIONS})


@pytest.fixture(scope="module")
def grid() -> Grid:
    """Every combination decided once and compared with the reference (decisions are not kept: 36,864 of them
    held at once make the garbage collector the slowest part of the run)."""
    result = Grid()
    for values in itertools.product(*DIMENSIONS):
        pr = build(*values)
        decision = decide(pr, POLICY)
        result.count += 1
        result.started += decision.start is not None
        result.mismatches += [f"{values}: {problem}" for problem in compare(pr, decision)]
        for c in decision.conditions:
            result.seen.setdefault(c.name, set()).add(c.reason_code)
    return result


def test_every_combination_matches_the_reference(grid):
    """decide and the reference agree on start, primary, modifiers, removed labels and failing conditions for
    every combination of labels, origin, draft, changelog, skip marker, pin and spelling: all mismatches listed."""
    assert grid.count == 8 * 8 * 6 * 2 * 4 * 2 * 3 * 2 == 36864
    assert not grid.mismatches, f"{len(grid.mismatches)} of {grid.count} cases differ:\n" + "\n".join(
        grid.mismatches[:40]
    )


def test_the_exhaustive_cases_start_sweeps_exactly_where_the_rules_allow(grid):
    """A count that pins the grid itself: sweeps start only with one primary, not draft, a valid changelog, no
    skip marker, no pin or a forcing re-add (x2), either spelling (x2)."""
    # valid changelog: all 8 modifier sets; valid append-only: 2 (none, agentx-fast). Origins that can sweep:
    # same-repo and fork by a writer (8 + 2 each); the mixed fork ignores the untrusted modifiers, so all 8 sets
    # sweep on both valid changelogs (8 + 8). A non-writer's labels start nothing on any PR.
    per_primary = 2 * (8 + 2) + (8 + 8)
    assert grid.started == len(PRIMARIES) * per_primary * len(SPELLINGS) * 2 == 432


def test_every_reason_code_is_reachable_and_every_code_given_is_declared(grid):
    seen = {name: set(codes) for name, codes in grid.seen.items()}
    extra = [
        make_pr(open=False),
        make_pr(open=False, merged=True),
        make_pr(changelog=ChangelogOutcome(Changelog.LINKS_CORRECTED)),
        make_pr(base_ref="release"),
        fork_pr(labels=(writer(FAIL_FAST, sha=None),)),
        fork_pr(merge_commit_sha=None),
        fork_pr(merge_parents=(BASE, OLD_HEAD)),
        fork_pr(labels=(AppliedLabel(FAIL_FAST, "maintainer", None, HEAD),)),
        make_pr(pin=5, pin_blocked_by=("evals-only",)),
        fork_pr(mergeable=False),
        make_pr(pin=5, pin_stale_files=("inferencex-e2e/recipes/a.sh",)),
        make_pr(stale_branch=()),
        make_pr(stale_branch=(finding(REFUSE),)),
        make_pr(stale_branch=(finding(WARN), finding(INFO))),
    ]
    current = decide(make_pr(), POLICY).dispatch_id
    extra += [
        make_pr(dispatched=(Dispatched(current, 7, status, conclusion),))
        for status, conclusion in (
            ("in_progress", None),
            ("completed", "success"),
            ("completed", "failure"),
            ("completed", "cancelled"),
        )
    ]
    for pr in extra:
        for c in decide(pr, POLICY).conditions:
            seen.setdefault(c.name, set()).add(c.reason_code)
    limited = parse_repo_config("sweeps:\n  confirm_over: 10\n")  # the sweep's size against a limit
    for pr in (make_pr(), make_pr(points=10), make_pr(points=11, labels=()), make_pr(points=11)):
        for c in decide(pr, limited).conditions:
            seen.setdefault(c.name, set()).add(c.reason_code)
    seen["cost"].add(decide(make_pr(points=11, confirmed=current), limited).condition("cost").reason_code)
    assert seen == {name: set(codes) - SET_BY_HANDLER.get(name, frozenset()) for name, codes in REASONS.items()}


# -- the dispatched workflow's inputs ------------------------------------------------------------


def test_same_repo_dispatch_runs_the_sweep_workflow_on_the_head_branch_with_exact_inputs():
    pr = make_pr(labels=(writer(ENABLED), writer(ALL_EVALS), non_writer("amd")))
    decision = decide(pr, POLICY)
    key = dispatch_id(42, HEAD, [ENABLED, ALL_EVALS])
    assert decision.start is not None
    assert (decision.start.workflow, decision.start.ref) == ("run-sweep.yml", "recipe/mi355x")
    assert dict(decision.start.inputs) == {
        "pr-number": "42",
        "head-sha": HEAD,
        "base-sha": BASE,
        "sweep-label": "full-sweep-enabled",
        "canary": "true",
        "fail-fast": "false",
        "all-evals": "true",
        "evals-only": "false",
        "agentx-fast": "false",
        "dispatch-id": key,
        "summary": "",
    }
    assert decision.start.dispatch_id == decision.dispatch_id == key
    assert tuple(decision.start.inputs) == DISPATCH_INPUTS  # what the fakes' sweep workflows accept
    assert decision.start.head_sha == HEAD
    assert decision.cancel == () and decision.remove_labels == ()


def test_the_changelog_summary_goes_to_the_run_name_input_and_not_into_the_dispatch_id():
    tokens = "model=dsr1 scenario=fixed-seq-len precision=fp4 hardware_framework=mi355x_sglang"
    plain = decide(make_pr(labels=(writer(ENABLED),)), POLICY)
    summarised = decide(
        make_pr(labels=(writer(ENABLED),), changelog=ChangelogOutcome(Changelog.VALID, summary=tokens)), POLICY
    )
    assert summarised.start.inputs["summary"] == tokens
    assert summarised.dispatch_id == plain.dispatch_id


def test_fork_dispatch_runs_the_trusted_workflow_on_the_default_branch_with_approved_sha_and_merge_sha():
    pr = fork_pr(labels=(writer(NON_CANARY), writer(EVALS_ONLY), writer(AGENTX_FAST)))
    decision = decide(pr, POLICY)
    assert decision.start is not None
    assert (decision.start.workflow, decision.start.ref) == ("e2e-tests.yml", "main")
    assert dict(decision.start.inputs) == {
        "pr-number": "42",
        "head-sha": HEAD,
        "base-sha": BASE,
        "sweep-label": "non-canary-full-sweep-enabled",
        "canary": "false",
        "fail-fast": "false",
        "all-evals": "false",
        "evals-only": "true",
        "agentx-fast": "true",
        "dispatch-id": dispatch_id(42, HEAD, [NON_CANARY, EVALS_ONLY, AGENTX_FAST]),
        "summary": "",
        "merge-sha": MERGE,
    }
    assert tuple(decision.start.inputs) == FORK_INPUTS
    assert reasons(decision)["fork_approval"] == (True, "approved")
    assert dict(decision.condition("fork_approval").params) == {"by": "maintainer", "head_sha": HEAD, "ignored": ()}
    assert reasons(decision)["merge_commit"] == (True, "present")


def test_the_default_branch_is_the_repositorys_not_main():
    fork = decide(fork_pr(base_ref="trunk", default_branch="trunk"), POLICY)
    assert fork.start is not None and fork.start.ref == "trunk"
    into_main = decide(make_pr(default_branch="trunk"), POLICY)
    assert into_main.start is None and reasons(into_main)["pull_request"] == (False, "wrong_base")


def test_the_recommended_primary_asks_for_canary_and_fail_fast():
    inputs = decide(make_pr(), POLICY).start.inputs
    assert (inputs["sweep-label"], inputs["canary"], inputs["fail-fast"]) == ("full-sweep-fail-fast", "true", "true")
    assert all(isinstance(v, str) for v in inputs.values())


def test_the_sweep_start_finds_a_same_repo_run_by_head_sha_and_a_fork_run_by_dispatch_id_only():
    same = decide(make_pr(), POLICY).start
    assert (same.workflow, same.ref, same.head_sha) == ("run-sweep.yml", "recipe/mi355x", HEAD)
    assert same.inputs["dispatch-id"] == same.dispatch_id
    # the handler turns the rule's SweepStart into the executor's record field by field
    assert DispatchWorkflow(**vars(same)).key == f"dispatch:run-sweep.yml:{same.dispatch_id}"
    fork = decide(fork_pr(), POLICY).start
    assert (fork.workflow, fork.ref, fork.head_sha) == ("e2e-tests.yml", "main", None)


def test_label_names_compare_ignoring_case_and_the_input_uses_the_policy_spelling():
    decision = decide(make_pr(labels=(writer("Full-Sweep-ENABLED"), writer("ALL-Evals"))), POLICY)
    assert decision.start.inputs["sweep-label"] == "full-sweep-enabled"
    assert decision.start.inputs["all-evals"] == "true"
    assert decision.dispatch_id == dispatch_id(42, HEAD, [ENABLED, ALL_EVALS])


def test_a_repository_policy_renames_labels_workflows_and_the_marker():
    custom = policy_defaults()
    custom["labels"]["primary"] = [{"name": "gpu-sweep", "canary": False, "fail_fast": True, "recommended": True}]
    custom["labels"]["modifiers"] = {"all_evals": "evals-all", "evals_only": "evals-just", "agentx_fast": "quick"}
    custom["workflows"] = {"sweep": "sweep.yml", "fork_sweep": "trusted.yml"}
    custom["skip_sweep_marker"] = "[no-gpu]"
    policy = Policy.model_validate(custom)
    decision = decide(make_pr(labels=(writer("gpu-sweep"), writer("quick"), writer(FAIL_FAST))), policy)
    assert decision.start.workflow == "sweep.yml"
    assert (decision.start.inputs["sweep-label"], decision.start.inputs["agentx-fast"]) == ("gpu-sweep", "true")
    assert decision.start.inputs["canary"] == "false" and decision.start.inputs["fail-fast"] == "true"
    assert decide(fork_pr(labels=(writer("gpu-sweep"),)), policy).start.workflow == "trusted.yml"
    skipped = decide(make_pr(labels=(writer("gpu-sweep"),), head_commit_message="x [no-gpu]"), policy)
    assert skipped.start is None and reasons(skipped)["skip_marker"] == (None, "present")
    assert decide(make_pr(head_commit_message="[skip-sweep]", labels=(writer("gpu-sweep"),)), policy).start


# -- superseded, already dispatched --------------------------------------------------------------


def test_a_new_state_starts_and_cancels_every_superseded_run_still_queued_or_running():
    old = dispatch_id(42, OLD_HEAD, [FAIL_FAST])
    older = dispatch_id(42, OLD_HEAD, [ENABLED])
    pr = make_pr(
        dispatched=(
            Dispatched(old, 11, "queued"),
            Dispatched(old, 12, "in_progress"),
            Dispatched(older, 13, "waiting"),
            Dispatched(older, 14, "completed"),
            Dispatched(older, 15, "pending"),
            Dispatched(older, 16, "requested"),
        )
    )
    decision = decide(pr, POLICY)
    assert decision.start is not None
    assert decision.cancel == (11, 12, 13, 15, 16)
    assert ACTIVE_STATUSES == {"queued", "in_progress", "waiting", "pending", "requested"}


def test_removing_the_primary_cancels_its_run_and_starts_nothing():
    ran = dispatch_id(42, HEAD, [FAIL_FAST])
    decision = decide(make_pr(labels=(), dispatched=(Dispatched(ran, 21, "in_progress"),)), POLICY)
    assert decision.start is None and decision.cancel == (21,)
    assert reasons(decision)["labels"] == (None, "no_primary")
    assert reasons(decision)["dispatch"] == (None, "not_dispatched")


def test_adding_a_modifier_restarts_the_sweep():
    ran = dispatch_id(42, HEAD, [FAIL_FAST])
    decision = decide(
        make_pr(labels=(writer(FAIL_FAST), writer(AGENTX_FAST)), dispatched=(Dispatched(ran, 31, "in_progress"),)),
        POLICY,
    )
    assert decision.start is not None and decision.start.inputs["agentx-fast"] == "true"
    assert decision.cancel == (31,)


def test_a_state_already_dispatched_starts_nothing_and_keeps_its_run_but_cancels_the_others():
    current = decide(make_pr(), POLICY).dispatch_id
    old = dispatch_id(42, OLD_HEAD, [FAIL_FAST])
    pr = make_pr(dispatched=(Dispatched(old, 40, "in_progress"), Dispatched(current, 41, "queued")))
    decision = decide(pr, POLICY)
    assert decision.start is None
    assert decision.cancel == (40,)
    assert reasons(decision)["dispatch"] == (True, "running")
    assert dict(decision.condition("dispatch").params) == {
        "dispatch_id": current,
        "run_id": 41,
        "status": "queued",
        "conclusion": None,
    }
    assert failing(decision) == set()


def test_a_finished_run_of_this_state_is_not_dispatched_again():
    current = decide(make_pr(), POLICY).dispatch_id
    decision = decide(make_pr(dispatched=(Dispatched(current, 50, "completed"),)), POLICY)
    assert decision.start is None and decision.cancel == ()
    assert decision.condition("dispatch").params["run_id"] == 50


def test_the_same_state_decided_twice_gives_the_same_decision():
    assert decide(make_pr(), POLICY) == decide(make_pr(), POLICY)


# -- the PR itself -------------------------------------------------------------------------------


def test_a_pr_targeting_another_branch_gets_no_sweep_and_says_which_branches():
    decision = decide(make_pr(base_ref="release/1.2"), POLICY)
    assert decision.start is None and failing(decision) == {"pull_request"}
    assert reasons(decision)["pull_request"] == (False, "wrong_base")
    assert dict(decision.condition("pull_request").params) == {"base_ref": "release/1.2", "default_branch": "main"}


def test_a_closed_pr_gets_no_sweep_and_closed_is_said_before_draft():
    """A closed or merged PR is a fine state (➖, not ❌), and says which it is; the merged line names the pin."""
    decision = decide(make_pr(open=False, draft=True), POLICY)
    assert decision.start is None and reasons(decision)["pull_request"] == (None, "closed")
    merged = decide(make_pr(open=False, merged=True, pin=12), POLICY)
    assert merged.start is None and reasons(merged)["pull_request"] == (None, "merged")
    assert dict(merged.condition("pull_request").params) == {"pin": 12} and failing(merged) == set()


def test_a_draft_pr_gets_no_sweep():
    decision = decide(make_pr(draft=True), POLICY)
    assert decision.start is None and reasons(decision)["pull_request"] == (None, "draft")
    assert failing(decision) == set()


@pytest.mark.parametrize("labels", [(), (writer(FAIL_FAST),), (writer(FAIL_FAST), writer(ENABLED))])
def test_a_pr_that_only_corrects_pr_links_is_never_a_failure_and_never_sweeps(labels):
    """Correcting `pr-link` values of history is valid (docs/spec.md, "The performance changelog"): ➖ and no
    sweep, labelled or not."""
    decision = decide(make_pr(labels=labels, changelog=ChangelogOutcome(Changelog.LINKS_CORRECTED)), POLICY)
    assert decision.start is None
    assert reasons(decision)["changelog"] == (None, "links_corrected")
    assert "changelog" not in failing(decision)


def test_an_open_pr_into_the_default_branch_is_ready():
    assert reasons(decide(make_pr(), POLICY))["pull_request"] == (True, "ready")


# -- forks ---------------------------------------------------------------------------------------


def test_a_fork_push_after_approval_is_not_trusted_until_the_label_is_added_again():
    approved_then_pushed = fork_pr(labels=(writer(FAIL_FAST, sha=OLD_HEAD),))
    decision = decide(approved_then_pushed, POLICY)
    assert decision.start is None and failing(decision) == {"fork_approval"}
    assert reasons(decision)["fork_approval"] == (False, "head_changed")
    assert dict(decision.condition("fork_approval").params) == {
        "by": "maintainer",
        "approved_sha": OLD_HEAD,
        "head_sha": HEAD,
        "ignored": (),
    }
    assert decision.remove_labels == ()  # a writer's label stays; only re-adding it approves the new head
    readded = decide(replace(approved_then_pushed, labels=(writer(FAIL_FAST, sha=HEAD),)), POLICY)
    assert readded.start is not None and readded.start.inputs["head-sha"] == HEAD


def test_a_fork_label_whose_head_sha_is_unknown_approves_nothing():
    decision = decide(fork_pr(labels=(writer(FAIL_FAST, sha=None),)), POLICY)
    assert decision.start is None and reasons(decision)["fork_approval"] == (False, "approval_unknown")


def test_a_fork_dispatch_waits_for_githubs_merge_commit():
    decision = decide(fork_pr(merge_commit_sha=None), POLICY)
    assert decision.start is None and failing(decision) == {"merge_commit"}
    assert reasons(decision)["merge_commit"] == (False, "computing")
    assert mark(decision.condition("merge_commit")) == WAIT, "waiting on GitHub: nobody's fix"
    assert dict(decision.condition("merge_commit").params) == {"head_sha": HEAD}
    assert reasons(decision)["fork_approval"] == (True, "approved")


def test_a_forks_merge_commit_is_nothing_to_fix_until_a_sweep_is_asked_for_and_unknown_is_never_stale():
    """Regression: a fork PR's first status said "❌ Merge commit: ... was made for an earlier head, not for the
    approved `eface39`" while nothing was approved: the parents are only read once a writer's label counts, and
    parents not known were taken for stale."""
    unlabelled = decide(fork_pr(labels=(), merge_parents=None), POLICY)
    assert reasons(unlabelled)["merge_commit"] == (None, "not_yet")
    assert mark(unlabelled.condition("merge_commit")) == NOT_APPLICABLE
    unknown = decide(fork_pr(merge_parents=None), POLICY)
    assert reasons(unknown)["merge_commit"] == (False, "computing") and unknown.start is None
    assert mark(unknown.condition("merge_commit")) == WAIT


def test_a_conflict_is_the_authors_to_fix():
    decision = decide(fork_pr(mergeable=False), POLICY)
    assert reasons(decision)["merge_commit"] == (False, "conflicts") and decision.start is None
    assert mark(decision.condition("merge_commit")) == FIX


@pytest.mark.parametrize(
    "status, conclusion, expected",
    [
        ("queued", None, (True, "running", WAIT)),
        ("in_progress", None, (True, "running", WAIT)),
        ("completed", "success", (True, "passed", DONE)),
        ("completed", "failure", (False, "run_failed", FIX)),
        ("completed", "timed_out", (False, "run_failed", FIX)),
        ("completed", "cancelled", (None, "cancelled", NOT_APPLICABLE)),
    ],
)
def test_the_current_runs_outcome_is_its_own_mark(status, conclusion, expected):
    """Regression: after the run failed the status said "✅ Sweep run: Run `1017` is `completed`"."""
    current = decide(make_pr(), POLICY).dispatch_id
    decision = decide(make_pr(dispatched=(Dispatched(current, 7, status, conclusion),)), POLICY)
    dispatch = decision.condition("dispatch")
    assert (dispatch.ok, dispatch.reason_code, mark(dispatch)) == expected


def test_a_fork_dispatch_waits_for_the_merge_commit_of_the_approved_head():
    """Regression: a draft labelled at commit A, pushed to B (GitHub computed merge(B)), force-pushed back to A
    and marked ready at once dispatched head-sha=A with merge-sha=merge(B)."""
    decision = decide(fork_pr(merge_parents=(BASE, OLD_HEAD)), POLICY)
    assert decision.start is None and failing(decision) == {"merge_commit"}
    assert reasons(decision)["merge_commit"] == (False, "stale")
    assert decide(fork_pr(merge_parents=None), POLICY).start is None, "parents not known: not tested either"
    assert decide(fork_pr(), POLICY).start.inputs["merge-sha"] == MERGE


def test_a_fork_label_by_someone_whose_permission_github_would_not_confirm_neither_counts_nor_is_removed():
    decision = decide(
        fork_pr(
            labels=(
                AppliedLabel(FAIL_FAST, "maintainer", None, HEAD),
                AppliedLabel(ALL_EVALS, "maintainer", None, HEAD),
            )
        ),
        POLICY,
    )
    assert decision.start is None and decision.remove_labels == ()
    assert reasons(decision)["fork_approval"] == (False, "permission_unknown")
    assert dict(decision.condition("fork_approval").params)["by"] == ("maintainer",)


def test_a_same_repo_pr_needs_neither_approval_nor_merge_commit():
    decision = decide(make_pr(merge_commit_sha=None, labels=(writer(FAIL_FAST),)), POLICY)
    assert decision.start is not None and decision.remove_labels == ()
    assert reasons(decision)["fork_approval"] == (None, "same_repo")
    assert reasons(decision)["merge_commit"] == (None, "same_repo")


def test_a_non_writers_label_on_a_same_repo_pr_counts_for_nothing_is_left_on_and_said():
    """Regression: on a same-repository PR a triager's primary label dispatched a sweep (hours of 8-GPU nodes at
    the word of someone GitHub does not trust to write), and their modifier restarted a maintainer's run."""
    decision = decide(make_pr(labels=(non_writer(FAIL_FAST, by="triager"),)), POLICY)
    assert decision.start is None and decision.remove_labels == (), "left on: only a fork's primary is taken off"
    labels = decision.condition("labels")
    assert (labels.ok, labels.reason_code) == (None, "no_primary")
    assert labels.params["not_counted"] == (FAIL_FAST,) and labels.params["not_counted_by"] == ("triager",)
    mixed = decide(make_pr(labels=(writer(FAIL_FAST), non_writer(ALL_EVALS, by="triager"))), POLICY)
    assert mixed.start is not None and mixed.start.inputs["all-evals"] == "false"
    assert mixed.dispatch_id == decide(make_pr(labels=(writer(FAIL_FAST),)), POLICY).dispatch_id, (
        "the triager's modifier asks for no other run"
    )


def test_a_writers_label_a_non_writer_took_off_still_counts_and_is_said():
    kept = AppliedLabel(FAIL_FAST, "maintainer", True, removed_by="triager")
    decision = decide(make_pr(labels=(kept,)), POLICY)
    assert decision.start is not None
    params = decision.condition("labels").params
    assert params["kept"] == (FAIL_FAST,) and params["kept_by"] == ("triager",)


def test_a_primary_a_non_writer_put_on_a_fork_is_removed_and_counts_for_nothing():
    pr = fork_pr(labels=(non_writer("Full-Sweep-Enabled"), non_writer(ALL_EVALS), writer("amd")))
    decision = decide(pr, POLICY)
    assert decision.start is None
    assert decision.remove_labels == ("Full-Sweep-Enabled",)
    assert reasons(decision)["labels"] == (None, "no_primary")
    assert reasons(decision)["fork_approval"] == (False, "untrusted_labeller")
    assert dict(decision.condition("fork_approval").params) == {
        "labels": ("Full-Sweep-Enabled", ALL_EVALS),
        "by": ("triager",),
        "removed": ("Full-Sweep-Enabled",),
    }
    assert decision.dispatch_id == dispatch_id(42, HEAD, [])


def test_a_non_writers_second_primary_on_a_fork_does_not_block_a_writers_approval():
    pr = fork_pr(labels=(writer(FAIL_FAST), non_writer(ENABLED), non_writer(EVALS_ONLY)))
    decision = decide(pr, POLICY)
    assert decision.start is not None and decision.start.inputs["sweep-label"] == FAIL_FAST
    assert decision.start.inputs["evals-only"] == "false"
    assert decision.remove_labels == (ENABLED,)
    assert decision.condition("fork_approval").params["ignored"] == (ENABLED, EVALS_ONLY)


def test_a_fork_with_no_sweep_label_awaits_one():
    decision = decide(fork_pr(labels=()), POLICY)
    assert reasons(decision)["fork_approval"] == (None, "awaiting_label")


# -- labels and changelog reasons ------------------------------------------------------------------


def test_two_primaries_name_both_and_the_recommended_one():
    decision = decide(make_pr(labels=(writer(NON_CANARY), writer(FAIL_FAST))), POLICY)
    assert decision.start is None and reasons(decision)["labels"] == (False, "several_primaries")
    assert dict(decision.condition("labels").params) == {"labels": (FAIL_FAST, NON_CANARY), "recommended": FAIL_FAST}


def test_a_modifier_without_a_primary_says_which():
    decision = decide(make_pr(labels=(writer(AGENTX_FAST), writer(ALL_EVALS))), POLICY)
    assert decision.start is None and reasons(decision)["labels"] == (False, "modifier_without_primary")
    assert dict(decision.condition("labels").params) == {"modifiers": (ALL_EVALS, AGENTX_FAST)}


def test_evals_modifiers_with_an_append_only_addition_are_invalid_and_named():
    pr = make_pr(
        changelog=VALID_APPEND_ONLY,
        labels=(writer(FAIL_FAST), writer(AGENTX_FAST), writer(EVALS_ONLY), writer(ALL_EVALS)),
    )
    decision = decide(pr, POLICY)
    assert decision.start is None and reasons(decision)["labels"] == (False, "append_only_conflict")
    assert dict(decision.condition("labels").params) == {"modifiers": (ALL_EVALS, EVALS_ONLY)}
    agentx = decide(make_pr(changelog=VALID_APPEND_ONLY, labels=(writer(FAIL_FAST), writer(AGENTX_FAST))), POLICY)
    assert agentx.start is not None


def test_valid_labels_describe_the_sweep():
    decision = decide(make_pr(labels=(writer(AGENTX_FAST), writer(ENABLED), writer(ALL_EVALS))), POLICY)
    assert dict(decision.condition("labels").params) == {
        "primary": ENABLED,
        "modifiers": (ALL_EVALS, AGENTX_FAST),
        "canary": True,
        "fail_fast": False,
    }


@pytest.mark.parametrize(
    "outcome, ok, code",
    [
        (VALID, True, "valid"),
        (VALID_APPEND_ONLY, True, "valid"),
        (ABSENT, False, "absent"),
        (INVALID, False, "invalid"),
    ],
)
def test_changelog_condition(outcome, ok, code):
    decision = decide(make_pr(changelog=outcome), POLICY)
    assert reasons(decision)["changelog"] == (ok, code)
    assert decision.condition("changelog").params["path"] == "inferencex-e2e/perf-changelog.yaml"
    assert (decision.start is not None) == ok


def test_an_append_only_flag_on_a_changelog_that_is_not_valid_is_refused():
    with pytest.raises(ValueError):
        ChangelogOutcome(Changelog.ABSENT, append_only=True)
    assert ChangelogOutcome("valid", append_only=True).state is Changelog.VALID


# -- skip marker and pin ---------------------------------------------------------------------------


def test_the_skip_marker_skips_only_the_sweep_and_every_condition_is_still_reported():
    decision = decide(make_pr(head_commit_message="Fix typo\n\n[Skip-Sweep]"), POLICY)
    assert decision.start is None and failing(decision) == set()
    assert reasons(decision)["skip_marker"] == (None, "present")
    assert tuple(c.name for c in decision.conditions) == CONDITIONS
    assert reasons(decision)["changelog"] == (True, "valid") and reasons(decision)["labels"] == (True, "valid")
    assert dict(decision.condition("skip_marker").params) == {"marker": "[skip-sweep]", "head_sha": HEAD}
    assert reasons(decide(make_pr(head_commit_message="skip-sweep"), POLICY))["skip_marker"] == (True, "absent")


def test_a_pin_stops_a_new_push_from_sweeping_and_re_adding_the_primary_forces_one():
    pinned = decide(make_pr(pin=777), POLICY)
    assert pinned.start is None and failing(pinned) == set()
    assert reasons(pinned)["reuse_pin"] == (True, "pinned"), "an active pin is a fine state: ✅, sweeps paused"
    assert dict(pinned.condition("reuse_pin").params) == {"run_id": 777}
    forced = decide(make_pr(pin=777, primary_readded_after_pin=True), POLICY)
    assert forced.start is not None and reasons(forced)["reuse_pin"] == (True, "forced")
    assert reasons(decide(make_pr(), POLICY))["reuse_pin"] == (None, "no_pin")


# -- the dispatch id -------------------------------------------------------------------------------


def finding(severity: str) -> Finding:
    return Finding("reverted_file", severity, "inferencex-e2e/recipes/a.sh", {"replaced_by": "f" * 40})


@pytest.mark.parametrize(
    "found, ok, code, starts",
    [
        (None, None, "not_checked", True),
        ((), True, "clear", True),
        ((finding(INFO),), True, "clear", True),
        ((finding(WARN), finding(INFO)), True, "warnings", True),
        ((finding(INFO), finding(REFUSE), finding(WARN)), False, "found", False),
    ],
    ids=["not checked", "clear", "information", "a warning", "a refusal"],
)
def test_the_stale_branch_guard_refuses_only_what_it_must(found, ok, code, starts):
    decision = decide(make_pr(stale_branch=found), POLICY)
    condition = decision.condition("stale_branch")
    assert (condition.ok, condition.reason_code, decision.start is not None) == (ok, code, starts)
    if found:  # refusals first, then warnings, then information
        assert [f["severity"] for f in condition.params["findings"]] == sorted(
            (f.severity for f in found), key=[REFUSE, WARN, INFO].index
        )


def test_a_stale_pin_holds_the_sweep_and_is_the_maintainers_to_fix_while_re_adding_the_primary_sweeps():
    stale = make_pr(pin=5, pin_stale_files=("inferencex-e2e/recipes/a.sh",))
    decision = decide(stale, POLICY)
    pin = decision.condition("reuse_pin")
    assert (pin.ok, pin.reason_code, pin.params["files"], decision.start) == (
        False,
        "stale",
        ("inferencex-e2e/recipes/a.sh",),
        None,
    )
    forced = decide(replace(stale, primary_readded_after_pin=True), POLICY)
    assert forced.condition("reuse_pin").reason_code == "forced" and forced.start is not None


def test_the_dispatch_id_is_stable_short_and_fits_a_comment_marker():
    first = dispatch_id(42, HEAD, [FAIL_FAST, ALL_EVALS])
    assert first == dispatch_id(42, HEAD, [ALL_EVALS.upper(), FAIL_FAST, ALL_EVALS])  # order, case, repeats
    assert re.fullmatch(r"[a-z0-9-]{1,24}", first) and first.startswith("sw-42-")
    assert (
        first
        == "sw-42-"
        + __import__("bot.rules.fingerprint", fromlist=["digest"]).digest(42, HEAD, sorted([FAIL_FAST, ALL_EVALS]))[:12]
    )


def test_the_dispatch_id_differs_per_label_set_head_sha_and_pr():
    ids = {
        dispatch_id(42, HEAD, [FAIL_FAST]),
        dispatch_id(42, HEAD, [FAIL_FAST, ALL_EVALS]),
        dispatch_id(42, HEAD, [ENABLED]),
        dispatch_id(42, HEAD, []),
        dispatch_id(42, OLD_HEAD, [FAIL_FAST]),
        dispatch_id(43, HEAD, [FAIL_FAST]),
    }
    assert len(ids) == 6


def test_the_decision_dispatch_id_counts_only_sweep_labels_that_count():
    plain = decide(make_pr(), POLICY).dispatch_id
    assert decide(make_pr(labels=(writer(FAIL_FAST), writer("amd"))), POLICY).dispatch_id == plain
    assert decide(make_pr(labels=(writer(FAIL_FAST.upper()),)), POLICY).dispatch_id == plain
    assert decide(make_pr(labels=(writer(FAIL_FAST), writer(AGENTX_FAST))), POLICY).dispatch_id != plain
    assert decide(make_pr(head_sha=OLD_HEAD), POLICY).dispatch_id != plain
    fork = decide(fork_pr(labels=(writer(FAIL_FAST), non_writer(AGENTX_FAST))), POLICY)
    assert fork.dispatch_id == plain


# -- shape -----------------------------------------------------------------------------------------


def test_conditions_are_data_for_templates_and_cannot_be_changed():
    decision = decide(fork_pr(labels=(writer(FAIL_FAST, sha=OLD_HEAD), non_writer(ENABLED))), POLICY)
    for c in decision.conditions:
        assert re.fullmatch(r"[a-z_]+", c.name) and re.fullmatch(r"[a-z_]+", c.reason_code)
        for value in c.params.values():
            assert (
                value is None
                or isinstance(value, (str, int, bool))
                or (isinstance(value, tuple) and all(isinstance(v, str) for v in value))
            )
    with pytest.raises(TypeError):
        decision.conditions[0].params["path"] = "elsewhere"
    with pytest.raises(FrozenInstanceError):
        decision.start = None
    with pytest.raises(TypeError):
        decide(make_pr(), POLICY).start.inputs["canary"] = "false"
