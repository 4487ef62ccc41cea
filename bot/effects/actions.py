"""What handlers may ask the framework to do on GitHub: plain records, applied by the executor or printed in a dry run.

Every action has a `key` derived from what it means (which PR, which purpose, which body, which labels), never
from when it ran: a retried or resumed delivery plans the same actions again, and the ledger skips those whose
key is already done.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bot.rules.fingerprint import digest


@dataclass(frozen=True)
class Result:
    """What GitHub answered for an action: the outcome word and, for creates, the id of what exists now."""

    outcome: str
    id: int | None = None
    data: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "id": self.id, "data": dict(self.data)}

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Result:
        return cls(value["outcome"], value.get("id"), value.get("data") or {})


@dataclass(frozen=True)
class Comment:
    """The bot's one comment for `purpose` on issue or PR `number`: created, edited when changed, else left alone."""

    number: int
    purpose: str
    body: str
    only_if_missing: bool = False

    @property
    def key(self) -> str:
        return f"comment:{self.number}:{self.purpose}:{digest(self.body, self.only_if_missing)}"

    def describe(self) -> str:
        first = next((line for line in self.body.splitlines() if line.strip() and not line.startswith("<!--")), "")
        mode = " (only if none exists)" if self.only_if_missing else ""
        return f"comment[{self.purpose}] on #{self.number}{mode}: {len(self.body)} chars, «{first[:70]}»"


@dataclass(frozen=True)
class AddLabels:
    number: int
    labels: tuple[str, ...]

    @property
    def key(self) -> str:
        return f"labels+:{self.number}:{digest(sorted(n.casefold() for n in self.labels))}"

    def describe(self) -> str:
        return f"add labels to #{self.number}: {', '.join(self.labels)}"


@dataclass(frozen=True)
class RemoveLabel:
    number: int
    label: str

    @property
    def key(self) -> str:
        return f"labels-:{self.number}:{self.label.casefold()}"

    def describe(self) -> str:
        return f"remove label from #{self.number}: {self.label}"


@dataclass(frozen=True)
class EnsureLabel:
    """Create a repository label with this colour and description if it does not exist yet."""

    name: str
    color: str
    description: str

    @property
    def key(self) -> str:
        return f"label:{self.name.casefold()}"

    def describe(self) -> str:
        return f"ensure repository label {self.name!r} (#{self.color})"


@dataclass(frozen=True)
class Issue:
    """The bot's one open issue for `purpose`: opened, or its body updated when changed."""

    purpose: str
    title: str
    body: str

    @property
    def key(self) -> str:
        return f"issue:{self.purpose}:{digest(self.title, self.body)}"

    def describe(self) -> str:
        return f"issue[{self.purpose}]: {self.title!r}, {len(self.body)} chars"


@dataclass(frozen=True)
class CloseIssue:
    purpose: str

    @property
    def key(self) -> str:
        return f"close-issue:{self.purpose}"

    def describe(self) -> str:
        return f"close issue[{self.purpose}] if open"


@dataclass(frozen=True)
class React:
    """The bot's reaction `content` (e.g. `eyes`, `+1`) on an issue comment; GitHub keeps one per user and content."""

    comment_id: int
    content: str

    @property
    def key(self) -> str:
        return f"react:{self.comment_id}:{self.content}"

    def describe(self) -> str:
        return f"react {self.content} on comment {self.comment_id}"


@dataclass(frozen=True)
class Unreact:
    """Withdraw the bot's reaction `content` from an issue comment, if it is there."""

    comment_id: int
    content: str

    @property
    def key(self) -> str:
        return f"unreact:{self.comment_id}:{self.content}"

    def describe(self) -> str:
        return f"withdraw reaction {self.content} from comment {self.comment_id}"


@dataclass(frozen=True)
class DispatchWorkflow:
    """Start `workflow` on `ref` once. `dispatch_id` (an input the workflow puts in its run name) finds it again."""

    workflow: str
    ref: str
    inputs: Mapping[str, str]
    dispatch_id: str
    head_sha: str | None = None  # narrows the runs listed when reconciling

    @property
    def key(self) -> str:
        return f"dispatch:{self.workflow}:{self.dispatch_id}"

    def describe(self) -> str:
        shown = ", ".join(f"{k}={v}" for k, v in sorted(self.inputs.items()))
        return f"dispatch {self.workflow} on {self.ref} (dispatch-id {self.dispatch_id}): {shown}"


@dataclass(frozen=True)
class RepositoryDispatch:
    """Send `event_type` with `payload` to `repository` (the results service): a `repository_dispatch`."""

    repository: str
    event_type: str
    payload: Mapping[str, str]

    @property
    def key(self) -> str:
        return f"repo-dispatch:{self.repository.casefold()}:{self.event_type}:{digest(dict(self.payload))}"

    def describe(self) -> str:
        shown = ", ".join(f"{k}={v}" for k, v in sorted(self.payload.items()))
        return f"repository_dispatch {self.event_type} to {self.repository}: {shown}"


@dataclass(frozen=True)
class TreeChange:
    """One path the merge writes over the base's tree: a blob (or, mode 160000, a submodule's commit) by `sha`,
    `content` written as a new blob (the resolved changelog), or, with neither, the path deleted."""

    path: str
    mode: str = "100644"
    sha: str | None = None
    content: str | None = None


