"""Merging: GitHub's merge API for a pull request and the Git Data API a merge is built with (blobs, trees,
commits, branch refs), over the fake's files per ref.

How it fits the rest of the fake: files live in `Repo.files` by ref (a branch name or a commit sha, as
`set_file(..., ref=...)` puts them). A commit made here has a tree, and its files are that tree's; any other
commit (a branch head, a PR's commit, a sha that files were set at) is given a tree when asked, made from the
files set at its sha, else at the branch it heads. When a branch moves here (a merge, a ref update), the
branch's files become the new commit's, under the branch's name and the commit's sha, so
`GET contents/{path}?ref=<branch>` reads the merged files. The fake does no three-way merge: the merge API's
commit has the files of the PR's head (as GitHub's has when the head already holds the base, as after the bot
updated the branch); a head whose files the fake was never given leaves the base's files as they are.

GitHub's refusals, each with its status: 405 for a PR that is closed, a draft or marked unmergeable
(`update_pull(..., mergeable=False)`); 409 when the merge's `sha` is not the head; 422 for a body GitHub
would refuse, an object that does not exist, and a ref update that is not a fast-forward. A ref update whose
new commit reaches the head of an open PR into that branch marks the PR merged, as GitHub does once a PR's
head is reachable from its base; a ref update of a PR's own head branch moves the PR's head.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
from typing import Any

from bot.testing.core import R
from bot.testing.model import (
    NOT_FOUND,
    Call,
    Reply,
    Repo,
    blob_sha,
    fake_sha,
    not_supplied,
    unprocessable,
    wrapped_base64,
)
from bot.testing.pulls import PullsMixin
from bot.testing.repos import ReposMixin

MERGE_DOC = "pulls/pulls#merge-a-pull-request"
BLOB_DOC = "git/blobs#create-a-blob"
TREE_DOC = "git/trees#create-a-tree"
COMMIT_DOC = "git/commits#create-a-commit"
REF_DOC = "git/refs#update-a-reference"
MERGE_METHODS = ("merge", "squash", "rebase")
BLOB_ENCODINGS = ("utf-8", "base64")
TREE_MODES = ("100644", "100755", "040000", "160000", "120000")
TREE_TYPES = ("blob", "tree", "commit")
FILE_MODE = "100644"

Entry = tuple[str, str, str]  # a tree's entry: (mode, type, sha)


class GitStore:
    """One repository's Git objects made through the API (or given a tree when asked for one)."""

    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}
        self.trees: dict[str, dict[str, Entry]] = {}  # tree sha -> full path -> entry; no entry is a tree
        self.commits: dict[str, dict[str, Any]] = {}  # sha -> {"tree", "parents", "message", "author", ...}


