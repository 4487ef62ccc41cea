"""The results service reports staging and ingest progress: update the `/use` reply, post the ingest report."""

from __future__ import annotations

import logging
from typing import Any

import gidgethub
from gidgethub import routing, sansio

from bot import logs
from bot.actions import Action, Comment
from bot.comments import is_bots, purpose_of
from bot.processing import Context
from bot.results_callbacks import COLUMNS, EVENT_KINDS, ROWS, Callback, Rejected, parse_callback
from handlers.reuse_command import reply_comment, reply_record, staging_state

INGEST_PURPOSE = "ingest-{run_id}"
REPLY_PREFIX = "reply-"

router = routing.Router()


# -- rules -----------------------------------------------------------------------------------------


def app_run_url(repository: str, app_run_id: int) -> str:
    return f"https://github.com/{repository}/actions/runs/{app_run_id}"


def next_staging(callback: Callback, repository: str, policy: dict) -> dict[str, Any]:
    """The reply's staging section after a stage callback."""
    link = app_run_url(repository, callback.app_run_id)
    if callback.kind == "started":
        return staging_state("started", policy, app_run_url=link)
    if callback.succeeded:
        return staging_state("staged", policy, app_run_url=link, results_url=callback.results_url)
    return staging_state("stage_failed", policy, app_run_url=link)


def is_reply_for(comment: dict, bot_login: str, run_id: int) -> dict[str, Any] | None:
    """The record of a bot reply that pinned `run_id`, if `comment` is one."""
    if not is_bots(comment, bot_login) or not (purpose_of(comment.get("body")) or "").startswith(REPLY_PREFIX):
        return None
    record = reply_record((comment.get("body") or "").split("\n", 1)[-1])
    if record is None or (record.get("run") or {}).get("id") != run_id:
        return None
    return record


# -- events ----------------------------------------------------------------------------------------


async def find_reply(ctx: Context, callback: Callback) -> tuple[dict, dict] | None:
    """(the reply comment, its record): by the comment id the request carried, else by the run id."""
    if callback.comment_id is not None:
        try:
            comment = await ctx.gh.getitem(f"/repos/{ctx.repo}/issues/comments/{callback.comment_id}")
        except gidgethub.BadRequest as exc:
            if int(exc.status_code) != 404:
                raise
            return None
        record = is_reply_for(comment, ctx.bot_login, callback.run_id)
        return (comment, record) if record is not None else None
    for comment in reversed(await ctx.comments(callback.pr_number)):
        record = is_reply_for(comment, ctx.bot_login, callback.run_id)
        if record is not None:
            return comment, record
    return None


async def results_reported(event: sansio.Event, ctx: Context) -> list[Action]:
    data = event.data
    parsed = parse_callback(data.get("action") or "", data.get("client_payload"),
                            results_repository=ctx.policy["results"]["repository"])
    if isinstance(parsed, Rejected):
        logs.event("results callback rejected", logging.WARNING, code=parsed.code, field=parsed.field,
                   reason=parsed.reason)
        return []
    try:
        if parsed.kind == "ingested":
            return [ingest_report(ctx, parsed)]
        found = await find_reply(ctx, parsed)
    except gidgethub.BadRequest as exc:
        if int(exc.status_code) != 404:
            raise
        found = None
    if found is None:
        logs.event("results callback for an unknown PR or reply, ignored", logging.WARNING, pr=parsed.pr_number,
                   run=parsed.run_id, comment=parsed.comment_id)
        return []
    comment, record = found
    record.setdefault("stage_command", f"/{ctx.policy['commands']['stage']}")  # a reply older than staging
    record["staging"] = next_staging(parsed, ctx.policy["results"]["repository"], ctx.policy)
    reply_to = int(purpose_of(comment["body"]).removeprefix(REPLY_PREFIX))
    return [reply_comment(ctx, parsed.pr_number, reply_to, record)]


def ingest_report(ctx: Context, callback: Callback) -> Comment:
    counts = {row: dict(callback.counts[row]) for row in ROWS}
    body = ctx.render("ingest_report", run_id=callback.run_id, run_url=f"{ctx.html_url}/actions/runs/{callback.run_id}",
                      app_run_url=app_run_url(ctx.policy["results"]["repository"], callback.app_run_id),
                      run_date=callback.run_date.isoformat(), rows=list(ROWS), columns=list(COLUMNS), counts=counts)
    return Comment(callback.pr_number, INGEST_PURPOSE.format(run_id=callback.run_id), body)


for _event_type in EVENT_KINDS:
    router.add(results_reported, "repository_dispatch", action=_event_type)
