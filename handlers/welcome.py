"""Welcome a PR that touches benchmark paths: its author's next steps, what maintainers do, the details folded."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from gidgethub import sansio

from bot.core import routing
from bot.core.processing import Context
from bot.effects.actions import Action, Comment
from bot.rules.policy import Policy
from bot.rules.pull_request import is_fork
from handlers.paths import any_match

PURPOSE = "welcome"
FIRST_OPEN = "opened"
LATE_ACTIONS = ("reopened", "ready_for_review")  # welcome only if none was posted yet
RERUN_DOCS_URL = "https://docs.github.com/en/actions/managing-workflow-runs/re-running-workflows-and-jobs"

router = routing.Router()


def welcome_variables(
    policy: Policy, repo: dict[str, Any], pr: dict[str, Any], files: Collection[str] = ()
) -> dict[str, Any]:
    """Everything the welcome template shows, from the policy, the repository (links follow its default branch)
    and the PR's changed files (`files`: whether it already changes the changelog)."""
    paths = policy.paths
    blob = f"{repo['html_url']}/blob/{repo.get('default_branch') or 'main'}"
    commands = policy.commands
    return {
        "author": pr["user"]["login"],
        "is_fork": is_fork(pr, repo["full_name"]),
        "changelog_in_pr": paths.changelog in files,
        "codeowners_url": f"{blob}/{paths.codeowners}",
        "checklist_url": f"{blob}/{paths.checklist}",
        "changelog_path": paths.changelog,
        "changelog_url": f"{blob}/{paths.changelog}",
        "signoff_phrase": policy.signoff_phrase,
        "primary_labels": [label.model_dump() for label in policy.labels.primary],
        "modifiers": policy.labels.modifiers.names(),
        "use_command": f"/{commands.use}",
        "reuse_command": f"/{commands.reuse}",
        "docs_url": policy.docs_url,
        "rerun_docs_url": RERUN_DOCS_URL,
    }


async def _welcome(event: sansio.Event, ctx: Context, *, only_if_missing: bool) -> list[Action]:
    pr = event.data["pull_request"]
    files = await ctx.pr_files(pr["number"])
    if not any_match(files, ctx.policy.paths.benchmark):
        return []
    # the files read above say whether the PR already changes the changelog: no second read
    body = ctx.render("welcome", **welcome_variables(ctx.policy, event.data["repository"], pr, files))
    return [Comment(pr["number"], PURPOSE, body, only_if_missing=only_if_missing)]


@router.register("pull_request", action=FIRST_OPEN)
async def welcome_opened(event: sansio.Event, ctx: Context) -> list[Action]:
    return await _welcome(event, ctx, only_if_missing=False)


async def welcome_late(event: sansio.Event, ctx: Context) -> list[Action]:
    return await _welcome(event, ctx, only_if_missing=True)


# A new PR hears the welcome before the sweep status table: both run on these events (bot.core.processing).

for _action in LATE_ACTIONS:
    router.add(welcome_late, "pull_request", action=_action)
