"""The results service reports staging and ingest progress: update the bot's staging reply, post the ingest report.

A callback (a `repository_dispatch` on this repository) counts only when all of this holds, else it is logged
and ignored (the delivery still ends done):
- who sent it: GitHub's `sender` (set by GitHub, not by the payload) is the App's own bot account or one of
  policy `results.senders`;
- what it says: bot/rules/results_callbacks.py accepts its fields (`source-repository` is policy
  `results.repository`); fields the bot does not use are ignored and their names logged, a results link that
  is not plain https on the results viewer's host is dropped and logged;
- what it is about: a stage callback updates only the bot's own staging reply (the reply of an accepted `/use`
  or of `/stage-results`, whose staging section shows a request the bot sent) on issue `pr-number`, for
  `run-id`: the comment `comment-id` names, else the newest such reply on the PR. An ingest report is written
  only on a pull request whose gate record pins `run-id`, or that holds such a staging reply for it;
- when: a staging section moves only forward. It keeps the app run (`app-run-id`) and the phase (started <
  completed) it shows, and a callback applies only when it is newer: a higher app run (the staging workflow ran
  again) or the same one in a later phase. An ingest report is not replaced by one of an older app run.
Every link the bot writes is built here from validated parts (bot/rules/links.py), and a reply record of an
unexpected shape is never rendered.
"""

from __future__ import annotations

import functools
import logging
import re
from typing import Any, TypedDict
from urllib.parse import urlsplit

import gidgethub
import jinja2
from gidgethub import sansio

from bot.core import routing
from bot.core.processing import Context
from bot.effects.actions import Action, Comment
from bot.github.client import get_or_none
from bot.rules import links
from bot.rules.markers import hidden_record, is_bots, purpose_of, read_hidden_record, sender_login, sent_by
from bot.rules.policy import Policy
from bot.rules.results_callbacks import COLUMNS, EVENT_KINDS, EXTRA_COUNTERS, ROWS, Callback, Rejected, parse_callback
from bot.telemetry import logs
from handlers.pr_state import (
    MERGE_PURPOSE,
    NOTICE_RECORD,
    AppRun,
    StagingSection,
    load_record,
    own_comment,
    reply_comment,
    reply_record,
    staging_state,
)

INGEST_PURPOSE = "ingest-{run_id}"
INGEST_RECORD = "ingest"  # the report's hidden line: <!-- sweepbot-ingest {"app_run_id": ...} -->
_REPLY_PURPOSE = re.compile(r"reply-([1-9][0-9]{0,18})")

# A reply that asked the results service to stage a run: its template, and the outcome it has when it did.
STAGING_REPLIES = {"reuse_reply": "accepted", "stage_reply": "requested"}
# Staging states of a reply whose request went out (dispatch_failed too: GitHub's answer may have been lost
# after the request was taken). needs_primary sent nothing, so nothing can answer it.
ASKED_STATES = frozenset({"requested", "dispatch_failed", "started", "staged", "stage_failed"})
# The phase a callback kind reports, and the phase a staging state shows (requested and dispatch_failed show
# none: nothing has come back yet). started < completed.
PHASES = {"started": 1, "completed": 2}
STATE_PHASES = {"started": 1, "staged": 2, "stage_failed": 2}
_APP_RUN_IN_LINK = re.compile(r"/actions/runs/([1-9][0-9]{0,18})$")
# What a reply record of a shape the templates do not expect raises while rendering.
RENDER_ERRORS = (jinja2.TemplateError, TypeError, ValueError, LookupError, AttributeError)
LOGGED_KEYS = 10  # ignored key names in one log line

router = routing.Router()


# -- rules -----------------------------------------------------------------------------------------


def web_base(html_url: str) -> str:
    """`https://github.com` for `https://github.com/acme/InferenceX` (GitHub Enterprise: its own host)."""
    parts = urlsplit(html_url)
    return f"{parts.scheme}://{parts.netloc}"


def app_run_url(html_url: str, repository: str, app_run_id: int | None) -> str | None:
    """The results repository's run `app_run_id`, on the GitHub this repository is on: built, never taken
    from the payload. None without an id, or when `repository` is not owner/name."""
    if app_run_id is None or not isinstance(repository, str) or not links.REPOSITORY.fullmatch(repository):
        return None
    owner, name = repository.split("/")
    return links.web(web_base(html_url), owner, name, "actions", "runs", app_run_id)


