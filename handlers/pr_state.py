"""The pull-request state that several features read, each read one way; no feature's own decisions.

- the gate's record, kept in the bot's sweep status comment (bot/rules/sweep_record.py): the gate keeps it,
  the reuse commands pin into it, the sign-off and the results callbacks read it;
- who wrote a comment: the bot obeys neither itself nor other bots;
- the one reply to each command comment, with the record it was rendered from: the command dispatcher and the
  reuse commands write it, a staging callback re-renders it;
- the bot's own sweeps of a PR and what a pinned run is worth now: the reuse commands and the sign-off judge
  by them;
- the hand-off by which another feature asks the gate to act on a record it changed (`RecordChanged`, and the
  reads it will make, `ReadAhead`): the registry wires the gate's, then the sign-off's (`in_turn`), into the
  reuse feature, so no feature imports another.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Any, NotRequired, Protocol, TypedDict, Unpack

import cachetools
import gidgethub

from bot.core import offload
from bot.core.processing import Context
from bot.effects.actions import Action, Comment
from bot.effects.comments import PER_PAGE
from bot.github.client import get_or_none
from bot.rules import pins, stale_branch
from bot.rules.changelog import ChangelogResult, check_append
from bot.rules.changelog.limits import policy_limits
from bot.rules.dispatched_runs import bot_run
from bot.rules.gate import AppliedLabel
from bot.rules.links import Slashed, repo_api
from bot.rules.markers import hidden_record, is_bots, purpose_of, read_hidden_record
from bot.rules.master_config import read_master_configs
from bot.rules.policy import Policy
from bot.rules.pull_request import (
    actor_of,
    is_fork,
    label_generation,
    label_key,
    label_names,
    last_applied,
    last_removed,
    primary_names,
    sweep_label_names,
    trusted_labels,
)
from bot.rules.sweep_queue import Entry
from bot.rules.sweep_record import RunRecord, SweepRecord

STATUS_PURPOSE = "sweep-status"  # the gate's status comment, which holds its record
REPLY_RECORD = "reply"  # a command reply's hidden line: <!-- sweepbot-reply {...} -->
NOT_FOUND = "not-found"  # the verdict on a run id the repository does not have


# -- who wrote it ----------------------------------------------------------------------------------


def from_a_bot(user: Mapping[str, Any], bot_login: str) -> bool:
    """Whether a comment's or review's author is a bot (this App or any other): the bot obeys neither."""
    return user.get("type") == "Bot" or user.get("login") == bot_login


# -- the gate's record -----------------------------------------------------------------------------


async def own_comment(ctx: Context, number: int, purpose: str) -> dict[str, Any] | None:
    """The bot's own comment of `purpose` on PR `number` (only the bot's comments count), or None."""
    for comment in await ctx.comments(number):
        if is_bots(comment, ctx.bot_login) and purpose_of(comment.get("body")) == purpose:
            return comment
    return None


async def load_record(ctx: Context, number: int) -> tuple[SweepRecord, bool]:
    """(the record in the bot's status comment on PR `number`, whether that comment exists)."""
    comment = await own_comment(ctx, number, STATUS_PURPOSE)
    return (SweepRecord.parse(comment.get("body")), True) if comment is not None else (SweepRecord(), False)


class RecordChanged(Protocol):
    """The gate, asked by another feature that changed its record (a pin set or withdrawn): it records it in its
    status comment, decides again without starting a sweep, and returns what is left to write."""

    async def __call__(self, ctx: Context, number: int, record: SweepRecord, exists: bool) -> list[Action]: ...


class ReadAhead(Protocol):
    """What a `RecordChanged` will read to act on the change (the gate's view of the PR), read while the change
    itself is written: the delivery's reader keeps the answers, so acting on it later reads nothing again. Only
    reads: it writes nothing, so it may run beside another feature's writes."""

    async def __call__(self, ctx: Context, number: int, record: SweepRecord, exists: bool) -> None: ...


async def no_read_ahead(ctx: Context, number: int, record: SweepRecord, exists: bool) -> None:
    """A `ReadAhead` that reads nothing (the record's change is acted on by reading then)."""
    return None


def in_turn(*told: RecordChanged) -> RecordChanged:
    """One record change told to several features in turn (the gate first, to record it; then the sign-offs, to
    verify again by it): all their actions, in that order. Each is handed the changed record itself, as none of
    the actions is written yet."""

    async def record_changed(ctx: Context, number: int, record: SweepRecord, exists: bool) -> list[Action]:
        actions: list[Action] = []
        for feature in told:
            actions.extend(await feature(ctx, number, record, exists))
        return actions

    return record_changed


# -- replies to commands ---------------------------------------------------------------------------


MERGE_PURPOSE = "merge-reuse"  # the merge notice: which run the merge reuses, and its ingest
NOTICE_RECORD = "merge-notice"  # its hidden line: the variables it was rendered from, so the ingest re-renders it


def reply_purpose(comment_id: int) -> str:
    """Each command comment gets its own reply, edited in place when the command is edited."""
    return f"reply-{comment_id}"


def reply_comment(
    ctx: Context, number: int, comment_id: int | None, variables: dict[str, Any], *, purpose: str | None = None
) -> Comment:
    """The reply, with the variables it was rendered from (and which template) kept in it: a staging callback
    re-renders it. `variables["template"]` names the kind; reuse_reply when absent. The reply to comment
    `comment_id`, or of `purpose` when it answers no comment (a check run's button)."""
    shown = {k: v for k, v in variables.items() if k != "template"}
    body = hidden_record(REPLY_RECORD, variables) + "\n" + ctx.render(variables.get("template", "reuse_reply"), **shown)
    if purpose is None:
        assert comment_id is not None, "a reply answers a comment or names its purpose"
        purpose = reply_purpose(comment_id)
    return Comment(number, purpose, body)


def reply_record(body: str | None) -> dict[str, Any] | None:
    found = read_hidden_record(REPLY_RECORD, body)
    return found if isinstance(found, dict) else None


class AppRun(TypedDict, total=False):
    """The results service's run a staging callback came from, and its page."""

    app_run_id: int | None
    app_run_url: str | None


class StagingProgress(AppRun, total=False):
    """What a staging section says beside its state, once the results service answered or the request failed."""

    results_url: str | None
    viewer_url: str
    error: str | None


class StagingSection(TypedDict):
    """A reply's staging section (templates/_staging.*.j2)."""

    state: str
    repository: str
    results_url: str | None
    app_run_url: str | None
    error: str | None
    primary_labels: list[str]
    viewer_url: NotRequired[str]
    app_run_id: NotRequired[int | None]


def staging_state(state: str, policy: Policy, **extra: Unpack[StagingProgress]) -> StagingSection:
    """The staging section in `state`, with what `extra` says."""
    return {
        "state": state,
        "repository": policy.results.repository,
        "results_url": None,
        "app_run_url": None,
        "error": None,
        "primary_labels": [p.name for p in policy.labels.primary],
        **extra,
    }


# -- the bot's sweeps of a PR ----------------------------------------------------------------------


def utcnow() -> dt.datetime:
    """The time artifacts' expiry is judged at (tests set it to the fake GitHub's clock)."""
    return dt.datetime.now(dt.UTC)


class RunTrust(TypedDict):
    """What a run must match to count as the bot's sweep on this repository (bot.rules.dispatched_runs)."""

    bot_login: str
    repository: str
    workflows: tuple[str, ...]


def run_trust(ctx: Context) -> RunTrust:
    """The `RunTrust` of this repository, as the policy names its sweep workflows."""
    return RunTrust(
        bot_login=ctx.bot_login, repository=ctx.repo, workflows=tuple(ctx.policy.workflows.names().values())
    )


def recorded_run(ctx: Context, run: Mapping[str, Any], record: SweepRecord) -> RunRecord | None:
    """The record's entry for `run` when it is a sweep the bot dispatched for this PR (bot.rules.dispatched_runs)."""
    return bot_run(run, record, **run_trust(ctx))


def tested_sha(ctx: Context, run: Mapping[str, Any], record: SweepRecord | None) -> str:
    """The commit a run tested: the head the bot dispatched it for (a fork's trusted run starts from the default
    branch, so its own `head_sha` is that branch's commit), else the run's own head."""
    entry = recorded_run(ctx, run, record) if record is not None else None
    return (entry.head_sha if entry is not None else None) or run.get("head_sha") or ""


async def pr_commits(ctx: Context, number: int) -> list[str]:
    return [c["sha"] async for c in ctx.gh.getiter(repo_api(ctx.repo, "pulls", number, "commits", per_page=PER_PAGE))]


async def run_artifacts(ctx: Context, run_id: int) -> list[dict]:
    url = repo_api(ctx.repo, "actions", "runs", run_id, "artifacts", per_page=PER_PAGE)
    return [a async for a in ctx.gh.getiter(url, iterable_key="artifacts")]


async def read_run(ctx: Context, run_id: int) -> dict | None:
    return await get_or_none(ctx.gh, repo_api(ctx.repo, "actions", "runs", run_id))


async def candidate_runs(ctx: Context, record: SweepRecord) -> list[tuple[dict, RunRecord]]:
    """The runs a bare `/reuse-sweep-run` chooses from, as GitHub shows them now, each with its record entry:
    the sweeps the bot dispatched for the PR, which its record holds (no listing of a branch's runs: a fork's
    own runs are among those)."""
    found: list[tuple[dict, RunRecord]] = []
    for entry in record.runs:
        run = await read_run(ctx, entry.run_id) if entry.run_id else None
        known = recorded_run(ctx, run, record) if run is not None else None
        if run is not None and known is not None:
            found.append((run, known))
    return found


async def changelog_change(ctx: Context, pull: Mapping[str, Any], path: str) -> ChangelogResult:
    """The PR's change to the changelog, checked from the file at the merge base and at the head; a big file in
    the worker process, so that no input holds this loop (bot/core/offload.py: `OffloadFailed` when it could not
    be checked)."""
    base_sha, head_sha = pull["base"]["sha"], pull["head"]["sha"]
    # the head's bytes are read while the merge base is asked for; the base's need its answer
    merge_base, head = await asyncio.gather(ctx.merge_base(base_sha, head_sha), ctx.file_at(path, head_sha))
    base = await ctx.file_at(path, merge_base)
    head = head or b""
    return await offload.run(
        check_append,
        base,
        head,
        pr_number=pull["number"],
        canonical_prefix=ctx.policy.pr_link_prefix,
        limits=policy_limits(ctx.policy.limits),
        size=len(head) + len(base or b""),
    )


async def newest_eligible_run(
    ctx: Context, pull: Mapping[str, Any], record: SweepRecord, labels: list[str]
) -> pins.Selection:
    """The newest run of the record that may be reused with no pin (a bare `/reuse-sweep-run`, a `/merge` with
    nothing pinned), and every other run with its verdict."""
    runs = [run for run, _ in await candidate_runs(ctx, record)]
    artifacts = {run["id"]: await run_artifacts(ctx, run["id"]) for run in runs}
    return pins.newest_eligible(
        runs,
        dispatched_run_ids={run["id"] for run in runs},
        fork=pull_is_fork(ctx, pull),
        artifacts_of=artifacts,
        labels=labels,
        policy=ctx.policy,
        now=utcnow(),
    )


async def pr_of_check(ctx: Context, check: Mapping[str, Any]) -> int | None:
    """The open PR whose head is the check's commit: named by the payload for a same-repository PR; a fork's
    check names none, so GitHub is asked."""
    if ctx.pr_number is not None:
        return ctx.pr_number
    sha = check.get("head_sha")
    return await ctx.pr_of_head(sha) if isinstance(sha, str) else None


def pull_is_fork(ctx: Context, pull: Mapping[str, Any]) -> bool:
    """Whether `pull` (GitHub's PR, or {} when it was not read) comes from a fork."""
    return is_fork(pull, ctx.repo) if pull else False


async def nothing() -> None:
    """An awaitable of nothing, for a read `asyncio.gather` makes only when it is needed."""
    return None


PinnedReads = tuple[dict | None, list[dict] | None]  # a run id's run (None: no such run) and artifacts (None: unread)


async def read_pinned(ctx: Context, run_id: int) -> PinnedReads:
    """The run a command names and its artifacts, read together, before the record says whether the bot
    dispatched it (the id is in the command): `/use <id>` reads them beside the record and the PR. The artifacts
    are None when the run does not exist or they could not be listed (`judge_pinned` lists them again)."""
    run, artifacts = await asyncio.gather(read_run(ctx, run_id), run_artifacts(ctx, run_id), return_exceptions=True)
    for answer in (run, artifacts):
        if isinstance(answer, BaseException) and not isinstance(answer, Exception):
            raise answer  # cancelled: nothing of it is kept
    if isinstance(run, Exception):
        raise run
    return run, (artifacts if run is not None and not isinstance(artifacts, Exception) else None)


async def judge_pinned(
    ctx: Context, run_id: int, pull: Mapping[str, Any], record: SweepRecord, read: PinnedReads | None = None
) -> tuple[dict | None, pins.Verdict]:
    """(the run, its verdict as a pinned id): `not-found` when the repository has no such run. `read`: the run
    and its artifacts as `read_pinned` read them already."""
    if read is not None:
        run, early = read
    else:
        # a run the record names is one the bot dispatched, most likely: its artifacts are read with it
        listed = any(entry.run_id == run_id for entry in record.runs)
        run, early = await asyncio.gather(read_run(ctx, run_id), run_artifacts(ctx, run_id) if listed else nothing())
    if run is None:
        return None, pins.Verdict(False, NOT_FOUND, {"run_id": run_id})
    dispatched = recorded_run(ctx, run, record) is not None
    artifacts = (early if early is not None else await run_artifacts(ctx, run_id)) if dispatched else ()
    verdict = pins.check_run(
        run,
        pinned=True,
        dispatched=dispatched,
        fork=pull_is_fork(ctx, pull),
        artifacts=artifacts,
        labels=await counted_label_names(ctx, pull, record),
        policy=ctx.policy,
        now=utcnow(),
    )
    return run, verdict


# -- the labels that count -------------------------------------------------------------------------


@dataclass(frozen=True)
class Labelling:
    labels: tuple[AppliedLabel, ...] = ()
    generation: int | None = None
    primary_applied_at: str | None = None  # when a trusted person last applied a primary now on the PR

    def counts(self, names: set[str] | frozenset[str]) -> bool:
        """Whether a label of `names` (casefolded) counts: one the label events of trusted labellers left on."""
        return any(label_key(label.name) in names and label.writer is True for label in self.labels)

    @property
    def counted_names(self) -> list[str]:
        """The sweep labels that count, as named on the PR."""
        return [label.name for label in self.labels if label.writer is True]


async def may_label(ctx: Context, login: str, fork: bool) -> bool | None:
    """Whether `login`'s sweep labels count: a confirmed writer's always; on the repository's own branches also
    the triage role's, when the policy's `sweeps.triage_may_start` says so. None when GitHub would not say."""
    writer = await ctx.writer(login)
    if writer is not False or fork or not ctx.policy.sweeps.triage_may_start:
        return writer
    return await ctx.role(login) == "triage"


async def counted_labels(ctx: Context, pull: Mapping[str, Any], record: SweepRecord) -> Labelling:
    """The PR's sweep labels, each with who applied it and whether it counts (on a fork: which head it approved),
    the label generation of the dispatch id, and when the primary was last applied.

    On every PR the labels that count are what the label events of people who may start a sweep left
    (`may_label`; `trusted_labels`): a label anyone else added counts for nothing, and one they took off a
    writer's still counts (`removed_by` says who). The bot's own label events change nothing either."""
    fork = pull_is_fork(ctx, pull)
    primaries, modifiers = sweep_label_names(ctx.policy)
    sweep = primaries | modifiers
    names = [name for name in label_names(pull) if label_key(name) in sweep]
    if not names and not record.runs and not record.approvals:
        return Labelling()  # nothing on the PR, and nothing a trusted labeller could have left
    events = await ctx.label_events(pull["number"])
    ordered = sorted({actor_of(e) for e in events} - {"", ctx.bot_login})
    answers = await asyncio.gather(*(may_label(ctx, a, fork) for a in ordered))
    standing = {a.casefold(): answer for a, answer in zip(ordered, answers)}
    trusted = {a for a, answer in standing.items() if answer}
    held = trusted_labels(events, sweep, trusted)
    on_pr = {label_key(name) for name in names}
    out = []
    for folded, event in held.items():
        name, by = event["label"]["name"], actor_of(event)
        removed_by = None if folded in on_pr else actor_of(last_removed(events, name) or {}) or None
        approval = record.approval(name) if fork else None
        if approval is not None and approval.via == "button":  # a writer pressed "Approve this commit" (checked then)
            out.append(AppliedLabel(name, by, True, approval.head_sha, approved_by=approval.by, removed_by=removed_by))
            continue
        head = approval.head_sha if approval and approval.by.casefold() == by.casefold() else None
        out.append(AppliedLabel(name, by, True, head, removed_by=removed_by))
    for name in names:
        if label_key(name) not in held:  # put on by someone else: counts for nothing (on a fork, removed if a primary)
            by = actor_of(last_applied(events, name) or {})
            # not held, so nobody who may start a sweep applied it: someone who may not (False), or someone GitHub
            # would not say of, or whose event the listing does not show yet (None: neither counted nor removed)
            out.append(AppliedLabel(name, by, standing.get(by.casefold()) if by else None))
    applied_at = [
        str(e["created_at"])
        for folded, e in held.items()
        if folded in primaries and folded in on_pr and e.get("created_at")
    ]
    return Labelling(tuple(out), label_generation(events, sweep, trusted), max(applied_at, default=None))


async def counted_label_names(ctx: Context, pull: Mapping[str, Any], record: SweepRecord) -> list[str]:
    """The names of the sweep labels that count on the PR (`counted_labels`), with its other labels: what pins
    and staging judge by."""
    sweep = set().union(*sweep_label_names(ctx.policy))
    others = [name for name in label_names(pull) if label_key(name) not in sweep]
    return others + (await counted_labels(ctx, pull, record)).counted_names


# -- the stale-branch guard's reads (bot/rules/stale_branch.py) -------------------------------------
# What a PR built on an old base would undo, read for the gate (and, for the pin, the sign-off and the merge).
# Bounded: at most SUBMODULES_CHECKED comparisons (and two reads each where one refuses), FILES_CHECKED base
# histories of 1 + history_depth + 1 reads each, the master configs at two commits, and one comparison for the
# pin. Everything is keyed by commit SHAs, whose content never changes, and kept across deliveries.
GUARD_READS_IN_FLIGHT = 4
_submodule_compares: cachetools.LRUCache = cachetools.LRUCache(maxsize=1024)  # (repo, base, head) -> Compared
_reverts: cachetools.LRUCache = cachetools.LRUCache(maxsize=1024)  # (repo, path, base, blob, depth) -> commit
_commit_prs: cachetools.LRUCache = cachetools.LRUCache(maxsize=1024)  # (repo, sha) -> PR number or None
_files_between: cachetools.LRUCache = cachetools.LRUCache(maxsize=1024)  # (repo, from, to) -> changed files
_changed_keys: cachetools.LRUCache = cachetools.LRUCache(maxsize=256)  # (repo, base, head, paths) -> ChangedKeys
_gitlinks: cachetools.LRUCache = cachetools.LRUCache(maxsize=1024)  # (repo, base, path, head) -> submodule facts


def forget_guard_reads() -> None:
    """Empty the guard's caches (the tests' and benchmarks' fake SHAs repeat from one PR to the next)."""
    for cache in (_submodule_compares, _reverts, _commit_prs, _files_between, _changed_keys, _gitlinks):
        cache.clear()


async def _guarded(bound: asyncio.Semaphore, url: str, ctx: Context) -> Any:
    """GET `url`; None when GitHub will not show it (404, 403: the App cannot read that repository)."""
    async with bound:
        try:
            return await ctx.gh.getitem(url)
        except gidgethub.BadRequest as exc:
            if int(exc.status_code) in (403, 404, 422):
                return None
            raise


async def _pr_of_commit(ctx: Context, bound: asyncio.Semaphore, sha: str) -> int | None:
    """The PR GitHub says brought `sha` to the base (a merged one first), or None."""
    key = (ctx.repo, sha)
    if key not in _commit_prs:
        found = await _guarded(bound, repo_api(ctx.repo, "commits", sha, "pulls"), ctx)
        prs = [p for p in found or () if isinstance(p, dict) and isinstance(p.get("number"), int)]
        merged = [p for p in prs if p.get("merged_at") or p.get("merge_commit_sha") == sha]
        _commit_prs[key] = (merged or prs)[0]["number"] if prs else None
    return _commit_prs[key]


async def _last_move(ctx: Context, bound: asyncio.Semaphore, path: str, base_sha: str) -> stale_branch.LastMove | None:
    history = await _guarded(bound, repo_api(ctx.repo, "commits", sha=base_sha, path=path, per_page=1), ctx)
    if not history or not isinstance(history[0], dict) or not history[0].get("sha"):
        return None
    sha = history[0]["sha"]
    return stale_branch.LastMove(sha, await _pr_of_commit(ctx, bound, sha))


SubmoduleFacts = tuple[str, str, str | None, "stale_branch.Compared | None", "stale_branch.LastMove | None"]


async def _submodule_facts(
    ctx: Context,
    bound: asyncio.Semaphore,
    entry: Mapping[str, Any],
    repos: Mapping[str, str | None],
    base_sha: str,
    at_base: Any,
) -> SubmoduleFacts:
    """(the base's pointer, the PR's, the submodule's repository, their comparison there, the base commit that
    last moved the pointer where it moved back). `at_base`: the contents API's answer for the gitlink's path at
    the base (`type: submodule`, its commit)."""
    move = stale_branch.submodule_move(entry.get("patch"))
    assert move is not None  # only gitlinks are asked about
    path = entry["filename"]
    base = at_base["sha"] if isinstance(at_base, dict) and at_base.get("type") == "submodule" else move[0]
    head, repo = move[1], repos.get(path)
    compared: stale_branch.Compared | None = None
    if repo is not None and base != head:
        key = (repo, base, head)
        if key not in _submodule_compares:
            found = await _guarded(bound, repo_api(repo, "compare", f"{base}...{head}", per_page=1), ctx)
            if not (isinstance(found, dict) and found.get("status")):
                return base, head, repo, None, None  # not kept: the App may be given the repository later
            _submodule_compares[key] = stale_branch.Compared(
                str(found["status"]), int(found.get("ahead_by") or 0), int(found.get("behind_by") or 0)
            )
        compared = _submodule_compares[key]
    moved_back = compared is not None and compared.status in ("behind", "diverged")
    last = await _last_move(ctx, bound, path, base_sha) if moved_back else None
    return base, head, repo, compared, last


async def _submodules(
    ctx: Context, bound: asyncio.Semaphore, gitlinks: list[dict[str, Any]], base_sha: str
) -> list[stale_branch.Finding | None]:
    """The findings on the gitlinks the PR moves. What GitHub said of each is kept per (repository, base commit,
    path, the PR's pointer): a later evaluation of the same commits reads nothing, a verified one at least."""

    def key(entry: Mapping[str, Any]) -> tuple[str, str, str, str | None]:
        return ctx.repo, base_sha, entry["filename"], entry.get("patch")

    missing = [e for e in gitlinks if key(e) not in _gitlinks]
    if missing:
        text, *at_base = await asyncio.gather(
            ctx.file_at(".gitmodules", base_sha),
            *(
                _guarded(bound, repo_api(ctx.repo, "contents", Slashed(e["filename"]), ref=base_sha), ctx)
                for e in missing
            ),
        )
        repos = stale_branch.gitmodules_repos(text.decode("utf-8", errors="replace") if text else None, ctx.repo)
        facts = await asyncio.gather(
            *(
                _submodule_facts(ctx, bound, e, repos, base_sha, found)
                for e, found in zip(missing, at_base, strict=True)
            )
        )
        for entry, fact in zip(missing, facts, strict=True):
            if fact[3] is not None or fact[2] is None or fact[0] == fact[1]:  # an unread comparison is asked again
                _gitlinks[key(entry)] = fact
        known = {key(e): fact for e, fact in zip(missing, facts, strict=True)}
    else:
        known = {}
    found = []
    for entry in gitlinks:
        base, head, repo, compared, last = known.get(key(entry)) or _gitlinks[key(entry)]
        found.append(stale_branch.submodule_finding(entry["filename"], base, head, repo, compared, ctx.policy, last))
    return found


async def _reverted(
    ctx: Context, bound: asyncio.Semaphore, entry: Mapping[str, Any], base_sha: str
) -> stale_branch.Finding | None:
    path, blob = entry["filename"], entry.get("sha")
    if entry.get("status") != "modified" or not isinstance(blob, str):
        return None
    depth = ctx.policy.stale_branch.history_depth
    key = (ctx.repo, path, base_sha, blob, depth)
    if key not in _reverts:
        listed = await _guarded(bound, repo_api(ctx.repo, "commits", sha=base_sha, path=path, per_page=depth + 1), ctx)
        commits = [c["sha"] for c in listed or () if isinstance(c, dict) and isinstance(c.get("sha"), str)]
        versions = await asyncio.gather(
            *(_guarded(bound, repo_api(ctx.repo, "contents", Slashed(path), ref=sha), ctx) for sha in commits)
        )
        history = [
            (sha, item.get("sha") if isinstance(item, dict) else None)
            for sha, item in zip(commits, versions, strict=True)
        ]
        replaced = stale_branch.replaced_version(blob, history)
        _reverts[key] = (replaced, await _pr_of_commit(ctx, bound, replaced) if replaced else None)
    replaced_by, replaced_in = _reverts[key]
    return stale_branch.reverted_finding(path, replaced_by, ctx.policy, replaced_in)


async def _changed_config_keys(ctx: Context, pull: Mapping[str, Any]) -> tuple[stale_branch.ChangedKey, ...]:
    """The master-config keys the PR adds or changes, from the files at the merge base and the head (kept per
    base and head commit: parsing upstream's files takes a while, and they are big)."""
    base_sha, head_sha = pull["base"]["sha"], pull["head"]["sha"]
    paths = ctx.policy.paths.master_configs
    key = (ctx.repo, base_sha, head_sha, paths)
    if key not in _changed_keys:
        merge_base = await ctx.merge_base(base_sha, head_sha)
        texts = await asyncio.gather(*(ctx.file_at(path, ref) for ref in (merge_base, head_sha) for path in paths))
        decoded = [text.decode("utf-8", errors="replace") if text is not None else None for text in texts]
        at_head = decoded[len(paths) :]
        lines: dict[str, int] = {}
        for text in at_head:
            lines = {**stale_branch.key_lines(text), **lines}  # the first file's line of a key defined twice
        _changed_keys[key] = stale_branch.changed_config_keys(
            read_master_configs(dict(zip(paths, decoded[: len(paths)], strict=True))),
            read_master_configs(dict(zip(paths, at_head, strict=True))),
            lines,
        )
    return _changed_keys[key]


async def _coverage(
    ctx: Context, pull: Mapping[str, Any], files: list[str], changelog: Awaitable[Any]
) -> list[stale_branch.Finding]:
    """The changed master-config keys against the appended entries' `config-keys` (once the changelog is valid)."""
    policy = ctx.policy
    result = await changelog
    if result is None or not result.ok or not result.entries or policy.stale_branch.changelog_coverage == "off":
        return []
    if not stale_branch.touches_master_configs(files, policy):
        return []  # no key changed: nothing to cover, and every named key reruns a config (a recipe's change, say)
    entries = [(entry.line, entry.config_keys) for entry in result.entries]
    return stale_branch.coverage_findings(await _changed_config_keys(ctx, pull), entries, policy)


async def stale_branch_findings(
    ctx: Context, pull: Mapping[str, Any], changelog: Awaitable[Any]
) -> tuple[stale_branch.Finding, ...]:
    """Every finding of the stale-branch guard on the PR (`changelog`: the gate's check of the changelog, awaited
    once it is needed). Reads .gitmodules and the histories from the base branch only; never the PR's code."""
    number, base_sha = pull["number"], pull["base"]["sha"]
    bound = asyncio.Semaphore(GUARD_READS_IN_FLIGHT)
    entries = await ctx.pr_file_entries(number)
    files = [entry["filename"] for entry in entries]
    gitlinks = [e for e in entries if stale_branch.submodule_move(e.get("patch"))][: stale_branch.SUBMODULES_CHECKED]
    modified = [e["filename"] for e in entries if e not in gitlinks and e.get("status") == "modified"]
    checked = set(stale_branch.files_to_check(modified, ctx.policy))

    off = not gitlinks or ctx.policy.stale_branch.submodules == "off"
    moved, reverted, covered = await asyncio.gather(
        nothing() if off else _submodules(ctx, bound, gitlinks, base_sha),
        asyncio.gather(*(_reverted(ctx, bound, e, base_sha) for e in entries if e["filename"] in checked)),
        _coverage(ctx, pull, files, changelog),
    )
    return tuple(f for f in [*(moved or ()), *reverted, *covered] if f is not None)


async def files_since(ctx: Context, before: str, after: str) -> tuple[str, ...] | None:
    """The files changed between two commits of the repository (GitHub's comparison; None if it will not say)."""
    key = (ctx.repo, before, after)
    if key not in _files_between:
        found = await get_or_none(ctx.gh, repo_api(ctx.repo, "compare", f"{before}...{after}"))
        if not isinstance(found, dict):
            return None
        _files_between[key] = tuple(f["filename"] for f in found.get("files") or () if isinstance(f, dict))
    return _files_between[key]


async def stale_pin_files(ctx: Context, record: SweepRecord, head_sha: str) -> tuple[str, ...]:
    """The benchmark files pushed since the pinned run's commit (bot.rules.stale_branch.stale_pin_files): empty
    while the pin still stands for the PR, or there is no pin, or the pinned run is not one of the record's."""
    if record.pin is None or not ctx.policy.stale_branch.stale_pin:
        return ()
    run = record.run(record.pin.run_id)
    if run is None or not run.head_sha or run.head_sha == head_sha:
        return ()
    files = await files_since(ctx, run.head_sha, head_sha)
    return stale_branch.stale_pin_files(files or (), ctx.policy)


# -- the runner pools' queues ----------------------------------------------------------------------


def queue_entry(number: int, record: SweepRecord) -> tuple[str, Entry] | None:
    """("running", entry) while the PR's queued sweep runs, ("waiting", entry) while it waits, else None."""
    queued = record.queued
    if queued is None:
        return None
    entry = Entry(number, queued.pools, queued.since, queued.priority)
    if queued.dispatch_id is None:
        return "waiting", entry
    run = record.by_dispatch(queued.dispatch_id)
    return ("running", entry) if run is not None and not run.finished else None


@dataclass
class QueueView:
    """The open PRs' places on the queues, read from their records on GitHub (so nothing is lost with the
    journal). `known` holds records this delivery changed and has not written yet: they stand for GitHub's. With
    `verify`, a sweep its record shows running is asked of GitHub once: a run another PR's lane saw finish a moment
    ago (its record not written yet) frees its slot here too."""

    known: dict[int, SweepRecord] = field(default_factory=dict)
    records: dict[int, SweepRecord] = field(default_factory=dict)  # every record `entries` read or knew
    pulls: list[dict] | None = None
    verify: bool = False
    finished: dict[int, bool] = field(default_factory=dict)  # run id -> GitHub says it completed

    async def open_pulls(self, ctx: Context) -> list[dict]:
        """The open PRs (the issues API lists them with their labels), read once per view."""
        if self.pulls is None:
            url = repo_api(ctx.repo, "issues", state="open", per_page=PER_PAGE)
            self.pulls = [item async for item in ctx.gh.getiter(url) if "pull_request" in item]
        return self.pulls

    async def entries(self, ctx: Context, *, leave_out: int | None = None) -> tuple[list[Entry], list[Entry]]:
        """(running, waiting) of every open PR that carries a primary label, but `leave_out`."""
        primaries = primary_names(ctx.policy)
        numbers = [
            item["number"]
            for item in await self.open_pulls(ctx)
            if item["number"] != leave_out and any(label_key(n) in primaries for n in label_names(item))
        ]
        unread = [n for n in numbers if n not in self.known]
        records = await asyncio.gather(*(load_record(ctx, n) for n in unread))
        found = {**dict(zip(unread, (r for r, _ in records))), **self.known}
        self.records.update(found)
        places = {number: queue_entry(number, found[number]) for number in numbers}
        if self.verify:
            await self._verify(ctx, [found[n] for n, place in places.items() if place and place[0] == "running"])
        running: list[Entry] = []
        waiting: list[Entry] = []
        for number, place in places.items():
            if place is None:
                continue
            if place[0] == "waiting":
                waiting.append(place[1])
            elif not self.finished.get(_slot_run(found[number]), False):
                running.append(place[1])
        return running, waiting

    async def _verify(self, ctx: Context, records: list[SweepRecord]) -> None:
        ids = [run_id for run_id in map(_slot_run, records) if run_id and run_id not in self.finished]
        runs = await asyncio.gather(*(read_run(ctx, run_id) for run_id in ids), return_exceptions=True)
        for run_id, run in zip(ids, runs):
            # a run GitHub no longer has frees its slot; one it could not be asked about holds it
            self.finished[run_id] = run is None or (isinstance(run, dict) and run.get("status") == "completed")


def _slot_run(record: SweepRecord) -> int:
    """The run id of the sweep holding the record's slot (0: not known yet)."""
    run = record.by_dispatch(record.queued.dispatch_id) if record.queued and record.queued.dispatch_id else None
    return run.run_id if run is not None else 0
