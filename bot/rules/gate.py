"""The sweep gate (docs/spec.md, "When a sweep starts"): whether a PR's GPU sweep starts now, and for each gate
condition why or why not.

`decide(pr, policy)` is a pure function over plain data. The caller gathers a `GateInput` from GitHub (the PR,
its labels with who applied them and at which head SHA, the changelog check's outcome, the reuse pin, the runs
already dispatched for the PR) and carries out the `Decision`: dispatch `start`, cancel the runs in `cancel`,
remove the labels in `remove_labels`, and render `conditions` in the sweep status comment (one line per
condition, ✅ / ❌ / ➖ from `ok`, the sentence chosen by `reason_code` from the templates, filled with `params`).

`Condition.ok` is True when the condition lets the sweep run, False when it stops the sweep because something
needs a fix (the comment says why and what to do), and None when it does not apply or holds the sweep back in a
state that is fine (a same-repo PR needs no fork approval; no sweep label; a draft; a skip marker; a closed or
merged PR; a PR that only corrects `pr-link` values of history). A fine state is never False: the conditions in
HOLDING stop the sweep with ok None, and an active pin is True ("sweeps paused"). A sweep starts exactly when no
condition is False or HOLDING, the changelog is valid, the labels name one primary, no pin pauses sweeps, and
the run for this state was not dispatched before.

Every run is identified by its dispatch id: a digest of (PR, head SHA, the sweep labels that count), so a
retried or redelivered event finds the same id and never dispatches twice, and a run whose id is not the
current one is superseded (a push, a label added or removed) and cancelled while it is still queued or running.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import Any

from bot.rules.fingerprint import digest
from bot.rules.policy import Policy, PrimaryLabel
from bot.rules.pull_request import label_key
from bot.rules.stale_branch import CODES as STALE_BRANCH_CODES
from bot.rules.stale_branch import Finding, verdict

# The order the status comment shows them in.
CONDITIONS = (
    "changelog",
    "labels",
    "pull_request",
    "fork_approval",
    "merge_commit",
    "skip_marker",
    "reuse_pin",
    "stale_branch",
    "cost",
    "dispatch",
)

# Every reason code each condition can give: the templates need one sentence per code, in both languages.
REASONS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "changelog": frozenset({"valid", "absent", "invalid", "links_corrected"}),
        "labels": frozenset(
            {"valid", "no_primary", "several_primaries", "modifier_without_primary", "append_only_conflict"}
        ),
        "pull_request": frozenset({"ready", "closed", "merged", "draft", "wrong_base"}),
        "fork_approval": frozenset(
            {
                "same_repo",
                "approved",
                "head_changed",
                "approval_unknown",
                "untrusted_labeller",
                "awaiting_label",
                "permission_unknown",
            }
        ),
        "merge_commit": frozenset({"same_repo", "not_yet", "present", "computing", "conflicts", "stale"}),
        "skip_marker": frozenset({"absent", "present"}),
        "reuse_pin": frozenset({"no_pin", "pinned", "forced", "blocked", "stale"}),
        "stale_branch": frozenset(STALE_BRANCH_CODES),
        # the sweep's size against `sweeps.confirm_over` (bot.rules.sweep_cost): only `awaiting` holds it
        "cost": frozenset({"no_limit", "unknown", "within", "over", "awaiting", "confirmed"}),
        # `failed` and `retrying` are set by the handler when GitHub refuses or keeps failing the dispatch. A run
        # dispatched is `running` until it completes, then `passed`, `run_failed` or `cancelled`.
        "dispatch": frozenset(
            {
                "running",
                "passed",
                "run_failed",
                "cancelled",
                "starting",
                "not_dispatched",
                "failed",
                "retrying",
                "unknown",
                "queued",  # set by the handler: its runner pool is full (bot/rules/sweep_queue.py)
            }
        ),
    }
)

# Fine states that hold the sweep back (ok None, ➖): nothing is wrong, yet no sweep starts.
HOLDING: frozenset[tuple[str, str]] = frozenset(
    {
        ("changelog", "links_corrected"),
        ("pull_request", "closed"),
        ("pull_request", "merged"),
        ("pull_request", "draft"),
        ("skip_marker", "present"),
    }
)
# Fine and shown ✅, but no sweep starts: a pinned run stands for the PR until the primary label is re-added.
PAUSING: frozenset[tuple[str, str]] = frozenset({("reuse_pin", "pinned")})

# Codes the handler gives the dispatch condition itself (GitHub refused the dispatch, or keeps failing it, or its
# answer was lost and no run shows: unknown).
SET_BY_HANDLER: Mapping[str, frozenset[str]] = MappingProxyType(
    {"dispatch": frozenset({"failed", "retrying", "unknown", "queued"})}
)

# The inputs of the sweep workflows (every value a string, booleans "true"/"false"); the fork's trusted workflow
# also takes GitHub's merge commit. `_request` fills exactly these. `summary` (possibly "") is for the run-name
# only: the reuse reply reads what the run ran from it (bot.rules.run_summary).
DISPATCH_INPUTS = (
    "pr-number",
    "head-sha",
    "base-sha",
    "sweep-label",
    "canary",
    "fail-fast",
    "all-evals",
    "evals-only",
    "agentx-fast",
    "dispatch-id",
    "summary",
)
FORK_INPUTS = DISPATCH_INPUTS + ("merge-sha",)

# Workflow run statuses of a run that has not finished: a superseded one is cancelled.
ACTIVE_STATUSES = frozenset({"queued", "in_progress", "waiting", "requested", "pending"})

# The modifiers that cannot go with a changelog addition marked `append-only: true`.
APPEND_ONLY_CONFLICTS = ("all_evals", "evals_only")


# -- what the gate is given ---------------------------------------------------------------------


class Changelog(str, Enum):  # noqa: UP042  members print as Changelog.X in logs and records, as before
    """What the changelog check found in the PR's changes to the performance changelog."""

    ABSENT = "absent"  # no entry appended
    INVALID = "invalid"  # an entry appended, but the file or an entry breaks a rule of the changelog (docs/spec.md)
    VALID = "valid"  # at least one entry appended and every rule holds
    LINKS_CORRECTED = "links_corrected"  # nothing appended; only `pr-link` values of history corrected (docs/spec.md)


