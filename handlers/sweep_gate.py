"""The sweep gate: on every change to a PR, decide whether its GPU sweep starts, start it once, and say why."""

from __future__ import annotations

import asyncio
import dataclasses
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import cachetools
from gidgethub import sansio

from bot.core import offload, routing, turns
from bot.core.processing import Context
from bot.delivery import lanes
from bot.delivery.failures import TRANSIENT, NeedsAPerson, NotListedYet, classify
from bot.effects.actions import (
    Action,
    Annotation,
    CancelRun,
    CheckButton,
    CheckRun,
    Comment,
    DispatchWorkflow,
    RemoveLabel,
)
from bot.effects.comments import PER_PAGE
from bot.rules import check_buttons, run_report, sweep_cost
from bot.rules.changelog import ChangelogError, ChangelogResult, unfinished_check
from bot.rules.changelog.limits import policy_limits
from bot.rules.dispatched_runs import not_the_bots
from bot.rules.gate import (
    ACTIVE_STATUSES,
    DONE,
    FIX,
    MARK_SYMBOLS,
    NOT_APPLICABLE,
    WAIT,
    Changelog,
    ChangelogOutcome,
    Condition,
    Decision,
    Dispatched,
    GateInput,
    decide,
    mark,
)
from bot.rules.links import VIEWER_PAGES, Slashed, repo_api, viewer_links, web
from bot.rules.pins import blocking_labels
from bot.rules.policy import Policy
from bot.rules.pull_request import carries_primary, is_fork, is_primary, label_names, own_check_run, primary_names
from bot.rules.run_summary import summary_tokens
from bot.rules.stale_branch import Finding, annotation
from bot.rules.sweep_queue import Entry, ordered, plan
from bot.rules.sweep_record import (
    Approval,
    Confirmation,
    Pin,
    Queued,
    Restart,
    RunRecord,
    SweepRecord,
    shows_status,
)
from bot.telemetry import logs
from handlers import pr_state

PURPOSE = pr_state.STATUS_PURPOSE
FORK_LABEL_PURPOSE = "fork-label-removed"
CHECK_NAME = check_buttons.GATE_CHECK
SWEEP_CHECK = "sweep"  # the sweep's own result, on the commit it tested
SWEEP_CHECK_CONCLUSIONS = frozenset(
    {"success", "failure", "cancelled", "neutral", "timed_out", "skipped", "action_required", "stale"}
)
PR_ACTIONS = (
    "opened",
    "reopened",
    "ready_for_review",
    "synchronize",
    "labeled",
    "unlabeled",
    "edited",
    "converted_to_draft",
    "closed",
)
RUN_ACTIONS = ("requested", "in_progress", "completed")
CHECK_ACTIONS = ("requested_action", "rerequested")
SHOWN_POOLS = 20  # runner pools given a line in the status; the rest are summed in one
SHOWN_KEYS = 10  # config keys named in the status for matching no config, or naming no pool; the rest counted
SHOWN_ERRORS = 20  # in the comment; the check run annotates every error the result keeps (policy limits)
MERGE_SHA_WAIT = 2.0  # GitHub computes a PR's merge commit in the background after a push
REFRESHED = 10  # waiting PRs told their new place when the queue moves; those further back hear at their next event

router = routing.Router()
# Both are keyed by commit SHAs, whose content never changes.
_changelog_checks: cachetools.LRUCache = cachetools.LRUCache(maxsize=512)
_commits: cachetools.LRUCache = cachetools.LRUCache(maxsize=2048)  # (repo, sha) -> (message, parents)
# The cost of every config key at a commit: (repo, sha, paths) -> {key: KeyCost}; a few KB each.
_key_costs: cachetools.LRUCache = cachetools.LRUCache(maxsize=64)
# Durations of past sweep jobs (seconds, the newest last), by the words of their names: (repo, word) -> tuple. Fed
# once per finished run the bot dispatched; a cache, not state: after a restart the estimate is "unknown" until
# runs finish again, and nothing waits for it.
_job_history: cachetools.LRUCache = cachetools.LRUCache(maxsize=4096)
_timed_runs: cachetools.LRUCache = cachetools.LRUCache(maxsize=4096)  # (repo, run id, attempt) already counted
# (loop, repo, PR) -> the lock one evaluation of the PR holds; (repo, dispatch id) -> GitHub's answer to its dispatch
_evaluating: cachetools.LRUCache = cachetools.LRUCache(maxsize=4096)
# kept per processor (its repositories' configs stand for it: one per running bot), so a new bot starts with none
_started: weakref.WeakKeyDictionary[Any, cachetools.TTLCache] = weakref.WeakKeyDictionary()
# per processor too: (repo, PR) -> (its queue entry, the decision) of a sweep this process decided to start on a
# capped pool, until its record shows the dispatch (a record is written at the end of its delivery)
_starting: weakref.WeakKeyDictionary[Any, cachetools.TTLCache] = weakref.WeakKeyDictionary()
STARTING_SECONDS = 120  # longest a decided start holds its slots without its record saying what became of it


# -- rules (plain data in, decisions out) ----------------------------------------------------------


def approval_change(
    action: str,
    label: str | None,
    sender: str,
    *,
    is_fork: bool,
    writer: bool | None,
    head_sha: str,
    at: str,
    policy: Policy,
) -> tuple[str, Approval] | None:
    """What a label event changes in the record of fork approvals: ("approve" or "withdraw", Approval) or None.
    A writer's primary label approves the head SHA of that moment (`at`: the PR's `updated_at` in the
    delivery), and no later one; taking it off withdraws it. Anyone else's label event changes nothing (and a
    writer whose permission GitHub would not confirm counts as anyone else)."""
    if not is_fork or not label or not is_primary(label, policy) or writer is not True:
        return None
    if action in ("labeled", "unlabeled"):
        return ("approve" if action == "labeled" else "withdraw"), Approval(label, sender, head_sha, at)
    return None


def readded_after(pin: Pin | None, primary_applied_at: str | None) -> bool:
    """A primary label applied again after the pin (it was there when the pin was made, then removed and added
    back) forces a sweep despite the pin; a first primary added after the pin (to stage it) does not."""
    return (
        pin is not None and pin.had_primary and primary_applied_at is not None and primary_applied_at > pin.created_at
    )


def pressed_after(pin: Pin | None, restart: Restart | None) -> bool:
    """ "Run the sweep again" pressed after the pin forces a sweep despite it, as re-adding the primary does."""
    return pin is not None and restart is not None and restart.at > pin.created_at


