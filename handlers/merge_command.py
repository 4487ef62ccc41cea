"""`/merge` by a maintainer: check what a merge needs, then merge the PR with its changelog's tail resolved, the
pinned run reused and its ingest asked for once.

What is checked is bot/rules/merge.py's `merge_refusals` over facts read here; any refusal is one reply naming
what is missing and who can fix it, and nothing is written to any branch. With no pin, the newest eligible run
of the record is pinned by the merge (written into the gate's record first) and the reply says so.

The merge is one effect (`MergePull`): for a PR from the repository's own branches, the base and the resolved
changelog committed onto the PR's branch when its changelog needs it (marked not to sweep) and GitHub's merge
API pinned to that commit; for a fork's PR, a merge commit built through the Git Data API and a fast-forward of
the base branch. Exactly once: the executor's ledger and its reconciliation (is the PR merged, does the base
hold its head?) stop a repeat within a delivery; across deliveries, a PR GitHub shows merged is not merged again.
The merge notice and the ingest request come from the reuse feature's `notify_merge` (wired by the registry),
whose hidden record sends the request once whether this command or the `closed` event gets there first.

One merge at a time per base branch in this process, in the order asked; a base that moved under a merge (GitHub
refuses the fast-forward, or the merge as not mergeable) is built again on the new base, up to MAX_BUILDS times,
and never forced."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import gidgethub
from gidgethub import sansio

from bot.core import offload, routing, turns
from bot.core.processing import Context
from bot.effects.actions import Action, Comment, MergePull, TreeChange
from bot.effects.comments import PER_PAGE
from bot.rules import check_buttons, pins
from bot.rules import merge as rules
from bot.rules.changelog.limits import policy_limits
from bot.rules.links import Slashed, repo_api, web
from bot.rules.pull_request import own_check_run
from bot.rules.signoff import CHECK_NAME
from bot.rules.sweep_record import Pin, SweepRecord
from bot.telemetry import logs
from handlers import pr_state
from handlers.commands import PERMISSION_UNKNOWN, UNAUTHORIZED, CommandRoute, CommentCommand, Feature, answered

MAX_BUILDS = 3  # a base that keeps moving: built again this often, then the reply says GitHub refused
REFUSED_STATUSES = (405, 409, 422)  # not mergeable / head moved / not a fast-forward: build again on what is now


NotifyMerge = Callable[..., Awaitable[object]]  # reuse_command.notify_merge(ctx, pull, record, *, after_merge)


def base_branch_lock(repo: str, base: str) -> asyncio.Lock:
    """The turn of one base branch in this process: its merges one at a time, in the order asked."""
    return turns.turn(("merge", repo.casefold(), base))


def reply_variables(ctx: Context, request: Request, outcome: str, **more: Any) -> dict[str, Any]:
    variables: dict[str, Any] = {
        "template": "merge_reply",
        "outcome": outcome,
        "requester": request.requester,
        "refusals": [],
        "run": None,
        "sha": "",
        "error": "",
        "use_command": f"/{ctx.policy.commands.use}",
        "merge_command": f"/{ctx.policy.commands.merge}",
    }
    variables.update(more)
    return variables


def merge_refusal(ctx: Context, call: CommentCommand, outcome: str) -> dict[str, Any]:
    """The reply's variables for a `/merge` its author may not run (the dispatcher's refusal)."""
    assert outcome in (UNAUTHORIZED, PERMISSION_UNKNOWN)
    return reply_variables(ctx, from_comment(call), outcome)


def shown_refusal(refusal: rules.Refusal) -> dict[str, Any]:
    """A refusal as the reply shows it (and its hidden record keeps it): plain values only."""
    params = {k: v for k, v in refusal.params.items() if k not in ("errors", "corrections")}
    return {"code": refusal.code, "fixer": refusal.fixer, "params": params}


async def signoff_conclusion(ctx: Context, sha: str) -> str | None:
    """The conclusion of the bot's `signoff` check on `sha`, None while it has none or it runs."""
    url = repo_api(ctx.repo, "commits", sha, "check-runs", check_name=CHECK_NAME, filter="latest", per_page=PER_PAGE)
    async for run in ctx.gh.getiter(url, iterable_key="check_runs"):
        if own_check_run(run, CHECK_NAME, ctx.bot_login):
            return run.get("conclusion") if run.get("status") == "completed" else None
    return None


async def base_head(ctx: Context, base: str) -> str:
    ref = await ctx.gh.getitem(repo_api(ctx.repo, "git", "ref", "heads", Slashed(base)))
    return str(ref["object"]["sha"])


