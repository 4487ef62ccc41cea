"""Labels from path rules, like actions/labeler; the bot removes only labels it added itself."""

from __future__ import annotations

from typing import Any, Iterable

from gidgethub import routing, sansio

from bot.effects.actions import Action, AddLabels, EnsureLabel, RemoveLabel
from bot.core.processing import Context
from handlers.paths import any_match

ACTIONS = ("opened", "synchronize", "reopened")

router = routing.Router()


def label_changes(files: Iterable[str], current: Iterable[str],
                  rules: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """(rules whose label is missing and should be added, rule labels present whose paths no longer match)."""
    files, current = list(files), {name.casefold() for name in current}  # GitHub label names ignore case
    add, stale = [], []
    for rule in rules:
        hit = any_match(files, rule["paths"])
        if hit and rule["label"].casefold() not in current:
            add.append(rule)
        elif not hit and rule["label"].casefold() in current:
            stale.append(rule["label"])
    return add, stale


def last_labeler(events: Iterable[dict[str, Any]], label: str) -> str | None:
    """Who applied `label` most recently, from the issue's label events (oldest first)."""
    who = None
    for e in events:
        if ((e.get("label") or {}).get("name") or "").casefold() != label.casefold():
            continue
        who = (e.get("actor") or {}).get("login") if e.get("event") == "labeled" else None
    return who


def plan(add: list[dict[str, Any]], removable: list[str], number: int) -> list[Action]:
    actions: list[Action] = [EnsureLabel(r["label"], r["color"], r["description"]) for r in add]
    if add:
        actions.append(AddLabels(number, tuple(r["label"] for r in add)))
    actions.extend(RemoveLabel(number, label) for label in removable)
    return actions


async def autolabel(event: sansio.Event, ctx: Context) -> list[Action]:
    pr = event.data["pull_request"]
    current = [label["name"] for label in pr.get("labels") or []]
    files = await ctx.pr_files(pr["number"])
    add, stale = label_changes(files, current, ctx.policy["autolabels"])
    if add or stale:  # the payload is a snapshot (a redelivery, a queued event): check GitHub before writing
        current = await ctx.labels(pr["number"])
        add, stale = label_changes(files, current, ctx.policy["autolabels"])
    removable = []
    if stale:  # state from GitHub itself: only labels whose latest `labeled` event is the bot's
        events = await ctx.label_events(pr["number"])
        removable = [label for label in stale if last_labeler(events, label) == ctx.bot_login]
    return plan(add, removable, pr["number"])


for _action in ACTIONS:
    router.add(autolabel, "pull_request", action=_action)
