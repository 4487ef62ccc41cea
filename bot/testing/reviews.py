"""Organisation teams (their membership API) and PR reviews and review comments (seeded, sent as webhooks)."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from typing import Any

from bot.testing.core import GitHubCore, R
from bot.testing.model import BODY_MAX, NOT_FOUND, Call, Reply, Repo, check_body, fake_sha, unprocessable

REVIEW_STATES = ("APPROVED", "COMMENTED", "CHANGES_REQUESTED")
REVIEW_EVENTS = {"APPROVE": "approved", "COMMENT": "commented", "REQUEST_CHANGES": "changes_requested"}
REVIEW_DOC = "pulls/reviews#create-a-review-for-a-pull-request"
SUGGESTION = re.compile(r"^```suggestion\n(.*?)^```", re.MULTILINE | re.DOTALL)


class ReviewsMixin(GitHubCore):
    ROUTES = [
        ("GET", "/orgs/{org}/teams/{team}/memberships/{user}", "get_team_membership"),
        ("GET", R + "/pulls/{number}/reviews/{id}", "get_review"),
        ("GET", R + "/pulls/comments/{id}", "get_review_comment"),
        ("DELETE", R + "/pulls/comments/{id}", "delete_review_comment"),
        ("GET", R + "/pulls/{number}/reviews", "list_reviews"),
        ("POST", R + "/pulls/{number}/reviews", "post_review"),
        ("PUT", R + "/pulls/{number}/reviews/{id}", "put_review"),
        ("GET", R + "/pulls/{number}/reviews/{id}/comments", "list_review_comments"),
    ]

    # ---- state setup ----------------------------------------------------------------------

    def add_team(self, org: str, slug: str, members: Iterable[str] = (), *, pending: Iterable[str] = ()) -> None:
        """Team `org/slug`; `pending` members were invited and have not accepted (GitHub says state "pending")."""
        self._teams[(org.lower(), slug.lower())] = {
            **{m.lower(): "active" for m in members},
            **{m.lower(): "pending" for m in pending},
        }

    def add_review(
        self,
        full_name: str,
        number: int,
        body: str,
        *,
        user: str = "reviewer",
        state: str = "APPROVED",
        commit_id: str | None = None,
    ) -> dict[str, Any]:
        """A review submitted on PR `number` (a live object: edit `body`, then send an `edited` payload)."""
        if state not in REVIEW_STATES:
            raise ValueError(f"review state {state!r} is not one of {REVIEW_STATES}")
        check_body(body, "review body")
        repo = self._repo(full_name)
        pull = self._item(repo, number, pull=True)
        review_id = self._next_id()
        review = {
            "id": review_id,
            "user": self._know(user),
            "body": body,
            "state": state.lower(),
            "commit_id": commit_id or pull["head"]["sha"],
            "submitted_at": self._stamp(),
            "html_url": f"{pull['html_url']}#pullrequestreview-{review_id}",
            "author_association": "CONTRIBUTOR",
        }
        repo.reviews[review_id] = (number, review)  # the live object: GET answers with what it holds now
        return review

    def add_review_comment(
        self,
        full_name: str,
        number: int,
        body: str,
        *,
        user: str = "reviewer",
        path: str = "README.md",
        line: int = 1,
        commit_id: str | None = None,
    ) -> dict[str, Any]:
        """A comment on a line of PR `number`'s diff, written on `commit_id` (the head by default)."""
        check_body(body, "review comment")
        repo = self._repo(full_name)
        pull = self._item(repo, number, pull=True)
        comment_id = self._next_id()
        stamp = self._stamp()
        commit_id = commit_id or pull["head"]["sha"]
        comment = {
            "id": comment_id,
            "user": self._know(user),
            "body": body,
            "path": path,
            "line": line,
            "commit_id": commit_id,
            "original_commit_id": commit_id,
            "created_at": stamp,
            "updated_at": stamp,
            "pull_request_url": f"{self.base_url}/repos/{repo.full_name}/pulls/{number}",
            "html_url": f"{pull['html_url']}#discussion_r{comment_id}",
            "author_association": "CONTRIBUTOR",
        }
        repo.review_comments[comment_id] = comment
        return comment

    def reviews(self, full_name: str, number: int) -> list[dict[str, Any]]:
        """The reviews of PR `number`, oldest first."""
        return [copy.deepcopy(review) for pr, review in self._repo(full_name).reviews.values() if pr == number]

    def review_comments(self, full_name: str, review_id: int) -> list[dict[str, Any]]:
        """The line comments of one review that still exist, in order."""
        return [
            copy.deepcopy(c)
            for c in self._repo(full_name).review_comments.values()
            if c.get("pull_request_review_id") == review_id
        ]

    def apply_suggestions(self, full_name: str, number: int, review_id: int) -> str:
        """The PR's author clicks "Commit suggestions" on every suggestion of a review (a batch): each comment's
        ```suggestion block replaces its lines (`start_line`..`line`) of the head file, every written line ended
        by a newline; the result is one new commit on the head (the other files carried over). Returns its sha."""
        repo = self._repo(full_name)
        pull = self._item(repo, number, pull=True)
        found = repo.reviews.get(review_id)
        if found is None or found[0] != number:
            raise ValueError(f"PR #{number} has no review {review_id}")
        head = pull["head"]["sha"]
        files = {path: bytearray(data) for path, data in repo.files.get(head, {}).items()}
        edits: dict[str, list[tuple[int, int, list[str]]]] = {}
        for comment in self.review_comments(full_name, review_id):
            match = SUGGESTION.search(comment["body"])
            if match is None:
                continue
            start = comment.get("start_line") or comment["line"]
            edits.setdefault(comment["path"], []).append((start, comment["line"], match.group(1).splitlines()))
        if not edits:
            raise ValueError(f"review {review_id} holds no suggestion")
        for path, changes in edits.items():
            if path not in files:
                raise ValueError(f"{path} is not in the head commit {head}")
            lines = files[path].decode("utf-8").split("\n")
            if lines[-1] == "":
                lines.pop()
            for start, end, new in sorted(changes, reverse=True):
                lines[start - 1 : end] = new
            files[path] = bytearray(("\n".join(lines) + "\n" if lines else "").encode("utf-8"))
        sha = fake_sha(full_name, number, "suggestions", review_id)
        self.push_commit(full_name, number, sha=sha, message="Apply suggestions from code review")
        repo.files[sha] = {path: bytes(data) for path, data in files.items()}
        return sha

    # ---- payloads -------------------------------------------------------------------------

    def pull_request_review_payload(
        self,
        full_name: str,
        number: int,
        review: dict[str, Any],
        action: str = "submitted",
        *,
        changes: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        return self._review_payload(full_name, number, "review", review, action, changes)

    def review_comment_payload(
        self,
        full_name: str,
        number: int,
        comment: dict[str, Any],
        action: str = "created",
        *,
        changes: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        return self._review_payload(full_name, number, "comment", comment, action, changes)

    def _review_payload(
        self, full_name: str, number: int, key: str, item: dict[str, Any], action: str, changes: dict[str, Any] | None
    ) -> dict[str, Any]:
        repo = self._repo(full_name)
        payload = {
            "action": action,
            key: copy.deepcopy(item),
            "pull_request": copy.deepcopy(self._item(repo, number, pull=True)),
        }
        payload.update(self._envelope(repo, item["user"]))
        if changes is not None:
            payload["changes"] = copy.deepcopy(changes)
        return payload

    # ---- routes ---------------------------------------------------------------------------

    def _route_get_team_membership(self, call: Call, org: str, team: str, user: str) -> tuple[int, Any]:
        members = self._teams.get((org.lower(), team.lower()))
        if members is None or user.lower() not in members:
            raise Reply(404, NOT_FOUND)
        return 200, {
            "url": f"{self.base_url}/orgs/{org}/teams/{team}/memberships/{user}",
            "role": "member",
            "state": members[user.lower()],
        }

    def _route_get_review(self, call: Call, repo: Repo, number: int, id: int) -> tuple[int, Any]:
        found = repo.reviews.get(id)
        if found is None or found[0] != number:
            raise Reply(404, NOT_FOUND)
        return 200, copy.deepcopy(found[1])

    def _route_get_review_comment(self, call: Call, repo: Repo, id: int) -> tuple[int, Any]:
        if id not in repo.review_comments:
            raise Reply(404, NOT_FOUND)
        return 200, copy.deepcopy(repo.review_comments[id])

    def _route_delete_review_comment(self, call: Call, repo: Repo, id: int) -> tuple[int, Any]:
        if repo.review_comments.pop(id, None) is None:
            raise Reply(404, NOT_FOUND)
        return 204, None

    def _route_list_reviews(self, call: Call, repo: Repo, number: int) -> tuple[int, Any, dict[str, str]]:
        self._item(repo, number, pull=True)
        return self._paginate(call, [copy.deepcopy(r) for pr, r in repo.reviews.values() if pr == number])

    def _route_list_review_comments(
        self, call: Call, repo: Repo, number: int, id: int
    ) -> tuple[int, Any, dict[str, str]]:
        found = repo.reviews.get(id)
        if found is None or found[0] != number:
            raise Reply(404, NOT_FOUND)
        return self._paginate(
            call, [copy.deepcopy(c) for c in repo.review_comments.values() if c.get("pull_request_review_id") == id]
        )

    def _route_put_review(self, call: Call, repo: Repo, number: int, id: int) -> tuple[int, Any]:
        found = repo.reviews.get(id)
        if found is None or found[0] != number:
            raise Reply(404, NOT_FOUND)
        body = call.fields.get("body")
        if not isinstance(body, str) or len(body) > BODY_MAX:
            raise unprocessable('Invalid request.\n\n"body" wasn\'t supplied.', doc=REVIEW_DOC)
        found[1]["body"] = body
        return 200, copy.deepcopy(found[1])

    def _route_post_review(self, call: Call, repo: Repo, number: int) -> tuple[int, Any]:
        """A review submitted at once (an `event` given), with line comments on the head's file."""
        pull = self._item(repo, number, pull=True)
        fields = call.fields
        event, body = fields.get("event"), fields.get("body") or ""
        if event not in REVIEW_EVENTS:
            raise unprocessable(
                "Invalid request.\n\nevent must be one of APPROVE, COMMENT, REQUEST_CHANGES.", doc=REVIEW_DOC
            )
        if (
            not isinstance(body, str)
            or len(body) > BODY_MAX
            or (event != "APPROVE" and not body and not fields.get("comments"))
        ):
            raise unprocessable("Invalid request.\n\nbody is needed for this event.", doc=REVIEW_DOC)
        commit_id = fields.get("commit_id") or pull["head"]["sha"]
        comments = fields.get("comments") or []
        if not isinstance(comments, list):
            raise unprocessable("Invalid request.\n\ncomments must be a list.", doc=REVIEW_DOC)
        for comment in comments:
            self._check_review_comment(repo, commit_id, comment)
        review_id = self._next_id()
        stamp = self._stamp()
        review = {
            "id": review_id,
            "user": call.actor,
            "body": body,
            "state": REVIEW_EVENTS[event],
            "commit_id": commit_id,
            "submitted_at": stamp,
            "html_url": f"{pull['html_url']}#pullrequestreview-{review_id}",
            "author_association": "NONE",
        }
        repo.reviews[review_id] = (number, review)
        for comment in comments:
            comment_id = self._next_id()
            repo.review_comments[comment_id] = {
                "id": comment_id,
                "pull_request_review_id": review_id,
                "user": call.actor,
                "body": comment["body"],
                "path": comment["path"],
                "line": comment["line"],
                "start_line": comment.get("start_line"),
                "side": comment.get("side", "RIGHT"),
                "start_side": comment.get("start_side"),
                "commit_id": commit_id,
                "original_commit_id": commit_id,
                "created_at": stamp,
                "updated_at": stamp,
                "pull_request_url": f"{self.base_url}/repos/{repo.full_name}/pulls/{number}",
                "html_url": f"{pull['html_url']}#discussion_r{comment_id}",
                "author_association": "NONE",
            }
        return 200, copy.deepcopy(review)

    @staticmethod
    def _check_review_comment(repo: Repo, commit_id: str, comment: Any) -> None:
        """GitHub's 422 for a line comment it cannot place: no path or line, a range that runs backwards, a line
        the file at that commit does not have (when the fake holds the file)."""
        if (
            not isinstance(comment, dict)
            or not isinstance(comment.get("path"), str)
            or not isinstance(comment.get("body"), str)
            or not isinstance(comment.get("line"), int)
            or comment["line"] < 1
        ):
            raise unprocessable("Invalid request.\n\nA review comment needs a path, a line and a body.", doc=REVIEW_DOC)
        if comment.get("side", "RIGHT") not in ("LEFT", "RIGHT"):
            raise unprocessable("Invalid request.\n\nside must be LEFT or RIGHT.", doc=REVIEW_DOC)
        start = comment.get("start_line")
        if start is not None and (not isinstance(start, int) or not 1 <= start < comment["line"]):
            raise unprocessable("Invalid request.\n\nstart_line must be before line.", doc=REVIEW_DOC)
        data = repo.files.get(commit_id, {}).get(comment["path"])
        if data is not None and comment["line"] > len(data.decode("utf-8", "replace").splitlines()):
            raise unprocessable("Unprocessable Entity: Line could not be resolved", doc=REVIEW_DOC)