def changelog_outcome(result: ChangelogResult | None) -> ChangelogOutcome:
    if result is not None and result.ok and not result.has_entry and result.link_corrections:
        return ChangelogOutcome(Changelog.LINKS_CORRECTED)  # valid by docs/spec.md, and nothing to sweep
    if result is None or (result.ok and not result.has_entry):
        return ChangelogOutcome(Changelog.ABSENT)
    if not result.ok:
        return ChangelogOutcome(Changelog.INVALID)
    return ChangelogOutcome(Changelog.VALID, append_only=result.append_only, summary=summary_tokens(result.entries))


def check_conclusion(decision: Decision) -> str:
    """The `sweep-gate` check, from the same marks as the status comment: failure while anything a person on this PR
    must fix is marked ❌ (the sweep's own result is the `sweep` check's), neutral while no sweep is asked for,
    success otherwise (waiting for GitHub or an approval, or a draft, is nobody's error)."""
    if any(mark(c) == FIX for c in decision.conditions if c.name != "dispatch"):
        return "failure"
    changelog, labels = decision.condition("changelog"), decision.condition("labels")
    if changelog.reason_code == "links_corrected" or labels.ok is None:
        return "neutral"  # corrections of history are valid (docs/spec.md) and ask for no sweep; nor does no label
    return "success"


def runs_to_cancel(decision: Decision, record: SweepRecord, *, closed_unmerged: bool) -> tuple[int, ...]:
    """Superseded runs still going; on a PR closed without merging, every run still going."""
    if not closed_unmerged:
        return decision.cancel
    return tuple(r.run_id for r in record.runs if r.status in ACTIVE_STATUSES and r.run_id)


def headline(decision: Decision) -> tuple[str, tuple[str, ...]]:
    """The status comment's first line, as a code the templates turn into words, and the conditions it already
    says (the list below it does not repeat them)."""
    dispatch = decision.condition("dispatch")
    codes = {(c.name, c.reason_code) for c in decision.conditions}
    if dispatch.reason_code in ("failed", "retrying", "unknown"):
        return "dispatch_" + dispatch.reason_code, ()
    if dispatch.reason_code == "queued":
        return "queued", ("dispatch",)  # asked for, nothing holds it but the runner pool's queue
    for shown, code in HOLDING_HEADLINES[:3]:  # merged, closed, paused by a pin: what happens now, whatever ran
        if code in codes:
            return shown, (code[0],)
    if dispatch.reason_code in ("running", "passed", "run_failed", "cancelled"):
        return dispatch.reason_code, ("dispatch",)
    for shown, code in HOLDING_HEADLINES[3:4]:  # corrections of history need no sweep
        if code in codes:
            return shown, (code[0],)
    if any(mark(c) == FIX for c in decision.conditions):
        return "blocked", ()  # each ❌ below says what to fix, and who
    for shown, code in HOLDING_HEADLINES[4:]:
        if code in codes:
            return shown, (code[0],)
    if decision.condition("labels").reason_code == "no_primary":
        return "idle", ("labels", "fork_approval", "merge_commit")
    waiting = [c.name for c in decision.conditions if mark(c) == WAIT and c.name != "dispatch"]
    if waiting:
        return "waiting", (waiting[0],)  # the first thing waited for, said in full; any other listed below
    return "starting", ("dispatch",)  # asked for, nothing holds it: this or a later delivery in the lane starts it


# The fine states that hold a sweep back, in the order the headline names them (bot.rules.gate.HOLDING).
HOLDING_HEADLINES = (
    ("merged", ("pull_request", "merged")),
    ("closed", ("pull_request", "closed")),
    ("paused", ("reuse_pin", "pinned")),
    ("links_corrected", ("changelog", "links_corrected")),
    ("draft", ("pull_request", "draft")),
    ("skipped", ("skip_marker", "present")),
)


# -- what the gate reads from GitHub ---------------------------------------------------------------


@dataclass
class PRState:
    pull: dict[str, Any]
    is_fork: bool
    files_touch_changelog: bool
    changelog: ChangelogResult | None
    labelling: pr_state.Labelling
    label_names: list[str]
    message: str
    record: SweepRecord
    comment_exists: bool
    merge_parents: tuple[str, ...] | None = None  # of GitHub's merge commit, once it is computed (forks only)
    cost: sweep_cost.SweepCost | None = None  # what the appended entries' configs run (valid entries only)
    # The stale-branch guard (handlers/pr_state.py): its findings once a sweep is asked for, else None; and the
    # benchmark files pushed since the pinned run's commit.
    stale_branch: tuple[Finding, ...] | None = None
    pin_stale_files: tuple[str, ...] = ()


async def read_pull(ctx: Context, number: int) -> dict[str, Any]:
    """The PR as it is now (a queued payload may be old), waiting once for the merge commit of a fork that
    asks for a sweep while GitHub computes it (`mergeable` null: its `merge_commit_sha` may be an older head's)."""
    pull = await ctx.pull(number)
    asks = carries_primary(label_names(pull), ctx.policy)
    if asks and is_fork(pull, ctx.repo) and pull.get("state") == "open" and pull.get("mergeable") is None:
        await asyncio.sleep(MERGE_SHA_WAIT)
        ctx.forget(("pull", number))
        pull = await ctx.pull(number)
    return pull


async def check_changelog(ctx: Context, pull: Mapping[str, Any], path: str) -> ChangelogResult:
    """The PR's change to the changelog, judged from the file at the merge base and at the head."""
    base_sha, head_sha, number = pull["base"]["sha"], pull["head"]["sha"], pull["number"]
    prefix = ctx.policy.pr_link_prefix
    key = (ctx.repo, path, base_sha, head_sha, number, prefix, policy_limits(ctx.policy.limits))
    if key not in _changelog_checks:
        try:
            result = await pr_state.changelog_change(ctx, pull, path)
        except offload.OffloadFailed:
            result = unfinished_check(len(await ctx.file_at(path, head_sha) or b""))
        # kept per head: only what is shown (the result holds at most limits.changelog_errors errors)
        _changelog_checks[key] = result
    return _changelog_checks[key]


async def commit_facts(ctx: Context, sha: str) -> tuple[str, tuple[str, ...]]:
    """(message, parent SHAs) of a commit; kept per SHA, whose content never changes."""
    key = (ctx.repo, sha)
    if key not in _commits:
        commit = await ctx.git_commit(sha)
        parents = tuple(p["sha"] for p in commit.get("parents") or () if isinstance(p, dict) and p.get("sha"))
        _commits[key] = (commit.get("message") or "", parents)
    return _commits[key]


async def _false() -> bool:
    return False