def viewer_run_url(viewer: str, run_id: int) -> str:
    """The results viewer's performance page of a run (the one the status comment links): what a staged reply
    links when the service sent no results link the bot accepts."""
    return links.viewer_links(viewer, run_id)["perf_url"]


def record_problem(record: dict[str, Any], run_id: int) -> str | None:
    """Why `record` (a reply's hidden record) is not a staging reply for `run_id` the bot can re-render, or None
    when it is: the reply of an accepted `/use` or of a `/stage-results` that asked the results service for
    that run, with a staging section in a state that a request went out in."""
    template = record.get("template", "reuse_reply")
    if template not in STAGING_REPLIES:
        return f"a {template!r} reply is not a staging reply"
    if record.get("outcome") != STAGING_REPLIES[template]:
        return f"the reply's command had outcome {record.get('outcome')!r}: nothing was staged"
    run = record.get("run")
    if not isinstance(run, dict) or type(run.get("id")) is not int or run["id"] != run_id:
        return "the reply is for another run"
    staging = record.get("staging")
    if not isinstance(staging, dict) or staging.get("state") not in ASKED_STATES:
        state = staging.get("state") if isinstance(staging, dict) else None
        return f"the reply's staging section ({state!r}) shows no request to the results service"
    if not isinstance(staging.get("repository"), str):
        return "the reply's staging section names no results repository"
    return None


def on_issue(comment: dict, repo: str, number: int) -> bool:
    """Whether `comment` is on issue (or PR) `number` of `repo`: GitHub's `issue_url` says which."""
    url = comment.get("issue_url")
    if not isinstance(url, str):
        return False
    try:
        path = urlsplit(url).path
    except ValueError:
        return False
    return path.casefold().endswith(f"/repos/{repo}/issues/{number}".casefold())


def staging_reply(
    comment: object, *, bot_login: str, repo: str, number: int, run_id: int
) -> tuple[int, dict[str, Any]] | str:
    """(the command comment it replies to, its record) when `comment` is the bot's own staging reply on issue
    `number` for `run_id`; else why not."""
    if not isinstance(comment, dict) or not is_bots(comment, bot_login):
        return "the comment is not the bot's"
    if not on_issue(comment, repo, number):
        return f"the comment is not on #{number}"
    text = comment.get("body")
    body = text if isinstance(text, str) else ""
    purpose = _REPLY_PURPOSE.fullmatch(purpose_of(body) or "")
    if purpose is None:
        return "the comment is not a reply to a command"
    record = reply_record(body.split("\n", 1)[-1])
    if record is None:
        return "the comment holds no reply record"
    problem = record_problem(record, run_id)
    return problem if problem is not None else (int(purpose.group(1)), record)


def shown_progress(staging: dict[str, Any]) -> tuple[int, int] | None:
    """(app run, phase) the staging section shows; None when nothing has come back from the service yet."""
    phase = STATE_PHASES.get(staging.get("state", ""))
    if phase is None:
        return None
    app_run = staging.get("app_run_id")
    if type(app_run) is not int:  # a reply written before the app run was kept: its run link ends with it
        url = staging.get("app_run_url")
        found = _APP_RUN_IN_LINK.search(url) if isinstance(url, str) else None
        app_run = int(found.group(1)) if found else 0
    return app_run, phase


def is_newer(staging: dict[str, Any], callback: Callback) -> bool:
    """Whether a stage callback moves the staging section forward: a higher app run, or the same app run in a
    later phase. A fresh request (requested, dispatch_failed) takes any."""
    shown = shown_progress(staging)
    return shown is None or (callback.app_run_id or 0, PHASES[callback.kind]) > shown


def next_staging(callback: Callback, policy: Policy, html_url: str) -> StagingSection:
    """The reply's staging section after a stage callback: the state, the app run it came from and its link,
    and (staged) the checked results link, if any."""
    progress = AppRun(
        app_run_id=callback.app_run_id,
        app_run_url=app_run_url(html_url, policy.results.repository, callback.app_run_id),
    )
    if callback.kind == "started":
        return staging_state("started", policy, **progress)
    if callback.succeeded:
        return staging_state(
            "staged",
            policy,
            results_url=callback.results_url,
            viewer_url=viewer_run_url(policy.results.viewer, callback.run_id),
            **progress,
        )
    return staging_state("stage_failed", policy, **progress)


