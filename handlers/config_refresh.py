"""Reload `.github/sweepbot.yml` on a push to the default branch; an invalid file opens an issue for maintainers."""

from __future__ import annotations

from typing import Any

from gidgethub import sansio

from bot.core import routing
from bot.core.config import REPO_CONFIG_PATH
from bot.core.processing import Context
from bot.effects.actions import Action, CloseIssue, Issue

PURPOSE = "config-invalid"

router = routing.Router()


def touches_config(commits: list[dict[str, Any]]) -> bool:
    return any(REPO_CONFIG_PATH in (c.get(k) or []) for c in commits for k in ("added", "modified", "removed"))


@router.register("push")
async def refresh_config(event: sansio.Event, ctx: Context) -> list[Action]:
    data = event.data
    if data.get("ref") != f"refs/heads/{ctx.default_branch}" or not touches_config(data.get("commits") or []):
        return []
    problem = await ctx.reload_config()
    if problem is None:
        return [CloseIssue(PURPOSE)]
    sha = data.get("after") or ""
    last_good = problem.last_good
    body = ctx.render(
        "config_invalid",
        path=REPO_CONFIG_PATH,
        commit_sha=sha[:12],
        commit_url=f"{data['repository']['html_url']}/commit/{sha}",
        errors=list(problem.errors),
        last_good=last_good[:12] if last_good else None,
    )
    return [Issue(PURPOSE, ctx.templates.title("config_invalid"), body)]
