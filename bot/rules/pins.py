"""Reuse pins (docs/spec.md, "Pins"): whether a workflow run may be reused for a PR, and which commands pin one."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from typing import Any, NamedTuple

from bot.rules.commands import Command, same_command
from bot.rules.policy import Policy

# Artifact names that hold results. Matched by fnmatch.fnmatchcase against the whole name: case-sensitive (as
# actions/download-artifact's `pattern:` is), `*` is any run of characters including none, `?` is one
# character, `[...]` a set. So `results_bmk` and `results_bmk_mi355x` match the first pattern,
# `eval_results_all` only itself, `Results_bmk1` and `eval_results_all_2` nothing.
RESULT_ARTIFACTS: tuple[str, ...] = ("results_bmk*", "eval_results_all", "bmk_agentic_*")

# Where a run's workflow file lives: `run["path"]` must be this plus the PR's sweep workflow (policy
# `workflows.sweep` for a PR from this repository, `workflows.fork_sweep` for a fork's).
WORKFLOWS_DIR = ".github/workflows/"
COMPLETED = "completed"
PINNED_CONCLUSIONS: tuple[str, ...] = ("success", "failure", "cancelled")  # `/use <id>`, `/reuse-sweep-run <id>`
AUTOMATIC_CONCLUSIONS: tuple[str, ...] = ("success",)  # bare `/reuse-sweep-run`
# The modifier keys (policy `labels.modifiers`) that block reuse while on the PR, in the order params name them.
BLOCKING_MODIFIERS: tuple[str, ...] = ("evals_only", "agentx_fast")

# The verdict codes, in the order check_run checks them; it reports the first that fails, else ELIGIBLE.
WRONG_WORKFLOW = "wrong-workflow"
NOT_DISPATCHED = "not-dispatched"  # not a sweep the bot dispatched for this PR (bot.rules.dispatched_runs)
NOT_COMPLETED = "not-completed"
CONCLUSION_NOT_ALLOWED = "conclusion-not-allowed"
NO_RESULT_ARTIFACT = "no-result-artifact"
BLOCKED_BY_LABEL = "blocked-by-label"
ELIGIBLE = "eligible"
CODES: tuple[str, ...] = (
    WRONG_WORKFLOW,
    NOT_DISPATCHED,
    NOT_COMPLETED,
    CONCLUSION_NOT_ALLOWED,
    NO_RESULT_ARTIFACT,
    BLOCKED_BY_LABEL,
    ELIGIBLE,
)

# The command kinds that pin a run (bot.rules.commands kinds, either configured name).
PIN_KINDS = frozenset({"use", "reuse"})


@dataclass(frozen=True)
class Verdict:
    ok: bool  # True only for ELIGIBLE
    code: str  # one of CODES
    params: dict[str, Any] = field(default_factory=dict)  # what the reply template fills in


class Selection(NamedTuple):
    run: Mapping[str, Any] | None  # the newest eligible run, or None
    verdict: Verdict | None  # its verdict (ELIGIBLE), or None
    others: tuple[tuple[Mapping[str, Any], Verdict], ...]  # every other run, newest first, with its verdict


# -- eligibility ---------------------------------------------------------------------------------


def sweep_workflow(policy: Policy, *, fork: bool) -> str:
    """The workflow whose runs a PR reuses: the trusted fork workflow for a fork's PR, else the sweep workflow."""
    return policy.workflows.fork_sweep if fork else policy.workflows.sweep


