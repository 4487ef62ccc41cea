"""The state of one check: its sink, limits, the values read so far, the anchors of the entries read."""

from __future__ import annotations

from typing import Any

from bot.rules.changelog import loading
from bot.rules.changelog.fields import _link_forms
from bot.rules.changelog.limits import ChangelogLimits
from bot.rules.changelog.results import _Sink


class _Check:
    """The state of one check: its sink, limits, the values read so far, anchors of the entries read."""

    def __init__(self, pr_number: int, prefix: str, limits: ChangelogLimits):
        self.pr_number = pr_number
        self.prefix = prefix
        self.limits = limits
        self.forms = tuple(_link_forms(prefix, pr_number))
        self.sink = _Sink(limits.max_errors)
        self.line = 1  # the line being read: where a RecursionError or MemoryError is reported
        self.values = 0  # YAML values of the appended text read so far
        self.anchors: dict[str, tuple[int, int]] = {}  # name -> (head line, column) of an entry's anchor
        self._constructor: Any = None

    @property
    def constructor(self) -> Any:
        """A loader used only to construct values (numbers, dates...) from nodes."""
        if self._constructor is None:
            self._constructor = loading.Loader("")
        return self._constructor
