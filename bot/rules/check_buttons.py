"""The `sweep-gate` check run's buttons: which it shows, and what a press does.

GitHub shows a check run's buttons (`actions`) to everyone who can read the repository and sends a press as a
`check_run` `requested_action` event with the button's identifier. So a press counts only from someone with
write, maintain or admin permission (the same people whose labels count); anyone else's press does nothing but
a log line.

- "Run the sweep again" (`sweep-again`) does what removing and re-adding the primary label does: a new dispatch
  id for the same commit and labels (the press is recorded in the status comment's record, written by the bot),
  and a sweep despite a pin. Offered while one primary label counts and the PR is open.
- "Move to the front" (`queue-front`) puts a sweep waiting in its runner pool's queue ahead of every sweep no
  writer moved (bot/rules/sweep_queue.py). Offered while the sweep waits there.
- "Approve this commit" (`approve-head`, forks only) does what a writer's primary label does: it approves the
  head commit of that moment for the primary label on the PR. Offered while that label approves an older head
  (or the bot does not know which).
- "Merge" (`merge`) does what a maintainer's `/merge` does (handlers/merge_command.py runs it; its checks decide
  whether anything is merged). Offered while a run is pinned and the PR is open.
- "Confirm sweep" (`confirm-sweep`) lets a sweep of more points than `sweeps.confirm_over` start: recorded in
  the status comment's record for the PR's current dispatch id only (a push or relabel needs a new press).
  Offered while the `cost` condition waits for it, which it does only when nothing else holds the sweep: so at
  most three buttons show at once, GitHub's limit (a pin, which offers "Merge", pauses sweeps).

A press is named by the check run and the content it showed (its `external_id`, the bot's fingerprint of it):
GitHub sending the same press again names the same token and starts nothing; after the bot rewrites the check
(a sweep started, the head approved) a new press has a new token.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from bot.rules.fingerprint import digest

GATE_CHECK = "sweep-gate"  # the check run that shows these buttons
SWEEP_AGAIN = "sweep-again"
APPROVE = "approve-head"
FRONT = "queue-front"
MERGE = "merge"
CONFIRM = "confirm-sweep"
BUTTONS = (SWEEP_AGAIN, FRONT, APPROVE, MERGE, CONFIRM)  # the order they are shown in
# The fork approval codes for which the primary label on the PR approves no current head.
UNAPPROVED = frozenset({"head_changed", "approval_unknown"})

# What a press does
RESTART, APPROVE_HEAD, MERGE_PR, CONFIRM_SWEEP = "restart", "approve", "merge", "confirm"
MOVE_TO_FRONT = "front"
NOT_A_WRITER, UNKNOWN, NOT_OFFERED, ALREADY_DONE = "not-a-writer", "unknown-button", "not-offered", "already-done"


MAX_BUTTONS = 3  # GitHub's limit on a check run's `actions`


def offered(conditions: Iterable[Any], *, open: bool, is_fork: bool) -> tuple[str, ...]:
    """The buttons for a gate decision's conditions (each with `.name`, `.ok`, `.reason_code`)."""
    if not open:
        return ()
    by_name = {c.name: c for c in conditions}
    shown = []
    labels = by_name.get("labels")
    if labels is not None and labels.ok is True:
        shown.append(SWEEP_AGAIN)
    dispatch = by_name.get("dispatch")
    if dispatch is not None and dispatch.reason_code == "queued":
        shown.append(FRONT)
    approval = by_name.get("fork_approval")
    if is_fork and approval is not None and approval.reason_code in UNAPPROVED:
        shown.append(APPROVE)
    pin = by_name.get("reuse_pin")
    if pin is not None and pin.ok is True:  # a run is pinned: what a merge reuses
        shown.append(MERGE)
    cost = by_name.get("cost")
    if cost is not None and cost.reason_code == "awaiting":
        shown.append(CONFIRM)
    # GitHub refuses a check run with more than three buttons; no state of a PR offers more today, and should one
    # come to, the check is still written, with the first three
    return tuple(shown[:MAX_BUTTONS])


def press(
    identifier: Any, *, writer: bool | None, offered_now: Iterable[str], token: str, recorded_token: str | None
) -> str:
    """What a press of `identifier` does: RESTART, APPROVE_HEAD, MERGE_PR or CONFIRM_SWEEP, or why it does
    nothing (a log line)."""
    if identifier not in BUTTONS:
        return UNKNOWN
    if writer is not True:  # GitHub would not confirm write permission: the press counts for nothing
        return NOT_A_WRITER
    if identifier not in set(offered_now):
        return NOT_OFFERED  # pressed on a check that no longer shows it (the state moved on)
    if identifier == SWEEP_AGAIN:
        return ALREADY_DONE if token == recorded_token else RESTART
    if identifier == FRONT:
        return MOVE_TO_FRONT  # pressed again once moved: the handler finds it moved already
    if identifier == MERGE:
        return MERGE_PR  # a press sent again merges nothing twice: a merged PR is not merged again
    if identifier == CONFIRM:
        return CONFIRM_SWEEP
    return APPROVE_HEAD


def press_token(check_run_id: Any, external_id: Any) -> str:
    """The press's name: the check run and the content it showed when pressed."""
    return digest(str(check_run_id), str(external_id or ""))[:16]