@dataclass(frozen=True)
class ChangelogOutcome:
    state: Changelog
    append_only: bool = False  # a valid append has `append-only: true` on at least one entry
    summary: str = ""  # what the appended entries name, as run-name tokens (bot.rules.run_summary); "" if unclear

    def __post_init__(self) -> None:
        object.__setattr__(self, "state", Changelog(self.state))
        if self.append_only and self.state is not Changelog.VALID:
            raise ValueError("append_only describes a valid append; the changelog outcome is " + self.state.value)


@dataclass(frozen=True)
class AppliedLabel:
    """A label on the PR: who applied it last, whether they have write, maintain or admin permission (None: GitHub
    would not say), and the PR's head SHA at that moment (from the `labeled` event; None when unknown)."""

    name: str
    applied_by: str
    writer: bool | None
    head_sha: str | None = None
    approved_by: str | None = None  # a writer who approved `head_sha` with the check's button, not by the label
    removed_by: str | None = None  # someone whose removal does not count took it off the PR: it still counts


@dataclass(frozen=True)
class Dispatched:
    """A run already dispatched for this PR: the dispatch id it was started with, its run id, its status, and its
    conclusion once completed."""

    key: str
    run_id: int
    status: str
    conclusion: str | None = None


@dataclass(frozen=True)
class GateInput:
    number: int
    head_sha: str
    base_sha: str
    head_ref: str
    base_ref: str
    default_branch: str
    changelog: ChangelogOutcome
    open: bool = True
    merged: bool = False  # closed by a merge (only read when not open)
    draft: bool = False
    is_fork: bool = False
    merge_commit_sha: str | None = None
    # The parents of GitHub's merge commit as GitHub gives them (None: not known, or not read: they are read only
    # once a writer's label counts). It tests the approved head only when that head is among them: after a push
    # GitHub may still show the merge commit of an earlier head.
    merge_parents: tuple[str, ...] | None = None
    mergeable: bool | None = None  # GitHub's answer: False is a conflict with the base; None: still computing
    labels: tuple[AppliedLabel, ...] = ()
    head_commit_message: str = ""
    pin: int | None = None  # the run id of the active reuse pin
    primary_readded_after_pin: bool = False  # the primary label was removed and added again after the pin
    pin_blocked_by: tuple[str, ...] = ()  # labels on the PR that block reuse (evals-only, agentx-fast)
    # The newest label event that counts (a sweep label added or removed by someone trusted): see dispatch_id.
    label_generation: int | None = None
    # The last "Run the sweep again" press (its token, bot-recorded): like re-adding the primary label, it asks
    # for a new dispatch id even for a commit and label set that ran before; a redelivered press does not.
    restart: str | None = None
    dispatched: tuple[Dispatched, ...] = ()
    # The stale-branch guard (bot.rules.stale_branch): its findings, None when not checked (no sweep asked for);
    # and the files a push after the pin changed that make the pin stale.
    stale_branch: tuple[Finding, ...] | None = None
    pin_stale_files: tuple[str, ...] = ()
    # The benchmark points the sweep runs (bot.rules.sweep_cost; None: not known), and the dispatch id a writer
    # confirmed a sweep over `sweeps.confirm_over` for (bot-recorded; a push or relabel makes a new id).
    points: int | None = None
    confirmed: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "labels", tuple(self.labels))
        object.__setattr__(self, "dispatched", tuple(self.dispatched))
        object.__setattr__(self, "pin_blocked_by", tuple(self.pin_blocked_by))
        if self.merge_parents is not None:
            object.__setattr__(self, "merge_parents", tuple(self.merge_parents))