class GitDataMixin(PullsMixin, ReposMixin):
    ROUTES = [
        ("PUT", R + "/pulls/{number}/merge", "put_pull_merge"),
        ("GET", R + "/pulls/{number}/merge", "get_pull_merged"),
        ("POST", R + "/git/blobs", "post_blob"),
        ("GET", R + "/git/trees/{ref}", "get_tree"),
        ("POST", R + "/git/trees", "post_tree"),
        ("POST", R + "/git/commits", "post_git_commit"),
        ("GET", R + "/git/ref/heads/{path}", "get_branch_ref"),
        ("PATCH", R + "/git/refs/heads/{path}", "patch_branch_ref"),
    ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._git: dict[str, GitStore] = {}  # lowercased full name -> its objects
        self._merge_bases: dict[tuple[str, str], str] = {}  # (lowercased full name, head sha) -> merge base

    def set_merge_base(self, full_name: str, head_sha: str, sha: str) -> None:
        """`compare/{base}...{head_sha}` names `sha` as the merge base (a PR branched before the base moved on)."""
        self._merge_bases[(full_name.lower(), head_sha)] = sha

    # ---- inspection -----------------------------------------------------------------------

    def git_commit(self, full_name: str, sha: str) -> dict[str, Any] | None:
        """A commit as `GET git/commits/{sha}` shows it (with its tree), None when the fake knows no such commit."""
        repo = self._repo(full_name)
        return self._commit_out(repo, sha) if self._is_commit(repo, sha) else None

    def files_at(self, full_name: str, ref: str) -> dict[str, bytes]:
        """The files of a commit sha or a branch, as a tree of it would hold them ({} when none are known)."""
        repo = self._repo(full_name)
        sha = self._branch_sha(repo, ref) or ref
        return dict(self._files_at(repo, sha) or {})

    # ---- objects --------------------------------------------------------------------------

    def _store(self, repo: Repo) -> GitStore:
        return self._git.setdefault(repo.full_name.lower(), GitStore())

    def _blob(self, repo: Repo, sha: str) -> bytes | None:
        store = self._store(repo)
        if sha in store.blobs:
            return store.blobs[sha]
        for files in repo.files.values():
            for data in files.values():
                if blob_sha(data) == sha:
                    return data
        return None

    def _save_tree(self, repo: Repo, entries: dict[str, Entry]) -> str:
        """Store a tree (and one for each of its folders, so that each can be read): its sha."""
        store = self._store(repo)
        sha = fake_sha("tree", *(f"{mode} {kind} {obj} {path}" for path, (mode, kind, obj) in sorted(entries.items())))
        if sha not in store.trees:
            store.trees[sha] = dict(entries)
            for folder in {path.split("/", 1)[0] for path in entries if "/" in path}:
                self._save_tree(repo, _under(entries, folder))
        return sha

    def _tree_of_files(self, repo: Repo, files: dict[str, bytes]) -> str:
        store = self._store(repo)
        entries: dict[str, Entry] = {}
        for path, data in files.items():
            sha = blob_sha(data)
            store.blobs.setdefault(sha, data)
            entries[path] = (FILE_MODE, "blob", sha)
        return self._save_tree(repo, entries)

    def _tree_files(self, repo: Repo, tree: str) -> dict[str, bytes]:
        entries = self._store(repo).trees[tree]
        out = {}
        for path, (_, kind, sha) in entries.items():
            data = self._blob(repo, sha) if kind == "blob" else None
            if data is not None:
                out[path] = data
        return out

    def _files_at(self, repo: Repo, sha: str) -> dict[str, bytes] | None:
        """The files of commit `sha`: its tree's when made here, else those set at the sha, else at the branch it
        heads; None when the fake was given none."""
        commit = self._store(repo).commits.get(sha)
        if commit is not None:
            return self._tree_files(repo, commit["tree"])
        if sha in repo.files:
            return repo.files[sha]
        for name in list(repo.files):
            if self._branch_sha(repo, name) == sha:
                return repo.files[name]
        return None

    def _tree_of_commit(self, repo: Repo, sha: str) -> str:
        commit = self._store(repo).commits.get(sha)
        if commit is not None:
            return str(commit["tree"])
        return self._tree_of_files(repo, dict(self._files_at(repo, sha) or {}))

    def _branch_heads(self, repo: Repo) -> set[str]:
        names = set(repo.branches) | set(repo.files) | {repo.json["default_branch"]}
        names |= {item["head"]["ref"] for item in repo.items.values() if "head" in item}
        return {sha for sha in (self._branch_sha(repo, name) for name in names) if sha is not None}

    def _pr_commits(self, repo: Repo) -> dict[str, list[str]]:
        """Every commit of the PRs the fake knows (their heads included): sha -> parents."""
        found: dict[str, list[str]] = {}
        for number, item in repo.items.items():
            if "head" not in item:
                continue
            for commit in repo.pull_commits.get(number, []):
                found[commit["sha"]] = [p["sha"] for p in commit["parents"]]
            found.setdefault(item["head"]["sha"], [])
        return found

    def _is_commit(self, repo: Repo, sha: str) -> bool:
        return (
            sha in self._store(repo).commits
            or sha in repo.merge_commits
            or sha in self._pr_commits(repo)
            or sha in self._branch_heads(repo)
            or (sha in repo.files and _looks_like_sha(sha))
        )

    def _parents(self, repo: Repo, sha: str) -> list[str]:
        commit = self._store(repo).commits.get(sha)
        if commit is not None:
            return list(commit["parents"])
        if sha in repo.merge_commits:
            return list(repo.merge_commits[sha])
        return self._pr_commits(repo).get(sha, [])

    def _reaches(self, repo: Repo, start: str, target: str) -> bool:
        """Whether `target` is `start` or one of its ancestors, as far as the fake knows their parents."""
        seen, todo = set(), [start]
        while todo:
            sha = todo.pop()
            if sha == target:
                return True
            if sha not in seen:
                seen.add(sha)
                todo.extend(self._parents(repo, sha))
        return False

    def _new_commit(
        self, repo: Repo, tree: str, parents: list[str], message: str, person: dict[str, Any], stamp: str
    ) -> str:
        sha = fake_sha("commit", repo.full_name, tree, *parents, message, stamp)
        self._store(repo).commits[sha] = {
            "tree": tree,
            "parents": list(parents),
            "message": message,
            "author": dict(person),
            "committer": dict(person),
        }
        return sha

    def _commit_out(self, repo: Repo, sha: str) -> dict[str, Any]:
        commit = self._store(repo).commits.get(sha)
        base = f"{self.base_url}/repos/{repo.full_name}"
        if commit is None:
            commit = {
                "tree": self._tree_of_commit(repo, sha),
                "parents": self._parents(repo, sha),
                "message": "",
                "author": None,
                "committer": None,
            }
        return {
            "sha": sha,
            "node_id": f"C_{sha[:12]}",
            "url": f"{base}/git/commits/{sha}",
            "html_url": f"{self.web_url}/{repo.full_name}/commit/{sha}",
            "author": copy.deepcopy(commit["author"]),
            "committer": copy.deepcopy(commit["committer"]),
            "message": commit["message"],
            "tree": {"sha": commit["tree"], "url": f"{base}/git/trees/{commit['tree']}"},
            "parents": [
                {"sha": p, "url": f"{base}/git/commits/{p}", "html_url": f"{self.web_url}/{repo.full_name}/commit/{p}"}
                for p in commit["parents"]
            ],
            "verification": {"verified": False, "reason": "unsigned", "signature": None, "payload": None},
        }

    def _tree_out(self, repo: Repo, sha: str, *, recursive: bool) -> dict[str, Any]:
        entries = self._store(repo).trees[sha]
        base = f"{self.base_url}/repos/{repo.full_name}"
        listed: dict[str, dict[str, Any]] = {}
        for path, (mode, kind, obj) in entries.items():
            parts = path.split("/")
            shown = range(1, len(parts)) if recursive else range(1, min(len(parts), 2))
            for depth in shown:  # the folders on the way to it
                folder = "/".join(parts[:depth])
                if folder not in listed:
                    subtree = self._save_tree(repo, _under(entries, folder))
                    listed[folder] = {
                        "path": folder,
                        "mode": "040000",
                        "type": "tree",
                        "sha": subtree,
                        "url": f"{base}/git/trees/{subtree}",
                    }
            if recursive or len(parts) == 1:
                item: dict[str, Any] = {"path": path, "mode": mode, "type": kind, "sha": obj}
                if kind == "blob":
                    item["size"] = len(self._blob(repo, obj) or b"")
                    item["url"] = f"{base}/git/blobs/{obj}"
                listed[path] = item
        return {
            "sha": sha,
            "url": f"{base}/git/trees/{sha}",
            "tree": [listed[p] for p in sorted(listed)],
            "truncated": False,
        }

    # ---- moving a branch ------------------------------------------------------------------

    def _move_branch(self, repo: Repo, branch: str, sha: str, actor: dict[str, Any] | None) -> None:
        """Branch `branch` points at commit `sha` now: its files are the commit's, a PR whose head branch it is
        has that head, and an open PR into it whose head the commit reaches is merged."""
        stamp = self._stamp()
        old = self._branch_sha(repo, branch)
        if old is not None and old not in repo.files and old not in self._store(repo).commits and branch in repo.files:
            repo.files[old] = dict(repo.files[branch])  # the commit it leaves keeps its files
        repo.branches[branch] = sha
        files = self._files_at(repo, sha)
        if files is not None:
            repo.files[branch] = dict(files)
            repo.files[sha] = dict(files)
        for number, item in repo.items.items():
            if "head" not in item or item.get("state") != "open" or item.get("merged"):
                continue
            own = item["head"]["repo"]["full_name"].lower() == repo.full_name.lower()
            if own and item["head"]["ref"] == branch and item["head"]["sha"] != sha:
                self._pull_commits(repo, number)
                commit = self._store(repo).commits.get(sha) or {"message": "", "parents": [item["head"]["sha"]]}
                user = actor or item["user"]
                repo.pull_commits[number].append(
                    self._commit_json(repo, sha, commit["message"], user, list(commit["parents"]), stamp)
                )
                self._pushed(repo, item, sha, stamp)
                if item.get("merge_commit_sha"):
                    self._merge_commit(repo, item, fake_sha(repo.full_name, number, "merge", sha))
            elif item["base"]["ref"] == branch and self._reaches(repo, sha, item["head"]["sha"]):
                self._mark_merged(repo, item, sha, actor, stamp)

    def _mark_merged(
        self, repo: Repo, item: dict[str, Any], sha: str, actor: dict[str, Any] | None, stamp: str
    ) -> None:
        by = dict(actor) if actor else None
        item.update(
            merged=True,
            merged_at=stamp,
            merge_commit_sha=sha,
            merged_by=by,
            state="closed",
            closed_at=stamp,
            updated_at=stamp,
        )
        events = repo.events.setdefault(item["number"], [])
        for kind in ("merged", "closed"):
            events.append(
                {
                    "id": self._next_id(),
                    "event": kind,
                    "actor": by,
                    "commit_id": sha,
                    "commit_url": f"{self.base_url}/repos/{repo.full_name}/commits/{sha}",
                    "created_at": stamp,
                }
            )

    # ---- routes: the merge API ------------------------------------------------------------

    def _route_put_pull_merge(self, call: Call, repo: Repo, number: int) -> tuple[int, Any]:
        item = self._item(repo, number, pull=True)
        body = call.fields
        method = body.get("merge_method", "merge")
        if method not in MERGE_METHODS:
            raise unprocessable(
                f"Invalid request.\n\nFor 'properties/merge_method', {json.dumps(method)} is not one "
                f"of {json.dumps(list(MERGE_METHODS))}.",
                doc=MERGE_DOC,
            )
        for name in ("sha", "commit_title", "commit_message"):
            if name in body and not isinstance(body[name], str):
                raise unprocessable(
                    f"Invalid request.\n\nFor 'properties/{name}', {json.dumps(body[name])} is not a string.",
                    doc=MERGE_DOC,
                )
        if item.get("state") != "open" or item.get("merged") or item.get("mergeable") is False:
            raise Reply(
                405,
                {
                    "message": "Pull Request is not mergeable",
                    "documentation_url": f"https://docs.github.com/rest/{MERGE_DOC}",
                },
            )
        if item.get("draft"):
            raise Reply(
                405,
                {
                    "message": "Pull Request is still a draft",
                    "documentation_url": f"https://docs.github.com/rest/{MERGE_DOC}",
                },
            )
        head = item["head"]["sha"]
        if "sha" in body and body["sha"] != head:
            raise Reply(
                409,
                {
                    "message": "Head branch was modified. Review and try the merge again.",
                    "documentation_url": f"https://docs.github.com/rest/{MERGE_DOC}",
                },
            )
        branch = item["base"]["ref"]
        base_head = self._branch_sha(repo, branch)
        if base_head is None:
            raise Reply(404, NOT_FOUND)
        files = self._files_at(repo, head)
        tree = self._tree_of_files(repo, dict(files if files is not None else self._files_at(repo, base_head) or {}))
        default_title = {
            "merge": f"Merge pull request #{number} from {item['head']['label']}",
            "squash": f"{item['title']} (#{number})",
            "rebase": item["title"],
        }[method]
        message = body.get("commit_title") or default_title
        if body.get("commit_message"):
            message += "\n\n" + body["commit_message"]
        parents = [base_head, head] if method == "merge" else [base_head]
        actor = call.actor or item["user"]
        person = {"name": actor["login"], "email": f"{actor['login']}@users.noreply.github.com", "date": self._stamp()}
        sha = self._new_commit(repo, tree, parents, message, person, person["date"])
        self._mark_merged(repo, item, sha, call.actor, person["date"])
        self._move_branch(repo, branch, sha, call.actor)
        return 200, {"sha": sha, "merged": True, "message": "Pull Request successfully merged"}

    def _route_get_pull_merged(self, call: Call, repo: Repo, number: int) -> tuple[int, Any]:
        if self._item(repo, number, pull=True).get("merged"):
            return 204, None
        raise Reply(404, NOT_FOUND)

    # ---- routes: Git Data -----------------------------------------------------------------

    def _route_post_blob(self, call: Call, repo: Repo) -> tuple[int, Any]:
        body = call.fields
        if "content" not in body:
            raise not_supplied("content", doc=BLOB_DOC)
        content, encoding = body["content"], body.get("encoding", "utf-8")
        if not isinstance(content, str):
            raise unprocessable(
                f"Invalid request.\n\nFor 'properties/content', {json.dumps(content)} is not a string.", doc=BLOB_DOC
            )
        if encoding not in BLOB_ENCODINGS:
            raise unprocessable(
                f"Invalid request.\n\nFor 'properties/encoding', {json.dumps(encoding)} is not one "
                f"of {json.dumps(list(BLOB_ENCODINGS))}.",
                doc=BLOB_DOC,
            )
        try:
            data = base64.b64decode(content, validate=True) if encoding == "base64" else content.encode("utf-8")
        except (binascii.Error, ValueError):
            raise unprocessable("Invalid request.\n\ncontent is not valid Base64.", doc=BLOB_DOC) from None
        sha = blob_sha(data)
        self._store(repo).blobs[sha] = data
        return 201, {"sha": sha, "url": f"{self.base_url}/repos/{repo.full_name}/git/blobs/{sha}"}

    def _route_get_tree(self, call: Call, repo: Repo, ref: str) -> tuple[int, Any]:
        store = self._store(repo)
        if ref not in store.trees:
            commit = ref if self._is_commit(repo, ref) else self._branch_sha(repo, ref)
            if commit is None:
                raise Reply(404, NOT_FOUND)
            ref = self._tree_of_commit(repo, commit)
        return 200, self._tree_out(repo, ref, recursive="recursive" in call.query)

    def _route_post_tree(self, call: Call, repo: Repo) -> tuple[int, Any]:
        body = call.fields
        if "tree" not in body:
            raise not_supplied("tree", doc=TREE_DOC)
        given, base_tree = body["tree"], body.get("base_tree")
        if not isinstance(given, list):
            raise unprocessable(
                f"Invalid request.\n\nFor 'properties/tree', {json.dumps(given)} is not an array.", doc=TREE_DOC
            )
        store = self._store(repo)
        if base_tree is not None and base_tree not in store.trees:
            commit = base_tree if isinstance(base_tree, str) and self._is_commit(repo, base_tree) else None
            if commit is None:
                raise unprocessable("Invalid request.\n\nbase_tree is not a valid tree oid.", doc=TREE_DOC)
            base_tree = self._tree_of_commit(repo, commit)  # GitHub takes a commit-ish here too
        entries = dict(store.trees[base_tree]) if base_tree is not None else {}
        for entry in given:
            self._apply_tree_entry(repo, entries, entry)
        sha = self._save_tree(repo, entries)
        return 201, self._tree_out(repo, sha, recursive=False)

    def _apply_tree_entry(self, repo: Repo, entries: dict[str, Entry], entry: Any) -> None:
        if not isinstance(entry, dict):
            raise unprocessable("Invalid request.\n\nA tree entry is not an object.", doc=TREE_DOC)
        missing = [name for name in ("path", "mode", "type") if name not in entry]
        if missing:
            raise not_supplied(*missing, doc=TREE_DOC)
        path, mode, kind = entry["path"], entry["mode"], entry["type"]
        if not isinstance(path, str) or not path or path.startswith("/") or path.endswith("/") or "//" in path:
            raise unprocessable(f"Invalid request.\n\ntree.path {json.dumps(path)} is not a valid path.", doc=TREE_DOC)
        if mode not in TREE_MODES:
            raise unprocessable(
                f"Invalid request.\n\nFor 'properties/mode', {json.dumps(mode)} is not one of "
                f"{json.dumps(list(TREE_MODES))}.",
                doc=TREE_DOC,
            )
        if kind not in TREE_TYPES:
            raise unprocessable(
                f"Invalid request.\n\nFor 'properties/type', {json.dumps(kind)} is not one of "
                f"{json.dumps(list(TREE_TYPES))}.",
                doc=TREE_DOC,
            )
        if ("sha" in entry) == ("content" in entry):
            raise unprocessable("Invalid request.\n\nA tree entry needs exactly one of sha and content.", doc=TREE_DOC)
        sha = entry.get("sha")
        if "content" in entry:
            if kind != "blob" or not isinstance(entry["content"], str):
                raise unprocessable("Invalid request.\n\ntree.content must be a string, for a blob.", doc=TREE_DOC)
            data = entry["content"].encode("utf-8")
            sha = blob_sha(data)
            self._store(repo).blobs[sha] = data
        for old in [p for p in entries if p == path or p.startswith(path + "/")]:
            del entries[old]  # what the entry replaces (or, with a null sha, deletes)
        if sha is None:
            return
        if not isinstance(sha, str):
            raise unprocessable(f"Invalid request.\n\ntree.sha {json.dumps(sha)} is not a string.", doc=TREE_DOC)
        if kind == "blob":
            if self._blob(repo, sha) is None:
                raise unprocessable(f"Invalid request.\n\ntree.sha {sha} is not a valid blob.", doc=TREE_DOC)
            entries[path] = (mode, kind, sha)
        elif kind == "tree":
            subtree = self._store(repo).trees.get(sha)
            if subtree is None:
                raise unprocessable(f"Invalid request.\n\ntree.sha {sha} is not a valid tree.", doc=TREE_DOC)
            entries.update({f"{path}/{inner}": value for inner, value in subtree.items()})
        else:
            entries[path] = (mode, kind, sha)

    def _route_post_git_commit(self, call: Call, repo: Repo) -> tuple[int, Any]:
        body = call.fields
        missing = [name for name in ("message", "tree") if name not in body]
        if missing:
            raise not_supplied(*missing, doc=COMMIT_DOC)
        message, tree, parents = body["message"], body["tree"], body.get("parents", [])
        if not isinstance(message, str):
            raise unprocessable(
                f"Invalid request.\n\nFor 'properties/message', {json.dumps(message)} is not a string.", doc=COMMIT_DOC
            )
        if not isinstance(parents, list) or not all(isinstance(p, str) for p in parents):
            raise unprocessable(
                f"Invalid request.\n\nFor 'properties/parents', {json.dumps(parents)} is not an array of strings.",
                doc=COMMIT_DOC,
            )
        if not isinstance(tree, str) or tree not in self._store(repo).trees:
            raise unprocessable("Tree SHA does not exist", doc=COMMIT_DOC)
        for parent in parents:
            if not self._is_commit(repo, parent):
                raise unprocessable("Parent SHA does not exist or is not a commit object", doc=COMMIT_DOC)
        stamp = self._stamp()
        actor = call.actor or {"login": "unknown"}
        person = {"name": actor["login"], "email": f"{actor['login']}@users.noreply.github.com", "date": stamp}
        for role in ("author", "committer"):
            given = body.get(role)
            if given is not None and not isinstance(given, dict):
                raise unprocessable(
                    f"Invalid request.\n\nFor 'properties/{role}', {json.dumps(given)} is not an object.",
                    doc=COMMIT_DOC,
                )
        sha = self._new_commit(repo, tree, parents, message, person, stamp)
        commit = self._store(repo).commits[sha]
        for role in ("author", "committer"):
            if isinstance(body.get(role), dict):
                commit[role] = {**person, **body[role]}
        return 201, self._commit_out(repo, sha)

    def _route_get_branch_ref(self, call: Call, repo: Repo, path: str) -> tuple[int, Any]:
        sha = self._branch_sha(repo, path)
        if sha is None:
            raise Reply(404, NOT_FOUND)
        return 200, self._ref_out(repo, path, sha)

    def _route_patch_branch_ref(self, call: Call, repo: Repo, path: str) -> tuple[int, Any]:
        body = call.fields
        if "sha" not in body:
            raise not_supplied("sha", doc=REF_DOC)
        sha, force = body["sha"], body.get("force", False)
        if not isinstance(sha, str):
            raise unprocessable(
                f"Invalid request.\n\nFor 'properties/sha', {json.dumps(sha)} is not a string.", doc=REF_DOC
            )
        if not isinstance(force, bool):
            raise unprocessable(
                f"Invalid request.\n\nFor 'properties/force', {json.dumps(force)} is not a boolean.", doc=REF_DOC
            )
        current = self._branch_sha(repo, path)
        if current is None:
            raise unprocessable("Reference does not exist", doc=REF_DOC)
        if not self._is_commit(repo, sha):
            raise unprocessable("Object does not exist", doc=REF_DOC)
        if not force and not self._reaches(repo, sha, current):
            raise unprocessable("Update is not a fast forward", doc=REF_DOC)
        self._move_branch(repo, path, sha, call.actor)
        return 200, self._ref_out(repo, path, sha)

    def _ref_out(self, repo: Repo, branch: str, sha: str) -> dict[str, Any]:
        base = f"{self.base_url}/repos/{repo.full_name}"
        return {
            "ref": f"refs/heads/{branch}",
            "node_id": f"REF_{fake_sha(repo.full_name, branch)[:12]}",
            "url": f"{base}/git/refs/heads/{branch}",
            "object": {"type": "commit", "sha": sha, "url": f"{base}/git/commits/{sha}"},
        }

    # ---- routes of other mixins that know the objects made here ----------------------------

    def _route_get_compare(self, call: Call, repo: Repo, ref: str) -> tuple[int, Any]:
        """As the plain fake's, with what the objects here tell: the merge base set for the head, the status by
        ancestry (`behind`/`identical`: the base holds the head) and the files that differ, when both sides'
        files are known."""
        status, answer = super()._route_get_compare(call, repo, ref)
        base, _, head = ref.partition("...")
        base_sha = self._branch_sha(repo, base) or base
        head_sha = self._branch_sha(repo, head) or head
        merge_base = self._merge_bases.get((repo.full_name.lower(), head_sha))
        if merge_base is not None:
            answer["merge_base_commit"] = {"sha": merge_base}
        if head_sha == base_sha:
            answer["status"] = "identical"
        elif self._reaches(repo, base_sha, head_sha):
            answer["status"] = "behind"
        before, after = self._files_at(repo, base_sha), self._files_at(repo, head_sha)
        if before is not None and after is not None:
            answer["files"] = [
                {"filename": path, "status": "modified" if path in before and path in after else "changed"}
                for path in sorted(set(before) | set(after))
                if before.get(path) != after.get(path)
            ]
        return status, answer

    def _route_get_git_commit(self, call: Call, repo: Repo, ref: str) -> tuple[int, Any]:
        """A commit made here, with its tree; any other the fake knows as PullsMixin shows it, with a tree."""
        if ref in self._store(repo).commits:
            return 200, self._commit_out(repo, ref)
        try:
            status, answer = super()._route_get_git_commit(call, repo, ref)
        except Reply:
            if not self._is_commit(repo, ref):
                raise
            return 200, self._commit_out(repo, ref)
        tree = self._tree_of_commit(repo, ref)
        answer["tree"] = {"sha": tree, "url": f"{self.base_url}/repos/{repo.full_name}/git/trees/{tree}"}
        return status, answer

    def _route_get_blob(self, call: Call, repo: Repo, ref: str) -> tuple[int, Any]:
        data = self._store(repo).blobs.get(ref)
        if data is None:
            return super()._route_get_blob(call, repo, ref)
        return 200, {"sha": ref, "size": len(data), "encoding": "base64", "content": wrapped_base64(data)}


def _under(entries: dict[str, Entry], folder: str) -> dict[str, Entry]:
    prefix = folder + "/"
    return {path[len(prefix) :]: entry for path, entry in entries.items() if path.startswith(prefix)}


def _looks_like_sha(ref: str) -> bool:
    return len(ref) == 40 and all(c in "0123456789abcdef" for c in ref)
