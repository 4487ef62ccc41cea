"""Verify a CODEOWNER's sign-off: one bilingual verdict per sign-off, edited in place, and a `signoff` check run.

A sign-off is for one commit (bot.rules.signoff.written_on): a review's or a line comment's own, a comment's the
PR's head when it was written, by the PR's timeline; a later push makes it stale until re-signed. The PR needs a
valid current sign-off for every owner group of its changed files (bot.rules.signoff.settle), and every verdict
says which groups are covered. A verdict keeps up with its inputs: when a sweep the bot dispatched for the PR
finishes, a pin is set or withdrawn (the reuse feature's record change, handed over by handlers/registry.py), the
base branch changes or someone asks the `signoff` check to run again, the current sign-offs
(bot.rules.signoff.current) are verified again; a sign-off posted or withdrawn changes the groups the others
cover; each verdict whose text changed is edited in place. A verdict whose own checks (CODEOWNER, checklist) hold
waits (⏳, the check run in progress) for the sweep, a pin or the other owner groups, and turns to PASS in place;
only a failing check of its own is a FAIL, whose first line says what is to change and whose it is."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

import gidgethub
from gidgethub import sansio

from bot.core import routing
from bot.core.processing import Context
from bot.effects.actions import Action, CheckRun, Comment, DispatchWorkflow
from bot.effects.comments import PER_PAGE
from bot.github.client import get_or_none
from bot.rules import signoff as rules
from bot.rules.checklist import Template, compare, template_items
from bot.rules.codeowners import parse as parse_codeowners
from bot.rules.dispatched_runs import not_the_bots
from bot.rules.fingerprint import digest
from bot.rules.links import Slashed, repo_api, web
from bot.rules.markers import hidden_record, is_bots, marker, purpose_of, read_hidden_record, sender_login, sent_by
from bot.rules.pull_request import label_names, own_check_run
from bot.rules.stale_branch import STALE_PIN
from bot.rules.sweep_record import RunRecord, SweepRecord, shows_status
from bot.telemetry import logs
from handlers import pr_state

CHECK_NAME = rules.CHECK_NAME
RECORD = "signoff"  # the verdict's hidden line: <!-- sweepbot-signoff {...} -->
# the record's keys that the text does not show: the groups and those the signer covers feed `settle`
RECORD_ONLY = ("signoff", "signed_at", "groups", "covers")
HEAD_CHANGES = ("committed", "head_ref_force_pushed")  # the timeline events that say when the PR's head changed
JUDGE_INPUTS = ("pr-number", "head-sha", "signoff-id", "dispatch-id")
POSTED = (
    ("issue_comment", "created"),
    ("issue_comment", "edited"),
    ("pull_request_review", "submitted"),
    ("pull_request_review", "edited"),
    ("pull_request_review_comment", "created"),
    ("pull_request_review_comment", "edited"),
)
REMOVED = (
    ("issue_comment", "deleted"),
    ("pull_request_review", "dismissed"),
    ("pull_request_review_comment", "deleted"),
)

router = routing.Router()


# -- the verdict comments on GitHub ----------------------------------------------------------------


def verdict_comment(ctx: Context, number: int, variables: dict[str, Any]) -> Comment:
    """The verdict, with the variables it was rendered from kept in it: a push or the judge re-renders it."""
    shown = {k: v for k, v in variables.items() if k not in RECORD_ONLY}
    shown["checks"] = rules.shown(variables["checks"])
    body = hidden_record(RECORD, variables) + "\n" + ctx.render("signoff_verdict", **shown)
    return Comment(number, rules.PURPOSE_PREFIX + variables["signoff"], body)


async def verdict_comments(ctx: Context, number: int) -> dict[str, tuple[dict[str, Any], str]]:
    """Every verdict the bot keeps on the PR, by sign-off key: (its record, the comment's body as it stands).
    Only the bot's own comments count."""
    found: dict[str, tuple[dict[str, Any], str]] = {}
    for comment in await ctx.comments(number):
        purpose = purpose_of(comment.get("body")) or ""
        if is_bots(comment, ctx.bot_login) and purpose.startswith(rules.PURPOSE_PREFIX):
            record = read_hidden_record(RECORD, comment.get("body"))
            if isinstance(record, dict) and record.get("signoff") == purpose.removeprefix(rules.PURPOSE_PREFIX):
                found[record["signoff"]] = (record, comment.get("body") or "")
    return found


async def verdicts(ctx: Context, number: int) -> dict[str, dict[str, Any]]:
    """Every verdict the bot keeps on the PR, by sign-off key."""
    return {key: record for key, (record, _) in (await verdict_comments(ctx, number)).items()}


OUTCOME_ORDER = {rules.PASS: 0, rules.WAIT: 1, rules.FAIL: 2}  # the check run's summary lists passes first


def check_run(
    ctx: Context, pull: dict[str, Any], records: dict[str, dict[str, Any]], *, rewrite: bool = False
) -> CheckRun:
    """The `signoff` check run on the PR's head, as its verdicts say (`records` as `written` settled them): success
    while a current sign-off of that very head passed, its owner groups counted; in progress while none passed
    and one waits on the sweep, a pin or the other owner groups; failure otherwise. `rewrite`: written even
    unchanged ("Re-run" queued it again)."""
    head = pull["head"]["sha"]
    conclusion = rules.check_conclusion(records, head)
    shown = sorted(
        records.values(),
        key=lambda r: (r.get("state") != rules.FRESH, OUTCOME_ORDER.get(r.get("outcome", ""), 3), r["signoff"]),
    )
    summary = ctx.render(
        "signoff_summary",
        head_sha=head,
        verdicts=[{k: r.get(k) for k in ("signer", "outcome", "state", "head_sha", "url")} for r in shown],
    )
    waiting = conclusion == rules.PENDING
    return CheckRun(
        head_sha=head,
        name=CHECK_NAME,
        conclusion="" if waiting else conclusion,
        summary=summary,
        title=ctx.templates.title("signoff_check", conclusion=conclusion),
        details_url=pull.get("html_url"),
        status="in_progress" if waiting else "completed",
        rewrite=rewrite,
    )


def written(
    ctx: Context,
    number: int,
    head: str,
    comments: dict[str, tuple[dict[str, Any], str]],
    records: dict[str, dict[str, Any]],
    always: tuple[str, ...] = (),
) -> tuple[dict[str, dict[str, Any]], list[Action]]:
    """The verdicts as they stand together (bot.rules.signoff.settle: the owner groups each current sign-off
    covers), and a comment for each whose text differs from the one on GitHub (`comments`), or in `always`."""
    records = {**records, **rules.settle(records, head)}
    actions: list[Action] = []
    for key, record in records.items():
        comment = verdict_comment(ctx, number, record)
        if key in always or key not in comments or marker(comment.purpose) + "\n" + comment.body != comments[key][1]:
            actions.append(comment)
    return records, actions


# -- what the checks read --------------------------------------------------------------------------


async def text_at(ctx: Context, path: str, ref: str) -> str | None:
    data = await ctx.file_at(path, ref)
    return None if data is None else data.decode("utf-8", errors="replace")


async def changed_paths(ctx: Context, number: int) -> list[str]:
    """Every changed path, a renamed file's old path too (moving an owned file away changes it)."""
    paths: list[str] = []
    for entry in await ctx.pr_file_entries(number):
        paths.append(entry["filename"])
        if entry.get("previous_filename") and entry["previous_filename"] not in paths:
            paths.append(entry["previous_filename"])
    return paths


async def timeline(ctx: Context, number: int) -> list[dict[str, Any]]:
    """The PR's head changes as its timeline lists them, every page (bot.rules.signoff.head_at reads them)."""
    url = repo_api(ctx.repo, "issues", number, "timeline", per_page=PER_PAGE)
    return [event async for event in ctx.gh.getiter(url) if event.get("event") in HEAD_CHANGES]


async def bound_to(ctx: Context, number: int, signoff: rules.Signoff) -> str:
    """The commit `signoff` is for (bot.rules.signoff.written_on): a comment's needs the PR's timeline."""
    return rules.written_on(signoff, await timeline(ctx, number) if signoff.source == "comment" else ())


async def codeowner(
    ctx: Context, pull: dict[str, Any], files: list[str], signer: str, text: str | None
) -> tuple[rules.Check, list[dict[str, Any]], list[str]]:
    """The CODEOWNER check of `signer` by the base branch's CODEOWNERS `text`, the owner groups of the changed
    files (bot.rules.signoff.group_rows; none without CODEOWNERS), and the keys of those the signer covers."""
    path = ctx.policy.paths.codeowners
    if text is None:
        return rules.codeowner_check(None, files, signer, (), path=path), [], []
    owners = parse_codeowners(text)
    member_of, unreadable = [], []
    for team in rules.teams_to_ask(owners, files):
        member = await ctx.team_member(team, signer)
        if member:
            member_of.append(team)
        elif member is None:
            unreadable.append(team)
    policy = ctx.policy.signoff
    groups = rules.owner_groups(owners, files)
    covers, through = rules.covers(groups, signer, member_of, policy.sufficient_owners)
    authored = (
        not policy.author_may_sign and signer.casefold() == str((pull.get("user") or {}).get("login") or "").casefold()
    )
    check = rules.codeowner_check(
        owners, files, signer, member_of, unreadable, path=path, authored=authored, sufficient=through
    )
    return check, rules.group_rows(groups), covers


def sweep_run(ctx: Context, run: Mapping[str, Any], known: RunRecord) -> rules.SweepRun:
    """A sweep the bot dispatched, as the sign-off sees it: it swept the PR head its record names (a fork's
    trusted run sits on the default branch, whose head is no PR commit)."""
    return rules.SweepRun(
        int(run["id"]),
        known.head_sha,
        run.get("status") or "",
        run.get("conclusion"),
        run.get("html_url") or web(ctx.html_url, "actions", "runs", run["id"]),
        str(run.get("created_at") or ""),
    )


async def sweep_runs(ctx: Context, record: SweepRecord) -> list[rules.SweepRun]:
    """The PR's sweeps: only those the bot dispatched for it (bot.rules.dispatched_runs), as GitHub shows them now."""
    return [sweep_run(ctx, run, known) for run, known in await pr_state.candidate_runs(ctx, record)]


async def sweep_and_reuse(
    ctx: Context, pull: dict[str, Any], files: list[str], known: tuple[SweepRecord, bool] | None
) -> tuple[rules.Check, rules.Check]:
    """The sweep and reuse checks, by the gate's record in its status comment, or by `known` (record, whether the
    status comment exists) when a feature hands over a record not written yet."""
    number = pull["number"]
    record, exists = known if known is not None else await pr_state.load_record(ctx, number)
    commits = await pr_state.pr_commits(ctx, number)
    labels = label_names(pull)
    asked = shows_status(ctx.policy.paths.changelog in files, labels, ctx.policy, exists or bool(record.runs))
    pinned, code = None, None
    if record.pin is not None:
        (run, verdict), stale = await asyncio.gather(
            pr_state.judge_pinned(ctx, record.pin.run_id, pull, record),
            pr_state.stale_pin_files(ctx, record, pull["head"]["sha"]),
        )
        if verdict.ok and stale:  # pushed since: the pinned run no longer tested the PR's benchmark files
            verdict = dataclasses.replace(verdict, ok=False, code=STALE_PIN)
        code = verdict.code
        entry = pr_state.recorded_run(ctx, run, record) if run is not None else None
        if verdict.ok and run is not None and entry is not None:
            pinned = sweep_run(ctx, run, entry)
    sweep = rules.sweep_check(await sweep_runs(ctx, record), commits, pinned=pinned, asked=asked)
    reuse = rules.reuse_check(
        record.pin.run_id if record.pin else None,
        record.pin.by if record.pin else None,
        code,
        required=ctx.policy.signoff.require_reuse,
        asked=asked,
    )
    return sweep, reuse


def checklist(ctx: Context, text: str | None, signoff: rules.Signoff) -> tuple[rules.Check, Template | None]:
    """The checklist check of `signoff` by the base branch's checklist file `text`."""
    path = ctx.policy.paths.checklist
    template = None if text is None else template_items(text, ctx.policy.checklist_heading)
    result = compare(template, signoff.body, signoff.signer) if isinstance(template, Template) else None
    check = rules.checklist_check(template, result, signoff.signer, path=path)
    return check, template if isinstance(template, Template) else None


# -- the judge -------------------------------------------------------------------------------------


def judge_dispatch(ctx: Context, number: int, head: str, signoff: rules.Signoff) -> DispatchWorkflow:
    dispatch_id = f"so-{number}-{digest(signoff.key, head, signoff.body)[:12]}"
    inputs = dict(zip(JUDGE_INPUTS, (str(number), head, signoff.key, dispatch_id)))
    return DispatchWorkflow(ctx.policy.signoff.judge.workflow, ctx.default_branch, inputs, dispatch_id)


async def ask_judge(
    ctx: Context, number: int, head: str, signoff: rules.Signoff, before: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The verdict's judge section: None when no judge is configured; the earlier answer when the same sign-off
    text was judged on the same head; else the judge is dispatched (once per sign-off text and head)."""
    judge = ctx.policy.signoff.judge
    if not judge.enabled:
        return None
    start = judge_dispatch(ctx, number, head, signoff)
    earlier = (before or {}).get("judge") or {}
    if earlier.get("dispatch_id") == start.dispatch_id:
        return earlier
    shown = {"workflow": judge.workflow, "dispatch_id": start.dispatch_id, "summary": "", "url": "", "error": ""}
    try:
        result = await ctx.write_now(start)
    except gidgethub.GitHubException as exc:  # the bot's own checks stand; the verdict says the judge did not start
        logs.event("judge dispatch failed", logging.ERROR, signoff=signoff.key, error=f"{type(exc).__name__}: {exc}")
        return {**shown, "state": "dispatch_failed", "error": str(exc)[:200]}
    url = (result.data or {}).get("html_url") or (web(ctx.html_url, "actions", "runs", result.id) if result.id else "")
    return {**shown, "state": "requested", "url": url}


# -- verifying -------------------------------------------------------------------------------------


def variables(
    ctx: Context,
    pull: dict[str, Any],
    signoff: rules.Signoff,
    bound: str,
    checks: list[rules.Check],
    template: Template | None,
    judge: dict[str, Any] | None,
) -> dict[str, Any]:
    base = pull["base"]["ref"]
    covered = ctx.policy.signoff.verified_items
    return {
        "signoff": signoff.key,
        "source": signoff.source,
        "signer": signoff.signer,
        "url": signoff.url,
        "signed_at": signoff.signed_at,
        "head_sha": bound,
        "current_sha": pull["head"]["sha"],
        "state": rules.freshness(bound, pull["head"]["sha"]),
        "outcome": rules.outcome(checks),
        "checks": rules.check_rows(checks),
        "covered": rules.covered_items(template, covered),
        "not_verified": rules.not_verified(template, covered),
        "judge": judge,
        "codeowners_url": web(ctx.html_url, "blob", base, Slashed(ctx.policy.paths.codeowners)),
        "checklist_url": web(ctx.html_url, "blob", base, Slashed(ctx.policy.paths.checklist)),
        "use_command": f"/{ctx.policy.commands.use}",
    }


async def verdict_of(
    ctx: Context,
    pull: dict[str, Any],
    signoff: rules.Signoff,
    bound: str,
    before: dict[str, Any] | None,
    known: tuple[SweepRecord, bool] | None = None,
) -> dict[str, Any]:
    """The verdict's record for `signoff`, a sign-off of commit `bound`, on the PR as it is now (its base
    branch's CODEOWNERS and checklist; the gate's record, or `known`). Its owner-groups check is the one
    bot.rules.signoff.settle gives it with the other current sign-offs; the judge is asked only of a sign-off
    of the head."""
    base = pull["base"]["ref"]
    files, owners_text, checklist_text = await asyncio.gather(
        changed_paths(ctx, pull["number"]),
        text_at(ctx, ctx.policy.paths.codeowners, base),
        text_at(ctx, ctx.policy.paths.checklist, base),
    )
    owner, groups, covers = await codeowner(ctx, pull, files, signoff.signer, owners_text)
    sweep, reuse = await sweep_and_reuse(ctx, pull, files, known)
    listed, template = checklist(ctx, checklist_text, signoff)
    fresh = bound == pull["head"]["sha"]
    judge = await ask_judge(ctx, pull["number"], bound, signoff, before) if fresh else None
    record = variables(ctx, pull, signoff, bound, [owner, sweep, reuse, listed], template, judge)
    record.update(groups=groups, covers=covers)
    logs.event(
        "sign-off verified",
        signoff=signoff.key,
        signer=signoff.signer,
        outcome=record["outcome"],
        commit=bound[:12],
        fresh=fresh,
    )
    return record


async def verify(ctx: Context, number: int, signoff: rules.Signoff) -> list[Action]:
    pull = await ctx.pull(number)
    if pull.get("state") != "open":
        logs.event("sign-off on a closed PR left alone", signoff=signoff.key)
        return []
    comments, bound = await asyncio.gather(verdict_comments(ctx, number), bound_to(ctx, number, signoff))
    records = {key: record for key, (record, _) in comments.items()}
    records[signoff.key] = await verdict_of(ctx, pull, signoff, bound, records.get(signoff.key))
    records, actions = written(ctx, number, pull["head"]["sha"], comments, records, always=(signoff.key,))
    return [*actions, check_run(ctx, pull, records)]


async def fetch_signoff(ctx: Context, number: int, key: str) -> rules.Signoff | None:
    """The sign-off `key` names, as GitHub has it now; None when it is gone or no longer a sign-off."""
    parsed = rules.parse_key(key)
    if parsed is None:
        return None
    source, item_id = parsed
    path = {
        "comment": ("issues", "comments", item_id),
        "review": ("pulls", number, "reviews", item_id),
        "review-comment": ("pulls", "comments", item_id),
    }[source]
    item = await get_or_none(ctx.gh, repo_api(ctx.repo, *path))
    if item is None:
        return None
    return rules.signoff_in(source, item, ctx.policy.signoff_phrase)


async def reverify(
    ctx: Context, number: int, *, known: tuple[SweepRecord, bool] | None = None, check: bool = False
) -> list[Action]:
    """Verify the current sign-offs again (bot.rules.signoff.current: each signer's newest on the PR's head), each
    in its own verdict, for the commit it was already bound to, edited only where its text changed; one that is
    gone or no longer a sign-off is withdrawn. The check run is written when a verdict changed, or always with
    `check` (a re-run asked for)."""
    comments = await verdict_comments(ctx, number)
    if not comments:
        return []
    pull = await ctx.pull(number)
    if pull.get("state") != "open":
        logs.event("sign-offs of a closed PR left alone", pr=number)
        return []
    records = {key: record for key, (record, _) in comments.items()}
    for key in rules.current(records.values(), pull["head"]["sha"]):
        signoff = await fetch_signoff(ctx, number, key)
        if signoff is None:
            records[key] = {**records[key], "state": rules.WITHDRAWN}
        else:
            records[key] = await verdict_of(ctx, pull, signoff, records[key]["head_sha"], records[key], known)
    records, actions = written(ctx, number, pull["head"]["sha"], comments, records)
    logs.event("sign-offs verified again", pr=number, changed=len(actions))
    if actions or check:
        actions.append(check_run(ctx, pull, records, rewrite=check))  # "Re-run" queued it: written even unchanged
    return actions


async def restate(ctx: Context, number: int, changed: dict[str, dict[str, Any]]) -> list[Action]:
    """Write the verdicts in `changed`, those whose owner groups changed with them, and the check run on the PR's
    head."""
    pull = await ctx.pull(number)
    comments = await verdict_comments(ctx, number)
    records = {**{key: record for key, (record, _) in comments.items()}, **changed}
    records, actions = written(ctx, number, pull["head"]["sha"], comments, records, always=tuple(changed))
    if pull.get("state") == "open":
        actions.append(check_run(ctx, pull, records))
    return actions


# -- events ----------------------------------------------------------------------------------------


def _author(event: sansio.Event) -> dict[str, Any]:
    holder = event.data.get("review" if event.event == "pull_request_review" else "comment") or {}
    return holder.get("user") or {}


def _body_changed(data: dict[str, Any]) -> bool:
    """An `edited` delivery whose body changed (a review edit may change nothing the bot reads)."""
    return data.get("action") != "edited" or "changes" not in data or "body" in (data.get("changes") or {})


async def signoff_posted(event: sansio.Event, ctx: Context) -> list[Action]:
    data = event.data
    number = ctx.pr_number
    if number is None or pr_state.from_a_bot(_author(event), ctx.bot_login) or not _body_changed(data):
        return []
    editor = rules.edited_by_someone_else(event.event, data)
    if editor is not None:
        logs.event(
            "sign-off edit by someone other than its author ignored",
            editor=editor,
            author=_author(event).get("login"),
            source=rules.source_key(event.event, data),
        )
        return []
    signoff = rules.signoff_of(event.event, data, ctx.policy.signoff_phrase)
    if signoff is not None:
        return await verify(ctx, number, signoff)
    if data.get("action") == "edited":  # the phrase was edited out: the sign-off is withdrawn
        return await withdraw(ctx, number, rules.source_key(event.event, data))
    return []


async def signoff_removed(event: sansio.Event, ctx: Context) -> list[Action]:
    if ctx.pr_number is None:
        return []
    return await withdraw(ctx, ctx.pr_number, rules.source_key(event.event, event.data))


async def withdraw(ctx: Context, number: int, key: str | None) -> list[Action]:
    record = (await verdicts(ctx, number)).get(key or "")
    if record is None or record.get("state") == rules.WITHDRAWN:
        return []
    return await restate(ctx, number, {record["signoff"]: {**record, "state": rules.WITHDRAWN}})


async def retargeted(event: sansio.Event, ctx: Context) -> list[Action]:
    """The PR now targets another branch: whose CODEOWNERS and checklist count changed, so the current sign-offs
    are verified again."""
    if "base" not in (event.data.get("changes") or {}):
        return []
    return await reverify(ctx, event.data["pull_request"]["number"])


async def sweep_finished(event: sansio.Event, ctx: Context) -> list[Action]:
    """A sweep finished: when it is one the bot dispatched for this PR (bot.rules.dispatched_runs), the current
    sign-offs are verified again, by the record as it is with this run in it (the gate, which writes the run
    into its status comment, may run after this)."""
    run = event.data.get("workflow_run") or {}
    number = ctx.pr_number  # the lane its dispatch id named: only a hint until the record says it is ours
    if number is None or not isinstance(run.get("id"), int):
        return []
    record, exists = await pr_state.load_record(ctx, number)
    entry = pr_state.recorded_run(ctx, run, record)
    if entry is None:
        logs.event(
            "finished run not verified against: not a sweep the bot dispatched for this PR",
            run=run.get("id"),
            pr=number,
            reason=not_the_bots(run, **pr_state.run_trust(ctx)) or "its dispatch id is not recorded",
        )
        return []
    record = record.observe(
        entry,
        int(run["id"]),
        status=run.get("status") or "completed",
        conclusion=run.get("conclusion"),
        html_url=run.get("html_url"),
    )
    return await reverify(ctx, number, known=(record, exists))


async def record_changed(ctx: Context, number: int, record: SweepRecord, exists: bool) -> list[Action]:
    """Another feature changed the gate's record (a pin set or withdrawn; handlers/pr_state.py `RecordChanged`):
    the current sign-offs are verified again by that record, before the gate has written it."""
    return await reverify(ctx, number, known=(record, exists))


async def rerun_requested(event: sansio.Event, ctx: Context) -> list[Action]:
    """ "Re-run" on the bot's own `signoff` check: the current sign-offs are verified again and the check run on
    the PR's head is written again by them. Another app's check, or another check, is not this feature's."""
    check = event.data.get("check_run") or {}
    if not own_check_run(check, CHECK_NAME, ctx.bot_login):
        return []
    number = ctx.pr_number
    if number is None and isinstance(check.get("head_sha"), str):
        number = await ctx.pr_of_head(check["head_sha"])
    if number is None:
        logs.event(
            "signoff re-run for a commit that is no open PR's head, ignored", sha=str(check.get("head_sha"))[:40]
        )
        return []
    return await reverify(ctx, number, check=True)


async def pushed(event: sansio.Event, ctx: Context) -> list[Action]:
    """A new head: every verdict for an earlier one is stale, and so is a comment's verdict for the new head
    written before the push (bot.rules.signoff.after_push, by the time GitHub gives the push); the check run on
    the new head says so."""
    data = event.data
    pull = data["pull_request"]
    records = await verdicts(ctx, pull["number"])
    if not records:
        return []
    changed = rules.after_push(records, str(data.get("before") or ""), pull["head"]["sha"], rules.push_time(pull))
    return await restate(ctx, pull["number"], changed)


async def judged(event: sansio.Event, ctx: Context) -> list[Action]:
    """The judge workflow answered: merge its result into the verdict it was asked for. Only an answer from an
    accepted sender, for a verdict whose judge the bot asked and that has not answered yet, on that head,
    counts; its link is always the judge run the bot dispatched, never one the answer sent."""
    if sent_by(event.data, ctx.bot_login, ctx.policy.signoff.judge.senders) is None:
        logs.event(
            "judge answer from a sender that is not accepted, ignored",
            logging.WARNING,
            sender=str(sender_login(event.data))[:60],
        )
        return []
    answer = rules.judge_result(event.data.get("client_payload"))
    if isinstance(answer, str):
        logs.event("judge answer refused", logging.WARNING, reason=answer)
        return []
    if answer["ignored"]:
        logs.event("judge answer fields the bot does not read, ignored", fields=answer["ignored"])
    record = (await verdicts(ctx, answer["pr"])).get(answer["signoff"])
    judge = (record or {}).get("judge")
    if (
        record is None
        or not isinstance(judge, dict)
        or judge.get("state") != "requested"
        or record.get("head_sha") != answer["head_sha"]
        or answer["dispatch_id"] not in (None, judge.get("dispatch_id"))
    ):
        logs.event("judge answer for no pending verdict, ignored", logging.WARNING, signoff=answer["signoff"])
        return []
    judge = {**judge, "state": answer["verdict"], "summary": answer["summary"]}
    return await restate(ctx, answer["pr"], {record["signoff"]: {**record, "judge": judge}})


for _event, _action in POSTED:
    router.add(signoff_posted, _event, action=_action)
for _event, _action in REMOVED:
    router.add(signoff_removed, _event, action=_action)
router.add(pushed, "pull_request", action="synchronize")
router.add(retargeted, "pull_request", action="edited")
router.add(sweep_finished, "workflow_run", action="completed")
router.add(rerun_requested, "check_run", action="rerequested")
router.add(judged, "repository_dispatch", action=rules.JUDGED)
