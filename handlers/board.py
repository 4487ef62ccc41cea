"""The maintainers' board: one issue, created once and edited in place, listing every open PR the bot tracks with its
state, grouped by what a maintainer does next (bot/rules/board.py), the runner pools' queues, and the PRs where a
person must check whether a sweep started.

Everything on it is read from what the PRs show: the PR, the bot's status comment and its record, the sign-off
verdicts, a pinned run's artifacts. It is found again by its marker among the bot's issues carrying its label
(closed ones too), so losing the journal never makes a second one.

Edits are bounded: a delivery that changes a PR waits until the board may be edited again (`board.edit_interval`
after the last edit, and at least SETTLE, so a burst settles), then renders it once; the deliveries arriving
meanwhile leave it to that one. The one that waits hands the wait on to the next delivery in its PR's lane as soon
as one arrives there, so no PR's events wait behind the board. A burst of events is one edit per interval per
process (per replica).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

from gidgethub import sansio

from bot.core import routing
from bot.core.processing import Context
from bot.effects.actions import Action, EnsureLabel, Issue
from bot.effects.comments import PER_PAGE
from bot.rules import board as rules
from bot.rules.dispatched_runs import DISPATCH_ID
from bot.rules.gate import ACTIVE_STATUSES
from bot.rules.links import repo_api, web
from bot.rules.markers import BODY_LIMIT, is_bots, purpose_of, read_hidden_record
from bot.rules.pull_request import is_fork, label_key, label_names, primary_names
from bot.rules.signoff import PURPOSE_PREFIX as SIGNOFF_PREFIX
from bot.rules.sweep_queue import Entry, ordered, plan
from bot.rules.sweep_record import SweepRecord
from bot.telemetry import logs
from handlers import pr_state

PURPOSE = "board"
UNKNOWN_PREFIX = "dispatch-unknown-"  # the executor's comment on a dispatch it could not reconcile
SETTLE = 2.0  # seconds a burst is given before the board is rendered
POLL = 0.25  # seconds between two looks, while waiting, for a later delivery in the lane to hand the wait to
LABEL_COLOR = "5319e7"
ROOM = 512  # characters kept free under GitHub's limit for the marker and the layout
PR_ACTIONS = (
    "opened",
    "reopened",
    "closed",
    "synchronize",
    "labeled",
    "unlabeled",
    "ready_for_review",
    "converted_to_draft",
    "edited",
)

router = routing.Router()
_last_edit: dict[str, float] = {}  # repository -> when this process last rendered its board (monotonic)
_waiting: set[str] = set()  # repositories whose next edit a delivery of this process waits to make
clock = time.monotonic
sleep = asyncio.sleep


async def board_changed(event: sansio.Event, ctx: Context) -> list[Action]:
    settings = ctx.policy.board
    if not settings.enabled:
        return []
    key = ctx.repo.casefold()
    if key in _waiting:
        return []  # a delivery of this process edits the board after this event's writes: it reads them then
    _waiting.add(key)
    try:
        deadline = max(clock() + SETTLE, _last_edit.get(key, -math.inf) + settings.edit_interval)
        while (left := deadline - clock()) > 0:
            if any(kind in KINDS for kind in ctx.waiting()):
                return []  # a later delivery in this PR's lane takes the wait over: the lane never waits for it
            await sleep(min(left, POLL))
    finally:
        _waiting.discard(key)  # a change from now on is the next edit's: this one reads GitHub after this line
    _last_edit[key] = clock()
    return await board_actions(ctx)


async def board_actions(ctx: Context) -> list[Action]:
    """The board issue as GitHub should show it now: its label, and the issue created or edited."""
    settings = ctx.policy.board
    pulls = [p async for p in ctx.gh.getiter(repo_api(ctx.repo, "pulls", state="open", per_page=PER_PAGE))]
    for pull in pulls:
        ctx.forget(("comments", pull["number"]))  # read as GitHub shows them now, not as this delivery read them
    comments = await asyncio.gather(*(ctx.comments(p["number"]) for p in pulls))
    tracked = [(p, c) for p, c in zip(pulls, comments) if _status(ctx, c) is not None]
    records = {p["number"]: SweepRecord.parse(_status(ctx, c)) for p, c in tracked}
    pinned = {number: record.pin.run_id for number, record in records.items() if record.pin is not None}
    expires = dict(zip(pinned, await asyncio.gather(*(_expiry(ctx, run_id) for run_id in pinned.values()))))
    queues, places = _queues(ctx, records)
    rows = [
        _row(ctx, pull, records[pull["number"]], comments, places.get(pull["number"]), expires.get(pull["number"]))
        for pull, comments in tracked
    ]
    variables = {"queues": queues, "tracked": len(rows), "interval": settings.edit_interval}

    def render(shown: Sequence[rules.Row], left_out: int) -> str:
        groups = [{"group": g, "rows": [_shown(r) for r in rs]} for g, rs in rules.sections(shown)]
        return ctx.render("board", groups=groups, left_out=left_out, **variables)

    body, cut = rules.fitted(rows, render, BODY_LIMIT - ROOM)
    logs.event("board rendered", tracked=len(rows), cut=cut, chars=len(body))
    label = EnsureLabel(settings.label, LABEL_COLOR, ctx.templates.title("board_label")[:100])
    return [label, Issue(PURPOSE, settings.title, body, labels=(settings.label,), any_state=True)]


def _status(ctx: Context, comments: Sequence[dict[str, Any]]) -> str | None:
    for comment in comments:
        if is_bots(comment, ctx.bot_login) and purpose_of(comment.get("body")) == pr_state.STATUS_PURPOSE:
            return str(comment.get("body") or "")
    return None


async def _expiry(ctx: Context, run_id: int) -> str | None:
    """When the first of the pinned run's artifacts expires (None: none listed, or they cannot be listed now)."""
    try:
        artifacts = await pr_state.run_artifacts(ctx, run_id)
    except Exception as exc:  # the board is a view: a run it cannot list shows "no artifacts listed"
        logs.event("board: artifacts not listed", run=run_id, error=f"{type(exc).__name__}: {exc}")
        return None
    dates = [str(a["expires_at"]) for a in artifacts if a.get("expires_at") and not a.get("expired")]
    return min(dates, default=None)


