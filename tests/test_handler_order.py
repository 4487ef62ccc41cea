"""The order of a delivery's writes is the registry's (handlers/registry.py FEATURES), never the handlers' names;
and a feature writes mid-flow only through the one named step, `ctx.write_now`."""

from __future__ import annotations

import re
from pathlib import Path

from gidgethub import routing, sansio
from harness import REPO

from bot.core.routing import OrderedRouter, ordered
from bot.effects.actions import Comment
from handlers.registry import router

HANDLERS = Path(__file__).resolve().parent.parent / "handlers"


def names(event: str, action: str | None) -> list[str]:
    data = {"action": action} if action else {}
    return [
        f"{h.__module__.split('.')[-1]}.{h.__name__}"
        for h in ordered(router, sansio.Event(data, event=event, delivery_id="order"))
    ]


def test_each_events_handlers_run_in_the_order_the_registry_lists():
    """The order handlers/registry.py's docstring lists, as `sweepbot serve` runs them."""
    assert names("pull_request", "opened") == [
        "welcome.welcome_opened",
        "autolabel.autolabel",
        "sweep_gate.pull_request_changed",
        "changelog_suggestions.suggest_fixes",
        "board.board_changed",
    ]
    assert names("pull_request", "synchronize") == [
        "autolabel.autolabel",
        "signoff.pushed",
        "sweep_gate.pull_request_changed",
        "changelog_suggestions.suggest_fixes",
        "board.board_changed",
    ]
    assert names("pull_request", "closed") == [
        "reuse_command.merged",
        "sweep_gate.pull_request_changed",
        "board.board_changed",
    ]
    assert names("issue_comment", "created") == ["commands.dispatch", "signoff.signoff_posted", "board.board_changed"]
    assert names("workflow_run", "completed") == [
        "signoff.sweep_finished",
        "sweep_gate.sweep_run_changed",
        "board.board_changed",
    ]
    assert names("check_run", "rerequested") == [
        "signoff.rerun_requested",
        "sweep_gate.check_run_changed",
        "board.board_changed",
    ]
    assert names("push", None) == ["config_refresh.refresh_config", "default_branch_changelog.check_pushed_changelog"]


def comment_writer(purpose: str, name: str):
    async def handler(event, ctx):
        return [Comment(event.data["issue"]["number"], purpose, f"{purpose} says hello")]

    handler.__name__ = handler.__qualname__ = name
    return handler


async def test_a_rename_cannot_change_the_order_of_writes(make_harness):
    """Two features whose handlers' names sort the other way round: the writes follow the order the routers were
    given (before, the handlers of one event were sorted by module and name)."""
    first, second = routing.Router(), routing.Router()
    first.add(comment_writer("first", "zzz_runs_first"), "issue_comment", action="created")
    second.add(comment_writer("second", "aaa_runs_second"), "issue_comment", action="created")
    h = await make_harness(router=OrderedRouter(first, second))
    h.github.add_pull(REPO, number=7, user="partner")
    comment = h.github.add_comment(REPO, 7, "hi", user="partner")
    await h.deliver("issue_comment", h.github.issue_comment_payload(REPO, 7, comment))
    bodies = [w.json["body"] for w in h.github.writes if w.path.endswith("/issues/7/comments")]
    assert [b.split("\n")[1] for b in bodies] == ["first says hello", "second says hello"]


def test_no_feature_writes_mid_flow_but_through_write_now():
    """`ctx.write_now` is the one documented way to write before a handler returns (bot/core/processing.py)."""
    found = [
        f"{path.name}:{n}"
        for path in sorted(HANDLERS.glob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\bctx\.apply\(", line)
    ]
    assert found == []
