"""The one command dispatcher (handlers/commands.py), table-driven: a comment delivery in, the actions out.

Each case says who wrote or edited which comment, what GitHub answers for the author's permission, and what
the dispatcher must do: which feature function it calls, what it writes at once (👀), what it returns (the
refusal reply and 👎), and whose permission it asks. No HTTP: the context is a stub."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import pytest
from gidgethub import sansio

from bot.core.config import default_policy
from bot.core.processing import Context
from bot.effects.actions import Action, Comment, React, Unreact
from bot.rules.policy import Policy
from handlers import commands as dispatcher_module
from handlers.commands import CommandRoute, CommentCommand, Dispatcher, Feature
from handlers.pr_state import reply_comment

POLICY = default_policy()
BOT = "sweepbot[bot]"
NUMBER, COMMENT_ID = 1, 7


@dataclass
class StubContext:
    """What the dispatcher reads of a Context: the policy, the bot's login, the permission API, apply, render."""

    permission: bool | None = True
    policy: Policy = field(default_factory=lambda: POLICY)
    bot_login: str = BOT
    asked: list[str] = field(default_factory=list)
    applied: list[Action] = field(default_factory=list)
    repo: str = "acme/x"
    refusals: dict = field(default_factory=dict)
    untrusted_writes: bool = False

    async def writer(self, login: str) -> bool | None:
        self.asked.append(login)
        return self.permission

    async def write_now(self, action: Action) -> Any:
        self.applied.append(action)

    cached: bool | None = None  # what the permission cache knows of the author (None: nothing)

    def known_writer(self, login: str) -> bool | None:
        return self.cached

    def writing_after(self, first) -> StubContext:
        return self

    def untrusted(self) -> None:
        self.untrusted_writes = True

    def render(self, kind: str, **variables: Any) -> str:
        return f"{kind}: {variables['outcome']}"


CALLS: list[tuple[str, str, int | None]] = []  # (function, command kind, run id) the features were called with


def ran(name: str) -> list[Action]:
    return [Comment(NUMBER, f"ran-{name}", name)]


async def pin(ctx, call: CommentCommand) -> list[Action]:
    assert call.command is not None  # the dispatcher runs a command's function only for a comment holding one
    CALLS.append(("pin", call.command.kind, call.command.run_id))
    return ran("pin")


async def help_reply(ctx, call: CommentCommand) -> list[Action]:
    assert call.command is not None
    CALLS.append(("help", call.command.kind, call.command.run_id))
    return ran("help")


def refusal(ctx, call: CommentCommand, outcome: str) -> dict[str, Any]:
    assert call.command is not None  # a refusal is of a command the comment holds
    return {"template": "pin_reply", "command": call.command.source.text, "outcome": outcome}


async def comment_changed(ctx, call: CommentCommand) -> list[Action]:
    CALLS.append(("changed", call.action, None))
    return []


FEATURES = [
    Feature(
        commands={"use": CommandRoute(pin, refusal), "reuse": CommandRoute(pin, refusal)},
        comment_changed=(comment_changed,),
    ),
    Feature(commands={"help": CommandRoute(help_reply)}),
]


def delivery(
    body: str | None,
    *,
    action: str = "created",
    before: str | None = None,
    author: str = "maintainer",
    user_type: str = "User",
    editor: str | None = None,
    on_pr: bool = True,
) -> sansio.Event:
    issue: dict[str, Any] = {"number": NUMBER}
    if on_pr:
        issue["pull_request"] = {"url": "https://api.github.com/repos/acme/x/pulls/1"}
    data: dict[str, Any] = {
        "action": action,
        "issue": issue,
        "comment": {"id": COMMENT_ID, "body": body, "user": {"login": author, "type": user_type}},
        "sender": {"login": editor or author},
    }
    if action == "edited":
        data["changes"] = {"body": {"from": before}}
    return sansio.Event(data, event="issue_comment", delivery_id="d1")


def refused(outcome: str, *, edited: bool = False, text: str = "/use 5") -> list[Action]:
    """A refusal when GitHub would not confirm the permission: the reply, 👎, and 👀 off should it be there."""
    # the stub stands in for the Context: reply_comment reads only its render()
    reply = reply_comment(
        cast(Context, StubContext()), NUMBER, COMMENT_ID, {"template": "pin_reply", "command": text, "outcome": outcome}
    )
    actions: list[Action] = [reply, React(COMMENT_ID, "-1"), Unreact(COMMENT_ID, "eyes")]
    return actions + ([Unreact(COMMENT_ID, "+1")] if edited else [])


