"""The one command dispatcher: a comment's command is parsed once, who may run it is checked once (the command
registry's `CommandSpec.who`, the same data `/help` shows), and only then the feature's function runs it.

For an `issue_comment` on a pull request (handlers/registry.py builds one dispatcher over the features it runs):
1. a bot's comment runs nothing: the bot obeys neither itself nor other bots;
2. its body is parsed once (an edit's earlier body too, once, when it is needed). Features that keep state on
   a command comment (a pin) hear of its edit or deletion first (`Feature.comment_changed`);
3. only a new command runs: a new comment's, or one an edit added or changed;
4. a command written with wrong arguments is answered by help's usage reply, which anyone may get;
5. a command only maintainers may run runs only for its author (an edit by someone else runs nothing: the
   author did not write it); the author's permission is asked first, through `ctx.writer` (the permission
   API, never the association), and only a confirmed writer's comment gets 👀 (while the feature reads). For
   someone GitHub says cannot write the command costs at most one write: the reply, once per person and PR
   an hour, and nothing for edits or further commands meanwhile (their writes also go after everyone else's:
   `ctx.untrusted`). A permission GitHub would not confirm gets the reply and 👎. A refused command's feature
   function is not called; a feature that keeps state on the comment lets go first of what its earlier
   command held (`CommandRoute.on_refusal`: the comment now gives a command its author may not run).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gidgethub import sansio

from bot.core import routing
from bot.core.processing import Context
from bot.effects.actions import Action, React, Unreact
from bot.rules.commands import ANYONE, MAINTAINERS, SPECS, Command, answering_kind, is_new_command, parse
from bot.telemetry import logs
from handlers.pr_state import from_a_bot, reply_comment

SEEN, ACCEPTED, REFUSED = "eyes", "+1", "-1"  # the reactions that answer a maintainer's command
UNAUTHORIZED, PERMISSION_UNKNOWN = "unauthorized", "permission_unknown"  # the refusal outcomes the replies show
WHO = frozenset({ANYONE, MAINTAINERS})  # every `who` the dispatcher can check


class CommentCommand:
    """One `issue_comment` delivery on a PR as the dispatcher reads it; each body is parsed at most once."""

    def __init__(self, data: Mapping[str, Any], names: Mapping[str, str]):
        self.comment: Mapping[str, Any] = data["comment"]
        self.number: int = data["issue"]["number"]
        self.action: str = data["action"]  # created, edited or deleted
        self.author: str = (self.comment.get("user") or {}).get("login") or ""
        self.editor: str = (data.get("sender") or {}).get("login") or ""  # who made this change
        self._before_body = ((data.get("changes") or {}).get("body") or {}).get("from")
        self._names = names

    @property
    def comment_id(self) -> int:
        return self.comment["id"]

    @property
    def edited(self) -> bool:
        return self.action == "edited"

    @functools.cached_property
    def command(self) -> Command | None:
        """The comment's effective command now (None when it holds none, or was deleted)."""
        return None if self.action == "deleted" else parse(self.comment.get("body"), self._names)

    @property
    def given(self) -> Command:
        """The command this delivery gives: the dispatcher runs a feature's command function only for one."""
        if self.command is None:
            raise ValueError(f"comment {self.comment_id} gives no command")
        return self.command

    @functools.cached_property
    def before(self) -> Command | None:
        """An edited comment's effective command before the edit (None for other deliveries)."""
        return parse(self._before_body, self._names) if self.edited else None

    @property
    def is_new(self) -> bool:
        """Whether this delivery gives its command: a new comment's, or one an edit added or changed."""
        if self.action == "created":
            return self.command is not None
        return self.edited and is_new_command(self.before, self.command)

    @property
    def given_at(self) -> str:
        """When the comment's command was given: its edit's time for an edit (a new command), else its creation's."""
        return str(self.comment.get("updated_at" if self.edited else "created_at") or "")

    @property
    def by_author(self) -> bool:
        return self.action != "edited" or self.editor.casefold() == self.author.casefold()


CommandFunction = Callable[[Context, CommentCommand], Awaitable[list[Action]]]
# The reply's variables for a command its author may not run (outcome UNAUTHORIZED or PERMISSION_UNKNOWN).
RefusalReply = Callable[[Context, CommentCommand, str], dict[str, Any]]
# What a feature does when the dispatcher refuses a command (the same outcome): the actions go before the reply.
RefusalHook = Callable[[Context, CommentCommand, str], Awaitable[list[Action]]]


@dataclass(frozen=True)
class CommandRoute:
    """What runs one kind of command: `run` once the dispatcher let it through; `refusal` renders its reply when
    the author may not run it (required unless anyone may), and `on_refusal`, if given, is told first (a pin
    its comment held, changed into a command its author may not run, is withdrawn)."""

    run: CommandFunction
    refusal: RefusalReply | None = None
    on_refusal: RefusalHook | None = None


@dataclass(frozen=True)
class Feature:
    """What a feature gives the registry: the events it handles itself (`router`), the command kinds it runs
    (bot/rules/commands.py kinds), and what it does when a command comment is edited or deleted."""

    router: routing.Router = field(default_factory=routing.Router)
    commands: Mapping[str, CommandRoute] = field(default_factory=dict)
    comment_changed: tuple[CommandFunction, ...] = ()


def authority_outcome(allowed: bool | None) -> str | None:
    """The outcome of a command its author may not run: None when the permission API confirmed write."""
    return None if allowed else (PERMISSION_UNKNOWN if allowed is None else UNAUTHORIZED)


