"""Check the performance changelog on each push to the default branch: a `changelog` check run, one issue."""

from __future__ import annotations

from typing import Any, TypedDict

from gidgethub import sansio

from bot.core import offload, routing
from bot.core.processing import Context
from bot.effects.actions import Action, Annotation, CheckRun, CloseIssue, Issue
from bot.effects.comments import find_bot_issue
from bot.rules.changelog import ChangelogError, check_default_branch, unfinished_check
from bot.rules.changelog.default_branch_links import (
    LINK_CODE,
    BadLink,
    bad_links,
    first_new_line,
    links_record,
    push_may_change,
    pushed_pr,
    remembered_links,
)
from bot.rules.changelog.limits import policy_limits
from bot.rules.links import Slashed, repo_api, web
from bot.rules.markers import hidden_record, read_hidden_record

PURPOSE = "changelog-default-branch"
CHECK_NAME = "changelog"
LINKS_RECORD = "default-branch-links"  # the issue's hidden line: which PR each bad link belongs to
NO_COMMIT = "0" * 40  # `before` of a new branch, `after` of a deleted one

router = routing.Router()


def _error(e: ChangelogError) -> dict[str, Any]:
    return {"line": e.line, "code": e.code, "params": dict(e.params)}


class ShownLink(TypedDict):
    """A bad `pr-link` as templates/default_branch_changelog.* show it."""

    line: int
    value: str
    pr_number: int | None
    expected: str | None
    pr_url: str | None
    line_url: str


def _shown_link(ctx: Context, link: BadLink, file_url: str) -> ShownLink:
    return ShownLink(
        line=link.line,
        value=link.value,
        pr_number=link.pr_number,
        expected=link.expected,
        pr_url=web(ctx.html_url, "pull", link.pr_number) if link.pr_number else None,
        line_url=f"{file_url}#L{link.line}",
    )


async def _owners(
    ctx: Context, path: str, data: dict[str, Any], text: bytes, sha: str, errors: list[ChangelogError]
) -> list[BadLink]:
    """The bad links with the PR each belongs to: the push's merged PR for the lines it brought, what the bot's
    open issue remembers for older ones."""
    if not any(e.code == LINK_CODE for e in errors):
        return []
    before_sha = data.get("before") or NO_COMMIT
    before = await ctx.file_at(path, before_sha) if before_sha != NO_COMMIT else None
    pulls = await ctx.gh.getitem(repo_api(ctx.repo, "commits", sha, "pulls"))
    issue = await find_bot_issue(ctx.gh, ctx.repo, PURPOSE, ctx.bot_login)
    remembered = remembered_links(read_hidden_record(LINKS_RECORD, (issue or {}).get("body")))
    return bad_links(
        errors,
        first_new=first_new_line(before, text),
        pr_number=pushed_pr(pulls or [], sha),
        remembered=remembered,
        canonical_prefix=ctx.policy.pr_link_prefix,
    )


@router.register("push")
async def check_pushed_changelog(event: sansio.Event, ctx: Context) -> list[Action]:
    data = event.data
    path = ctx.policy.paths.changelog
    sha = data.get("after") or NO_COMMIT
    if (
        data.get("ref") != f"refs/heads/{ctx.default_branch}"
        or data.get("deleted")
        or sha == NO_COMMIT
        or not push_may_change(data.get("commits"), path)
    ):
        return []
    text = await ctx.file_at(path, sha)  # the default branch: authority data, read by the bot itself
    if text is None:
        return [CloseIssue(PURPOSE)]  # no changelog left: nothing to correct
    prefix = ctx.policy.pr_link_prefix
    try:  # a big file is checked in the worker process: no input holds this loop (bot/core/offload.py)
        result = await offload.run(
            check_default_branch, text, canonical_prefix=prefix, limits=policy_limits(ctx.policy.limits), size=len(text)
        )
    except offload.OffloadFailed:
        result = unfinished_check(len(text))
    errors = list(result.errors)
    links = await _owners(ctx, path, data, text, sha, errors)
    file_url = web(ctx.html_url, "blob", sha, Slashed(path))
    text_of = ctx.render(
        "default_branch_changelog",
        path=path,
        prefix=prefix,
        commit_sha=sha,
        commit_url=web(ctx.html_url, "commit", sha),
        links=[_shown_link(ctx, link, file_url) for link in links],
        others=[_error(e) for e in errors if e.code != LINK_CODE],
        unlisted=result.unshown_errors,
    )
    conclusion = "failure" if errors else "success"
    check = CheckRun(
        head_sha=sha,
        name=CHECK_NAME,
        conclusion=conclusion,
        title=ctx.templates.title("changelog_check", conclusion=conclusion, count=result.error_count),
        summary=text_of,
        details_url=file_url,
        annotations=tuple(Annotation(path, e.line, ctx.render("changelog_annotation", e=_error(e))) for e in errors),
    )
    if not errors:
        return [check, CloseIssue(PURPOSE)]
    body = hidden_record(LINKS_RECORD, links_record(links)) + "\n" + text_of
    return [check, Issue(PURPOSE, ctx.templates.title("default_branch_changelog"), body)]
