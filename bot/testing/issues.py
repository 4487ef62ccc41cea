"""Issues (PRs share their numbers and are issues too) and issue comments."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from bot.testing.core import GitHubCore, R
from bot.testing.model import (
    BODY_MAX,
    NOT_FOUND,
    Call,
    Comment,
    Reply,
    Repo,
    check_body,
    invalid,
    too_long,
)

ISSUE_KEYS = (
    "id",
    "number",
    "title",
    "body",
    "state",
    "locked",
    "user",
    "labels",
    "html_url",
    "created_at",
    "updated_at",
    "closed_at",
    "author_association",
)
ISSUE_DOC = "issues/issues#create-an-issue"
COMMENT_DOC = "issues/comments#create-an-issue-comment"


class IssuesMixin(GitHubCore):
    ROUTES = [
        ("GET", R + "/issues", "list_issues"),
        ("POST", R + "/issues", "post_issue"),
        ("GET", R + "/issues/{number}", "get_issue"),
        ("PATCH", R + "/issues/{number}", "patch_issue"),
        ("GET", R + "/issues/{number}/comments", "list_comments"),
        ("POST", R + "/issues/{number}/comments", "post_comment"),
        ("GET", R + "/issues/comments/{id}", "get_comment"),
        ("PATCH", R + "/issues/comments/{id}", "patch_comment"),
        ("DELETE", R + "/issues/comments/{id}", "delete_comment"),
    ]

    # ---- state setup ----------------------------------------------------------------------

    def add_issue(
        self, full_name: str, *, title: str, body: str = "", user: str = "contributor", labels: Iterable[str] = ()
    ) -> dict[str, Any]:
        if not title:
            raise ValueError("GitHub would refuse an issue without a title")
        check_body(body, "issue body")
        repo = self._repo(full_name)
        item = self._new_item(repo, None, title, body, user)
        for name in labels:
            self._apply_label(repo, item["number"], name, item["user"])
        return item

    def add_comment(
        self,
        full_name: str,
        number: int,
        body: str,
        *,
        user: str = "someone",
        user_type: str = "User",
        created_at: str | None = None,
        author_association: str = "CONTRIBUTOR",
    ) -> dict[str, Any]:
        """A comment written by someone else than the bot (a live object: mutate with care)."""
        if not body:
            raise ValueError("GitHub would refuse an empty comment")
        check_body(body, "comment")
        user_json = self._know(user, user_type)
        return self._new_comment(self._repo(full_name), number, body, user_json, author_association, created_at)

    def edit_comment(self, full_name: str, comment_id: int, body: str) -> dict[str, Any]:
        """Its author edits a comment (GitHub sets `updated_at`); send the `edited` payload with the old body."""
        if not body:
            raise ValueError("GitHub would refuse an empty comment")
        check_body(body, "comment")
        comment = self._comment(self._repo(full_name), comment_id)
        comment.json.update(body=body, updated_at=self._stamp())
        return comment.json

    # ---- inspection -----------------------------------------------------------------------

    def comments(self, full_name: str, number: int) -> list[dict[str, Any]]:
        repo = self._repo(full_name)
        return [c.json for c in self._comments.values() if c.repo is repo and c.number == number]

    def issues(self, full_name: str) -> list[dict[str, Any]]:
        """Every issue and PR, as issue JSON, oldest first."""
        repo = self._repo(full_name)
        return [self._issue_json(repo, item) for item in repo.items.values()]

    # ---- helpers --------------------------------------------------------------------------

    def _comment(self, repo: Repo, comment_id: int) -> Comment:
        comment = self._comments.get(comment_id)
        if comment is None or comment.repo is not repo:
            raise Reply(404, NOT_FOUND)
        return comment

    def _issue_json(self, repo: Repo, item: dict[str, Any]) -> dict[str, Any]:
        issue = {key: item[key] for key in ISSUE_KEYS if key in item}
        issue["repository_url"] = f"{self.base_url}/repos/{repo.full_name}"
        issue["comments"] = sum(1 for c in self._comments.values() if c.repo is repo and c.number == item["number"])
        if "head" in item:
            issue["draft"] = item["draft"]
            issue["pull_request"] = {
                "url": f"{self.base_url}/repos/{repo.full_name}/pulls/{item['number']}",
                "html_url": item["html_url"],
                "merged_at": item["merged_at"],
            }
        return copy.deepcopy(issue)

    def _new_comment(
        self, repo: Repo, number: int, body: str, user: dict[str, Any], association: str, created_at: str | None
    ) -> dict[str, Any]:
        item = self._item(repo, number)
        comment_id = self._next_id()
        stamp = created_at or self._stamp()
        comment = {
            "id": comment_id,
            "body": body,
            "user": user,
            "created_at": stamp,
            "updated_at": stamp,
            "html_url": f"{item['html_url']}#issuecomment-{comment_id}",
            "issue_url": f"{self.base_url}/repos/{repo.full_name}/issues/{number}",
            "url": f"{self.base_url}/repos/{repo.full_name}/issues/comments/{comment_id}",
            "author_association": association,
        }
        self._comments[comment_id] = Comment(repo, number, comment)
        return comment

    def _association(self, repo: Repo, user: dict[str, Any]) -> str:
        if user["type"] == "Bot":
            return "NONE"
        if user["login"].lower() == repo.json["owner"]["login"].lower():
            return "OWNER"
        return "COLLABORATOR" if user["login"].lower() in repo.permissions else "NONE"

    def _new_item(self, repo: Repo, number: int | None, title: str, body: str, user: str) -> dict[str, Any]:
        if number is None:
            number = repo.next_number
        if number in repo.items:
            raise ValueError(f"{repo.full_name}#{number} already exists")
        repo.next_number = max(repo.next_number, number + 1)
        stamp = self._stamp()
        item = {
            "id": self._next_id(),
            "number": number,
            "title": title,
            "body": body,
            "state": "open",
            "locked": False,
            "user": self._know(user),
            "labels": [],
            "html_url": f"{self.web_url}/{repo.full_name}/issues/{number}",
            "created_at": stamp,
            "updated_at": stamp,
            "closed_at": None,
            "author_association": "CONTRIBUTOR",
        }
        repo.items[number] = item
        return item

    # ---- routes: issues -------------------------------------------------------------------

    def _route_list_issues(self, call: Call, repo: Repo) -> tuple[int, Any, dict[str, str]]:
        state = call.query.get("state", "open")
        wanted = {n.strip().casefold() for n in call.query.get("labels", "").split(",") if n.strip()}
        items = [
            item
            for item in repo.items.values()
            if state in ("all", item["state"]) and wanted <= {label["name"].casefold() for label in item["labels"]}
        ]
        if call.query.get("direction", "desc") != "asc":
            items.reverse()  # GitHub's default: newest first
        return self._paginate(call, [self._issue_json(repo, item) for item in items])

    def _route_post_issue(self, call: Call, repo: Repo) -> tuple[int, Any]:
        body = call.fields
        if not body.get("title"):
            raise invalid("Issue", "missing_field", "title", doc=ISSUE_DOC)
        _check_issue_body(body.get("body"), ISSUE_DOC)
        names = self._label_names(body.get("labels") or [], ISSUE_DOC)
        item = self._new_item(repo, None, body["title"], body.get("body") or "", call.user["login"])
        item["user"] = dict(call.user)
        item["author_association"] = self._association(repo, call.user)
        for name in names:
            self._apply_label(repo, item["number"], name, call.user)
        return 201, self._issue_json(repo, item)

    def _route_get_issue(self, call: Call, repo: Repo, number: int) -> tuple[int, Any]:
        return 200, self._issue_json(repo, self._item(repo, number))

    def _route_patch_issue(self, call: Call, repo: Repo, number: int) -> tuple[int, Any]:
        item = self._item(repo, number)
        body = call.fields
        doc = "issues/issues#update-an-issue"
        if "state" in body and body["state"] not in ("open", "closed"):
            raise invalid("Issue", "invalid", "state", doc=doc)
        if "title" in body and not body["title"]:
            raise invalid("Issue", "missing_field", "title", doc=doc)
        _check_issue_body(body.get("body"), doc)
        stamp = self._stamp()
        if body.get("state") and body["state"] != item["state"]:
            item["state"] = body["state"]
            item["closed_at"] = stamp if body["state"] == "closed" else None
        for key in ("title", "body"):
            if key in body:
                item[key] = body[key]
        item["updated_at"] = stamp
        return 200, self._issue_json(repo, item)

    # ---- routes: comments -----------------------------------------------------------------

    def _route_list_comments(self, call: Call, repo: Repo, number: int) -> tuple[int, Any, dict[str, str]]:
        self._item(repo, number)
        return self._paginate(call, copy.deepcopy(self.comments(repo.full_name, number)))

    def _route_post_comment(self, call: Call, repo: Repo, number: int) -> tuple[int, Any]:
        body = _comment_body(call, COMMENT_DOC)
        self._item(repo, number)
        association = self._association(repo, call.user)
        return 201, copy.deepcopy(self._new_comment(repo, number, body, dict(call.user), association, None))

    def _route_get_comment(self, call: Call, repo: Repo, id: int) -> tuple[int, Any]:
        return 200, copy.deepcopy(self._comment(repo, id).json)

    def _route_patch_comment(self, call: Call, repo: Repo, id: int) -> tuple[int, Any]:
        comment = self._comment(repo, id)
        body = _comment_body(call, "issues/comments#update-an-issue-comment")
        comment.json.update(body=body, updated_at=self._stamp())
        return 200, copy.deepcopy(comment.json)

    def _route_delete_comment(self, call: Call, repo: Repo, id: int) -> tuple[int, Any]:
        self._comment(repo, id)
        del self._comments[id]
        return 204, None


def _check_issue_body(body: Any, doc: str) -> None:
    if isinstance(body, str) and len(body) > BODY_MAX:
        raise too_long("Issue", "body", BODY_MAX, doc=doc)


def _comment_body(call: Call, doc: str) -> str:
    body = call.fields.get("body")
    if not body:
        raise invalid("IssueComment", "missing_field", "body", doc=doc)
    if isinstance(body, str) and len(body) > BODY_MAX:
        # What GitHub answers today (older answers said code "custom", field "body").
        raise invalid(
            "IssueComment",
            "unprocessable",
            "data",
            doc=doc,
            message=f"Body is too long (maximum is {BODY_MAX} characters)",
        )
    return body