def check_run(
    run: Mapping[str, Any],
    *,
    pinned: bool,
    dispatched: bool,
    fork: bool,
    artifacts: Iterable[Mapping[str, Any]],
    labels: Iterable[str],
    policy: Policy,
    now: datetime,
) -> Verdict:
    """Whether `run` may be reused for the PR: the first failing check in CODES order, else ELIGIBLE.

    `dispatched`: the run is a sweep the bot dispatched for this PR (bot.rules.dispatched_runs.bot_run). Every other
    run is refused, whatever commit it ran on: a fork's own `pull_request` runs of its copy of the workflow
    carry the PR's commits too. (So a run of the PR's commits is not enough: only a run the bot itself dispatched
    for this PR counts, and the commit no longer decides; docs/spec.md, "Pins".)
    Every verdict's params hold run_id, head_sha and run_attempt; each code adds what its reply needs. ELIGIBLE
    and NO_RESULT_ARTIFACT add `expiry` (see `expiry`): the live result artifacts, or the expired ones.
    """
    base = {"run_id": run.get("id"), "head_sha": run.get("head_sha"), "run_attempt": run.get("run_attempt")}
    expected = WORKFLOWS_DIR + sweep_workflow(policy, fork=fork)
    if run.get("path") != expected:
        return _refuse(WRONG_WORKFLOW, base, path=run.get("path"), workflow=expected)
    if not dispatched:
        return _refuse(NOT_DISPATCHED, base)
    if run.get("status") != COMPLETED:
        return _refuse(NOT_COMPLETED, base, status=run.get("status"))
    allowed = PINNED_CONCLUSIONS if pinned else AUTOMATIC_CONCLUSIONS
    if run.get("conclusion") not in allowed:
        return _refuse(CONCLUSION_NOT_ALLOWED, base, conclusion=run.get("conclusion"), allowed=allowed)
    seen = [a for a in artifacts if isinstance(a, Mapping)]
    names = tuple(a["name"] for a in seen if isinstance(a.get("name"), str))
    results = [a for a in seen if is_result_artifact(a.get("name"))]
    live = [a for a in results if not is_expired(a, now)]
    if not live:
        expired = tuple(a["name"] for a in results)
        return _refuse(
            NO_RESULT_ARTIFACT,
            base,
            artifacts=names,
            expired=expired,
            patterns=RESULT_ARTIFACTS,
            expiry=expiry(results, not_after=now),
        )
    blocking = blocking_labels(labels, policy)
    if blocking:
        return _refuse(BLOCKED_BY_LABEL, base, labels=blocking)
    return Verdict(
        True,
        ELIGIBLE,
        {
            **base,
            "conclusion": run.get("conclusion"),
            "artifacts": tuple(a["name"] for a in live),
            "expiry": expiry(live),
        },
    )


def newest_eligible(
    runs: Iterable[Mapping[str, Any]],
    *,
    dispatched_run_ids: Collection[int],
    fork: bool,
    artifacts_of: Mapping[int, Iterable[Mapping[str, Any]]],
    labels: Iterable[str],
    policy: Policy,
    now: datetime,
) -> Selection:
    """The newest run (by created_at, then id) that passes check_run with pinned=False, and every other verdict.

    `dispatched_run_ids` are the runs the bot dispatched for this PR. A run listed twice (pages that shifted
    while being read) is checked once; a run missing from `artifacts_of` has no artifacts.
    """
    labels = tuple(labels)
    chosen: tuple[Mapping[str, Any], Verdict] | None = None
    others: list[tuple[Mapping[str, Any], Verdict]] = []
    for run in sorted(_unique(runs), key=_newest_first):
        run_id = run.get("id")
        artifacts = artifacts_of.get(run_id, ()) if isinstance(run_id, int) else ()
        verdict = check_run(
            run,
            pinned=False,
            dispatched=run_id in dispatched_run_ids,
            fork=fork,
            artifacts=artifacts,
            labels=labels,
            policy=policy,
            now=now,
        )
        if verdict.ok and chosen is None:
            chosen = (run, verdict)
        else:
            others.append((run, verdict))
    if chosen is None:
        return Selection(None, None, tuple(others))
    return Selection(chosen[0], chosen[1], tuple(others))


def is_result_artifact(name: Any) -> bool:
    """Whether an artifact called `name` holds results (RESULT_ARTIFACTS)."""
    if not isinstance(name, str):
        return False
    return any(fnmatchcase(name, pattern) for pattern in RESULT_ARTIFACTS)


def expiry(artifacts: Iterable[Mapping[str, Any]], *, not_after: datetime | None = None) -> tuple[dict[str, Any], ...]:
    """Each artifact's name and the day it expires (or expired) as GitHub's `expires_at` says, YYYY-MM-DD in
    UTC; `date` is None when GitHub gave no time or one that does not parse, or (`not_after`, for artifacts that
    have expired) a time after `not_after`: an artifact flagged expired early has no day to show. In the order
    given."""
    out = []
    for artifact in artifacts:
        when = _parse_time(artifact.get("expires_at"))
        if when is not None and not_after is not None and when > _utc(not_after):
            when = None
        out.append(
            {
                "name": artifact.get("name"),
                "date": when.astimezone(UTC).date().isoformat() if when is not None else None,
            }
        )
    return tuple(out)


