"""The comment on a finished sweep run: whether it gets one, and what its jobs say.

Plain data in, plain data out: the caller reads the run and its jobs (`GET .../actions/runs/{id}/jobs`,
`filter=latest`) from GitHub, and renders templates/run_comment.*.j2 from `JobsSummary`.

Each finished attempt of a run the bot dispatched gets its own comment (`purpose`): a redelivery of the same
`completed` event edits it, and a "Re-run failed jobs" that finishes again posts a new one, which notifies.
A run the bot cancelled because a newer commit or label change superseded it gets none: the status comment
says what runs now.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

SHOWN_FAILED = 20  # failed jobs named in the comment; the rest are counted
NAME_MAX = 120  # characters of a job name shown (names come from the workflow; longer ones are cut with "…")

SUCCEEDED = frozenset({"success"})
FAILED = frozenset({"failure", "timed_out", "startup_failure"})
CANCELLED = frozenset({"cancelled"})
SKIPPED = frozenset({"skipped", "neutral"})
# A run that ends with one of these has something a person can re-run or fix.
NEEDS_ACTION = frozenset({"failure", "timed_out", "startup_failure", "cancelled", "action_required", "stale"})


@dataclass(frozen=True)
class FailedJob:
    name: str
    job_id: int


@dataclass(frozen=True)
class JobsSummary:
    succeeded: int = 0
    failed: int = 0
    cancelled: int = 0
    skipped: int = 0
    other: int = 0  # any other conclusion, or none (a job GitHub still lists as running)
    failed_jobs: tuple[FailedJob, ...] = ()  # the first SHOWN_FAILED failed jobs, in GitHub's order
    more_failed: int = 0  # failed jobs not named

    @property
    def total(self) -> int:
        return self.succeeded + self.failed + self.cancelled + self.skipped + self.other


def purpose(run_id: int) -> str:
    """The comment's purpose: one per run, edited in place when a rerun of it finishes (an edit notifies nobody:
    the status comment and the `sweep` check carry the news)."""
    return f"sweep-run-{int(run_id)}"


def wants_comment(conclusion: str | None, *, superseded: bool) -> bool:
    """Whether a finished run gets a comment: every finished run, except one cancelled because a newer dispatch
    of the PR superseded it (the bot cancelled it; a comment would only be noise)."""
    if conclusion is None:
        return False
    return not (conclusion in CANCELLED and superseded)


def next_step(conclusion: str | None) -> str:
    """What the comment asks for: "rerun" (re-run the failed jobs, or push a fix) or "none"."""
    return "rerun" if conclusion in NEEDS_ACTION else "none"


def _name(value: Any) -> str:
    text = " ".join(str(value or "").split()) or "?"
    return text if len(text) <= NAME_MAX else text[: NAME_MAX - 1] + "…"


def summarize_jobs(jobs: Iterable[Mapping[str, Any]], *, shown: int = SHOWN_FAILED) -> JobsSummary:
    """Counts by conclusion, and the failed jobs to name (id and name only: the caller builds their links)."""
    counts = {"succeeded": 0, "failed": 0, "cancelled": 0, "skipped": 0, "other": 0}
    failed: list[FailedJob] = []
    for job in jobs:
        if not isinstance(job, Mapping):
            continue
        conclusion = job.get("conclusion")
        if conclusion in SUCCEEDED:
            counts["succeeded"] += 1
        elif conclusion in FAILED:
            counts["failed"] += 1
            job_id = job.get("id")
            if len(failed) < shown and isinstance(job_id, int) and not isinstance(job_id, bool):
                failed.append(FailedJob(_name(job.get("name")), job_id))
        elif conclusion in CANCELLED:
            counts["cancelled"] += 1
        elif conclusion in SKIPPED:
            counts["skipped"] += 1
        else:
            counts["other"] += 1
    return JobsSummary(**counts, failed_jobs=tuple(failed), more_failed=counts["failed"] - len(failed))
