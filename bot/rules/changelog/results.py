"""What a check answers (`ChangelogResult`: the valid appended entries, or the errors), and the sink that keeps
the first errors by line while it counts them all."""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

from bot.rules.changelog.errors import ChangelogError


@dataclass(frozen=True)
class AppendedEntry:
    """A valid entry the PR appends; `line` is its first line (the `- ` line) in the head file."""

    line: int
    config_keys: tuple[str, ...]
    description: tuple[str, ...]
    pr_link: str
    scenario_type: tuple[str, ...] = ()
    evals_only: bool = False
    all_evals: bool = False
    append_only: bool = False
    eval_min_prefill_ep: int | None = None


@dataclass(frozen=True)
class LinkCorrection:
    """A `pr-link` of an existing entry that a PR appending nothing changes (`old` and `new` as written)."""

    line: int
    old: str
    new: str


@dataclass(frozen=True)
class ChangelogResult:
    """Either the valid appended entries (and link corrections), or the errors: never entries with errors.

    A sweep gate wants `ok and has_entry`; `append_only` etc. say whether any appended entry sets the flag.
    `errors` holds at most `ChangelogLimits.max_errors` errors, the first by line (ties in the order found);
    `error_count` is how many the check found, kept or not. When `error_count_is_lower_bound` is true the check
    stopped early (at an error it could not keep, or at the `max_values` limit), so there are at least
    `error_count` errors; otherwise `error_count` is exact. Left out, `error_count` is `len(errors)`.
    """

    entries: tuple[AppendedEntry, ...] = ()
    errors: tuple[ChangelogError, ...] = ()
    link_corrections: tuple[LinkCorrection, ...] = ()
    error_count: int = -1
    error_count_is_lower_bound: bool = False

    def __post_init__(self) -> None:
        if self.error_count < 0:
            object.__setattr__(self, "error_count", len(self.errors))

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def has_entry(self) -> bool:
        return bool(self.entries)

    @property
    def evals_only(self) -> bool:
        return any(e.evals_only for e in self.entries)

    @property
    def all_evals(self) -> bool:
        return any(e.all_evals for e in self.entries)

    @property
    def append_only(self) -> bool:
        return any(e.append_only for e in self.entries)

    @property
    def unshown_errors(self) -> int:
        """Errors found but not kept (at least this many when `error_count_is_lower_bound`)."""
        return self.error_count - len(self.errors)


_PHASE_CHARACTERS, _PHASE_END, _PHASE_MARKER, _PHASE_OUTSIDE, _PHASE_ENTRY, _PHASE_SEPARATOR = range(6)


class _Sink:
    """Keeps the first `cap` errors by (line, phase, order found) and counts every error found.

    `room(line)` says whether an error at `line` would be kept, so that one that would not is counted
    (`skip`) without being built. The phases order errors of one line as the check always has: characters,
    the file's end, document markers, text outside entries, an entry's own errors, separators.
    """

    def __init__(self, cap: int):
        self.cap = cap
        self.kept: list[tuple[tuple[int, int, int], ChangelogError]] = []
        self.count = 0
        self.dropped = False  # an error found was not kept
        self.partial = False  # some errors were neither built nor counted: the count is a lower bound

    def room(self, line: int, phase: int = _PHASE_ENTRY) -> bool:
        return len(self.kept) < self.cap or (line, phase, self.count) < self.kept[-1][0]

    def add(self, error: ChangelogError, phase: int = _PHASE_ENTRY) -> None:
        key = (error.line, phase, self.count)
        self.count += 1
        if len(self.kept) < self.cap or key < self.kept[-1][0]:
            bisect.insort(self.kept, (key, error), key=lambda kept: kept[0])
            if len(self.kept) > self.cap:
                self.kept.pop()
                self.dropped = True
        else:
            self.dropped = True

    def skip(self) -> None:
        """An error found that `room` says would not be kept: counted, not built."""
        self.count += 1
        self.dropped = True

    def passed(self, line: int) -> bool:
        """Nothing from `line` on can be kept, and an error was already left out: checking further only counts."""
        return self.dropped and len(self.kept) >= self.cap and line > self.kept[-1][0][0]

    def errors(self) -> tuple[ChangelogError, ...]:
        return tuple(error for _, error in self.kept)

    def result(self, **fields: Any) -> ChangelogResult:
        if self.kept:
            return ChangelogResult(
                errors=self.errors(), error_count=self.count, error_count_is_lower_bound=self.partial
            )
        return ChangelogResult(**fields)
