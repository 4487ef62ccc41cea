"""Which PR a delivery belongs to, so that every write to one PR's comments runs in one lane, one at a time.

Most events name their PR. A sweep's `workflow_run` goes to the lane of the PR its dispatch id names (the
sweep gate then trusts it only if that PR's record holds the id: bot/rules/dispatched_runs.py); never by its
`pull_requests`, which list whatever open PR shares its head commit (a `main -> release` PR for a fork's sweep
run on `main`). A `check_suite` or `check_run` from a fork names only its head SHA (GitHub leaves
`pull_requests` empty for forks): such a delivery goes to a SHA lane first, and the worker finds the PR for
that SHA before running it, then moves it into the PR's lane.
"""

from __future__ import annotations

import re
from typing import Any

from bot.rules.dispatched_runs import DISPATCH_ID

MAX_NUMBER = 2**31 - 1
SHA = re.compile(r"[0-9a-f]{40}")
PR_NUMBER_FIELDS = ("pr-number", "pr_number")  # repository_dispatch client_payload keys the results service uses
# Events that come in bursts (a person adds three labels in a row, each its own delivery): held back for a
# short window at intake, so that the last of a burst decides on the final state.
SETTLING = frozenset({("pull_request", "labeled"), ("pull_request", "unlabeled")})
_KINDS: dict[tuple[str, str | None], tuple[str, str | None]] = {}


def kind(event: str, action: str | None) -> tuple[str, str | None]:
    """(event, action), one shared tuple per distinct pair: the backlog holds one per waiting delivery."""
    key = (event, action)
    if len(_KINDS) > 4096:
        return key
    return _KINDS.setdefault(key, key)


def _number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 < value <= MAX_NUMBER else None
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 10:
        number = int(value)
        return number if 0 < number <= MAX_NUMBER else None
    return None


def _first_pr(items: Any) -> int | None:
    if isinstance(items, list):
        for item in items:
            if isinstance(item, dict) and (number := _number(item.get("number"))) is not None:
                return number
    return None


def pr_number(event: str, data: dict[str, Any]) -> int | None:
    """The PR (or issue) number a payload names, validated; None when it names none."""
    for key in ("pull_request", "issue"):
        if isinstance(data.get(key), dict) and (number := _number(data[key].get("number"))) is not None:
            return number
    if event == "workflow_run" and isinstance(data.get("workflow_run"), dict):
        run = data["workflow_run"]
        for title in (run.get("display_title"), run.get("name")):
            match = DISPATCH_ID.search(title) if isinstance(title, str) else None
            if match and (number := _number(match.group(1))) is not None:
                return number
        return None
    if event == "check_suite" and isinstance(data.get("check_suite"), dict):
        return _first_pr(data["check_suite"].get("pull_requests"))
    if event == "check_run" and isinstance(data.get("check_run"), dict):
        return _first_pr(data["check_run"].get("pull_requests"))
    if event == "repository_dispatch" and isinstance(data.get("client_payload"), dict):
        for key in PR_NUMBER_FIELDS:
            if (number := _number(data["client_payload"].get(key))) is not None:
                return number
    return None


def head_sha(event: str, data: dict[str, Any]) -> str | None:
    """The head SHA of a check suite or run, for events that may not name their PR. (A workflow run without
    a dispatch id is no sweep of the bot's: no lane of a PR is looked up for it.)"""
    holder = {"check_suite": "check_suite", "check_run": "check_run"}.get(event)
    if holder and isinstance(data.get(holder), dict):
        sha = data[holder].get("head_sha")
        if isinstance(sha, str) and SHA.fullmatch(sha):
            return sha
    return None


def lane(repo: str | None, number: int | None, sha: str | None, delivery_id: str) -> str:
    """Deliveries in one lane are processed in arrival order; lanes run concurrently."""
    if repo and number is not None:
        return f"{repo}#{number}"
    if repo and sha:
        return f"{repo}@{sha}"  # resolved to its PR by the worker before it runs
    if repo:
        return repo
    return f"delivery:{delivery_id}"


def unresolved_sha(lane_name: str) -> tuple[str, str] | None:
    """(repo, sha) for a SHA lane, else None."""
    repo, at, sha = lane_name.rpartition("@")
    return (repo, sha) if at and SHA.fullmatch(sha) else None