# -- what the gate answers ----------------------------------------------------------------------


@dataclass(frozen=True)
class Condition:
    name: str
    ok: bool | None
    reason_code: str
    params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class SweepStart:
    """A sweep to start: `workflow` on `ref` with `inputs`; `dispatch_id` (an input the workflow puts in its run
    name) finds the run again, and `head_sha`, where set, narrows the runs to look among."""

    workflow: str
    ref: str
    inputs: Mapping[str, str]
    dispatch_id: str
    head_sha: str | None = None


@dataclass(frozen=True)
class Decision:
    start: SweepStart | None
    cancel: tuple[int, ...]
    remove_labels: tuple[str, ...]
    conditions: tuple[Condition, ...]
    dispatch_id: str  # the id of the PR's current state (head SHA and the sweep labels that count)

    def condition(self, name: str) -> Condition:
        return next(c for c in self.conditions if c.name == name)


def dispatch_id(
    number: int, head_sha: str, labels: Iterable[str], generation: int | None = None, restart: str | None = None
) -> str:
    """A short stable id of (PR, head SHA, label set): label order and case do not change it. Only `[a-z0-9-]`,
    so it fits in a comment marker and a run name.

    `generation` is the newest label event that counts (a sweep label added or removed by someone trusted):
    taking a modifier off again, or removing the primary and adding it back, asks for a new run even for a
    commit and label set that ran before (whose run was cancelled, or failed), while a redelivered event,
    which changes no label, asks for none. `restart` (a "Run the sweep again" press) does the same; without one
    the id is what it was before the button existed."""
    names = sorted({label_key(name) for name in labels})
    parts: tuple[object, ...] = (int(number), head_sha, names)
    if generation is not None:
        parts = parts + (generation,)
    if restart is not None:
        parts = parts + ("restart", restart)
    return f"sw-{int(number)}-{digest(*parts)[:12]}"


