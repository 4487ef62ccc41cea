"""One delivery's reads of its repository, each made once: a handler's view of GitHub, read-only."""

from __future__ import annotations

import base64
from typing import Any, Callable

from gidgethub.abc import GitHubAPI

from bot.effects.comments import PER_PAGE
from bot.github.client import get_or_none
from bot.rules.links import Slashed, repo_api


class PRReader:
    """Reads of one repository for one delivery, memoised: every listing is read once (every page), a file at a
    commit once. The executor drops a listing it has changed (`forget`) or appends what it created."""

    def __init__(self, gh: GitHubAPI, repo: str):
        self.gh, self.repo = gh, repo
        self._memo: dict[Any, Any] = {}

    def forget(self, key: tuple) -> None:
        """Drop a memoised listing, so the next read asks GitHub again."""
        self._memo.pop(key, None)

    async def _listing(self, key: tuple, *path: str | int, keep: Callable[[dict], bool] = lambda item: True
                       ) -> list[dict]:
        """Every page of this repository's list endpoint `path`, read once per delivery."""
        if key not in self._memo:
            url = repo_api(self.repo, *path, per_page=PER_PAGE)
            self._memo[key] = [item async for item in self.gh.getiter(url) if keep(item)]
        return self._memo[key]

    async def pr_file_entries(self, number: int) -> list[dict]:
        """The changed files of a PR as GitHub lists them (every page; a rename carries `previous_filename`)."""
        return await self._listing(("files", number), "pulls", number, "files")

    async def pr_files(self, number: int) -> list[str]:
        """Changed file names of a PR."""
        return [f["filename"] for f in await self.pr_file_entries(number)]

    async def labels(self, number: int) -> list[str]:
        """The labels on an issue or PR as GitHub has them now (a payload's list can be stale)."""
        return [label["name"] for label in
                await self._listing(("labels", number), "issues", number, "labels")]

    async def label_events(self, number: int) -> list[dict]:
        return await self._listing(("events", number), "issues", number, "events",
                                   keep=lambda e: e.get("event") in ("labeled", "unlabeled"))

    async def file_at(self, path: str, ref: str) -> bytes | None:
        """The exact bytes of a file at a commit, or None where it does not exist (above 1 MB via the blob API)."""
        key = ("file", path, ref)
        if key not in self._memo:
            item = await get_or_none(self.gh, repo_api(self.repo, "contents", Slashed(path), ref=ref))
            data = None
            if isinstance(item, dict) and item.get("type", "file") == "file":
                if item.get("encoding") == "base64":
                    data = base64.b64decode(item.get("content") or "")
                else:  # GitHub sends no content for files over 1 MB
                    blob = await self.gh.getitem(repo_api(self.repo, "git", "blobs", item["sha"]))
                    data = base64.b64decode(blob.get("content") or "")
            self._memo[key] = data
        return self._memo[key]

    async def merge_base(self, base_sha: str, head_sha: str) -> str:
        """The commit a PR's changes are counted from (its base branch may have moved on since), read once per
        delivery."""
        key = ("merge_base", base_sha, head_sha)
        if key not in self._memo:
            compared = await self.gh.getitem(repo_api(self.repo, "compare", f"{base_sha}...{head_sha}", per_page=1))
            self._memo[key] = (compared.get("merge_base_commit") or {}).get("sha") or base_sha
        return self._memo[key]

    async def pull(self, number: int) -> dict:
        """The PR as it is when this delivery first asks (a queued payload may be old), read once per delivery;
        `forget(("pull", number))` reads it again."""
        key = ("pull", number)
        if key not in self._memo:
            self._memo[key] = await self.gh.getitem(repo_api(self.repo, "pulls", number))
        return self._memo[key]

    async def git_commit(self, sha: str) -> dict:
        """A commit as the git database API gives it (message, parents), read once per delivery."""
        key = ("commit", sha)
        if key not in self._memo:
            self._memo[key] = await self.gh.getitem(repo_api(self.repo, "git", "commits", sha))
        return self._memo[key]

    async def comments(self, number: int) -> list[dict]:
        """Every comment on an issue or PR; the executor appends what it creates, so the list stays current."""
        return await self._listing(("comments", number), "issues", number, "comments")


async def open_pr_of_head(gh: GitHubAPI, repo: str, sha: str) -> int | None:
    """The open PR of `repo` whose head is `sha` (a fork's run or check run names no PR), as GitHub says: the
    commit's PRs, else the open PRs' heads."""
    for pr in await gh.getitem(repo_api(repo, "commits", sha, "pulls")):
        if pr.get("state") == "open":
            return int(pr["number"])
    async for pr in gh.getiter(repo_api(repo, "pulls", state="open", per_page=PER_PAGE)):
        if (pr.get("head") or {}).get("sha") == sha:
            return int(pr["number"])
    return None