async def changed_since(ctx: Context, merge_base: str, base_sha: str) -> list[str]:
    """The files the base branch changed since the PR's merge base (GitHub lists up to 300)."""
    if merge_base == base_sha:
        return []
    compared = await ctx.gh.getitem(repo_api(ctx.repo, "compare", f"{merge_base}...{base_sha}"))
    return [str(f.get("filename")) for f in compared.get("files") or () if f.get("filename")]


async def head_modes(ctx: Context, sha: str) -> dict[str, str]:
    """Each path's mode in the tree of `sha` (one request, the whole tree)."""
    tree = await ctx.gh.getitem(repo_api(ctx.repo, "git", "trees", sha, recursive=1))
    return {str(e["path"]): str(e["mode"]) for e in tree.get("tree") or () if e.get("path") and e.get("mode")}


async def choose_run(
    ctx: Context, pull: Mapping[str, Any], record: SweepRecord, labels: list[str]
) -> tuple[pins.Verdict | None, pins.Selection]:
    """(the pin's verdict, or None; the newest eligible run when nothing is pinned)."""
    if record.pin is not None:
        _, verdict = await pr_state.judge_pinned(ctx, record.pin.run_id, pull, record)
        return verdict, pins.Selection(None, None, ())
    return None, await pr_state.newest_eligible_run(ctx, pull, record, labels)


async def resolved_changelog(
    ctx: Context, pull: Mapping[str, Any], base_sha: str, merge_base: str, touched: bool
) -> rules.Resolution | rules.Refusal:
    path = ctx.policy.paths.changelog
    if not touched:
        return rules.Resolution(await ctx.file_at(path, base_sha) or b"")
    read = await asyncio.gather(
        ctx.file_at(path, base_sha), ctx.file_at(path, pull["head"]["sha"]), ctx.file_at(path, merge_base)
    )
    base, head, before = (content or b"" for content in read)
    return await offload.run(
        rules.resolve_changelog,
        base,
        head,
        before,
        ctx.policy.pr_link_prefix + str(pull["number"]),  # the link as the changelog writes it
        ctx.policy.pr_link_prefix,
        limits=policy_limits(ctx.policy.limits),
        size=len(base) + len(head) + len(before),
    )


@dataclass(frozen=True)
class Gathered:
    """What one build of the merge read: the facts the rules judge, and what the write needs."""

    facts: rules.MergeFacts
    pull: Mapping[str, Any]
    record: SweepRecord
    exists: bool
    base_sha: str
    base_tree: str
    checked_sha: str
    files: list[dict[str, Any]]
    touched: bool  # the PR changes the changelog
    resolution: rules.Resolution | rules.Refusal
    modes: dict[str, str]  # read when a tree will be built: for a fork's PR, or one that changes the changelog


async def gather(ctx: Context, number: int, *, again: bool = False) -> Gathered:
    """Read everything the checks and the merge need, as GitHub has it now (`again`: after GitHub refused a
    build, the PR is read anew)."""
    if again:
        ctx.forget(("pull", number))
    (record, exists), pull = await asyncio.gather(pr_state.load_record(ctx, number), ctx.pull(number))
    head_sha, base = pull["head"]["sha"], pull["base"]["ref"]
    fork = pr_state.pull_is_fork(ctx, pull)
    # a merge that lost its answer may have left the bot's commit on a branch of the repository: it is checked as
    # the head it names
    base_sha, files, labels, head_commit = await asyncio.gather(
        base_head(ctx, base),
        ctx.pr_file_entries(number),
        pr_state.counted_label_names(ctx, pull, record),
        ctx.git_commit(head_sha) if not fork else pr_state.nothing(),
    )
    checked_sha = (rules.prepared_for(head_commit, ctx.bot_login) if head_commit else None) or head_sha
    merge_base, base_commit = await asyncio.gather(ctx.merge_base(base_sha, head_sha), ctx.git_commit(base_sha))
    path = ctx.policy.paths.changelog
    touched = any(f.get("filename") == path for f in files)
    # the head's tree (each path's mode) is read now when a tree will be built: always for a fork's PR
    (verdict, candidates), conclusion, resolution, on_base, modes, stale = await asyncio.gather(
        choose_run(ctx, pull, record, labels),
        signoff_conclusion(ctx, checked_sha) if ctx.policy.merge.require_signoff else pr_state.nothing(),
        resolved_changelog(ctx, pull, base_sha, merge_base, touched),
        changed_since(ctx, merge_base, base_sha),
        head_modes(ctx, head_sha) if fork or touched else pr_state.nothing(),
        pr_state.stale_pin_files(ctx, record, checked_sha),
    )
    facts = rules.MergeFacts(
        state=str(pull.get("state")),
        merged=bool(pull.get("merged")),
        draft=bool(pull.get("draft")),
        base_ref=base,
        configured_base=ctx.default_branch,
        labels=tuple(labels),
        pin=verdict,
        candidates=candidates,
        signoff_required=ctx.policy.merge.require_signoff,
        signoff_conclusion=conclusion,
        changelog=resolution,
        conflicts=tuple(rules.conflicting_files([str(f.get("filename")) for f in files], on_base, path)),
        stale_pin=tuple(stale),
    )
    return Gathered(
        facts=facts,
        pull=pull,
        record=record,
        exists=exists,
        base_sha=base_sha,
        base_tree=str((base_commit.get("tree") or {}).get("sha") or ""),
        checked_sha=checked_sha,
        files=files,
        touched=touched,
        resolution=resolution,
        modes=modes or {},
    )


