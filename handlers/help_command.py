"""Answer `/help`, and a known command written with wrong arguments, with the command reference."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gidgethub import routing, sansio

from bot.effects.actions import Action, Comment
from bot.rules.commands import COMMANDS, Command, edit_is_new_command, parse
from bot.core.processing import Context
from handlers.pr_state import from_a_bot, reply_purpose

router = routing.Router()


def needs_help(command: Command | None) -> bool:
    return command is not None and (command.kind == "help" or command.problem is not None)


def help_entries(names: Mapping[str, str]) -> list[dict[str, str]]:
    """The registry's commands in its order, as the help template lists them, with the names configured here."""
    return [{"kind": spec.kind, "name": names[spec.kind], "run_id": spec.run_id, "who": spec.who, "help": spec.help}
            for spec in COMMANDS]


def help_variables(policy: dict[str, Any], requester: str, command: Command) -> dict[str, Any]:
    problem = None
    if command.problem is not None:
        problem = {"text": command.source.text, "key": command.problem}
    return {"requester": requester, "commands": help_entries(policy["commands"]), "docs_url": policy["docs_url"],
            "problem": problem}


@router.register("issue_comment", action="created")
@router.register("issue_comment", action="edited")
async def help_reply(event: sansio.Event, ctx: Context) -> list[Action]:
    issue, comment = event.data["issue"], event.data["comment"]
    if "pull_request" not in issue or from_a_bot(comment.get("user") or {}, ctx.bot_login):
        return []
    names = ctx.policy["commands"]
    if event.data["action"] == "edited":
        before = ((event.data.get("changes") or {}).get("body") or {}).get("from")
        if not edit_is_new_command(before, comment.get("body"), names):
            return []
    command = parse(comment.get("body"), names)
    if not needs_help(command):
        return []
    requester = comment["user"]["login"]
    body = ctx.render("help", **help_variables(ctx.policy, requester, command))
    return [Comment(issue["number"], reply_purpose(comment["id"]), body)]
