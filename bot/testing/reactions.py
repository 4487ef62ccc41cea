"""Reactions on issue comments."""

from __future__ import annotations

import copy
from typing import Any

from bot.testing.core import GitHubCore, R
from bot.testing.model import NOT_FOUND, Call, Reply, Repo, invalid

REACTIONS = frozenset({"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"})
DOC = "reactions/reactions#create-reaction-for-an-issue-comment"


class ReactionsMixin(GitHubCore):
    ROUTES = [
        ("GET", R + "/issues/comments/{id}/reactions", "list_reactions"),
        ("POST", R + "/issues/comments/{id}/reactions", "post_reaction"),
        ("DELETE", R + "/issues/comments/{id}/reactions/{rid}", "delete_reaction"),
    ]

    def reactions(self, comment_id: int) -> list[str]:
        comment = self._comments.get(comment_id)
        return [r["content"] for r in comment.reactions] if comment else []

    def _route_list_reactions(self, call: Call, repo: Repo, id: int) -> tuple[int, Any, dict[str, str]]:
        reactions = self._comment(repo, id).reactions
        wanted = call.query.get("content")
        return self._paginate(call, copy.deepcopy([r for r in reactions if wanted in (None, r["content"])]))

    def _route_post_reaction(self, call: Call, repo: Repo, id: int) -> tuple[int, Any]:
        comment = self._comment(repo, id)
        content = call.fields.get("content")
        if content is None:
            raise invalid("Reaction", "missing_field", "content", doc=DOC)
        if content not in REACTIONS:
            raise invalid("Reaction", "invalid", "content", doc=DOC)
        for reaction in comment.reactions:
            if reaction["content"] == content and reaction["user"]["login"] == call.user["login"]:
                return 200, copy.deepcopy(reaction)
        reaction = {"id": self._next_id(), "user": dict(call.user), "content": content, "created_at": self._stamp()}
        comment.reactions.append(reaction)
        return 201, copy.deepcopy(reaction)

    def _route_delete_reaction(self, call: Call, repo: Repo, id: int, rid: int) -> tuple[int, Any]:
        comment = self._comment(repo, id)
        for reaction in comment.reactions:
            if reaction["id"] == rid:
                comment.reactions.remove(reaction)
                return 204, None
        raise Reply(404, NOT_FOUND)