# -- the decision -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Labels:
    """The PR's sweep labels, sorted into those that count and those that do not (a fork's, by a non-writer)."""

    primaries: tuple[tuple[AppliedLabel, PrimaryLabel], ...]  # (label on the PR, its policy entry)
    modifiers: tuple[tuple[AppliedLabel, str, str], ...]  # (label on the PR, modifier key, policy name), policy order
    untrusted: tuple[AppliedLabel, ...]
    untrusted_primaries: tuple[AppliedLabel, ...]
    unconfirmed: tuple[AppliedLabel, ...] = ()  # a fork's, by someone whose permission GitHub would not confirm

    @classmethod
    def read(cls, pr: GateInput, policy: Policy) -> _Labels:
        primary_by_name = {label_key(p.name): (rank, p) for rank, p in enumerate(policy.labels.primary)}
        modifier_by_name = {
            label_key(name): (rank, key, name)
            for rank, (key, name) in enumerate(policy.labels.modifiers.names().items())
        }
        primaries, modifiers, untrusted, untrusted_primaries, unconfirmed = [], [], [], [], []
        for label in pr.labels:
            folded = label_key(label.name)
            if folded not in primary_by_name and folded not in modifier_by_name:
                continue  # not a sweep label
            if label.writer is None:
                unconfirmed.append(label)  # neither counted nor removed: its labeller may well be a maintainer
            elif not label.writer:
                untrusted.append(label)
                if pr.is_fork and folded in primary_by_name:  # taken off a fork's PR; left on the repository's own
                    untrusted_primaries.append(label)
            elif folded in primary_by_name:
                primaries.append((primary_by_name[folded], label))
            else:
                modifiers.append((modifier_by_name[folded], label))
        primaries.sort(key=lambda item: item[0][0])  # policy order, whatever order they were applied in
        modifiers.sort(key=lambda item: item[0][0])
        return cls(
            primaries=tuple((label, entry) for (_, entry), label in primaries),
            modifiers=tuple((label, key, name) for (_, key, name), label in modifiers),
            untrusted=tuple(untrusted),
            untrusted_primaries=tuple(untrusted_primaries),
            unconfirmed=tuple(unconfirmed),
        )

    @property
    def counted_names(self) -> list[str]:
        return [entry.name for _, entry in self.primaries] + [name for _, _, name in self.modifiers]

    def modifier_names(self, keys: Iterable[str] | None = None) -> tuple[str, ...]:
        wanted = None if keys is None else set(keys)
        return tuple(name for _, key, name in self.modifiers if wanted is None or key in wanted)

    @property
    def modifier_keys(self) -> frozenset[str]:
        return frozenset(key for _, key, _ in self.modifiers)


def _params(**values: Any) -> Mapping[str, Any]:
    return MappingProxyType(values)


def _changelog(pr: GateInput, labels: _Labels, policy: Policy) -> Condition:
    path = policy.paths.changelog
    outcome = pr.changelog
    if outcome.state is Changelog.VALID:
        return Condition("changelog", True, "valid", _params(path=path, append_only=outcome.append_only))
    if outcome.state is Changelog.LINKS_CORRECTED:
        return Condition("changelog", None, "links_corrected", _params(path=path))
    if outcome.state is Changelog.ABSENT and not (labels.primaries or labels.modifiers):
        return Condition("changelog", None, "absent", _params(path=path))  # needed once a sweep is asked for
    return Condition("changelog", False, outcome.state.value, _params(path=path))


def _labels(pr: GateInput, labels: _Labels, policy: Policy) -> Condition:
    condition = _label_set(pr, labels, policy)
    return Condition(
        condition.name, condition.ok, condition.reason_code, _params(**condition.params, **_counting(pr, labels))
    )


def _counting(pr: GateInput, labels: _Labels) -> dict[str, tuple[str, ...]]:
    """Which labels do not count and which still do though taken off, and whose doing that was (only the keys
    that have any): the labels line says so (a fork's labels that do not count are said under the fork approval)."""
    on_pr = [label for label, _ in labels.primaries] + [label for label, _, _ in labels.modifiers]
    kept = [label for label in on_pr if label.removed_by]
    found: dict[str, tuple[str, ...]] = {
        "kept": tuple(label.name for label in kept),
        "kept_by": tuple(dict.fromkeys(label.removed_by for label in kept if label.removed_by)),
        "not_counted": (),
        "not_counted_by": (),
        "unconfirmed": (),
        "unconfirmed_by": (),
    }
    if not pr.is_fork:
        found.update(
            not_counted=tuple(label.name for label in labels.untrusted),
            not_counted_by=tuple(dict.fromkeys(label.applied_by for label in labels.untrusted if label.applied_by)),
            unconfirmed=tuple(label.name for label in labels.unconfirmed),
            unconfirmed_by=tuple(dict.fromkeys(label.applied_by for label in labels.unconfirmed if label.applied_by)),
        )
    return {key: value for key, value in found.items() if value}