async def read_state(ctx: Context, number: int, record: SweepRecord, exists: bool) -> PRState:
    """What the gate decides on. The reads that need only the PR's number go together, then those that need only
    the PR (its changelog at the head and the merge base, its label events, its head commit), then the ones that
    need their answers (the changelog at the merge base; a fork's merge commit once a writer's label counts)."""
    pull, files = await asyncio.gather(read_pull(ctx, number), ctx.pr_files(number))
    fork = is_fork(pull, ctx.repo)
    path = ctx.policy.paths.changelog
    touches = path in files
    names = label_names(pull)
    primaries = primary_names(ctx.policy)
    labelled = carries_primary(names, ctx.policy)

    async def labels_and_commits() -> tuple[
        pr_state.Labelling, tuple[str, tuple[str, ...]] | None, tuple[str, ...] | None
    ]:
        """The labelling, then what it calls for: the head's message (when only a held label asks for a sweep)
        and a fork's merge commit (once a writer's label counts), read while the changelog is checked."""
        labelling = await pr_state.counted_labels(ctx, pull, record)
        counts = labelling.counts(primaries)
        merge_sha = pull.get("merge_commit_sha")
        wants_merge = fork and counts and bool(merge_sha) and pull.get("mergeable") is not None
        facts, merge = await asyncio.gather(
            commit_facts(ctx, pull["head"]["sha"]) if counts and not labelled else pr_state.nothing(),
            commit_facts(ctx, merge_sha) if wants_merge else pr_state.nothing(),
        )
        return labelling, facts, (merge[1] if merge is not None else None)

    # the master configs' costs are read beside the changelog check (per commit, once): a PR with a valid entry
    # shows what its sweep runs, and no later round trip waits for them; the stale-branch guard runs beside the rest
    # once a sweep is asked for, its key coverage awaiting the changelog
    changelog_read = asyncio.ensure_future(check_changelog(ctx, pull, path) if touches else pr_state.nothing())
    guarded = labelled and pull.get("state") == "open"
    changelog, (labelling, held_facts, merge_parents), head_facts, costs, found, pin_stale = await asyncio.gather(
        changelog_read,
        labels_and_commits(),
        commit_facts(ctx, pull["head"]["sha"]) if labelled else pr_state.nothing(),
        key_costs(ctx, configs_ref(ctx, pull, files)) if touches else pr_state.nothing(),
        pr_state.stale_branch_findings(ctx, pull, changelog_read) if guarded else pr_state.nothing(),
        pr_state.stale_pin_files(ctx, record, pull["head"]["sha"])
        if pull.get("state") == "open"
        else pr_state.nothing(),
    )
    facts = head_facts or held_facts
    message = facts[0] if facts is not None else ""
    cost = None  # unknown: no valid entry, or no master config could be read (then no limit holds the sweep)
    if changelog is not None and changelog.has_entry and costs:
        cost = cost_of(ctx, changelog, costs)
    return PRState(
        pull,
        fork,
        touches,
        changelog,
        labelling,
        names,
        message,
        record,
        exists,
        merge_parents,
        cost,
        found,
        pin_stale or (),
    )


async def key_costs(ctx: Context, ref: str) -> dict[str, sweep_cost.KeyCost]:
    """Every config key's cost in the master configs at `ref` (a commit SHA, whose content never changes)."""
    paths = ctx.policy.paths.master_configs
    key = (ctx.repo, ref, paths)
    if key not in _key_costs:
        blobs = await asyncio.gather(*(ctx.file_at(path, ref) for path in paths))
        texts = {
            path: None if b is None else b.decode("utf-8", "replace") for path, b in zip(paths, blobs, strict=True)
        }
        size = sum(len(b) for b in blobs if b is not None)
        try:  # the upstream files parse in a fifth of a second: in the worker process, as the changelog check
            _key_costs[key] = await offload.run(sweep_cost.costs_of_files, texts, size=size)
        except offload.OffloadFailed:
            return {}
    return _key_costs[key]


def configs_ref(ctx: Context, pull: Mapping[str, Any], files: Sequence[str]) -> str:
    """The commit whose master configs count the points: the base commit's, shared by every PR on it, unless the
    PR changes one of them; then the head's, because they say what the sweep runs (a PR adding a key would
    otherwise count nothing for it and pass under the limit). The figures are shown and compared with the
    policy's limit; they grant nothing, so the head's file is no authority here."""
    changes_configs = any(path in files for path in ctx.policy.paths.master_configs)
    return str(pull["head"]["sha"] if changes_configs else pull["base"]["sha"])


def cost_of(ctx: Context, changelog: ChangelogResult, costs: Mapping[str, sweep_cost.KeyCost]) -> sweep_cost.SweepCost:
    """The points per runner pool of the configs the appended entries name, with node-hours from history."""
    named = [sweep_cost.Named(e.config_keys, e.scenario_type) for e in changelog.entries]
    return sweep_cost.sweep_cost(named, costs, history_of(ctx.repo, costs))


def history_of(repo: str, keys: Iterable[str]) -> dict[str, tuple[float, ...]]:
    return {key: _job_history[(repo, key)] for key in keys if (repo, key) in _job_history}


def remember_jobs(repo: str, run: Mapping[str, Any], jobs: Sequence[Mapping[str, Any]]) -> None:
    """Keep the durations of a finished run's successful jobs, once per run attempt, under each word of their
    names that could be a config key (bot.rules.sweep_cost.key_of_job matches whole words)."""
    seen = (repo, run.get("id"), run.get("run_attempt"))
    if seen in _timed_runs:
        return
    _timed_runs[seen] = True
    for word, seconds in sweep_cost.durations_by_word(jobs).items():
        kept = _job_history.get((repo, word), ())
        _job_history[(repo, word)] = (*kept, *seconds)[-sweep_cost.MAX_HISTORY :]


def gate_input(state: PRState, default_branch: str, policy: Policy) -> GateInput:
    pull, record = state.pull, state.record
    return GateInput(
        number=pull["number"],
        head_sha=pull["head"]["sha"],
        base_sha=pull["base"]["sha"],
        head_ref=pull["head"]["ref"],
        base_ref=pull["base"]["ref"],
        default_branch=default_branch,
        changelog=changelog_outcome(state.changelog),
        open=pull.get("state") == "open",
        merged=bool(pull.get("merged")),
        draft=bool(pull.get("draft")),
        is_fork=state.is_fork,
        merge_commit_sha=pull.get("merge_commit_sha"),
        merge_parents=state.merge_parents,
        labels=state.labelling.labels,
        label_generation=state.labelling.generation,
        head_commit_message=state.message,
        pin=record.pin.run_id if record.pin else None,
        primary_readded_after_pin=(
            readded_after(record.pin, state.labelling.primary_applied_at) or pressed_after(record.pin, record.restart)
        ),
        restart=record.restart.token if record.restart else None,
        pin_blocked_by=blocking_labels(state.labelling.counted_names, policy) if record.pin else (),
        dispatched=tuple(Dispatched(r.dispatch_id, r.run_id, r.status, r.conclusion) for r in record.runs),
        mergeable=pull.get("mergeable") if isinstance(pull.get("mergeable"), bool) else None,
        stale_branch=state.stale_branch,
        pin_stale_files=state.pin_stale_files,
        points=state.cost.points if state.cost is not None else None,
        confirmed=record.confirmation.dispatch_id if record.confirmation is not None else None,
    )


