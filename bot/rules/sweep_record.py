"""The sweep gate's memory, kept on GitHub: a JSON record hidden in the bot's own sweep status comment.

It holds what the bot cannot read back from GitHub's state alone: which head SHA a writer approved on a fork
when they applied a primary label or pressed "Approve this commit" (a label event does not say), the runs the
bot dispatched for the PR with their dispatch ids, the run pinned for reuse, and the last "Run the sweep again"
press (which, like re-adding the primary label, asks for a new dispatch id). Losing the local journal loses nothing: the
next delivery reads this record again. Only the bot's own comment counts (the caller finds it by author and marker), so
nobody else can forge it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from bot.rules.markers import hidden_record, is_hidden_record, purpose_of, read_hidden_record
from bot.rules.policy import Policy
from bot.rules.pull_request import label_key, sweep_label_names

VERSION = 1
KEPT_FINISHED = 20  # finished runs kept besides the pinned one; a run still going is always kept (it may be cancelled)
RECORD = "record"  # its hidden line: <!-- sweepbot-record {...} -->
_FINISHED = "completed"


@dataclass(frozen=True)
class Approval:
    """A writer applied primary `label` on a fork PR while its head was `head_sha`, at `at` (the PR's
    `updated_at` in that `labeled` delivery): an older label event, redelivered, never overrides a newer one."""

    label: str
    by: str
    head_sha: str
    at: str = ""
    via: str = "label"  # "label": `by` applied it; "button": `by`, a writer, pressed "Approve this commit"


@dataclass(frozen=True)
class Restart:
    """A writer pressed "Run the sweep again" on the `sweep-gate` check: `token` names that press (the check run
    and the content it showed, so a redelivered press is the same token), `at` when (ISO 8601)."""

    token: str
    by: str
    at: str


@dataclass(frozen=True)
class Confirmation:
    """A writer pressed "Confirm sweep" for a sweep over `sweeps.confirm_over`: it holds for `dispatch_id` only
    (the PR's head, labels and label generation at the press), so a push or relabel asks for a new one; `token`
    names the press, as a restart's does."""

    dispatch_id: str
    by: str
    at: str
    token: str = ""


@dataclass(frozen=True)
class RunRecord:
    dispatch_id: str
    run_id: int
    head_sha: str
    workflow: str
    status: str = "queued"
    conclusion: str | None = None
    html_url: str | None = None

    @property
    def finished(self) -> bool:
        return self.status == _FINISHED


@dataclass(frozen=True)
class Pin:
    """An authorized reuse command pinned run `run_id`: from comment `comment_id` by `by` at `created_at`."""

    run_id: int
    comment_id: int
    by: str
    created_at: str  # ISO 8601, as GitHub gives it
    had_primary: bool = True  # a primary label was on the PR: applying one later is a re-add that forces a sweep


@dataclass(frozen=True)
class Withdrawal:
    """The pin of run `run_id` that comment `comment_id` held was withdrawn, for `reason` (bot.rules.pins
    WITHDRAWALS), by what `by` did to that comment (deleted it, edited it): the status says so until a new pin."""

    run_id: int
    comment_id: int
    reason: str
    by: str = ""


@dataclass(frozen=True)
class SweepRecord:
    approvals: tuple[Approval, ...] = ()
    runs: tuple[RunRecord, ...] = field(default=())  # oldest first
    pin: Pin | None = None
    restart: Restart | None = None
    withdrawn: Withdrawal | None = None  # the last pin withdrawn, while no pin has replaced it
    confirmation: Confirmation | None = None  # the last "Confirm sweep" press

    # -- reading ---------------------------------------------------------------------------------

    @classmethod
    def parse(cls, body: str | None) -> SweepRecord:
        """The record in a status comment's body; an empty record when there is none or it cannot be read."""
        data = read_hidden_record(RECORD, body)
        if data is None:
            return cls()
        try:
            approvals = tuple(
                Approval(
                    str(a["label"]),
                    str(a["by"]),
                    str(a["head_sha"]),
                    str(a.get("at") or ""),
                    "button" if a.get("via") == "button" else "label",
                )
                for a in data.get("approvals", ())
            )
            runs = tuple(
                RunRecord(
                    str(r["dispatch_id"]),
                    int(r["run_id"]),
                    str(r["head_sha"]),
                    str(r["workflow"]),
                    str(r.get("status") or "queued"),
                    r.get("conclusion"),
                    r.get("html_url"),
                )
                for r in data.get("runs", ())
            )
            pin = data.get("pin")
            pin = (
                None
                if pin is None
                else Pin(
                    int(pin["run_id"]),
                    int(pin["comment_id"]),
                    str(pin["by"]),
                    str(pin["created_at"]),
                    bool(pin.get("had_primary", True)),
                )
            )
            restart = data.get("restart")
            restart = (
                None if restart is None else Restart(str(restart["token"]), str(restart["by"]), str(restart["at"]))
            )
            gone = data.get("withdrawn")
            gone = (
                None
                if gone is None
                else Withdrawal(
                    int(gone["run_id"]), int(gone["comment_id"]), str(gone["reason"]), str(gone.get("by") or "")
                )
            )
            confirmed = data.get("confirmation")
            confirmed = (
                None
                if confirmed is None
                else Confirmation(
                    str(confirmed["dispatch_id"]),
                    str(confirmed["by"]),
                    str(confirmed["at"]),
                    str(confirmed.get("token") or ""),
                )
            )
        except (ValueError, TypeError, KeyError, AttributeError):
            return cls()  # a record the bot cannot read approves nothing and names no run
        return cls(approvals, runs, pin, restart, gone, confirmed)

    def approval(self, label: str) -> Approval | None:
        return next((a for a in self.approvals if a.label.casefold() == label.casefold()), None)

    def run(self, run_id: int) -> RunRecord | None:
        return next((r for r in self.runs if r.run_id == run_id), None)

    def by_dispatch(self, dispatch_id: str) -> RunRecord | None:
        return next((r for r in reversed(self.runs) if r.dispatch_id == dispatch_id), None)

    @property
    def latest(self) -> RunRecord | None:
        return self.runs[-1] if self.runs else None

    # -- changing (each returns a new record) ----------------------------------------------------

    def approve(self, approval: Approval) -> SweepRecord:
        """The approval, unless the one kept for that label is newer (a label event redelivered late)."""
        current = self.approval(approval.label)
        if current is not None and current.at and (not approval.at or approval.at < current.at):
            return self
        kept = tuple(a for a in self.approvals if a.label.casefold() != approval.label.casefold())
        return replace(self, approvals=kept + (approval,))

    def withdraw(self, label: str, at: str = "") -> SweepRecord:
        """No approval for `label`, unless the one kept is newer than the removal at `at`."""
        current = self.approval(label)
        if current is not None and current.at and at and at < current.at:
            return self
        return replace(self, approvals=tuple(a for a in self.approvals if a.label.casefold() != label.casefold()))

    def add_run(self, run: RunRecord) -> SweepRecord:
        """A run the bot dispatched. Every run still going is kept (a push must be able to cancel it), and so is
        the pinned one; of the finished, the newest KEPT_FINISHED. Only the bot adds runs, so nobody can flood it."""
        runs = tuple(r for r in self.runs if r.run_id != run.run_id or not run.run_id) + (run,)
        return replace(self, runs=self._retained(runs))

    def _retained(self, runs: tuple[RunRecord, ...]) -> tuple[RunRecord, ...]:
        pinned = self.pin.run_id if self.pin else None
        finished = [i for i, r in enumerate(runs) if r.finished and r.run_id != pinned]
        dropped = set(finished[:-KEPT_FINISHED]) if len(finished) > KEPT_FINISHED else set()
        return tuple(r for i, r in enumerate(runs) if i not in dropped)

    def observe(self, entry: RunRecord, run_id: int, **changes: Any) -> SweepRecord:
        """What GitHub says of the run of `entry` now (its id too, when the dispatch answer carried none)."""
        runs = tuple(replace(r, run_id=run_id, **changes) if r is entry else r for r in self.runs)
        return replace(self, runs=self._retained(runs))

    def pinned(self, pin: Pin) -> SweepRecord:
        """`pin` in place of any other; a withdrawn pin is no longer news."""
        return replace(self, pin=pin, withdrawn=None)

    def unpinned(self, reason: str, by: str = "") -> SweepRecord:
        """No pin: the one held is withdrawn, for `reason` (bot.rules.pins WITHDRAWALS), by `by`'s change."""
        if self.pin is None:
            return self
        return replace(self, pin=None, withdrawn=Withdrawal(self.pin.run_id, self.pin.comment_id, reason, by))

    def restarted(self, restart: Restart) -> SweepRecord:
        return replace(self, restart=restart)

    def confirmed(self, confirmation: Confirmation) -> SweepRecord:
        return replace(self, confirmation=confirmation)

    def update_run(self, run_id: int, **changes: Any) -> SweepRecord:
        return replace(self, runs=tuple(replace(r, **changes) if r.run_id == run_id else r for r in self.runs))

    # -- writing ---------------------------------------------------------------------------------

    def line(self) -> str:
        """The record as one hidden HTML comment line of the status comment."""
        data = {
            "v": VERSION,
            "approvals": [{k: v for k, v in a.__dict__.items() if k != "via" or v != "label"} for a in self.approvals],
            "runs": [r.__dict__ for r in self.runs],
        }
        if self.pin is not None:
            data["pin"] = self.pin.__dict__
        if self.restart is not None:
            data["restart"] = self.restart.__dict__
        if self.withdrawn is not None:
            data["withdrawn"] = self.withdrawn.__dict__
        if self.confirmation is not None:
            data["confirmation"] = self.confirmation.__dict__
        return hidden_record(RECORD, data)

    def written_into(self, body: str | None) -> str:
        """A status comment's text (what follows its purpose marker) with this record in place of the one it
        holds, the rest as it is: a change the record needs on GitHub before the status is rendered again (a pin,
        recorded before the reply says so). No record line in `body`: this one goes first."""
        lines = (body or "").split("\n")
        if lines and purpose_of(lines[0]) is not None:
            lines = lines[1:]
        at = next((i for i, line in enumerate(lines) if is_hidden_record(RECORD, line)), None)
        if at is None:
            return "\n".join([self.line(), *lines])
        return "\n".join([*lines[:at], self.line(), *lines[at + 1 :]])


def shows_status(files_touch_changelog: bool, labels: Iterable[str], policy: Policy, exists: bool) -> bool:
    """The status comment (the record's home) appears once the PR touches the changelog or carries a sweep label,
    then stays. The sign-off reads the same as "the PR asked for a sweep"."""
    primaries, modifiers = sweep_label_names(policy)
    return exists or files_touch_changelog or any(label_key(n) in primaries | modifiers for n in labels)