class IngestReport(TypedDict):
    """What templates/ingest_report.* render (and the merge notice, as its `report`)."""

    run_id: int
    run_url: str
    app_run_url: str | None
    ingest_run_url: str | None
    run_date: str | None
    rows: list[str]
    columns: list[str]
    counts: dict[str, dict[str, int]]  # row -> column -> count
    extra_counts: list[list[str | int]]  # [name, count]


def ingest_variables(callback: Callback, policy: Policy, html_url: str) -> IngestReport:
    """The report's variables: the ingest run's link is the one the service sent (checked and rebuilt), else the
    page of the run that sent the callback; the extra counters are the documented ones sent, in their order."""
    app_run = app_run_url(html_url, policy.results.repository, callback.app_run_id)
    counts, extra = callback.counts, callback.extra_counts or {}
    assert counts is not None  # set for "ingested", the only kind reported
    return IngestReport(
        run_id=callback.run_id,
        run_url=links.web(html_url, "actions", "runs", callback.run_id),
        app_run_url=app_run,
        ingest_run_url=callback.ingest_run_url or app_run,
        run_date=callback.run_date.isoformat() if callback.run_date else None,
        rows=list(ROWS),
        columns=list(COLUMNS),
        counts={row: dict(counts[row]) for row in ROWS},
        extra_counts=[[name, extra[name]] for name in EXTRA_COUNTERS if name in extra],
    )


# -- events ----------------------------------------------------------------------------------------


def ignore(message: str, callback: Callback, **fields: object) -> list[Action]:
    logs.event(
        f"results callback ignored: {message}",
        logging.WARNING,
        kind=callback.kind,
        pr=callback.pr_number,
        run=callback.run_id,
        app_run=callback.app_run_id,
        comment=callback.comment_id,
        **fields,
    )
    return []


async def find_reply(ctx: Context, callback: Callback) -> tuple[int, dict[str, Any]] | str:
    """(the command comment id, the record) of the bot's staging reply the callback is about; else why none."""
    reply_of = functools.partial(
        staging_reply, bot_login=ctx.bot_login, repo=ctx.repo, number=callback.pr_number, run_id=callback.run_id
    )
    if callback.comment_id is not None:
        comment = await get_or_none(ctx.gh, links.repo_api(ctx.repo, "issues", "comments", callback.comment_id))
        if comment is None:
            return "comment-id names no comment of this repository"
        return reply_of(comment)
    for comment in reversed(await ctx.comments(callback.pr_number)):
        if not isinstance(found := reply_of(comment), str):
            return found
    return "no staging reply of the bot for this run on the PR"


async def stage_progress(ctx: Context, callback: Callback) -> list[Action]:
    found = await find_reply(ctx, callback)
    if isinstance(found, str):
        return ignore("not about a staging reply of the bot", callback, reason=found)
    reply_to, record = found
    if not is_newer(record["staging"], callback):
        return ignore("older than what the reply shows", callback, shown=shown_progress(record["staging"]))
    updated = {**record, "staging": next_staging(callback, ctx.policy, ctx.html_url)}
    updated.setdefault("stage_command", f"/{ctx.policy.commands.stage}")  # a reply older than staging
    if updated.get("template", "reuse_reply") == "reuse_reply":
        updated.setdefault("ingest", None)  # a reply older than the ingest request
    try:
        return [reply_comment(ctx, callback.pr_number, reply_to, updated)]
    except RENDER_ERRORS as exc:
        return ignore("its reply could not be rendered", callback, error=f"{type(exc).__name__}: {exc}"[:300])


async def shown_ingest_run(ctx: Context, number: int, run_id: int) -> int | None:
    """The app run the PR's ingest counts for `run_id` show (in the merge notice, or a report of their own), if
    there are any that say."""
    for purpose in (MERGE_PURPOSE, INGEST_PURPOSE.format(run_id=run_id)):
        report = await own_comment(ctx, number, purpose)
        shown = read_hidden_record(INGEST_RECORD, report.get("body")) if report is not None else None
        app_run = shown.get("app_run_id") if isinstance(shown, dict) else None
        if type(app_run) is int:
            return app_run
    return None


