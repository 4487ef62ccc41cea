"""Pull requests: the PR object, its files and commits (pushed, force-pushed), its timeline, and the PRs a commit
belongs to."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from bot.testing.core import GitHubCore, R
from bot.testing.model import NOT_FOUND, Call, Reply, Repo, blob_sha, check_body, fake_sha

PULL_FIELDS = frozenset(
    {"title", "body", "state", "draft", "merged", "merged_at", "merge_commit_sha", "mergeable", "locked"}
)


class PullsMixin(GitHubCore):
    ROUTES = [
        ("GET", R + "/pulls/{number}", "get_pull"),
        ("GET", R + "/pulls/{number}/files", "list_pull_files"),
        ("GET", R + "/pulls/{number}/commits", "list_pull_commits"),
        ("GET", R + "/commits/{ref}/pulls", "list_commit_pulls"),
        ("GET", R + "/git/commits/{ref}", "get_git_commit"),
        ("GET", R + "/issues/{number}/timeline", "list_timeline"),
    ]

    # ---- state setup ----------------------------------------------------------------------

    def add_pull(
        self,
        full_name: str,
        *,
        number: int | None = None,
        title: str = "Update benchmark recipe",
        user: str = "contributor",
        head_repo: str | None = None,
        head_ref: str = "feature",
        head_sha: str | None = None,
        base_ref: str | None = None,
        draft: bool = False,
        files: Iterable[str | dict[str, Any]] = (),
        labels: Iterable[str] = (),
        body: str = "",
    ) -> dict[str, Any]:
        """Open a PR. `labels` are applied by the author (recorded as `labeled` events by `user`)."""
        check_body(body, "PR body")
        repo = self._repo(full_name)
        head = repo
        if head_repo is not None and head_repo.lower() != full_name.lower():
            if head_repo.lower() not in self._repos:
                self.add_repo(head_repo, installation_id=None, owner_type="User", fork=True)
            head = self._repos[head_repo.lower()]
            head.json["fork"] = True
        item = self._new_item(repo, number, title, body, user)
        number = item["number"]
        base_ref = base_ref or repo.json["default_branch"]
        item["html_url"] = f"{self.web_url}/{full_name}/pull/{number}"
        item.update(
            {
                "draft": draft,
                "head": {
                    "label": f"{head.json['owner']['login']}:{head_ref}",
                    "ref": head_ref,
                    "sha": head_sha or fake_sha(full_name, number, "head"),
                    "user": head.json["owner"],
                    "repo": head.json,
                },
                "base": {
                    "label": f"{repo.json['owner']['login']}:{base_ref}",
                    "ref": base_ref,
                    "sha": fake_sha(full_name, base_ref),
                    "user": repo.json["owner"],
                    "repo": repo.json,
                },
                "merged": False,
                "merged_at": None,
                "merge_commit_sha": None,
            }
        )
        repo.pull_files[number] = [self._file_entry(f) for f in files]
        for name in labels:
            self._apply_label(repo, number, name, item["user"])
        return item

    def push_commit(
        self,
        full_name: str,
        number: int,
        *,
        sha: str | None = None,
        message: str = "Update the recipe",
        merge: bool = True,
        committed_at: str | None = None,
    ) -> dict[str, Any]:
        """The PR's author pushes one commit: it becomes the head (a `synchronize` would follow on GitHub).

        A PR that had a merge commit gets the new head's at once (`merge=False`: GitHub is still computing it, so
        `mergeable` is null and `merge_commit_sha` still names the earlier head's). `committed_at`: the commit's
        own date when it is not the moment of the push (made earlier and pushed now, or dated by hand: git takes
        any date the committer gives)."""
        repo = self._repo(full_name)
        item = self._item(repo, number, pull=True)
        commits = self._pull_commits(repo, number)
        sha = sha or fake_sha(full_name, number, "commit", len(commits))
        stamp = self._stamp()
        commit = self._commit_json(
            repo, sha, message, item["user"], [commits[-1]["sha"]] if commits else [], committed_at or stamp
        )
        commits.append(commit)
        self._pushed(repo, item, sha, stamp)
        if item.get("merge_commit_sha"):
            if merge:
                self._merge_commit(repo, item, fake_sha(full_name, number, "merge", sha))
            else:
                item["mergeable"] = None
        return copy.deepcopy(commit)

    def force_push(
        self,
        full_name: str,
        number: int,
        *,
        sha: str,
        message: str = "Rework the recipe",
        actor: str | None = None,
        committed_at: str | None = None,
    ) -> dict[str, Any]:
        """The PR's branch is force-pushed to a new commit `sha` on the base (the earlier commits leave the PR):
        GitHub records a `head_ref_force_pushed` event, by `actor` (the PR's author by default), at the push."""
        repo = self._repo(full_name)
        item = self._item(repo, number, pull=True)
        stamp = self._stamp()
        commit = self._commit_json(repo, sha, message, item["user"], [item["base"]["sha"]], committed_at or stamp)
        repo.pull_commits[number] = [commit]
        self._pushed(repo, item, sha, stamp)
        repo.events.setdefault(number, []).append(
            {
                "id": self._next_id(),
                "event": "head_ref_force_pushed",
                "actor": self._know(actor) if actor else dict(item["user"]),
                "commit_id": sha,
                "commit_url": f"{self.base_url}/repos/{repo.full_name}/commits/{sha}",
                "created_at": stamp,
            }
        )
        return copy.deepcopy(commit)

    def _pushed(self, repo: Repo, item: dict[str, Any], sha: str, stamp: str) -> None:
        """`sha` is the PR's head from `stamp` on (the PR's `updated_at` says when it was pushed)."""
        repo.head_before[item["number"]] = item["head"]["sha"]
        item["head"]["sha"] = sha
        item["updated_at"] = stamp
        repo.pushed_at[sha] = stamp
        if item["head"]["ref"] in repo.branches and item["head"]["repo"] is repo.json:
            repo.branches[item["head"]["ref"]] = sha

    def _merge_commit(self, repo: Repo, item: dict[str, Any], merge_sha: str) -> None:
        """GitHub's test merge of the PR's head into its base: a commit whose parents are the two."""
        item["merge_commit_sha"] = merge_sha
        if item.get("mergeable") is None:
            item["mergeable"] = True
        repo.merge_commits[merge_sha] = [item["base"]["sha"], item["head"]["sha"]]

    def update_pull(self, full_name: str, number: int, **fields: Any) -> dict[str, Any]:
        """Set top-level PR fields (draft, state, merge_commit_sha, merged, title, body...); `head_sha`
        pushes a commit. For callers that cannot mutate the live object of `pull` (the fake's process)."""
        repo = self._repo(full_name)
        item = self._item(repo, number, pull=True)
        head_sha = fields.pop("head_sha", None)
        unknown = set(fields) - PULL_FIELDS
        if unknown:
            raise ValueError(f"not a PR field the fake lets you set: {sorted(unknown)}")
        check_body(fields.get("body"), "PR body")
        merge_sha = fields.pop("merge_commit_sha", None) if fields.get("merge_commit_sha") else None
        item.update(fields)
        if merge_sha is not None:
            self._merge_commit(repo, item, merge_sha)
        if fields.get("state") == "closed" and not item.get("closed_at"):
            item["closed_at"] = self._stamp()
        if head_sha is not None:
            self.push_commit(full_name, number, sha=head_sha)
        return copy.deepcopy(item)

    @staticmethod
    def _file_entry(entry: str | dict[str, Any]) -> dict[str, Any]:
        """A pulls/files entry. `patch` is present only when given (GitHub omits it for big diffs)."""
        out: dict[str, Any] = {"filename": entry} if isinstance(entry, str) else dict(entry)
        out.setdefault("status", "modified")
        out.setdefault("additions", 0)
        out.setdefault("deletions", 0)
        out.setdefault("changes", out["additions"] + out["deletions"])
        out.setdefault("sha", fake_sha("file", out["filename"]))
        return out

    # ---- inspection -----------------------------------------------------------------------

    def pull(self, full_name: str, number: int) -> dict[str, Any]:
        """The live PR object: mutate it (head.sha, merge_commit_sha, draft, state...) to move the PR on."""
        return self._item(self._repo(full_name), number, pull=True)

    def pull_files(self, full_name: str, number: int) -> list[dict[str, Any]]:
        """The live list behind pulls/{n}/files."""
        repo = self._repo(full_name)
        self._item(repo, number, pull=True)
        return repo.pull_files[number]

    def pull_commits(self, full_name: str, number: int) -> list[str]:
        """The shas of the PR's commits, oldest first (the head last)."""
        repo = self._repo(full_name)
        return [c["sha"] for c in self._pull_commits(repo, number)]

    # ---- helpers --------------------------------------------------------------------------

    def _pull_commits(self, repo: Repo, number: int) -> list[dict[str, Any]]:
        """The PR's commits, the first made from the PR itself when first asked for; a head sha set on the
        live object counts as one more pushed commit (dated when it is first seen)."""
        item = self._item(repo, number, pull=True)
        commits = repo.pull_commits.setdefault(number, [])
        head = item["head"]["sha"]
        if not commits:
            commits.append(self._commit_json(repo, head, item["title"], item["user"], [], item["created_at"]))
            repo.pushed_at.setdefault(head, item["created_at"])
        elif all(c["sha"] != head for c in commits):
            commits.append(
                self._commit_json(repo, head, item["title"], item["user"], [commits[-1]["sha"]], item["updated_at"])
            )
            repo.pushed_at.setdefault(head, item["updated_at"])
        return commits

    def _commit_json(
        self, repo: Repo, sha: str, message: str, user: dict[str, Any], parents: list[str], stamp: str
    ) -> dict[str, Any]:
        person = {"name": user["login"], "email": f"{user['login']}@users.noreply.github.com", "date": stamp}
        return {
            "sha": sha,
            "commit": {"message": message, "author": dict(person), "committer": dict(person)},
            "author": dict(user),
            "committer": dict(user),
            "parents": [{"sha": p} for p in parents],
            "url": f"{self.base_url}/repos/{repo.full_name}/commits/{sha}",
            "html_url": f"{self.web_url}/{repo.full_name}/commit/{sha}",
        }

    # ---- routes ---------------------------------------------------------------------------

    def _route_get_pull(self, call: Call, repo: Repo, number: int) -> tuple[int, Any]:
        return 200, copy.deepcopy(self._item(repo, number, pull=True))

    def _route_list_pull_files(self, call: Call, repo: Repo, number: int) -> tuple[int, Any, dict[str, str]]:
        item = self._item(repo, number, pull=True)
        entries = copy.deepcopy(repo.pull_files[number])
        at_head = repo.files.get(item["head"]["sha"], {})
        for entry in entries:  # as GitHub: `sha` is the file's blob at the head, where the fake knows the file
            if entry.get("status") != "removed" and entry["filename"] in at_head:
                entry["sha"] = blob_sha(at_head[entry["filename"]])
        return self._paginate(call, entries)

    def _route_list_pull_commits(self, call: Call, repo: Repo, number: int) -> tuple[int, Any, dict[str, str]]:
        return self._paginate(call, copy.deepcopy(self._pull_commits(repo, number)))

    def _route_list_timeline(self, call: Call, repo: Repo, number: int) -> tuple[int, Any, dict[str, str]]:
        """GitHub's issue timeline, oldest first: for a PR its commits (`committed`: no time of its own but the
        commit's dates, listed where it was pushed), force pushes, comments, reviews and label events."""
        item = self._item(repo, number)
        dated: list[tuple[str, dict[str, Any]]] = []
        if "head" in item:
            for commit in self._pull_commits(repo, number):
                dated.append(
                    (
                        repo.pushed_at.get(commit["sha"], item["created_at"]),
                        {
                            "event": "committed",
                            "sha": commit["sha"],
                            "node_id": f"C_{commit['sha'][:12]}",
                            "url": f"{self.base_url}/repos/{repo.full_name}/git/commits/{commit['sha']}",
                            "html_url": commit["html_url"],
                            "author": dict(commit["commit"]["author"]),
                            "committer": dict(commit["commit"]["committer"]),
                            "message": commit["commit"]["message"],
                            "tree": {"sha": fake_sha("tree", commit["sha"])},
                            "parents": commit["parents"],
                            "verification": {
                                "verified": False,
                                "reason": "unsigned",
                                "signature": None,
                                "payload": None,
                            },
                        },
                    )
                )
            dated += [
                (review["submitted_at"], {**review, "event": "reviewed"})
                for pr, review in repo.reviews.values()
                if pr == number
            ]
        dated += [(event["created_at"], event) for event in repo.events.get(number, [])]
        dated += [
            (comment["created_at"], {**comment, "event": "commented", "actor": comment["user"]})
            for comment in self.comments(repo.full_name, number)
        ]
        dated.sort(key=lambda pair: pair[0])  # stable: what happened in one second stays in the order it happened
        return self._paginate(call, copy.deepcopy([event for _, event in dated]))

    def _route_get_git_commit(self, call: Call, repo: Repo, ref: str) -> tuple[int, Any]:
        if ref in repo.merge_commits:
            return 200, {
                "sha": ref,
                "message": "Merge into the base branch",
                "html_url": f"{self.web_url}/{repo.full_name}/commit/{ref}",
                "parents": [{"sha": p} for p in repo.merge_commits[ref]],
            }
        for number in [n for n, item in repo.items.items() if "head" in item]:
            for commit in self._pull_commits(repo, number):
                if commit["sha"] == ref:
                    return 200, {
                        "sha": ref,
                        "message": commit["commit"]["message"],
                        "author": commit["commit"]["author"],
                        "committer": commit["commit"]["committer"],
                        "parents": commit["parents"],
                        "html_url": commit["html_url"],
                    }
        raise Reply(404, NOT_FOUND)

    def _route_list_commit_pulls(self, call: Call, repo: Repo, ref: str) -> tuple[int, Any, dict[str, str]]:
        pulls = [
            copy.deepcopy(item)
            for number, item in repo.items.items()
            if "head" in item
            and (item.get("merge_commit_sha") == ref or any(c["sha"] == ref for c in self._pull_commits(repo, number)))
        ]
        return self._paginate(call, pulls)