def answered_lately(ctx: Context, call: CommentCommand) -> bool:
    """Whether the bot answered this person on this PR within the last REFUSAL_QUIET; notes that it does now."""
    key = (ctx.repo.casefold(), call.number, call.author.casefold())
    if key in ctx.refusals:
        return True
    ctx.refusals[key] = time.time()
    return False


def answered(comment_id: int, accepted: bool, *, edited: bool) -> list[Action]:
    """👀 replaced by 👍 or 👎; after an edit the opposite one may stand from the comment's earlier command."""
    shown, other = (ACCEPTED, REFUSED) if accepted else (REFUSED, ACCEPTED)
    # the answer first, then 👀 taken off: the maintainer sees the answer one round trip sooner
    reactions: list[Action] = [React(comment_id, shown), Unreact(comment_id, SEEN)]
    return reactions + ([Unreact(comment_id, other)] if edited else [])


class Dispatcher:
    """The command functions and comment hooks of some features, behind one `issue_comment` handler (`router`)."""

    def __init__(self, features: Iterable[Feature]):
        self.routes: dict[str, CommandRoute] = {}
        self.hooks: list[CommandFunction] = []
        for feature in features:
            for kind, route in feature.commands.items():
                self._check(kind, route)
                self.routes[kind] = route
            self.hooks.extend(feature.comment_changed)
        actions = ({"created", "edited"} if self.routes else set()) | ({"edited", "deleted"} if self.hooks else set())
        self.router = routing.Router()
        for action in sorted(actions):
            self.router.add(self.dispatch, "issue_comment", action=action)

    def _check(self, kind: str, route: CommandRoute) -> None:
        if kind not in SPECS:
            raise ValueError(f"no command {kind!r} in the command registry (bot/rules/commands.py)")
        if kind in self.routes:
            raise ValueError(f"two features run the command {kind!r}")
        who = SPECS[kind].who
        if who not in WHO:
            raise ValueError(f"command {kind!r}: the dispatcher cannot check who {who!r}")
        if who != ANYONE and route.refusal is None:
            raise ValueError(f"command {kind!r}: not anyone may run it, so it needs a refusal reply")

    async def dispatch(self, event: sansio.Event, ctx: Context) -> list[Action]:
        data = event.data
        if "pull_request" not in data["issue"] or from_a_bot(data["comment"].get("user") or {}, ctx.bot_login):
            return []
        call = CommentCommand(data, ctx.policy.commands.names())
        if call.action in ("edited", "deleted"):
            for hook in self.hooks:
                for action in await hook(ctx, call):
                    await ctx.write_now(action)
        if not call.is_new:
            return []
        return await self.run(ctx, call)

    async def run(self, ctx: Context, call: CommentCommand) -> list[Action]:
        """Check who may run the new command `call` gives, then run it."""
        kind = answering_kind(call.given)
        route = self.routes.get(kind)
        if route is None:
            return []  # no feature here runs it
        if SPECS[kind].who == ANYONE:
            return await route.run(ctx, call)
        if not call.by_author:
            logs.event(
                "command edited in by someone else than its author: not run",
                comment=call.comment_id,
                editor=call.editor,
            )
            return []
        # a writer confirmed lately (the permission cache) gets 👀 at once; anyone else's permission is asked
        # before any write, so an outsider's command costs at most one
        seen = (
            asyncio.ensure_future(ctx.write_now(React(call.comment_id, SEEN)))
            if ctx.known_writer(call.author)
            else None
        )
        allowed = await ctx.writer(call.author)
        refusal = authority_outcome(allowed)
        if refusal is not None:  # a role taken away since the cache knew it: its 👀 is taken off with the refusal
            if seen is not None:
                await seen
            return [
                *await self.refuse(ctx, call, route, refusal),
                *([Unreact(call.comment_id, SEEN)] if seen is not None else []),
            ]
        # 👀 while the feature reads: the maintainer sees it was heard; the feature's writes come after it
        seen = seen or asyncio.ensure_future(ctx.write_now(React(call.comment_id, SEEN)))
        try:
            return await route.run(ctx.writing_after(seen), call)
        finally:
            await seen

    async def refuse(self, ctx: Context, call: CommentCommand, route: CommandRoute, refusal: str) -> list[Action]:
        """A command its author may not run. Someone GitHub says cannot write costs at most one write: the reply,
        once per person and PR in REFUSAL_QUIET (an edit, or another such command, meanwhile gets nothing), and
        their delivery's writes go after everyone else's. When GitHub would not confirm the permission (it may be
        a maintainer's), the reply and 👎 as for any refusal."""
        assert route.refusal is not None  # _check requires one of every command not anyone may run
        variables = route.refusal(ctx, call, refusal)
        let_go = await route.on_refusal(ctx, call, refusal) if route.on_refusal is not None else []
        reply = reply_comment(ctx, call.number, call.comment_id, variables)
        if refusal == PERMISSION_UNKNOWN:
            return [*let_go, reply, *answered(call.comment_id, False, edited=call.edited)]
        ctx.untrusted()
        stale = [Unreact(call.comment_id, ACCEPTED)] if call.edited else []  # from when they could write
        if answered_lately(ctx, call):
            logs.event(
                "command refused again to someone without write permission: not answered",
                comment=call.comment_id,
                author=call.author,
            )
            return [*let_go, *stale]
        return [*let_go, reply, *stale]
