"""The maintainers' board (docs/spec.md, "The board"): one issue listing every open PR the bot tracks, each with its
state in one cell per question, grouped by what a maintainer does next; the runner pools' queues in order; and the
PRs where the bot could not tell whether a sweep started (a person must look).

Plain data in, plain data out: the handler reads each PR's public state (the PR, the bot's status comment and its
record, the sign-off verdicts, a pinned run's artifacts) into a `Row`; `sections` groups the rows and `fitted` says
how many of them fit in an issue body.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

# A sweep's state on the board
NO_SWEEP, QUEUED, RUNNING, PASSED, FAILED, CANCELLED = "none", "queued", "running", "passed", "failed", "cancelled"
# A PR's sign-off state: the best of its current verdicts (bot.rules.signoff outcomes), or none yet
SIGNED, SIGNOFF_FAILED, SIGNOFF_WAITS, UNSIGNED = "pass", "fail", "wait", "none"

# What a maintainer does next, in the order the board shows the groups
NEEDS_A_PERSON = "needs_a_person"  # the bot cannot tell whether a sweep started
APPROVE = "approve"  # a fork's head waits for a writer's approval
MERGE = "merge"  # green or pinned, signed off: ready to merge
PIN = "pin"  # a sweep passed and nothing is pinned
SIGN_OFF = "sign_off"  # pinned (or green), no passing sign-off yet
START = "start"  # a valid changelog entry, no sweep asked for yet
AUTHOR = "author"  # the author's move: a failed sweep, a changelog problem, a draft
SWEEPING = "sweeping"  # nothing to do until the sweep runs or finishes
GROUPS = (NEEDS_A_PERSON, APPROVE, MERGE, PIN, SIGN_OFF, START, AUTHOR, SWEEPING)


@dataclass(frozen=True)
class Row:
    """One open PR as the board shows it; every value is one the PR already shows publicly."""

    number: int
    title: str
    author: str
    fork: bool = False
    draft: bool = False
    approved: bool | None = None  # a fork's current head approved by a writer; None on the repository's own PRs
    asks: bool = False  # a primary label that counts is on the PR
    blocked: bool = False  # the status names something the author must fix (❌)
    sweep: str = NO_SWEEP
    run_id: int | None = None
    run_url: str | None = None
    since: str | None = None  # when the current sweep started, or joined its queue
    pool: str | None = None  # where it waits
    position: int | None = None
    pin: int | None = None  # the pinned run
    expires: str | None = None  # the first of the pinned run's artifacts to expire
    signoff: str = UNSIGNED
    signers: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()  # dispatch ids the bot could not reconcile

    @property
    def green(self) -> bool:
        return self.pin is not None or self.sweep == PASSED

    @property
    def ready(self) -> bool:
        """Ready to merge: a pin (or a passed sweep) and a passing sign-off, nothing the author must fix."""
        return self.green and self.signoff == SIGNED and not self.blocked and not self.draft


def next_step(row: Row) -> str:
    """The group of `row`: what a maintainer does next on it (or that the author or a sweep is waited for)."""
    if row.unknown:
        return NEEDS_A_PERSON
    if row.draft or row.blocked or row.sweep == FAILED:
        return AUTHOR
    if row.fork and row.asks and row.approved is False:
        return APPROVE
    if row.ready:
        return MERGE
    if row.sweep == PASSED and row.pin is None:
        return PIN
    if row.green:
        return SIGN_OFF
    if row.sweep in (QUEUED, RUNNING):
        return SWEEPING
    if row.fork and row.approved is False:
        return APPROVE
    return START if not row.asks else SWEEPING


def sections(rows: Iterable[Row]) -> list[tuple[str, list[Row]]]:
    """The rows by group, in GROUPS order (each group's rows by PR number, oldest first); empty groups left out."""
    grouped: dict[str, list[Row]] = {group: [] for group in GROUPS}
    for row in rows:
        grouped[next_step(row)].append(row)
    return [(group, sorted(found, key=lambda r: r.number)) for group, found in grouped.items() if found]


def fitted(rows: Sequence[Row], render: Callable[[Sequence[Row], int], str], limit: int) -> tuple[str, int]:
    """The body with as many of `rows` as fit in `limit` characters, in the board's order, and how many were
    left out: `render(shown, left_out)` must say how many it leaves out. The fewest are cut (a binary search over
    how many are shown: a row's text grows with its values, so no fixed size per row is assumed)."""
    order = [row for _, group in sections(rows) for row in group]
    body = render(order, 0)
    if len(body) <= limit:
        return body, 0
    low, high = 0, len(order)  # render(order[:low]) fits; render(order[:high]) does not
    while high - low > 1:
        middle = (low + high) // 2
        if len(render(order[:middle], len(order) - middle)) <= limit:
            low = middle
        else:
            high = middle
    return render(order[:low], len(order) - low), len(order) - low
