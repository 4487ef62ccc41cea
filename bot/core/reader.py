"""One delivery's reads of its repository, each made once: a handler's view of GitHub, read-only."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Awaitable, Callable, Hashable
from typing import TypeVar

from gidgethub.abc import GitHubAPI

from bot.effects.comments import PER_PAGE
from bot.github.client import get_or_none
from bot.github.shared_reads import SharedReads
from bot.rules.links import Slashed, repo_api

T = TypeVar("T")

READS_IN_FLIGHT = 4  # one delivery's reads of GitHub at once: independent reads overlap, no burst on GitHub


class PRReader:
    """Reads of one repository for one delivery, memoised: every listing is read once (every page), a file at a
    commit once. The executor drops a listing it has changed (`forget`) or appends what it created.

    Reads may run together (`asyncio.gather`): at most READS_IN_FLIGHT at once, and two asking for the same key
    share the one request in flight."""

    def __init__(self, gh: GitHubAPI, repo: str):
        self.gh, self.repo = gh, repo
        self._reads = SharedReads()  # memoised for this delivery
        self._bound = asyncio.Semaphore(READS_IN_FLIGHT)

    def forget(self, key: tuple) -> None:
        """Drop a memoised listing, so the next read asks GitHub again."""
        self._reads.forget(key)

    async def _once(self, key: Hashable, read: Callable[[], Awaitable[T]]) -> T:
        """`read()`'s answer for `key`, read once per delivery (`SharedReads`: a caller arriving while it is in
        flight waits for the same answer; a failure is not kept)."""
        return await self._reads.get(key, lambda: self._bounded(read))

    async def _bounded(self, read: Callable[[], Awaitable[T]]) -> T:
        async with self._bound:
            return await read()

    async def _listing(
        self, key: tuple, *path: str | int, keep: Callable[[dict], bool] = lambda item: True
    ) -> list[dict]:
        """Every page of this repository's list endpoint `path`, read once per delivery."""

        async def read() -> list[dict]:
            url = repo_api(self.repo, *path, per_page=PER_PAGE)
            return [item async for item in self.gh.getiter(url) if keep(item)]

        return await self._once(key, read)

    async def pr_file_entries(self, number: int) -> list[dict]:
        """The changed files of a PR as GitHub lists them (every page; a rename carries `previous_filename`)."""
        return await self._listing(("files", number), "pulls", number, "files")

    async def pr_files(self, number: int) -> list[str]:
        """Changed file names of a PR."""
        return [f["filename"] for f in await self.pr_file_entries(number)]

    async def labels(self, number: int) -> list[str]:
        """The labels on an issue or PR as GitHub has them now (a payload's list can be stale)."""
        return [label["name"] for label in await self._listing(("labels", number), "issues", number, "labels")]

    async def label_events(self, number: int) -> list[dict]:
        return await self._listing(
            ("events", number), "issues", number, "events", keep=lambda e: e.get("event") in ("labeled", "unlabeled")
        )

    async def file_at(self, path: str, ref: str) -> bytes | None:
        """The exact bytes of a file at a commit, or None where it does not exist (above 1 MB via the blob API)."""

        async def read() -> bytes | None:
            item = await get_or_none(self.gh, repo_api(self.repo, "contents", Slashed(path), ref=ref))
            if not isinstance(item, dict) or item.get("type", "file") != "file":
                return None
            if item.get("encoding") == "base64":
                return base64.b64decode(item.get("content") or "")
            # GitHub sends no content for files over 1 MB
            blob = await self.gh.getitem(repo_api(self.repo, "git", "blobs", item["sha"]))
            return base64.b64decode(blob.get("content") or "")

        return await self._once(("file", path, ref), read)

    async def merge_base(self, base_sha: str, head_sha: str) -> str:
        """The commit a PR's changes are counted from (its base branch may have moved on since), read once per
        delivery."""

        async def read() -> str:
            compared = await self.gh.getitem(repo_api(self.repo, "compare", f"{base_sha}...{head_sha}", per_page=1))
            return (compared.get("merge_base_commit") or {}).get("sha") or base_sha

        return await self._once(("merge_base", base_sha, head_sha), read)

    async def pull(self, number: int) -> dict:
        """The PR as it is when this delivery first asks (a queued payload may be old), read once per delivery;
        `forget(("pull", number))` reads it again."""
        return await self._once(("pull", number), lambda: self.gh.getitem(repo_api(self.repo, "pulls", number)))

    async def git_commit(self, sha: str) -> dict:
        """A commit as the git database API gives it (message, parents), read once per delivery."""
        return await self._once(("commit", sha), lambda: self.gh.getitem(repo_api(self.repo, "git", "commits", sha)))

    async def comments(self, number: int) -> list[dict]:
        """Every comment on an issue or PR; the executor appends what it creates, so the list stays current."""
        return await self._listing(("comments", number), "issues", number, "comments")


async def open_pr_of_head(gh: GitHubAPI, repo: str, sha: str, *, head_only: bool = False) -> int | None:
    """The open PR of `repo` with the commit `sha` (a fork's run or check run names no PR), as GitHub says: the
    commit's open PRs, else the open PRs' heads. `head_only`: only a PR whose head `sha` is now (a check run's
    Re-run or button on an older head belongs to no PR)."""
    for pr in await gh.getitem(repo_api(repo, "commits", sha, "pulls")):
        if pr.get("state") == "open" and (not head_only or (pr.get("head") or {}).get("sha") == sha):
            return int(pr["number"])
    async for pr in gh.getiter(repo_api(repo, "pulls", state="open", per_page=PER_PAGE)):
        if (pr.get("head") or {}).get("sha") == sha:
            return int(pr["number"])
    return None