def _queues(
    ctx: Context, records: Mapping[int, SweepRecord]
) -> tuple[list[dict[str, Any]], dict[int, tuple[str, int]]]:
    """Each capped pool's sweeps running and waiting (in order), and each waiting PR's (pool, position)."""
    limits = ctx.policy.sweeps.concurrency
    running: list[Entry] = []
    waiting: list[Entry] = []
    for number, record in records.items():
        place = pr_state.queue_entry(number, record)
        if place is not None:
            (running if place[0] == "running" else waiting).append(place[1])
    turn = plan(limits, running, waiting)
    queues = [
        {
            "pool": pool,
            "limit": limit,
            "running": sorted(e.number for e in running if pool in e.pools),
            "waiting": [e.number for e in ordered(waiting) if pool in e.pools and e.number not in turn.start],
        }
        for pool, limit in limits.items()
    ]
    return queues, {n: (p.pool, p.position) for n, p in turn.waiting.items()}


def _row(
    ctx: Context,
    pull: Mapping[str, Any],
    record: SweepRecord,
    comments: Sequence[dict[str, Any]],
    place: tuple[str, int] | None,
    expires: str | None,
) -> rules.Row:
    number, head = pull["number"], pull["head"]["sha"]
    fork = is_fork(pull, ctx.repo)
    asks = any(label_key(n) in primary_names(ctx.policy) for n in label_names(pull))
    status = _status(ctx, comments) or ""
    latest = record.latest
    sweep, run_id, run_url, since = rules.NO_SWEEP, None, None, None
    if place is not None:
        sweep, since = rules.QUEUED, record.queued.since if record.queued else None
    elif latest is not None and latest.head_sha == head:
        run_id, run_url, since = (
            latest.run_id,
            latest.html_url or web(ctx.html_url, "actions", "runs", latest.run_id),
            latest.started_at,
        )
        if latest.status in ACTIVE_STATUSES or not latest.finished:
            sweep = rules.RUNNING
        elif latest.conclusion == "success":
            sweep = rules.PASSED
        elif latest.conclusion in ("cancelled", "skipped", "neutral"):
            sweep = rules.CANCELLED
        else:
            sweep = rules.FAILED
    verdicts = [
        read_hidden_record("signoff", c.get("body"))
        for c in comments
        if is_bots(c, ctx.bot_login) and (purpose_of(c.get("body")) or "").startswith(SIGNOFF_PREFIX)
    ]
    current = [v for v in verdicts if isinstance(v, dict) and v.get("head_sha") == head]
    outcomes = {str(v.get("outcome")) for v in current}
    signoff = next(
        (o for o in (rules.SIGNED, rules.SIGNOFF_FAILED, rules.SIGNOFF_WAITS) if o in outcomes), rules.UNSIGNED
    )
    unknown = tuple(
        purpose.removeprefix(UNKNOWN_PREFIX)
        for c in comments
        if is_bots(c, ctx.bot_login)
        and (purpose := purpose_of(c.get("body")) or "").startswith(UNKNOWN_PREFIX)
        and DISPATCH_ID.search(purpose)
        and record.by_dispatch(purpose.removeprefix(UNKNOWN_PREFIX)) is None
    )
    approved = None
    if fork:
        approved = any(a.head_sha == head for a in record.approvals)
    return rules.Row(
        number=number,
        title=str(pull.get("title") or ""),
        author=str((pull.get("user") or {}).get("login") or ""),
        fork=fork,
        draft=bool(pull.get("draft")),
        approved=approved,
        asks=asks,
        blocked=_headline_mark(status) == "❌",
        sweep=sweep,
        run_id=run_id,
        run_url=run_url,
        since=since,
        pool=place[0] if place else None,
        position=place[1] if place else None,
        pin=record.pin.run_id if record.pin else None,
        expires=expires,
        signoff=signoff,
        signers=tuple(str(v.get("signer")) for v in current if v.get("outcome") == rules.SIGNED and v.get("signer")),
        unknown=unknown,
    )


def _headline_mark(status: str) -> str:
    """The mark the status comment opens with (what the PR shows first): ❌ when a person on it must fix something."""
    line = next((line for line in status.split("\n") if line.startswith("### ")), "")
    return line[4:5]


def _shown(row: rules.Row) -> dict[str, Any]:
    return {**vars(row), "signers": list(row.signers), "unknown": list(row.unknown), "ready": row.ready}


EVENTS = {
    "pull_request": PR_ACTIONS,
    "workflow_run": ("requested", "in_progress", "completed"),
    "issue_comment": ("created", "edited", "deleted"),
    "check_run": ("requested_action", "rerequested"),
    "pull_request_review": ("submitted", "edited", "dismissed"),
}
KINDS = frozenset((event, action) for event, actions in EVENTS.items() for action in actions)
for _event, _actions in EVENTS.items():
    for _action in _actions:
        router.add(board_changed, _event, action=_action)
