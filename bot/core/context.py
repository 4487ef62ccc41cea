"""What a handler sees of one delivery: the event, the policy, the templates, its reads and its one way to write."""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Hashable, MutableMapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from gidgethub import sansio

from bot.core.permissions import Permissions
from bot.core.reader import PRReader, open_pr_of_head
from bot.core.repo_config import ConfigProblem, RepoConfigs
from bot.core.templates import Templates
from bot.delivery import lanes
from bot.effects import actions as act
from bot.github.client import GitHubClient
from bot.github.shared_reads import SharedReads
from bot.rules.policy import Policy


@dataclass
class Context:
    """What a handler sees: the event, the repository's policy, the templates, its reads (`reader`, memoised
    per delivery) and permission lookups (`permissions`, cached per process).

    A handler returns the actions it decided on, and the framework performs them in order once it is done. The
    one exception is `await ctx.write_now(action)`: the framework performs that action at once and returns what
    GitHub answered. A feature uses it only where it cannot go on without the write: it needs GitHub's answer
    (a run's or a comment's id for a later request, whether a run was really cancelled), or a person waits for
    this write before slower work (a command's 👀, a pin's reply before the staging request), or a later write
    of the same delivery must follow it (a pin recorded before its reply says "pinned").
    """

    event: sansio.Event
    gh: GitHubClient
    repo: str
    policy: Policy
    bot_login: str
    templates: Templates
    configs: RepoConfigs
    _apply: Callable[[act.Action], Awaitable[act.Result]] | None = None
    permission_reads: SharedReads | None = None  # the process's; None: this delivery's own
    waiting: Callable[[], list[tuple[str, str | None]]] = lambda: []  # (event, action) queued behind this one
    last_try: bool = False  # a transient failure now is not retried: the delivery's retry window is over
    # the process's: who was refused a command on which PR lately, answered once (handlers/commands.py)
    refusals: MutableMapping[Hashable, float] = field(default_factory=dict)
    reader: PRReader = field(init=False)
    permissions: Permissions = field(init=False)

    def __post_init__(self) -> None:
        self.reader = PRReader(self.gh, self.repo)
        self.permissions = Permissions(self.gh, self.repo, self.permission_reads)

    def superseded(self, kinds: AbstractSet[tuple[str, str | None]]) -> bool:
        """Whether a later delivery of one of `kinds` waits in this PR's lane (it will decide on newer state)."""
        return any(kind in kinds for kind in self.waiting())

    async def write_now(self, action: act.Action) -> act.Result:
        """Perform `action` now (the class's docstring says when a feature may), returning GitHub's answer."""
        if self._apply is None:
            raise RuntimeError("this context cannot write")
        return await self._apply(action)

    def writing_after(self, first: Awaitable[object]) -> Context:
        """This context (the same reads, the same writer) whose writes wait until `first` is done: a write begun
        before the handler's reads (the command's 👀) stays before every write the handler makes."""
        view = copy.copy(self)
        apply = self._apply

        async def after_first(action: act.Action) -> act.Result:
            await first
            if apply is None:
                raise RuntimeError("this context cannot write")
            return await apply(action)

        view._apply = after_first
        return view

    def untrusted(self) -> None:
        """This delivery comes from someone without write permission: its writes go after everyone else's."""
        self.gh.untrusted()

    @property
    def payload(self) -> dict[str, Any]:
        return self.event.data

    @property
    def pr_number(self) -> int | None:
        """The PR or issue this delivery is about, when its payload names one."""
        return lanes.pr_number(self.event.event, self.payload)

    @property
    def html_url(self) -> str:
        return self.payload["repository"].get("html_url") or f"https://github.com/{self.repo}"

    @property
    def default_branch(self) -> str:
        return self.payload["repository"].get("default_branch") or "main"

    async def reload_config(self) -> ConfigProblem | None:
        """Read `.github/sweepbot.yml` from the default branch again (a read: a dry run does it too, so the plan
        after it is true); what is wrong with it, or None when it is valid."""
        self.configs.invalidate(self.repo)
        await self.configs.policy(self.gh, self.repo, self.default_branch)
        return self.configs.problems.get(self.repo)

    def render(self, kind: str, **variables: Any) -> str:
        return self.templates.render(kind, **variables)

    # -- reads (bot/core/reader.py) and permissions (bot/core/permissions.py), one line each ----------

    def forget(self, key: tuple) -> None:
        self.reader.forget(key)

    async def pr_file_entries(self, number: int) -> list[dict]:
        return await self.reader.pr_file_entries(number)

    async def pr_files(self, number: int) -> list[str]:
        return await self.reader.pr_files(number)

    async def labels(self, number: int) -> list[str]:
        return await self.reader.labels(number)

    async def label_events(self, number: int) -> list[dict]:
        return await self.reader.label_events(number)

    async def file_at(self, path: str, ref: str) -> bytes | None:
        return await self.reader.file_at(path, ref)

    async def pull(self, number: int) -> dict:
        return await self.reader.pull(number)

    async def pr_of_head(self, sha: str) -> int | None:
        return await open_pr_of_head(self.gh, self.repo, sha, head_only=True)

    async def merge_base(self, base_sha: str, head_sha: str) -> str:
        return await self.reader.merge_base(base_sha, head_sha)

    async def git_commit(self, sha: str) -> dict:
        return await self.reader.git_commit(sha)

    async def comments(self, number: int) -> list[dict]:
        return await self.reader.comments(number)

    async def role(self, login: str) -> str:
        return await self.permissions.role(login)

    async def writer(self, login: str) -> bool | None:
        return await self.permissions.writer(login)

    def known_writer(self, login: str) -> bool | None:
        return self.permissions.known_writer(login)

    async def team_member(self, team: str, login: str) -> bool | None:
        return await self.permissions.team_member(team, login)