def _label_set(pr: GateInput, labels: _Labels, policy: Policy) -> Condition:
    if len(labels.primaries) > 1:
        recommended = next((p.name for p in policy.labels.primary if p.recommended), None)
        return Condition(
            "labels",
            False,
            "several_primaries",
            _params(labels=tuple(entry.name for _, entry in labels.primaries), recommended=recommended),
        )
    if not labels.primaries:
        if labels.modifiers:
            return Condition("labels", False, "modifier_without_primary", _params(modifiers=labels.modifier_names()))
        return Condition("labels", None, "no_primary", _params())
    conflicting = labels.modifier_names(APPEND_ONLY_CONFLICTS)
    if conflicting and pr.changelog.state is Changelog.VALID and pr.changelog.append_only:
        return Condition("labels", False, "append_only_conflict", _params(modifiers=conflicting))
    ((_, entry),) = labels.primaries
    return Condition(
        "labels",
        True,
        "valid",
        _params(primary=entry.name, modifiers=labels.modifier_names(), canary=entry.canary, fail_fast=entry.fail_fast),
    )


def _pull_request(pr: GateInput) -> Condition:
    if not pr.open:
        return Condition("pull_request", None, "merged" if pr.merged else "closed", _params(pin=pr.pin))
    if pr.draft:
        return Condition("pull_request", None, "draft", _params())
    if pr.base_ref != pr.default_branch:
        return Condition(
            "pull_request", False, "wrong_base", _params(base_ref=pr.base_ref, default_branch=pr.default_branch)
        )
    return Condition("pull_request", True, "ready", _params(base_ref=pr.base_ref))


def _fork_approval(pr: GateInput, labels: _Labels) -> Condition:
    """A fork's primary label approves the head SHA current when a writer applied it, and no later one."""
    if not pr.is_fork:
        return Condition("fork_approval", None, "same_repo", _params())
    ignored = tuple(label.name for label in labels.untrusted + labels.unconfirmed)
    if len(labels.primaries) == 1:
        ((label, _),) = labels.primaries
        if label.head_sha is None:
            return Condition(
                "fork_approval",
                False,
                "approval_unknown",
                _params(by=label.applied_by, head_sha=pr.head_sha, ignored=ignored),
            )
        if label.head_sha != pr.head_sha:
            return Condition(
                "fork_approval",
                False,
                "head_changed",
                _params(by=label.applied_by, approved_sha=label.head_sha, head_sha=pr.head_sha, ignored=ignored),
            )
        if label.approved_by is not None:
            return Condition(
                "fork_approval",
                True,
                "approved",
                _params(by=label.approved_by, head_sha=pr.head_sha, ignored=ignored, via="button"),
            )
        return Condition(
            "fork_approval", True, "approved", _params(by=label.applied_by, head_sha=pr.head_sha, ignored=ignored)
        )
    if labels.unconfirmed:
        by = tuple(dict.fromkeys(label.applied_by for label in labels.unconfirmed))
        return Condition(
            "fork_approval",
            False,
            "permission_unknown",
            _params(labels=tuple(label.name for label in labels.unconfirmed), by=by),
        )
    if labels.untrusted:
        by = tuple(dict.fromkeys(label.applied_by for label in labels.untrusted))
        return Condition(
            "fork_approval",
            False,
            "untrusted_labeller",
            _params(labels=ignored, by=by, removed=tuple(label.name for label in labels.untrusted_primaries)),
        )
    return Condition("fork_approval", None, "awaiting_label", _params())