def is_expired(artifact: Mapping[str, Any], now: datetime) -> bool:
    """`expired` is true, or `expires_at` is at or before `now` (an artifact expiring this instant cannot be
    fetched). No `expires_at` trusts the flag; one that does not parse counts as expired."""
    if artifact.get("expired") is True:
        return True
    expires_at = artifact.get("expires_at")
    if expires_at is None:
        return False
    when = _parse_time(expires_at)
    return when is None or when <= _utc(now)


def blocking_labels(labels: Iterable[str], policy: Policy) -> tuple[str, ...]:
    """The PR's labels (as spelt on the PR) that block reuse, in BLOCKING_MODIFIERS order; case-insensitive."""
    on_pr = {label.casefold(): label for label in labels if isinstance(label, str)}
    modifiers = policy.labels.modifiers
    found = (on_pr.get(modifiers.names()[key].casefold()) for key in BLOCKING_MODIFIERS)
    return tuple(label for label in found if label is not None)


def _refuse(code: str, base: dict[str, Any], **extra: Any) -> Verdict:
    return Verdict(False, code, {**base, **extra})


def _unique(runs: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    seen: set[Any] = set()
    unique = []
    for run in runs:
        if run.get("id") not in seen:
            seen.add(run.get("id"))
            unique.append(run)
    return unique


def _newest_first(run: Mapping[str, Any]) -> tuple[float, int]:
    when = _parse_time(run.get("created_at")) or _parse_time(run.get("run_started_at"))
    stamp = when.timestamp() if when is not None else float("-inf")
    run_id = run.get("id")
    return -stamp, -(run_id if isinstance(run_id, int) else -1)


def _parse_time(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return _utc(value)
    if not isinstance(value, str):
        return None
    try:
        return _utc(datetime.fromisoformat(value))
    except ValueError:
        return None


def _utc(when: datetime) -> datetime:
    """A naive time is UTC (GitHub's times are)."""
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when


# -- which command pins --------------------------------------------------------------------------


# Why the pin a comment held was withdrawn: its latest text no longer pins that run. The record keeps it, the
# status comment says it (templates/sweep_status.*).
DELETED = "deleted"  # the comment was deleted
EDITED = "edited"  # edited so that it holds no pin command
EDITED_BY_OTHER = "edited_by_other"  # its pin command changed by someone else than its author: not run
REFUSED = "refused"  # its author edited in another pin command, which was refused (or found no run to pin)
UNAUTHORIZED = "unauthorized"  # ... which its author, no longer a writer, may not run
PERMISSION_UNKNOWN = "permission_unknown"  # ... and GitHub would not confirm its author's permission
WITHDRAWALS: tuple[str, ...] = (DELETED, EDITED, EDITED_BY_OTHER, REFUSED, UNAUTHORIZED, PERMISSION_UNKNOWN)
NEW_PIN_COMMAND = "new_pin_command"  # the author edited in another pin command: its outcome decides


def held_pin_change(old: Command | None, new: Command | None, *, deleted: bool, by_author: bool) -> str | None:
    """What an edit or deletion does to the pin the comment holds, which follows the comment's latest text; `old`
    and `new` are its effective commands before and after the edit (bot.rules.commands.parse).

    None: the pin stays (the same command, maybe on another line, or the rest of the comment edited; same as
    bot.rules.commands.is_new_command compares). NEW_PIN_COMMAND: its author edited in another well-formed pin
    command, which is run now, and the pin follows its outcome: accepted, it pins that run in place of this one
    (no moment without a pin, when a sweep could start); refused, the pin is withdrawn (REFUSED, UNAUTHORIZED,
    PERMISSION_UNKNOWN). Otherwise the pin is withdrawn now, and the reason (one of WITHDRAWALS) says why:
    DELETED; EDITED when the comment no longer holds a pin command (whoever edited it: anyone may delete it too);
    EDITED_BY_OTHER when someone else than its author changed it into another pin command, which is never run.
    """
    if deleted:
        return DELETED
    if not is_pin(new):
        return EDITED
    if same_command(old, new):
        return None
    return NEW_PIN_COMMAND if by_author else EDITED_BY_OTHER


def is_pin(command: Command | None) -> bool:
    """Whether `command` is a well-formed `use`/`reuse` command (either configured name): one that pins a run."""
    return command is not None and command.kind in PIN_KINDS and command.problem is None