def not_a_writer(*, edited: bool = False, text: str = "/use 5") -> list[Action]:
    """A refusal of someone GitHub says cannot write: the reply alone (and a 👍 from when they could, if any)."""
    reply = reply_comment(
        cast(Context, StubContext()),
        NUMBER,
        COMMENT_ID,
        {"template": "pin_reply", "command": text, "outcome": "unauthorized"},
    )
    actions: list[Action] = [reply]
    return actions + ([Unreact(COMMENT_ID, "+1")] if edited else [])


SEEN = [React(COMMENT_ID, "eyes")]

# (id, delivery, the author's permission, feature calls, applied at once, returned, whose permission was asked)
CASES = [
    ("maintainer-allowed", delivery("/use 5"), True, [("pin", "use", 5)], SEEN, ran("pin"), ["maintainer"]),
    (
        "legacy-name-allowed",
        delivery("/reuse-sweep-run"),
        True,
        [("pin", "reuse", None)],
        SEEN,
        ran("pin"),
        ["maintainer"],
    ),
    ("no-write-refused", delivery("/use 5", author="partner"), False, [], [], not_a_writer(), ["partner"]),
    ("permission-unknown", delivery("/use 5"), None, [], [], refused("permission_unknown"), ["maintainer"]),
    ("anyone-may-ask-help", delivery("/help", author="partner"), False, [("help", "help", None)], [], ran("help"), []),
    (
        "usage-problem-gets-help-for-anyone",
        delivery("/use abc", author="partner"),
        False,
        [("help", "use", None)],
        [],
        ran("help"),
        [],
    ),
    ("another-bot", delivery("/use 5", author="renovate", user_type="Bot"), True, [], [], [], []),
    ("the-app-itself", delivery("/use 5", author=BOT), True, [], [], [], []),
    ("not-a-pull-request", delivery("/use 5", on_pr=False), True, [], [], [], []),
    ("no-command", delivery("Looks good to me"), True, [], [], [], []),
    ("command-in-code", delivery("```\n/use 5\n```"), True, [], [], [], []),
    ("kind-no-feature-runs", delivery("/stage-results 5"), True, [], [], [], []),
    (
        "edit-adds-a-command",
        delivery("thanks\n/use 5", action="edited", before="thanks"),
        True,
        [("changed", "edited", None), ("pin", "use", 5)],
        SEEN,
        ran("pin"),
        ["maintainer"],
    ),
    (
        "edit-keeps-the-command",
        delivery("/use 5\nthanks", action="edited", before="/use 5"),
        True,
        [("changed", "edited", None)],
        [],
        [],
        [],
    ),
    (
        "edit-changes-the-run-refused",
        delivery("/use 6", action="edited", before="/use 5", author="partner"),
        False,
        [("changed", "edited", None)],
        [],
        not_a_writer(edited=True, text="/use 6"),
        ["partner"],
    ),
    (
        "edit-by-non-author-runs-nothing",
        delivery("/use 5", action="edited", before="hi", editor="admin"),
        True,
        [("changed", "edited", None)],
        [],
        [],
        [],
    ),
    (
        "edit-by-non-author-editor-case-is-the-author",
        delivery("/use 5", action="edited", before="hi", editor="MAINTAINER"),
        True,
        [("changed", "edited", None), ("pin", "use", 5)],
        SEEN,
        ran("pin"),
        ["maintainer"],
    ),
    (
        "edit-by-non-author-still-gets-help",
        delivery("/help", action="edited", before="hi", author="partner", editor="admin"),
        None,
        [("changed", "edited", None), ("help", "help", None)],
        [],
        ran("help"),
        [],
    ),
    (
        "deleted-tells-the-features-and-runs-nothing",
        delivery("/use 5", action="deleted"),
        True,
        [("changed", "deleted", None)],
        [],
        [],
        [],
    ),
]


@pytest.mark.parametrize(
    "event, permission, calls, applied, returned, asked", [pytest.param(*case[1:], id=case[0]) for case in CASES]
)
async def test_dispatch(event, permission, calls, applied, returned, asked):
    CALLS.clear()
    ctx = StubContext(permission=permission)
    dispatcher = Dispatcher(FEATURES)

    assert await dispatcher.dispatch(event, ctx) == returned
    assert CALLS == calls
    assert ctx.applied == applied
    assert ctx.asked == asked


