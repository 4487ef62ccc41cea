"""Labels from path rules, like actions/labeler; the bot removes only labels it added itself."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gidgethub import sansio

from bot.core import routing
from bot.core.processing import Context
from bot.effects.actions import Action, AddLabels, EnsureLabel, RemoveLabel
from bot.rules.policy import AutoLabel
from bot.rules.pull_request import label_key, last_applied
from handlers.paths import any_match

ACTIONS = ("opened", "synchronize", "reopened")

router = routing.Router()


def label_changes(
    files: Iterable[str], current: Iterable[str], rules: Iterable[AutoLabel]
) -> tuple[list[AutoLabel], list[str]]:
    """(rules whose label is missing and should be added, rule labels present whose paths no longer match)."""
    files, current = list(files), {label_key(name) for name in current}
    add, stale = [], []
    for rule in rules:
        hit = any_match(files, rule.paths)
        if hit and label_key(rule.label) not in current:
            add.append(rule)
        elif not hit and label_key(rule.label) in current:
            stale.append(rule.label)
    return add, stale


def last_labeler(events: Iterable[dict[str, Any]], label: str) -> str | None:
    """Who put `label` on as it is now, from the issue's label events (oldest first); None when it is off."""
    return ((last_applied(events, label) or {}).get("actor") or {}).get("login")


def plan(add: list[AutoLabel], removable: list[str], number: int) -> list[Action]:
    actions: list[Action] = [EnsureLabel(r.label, r.color, r.description) for r in add]
    if add:
        actions.append(AddLabels(number, tuple(r.label for r in add)))
    actions.extend(RemoveLabel(number, label) for label in removable)
    return actions


async def autolabel(event: sansio.Event, ctx: Context) -> list[Action]:
    pr = event.data["pull_request"]
    current = [label["name"] for label in pr.get("labels") or []]
    files = await ctx.pr_files(pr["number"])
    add, stale = label_changes(files, current, ctx.policy.autolabels)
    if add or stale:  # the payload is a snapshot (a redelivery, a queued event): check GitHub before writing
        current = await ctx.labels(pr["number"])
        add, stale = label_changes(files, current, ctx.policy.autolabels)
    removable = []
    if stale:  # state from GitHub itself: only labels whose latest `labeled` event is the bot's
        events = await ctx.label_events(pr["number"])
        removable = [label for label in stale if last_labeler(events, label) == ctx.bot_login]
    return plan(add, removable, pr["number"])


for _action in ACTIONS:
    router.add(autolabel, "pull_request", action=_action)
