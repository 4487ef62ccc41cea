"""What one changelog check may cost: `ChangelogLimits` (the repository policy's `limits` may set them)."""

from __future__ import annotations

from dataclasses import dataclass

from bot.rules.policy import Limits


@dataclass(frozen=True)
class ChangelogLimits:
    """Caps on the work one changelog may cost (the repository policy's `limits` may set them).

    `max_bytes`: a head file bigger than this is one `file-too-large` error, and nothing is parsed.
    `max_depth`: how deeply values may nest, counting the file's list as level 1: a valid entry is a list item
    (1) that is a mapping (2) of lists (3) of strings (4), so 4 is all an entry needs. 32 is eight times that,
    and keeps every recursive reader of a checked entry (PyYAML's constructor and representer, about three
    Python frames a level) far below Python's recursion limit of 1000, wherever the check is called from.
    `max_errors`: the errors a result keeps (the first by line); the rest are counted.
    `max_values`: YAML values (keys, items, scalars; an alias is one) the appended text may hold. A real
    changelog holds about 37,000 in 2 MB; 2 MB of `[a,a,...]` holds a million, more than Python checks in the
    time a delivery may take, and each composed value costs about 460 bytes.
    """

    max_bytes: int = 2 * 1024 * 1024
    max_depth: int = 32
    max_errors: int = 50
    max_values: int = 100_000

    def __post_init__(self) -> None:
        for name in ("max_bytes", "max_depth", "max_errors", "max_values"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"ChangelogLimits.{name} must be a whole number above 0, not {value!r}")
        if not 4 <= self.max_depth <= 100:
            raise ValueError(
                "ChangelogLimits.max_depth must be between 4 (what a valid entry needs) and 100 "
                f"(recursive readers stay far below Python's recursion limit), not {self.max_depth}"
            )


DEFAULT_LIMITS = ChangelogLimits()


def policy_limits(limits: Limits) -> ChangelogLimits:
    """The caps a repository's policy `limits` section sets."""
    return ChangelogLimits(max_bytes=limits.changelog_bytes, max_errors=limits.changelog_errors)