async def merge_action(ctx: Context, seen: Gathered, request: Request, reuse: rules.Reuse) -> MergePull:
    pull, number = seen.pull, seen.pull["number"]
    fork = pr_state.pull_is_fork(ctx, pull)
    way = rules.merge_way(fork=fork)
    path = ctx.policy.paths.changelog
    resolution = seen.resolution
    assert isinstance(resolution, rules.Resolution)
    changelog: str | None = None
    if seen.touched:
        head = await ctx.file_at(path, pull["head"]["sha"]) or b""
        if way == rules.GIT_DATA or resolution.content != head:
            changelog = resolution.content.decode("utf-8")
    changes: list[TreeChange] = []
    if way == rules.GIT_DATA or changelog is not None:
        # the whole merge over the base's tree: the PR's files as at its head, the changelog resolved
        changes = [TreeChange(**c) for c in rules.tree_changes(seen.files, seen.modes, path, changelog)]
    title = f"{pull.get('title') or 'Merge'} (#{number})"
    message = f"Merged with /{ctx.policy.commands.merge} by @{request.requester}; reuses sweep run {reuse.run_id}."
    if way == rules.GIT_DATA:  # the merge commit is the whole message: its first line names the PR, as GitHub's does
        message = f"{title}\n\n{message}"
    return MergePull(
        number=number,
        head_sha=pull["head"]["sha"],
        head_ref=str(pull["head"]["ref"]),
        base=str(pull["base"]["ref"]),
        base_sha=seen.base_sha,
        base_tree=seen.base_tree,
        way=way,
        method=ctx.policy.merge.method if way == rules.MERGE_API else "merge",
        changes=tuple(changes),
        title=title,
        message=message,
        checked_sha=seen.checked_sha,
        skip_marker=ctx.policy.skip_sweep_marker,
    )


@dataclass(frozen=True)
class Request:
    """Who asked for the merge and where the answer goes: a `/merge` comment (its reply and reactions), or the
    `sweep-gate` check's "Merge" button (a reply of its own, per check run)."""

    number: int
    requester: str
    asked_at: str
    comment_id: int | None
    reply_purpose: str
    edited: bool = False

    def answered(self, accepted: bool) -> list[Action]:
        return answered(self.comment_id, accepted, edited=self.edited) if self.comment_id is not None else []

    def reply(self, ctx: Context, variables: dict[str, Any]) -> Comment:
        return pr_state.reply_comment(ctx, self.number, self.comment_id, variables, purpose=self.reply_purpose)


def from_comment(call: CommentCommand) -> Request:
    return Request(
        call.number,
        call.author,
        call.given_at,
        call.comment_id,
        pr_state.reply_purpose(call.comment_id),
        call.edited,
    )


async def pin_for_merge(ctx: Context, seen: Gathered, request: Request, run_id: int) -> SweepRecord:
    """Write the run the merge chose into the gate's record (as `/use` would) before anything is merged."""
    pin = Pin(run_id, request.comment_id or 0, request.requester, request.asked_at, had_primary=True)
    status = await pr_state.own_comment(ctx, seen.pull["number"], pr_state.STATUS_PURPOSE)
    record = seen.record.pinned(pin)
    if status is not None:
        await ctx.write_now(
            Comment(seen.pull["number"], pr_state.STATUS_PURPOSE, record.written_into(status.get("body")))
        )
    return record


async def merge_requested(
    notify: NotifyMerge, record_changed: pr_state.RecordChanged, ctx: Context, call: CommentCommand
) -> list[Action]:
    """A maintainer's `/merge` (the dispatcher checked who wrote it)."""
    return await run_merge(notify, record_changed, ctx, from_comment(call))


