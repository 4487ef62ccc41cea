"""Repositories: their JSON, files (contents API), branches, collaborator permissions, repository_dispatch."""

from __future__ import annotations

import copy
import json
from typing import Any

from bot.testing.core import GitHubCore, R
from bot.testing.model import (
    CONTENTS_MAX,
    NOT_FOUND,
    Call,
    Reply,
    Repo,
    blob_sha,
    fake_sha,
    not_supplied,
    unprocessable,
    user_json,
    wrapped_base64,
)

# The `permission` field is GitHub's legacy one: maintain reads as write, triage as read.
# `role_name` carries the real role.
LEGACY_PERMISSION = {
    "admin": "admin",
    "maintain": "write",
    "write": "write",
    "triage": "read",
    "read": "read",
    "none": "none",
}
EVENT_TYPE_MAX = 100
CLIENT_PAYLOAD_MAX_KEYS = 10
DISPATCH_DOC = "repos/repos#create-a-repository-dispatch-event"
WORKFLOWS_DIR = ".github/workflows/"


class ReposMixin(GitHubCore):
    ROUTES = [
        ("GET", R, "get_repo"),
        ("GET", R + "/contents/{path}", "get_contents"),
        ("GET", R + "/git/blobs/{ref}", "get_blob"),
        ("GET", R + "/compare/{ref}", "get_compare"),
        ("GET", R + "/commits", "list_commits"),
        ("GET", R + "/collaborators/{user}/permission", "get_permission"),
        ("POST", R + "/dispatches", "post_repository_dispatch"),
    ]

    # ---- state setup ----------------------------------------------------------------------

    def add_repo(
        self,
        full_name: str,
        *,
        default_branch: str = "main",
        installation_id: int | None = 1,
        private: bool = False,
        owner_type: str = "Organization",
        fork: bool = False,
    ) -> dict[str, Any]:
        if full_name.lower() in self._repos:
            raise ValueError(f"repository {full_name} already exists")
        owner, name = full_name.split("/")
        owner_json = self._know(owner, owner_type)
        repo_json = {
            "id": self._next_id(),
            "name": name,
            "full_name": full_name,
            "owner": owner_json,
            "private": private,
            "visibility": "private" if private else "public",
            "fork": fork,
            "default_branch": default_branch,
            "html_url": f"{self.web_url}/{full_name}",
            "url": f"{self.base_url}/repos/{full_name}",
        }
        self._repos[full_name.lower()] = Repo(repo_json, installation_id)
        if installation_id is not None:
            self._installations.setdefault(installation_id, {"id": installation_id, "account": owner_json})
        return repo_json

    def set_file(self, full_name: str, path: str, content: str | bytes, *, ref: str | None = None) -> None:
        repo = self._repo(full_name)
        data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        repo.files.setdefault(ref or repo.json["default_branch"], {})[path.lstrip("/")] = data

    def delete_file(self, full_name: str, path: str, *, ref: str | None = None) -> None:
        repo = self._repo(full_name)
        repo.files.get(ref or repo.json["default_branch"], {}).pop(path.lstrip("/"), None)

    def add_history(self, full_name: str, shas: list[str], *, parent: str | None = None) -> None:
        """Commits `shas` (oldest first) made one on another, the first on `parent` (or a root): compare and the
        commits listing walk them. A branch is a second call with `parent` an earlier commit."""
        repo = self._repo(full_name)
        for sha in shas:
            repo.parents[sha] = [parent] if parent else []
            parent = sha

    def set_path_history(self, full_name: str, path: str, versions: list[tuple[str, str | bytes | None]]) -> None:
        """The commits that changed `path`, newest first, each with the file's content after it (None: deleted):
        `commits?path=` lists them and the contents API reads the file at each."""
        repo = self._repo(full_name)
        repo.path_history[path.lstrip("/")] = [sha for sha, _ in versions]
        for sha, content in versions:
            if content is not None:
                self.set_file(full_name, path, content, ref=sha)

    def set_submodule(self, full_name: str, path: str, sha: str, *, ref: str | None = None) -> None:
        """A gitlink at `path` on `ref` pointing at commit `sha`: the contents API answers `type: submodule`."""
        repo = self._repo(full_name)
        repo.submodules.setdefault(ref or repo.json["default_branch"], {})[path.strip("/")] = sha

    def set_permission(self, full_name: str, login: str, permission: str) -> None:
        if permission not in LEGACY_PERMISSION:
            raise ValueError(f"unknown permission {permission!r}")
        self._know(login)
        self._repo(full_name).permissions[login.lower()] = permission

    def set_branch(self, full_name: str, branch: str, sha: str) -> None:
        """Branch `branch` of the repository now points at `sha` (what a workflow dispatched on it runs)."""
        self._repo(full_name).branches[_branch_name(branch)] = sha

    def branch_sha(self, full_name: str, branch: str) -> str | None:
        """The head sha of a branch: one set with `set_branch`, else the head of an open same-repository PR
        from that branch, else a stable made-up sha for the default branch; None for an unknown branch."""
        return self._branch_sha(self._repo(full_name), branch)

    def _branch_sha(self, repo: Repo, branch: str) -> str | None:
        name = _branch_name(branch)
        if name in repo.branches:
            return repo.branches[name]
        for item in reversed(list(repo.items.values())):
            head = item.get("head")
            if head and head["ref"] == name and head["repo"]["full_name"].lower() == repo.full_name.lower():
                return head["sha"]
        if name == repo.json["default_branch"]:
            return fake_sha(repo.full_name, name)
        return None

    # ---- inspection -----------------------------------------------------------------------

    def has_repo(self, full_name: str) -> bool:
        return full_name.lower() in self._repos

    @property
    def repos(self) -> dict[str, dict[str, Any]]:
        """Full name -> repository JSON, for every repository added (forks included)."""
        return {repo.full_name: repo.json for repo in self._repos.values()}

    def repository_dispatches(self, full_name: str) -> list[dict[str, Any]]:
        """Every accepted `POST /dispatches`: {"event_type", "client_payload", "sender", "created_at"}, oldest first."""
        return copy.deepcopy(self._repo(full_name).dispatches)

    # ---- routes ---------------------------------------------------------------------------

    def _route_get_repo(self, call: Call, repo: Repo) -> tuple[int, Any]:
        return 200, copy.deepcopy(repo.json)

    def _route_get_contents(self, call: Call, repo: Repo, path: str) -> tuple[int, Any]:
        ref = call.query.get("ref") or repo.json["default_branch"]
        gitlink = repo.submodules.get(ref, {}).get(path.strip("/"))
        if gitlink is not None:  # GitHub's answer for a submodule: its commit, no content
            return 200, {
                "type": "submodule",
                "name": path.rsplit("/", 1)[-1],
                "path": path.strip("/"),
                "sha": gitlink,
                "size": 0,
                "submodule_git_url": None,
                "html_url": None,
            }
        data = repo.files.get(ref, {}).get(path.strip("/"))
        workflow = repo.workflows.get(path.strip("/").removeprefix(WORKFLOWS_DIR))
        if data is None and workflow is not None and path.strip("/").startswith(WORKFLOWS_DIR):
            if ref == repo.json["default_branch"]:  # a registered workflow is a file on the default branch
                data = workflow.file_text().encode()
        if data is None:
            raise Reply(404, NOT_FOUND)
        big = len(data) > CONTENTS_MAX  # GitHub then sends no content: the blob API has it
        return 200, {
            "type": "file",
            "encoding": "none" if big else "base64",
            "size": len(data),
            "name": path.rsplit("/", 1)[-1],
            "path": path.strip("/"),
            "content": "" if big else wrapped_base64(data),
            "sha": blob_sha(data),
            "html_url": f"{repo.json['html_url']}/blob/{ref}/{path.strip('/')}",
        }

    def _route_get_blob(self, call: Call, repo: Repo, ref: str) -> tuple[int, Any]:
        for files in repo.files.values():
            for data in files.values():
                if blob_sha(data) == ref:
                    return 200, {"sha": ref, "size": len(data), "encoding": "base64", "content": wrapped_base64(data)}
        raise Reply(404, NOT_FOUND)

    def _route_get_compare(self, call: Call, repo: Repo, ref: str) -> tuple[int, Any]:
        base, dots, head = ref.partition("...")
        if not dots or not base or not head:
            raise Reply(404, NOT_FOUND)
        if base in repo.parents or head in repo.parents:  # a history was given: compare walks it, as GitHub does
            return 200, self._compared(repo, base, head)
        return 200, {
            "status": "ahead",
            "merge_base_commit": {"sha": base},
            "base_commit": {"sha": base},
            "commits": [],
            "files": [],
        }

    def _ancestors(self, repo: Repo, sha: str) -> list[str]:
        """`sha` and every commit it descends from, nearest first."""
        seen: list[str] = []
        todo = [sha]
        while todo:
            current = todo.pop(0)
            if current in seen:
                continue
            seen.append(current)
            todo += repo.parents.get(current, [])
        return seen

    def _compared(self, repo: Repo, base: str, head: str) -> dict[str, Any]:
        if base not in repo.parents or head not in repo.parents:
            raise Reply(404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})
        of_base, of_head = self._ancestors(repo, base), self._ancestors(repo, head)
        merge_base = next((sha for sha in of_head if sha in of_base), base)
        ahead = [sha for sha in of_head if sha not in of_base]
        behind = [sha for sha in of_base if sha not in of_head]
        status = "identical" if base == head else "behind" if not ahead else "ahead" if not behind else "diverged"
        return {
            "status": status,
            "ahead_by": len(ahead),
            "behind_by": len(behind),
            "total_commits": len(ahead),
            "merge_base_commit": {"sha": merge_base},
            "base_commit": {"sha": base},
            "commits": [{"sha": sha} for sha in reversed(ahead)],
            "files": [],
        }

    def _route_list_commits(self, call: Call, repo: Repo) -> tuple[int, Any, dict[str, str]]:
        """`commits?sha=&path=`: the commits reachable from `sha` (default branch by default), newest first; with
        `path`, only those that changed it (set_path_history)."""
        start = call.query.get("sha") or self._branch_sha(repo, repo.json["default_branch"]) or ""
        path = (call.query.get("path") or "").strip("/")
        if path:
            reachable = set(self._ancestors(repo, start)) if start in repo.parents else None
            shas = [sha for sha in repo.path_history.get(path, []) if reachable is None or sha in reachable]
        else:
            shas = self._ancestors(repo, start) if start in repo.parents else []
        items = [
            {"sha": sha, "commit": {"message": ""}, "parents": [{"sha": p} for p in repo.parents.get(sha, [])]}
            for sha in shas
        ]
        return self._paginate(call, items)

    def _route_get_permission(self, call: Call, repo: Repo, user: str) -> tuple[int, Any]:
        role = repo.permissions.get(user.lower())
        if role is None:
            known = user.lower() in self._known_users and not repo.json["private"]
            role = "read" if known else "none"
        return 200, {"permission": LEGACY_PERMISSION[role], "role_name": role, "user": user_json(user)}

    def _route_post_repository_dispatch(self, call: Call, repo: Repo) -> tuple[int, Any]:
        body = call.fields
        event_type = body.get("event_type")
        if not isinstance(event_type, str) or not event_type:
            raise not_supplied("event_type", doc=DISPATCH_DOC)
        if len(event_type) > EVENT_TYPE_MAX:
            raise unprocessable(
                f"Invalid request.\n\nevent_type is too long (maximum is {EVENT_TYPE_MAX} characters).",
                doc=DISPATCH_DOC,
            )
        payload = body.get("client_payload", {})
        if not isinstance(payload, dict):
            raise unprocessable(
                f"Invalid request.\n\nFor 'properties/client_payload', {json.dumps(payload)} is not an object.",
                doc=DISPATCH_DOC,
            )
        if len(payload) > CLIENT_PAYLOAD_MAX_KEYS:
            raise unprocessable(
                f"Invalid request.\n\nNo more than {CLIENT_PAYLOAD_MAX_KEYS} properties are allowed; "
                f"{len(payload)} were supplied.",
                doc=DISPATCH_DOC,
            )
        repo.dispatches.append(
            {
                "event_type": event_type,
                "client_payload": copy.deepcopy(payload),
                "sender": call.user["login"],
                "created_at": self._stamp(),
            }
        )
        return 204, None


def _branch_name(ref: str) -> str:
    return ref.removeprefix("refs/heads/")