def _merge_commit(pr: GateInput, labels: _Labels) -> Condition:
    """A fork's sweep tests GitHub's merge commit of the approved head: a conflict is the author's to fix; a merge
    commit not computed yet, or computed for an earlier head, is waited for; unknown is never stale."""
    if not pr.is_fork:
        return Condition("merge_commit", None, "same_repo", _params())
    if pr.mergeable is False:
        return Condition("merge_commit", False, "conflicts", _params(head_sha=pr.head_sha))
    if len(labels.primaries) != 1:  # nothing approved: the merge commit is looked at once a sweep is asked for
        return Condition("merge_commit", None, "not_yet", _params())
    if pr.merge_commit_sha is None or pr.merge_parents is None:
        return Condition("merge_commit", False, "computing", _params(head_sha=pr.head_sha))
    if pr.head_sha not in pr.merge_parents:
        return Condition("merge_commit", False, "stale", _params(merge_sha=pr.merge_commit_sha, head_sha=pr.head_sha))
    return Condition("merge_commit", True, "present", _params(merge_sha=pr.merge_commit_sha))


def _skip_marker(pr: GateInput, policy: Policy) -> Condition:
    marker = policy.skip_sweep_marker
    if marker.casefold() in pr.head_commit_message.casefold():
        return Condition("skip_marker", None, "present", _params(marker=marker, head_sha=pr.head_sha))
    return Condition("skip_marker", True, "absent", _params(marker=marker))


def _reuse_pin(pr: GateInput) -> Condition:
    if pr.pin is None:
        return Condition("reuse_pin", None, "no_pin", _params())
    if pr.pin_blocked_by:  # the pin cannot be reused while these are on: it does not hold the sweep back
        return Condition("reuse_pin", None, "blocked", _params(run_id=pr.pin, labels=tuple(pr.pin_blocked_by)))
    if pr.primary_readded_after_pin:
        return Condition("reuse_pin", True, "forced", _params(run_id=pr.pin))
    if pr.pin_stale_files:  # pushed since: the pinned run tested other code; still no sweep without a maintainer
        return Condition(
            "reuse_pin",
            False,
            "stale",
            _params(run_id=pr.pin, files=pr.pin_stale_files[:5], more=max(0, len(pr.pin_stale_files) - 5)),
        )
    return Condition("reuse_pin", True, "pinned", _params(run_id=pr.pin))


def _stale_branch(pr: GateInput) -> Condition:
    ok, code, params = verdict(pr.stale_branch)
    return Condition("stale_branch", ok, code, _params(**params))


def _cost(pr: GateInput, otherwise_runnable: bool, key: str, policy: Policy) -> Condition:
    """A sweep of more points than `sweeps.confirm_over` waits for a writer's confirmation of this dispatch id
    (the check's button), asked for only once nothing else holds the sweep; unknown points never hold a sweep,
    and a run already started for the id is not held."""
    limit = policy.sweeps.confirm_over
    params = _params(points=pr.points, limit=limit)
    if limit is None:
        return Condition("cost", None, "no_limit", params)
    if pr.points is None:
        return Condition("cost", None, "unknown", params)
    if pr.points <= limit:
        return Condition("cost", True, "within", params)
    if pr.confirmed == key or any(run.key == key for run in pr.dispatched):
        return Condition("cost", True, "confirmed", params)
    if not otherwise_runnable:
        return Condition("cost", None, "over", params)  # something else holds it first: nothing to confirm yet
    return Condition("cost", False, "awaiting", params)


def _request(pr: GateInput, labels: _Labels, policy: Policy, key: str) -> SweepStart:
    ((_, entry),) = labels.primaries
    flags = labels.modifier_keys
    inputs = {
        "pr-number": str(pr.number),
        "head-sha": pr.head_sha,
        "base-sha": pr.base_sha,
        "sweep-label": entry.name,
        "canary": _bool(entry.canary),
        "fail-fast": _bool(entry.fail_fast),
        "all-evals": _bool("all_evals" in flags),
        "evals-only": _bool("evals_only" in flags),
        "agentx-fast": _bool("agentx_fast" in flags),
        "dispatch-id": key,
        "summary": pr.changelog.summary,
    }
    if pr.is_fork:
        assert pr.merge_commit_sha is not None  # a fork's sweep starts only once its merge commit is present
        inputs["merge-sha"] = pr.merge_commit_sha
        workflow, ref = policy.workflows.fork_sweep, pr.default_branch
    else:
        workflow, ref = policy.workflows.sweep, pr.head_ref
    # A same-repo run is found again by the PR's head SHA; a fork's trusted workflow runs on the default
    # branch, whose head is not the PR's, so it is found by its dispatch id alone.
    return SweepStart(workflow, ref, MappingProxyType(inputs), key, head_sha=None if pr.is_fork else pr.head_sha)