@pytest.mark.parametrize(
    "event, parsed",
    [
        (delivery("/use 5"), ["/use 5"]),
        (delivery("/use 6", action="edited", before="/use 5"), ["/use 6", "/use 5"]),
        (delivery("no command now", action="edited", before="/use 5"), ["no command now", "/use 5"]),
        (delivery("/use 5", action="deleted"), []),
        (delivery("/use 5", author="renovate", user_type="Bot"), []),
    ],
    ids=["created", "edited", "edited-away", "deleted", "bot"],
)
async def test_each_body_is_parsed_at_most_once(monkeypatch, event, parsed):
    """Regression: help, the pin command, staging and the pin's withdrawal each parsed the comment
    again (up to three times a body per delivery). Here every feature function and hook reads the command and
    the one before the edit, and still each body is parsed once."""
    bodies: list[str | None] = []
    real = dispatcher_module.parse

    def counting(body, names):
        bodies.append(body)
        return real(body, names)

    async def reads_everything(ctx, call: CommentCommand) -> list[Action]:
        for _ in range(3):
            call.command, call.before, call.is_new  # noqa: B018
        return []

    monkeypatch.setattr(dispatcher_module, "parse", counting)
    route = CommandRoute(reads_everything, refusal)
    dispatcher = Dispatcher([Feature(commands={"use": route}, comment_changed=(reads_everything, reads_everything))])
    await dispatcher.dispatch(event, StubContext())
    assert sorted(bodies) == sorted(parsed)


@pytest.mark.parametrize(
    "features, message",
    [
        ([Feature(commands={"deploy": CommandRoute(pin)})], "no command 'deploy'"),
        (
            [
                Feature(commands={"use": CommandRoute(pin, refusal)}),
                Feature(commands={"use": CommandRoute(pin, refusal)}),
            ],
            "two features run the command 'use'",
        ),
        ([Feature(commands={"use": CommandRoute(pin)})], "needs a refusal reply"),
    ],
    ids=["unknown-kind", "two-features", "maintainers-without-refusal"],
)
def test_a_registration_the_dispatcher_cannot_honour_is_refused_at_start(features, message):
    with pytest.raises(ValueError, match=message):
        Dispatcher(features)


def test_a_who_the_dispatcher_cannot_check_is_refused_at_start(monkeypatch):
    """A new `who` in the registry needs a check here first: until then its commands do not start."""
    from dataclasses import replace

    specs = dict(dispatcher_module.SPECS)
    specs["stage"] = replace(specs["stage"], who="owners")
    monkeypatch.setattr(dispatcher_module, "SPECS", specs)
    with pytest.raises(ValueError, match="cannot check who 'owners'"):
        Dispatcher([Feature(commands={"stage": CommandRoute(pin, refusal)})])


@pytest.mark.parametrize(
    "features, actions",
    [
        ([], set()),
        ([Feature(commands={"help": CommandRoute(help_reply)})], {"created", "edited"}),
        ([Feature(comment_changed=(comment_changed,))], {"edited", "deleted"}),
        (FEATURES, {"created", "edited", "deleted"}),
    ],
    ids=["nothing", "commands", "hooks", "both"],
)
def test_the_dispatcher_subscribes_only_to_what_its_features_need(features, actions):
    router = Dispatcher(features).router
    subscribed = {
        action for action in ("created", "edited", "deleted") if router.fetch(delivery("/help", action=action))
    }
    assert subscribed == actions


async def test_an_outsiders_refusals_are_answered_once_an_hour_per_pr_and_paced_last():
    """Regression: a refused command cost about 4 writes (👀, the reply or its edit, 👎, 👀 removed) and each edit
    as many again: any commenter editing `/use 1` 24 times spent about 100 of the installation's writes in a
    second, and a maintainer's label on another PR dispatched after 55 s instead of 3.5 s."""
    ctx = StubContext(permission=False)
    dispatcher = Dispatcher(FEATURES)
    first = await dispatcher.dispatch(delivery("/use 1", author="stranger"), ctx)
    assert first == not_a_writer(text="/use 1") and ctx.untrusted_writes
    for n in range(2, 26):  # the same comment edited, then a second comment on the same PR
        edit = delivery(f"/use {n}", action="edited", before=f"/use {n - 1}", author="stranger")
        assert await dispatcher.dispatch(edit, ctx) == [Unreact(COMMENT_ID, "+1")]
    assert await dispatcher.dispatch(delivery("/use 99", author="stranger"), ctx) == []
    assert ctx.applied == [], "nothing written at once: no 👀 for someone who cannot write"
    other_pr = delivery("/use 1", author="stranger")
    other_pr.data["issue"]["number"] = 2
    assert len(await dispatcher.dispatch(other_pr, ctx)) == 1, "another PR: answered once there too"


async def test_a_writer_the_cache_knows_gets_eyes_at_once_and_loses_them_if_github_now_refuses():
    CALLS.clear()
    ctx = StubContext(permission=True, cached=True)
    assert await Dispatcher(FEATURES).dispatch(delivery("/use 5"), ctx) == ran("pin")
    assert ctx.applied == SEEN
    lapsed = StubContext(permission=False, cached=True)  # write taken away since the cache knew it
    returned = await Dispatcher(FEATURES).dispatch(delivery("/use 5"), lapsed)
    assert lapsed.applied == SEEN and returned == [*not_a_writer(), Unreact(COMMENT_ID, "eyes")]
