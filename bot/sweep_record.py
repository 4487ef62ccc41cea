"""The sweep gate's memory, kept on GitHub: a JSON record hidden in the bot's own sweep status comment.

It holds what the bot cannot read back from GitHub's state alone: which head SHA a writer approved on a fork
when they applied a primary label (a label event does not say), the runs the bot dispatched for the PR
with their dispatch ids, and the run pinned for reuse. Losing the local journal loses nothing: the next delivery reads this record again.
Only the bot's own comment counts (the caller finds it by author and marker), so nobody else can forge it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from bot.comments import hidden_record, read_hidden_record

VERSION = 1
MAX_RUNS = 20  # the newest runs kept: older ones are finished or cancelled long ago
RECORD = "record"  # its hidden line: <!-- sweepbot-record {...} -->
_FINISHED = "completed"


@dataclass(frozen=True)
class Approval:
    """A writer applied primary `label` on a fork PR while its head was `head_sha`."""

    label: str
    by: str
    head_sha: str


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
class SweepRecord:
    approvals: tuple[Approval, ...] = ()
    runs: tuple[RunRecord, ...] = field(default=())  # oldest first
    pin: Pin | None = None

    # -- reading ---------------------------------------------------------------------------------

    @classmethod
    def parse(cls, body: str | None) -> "SweepRecord":
        """The record in a status comment's body; an empty record when there is none or it cannot be read."""
        data = read_hidden_record(RECORD, body)
        if data is None:
            return cls()
        try:
            approvals = tuple(Approval(str(a["label"]), str(a["by"]), str(a["head_sha"]))
                              for a in data.get("approvals", ()))
            runs = tuple(RunRecord(str(r["dispatch_id"]), int(r["run_id"]), str(r["head_sha"]), str(r["workflow"]),
                                   str(r.get("status") or "queued"), r.get("conclusion"), r.get("html_url"))
                         for r in data.get("runs", ()))
            pin = data.get("pin")
            pin = None if pin is None else Pin(int(pin["run_id"]), int(pin["comment_id"]), str(pin["by"]),
                                                str(pin["created_at"]), bool(pin.get("had_primary", True)))
        except (ValueError, TypeError, KeyError, AttributeError):
            return cls()  # a record the bot cannot read approves nothing and names no run
        return cls(approvals, runs, pin)

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

    def approve(self, approval: Approval) -> "SweepRecord":
        kept = tuple(a for a in self.approvals if a.label.casefold() != approval.label.casefold())
        return replace(self, approvals=kept + (approval,))

    def withdraw(self, label: str) -> "SweepRecord":
        return replace(self, approvals=tuple(a for a in self.approvals if a.label.casefold() != label.casefold()))

    def add_run(self, run: RunRecord) -> "SweepRecord":
        kept = tuple(r for r in self.runs if r.run_id != run.run_id)
        return replace(self, runs=(kept + (run,))[-MAX_RUNS:])

    def pinned(self, pin: Pin | None) -> "SweepRecord":
        return replace(self, pin=pin)

    def update_run(self, run_id: int, **changes: Any) -> "SweepRecord":
        return replace(self, runs=tuple(replace(r, **changes) if r.run_id == run_id else r for r in self.runs))

    # -- writing ---------------------------------------------------------------------------------

    def line(self) -> str:
        """The record as one hidden HTML comment line of the status comment."""
        data = {"v": VERSION,
                "approvals": [a.__dict__ for a in self.approvals],
                "runs": [r.__dict__ for r in self.runs]}
        if self.pin is not None:
            data["pin"] = self.pin.__dict__
        return hidden_record(RECORD, data)