def _bool(value: bool) -> str:
    return "true" if value else "false"


def run_outcome(run: Dispatched) -> tuple[bool | None, str]:
    """(ok, code) of the dispatch condition for the run of the PR's current state."""
    if run.status in ACTIVE_STATUSES or run.status != "completed":
        return True, "running"
    if run.conclusion == "success":
        return True, "passed"
    if run.conclusion in ("cancelled", "skipped", "neutral"):
        return None, "cancelled"
    return False, "run_failed"


# The marks every text uses (the status comment, the check runs, the sign-off verdict): ❌ only for what a
# person on this PR must fix, ⏳ for what waits on something else, ✅ done, ➖ not applicable.
FIX, WAIT, DONE, NOT_APPLICABLE = "fix", "wait", "done", "na"
MARK_SYMBOLS: Mapping[str, str] = MappingProxyType({FIX: "❌", WAIT: "⏳", DONE: "✅", NOT_APPLICABLE: "➖"})
# Conditions that hold the sweep back (ok False) while GitHub, a maintainer's approval or the run itself is
# waited for: nothing anyone on the PR can fix, so ⏳, never ❌.
WAITING: frozenset[tuple[str, str]] = frozenset(
    {
        ("merge_commit", "computing"),
        ("merge_commit", "stale"),
        ("fork_approval", "awaiting_label"),
        ("fork_approval", "head_changed"),
        ("fork_approval", "approval_unknown"),
        ("fork_approval", "untrusted_labeller"),
        ("fork_approval", "permission_unknown"),
        ("dispatch", "running"),
        ("dispatch", "starting"),
        ("dispatch", "retrying"),
        ("dispatch", "queued"),
        ("cost", "awaiting"),
    }
)


def mark(condition: Condition) -> str:
    """The condition's mark: FIX, WAIT, DONE or NOT_APPLICABLE."""
    if (condition.name, condition.reason_code) in WAITING:
        return WAIT
    if condition.ok is False:
        return FIX
    return DONE if condition.ok else NOT_APPLICABLE


def decide(pr: GateInput, policy: Policy) -> Decision:
    """What the gate does for `pr` now under `policy` (shaped like app.yaml's `policy`)."""
    labels = _Labels.read(pr, policy)
    key = dispatch_id(pr.number, pr.head_sha, labels.counted_names, pr.label_generation, pr.restart)
    gates = [
        _changelog(pr, labels, policy),
        _labels(pr, labels, policy),
        _pull_request(pr),
        _fork_approval(pr, labels),
        _merge_commit(pr, labels),
        _skip_marker(pr, policy),
        _reuse_pin(pr),
        _stale_branch(pr),
    ]
    earlier = [run for run in pr.dispatched if run.key == key]
    runnable = (
        gates[0].ok is True
        and gates[1].ok is True
        and all(c.ok is not False for c in gates)
        and not any((c.name, c.reason_code) in HOLDING | PAUSING for c in gates)
    )
    gates.append(_cost(pr, runnable, key, policy))
    runnable = runnable and gates[-1].ok is not False
    start = None
    if earlier:
        run = earlier[-1]
        ok, code = run_outcome(run)
        gates.append(
            Condition(
                "dispatch",
                ok,
                code,
                _params(dispatch_id=key, run_id=run.run_id, status=run.status, conclusion=run.conclusion),
            )
        )
    elif runnable:
        start = _request(pr, labels, policy, key)
        gates.append(Condition("dispatch", True, "starting", _params(dispatch_id=key)))
    else:
        gates.append(Condition("dispatch", None, "not_dispatched", _params()))
    cancel = tuple(
        dict.fromkeys(run.run_id for run in pr.dispatched if run.key != key and run.status in ACTIVE_STATUSES)
    )
    return Decision(
        start=start,
        cancel=cancel,
        remove_labels=tuple(label.name for label in labels.untrusted_primaries),
        conditions=tuple(gates),
        dispatch_id=key,
    )