async def ingest_report(ctx: Context, callback: Callback) -> list[Action]:
    number = callback.pr_number
    issue = await get_or_none(ctx.gh, links.repo_api(ctx.repo, "issues", number))
    if issue is None:
        return ignore("no such pull request", callback)
    if "pull_request" not in issue:
        return ignore("an issue, not a pull request", callback)
    record, _ = await load_record(ctx, number)
    pinned = record.pin is not None and record.pin.run_id == callback.run_id
    reply_of = functools.partial(
        staging_reply, bot_login=ctx.bot_login, repo=ctx.repo, number=number, run_id=callback.run_id
    )
    if not pinned and all(isinstance(reply_of(c), str) for c in await ctx.comments(number)):
        return ignore("the run is neither pinned nor staged on the pull request", callback)
    shown = await shown_ingest_run(ctx, number, callback.run_id)
    if shown is not None and callback.app_run_id is not None and callback.app_run_id < shown:
        return ignore("older than the report shows", callback, shown=shown)
    report = ingest_variables(callback, ctx.policy, ctx.html_url)
    kept = hidden_record(INGEST_RECORD, {"app_run_id": callback.app_run_id})
    try:
        notice = await merge_notice_with(ctx, number, callback.run_id, report, kept) if pinned else None
        if notice is not None:  # the counts join the merge notice: one comment for the merge and its ingest
            return [notice]
        body = ctx.render("ingest_report", **report)
    except RENDER_ERRORS as exc:
        return ignore("the report could not be rendered", callback, error=f"{type(exc).__name__}: {exc}"[:300])
    return [Comment(number, INGEST_PURPOSE.format(run_id=callback.run_id), kept + "\n" + body)]


async def merge_notice_with(ctx: Context, number: int, run_id: int, report: IngestReport, kept: str) -> Comment | None:
    """The bot's merge notice for `run_id` (it asked for this ingest) re-rendered with the ingest's counts; None
    when there is none to add them to (the run was staged, not merged), and the report is a comment of its own."""
    notice = await own_comment(ctx, number, MERGE_PURPOSE)
    shown = read_hidden_record(NOTICE_RECORD, notice.get("body")) if notice is not None else None
    if notice is None or not isinstance(shown, dict):
        return None
    pin = shown.get("pin")
    if (
        not isinstance(pin, dict)
        or pin.get("run_id") != run_id
        or (shown.get("ingest") or {}).get("state") != "requested"
    ):
        return None
    variables = {**shown, "report": report}
    lines = [line for line in notice["body"].split("\n")[:3] if line.startswith("<!-- sweepbot-ingest-request ")]
    body = "\n".join(
        [*lines, kept, hidden_record(NOTICE_RECORD, {**shown, "report": None}), ctx.render("merge_reuse", **variables)]
    )
    return Comment(number, MERGE_PURPOSE, body)


async def results_reported(event: sansio.Event, ctx: Context) -> list[Action]:
    data = event.data
    results = ctx.policy.results
    if sent_by(data, ctx.bot_login, results.senders) is None:
        logs.event(
            "results callback from a sender that is not the App nor one of results.senders, ignored",
            logging.WARNING,
            event_type=str(data.get("action"))[:60],
            sender=str(sender_login(data))[:60],
        )
        return []
    parsed = parse_callback(
        data.get("action") or "",
        data.get("client_payload"),
        results_repository=results.repository,
        link_hosts=[links.host_of(results.viewer)],
        run_hosts=[links.host_of(ctx.html_url)],
    )
    if isinstance(parsed, Rejected):
        logs.event(
            "results callback rejected",
            logging.WARNING,
            code=parsed.code,
            field=parsed.field,
            step=parsed.step,
            reason=parsed.reason,
        )
        return []
    if parsed.ignored_count:
        logs.event(
            "results callback: fields it does not use ignored",
            kind=parsed.kind,
            keys=list(parsed.ignored[:LOGGED_KEYS]),
            count=parsed.ignored_count,
        )
    for dropped in parsed.dropped:
        logs.event(
            "results callback: field dropped",
            logging.WARNING,
            code=dropped.code,
            field=dropped.field,
            reason=dropped.reason,
        )
    try:
        if parsed.kind == "ingested":
            return await ingest_report(ctx, parsed)
        return await stage_progress(ctx, parsed)
    except gidgethub.BadRequest as exc:
        if int(exc.status_code) != 404:
            raise
        return ignore("the pull request is not found", parsed)


for _event_type in EVENT_KINDS:
    router.add(results_reported, "repository_dispatch", action=_event_type)
