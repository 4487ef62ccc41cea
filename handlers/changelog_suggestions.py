"""One-click fixes: one review on a PR's head with a `suggestion` on each changelog line that has one obvious fix."""

from __future__ import annotations

from typing import Any

from gidgethub import sansio

from bot.core import offload, routing
from bot.core.processing import Context
from bot.effects.actions import Action, ReviewComment, SuggestionReview
from bot.rules.changelog import ChangelogError
from bot.rules.changelog.suggestions import MAX_SUGGESTIONS, Suggestion, suggestions
from bot.rules.fingerprint import digest
from bot.rules.markers import hidden_record
from handlers import pr_state

PURPOSE = "changelog-suggestions"
RECORD = "suggestions"  # the review body's hidden line: what it suggests, so that another set is a new review
PR_ACTIONS = ("opened", "reopened", "ready_for_review", "synchronize", "edited")  # the heads the gate checks

router = routing.Router()


def suggestion_block(lines: tuple[str, ...]) -> str:
    """GitHub's suggestion fence around the replacement lines (none: the lines are deleted). The rule let no line
    with ``` through, so nothing inside can close the fence."""
    return "```suggestion\n" + "".join(line + "\n" for line in lines) + "```"


def review_comment(ctx: Context, path: str, fix: Suggestion, error: ChangelogError) -> ReviewComment:
    text = ctx.render(
        "changelog_suggestion",
        e={"line": error.line, "code": error.code, "params": dict(error.params)},
        deleted=0 if fix.lines else fix.line - fix.start_line + 1,
    )
    return ReviewComment(
        path,
        fix.line,
        suggestion_block(fix.lines) + "\n\n" + text,
        start_line=fix.start_line if fix.start_line < fix.line else None,
    )


async def _fixes(ctx: Context, pull: dict[str, Any], path: str) -> tuple[list[Suggestion], dict[int, ChangelogError]]:
    """The one-click fixes of the PR's change to the changelog, from the file at the merge base and at the head."""
    try:
        result = await pr_state.changelog_change(ctx, pull, path)
    except offload.OffloadFailed:
        return [], {}  # nothing was checked: nothing to suggest
    head = await ctx.file_at(path, pull["head"]["sha"]) or b""  # read for the check already: no request
    prefix = ctx.policy.pr_link_prefix
    found = suggestions(
        result.errors, head, pr_number=pull["number"], canonical_prefix=prefix, limit=len(result.errors)
    )
    return found, {e.line: e for e in result.errors}


async def suggest_fixes(event: sansio.Event, ctx: Context) -> list[Action]:
    data = event.data
    if data.get("action") == "edited" and "base" not in (data.get("changes") or {}):
        return []
    number = data["pull_request"]["number"]
    path = ctx.policy.paths.changelog
    if path not in await ctx.pr_files(number):
        return []
    pull = await ctx.pull(number)  # as it is now: a queued payload may be old
    if pull.get("state") != "open":
        return []
    found, errors = await _fixes(ctx, pull, path)
    head_sha = pull["head"]["sha"]
    shown = found[:MAX_SUGGESTIONS]
    comments = tuple(review_comment(ctx, path, fix, errors[fix.error_line]) for fix in shown)
    body = (
        hidden_record(RECORD, {"head": head_sha, "digest": digest(comments)})
        + "\n"
        + ctx.render(
            "changelog_suggestions", count=len(shown), more=len(found) - len(shown), path=path, head_sha=head_sha
        )
    )
    outdated = ctx.render("changelog_suggestions_outdated", head_sha=head_sha)
    return [SuggestionReview(number, PURPOSE, head_sha, body, comments, outdated)]


for _action in PR_ACTIONS:
    router.add(suggest_fixes, "pull_request", action=_action)
