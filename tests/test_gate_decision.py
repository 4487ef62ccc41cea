"""The sweep gate's decision (bot/gate.py): exhaustively against tests/gate_reference.py, then named cases."""

from __future__ import annotations

import itertools
import re
from dataclasses import FrozenInstanceError, dataclass, field, replace

import pytest

from bot.config import default_policy
from bot.gate import (
    ACTIVE_STATUSES,
    CONDITIONS,
    REASONS,
    AppliedLabel,
    Changelog,
    ChangelogOutcome,
    Decision,
    Dispatched,
    GateInput,
    decide,
    dispatch_id,
)
from bot.policy import Policy
from gate_reference import expected

POLICY = Policy(default_policy())
PRIMARIES = [p["name"] for p in POLICY["labels"]["primary"]]  # fail-fast, enabled, non-canary
MODIFIERS = dict(POLICY["labels"]["modifiers"])  # key -> name
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
    pr = GateInput(number=42, head_sha=HEAD, base_sha=BASE, head_ref="recipe/mi355x", base_ref="main",
                   default_branch="main", changelog=VALID, labels=(writer(FAIL_FAST),),
                   head_commit_message="Tune MI355X recipe")
    return replace(pr, **changes)


def fork_pr(**changes) -> GateInput:
    return make_pr(**{"is_fork": True, "head_ref": "patch-1", "merge_commit_sha": MERGE, **changes})


def failing(decision: Decision) -> set[str]:
    return {c.name for c in decision.conditions if c.ok is False}


def reasons(decision: Decision) -> dict[str, tuple[bool | None, str]]:
    return {c.name: (c.ok, c.reason_code) for c in decision.conditions}


# -- exhaustive: every combination, against the reference -------------------------------------------

PRIMARY_SETS = [combo for n in range(len(PRIMARIES) + 1) for combo in itertools.combinations(PRIMARIES, n)]
MODIFIER_SETS = [combo for n in range(len(MODIFIERS) + 1)
                 for combo in itertools.combinations(MODIFIERS.values(), n)]
ORIGINS = ["same-repo", "same-repo, labelled by a non-writer", "fork, labelled by a writer",
           "fork, labelled by a writer before the last push", "fork, labelled by a non-writer",
           "fork, primary by a writer, modifiers by a non-writer"]
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

    labels = ([applied(n, "primary") for n in primaries] + [applied(n, "modifier") for n in modifiers]
              + [non_writer("amd", by="sweepbot[bot]")])  # a label that is not a sweep label never matters
    message = "Tune MI355X recipe\n\n[skip-sweep] numbers unchanged" if skip else "Tune MI355X recipe"
    fork = origin.startswith("fork")
    return make_pr(labels=tuple(labels), is_fork=fork, head_ref="patch-1" if fork else "recipe/mi355x",
                   merge_commit_sha=MERGE if fork else None, draft=draft, changelog=CHANGELOGS[changelog],
                   head_commit_message=message, pin=None if pin == "not pinned" else 9001,
                   primary_readded_after_pin=pin == "pinned, primary re-added")


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
        workflow = POLICY["workflows"]["fork_sweep" if pr.is_fork else "sweep"]
        ref = pr.default_branch if pr.is_fork else pr.head_ref
        if (decision.start.workflow, decision.start.ref) != (workflow, ref):
            problems.append(f"dispatches {decision.start.workflow} on {decision.start.ref}, expected {workflow} on {ref}")
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
        grid.mismatches[:40])


def test_the_exhaustive_cases_start_sweeps_exactly_where_the_rules_allow(grid):
    """A count that pins the grid itself: sweeps start only with one primary, not draft, a valid changelog, no
    skip marker, no pin or a forcing re-add (x2), either spelling (x2)."""
    # valid changelog: all 8 modifier sets; valid append-only: 2 (none, agentx-fast). Origins that can sweep:
    # same-repo, same-repo by a non-writer, fork by a writer (8 + 2 each); the mixed fork ignores the
    # untrusted modifiers, so all 8 sets sweep on both valid changelogs (8 + 8).
    per_primary = 3 * (8 + 2) + (8 + 8)
    assert grid.started == len(PRIMARIES) * per_primary * len(SPELLINGS) * 2 == 552


def test_every_reason_code_is_reachable_and_every_code_given_is_declared(grid):
    seen = {name: set(codes) for name, codes in grid.seen.items()}
    extra = [make_pr(open=False), make_pr(base_ref="release"), fork_pr(labels=(writer(FAIL_FAST, sha=None),)),
             fork_pr(merge_commit_sha=None), make_pr(dispatched=(Dispatched(decide(make_pr(), POLICY).dispatch_id,
                                                                            7, "in_progress"),))]
    for pr in extra:
        for c in decide(pr, POLICY).conditions:
            seen.setdefault(c.name, set()).add(c.reason_code)
    assert seen == {name: set(codes) for name, codes in REASONS.items()}