# -- what the gate writes --------------------------------------------------------------------------


def _facts(ctx: Context, pull: Mapping[str, Any]) -> dict[str, Any]:
    policy = ctx.policy
    primary = policy.labels.primary
    path = policy.paths.changelog
    return {
        "primary_labels": [p.name for p in primary],
        "recommended": next((p.name for p in primary if p.recommended), None),
        "modifiers": policy.labels.modifiers.names(),
        "changelog_path": path,
        "changelog_url": web(ctx.html_url, "blob", pull["head"]["sha"], Slashed(path)),
        "skip_marker": policy.skip_sweep_marker,
        "use_command": f"/{policy.commands.use}",
        "runs_url": web(ctx.html_url, "actions"),
    }


def _plain(condition: Condition) -> dict[str, Any]:
    params = {k: list(v) if isinstance(v, tuple) else v for k, v in condition.params.items()}
    shown = mark(condition)
    return {
        "name": condition.name,
        "ok": condition.ok,
        "code": condition.reason_code,
        "params": params,
        "mark": shown,
        "symbol": MARK_SYMBOLS[shown],
    }


def _error(e: ChangelogError) -> dict[str, Any]:
    return {"line": e.line, "code": e.code, "params": dict(e.params)}


def _shown_run(ctx: Context, run: RunRecord | None) -> dict[str, Any] | None:
    if run is None:
        return None
    # the viewer shows what the results service serves: with none (results.mode none), no links
    links = viewer_links(ctx.policy.results.viewer, run.run_id) if run.finished and ctx.policy.results.enabled else {}
    return {
        "run_id": run.run_id,
        "dispatch_id": run.dispatch_id,
        "status": run.status,
        "conclusion": run.conclusion,
        "url": run.html_url or web(ctx.html_url, "actions", "runs", run.run_id),
        "head_sha": run.head_sha,
        **{k: links.get(k) for k in VIEWER_PAGES},
    }


HEADLINE_MARKS = {
    "running": WAIT,
    "passed": DONE,
    "run_failed": FIX,
    "cancelled": NOT_APPLICABLE,
    "paused": DONE,
    "merged": DONE,
    "closed": NOT_APPLICABLE,
    "draft": NOT_APPLICABLE,
    "links_corrected": DONE,
    "skipped": NOT_APPLICABLE,
    "starting": WAIT,
    "idle": WAIT,
    "waiting": WAIT,
    "blocked": FIX,
    "dispatch_failed": FIX,
    "dispatch_unknown": FIX,
    "dispatch_retrying": WAIT,
    "queued": WAIT,
}


def status_variables(
    ctx: Context, state: PRState, decision: Decision, record: SweepRecord, *, for_check: bool = False
) -> dict[str, Any]:
    errors = list(state.changelog.errors) if state.changelog is not None else []
    pull = state.pull
    return status_view(
        decision,
        _shown_run(ctx, record.by_dispatch(decision.dispatch_id)),
        head_sha=pull["head"]["sha"],
        author=(pull.get("user") or {}).get("login") or "",
        is_fork=state.is_fork,
        g={**_facts(ctx, pull), "is_open": pull.get("state") == "open"},
        errors=errors,
        unlisted=state.changelog.unshown_errors if state.changelog is not None else 0,
        unlisted_at_least=bool(state.changelog is not None and state.changelog.error_count_is_lower_bound),
        pin_withdrawn=None if record.withdrawn is None else dict(vars(record.withdrawn)),
        for_check=for_check,
        cost=shown_cost(state.cost),
    )


def shown_cost(cost: sweep_cost.SweepCost | None) -> dict[str, Any] | None:
    """The cost as templates/sweep_status.* show it."""
    if cost is None:
        return None
    return {
        "pools": [
            {
                "pool": p.pool,
                "points": p.points,
                "config_keys": list(p.keys),
                "max_nodes": p.max_nodes,
                "node_hours": p.node_hours,
                "lower_bound": p.lower_bound,
            }
            for p in cost.pools[:SHOWN_POOLS]
        ],
        "more_pools": max(0, len(cost.pools) - SHOWN_POOLS),
        "more_points": sum(p.points for p in cost.pools[SHOWN_POOLS:]),
        "unmatched": list(cost.unmatched[:SHOWN_KEYS]),
        "more_unmatched": max(0, len(cost.unmatched) - SHOWN_KEYS),
        "no_pool": list(cost.no_pool[:SHOWN_KEYS]),
        "more_no_pool": max(0, len(cost.no_pool) - SHOWN_KEYS),
    }