async def merge_pressed(
    notify: NotifyMerge, record_changed: pr_state.RecordChanged, event: sansio.Event, ctx: Context
) -> list[Action]:
    """The `sweep-gate` check's "Merge" button: what `/merge` does, for a person GitHub confirms can write; anyone
    else's press does nothing but a log line (GitHub shows the button to every reader)."""
    data = event.data
    check = data.get("check_run") or {}
    if (data.get("requested_action") or {}).get("identifier") != check_buttons.MERGE:
        return []
    if not own_check_run(check, check_buttons.GATE_CHECK, ctx.bot_login):
        return []
    number = await pr_state.pr_of_check(ctx, check)
    sender = (data.get("sender") or {}).get("login") or ""
    writer = await ctx.writer(sender) if number is not None and sender and sender != ctx.bot_login else False
    logs.event("merge button pressed", by=sender, pr=number, writer=writer)
    if number is None or writer is not True:
        return []
    asked_at = pr_state.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")
    request = Request(number, sender, asked_at, None, f"merge-button-{check.get('id')}")
    return await run_merge(notify, record_changed, ctx, request)


async def run_merge(
    notify: NotifyMerge, record_changed: pr_state.RecordChanged, ctx: Context, request: Request
) -> list[Action]:
    """Check, then merge once; the answer as `request` wants it."""
    number = request.number
    first, _ = await asyncio.gather(ctx.pull(number), ctx.comments(number))  # the record's comments read meanwhile
    async with base_branch_lock(ctx.repo, str(first["base"]["ref"])):
        error = ""
        for build in range(MAX_BUILDS):
            seen = await gather(ctx, number, again=build > 0)
            if seen.facts.merged:
                return await already_merged(ctx, seen, notify, request)
            refusals = rules.merge_refusals(seen.facts, ctx.policy)
            reuse = rules.reused_run(seen.facts)
            if refusals or reuse is None:
                variables = reply_variables(ctx, request, "refused", refusals=[shown_refusal(r) for r in refusals])
                return [request.reply(ctx, variables), *request.answered(False)]
            record = seen.record
            if reuse.pinned_by_merge:
                record = await pin_for_merge(ctx, seen, request, reuse.run_id)
            action = await merge_action(ctx, seen, request, reuse)
            try:
                result = await ctx.write_now(action)
            except gidgethub.BadRequest as exc:
                if int(exc.status_code) not in REFUSED_STATUSES:
                    raise
                error = str(exc)[:200]
                logs.event("merge refused by GitHub; building it again", logging.WARNING, pr=number, error=error)
                continue
            sha = str(result.data.get("sha") or "")
            return await merged(ctx, request, seen, record, reuse, sha, notify, record_changed)
        variables = reply_variables(ctx, request, "github_refused", error=error)
        return [request.reply(ctx, variables), *request.answered(False)]


async def already_merged(ctx: Context, seen: Gathered, notify: NotifyMerge, request: Request) -> list[Action]:
    """A PR merged before this request ran (by an earlier delivery of it, or by anyone): the notice and the ingest
    request are made sure of, nothing is merged."""
    if seen.exists:
        await notify(ctx, seen.pull, seen.record, after_merge=False)
    return request.answered(True)


async def merged(
    ctx: Context,
    request: Request,
    seen: Gathered,
    record: SweepRecord,
    reuse: rules.Reuse,
    sha: str,
    notify: NotifyMerge,
    record_changed: pr_state.RecordChanged,
) -> list[Action]:
    """After the merge: the notice and the ingest request (once), the reply when the merge pinned the run."""
    number = request.number
    pull = {**seen.pull, "state": "closed", "merged": True, "merge_commit_sha": sha or None}
    await notify(ctx, pull, record, after_merge=False)
    actions: list[Action] = []
    if reuse.pinned_by_merge:
        run_url = web(ctx.html_url, "actions", "runs", reuse.run_id)
        variables = reply_variables(ctx, request, "merged", run={"id": reuse.run_id, "url": run_url}, sha=sha)
        actions.append(request.reply(ctx, variables))
        actions.extend(await record_changed(ctx, number, record, seen.exists))
    return [*actions, *request.answered(True)]


def feature(notify: NotifyMerge, record_changed: pr_state.RecordChanged) -> Feature:
    """The merge feature: `notify` is the reuse feature's merge notice, `record_changed` the gate's (both wired by
    handlers/registry.py)."""
    router = routing.Router()

    async def merge_button(event: sansio.Event, ctx: Context) -> list[Action]:
        return await merge_pressed(notify, record_changed, event, ctx)

    router.add(merge_button, "check_run", action="requested_action")
    route = CommandRoute(functools.partial(merge_requested, notify, record_changed), refusal=merge_refusal)
    return Feature(router, commands={"merge": route})
