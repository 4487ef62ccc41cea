"""Answer `/help`, and a known command written with wrong arguments, with the command reference."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

from bot.core.processing import Context
from bot.effects.actions import Action, Comment
from bot.rules.commands import COMMANDS, USAGE_ANSWER, Command, answering_kind
from bot.rules.policy import Policy
from handlers.commands import CommandRoute, CommentCommand, Feature
from handlers.pr_state import reply_purpose


def needs_help(command: Command | None) -> bool:
    """Whether `command` gets the help reply: `/help` itself, or a command written with wrong arguments."""
    return command is not None and answering_kind(command) == USAGE_ANSWER


def help_entries(names: Mapping[str, str]) -> list[dict[str, str]]:
    """The registry's commands in its order, as the help template lists them, with the names configured here."""
    return [
        {"kind": spec.kind, "name": names[spec.kind], "run_id": spec.run_id, "who": spec.who, "help": spec.help}
        for spec in COMMANDS
    ]


class Problem(TypedDict):
    """A command written with wrong arguments: its text and what is wrong (a USAGE_PROBLEMS key)."""

    text: str
    key: str


class HelpVariables(TypedDict):
    """What templates/help.* render."""

    requester: str
    commands: list[dict[str, str]]
    docs_url: str
    problem: Problem | None
    results_service: bool  # policy results.enabled: the use and stage texts say what is sent


def help_variables(policy: Policy, requester: str, command: Command) -> HelpVariables:
    problem = None
    if command.problem is not None:
        problem = Problem(text=command.source.text, key=command.problem)
    return HelpVariables(
        requester=requester,
        commands=help_entries(policy.commands.names()),
        docs_url=policy.docs_url,
        problem=problem,
        results_service=policy.results.enabled,
    )


async def help_reply(ctx: Context, call: CommentCommand) -> list[Action]:
    """The help reply to `call`'s command (handlers/commands.py routes `/help` and every usage problem here)."""
    body = ctx.render("help", **help_variables(ctx.policy, call.author, call.given))
    return [Comment(call.number, reply_purpose(call.comment_id), body)]


feature = Feature(commands={"help": CommandRoute(help_reply)})
