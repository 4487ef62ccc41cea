"""Organisation teams (their membership API) and PR reviews and review comments (seeded, sent as webhooks)."""

from __future__ import annotations

import copy
from typing import Any

from bot.testing.core import R, GitHubCore
from bot.testing.model import NOT_FOUND, Call, Repo, Reply, check_body

REVIEW_STATES = ("APPROVED", "COMMENTED", "CHANGES_REQUESTED")


class ReviewsMixin(GitHubCore):
    ROUTES = [
        ("GET", "/orgs/{org}/teams/{team}/memberships/{user}", "get_team_membership"),
        ("GET", R + "/pulls/{number}/reviews/{id}", "get_review"),
        ("GET", R + "/pulls/comments/{id}", "get_review_comment"),
    ]

    # ---- state setup ----------------------------------------------------------------------

    def add_team(self, org: str, slug: str, members: list[str] = (), *, pending: list[str] = ()) -> None:
        """Team `org/slug`; `pending` members were invited and have not accepted (GitHub says state "pending")."""
        self._teams[(org.lower(), slug.lower())] = {**{m.lower(): "active" for m in members},
                                              **{m.lower(): "pending" for m in pending}}

    def add_review(self, full_name: str, number: int, body: str, *, user: str = "reviewer",
                   state: str = "APPROVED", commit_id: str | None = None) -> dict[str, Any]:
        """A review submitted on PR `number` (a live object: edit `body`, then send an `edited` payload)."""
        if state not in REVIEW_STATES:
            raise ValueError(f"review state {state!r} is not one of {REVIEW_STATES}")
        check_body(body, "review body")
        repo = self._repo(full_name)
        pull = self._item(repo, number, pull=True)
        review_id = self._next_id()
        review = {"id": review_id, "user": self._know(user), "body": body, "state": state.lower(),
                  "commit_id": commit_id or pull["head"]["sha"], "submitted_at": self._stamp(),
                  "html_url": f"{pull['html_url']}#pullrequestreview-{review_id}", "author_association": "CONTRIBUTOR"}
        repo.reviews[review_id] = (number, review)  # the live object: GET answers with what it holds now
        return review

    def add_review_comment(self, full_name: str, number: int, body: str, *, user: str = "reviewer",
                           path: str = "README.md", line: int = 1) -> dict[str, Any]:
        """A comment on a line of PR `number`'s diff."""
        check_body(body, "review comment")
        repo = self._repo(full_name)
        pull = self._item(repo, number, pull=True)
        comment_id = self._next_id()
        stamp = self._stamp()
        comment = {"id": comment_id, "user": self._know(user), "body": body, "path": path, "line": line,
                   "commit_id": pull["head"]["sha"], "created_at": stamp, "updated_at": stamp,
                   "pull_request_url": f"{self.base_url}/repos/{repo.full_name}/pulls/{number}",
                   "html_url": f"{pull['html_url']}#discussion_r{comment_id}", "author_association": "CONTRIBUTOR"}
        repo.review_comments[comment_id] = comment
        return comment

    # ---- payloads -------------------------------------------------------------------------

    def pull_request_review_payload(self, full_name: str, number: int, review: dict[str, Any],
                                    action: str = "submitted", *, changes: dict[str, Any] | None = None
                                    ) -> dict[str, Any]:
        return self._review_payload(full_name, number, "review", review, action, changes)

    def review_comment_payload(self, full_name: str, number: int, comment: dict[str, Any],
                               action: str = "created", *, changes: dict[str, Any] | None = None) -> dict[str, Any]:
        return self._review_payload(full_name, number, "comment", comment, action, changes)

    def _review_payload(self, full_name: str, number: int, key: str, item: dict[str, Any], action: str,
                        changes: dict[str, Any] | None) -> dict[str, Any]:
        repo = self._repo(full_name)
        payload = {"action": action, key: copy.deepcopy(item),
                   "pull_request": copy.deepcopy(self._item(repo, number, pull=True))}
        payload.update(self._envelope(repo, item["user"]))
        if changes is not None:
            payload["changes"] = copy.deepcopy(changes)
        return payload

    # ---- routes ---------------------------------------------------------------------------

    def _route_get_team_membership(self, call: Call, org: str, team: str, user: str) -> tuple[int, Any]:
        members = self._teams.get((org.lower(), team.lower()))
        if members is None or user.lower() not in members:
            raise Reply(404, NOT_FOUND)
        return 200, {"url": f"{self.base_url}/orgs/{org}/teams/{team}/memberships/{user}", "role": "member",
                     "state": members[user.lower()]}

    def _route_get_review(self, call: Call, repo: Repo, number: int, id: int) -> tuple[int, Any]:
        found = repo.reviews.get(id)
        if found is None or found[0] != number:
            raise Reply(404, NOT_FOUND)
        return 200, copy.deepcopy(found[1])

    def _route_get_review_comment(self, call: Call, repo: Repo, id: int) -> tuple[int, Any]:
        if id not in repo.review_comments:
            raise Reply(404, NOT_FOUND)
        return 200, copy.deepcopy(repo.review_comments[id])
