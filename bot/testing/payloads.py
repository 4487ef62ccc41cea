"""Webhook payloads built from the fake's state, so a test delivers what GitHub would send."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from bot.testing.core import GitHubCore
from bot.testing.model import Repo, fake_sha, user_json


class PayloadsMixin(GitHubCore):
    def _envelope(self, repo: Repo, sender: dict[str, Any]) -> dict[str, Any]:
        return {
            "repository": copy.deepcopy(repo.json),
            "sender": dict(sender),
            "installation": {"id": repo.installation_id},
        }

    def pull_request_payload(
        self, full_name: str, number: int, action: str, *, sender: str = "contributor", **extra: Any
    ) -> dict[str, Any]:
        repo = self._repo(full_name)
        pull = copy.deepcopy(self._item(repo, number, pull=True))
        if isinstance(extra.get("label"), str):
            name = extra["label"]
            label = self._find_label(repo, name) or {"name": name, "color": "ededed", "description": ""}
            extra["label"] = copy.deepcopy(label)
        payload = {"action": action, "number": number, "pull_request": pull}
        if action == "synchronize":  # the push: the head before it and after it
            shas = [c["sha"] for c in self._pull_commits(repo, number)]
            at = shas.index(pull["head"]["sha"])
            # a force-pushed head has no parent in the PR: the head before it was pushed
            before = shas[at - 1] if at else repo.head_before.get(number, pull["base"]["sha"])
            payload.update(before=before, after=pull["head"]["sha"])
        payload.update(self._envelope(repo, user_json(sender)))
        payload.update(extra)
        return payload

    def issue_comment_payload(
        self,
        full_name: str,
        number: int,
        comment: dict[str, Any],
        action: str = "created",
        *,
        changes: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        repo = self._repo(full_name)
        payload = {
            "action": action,
            "issue": self._issue_json(repo, self._item(repo, number)),
            "comment": copy.deepcopy(comment),
        }
        payload.update(self._envelope(repo, comment["user"]))
        if changes is not None:
            payload["changes"] = copy.deepcopy(changes)
        return payload

    def repository_dispatch_payload(
        self,
        full_name: str,
        event_type: str,
        client_payload: Any,
        *,
        sender: str = "results-bot",
        branch: str | None = None,
    ) -> dict[str, Any]:
        """A `repository_dispatch` delivery: `action` is the event type the sender chose."""
        repo = self._repo(full_name)
        payload = {
            "action": event_type,
            "branch": branch or repo.json["default_branch"],
            "client_payload": copy.deepcopy(client_payload),
        }
        payload.update(self._envelope(repo, user_json(sender, "Bot")))
        return payload

    def push_payload(
        self,
        full_name: str,
        *,
        ref: str,
        after: str,
        commits: Iterable[dict[str, Any]] = (),
        sender: str = "contributor",
        before: str | None = None,
    ) -> dict[str, Any]:
        repo = self._repo(full_name)
        full_commits = [
            {
                "id": c.get("id") or fake_sha(full_name, ref, after, i),
                "message": c.get("message", ""),
                "timestamp": c.get("timestamp") or self._stamp(),
                "author": {"name": sender, "username": sender},
                "added": list(c.get("added", ())),
                "modified": list(c.get("modified", ())),
                "removed": list(c.get("removed", ())),
            }
            for i, c in enumerate(commits)
        ]
        payload = {
            "ref": ref,
            "before": before or fake_sha(full_name, ref, after, "before"),
            "after": after,
            "commits": full_commits,
            "head_commit": copy.deepcopy(full_commits[-1]) if full_commits else None,
            "pusher": {"name": sender},
        }
        payload.update(self._envelope(repo, user_json(sender)))
        return payload

    def workflow_run_payload(
        self,
        full_name: str,
        run_id: int,
        action: str = "completed",
        *,
        conclusion: str | None = None,
        sender: str | None = None,
    ) -> dict[str, Any]:
        """A `workflow_run` delivery for a run of the fake. With `conclusion` the run is completed first;
        a `completed` payload for a run that has not completed is refused (GitHub never sends one)."""
        repo = self._repo(full_name)
        if conclusion is not None:
            self.complete_run(full_name, run_id, conclusion)
        run = self._run_json(repo, self._run(repo, run_id))
        if action == "completed" and run["status"] != "completed":
            raise ValueError(f"run {run_id} is {run['status']}: complete_run first (or pass conclusion=)")
        workflow = next(wf for wf in repo.workflows.values() if wf.id == run["workflow_id"])
        payload = {"action": action, "workflow_run": run, "workflow": self._workflow_json(repo, workflow)}
        payload.update(self._envelope(repo, user_json(sender) if sender else run["triggering_actor"]))
        return payload
