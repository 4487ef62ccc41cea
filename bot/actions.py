"""What handlers may ask the framework to do on GitHub: plain records, applied by `Executor` or printed in a dry run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union


@dataclass(frozen=True)
class Comment:
    """The bot's one comment for `purpose` on issue or PR `number`: created, edited when changed, else left alone."""

    number: int
    purpose: str
    body: str
    only_if_missing: bool = False

    def describe(self) -> str:
        first = next((line for line in self.body.splitlines() if line.strip()), "")
        mode = " (only if none exists)" if self.only_if_missing else ""
        return f"comment[{self.purpose}] on #{self.number}{mode}: {len(self.body)} chars, «{first[:70]}»"


@dataclass(frozen=True)
class AddLabels:
    number: int
    labels: tuple[str, ...]

    def describe(self) -> str:
        return f"add labels to #{self.number}: {', '.join(self.labels)}"


@dataclass(frozen=True)
class RemoveLabel:
    number: int
    label: str

    def describe(self) -> str:
        return f"remove label from #{self.number}: {self.label}"


@dataclass(frozen=True)
class EnsureLabel:
    """Create a repository label with this colour and description if it does not exist yet."""

    name: str
    color: str
    description: str

    def describe(self) -> str:
        return f"ensure repository label {self.name!r} (#{self.color})"


@dataclass(frozen=True)
class Issue:
    """The bot's one open issue for `purpose`: opened, or its body updated when changed."""

    purpose: str
    title: str
    body: str

    def describe(self) -> str:
        return f"issue[{self.purpose}]: {self.title!r}, {len(self.body)} chars"


@dataclass(frozen=True)
class CloseIssue:
    purpose: str

    def describe(self) -> str:
        return f"close issue[{self.purpose}] if open"


Action = Union[Comment, AddLabels, RemoveLabel, EnsureLabel, Issue, CloseIssue]