def status_view(
    decision: Decision,
    run: dict[str, Any] | None,
    *,
    head_sha: str,
    author: str,
    is_fork: bool,
    g: dict[str, Any],
    errors: Sequence[ChangelogError] = (),
    unlisted: int = 0,
    unlisted_at_least: bool = False,
    pin_withdrawn: dict[str, Any] | None = None,
    for_check: bool = False,
    cost: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """What templates/sweep_status.* render, from the decision and plain values (the tests build it too)."""
    code, said = headline(decision)
    return {
        "head_sha": head_sha,
        "headline": code,
        "said": list(said),
        "mark": MARK_SYMBOLS[HEADLINE_MARKS[code]],
        "author": author,
        "is_fork": is_fork,
        "for_check": for_check,
        "conditions": [_plain(c) for c in decision.conditions],
        "g": g,
        "changelog_errors": [_error(e) for e in errors[:SHOWN_ERRORS]],
        "more_errors": max(0, len(errors) - SHOWN_ERRORS),  # listed on their lines in the check run
        "unlisted_errors": unlisted,
        "unlisted_at_least": unlisted_at_least,
        "run": run,
        "pin_withdrawn": pin_withdrawn,  # the last pin withdrawn, until a new pin
        "cost": cost,  # what the sweep runs, per runner pool (shown_cost)
    }


def status_text(
    ctx: Context, state: PRState, decision: Decision, record: SweepRecord, *, for_check: bool = False
) -> str:
    """The status comment's text; `for_check`: the check run's summary (the headline and what is open)."""
    return ctx.render("sweep_status", **status_variables(ctx, state, decision, record, for_check=for_check))


def status_comment(ctx: Context, state: PRState, record: SweepRecord, text: str) -> Comment:
    return Comment(state.pull["number"], PURPOSE, record.line() + "\n" + text)


def buttons(ctx: Context, state: PRState, decision: Decision) -> tuple[CheckButton, ...]:
    """The check's buttons (bot/rules/check_buttons.py), their words from templates/sweep_button_title.*."""
    shown = check_buttons.offered(decision.conditions, open=state.pull.get("state") == "open", is_fork=state.is_fork)
    return tuple(
        CheckButton(
            ctx.templates.title("sweep_button", button=b, part="label"),
            ctx.templates.title("sweep_button", button=b, part="description"),
            b,
        )
        for b in shown
    )


def check_run(ctx: Context, state: PRState, decision: Decision, text: str, *, rewrite: bool = False) -> CheckRun:
    conclusion = check_conclusion(decision)
    path = ctx.policy.paths.changelog
    errors = list(state.changelog.errors) if state.changelog is not None else []
    notes = tuple(Annotation(path, e.line, ctx.render("changelog_annotation", e=_error(e))) for e in errors)
    notes += stale_branch_notes(ctx, state)
    return CheckRun(
        head_sha=state.pull["head"]["sha"],
        name=CHECK_NAME,
        conclusion=conclusion,
        title=ctx.templates.title("sweep_check", conclusion=conclusion),
        summary=text,
        annotations=notes,
        details_url=state.pull.get("html_url"),
        buttons=buttons(ctx, state, decision),
        rewrite=rewrite,
    )


def stale_branch_notes(ctx: Context, state: PRState) -> tuple[Annotation, ...]:
    """The check run's note on each finding of the stale-branch guard, on its file and line."""
    notes = []
    for finding in state.stale_branch or ():
        where = annotation(finding)
        if where is not None:
            path, line, level = where
            notes.append(Annotation(path, line, ctx.render("stale_branch_annotation", f=finding.plain()), level))
    return tuple(notes)


def _with_dispatch(decision: Decision, code: str, **params: object) -> Decision:
    ok = {"running": True, "not_dispatched": None}.get(code, False)
    conditions = tuple(
        Condition("dispatch", ok, code, params) if c.name == "dispatch" else c for c in decision.conditions
    )
    return dataclasses.replace(decision, conditions=conditions)


# -- the queue of each runner pool (bot/rules/sweep_queue.py) ----------------------------------------


async def take_turn(
    ctx: Context, state: PRState, decision: Decision, record: SweepRecord, view: pr_state.QueueView | None
) -> tuple[Decision, SweepRecord]:
    """The decision and record once the runner pools' queues are asked: a sweep that would start waits while a
    pool it runs on is full (`sweeps.concurrency`), and the record keeps its place; a PR whose gate no longer asks
    for a sweep leaves the queue."""
    limits = ctx.policy.sweeps.concurrency
    queued = record.queued
    if decision.start is None:
        if queued is not None and queued.dispatch_id != decision.dispatch_id:
            record = record.queue(None)  # closed, a label taken off, a pin: its gate no longer asks for this sweep
        return decision, record
    # the pools the sweep's cost counts points on: the appended entries' config keys in the master configs
    pools = tuple(p.pool for p in state.cost.pools) if state.cost is not None else ()
    if not any(pool in limits for pool in pools):
        return decision, record.queue(None)  # no capped pool: it starts at once, as without a queue
    if queued is not None and queued.dispatch_id is None:
        mine = dataclasses.replace(queued, pools=pools)  # waiting already: it keeps its place
    else:  # first labelled, first served; back in line after a sweep of its own (a push, a restart)
        since = state.labelling.primary_applied_at if queued is None else None
        mine = Queued(pools, since or _now())
    number = state.pull["number"]
    view = view or pr_state.QueueView()
    # one queue decision at a time in this process, counting the sweeps it decided to start whose records do not
    # say so yet: two lanes deciding at once would each see the other's slot free
    async with turns.turn(("queue", ctx.repo.casefold())):
        running, waiting = await view.entries(ctx, leave_out=number)
        running += starting_elsewhere(ctx, view, number, running, waiting)
        turn = plan(limits, running, [*waiting, Entry(number, mine.pools, mine.since, mine.priority)])
        if number in turn.start:
            _starting_by(ctx)[(ctx.repo.casefold(), number)] = (
                Entry(number, mine.pools, mine.since, mine.priority),
                decision,
            )
    record = record.queue(mine)
    if number in turn.start:
        return decision, record
    place = turn.waiting[number]
    queued_decision = _with_dispatch(
        decision,
        "queued",
        dispatch_id=decision.dispatch_id,
        pool=place.pool,
        position=place.position,
        ahead=list(place.ahead),
        running=list(place.running),
        limit=place.limit,
    )
    return dataclasses.replace(queued_decision, start=None), record


def starting_elsewhere(
    ctx: Context, view: pr_state.QueueView, number: int, running: list[Entry], waiting: list[Entry]
) -> list[Entry]:
    """The sweeps this process decided to start (another lane, a moment ago) that their PRs' records do not show
    yet: each holds its pools' slots until its record shows the dispatch, or for STARTING_SECONDS."""
    placed = {e.number for e in running} | {e.number for e in waiting} | {number}
    found: list[Entry] = []
    for (repo, other), (entry, decided) in list(_starting_by(ctx).items()):
        if repo != ctx.repo.casefold() or other in placed:
            continue
        written = view.records.get(other)
        if written is not None and written.by_dispatch(decided.dispatch_id) is not None:
            continue  # its record says what became of it
        found.append(entry)
    return found


def not_starting(ctx: Context, number: int) -> None:
    """PR `number`'s sweep, decided to start, was not dispatched here: its slot is free again."""
    _starting_by(ctx).pop((ctx.repo.casefold(), number), None)


def _starting_by(ctx: Context) -> cachetools.TTLCache:
    found = _starting.get(ctx.configs)
    if found is None:
        found = _starting[ctx.configs] = cachetools.TTLCache(maxsize=4096, ttl=STARTING_SECONDS)
    return found


async def start_next(
    ctx: Context, number: int, record: SweepRecord, view: pr_state.QueueView | None = None
) -> list[Action]:
    """PR `number` left its pools' queues or freed a slot (its sweep finished, was cancelled, or it no longer asks
    for one): each PR still waiting there decides again, in queue order, by its own gate. The first in line starts
    (its gate dispatches once: the same dispatch id, looked for before it is sent) and the others are told their
    new place. A redelivery finds them started and starts nothing more."""
    limits = ctx.policy.sweeps.concurrency
    if not limits:
        return []
    view = view or pr_state.QueueView()
    view.verify = True  # runs that finished in other lanes a moment ago free their slots too
    view.known[number] = record
    _, waiting = await view.entries(ctx)
    actions: list[Action] = []
    for entry in [e for e in ordered(waiting) if e.number != number][:REFRESHED]:
        other_record, other_exists = view.known.get(entry.number), True
        if other_record is None:
            other_record, other_exists = await pr_state.load_record(ctx, entry.number)
        logs.event("the queue moved: a waiting PR decides again", moved_by=number, pr=entry.number)
        actions += await evaluate(ctx, entry.number, other_record, other_exists, view=view)
    return actions


def _started_by(ctx: Context) -> cachetools.TTLCache:
    found = _started.get(ctx.configs)
    if found is None:
        found = _started[ctx.configs] = cachetools.TTLCache(maxsize=4096, ttl=3600)
    return found


async def _started_here(ctx: Context, started: tuple[str, str]) -> Any:
    """GitHub's answer to a dispatch of this dispatch id that this process sent lately, if its run still carries
    the id (GitHub may not list a run seconds old yet, so a look by dispatch id could miss it)."""
    result = _started_by(ctx).get(started)
    if result is None or not result.id:
        return None
    run = await pr_state.read_run(ctx, int(result.id))
    names = f"{(run or {}).get('name') or ''} {(run or {}).get('display_title') or ''}"
    return result if started[1] in names else None


# the presses that change what the PR shows
VISIBLE_PRESSES = (
    check_buttons.RESTART,
    check_buttons.APPROVE_HEAD,
    check_buttons.CONFIRM_SWEEP,
    check_buttons.MOVE_TO_FRONT,
)


def _waits(number: int, record: SweepRecord) -> bool:
    place = pr_state.queue_entry(number, record)
    return place is not None and place[0] == "waiting"


def left_queue(before: SweepRecord, after: SweepRecord) -> bool:
    """Whether the PR gave up a place or a slot: it waited or ran on a pool's queue and no longer does."""
    return pr_state.queue_entry(0, before) is not None and pr_state.queue_entry(0, after) is None


async def evaluate(
    ctx: Context,
    number: int,
    record: SweepRecord,
    exists: bool,
    *,
    may_start: bool = True,
    rewrite_check: bool = False,
    view: pr_state.QueueView | None = None,
) -> list[Action]:
    """Read the PR's state, decide, and carry out the decision; returns the actions left for the framework.

    One PR is evaluated by one delivery of this process at a time: its own lane's, or another lane's that freed a
    slot on its pool (`start_next`)."""
    key = (id(asyncio.get_running_loop()), ctx.repo.casefold(), number)
    lock = _evaluating.get(key)
    if lock is None:
        lock = _evaluating[key] = asyncio.Lock()
    async with lock:
        return await _evaluate(ctx, number, record, exists, may_start=may_start, rewrite_check=rewrite_check, view=view)


async def _evaluate(
    ctx: Context,
    number: int,
    record: SweepRecord,
    exists: bool,
    *,
    may_start: bool,
    rewrite_check: bool,
    view: pr_state.QueueView | None,
) -> list[Action]:
    state = await read_state(ctx, number, record, exists)
    decision = decide(gate_input(state, ctx.default_branch, ctx.policy), ctx.policy)
    pull = state.pull
    if decision.remove_labels:
        for name in decision.remove_labels:
            await ctx.write_now(RemoveLabel(number, name))
        removed = decision.condition("fork_approval").params
        await ctx.write_now(
            Comment(
                number,
                FORK_LABEL_PURPOSE,
                ctx.render(
                    "fork_label_removed",
                    labels=list(decision.remove_labels),
                    by=list(removed.get("by") or ()),
                    repo=ctx.repo,
                ),
            )
        )
    closed_unmerged = pull.get("state") == "closed" and not pull.get("merged")
    cancelled: list[int] = []
    for run_id in runs_to_cancel(decision, record, closed_unmerged=closed_unmerged):
        result = await ctx.write_now(CancelRun(run_id))
        if result.outcome in ("cancelled", "finished", "absent"):
            entry = record.run(run_id)
            assert entry is not None  # runs_to_cancel names only runs of the record
            conclusion = "cancelled" if result.outcome == "cancelled" else entry.conclusion
            record = record.update_run(run_id, status="completed", conclusion=conclusion)
            cancelled.append(run_id)
    decision, record = await take_turn(ctx, state, decision, record, view)
    if decision.start is not None and not may_start:
        not_starting(ctx, number)
    if decision.start is not None and may_start:
        start = DispatchWorkflow(**vars(decision.start))
        started = (ctx.repo.casefold(), start.dispatch_id)
        try:
            # started by this process a moment ago (another lane freed the slot): GitHub may not list it yet
            result = await _started_here(ctx, started) or await ctx.write_now(start)
            _started_by(ctx)[started] = result
        except NotListedYet:
            raise  # GitHub started it: saying it failed to start would be false; the retry finds the run and shows it
        except Exception as exc:
            if isinstance(exc, NeedsAPerson):  # GitHub may have started it: not "refused", and never sent again
                code = "unknown"
            else:
                code = "retrying" if classify(exc) == TRANSIENT and not ctx.last_try else "failed"
            if code != "unknown":
                not_starting(ctx, number)
            failed = _with_dispatch(decision, code, dispatch_id=start.dispatch_id, error=str(exc)[:300])
            await _report(ctx, status_comment(ctx, state, record, status_text(ctx, state, failed, record)))
            raise
        record = record.add_run(
            RunRecord(
                start.dispatch_id,
                int(result.id or 0),
                pull["head"]["sha"],
                start.workflow,
                html_url=(result.data or {}).get("html_url"),
                started_at=_now(),
            )
        )
        if record.queued is not None:  # it holds its pools' slots until this run finishes
            record = record.queue(dataclasses.replace(record.queued, dispatch_id=start.dispatch_id))
        decision = _with_dispatch(
            decision, "running", dispatch_id=start.dispatch_id, run_id=result.id, status="queued", conclusion=None
        )
        logs.event("sweep dispatched", dispatch_id=start.dispatch_id, run=result.id, workflow=start.workflow)
    elif decision.start is not None:  # a later delivery in the lane starts it; say nothing has started
        decision = _with_dispatch(decision, "not_dispatched")
    if view is not None:
        view.known[number] = record  # what this delivery writes stands for what GitHub shows until then
    actions: list[Action] = []
    # a pin lives in the status comment's record: a PR with a pin has one, changelog or not
    if shows_status(
        state.files_touch_changelog,
        state.label_names,
        ctx.policy,
        exists or bool(record.runs) or record.pin is not None,
    ):
        actions.append(status_comment(ctx, state, record, status_text(ctx, state, decision, record)))
    if pull.get("state") == "open":
        summary = status_text(ctx, state, decision, record, for_check=True)
        actions.append(check_run(ctx, state, decision, summary, rewrite=rewrite_check))
    actions += [sweep_check(ctx, entry) for entry in checked_runs(record, decision, cancelled)]
    return actions


def checked_runs(record: SweepRecord, decision: Decision, cancelled: list[int]) -> list[RunRecord]:
    """The runs whose `sweep` check this evaluation writes: the run of the PR's current state, and those it
    cancelled (their heads show they were superseded)."""
    current = record.by_dispatch(decision.dispatch_id)
    runs = [record.run(run_id) for run_id in cancelled]
    return [entry for entry in (*runs, current) if entry is not None and entry.run_id]


def sweep_check(ctx: Context, entry: RunRecord) -> CheckRun:
    """The `sweep` check on the commit the sweep tested: running while the run runs, then its conclusion, with the
    run's link; on a fork's head too, whose trusted run runs on the default branch and reports nowhere else."""
    url = entry.html_url or web(ctx.html_url, "actions", "runs", entry.run_id)
    done = entry.status == "completed"
    conclusion = (entry.conclusion or "neutral") if done else ""
    if done and conclusion not in SWEEP_CHECK_CONCLUSIONS:
        conclusion = "failure"  # one GitHub may add: nothing that passed
    variables = {
        "run_id": entry.run_id,
        "url": url,
        "head_sha": entry.head_sha,
        "status": entry.status,
        "conclusion": conclusion,
    }
    return CheckRun(
        head_sha=entry.head_sha,
        name=SWEEP_CHECK,
        conclusion=conclusion,
        status="completed" if done else ("queued" if entry.status == "queued" else "in_progress"),
        title=ctx.templates.title("sweep_run_check", **variables),
        summary=ctx.render("sweep_run_check", **variables),
        details_url=url,
    )


async def record_changed(ctx: Context, number: int, record: SweepRecord, exists: bool) -> list[Action]:
    """Another feature changed the record (a pin set or withdrawn; handlers/pr_state.py `RecordChanged`): record
    it and decide again; a sweep it calls for is started by the PR's next delivery, not by this one."""
    return await evaluate(ctx, number, record, exists, may_start=False)


async def read_ahead(ctx: Context, number: int, record: SweepRecord, exists: bool) -> None:
    """What `record_changed` reads (handlers/pr_state.py `ReadAhead`), read now and kept by the delivery's reader:
    a pin's reply goes out while these are read, and the status is rendered from them after it."""
    await read_state(ctx, number, record, exists)


async def _report(ctx: Context, comment: Comment) -> None:
    """Say on the PR that the dispatch failed; the failure itself is re-raised by the caller either way."""
    try:
        await ctx.write_now(comment)
    except Exception as exc:
        logs.event("could not report a failed dispatch on the PR", error=f"{type(exc).__name__}: {exc}")


# -- events ----------------------------------------------------------------------------------------


async def pull_request_changed(event: sansio.Event, ctx: Context) -> list[Action]:
    data = event.data
    action = data.get("action")
    if action == "edited" and "base" not in (data.get("changes") or {}):
        return []  # a title or body edit changes nothing the gate looks at
    pull = data["pull_request"]
    number = pull["number"]
    settling = (event.event, action) in lanes.SETTLING and ctx.superseded(lanes.SETTLING)
    labelling = action in ("labeled", "unlabeled")
    fork_labelling = labelling and is_fork(pull, ctx.repo)  # records an approval even when it gives way
    sender = (data.get("sender") or {}).get("login") or ""
    # whether a label counts depends on who applied it: the sender's permission is asked at once, and the gate's
    # reads of the labellers find it cached
    asks_writer = (fork_labelling or labelling and not settling) and bool(sender) and sender != ctx.bot_login
    # read together: the record, the sender's permission, and, unless a later label change waiting in the lane
    # makes this delivery give way, the PR and its files the gate reads next
    ahead = (ctx.pull(number), ctx.pr_files(number)) if not settling or fork_labelling else ()
    (record, exists), writer, *_ = await asyncio.gather(
        pr_state.load_record(ctx, number), ctx.writer(sender) if asks_writer else _false(), *ahead
    )
    change = None
    if fork_labelling:
        label = (data.get("label") or {}).get("name")
        change = approval_change(
            action,
            label,
            sender,
            is_fork=True,
            writer=writer,
            head_sha=pull["head"]["sha"],
            at=str(pull.get("updated_at") or ""),
            policy=ctx.policy,
        )
    if change is not None:
        verb, approval = change
        record = record.approve(approval) if verb == "approve" else record.withdraw(approval.label, approval.at)
    elif (event.event, action) in lanes.SETTLING and ctx.superseded(lanes.SETTLING):
        logs.event("label change left to a later one waiting in this PR's lane")
        return []
    view = pr_state.QueueView()
    actions = await evaluate(ctx, number, record, exists, may_start=not ctx.superseded(lanes.SETTLING), view=view)
    after = view.known.get(number, record)
    return actions + (await start_next(ctx, number, after, view) if left_queue(record, after) else [])


async def run_jobs(ctx: Context, run_id: int) -> list[dict]:
    """The jobs of the run's latest attempt, as GitHub lists them (paginated)."""
    url = repo_api(ctx.repo, "actions", "runs", run_id, "jobs", filter="latest", per_page=PER_PAGE)
    return [job async for job in ctx.gh.getiter(url, iterable_key="jobs")]


def run_comment_variables(
    ctx: Context, run: Mapping[str, Any], entry: RunRecord, jobs: list[dict], author: str
) -> dict[str, Any]:
    run_id, conclusion = int(run["id"]), run.get("conclusion")
    attempt = run.get("run_attempt") if isinstance(run.get("run_attempt"), int) else 1
    summary = run_report.summarize_jobs(jobs)
    shown = conclusion == "success" and ctx.policy.results.enabled  # no results service, no viewer (as _shown_run)
    links = viewer_links(ctx.policy.results.viewer, run_id) if shown else {}
    return {
        "run_id": run_id,
        "attempt": attempt,
        "conclusion": conclusion or "unknown",
        "head_sha": entry.head_sha,
        "dispatch_id": entry.dispatch_id,
        "url": web(ctx.html_url, "actions", "runs", run_id),
        "jobs": {
            "succeeded": summary.succeeded,
            "failed": summary.failed,
            "cancelled": summary.cancelled,
            "skipped": summary.skipped,
            "other": summary.other,
            "more_failed": summary.more_failed,
            "failed_jobs": [
                {"name": j.name, "url": web(ctx.html_url, "actions", "runs", run_id, "job", j.job_id)}
                for j in summary.failed_jobs
            ],
        },
        "results": links or None,
        "next": run_report.next_step(conclusion),
        "author": author,
        "use_command": f"/{ctx.policy.commands.use}",
    }


async def run_comment(
    ctx: Context, number: int, run: Mapping[str, Any], entry: RunRecord, record: SweepRecord
) -> Comment | None:
    """The comment on a finished run (bot/rules/run_report.py), or None while it runs or when it is not wanted.
    The jobs read for it also feed the history of job durations (node-hours): read once, for both."""
    if run.get("status") != "completed":
        return None
    latest = record.latest
    superseded = latest is not None and latest.run_id not in (0, int(run["id"]))
    if not run_report.wants_comment(run.get("conclusion"), superseded=superseded):
        return None
    author, jobs = await asyncio.gather(pr_author(ctx, number), run_jobs(ctx, int(run["id"])))
    remember_jobs(ctx.repo, run, jobs)
    variables = run_comment_variables(ctx, run, entry, jobs, author)
    return Comment(number, run_report.purpose(int(run["id"])), ctx.render("run_comment", **variables))


async def pr_author(ctx: Context, number: int) -> str:
    """The login of the PR's author (the delivery's reader keeps the PR it read)."""
    return ((await ctx.pull(number)).get("user") or {}).get("login") or ""


async def sweep_run_changed(event: sansio.Event, ctx: Context) -> list[Action]:
    run = event.data["workflow_run"]
    number = ctx.pr_number  # the lane its dispatch id named: only a hint until the record says it is ours
    if number is None:
        return []
    record, exists = await pr_state.load_record(ctx, number)
    known = pr_state.recorded_run(ctx, run, record)
    if known is None:
        logs.event(
            "workflow run ignored: not a sweep the bot dispatched for this PR",
            run=run.get("id"),
            pr=number,
            reason=not_the_bots(run, **pr_state.run_trust(ctx)) or "its dispatch id is not in the PR's record",
        )
        return []
    record = record.observe(
        known,
        int(run["id"]),
        status=run.get("status") or "queued",
        conclusion=run.get("conclusion"),
        html_url=run.get("html_url"),
    )
    comment = await run_comment(ctx, number, run, known, record)
    entry = record.by_dispatch(known.dispatch_id)
    # the run's own check (any run, current or superseded: written only when it changes), then its comment
    finished: list[Action] = [sweep_check(ctx, entry)] if entry is not None and entry.run_id else []
    finished += [comment] if comment is not None else []
    # a finished run frees its pools' slots: the next in their queues start (again on a redelivery, which finds
    # them started and starts nothing more)
    freed = run.get("status") == "completed"
    if exists and known == entry:
        # a redelivery, or a status the comment already shows (a rerun's comment is new)
        return finished + (await start_next(ctx, number, record) if freed else [])
    # the status comment first (it keeps the latest state), then the run's own comment, which notifies
    view = pr_state.QueueView()
    actions = await evaluate(ctx, number, record, exists, may_start=False, view=view) + finished
    return actions + (await start_next(ctx, number, view.known.get(number, record), view) if freed else [])


def _now() -> str:
    return pr_state.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")


async def check_run_changed(event: sansio.Event, ctx: Context) -> list[Action]:
    """ "Re-run" of `sweep-gate` (`rerequested`) decides again and rewrites the check (GitHub reset it to
    queued); a button press (`requested_action`) by a writer restarts the sweep or approves a fork's head."""
    data = event.data
    check = data.get("check_run") or {}
    if not own_check_run(check, CHECK_NAME, ctx.bot_login):  # others' checks, and the sign-off's, are not ours
        return []
    number = await pr_state.pr_of_check(ctx, check)
    if number is None:
        logs.event("check run event ignored: no open PR has its head", check=check.get("id"))
        return []
    record, exists = await pr_state.load_record(ctx, number)
    if data.get("action") == "rerequested":
        return await evaluate(ctx, number, record, exists, rewrite_check=True)
    sender = (data.get("sender") or {}).get("login") or ""
    identifier = (data.get("requested_action") or {}).get("identifier")
    if identifier == check_buttons.MERGE:
        return []  # the merge feature's button (handlers/merge_command.py)
    writer = await ctx.writer(sender) if sender and sender != ctx.bot_login else False
    state = await read_state(ctx, number, record, exists)
    decision = decide(gate_input(state, ctx.default_branch, ctx.policy), ctx.policy)
    current = state.pull["head"]["sha"] == check.get("head_sha")
    shown = (
        check_buttons.offered(decision.conditions, open=state.pull.get("state") == "open", is_fork=state.is_fork)
        if current
        else ()
    )
    if current and _waits(number, record):  # the queue is not asked here: the record says it waits
        shown += (check_buttons.FRONT,)
    token = check_buttons.press_token(check.get("id"), check.get("external_id"))
    outcome = check_buttons.press(
        identifier,
        writer=writer,
        offered_now=shown,
        token=token,
        recorded_token=record.restart.token if record.restart else None,
    )
    if outcome == check_buttons.RESTART:
        record = record.restarted(Restart(token, sender, _now()))
    elif outcome == check_buttons.CONFIRM_SWEEP:
        record = record.confirmed(Confirmation(decision.dispatch_id, sender, _now(), token))
    elif outcome == check_buttons.APPROVE_HEAD:
        primary = next(
            (label for label in state.labelling.labels if label.writer is True and is_primary(label.name, ctx.policy)),
            None,
        )
        if primary is None:
            outcome = check_buttons.NOT_OFFERED
        else:
            record = record.approve(Approval(primary.name, sender, state.pull["head"]["sha"], _now(), via="button"))
    elif outcome == check_buttons.MOVE_TO_FRONT and record.queued is not None and record.queued.priority is None:
        record = record.queue(dataclasses.replace(record.queued, priority=_now()))
    else:
        outcome = check_buttons.ALREADY_DONE if outcome == check_buttons.MOVE_TO_FRONT else outcome
    logs.event("sweep-gate button pressed", button=identifier, by=sender, outcome=outcome, pr=number)
    confirmed = record.confirmation is not None and record.confirmation.dispatch_id == decision.dispatch_id
    if identifier == check_buttons.CONFIRM and writer is True and confirmed:
        # the press was recorded, and its sweep perhaps not started (GitHub failed the dispatch, and this is the
        # retry): decide again; the dispatch id starts it at most once
        return await evaluate(ctx, number, record, exists)
    if outcome not in (
        check_buttons.RESTART,
        check_buttons.APPROVE_HEAD,
        check_buttons.CONFIRM_SWEEP,
        check_buttons.MOVE_TO_FRONT,
    ):
        return []  # nothing visible: a non-writer's press, a stale button, or a press GitHub sent again
    if outcome != check_buttons.MOVE_TO_FRONT:
        return await evaluate(ctx, number, record, exists)
    view = pr_state.QueueView()  # moved ahead: it may start now, and those it passed are told their new place
    actions = await evaluate(ctx, number, record, exists, view=view)
    return actions + await start_next(ctx, number, view.known.get(number, record), view)


for _action in PR_ACTIONS:
    router.add(pull_request_changed, "pull_request", action=_action)
for _action in RUN_ACTIONS:
    router.add(sweep_run_changed, "workflow_run", action=_action)
for _action in CHECK_ACTIONS:
    router.add(check_run_changed, "check_run", action=_action)
