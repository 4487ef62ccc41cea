"""Pin a finished sweep run for reuse: `/use <run_id>` and `/reuse-sweep-run [<run_id>]` by a maintainer; stage
it again with `/stage-results [<run_id>]`; at merge, say which run the merge reuses and ask the results service
to ingest it (`ingest-results`), or say that nothing will be ingested until a maintainer pins a run; a `/use`
after the merge asks for the ingest then.

The ingest request goes out once per merged PR and run: the merge notice (the bot's `merge-reuse` comment) is
written first with the request in its hidden record, then the request is sent with the notice's id in it. A
redelivered `closed` event, or another `/use` of the same run, finds the record and sends nothing (the
executor's ledger stops a repeat within one delivery; the record stops it across deliveries and a lost journal).

The command dispatcher (handlers/commands.py) decides that a command runs and that its author may run it; the
pin itself lives in the gate's record: written into the status comment's record before the reply says so,
then shown by the gate, which renders the status again when told (`RecordChanged`, wired by the registry).

The pin a comment holds follows that comment's latest text: deleted, or edited so that it pins
nothing, the pin is withdrawn; edited by its author into another pin command, that command decides, pinning its
run in place of the old one or, refused by the pin's rules or by the dispatcher, withdrawing it. A withdrawal is
kept in the record with its reason, and the status says it."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Mapping
from typing import Any, TypedDict

import gidgethub
from gidgethub import sansio

from bot.core import routing
from bot.core.processing import Context
from bot.effects.actions import Action, Comment, RepositoryDispatch
from bot.rules import pins, pull_request
from bot.rules.commands import Command
from bot.rules.links import web
from bot.rules.markers import hidden_record, read_hidden_record
from bot.rules.policy import Policy
from bot.rules.run_summary import summarize
from bot.rules.sweep_record import Pin, SweepRecord
from bot.telemetry import logs
from handlers import pr_state
from handlers.commands import PERMISSION_UNKNOWN, UNAUTHORIZED, CommandRoute, CommentCommand, Feature, answered

MERGE_PURPOSE = pr_state.MERGE_PURPOSE
INGEST_RECORD = "ingest-request"  # the merge notice's hidden line: <!-- sweepbot-ingest-request {...} -->

router = routing.Router()


class IngestState(TypedDict):
    """The merge notice's (and a post-merge `/use` reply's) ingest section."""

    state: str  # "requested", "dispatch_failed" or "off" (no results service: nothing was sent)
    repository: str
    error: str | None


class OtherRun(TypedDict):
    """A run a bare `/reuse-sweep-run` passed over, and why (a pins verdict code)."""

    id: int
    code: str


# -- the pin commands ------------------------------------------------------------------------------


def run_day(run: Mapping[str, Any]) -> str:
    """The day a run started, YYYY-MM-DD, as the requests carry it ("" when GitHub gave no time)."""
    return str(run.get("run_started_at") or run.get("created_at") or "")[:10]


def run_fields(pr_number: int, run: Mapping[str, Any]) -> dict[str, str]:
    """What both requests to the results service say of the run: the PR, the run, its attempt and its day."""
    return {
        "pr-number": str(pr_number),
        "run-id": str(run["id"]),
        "run-attempt": str(run.get("run_attempt") or 1),
        "run-date": run_day(run),
    }


def staging_payload(pr_number: int, run: Mapping[str, Any], requester: str, reply_id: int) -> dict[str, str]:
    """The `stage-results` client_payload (kebab-case, all strings), as the results service reads it."""
    return {**run_fields(pr_number, run), "requested-by": requester, "comment-id": str(reply_id)}


def ingest_payload(
    pr_number: int, run: Mapping[str, Any], merge_sha: str, pinned_by: str, notice_id: int
) -> dict[str, str]:
    """The `ingest-results` client_payload (kebab-case, all strings): which merged PR, which run (and attempt and
    date) to ingest, the merge commit, who pinned the run, and the merge notice the service may update."""
    return {
        **run_fields(pr_number, run),
        "merge-sha": merge_sha or "",
        "pinned-by": pinned_by,
        "comment-id": str(notice_id),
    }


def reply_variables(
    ctx: Context,
    command: Command,
    requester: str,
    outcome: str,
    run: Mapping[str, Any] | None,
    verdict: pins.Verdict | None,
    others: list[OtherRun],
    *,
    fork: bool = False,
    record: SweepRecord | None = None,
) -> dict[str, Any]:
    summary = summarize(run) if run else None
    shown = (
        None
        if run is None
        else {
            "id": run["id"],
            "url": run.get("html_url") or web(ctx.html_url, "actions", "runs", run["id"]),
            "head_sha": pr_state.tested_sha(ctx, run, record),
            "conclusion": run.get("conclusion") or "",
            "summary": summary.text if summary else None,
        }
    )
    commands = ctx.policy.commands
    return {
        "outcome": outcome,
        "command": command.source.text,
        "requester": requester,
        "run": shown,
        "verdict": None if verdict is None else {"code": verdict.code, "params": dict(verdict.params)},
        "others": others,
        "workflow": pins.sweep_workflow(ctx.policy, fork=fork),
        "staging": None,
        "use_command": f"/{commands.use}",
        "reuse_command": f"/{commands.reuse}",
        "stage_command": f"/{commands.stage}",
        "ingest": None,
    }


async def choose(
    ctx: Context,
    command: Command,
    pull: Mapping[str, Any],
    record: SweepRecord,
    named: pr_state.PinnedReads | None = None,
) -> tuple[str, Mapping[str, Any] | None, pins.Verdict | None, list[OtherRun]]:
    """(outcome, run, verdict, others) for an authorized pin command; `named`: the run the command names and its
    artifacts, read already (pr_state.read_pinned)."""
    if command.run_id is not None:
        run, verdict = await pr_state.judge_pinned(ctx, command.run_id, pull, record, named)
        return ("accepted" if verdict.ok else "refused"), run, verdict, []
    labels = await pr_state.counted_label_names(ctx, pull, record)
    chosen = await pr_state.newest_eligible_run(ctx, pull, record, labels)
    others = [OtherRun(id=run["id"], code=verdict.code) for run, verdict in chosen.others]
    if chosen.run is None:
        return "no_eligible_run", None, None, others
    return "accepted", chosen.run, chosen.verdict, others


async def pin_requested(
    record_changed: pr_state.RecordChanged, read_ahead: pr_state.ReadAhead, ctx: Context, call: CommentCommand
) -> list[Action]:
    """A maintainer's `/use` or `/reuse-sweep-run` (the dispatcher checked both): judge the run, record the pin
    (the gate's record holds it), reply, stage it for `/use`, and let the gate show it.

    The order is what the maintainer waits for, and what keeps the reply true: the pin is written into the
    record of the status comment as `list comments` gave it (one edit, the rest of the comment as it was), then
    the reply says "pinned", then 👍, then 👀 goes and staging is asked for; the gate's reads for the pin are
    made meanwhile, and the gate renders the status with the pin (and the check run) last. A reply saying
    "pinned" is never on GitHub before the pin is: if recording fails, neither the reply nor staging happens; a
    retry finds the pin recorded (the same edit, nothing to send) and the reply made (found, not made again).

    An edit that changed the command of the comment holding the pin replaces that pin when accepted (the record
    goes from the old pin to the new one in one write) and withdraws it when refused: the status records the
    withdrawal before the reply says "refused"."""
    number, command, requester = call.number, call.given, call.author
    # the record, the PR (through the delivery's reader: the gate reads it no more) and the run the command names
    # with its artifacts, together: the run id is in the command, and nothing about the run depends on the others
    # (and the label events, which say which labels count: kept by the delivery's reader)
    (record, exists), pull, named, _ = await asyncio.gather(
        pr_state.load_record(ctx, number),
        ctx.pull(number),
        pr_state.read_pinned(ctx, command.run_id) if command.run_id is not None else pr_state.nothing(),
        ctx.label_events(number),
    )
    outcome, run, verdict, others = await choose(ctx, command, pull, record, named)
    primary = await has_primary(ctx, pull, record)
    variables = reply_variables(
        ctx, command, requester, outcome, run, verdict, others, fork=pr_state.pull_is_fork(ctx, pull), record=record
    )
    if outcome != "accepted" or run is None:  # refused (accepted comes with its run): an earlier pin stays as it was,
        # unless its comment held it
        answer = [
            pr_state.reply_comment(ctx, number, call.comment_id, variables),
            *answered(call.comment_id, False, edited=call.edited),
        ]
        if not (call.edited and holds(record.pin, call)):
            return answer
        gate = await record_changed(ctx, number, record.unpinned(pins.REFUSED, call.editor), exists)
        # the withdrawal recorded first, then the reply and its 👎, then the rest of what the gate calls for
        return [a for a in gate if records_the_pin(a)] + answer + [a for a in gate if not records_the_pin(a)]
    later: list[Action] = []
    pin = Pin(run["id"], call.comment_id, requester, call.given_at, had_primary=primary)
    wins = record.pin is None or record.pin.created_at <= pin.created_at  # else a newer pin already won
    status = await pr_state.own_comment(ctx, number, pr_state.STATUS_PURPOSE) if wins else None
    reading = asyncio.ensure_future(read_ahead(ctx, number, record.pinned(pin), exists)) if status else None
    try:
        if status is not None:
            body = record.pinned(pin).written_into(status.get("body"))
            await ctx.write_now(Comment(number, pr_state.STATUS_PURPOSE, body))
        elif wins:  # no status comment to write it into (an accepted pin names a run its record holds): the gate
            # writes the comment, with the pin, before the reply; what else it calls for comes after the reply
            for action in await record_changed(ctx, number, record.pinned(pin), exists):
                if records_the_pin(action):
                    await ctx.write_now(action)
                else:
                    later.append(action)
        if wins:
            record = record.pinned(pin)
        answer = answered(call.comment_id, True, edited=call.edited)
        if command.kind == "use" and await stage(
            ctx, number, call.comment_id, run, requester, variables, primary, answer=answer
        ):
            answer = []  # given with the reply, before the staging request
        if pull.get("merged") and record.pin is not None and record.pin.run_id == run["id"]:
            variables["ingest"] = await notify_merge(ctx, pull, record, after_merge=True)
        elif answer:  # the reply and its 👍 now, before the gate renders the status
            await ctx.write_now(pr_state.reply_comment(ctx, number, call.comment_id, variables))
            for action in answer:
                await ctx.write_now(action)
            answer = []
    finally:
        if reading is not None:  # what failed to be read is read again by the gate
            await asyncio.gather(reading, return_exceptions=True)
    if status is not None:  # the gate shows the pin: the status comment rendered whole, the check run
        later = await record_changed(ctx, number, record, exists)
    return [pr_state.reply_comment(ctx, number, call.comment_id, variables), *answer, *later]


def records_the_pin(action: Action) -> bool:
    """The write that records a pin: the gate's status comment, which holds the record."""
    return isinstance(action, Comment) and action.purpose == pr_state.STATUS_PURPOSE


def holds(pin: Pin | None, call: CommentCommand) -> bool:
    """Whether `pin` is the one `call`'s comment holds, and what `call` delivers is not older than it (a late
    delivery of an edit made before the pin changes nothing); a deletion always counts."""
    if pin is None or pin.comment_id != call.comment_id:
        return False
    at = call.given_at
    return call.action == "deleted" or not at or pin.created_at <= at


def pin_refusal(ctx: Context, call: CommentCommand, outcome: str) -> dict[str, Any]:
    """The reply's variables for a pin command its author may not run (the dispatcher's refusal)."""
    return reply_variables(ctx, call.given, call.author, outcome, None, None, [])


REFUSAL_WITHDRAWALS = {UNAUTHORIZED: pins.UNAUTHORIZED, PERMISSION_UNKNOWN: pins.PERMISSION_UNKNOWN}


async def pin_not_run(
    record_changed: pr_state.RecordChanged, ctx: Context, call: CommentCommand, outcome: str
) -> list[Action]:
    """The dispatcher refused a pin command (`outcome`: its author may not run it, or GitHub would not confirm
    they may). When an edit of the comment holding the pin gave it, that pin is withdrawn: pin_comment_changed
    left it to this command, and the comment's latest text is one its author may not run."""
    if not call.edited:
        return []
    record, exists = await pr_state.load_record(ctx, call.number)
    if not holds(record.pin, call):
        return []
    return await record_changed(ctx, call.number, record.unpinned(REFUSAL_WITHDRAWALS[outcome], call.editor), exists)


async def pin_comment_changed(
    record_changed: pr_state.RecordChanged, ctx: Context, call: CommentCommand
) -> list[Action]:
    """The comment holding the pin was deleted or edited: the pin follows its latest text (pins.held_pin_change).
    It is withdrawn now, stays, or is left to the author's new pin command, which the dispatcher runs next: never
    withdrawn first and pinned again after, which would leave a moment without a pin, when a sweep could start."""
    record, exists = await pr_state.load_record(ctx, call.number)
    if not holds(record.pin, call):
        return []
    change = pins.held_pin_change(call.before, call.command, deleted=call.action == "deleted", by_author=call.by_author)
    if change is None or change == pins.NEW_PIN_COMMAND:
        return []
    return await record_changed(ctx, call.number, record.unpinned(change, call.editor), exists)


async def has_primary(ctx: Context, pull: Mapping[str, Any], record: SweepRecord) -> bool:
    """Whether a primary label that counts is on the PR (`pr_state.counted_labels`: a confirmed writer's)."""
    return pull_request.carries_primary(await pr_state.counted_label_names(ctx, pull, record), ctx.policy)


async def stage(
    ctx: Context,
    number: int,
    comment_id: int,
    run: Mapping[str, Any],
    requester: str,
    variables: dict[str, Any],
    primary: bool,
    *,
    answer: tuple[Action, ...] | list[Action] = (),
) -> bool:
    """`/use <run_id>` asks the results service to stage the run; the reply says so, and is what the service
    updates (its id goes into the request). Sets `variables["staging"]`. Whether the reply was posted, and
    `answer` (the command's reactions) with it, before the request: what the maintainer waits for goes first.
    With no results service (policy `results.mode: none`) nothing is sent, and the reply says so."""
    if not ctx.policy.results.enabled:
        variables["staging"] = pr_state.staging_state("off", ctx.policy)
        return False
    if not primary:
        variables["staging"] = pr_state.staging_state("needs_primary", ctx.policy)
        return False
    variables["staging"] = pr_state.staging_state("requested", ctx.policy)
    posted = await ctx.write_now(pr_state.reply_comment(ctx, number, comment_id, variables))
    for action in answer:
        await ctx.write_now(action)
    try:
        await ctx.write_now(
            RepositoryDispatch(
                ctx.policy.results.repository,
                ctx.policy.results.stage,
                staging_payload(number, run, requester, int(posted.id or 0)),
            )
        )
    except gidgethub.GitHubException as exc:  # shown in the reply; a maintainer re-stages by hand
        logs.event("staging request failed", logging.ERROR, run=run["id"], error=f"{type(exc).__name__}: {exc}")
        variables["staging"] = pr_state.staging_state("dispatch_failed", ctx.policy, error=str(exc)[:200])
    return True


def merge_outcome(pin: Pin | None, verdict: pins.Verdict | None) -> str:
    """What the merge comment says: the pinned run is reused, the pin is no longer valid, or nothing is pinned."""
    if pin is None:
        return "none"
    return "reused" if verdict is not None and verdict.ok else "invalid"


def ingest_requested(shown: object, run_id: int) -> bool:
    """Whether a merge notice's record (`shown`, read back from its hidden line) says the ingest of `run_id` was
    asked for already: then nothing is sent again. A request that failed to go out is sent again."""
    return (
        isinstance(shown, dict)
        and type(shown.get("run_id")) is int
        and shown["run_id"] == run_id
        and shown.get("state") == "requested"
    )


async def shown_ingest_request(ctx: Context, number: int) -> object:
    """The hidden record of the bot's merge notice on PR `number`, or None."""
    notice = await pr_state.own_comment(ctx, number, MERGE_PURPOSE)
    return read_hidden_record(INGEST_RECORD, notice.get("body")) if notice is not None else None


def merge_notice(
    ctx: Context,
    number: int,
    outcome: str,
    pin: Pin | None,
    run: Mapping[str, Any] | None,
    verdict: pins.Verdict | None,
    ingest: IngestState | None,
    *,
    after_merge: bool,
    record: SweepRecord | None = None,
) -> Comment:
    summary = summarize(run) if run else None
    variables = {
        "outcome": outcome,
        "after_merge": after_merge,
        "pin": None
        if pin is None
        else {
            "run_id": pin.run_id,
            "by": pin.by,
            "url": (run or {}).get("html_url") or web(ctx.html_url, "actions", "runs", pin.run_id),
            "head_sha": pr_state.tested_sha(ctx, run, record) if run else "",
            "summary": summary.text if summary else None,
        },
        "verdict": None if verdict is None else {"code": verdict.code, "params": dict(verdict.params)},
        "ingest": ingest,
        "report": None,
        "use_command": f"/{ctx.policy.commands.use}",
    }
    # the variables kept in the notice: the results service's counts are added to them and the notice re-rendered
    body = hidden_record(pr_state.NOTICE_RECORD, variables) + "\n" + ctx.render("merge_reuse", **variables)
    if ingest is not None and pin is not None:  # an ingest is always of the pin
        body = hidden_record(INGEST_RECORD, {"run_id": pin.run_id, "state": ingest["state"]}) + "\n" + body
    return Comment(number, MERGE_PURPOSE, body)


def ingest_state(state: str, policy: Policy, error: str | None = None) -> IngestState:
    """The ingest section of `state`: "requested", "dispatch_failed" or "off"."""
    return IngestState(state=state, repository=policy.results.repository, error=error)


async def notify_merge(
    ctx: Context, pull: Mapping[str, Any], record: SweepRecord, *, after_merge: bool
) -> IngestState | None:
    """Judge the winning pin of the merged `pull` again, write the merge notice, and ask the results service to
    ingest the run when it still qualifies (once: see the module's docstring). The ingest section shown (None
    when nothing is to be ingested). With no results service (policy `results.mode: none`) the notice says which
    run the merge reuses and that nothing is sent, whatever the pin's outcome, and no request goes out."""
    number, pin = pull["number"], record.pin
    run: Mapping[str, Any] | None = None
    verdict: pins.Verdict | None = None
    if pin is not None:
        run, verdict = await pr_state.judge_pinned(ctx, pin.run_id, pull, record)
    outcome = merge_outcome(pin, verdict)
    if not ctx.policy.results.enabled:
        off = ingest_state("off", ctx.policy)
        await ctx.write_now(
            merge_notice(ctx, number, outcome, pin, run, verdict, off, after_merge=after_merge, record=record)
        )
        return off
    if outcome != "reused" or pin is None or run is None:  # a reused pin has its run
        await ctx.write_now(
            merge_notice(ctx, number, outcome, pin, run, verdict, None, after_merge=after_merge, record=record)
        )
        return None
    ingest = ingest_state("requested", ctx.policy)
    if ingest_requested(await shown_ingest_request(ctx, number), pin.run_id):
        return ingest  # asked already: the notice says so and stays as it is
    notice = await ctx.write_now(
        merge_notice(ctx, number, outcome, pin, run, verdict, ingest, after_merge=after_merge, record=record)
    )
    payload = ingest_payload(number, run, str(pull.get("merge_commit_sha") or ""), pin.by, int(notice.id or 0))
    try:
        await ctx.write_now(RepositoryDispatch(ctx.policy.results.repository, ctx.policy.results.ingest, payload))
    except gidgethub.GitHubException as exc:  # shown in the notice; a maintainer asks again with `/use`
        logs.event("ingest request failed", logging.ERROR, run=run["id"], error=f"{type(exc).__name__}: {exc}")
        ingest = ingest_state("dispatch_failed", ctx.policy, error=str(exc)[:200])
        await ctx.write_now(
            merge_notice(ctx, number, outcome, pin, run, verdict, ingest, after_merge=after_merge, record=record)
        )
    return ingest


async def merged(event: sansio.Event, ctx: Context) -> list[Action]:
    """At merge, judge the winning pin again and say which run the merge reuses (and ask for its ingest), or
    loudly that none is."""
    pull = event.data["pull_request"]
    if not pull.get("merged"):
        return []
    record, exists = await pr_state.load_record(ctx, pull["number"])
    if not exists:
        return []  # the PR never asked for a sweep nor touched the changelog
    await notify_merge(ctx, pull, record, after_merge=False)
    return []


# -- `/stage-results` ------------------------------------------------------------------------------


def stage_variables(ctx: Context, call: CommentCommand) -> dict[str, Any]:
    commands = ctx.policy.commands
    return {
        "template": "stage_reply",
        "command": call.given.source.text,
        "requester": call.author,
        "stage_command": f"/{commands.stage}",
        "use_command": f"/{commands.use}",
        "run": None,
        "verdict": None,
        "staging": None,
    }


def stage_refusal(ctx: Context, call: CommentCommand, outcome: str) -> dict[str, Any]:
    """The reply's variables for a `/stage-results` its author may not run (the dispatcher's refusal)."""
    return {**stage_variables(ctx, call), "outcome": outcome}


async def stage_requested(ctx: Context, call: CommentCommand) -> list[Action]:
    """A maintainer's `/stage-results [<run_id>]`: ask the results service to stage a run again (the pinned one
    by default)."""
    number, command = call.number, call.given
    variables = stage_variables(ctx, call)
    if not ctx.policy.results.enabled:  # no results service: nothing to stage to, nothing read
        variables["outcome"] = "no_results_service"
        return [
            pr_state.reply_comment(ctx, number, call.comment_id, variables),
            *answered(call.comment_id, False, edited=call.edited),
        ]
    record, _ = await pr_state.load_record(ctx, number)
    run_id = command.run_id or (record.pin.run_id if record.pin else None)
    if run_id is None:
        variables["outcome"] = "nothing_to_stage"
    else:
        pull = await ctx.pull(number)
        run, verdict = await pr_state.judge_pinned(ctx, run_id, pull, record)
        variables["run"] = {
            "id": run_id,
            "url": (run or {}).get("html_url") or web(ctx.html_url, "actions", "runs", run_id),
        }
        if not verdict.ok or run is None:  # an accepted run exists
            variables.update(outcome="refused", verdict={"code": verdict.code})
        else:
            variables["outcome"] = "requested"
            await stage(ctx, number, call.comment_id, run, call.author, variables, await has_primary(ctx, pull, record))
    staged = variables["outcome"] == "requested" and variables["staging"]["state"] == "requested"
    return [
        pr_state.reply_comment(ctx, number, call.comment_id, variables),
        *answered(call.comment_id, staged, edited=call.edited),
    ]


router.add(merged, "pull_request", action="closed")


def feature(record_changed: pr_state.RecordChanged, read_ahead: pr_state.ReadAhead = pr_state.no_read_ahead) -> Feature:
    """The reuse feature, its pins kept by `record_changed` (the gate's; handlers/registry.py wires it, and the
    gate's reads for a pin, `read_ahead`, made while the pin's reply is written)."""
    pin = CommandRoute(
        functools.partial(pin_requested, record_changed, read_ahead),
        refusal=pin_refusal,
        on_refusal=functools.partial(pin_not_run, record_changed),
    )
    return Feature(
        router,
        commands={"use": pin, "reuse": pin, "stage": CommandRoute(stage_requested, refusal=stage_refusal)},
        comment_changed=(functools.partial(pin_comment_changed, record_changed),),
    )
