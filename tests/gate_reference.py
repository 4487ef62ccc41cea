"""A second, plain reading of the sweep-label rules (docs/spec.md, "Sweep labels" and "When a sweep starts"),
written from the rules' text and not from bot/rules/gate.py.

It answers only what the rules say directly: does a sweep start, with which primary label and which modifiers,
which labels the bot takes off the PR, and which gate conditions stop the sweep. tests/test_gate_decision.py
runs `bot.rules.gate.decide` and this function over thousands of PRs and compares the answers.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Expected:
    starts: bool
    primary: str | None  # the primary label the sweep runs with, spelled as in the policy
    modifiers: frozenset[str]  # "all-evals", "evals-only", "agentx-fast" keys of the modifiers passed as "true"
    removed: frozenset[str]  # label names the bot removes, as spelled on the PR
    blocked_by: frozenset[str]  # names of the conditions reported as failing (❌): something needs a fix
    held_by: frozenset[str] = frozenset()  # conditions that stop the sweep in a fine state (never ❌)


def expected(pr, policy) -> Expected:
    primary_names = [p.name for p in policy.labels.primary]
    modifier_names = policy.labels.modifiers.names()  # key -> label name

    def primary_of(name):
        for configured in primary_names:
            if configured.lower() == name.lower():
                return configured
        return None

    def modifier_of(name):
        for key, configured in modifier_names.items():
            if configured.lower() == name.lower():
                return key
        return None

    # "Fork PRs: a label counts only when applied by someone with write, maintain or admin permission." Since
    # authority's second pass, on every PR: only what a confirmed writer did counts (a fork's untrusted primary
    # is also taken off; on the repository's own branches it is left on and said not to count).
    counting = []
    removed = set()
    untrusted_sweep_labels = False
    for label in pr.labels:
        is_sweep_label = primary_of(label.name) is not None or modifier_of(label.name) is not None
        if not label.writer:
            if is_sweep_label:
                untrusted_sweep_labels = True
            if pr.is_fork and primary_of(label.name) is not None:
                removed.add(label.name)
            continue
        counting.append(label)

    primaries = [label for label in counting if primary_of(label.name) is not None]
    modifiers = {modifier_of(label.name) for label in counting if modifier_of(label.name) is not None}

    blocked = set()
    held = set()  # no state that is fine shows ❌ (a draft, a closed PR, a skip marker, a pin): held, not blocked

    # "A sweep runs only for a PR that appends at least one valid entry to the performance changelog"
    changelog_ok = pr.changelog.state.value == "valid"
    if not changelog_ok:
        if pr.changelog.state.value == "absent" and not primaries and not modifiers:
            held.add("changelog")  # words issue: no entry is nothing to fix while no sweep is asked for
        else:
            blocked.add("changelog")

    # Zero primaries: no sweep, not an error. Two or more: no sweep. A modifier without a primary: no sweep.
    # evals-only or all-evals with an `append-only: true` addition: invalid.
    if len(primaries) >= 2:
        blocked.add("labels")
    elif len(primaries) == 0 and modifiers:
        blocked.add("labels")
    elif len(primaries) == 1 and pr.changelog.append_only and ({"evals_only", "all_evals"} & modifiers):
        blocked.add("labels")

    # "on an open, non-draft PR targeting the default branch"
    if not pr.open or pr.draft:
        held.add("pull_request")
    elif pr.base_ref != pr.default_branch:
        blocked.add("pull_request")

    # The primary label approves the exact head SHA at the moment it was applied; a later push is not trusted.
    # The trusted workflow needs GitHub's merge SHA.
    if pr.is_fork:
        if len(primaries) == 1:
            if primaries[0].head_sha != pr.head_sha:
                blocked.add("fork_approval")
        elif untrusted_sweep_labels:
            blocked.add("fork_approval")
        # words issue: a merge commit is waited for (or is a conflict) only once a sweep is asked for
        if pr.mergeable is False or (len(primaries) == 1 and not pr.merge_commit_sha):
            blocked.add("merge_commit")

    # "`[skip-sweep]` in the head commit message skips the PR sweep only"
    if policy.skip_sweep_marker.lower() in pr.head_commit_message.lower():
        held.add("skip_marker")

    # "After a reuse pin a new push does not start a sweep; removing and re-adding the primary label forces one."
    if pr.pin is not None and not pr.primary_readded_after_pin:
        held.add("reuse_pin")

    starts = len(primaries) == 1 and not blocked and not held
    primary = primary_of(primaries[0].name) if len(primaries) == 1 else None
    return Expected(
        starts=starts,
        primary=primary if starts else None,
        modifiers=frozenset(modifiers) if starts else frozenset(),
        removed=frozenset(removed),
        blocked_by=frozenset(blocked),
        held_by=frozenset(held),
    )