@dataclass(frozen=True)
class MergePull:
    """Merge PR `number`, whose head is `head_sha`, into branch `base` as it stood at `base_sha`, once.

    `way` "git-data" (a fork's PR): a commit of `changes` over the base's tree whose parents are the base's head
    and the PR's head, then a fast-forward of `base`. "merge-api": with `changes`, first the same tree as a commit
    on the PR's branch `head_ref` (parents: the PR's head, then the base's), fast-forwarded; then GitHub's merge
    API with `method`, pinned to the commit the branch then holds. A base or head that moved makes GitHub refuse
    (422, 405, 409): nothing is forced, the caller builds it again."""

    number: int
    head_sha: str
    head_ref: str
    base: str
    base_sha: str
    base_tree: str  # the tree of `base_sha`
    way: str
    method: str
    changes: tuple[TreeChange, ...]
    title: str
    message: str
    checked_sha: str  # the head the checks judged: `head_sha`, or the head an earlier merge commit on the branch names
    skip_marker: str  # put in the message of a commit on the PR's branch, so that no sweep starts for it

    @property
    def key(self) -> str:
        return f"merge:{self.number}:{self.head_sha}:{self.base_sha}"

    def describe(self) -> str:
        paths = ", ".join(change.path for change in self.changes) or "no files rewritten"
        return (
            f"merge #{self.number} ({self.head_sha[:7]}) into {self.base} at {self.base_sha[:7]} by {self.way}"
            f" ({self.method}): {paths}"
        )


@dataclass(frozen=True)
class CancelRun:
    """Cancel workflow run `run_id` if it has not finished (a superseded sweep)."""

    run_id: int

    @property
    def key(self) -> str:
        return f"cancel:{self.run_id}"

    def describe(self) -> str:
        return f"cancel workflow run {self.run_id}"


@dataclass(frozen=True)
class Annotation:
    """A note on one line of a file in the PR's diff."""

    path: str
    line: int
    message: str
    level: str = "failure"  # notice, warning or failure
    title: str = ""


@dataclass(frozen=True)
class CheckButton:
    """A button on a check run (GitHub's `actions`: label at most 20 characters, description 40, identifier 20);
    pressing it sends a `check_run` `requested_action` event with `identifier`."""

    label: str
    description: str
    identifier: str


@dataclass(frozen=True)
class CheckRun:
    """The bot's one check run `name` on commit `head_sha`: created, or updated in place when it changes."""

    head_sha: str
    name: str
    conclusion: str  # success, failure, neutral or cancelled once complete; "" while `status` says it is not
    title: str
    summary: str
    text: str = ""
    annotations: tuple[Annotation, ...] = ()
    details_url: str | None = None
    buttons: tuple[CheckButton, ...] = ()
    # Written even when GitHub already shows this content: after a "Re-run" GitHub resets the check to queued.
    rewrite: bool = False
    status: str = "completed"  # or queued, in_progress: what it checks has not finished (a sweep, a wait)

    @property
    def fingerprint(self) -> str:
        parts: tuple = (self.conclusion, self.title, self.summary, self.text, self.annotations, self.details_url)
        if self.buttons:  # the fingerprint of a check without buttons is what it was before buttons existed
            parts += (self.buttons,)
        if self.status != "completed":  # likewise for a completed check: as before statuses existed
            parts += (self.status,)
        return digest(*parts)

    @property
    def key(self) -> str:
        return f"check:{self.head_sha}:{self.name}:{self.fingerprint}" + (":rewrite" if self.rewrite else "")

    def describe(self) -> str:
        notes = f", {len(self.annotations)} annotations" if self.annotations else ""
        state = self.conclusion if self.status == "completed" else self.status
        return f"check run {self.name!r} on {self.head_sha[:7]}: {state}, «{self.title[:70]}»{notes}"


@dataclass(frozen=True)
class ReviewComment:
    """A comment of a review on line `line` of `path` in the PR's head (lines `start_line`..`line` when given)."""

    path: str
    line: int
    body: str
    start_line: int | None = None


@dataclass(frozen=True)
class SuggestionReview:
    """The bot's one review for `purpose` on PR `number`: a `COMMENT` review of commit `commit_id` with these line
    comments, created unless the same one is there. Every other review of the bot for `purpose` is retired (a
    submitted review can be neither deleted nor dismissed): its body becomes `outdated_body`, marked
    `<purpose>-outdated`, and its line comments are deleted. With no comments, only the retiring is done."""

    number: int
    purpose: str
    commit_id: str
    body: str
    comments: tuple[ReviewComment, ...]
    outdated_body: str

    @property
    def key(self) -> str:
        return f"review:{self.number}:{self.purpose}:{self.commit_id}:{digest(self.body, self.comments)}"

    def describe(self) -> str:
        if not self.comments:
            return (
                f"retire earlier review[{self.purpose}] on #{self.number}, if any (nothing to suggest at "
                f"{self.commit_id[:7]})"
            )
        return (
            f"review[{self.purpose}] on #{self.number} at {self.commit_id[:7]}: {len(self.comments)} line "
            "comments; earlier ones retired"
        )


Action = (
    Comment
    | AddLabels
    | RemoveLabel
    | EnsureLabel
    | Issue
    | CloseIssue
    | React
    | Unreact
    | DispatchWorkflow
    | RepositoryDispatch
    | CancelRun
    | MergePull
    | CheckRun
    | SuggestionReview
)
