"""Repository labels, the labels on an issue or PR, and the issue events that record who applied them."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from bot.testing.core import GitHubCore, R
from bot.testing.model import (
    LABEL_NAME_MAX,
    NOT_FOUND,
    Call,
    Reply,
    Repo,
    check_label,
    invalid,
    label_problem,
)

CREATE_DOC = "issues/labels#create-a-label"
ADD_DOC = "issues/labels#add-labels-to-an-issue"


class LabelsMixin(GitHubCore):
    ROUTES = [
        ("GET", R + "/issues/{number}/labels", "list_issue_labels"),
        ("POST", R + "/issues/{number}/labels", "post_issue_labels"),
        ("DELETE", R + "/issues/{number}/labels/{name}", "delete_issue_label"),
        ("GET", R + "/issues/{number}/events", "list_events"),
        ("GET", R + "/labels/{name}", "get_label"),
        ("POST", R + "/labels", "post_label"),
    ]

    # ---- state setup ----------------------------------------------------------------------

    def add_label(self, full_name: str, name: str, *, color: str = "ededed", description: str = "") -> dict[str, Any]:
        check_label(name, color, description)
        repo = self._repo(full_name)
        label = self._find_label(repo, name)
        if label is None:
            return self._new_label(repo, name, color, description)
        label.update(color=color, description=description)
        return label

    def label_issue(self, full_name: str, number: int, name: str, *, actor: str = "maintainer") -> None:
        """A human applies a label (no-op if already present, like GitHub)."""
        self._apply_label(self._repo(full_name), number, name, self._know(actor))

    def unlabel_issue(self, full_name: str, number: int, name: str, *, actor: str = "maintainer") -> None:
        """A human removes a label (no-op if absent)."""
        self._remove_label(self._repo(full_name), number, name, self._know(actor))

    # ---- inspection -----------------------------------------------------------------------

    def issue_labels(self, full_name: str, number: int) -> list[str]:
        return [label["name"] for label in self._item(self._repo(full_name), number)["labels"]]

    def repo_labels(self, full_name: str) -> dict[str, dict[str, Any]]:
        return {label["name"]: label for label in self._repo(full_name).labels.values()}

    def events(self, full_name: str, number: int) -> list[dict[str, Any]]:
        return list(self._repo(full_name).events.get(number, []))

    # ---- helpers --------------------------------------------------------------------------

    def _find_label(self, repo: Repo, name: str) -> dict[str, Any] | None:
        return repo.labels.get(name.casefold())

    def _ensure_label(self, repo: Repo, name: str) -> dict[str, Any]:
        label = self._find_label(repo, name)
        if label is None:
            check_label(name)
            label = self._new_label(repo, name, "ededed", "")
        return label

    def _new_label(self, repo: Repo, name: str, color: str, description: str) -> dict[str, Any]:
        label = {"id": self._next_id(), "name": name, "color": color, "description": description, "default": False}
        repo.labels[name.casefold()] = label
        return label

    def _event(self, repo: Repo, number: int, kind: str, label: dict[str, Any], actor: dict[str, Any]) -> None:
        stamp = self._stamp()
        repo.events.setdefault(number, []).append(
            {
                "id": self._next_id(),
                "event": kind,
                "actor": dict(actor),
                "label": {"name": label["name"], "color": label["color"]},
                "commit_id": None,
                "created_at": stamp,
            }
        )
        self._item(repo, number)["updated_at"] = stamp  # GitHub bumps the issue's updated_at on a label change

    def _apply_label(self, repo: Repo, number: int, name: str, actor: dict[str, Any]) -> None:
        item = self._item(repo, number)
        label = self._ensure_label(repo, name)
        if all(existing is not label for existing in item["labels"]):
            item["labels"].append(label)
            self._event(repo, number, "labeled", label, actor)

    def _remove_label(self, repo: Repo, number: int, name: str, actor: dict[str, Any]) -> bool:
        item = self._item(repo, number)
        for existing in item["labels"]:
            if existing["name"].casefold() == name.casefold():
                item["labels"].remove(existing)
                self._event(repo, number, "unlabeled", existing, actor)
                return True
        return False

    def _label_names(self, names: Iterable[Any], doc: str) -> list[str]:
        """The names of labels to apply (strings or {"name": ...}); 422 for one GitHub could not create."""
        out = []
        for entry in names:
            name = entry.get("name") if isinstance(entry, dict) else entry
            if not isinstance(name, str) or not name.strip() or len(name) > LABEL_NAME_MAX:
                raise invalid("Label", "invalid", "name", doc=doc, value=name)
            out.append(name)
        return out

    # ---- routes ---------------------------------------------------------------------------

    def _route_list_issue_labels(self, call: Call, repo: Repo, number: int) -> tuple[int, Any, dict[str, str]]:
        return self._paginate(call, copy.deepcopy(self._item(repo, number)["labels"]))

    def _route_post_issue_labels(self, call: Call, repo: Repo, number: int) -> tuple[int, Any]:
        item = self._item(repo, number)
        names = call.body.get("labels") if isinstance(call.body, dict) else call.body
        if not isinstance(names, list):
            raise invalid("Label", "missing_field", "labels", doc=ADD_DOC)
        for name in self._label_names(names, ADD_DOC):
            self._apply_label(repo, number, name, call.user)
        return 200, copy.deepcopy(item["labels"])

    def _route_delete_issue_label(self, call: Call, repo: Repo, number: int, name: str) -> tuple[int, Any]:
        if not self._remove_label(repo, number, name, call.user):
            raise Reply(404, {"message": "Label does not exist"})
        return 200, copy.deepcopy(self._item(repo, number)["labels"])

    def _route_list_events(self, call: Call, repo: Repo, number: int) -> tuple[int, Any, dict[str, str]]:
        self._item(repo, number)
        return self._paginate(call, copy.deepcopy(repo.events.get(number, [])))

    def _route_get_label(self, call: Call, repo: Repo, name: str) -> tuple[int, Any]:
        label = self._find_label(repo, name)
        if label is None:
            raise Reply(404, NOT_FOUND)
        return 200, copy.deepcopy(label)

    def _route_post_label(self, call: Call, repo: Repo) -> tuple[int, Any]:
        body = call.fields
        problem = label_problem(body.get("name"), body.get("color"), body.get("description"))
        if problem is not None:
            code, field, message = problem
            raise invalid("Label", code, field, doc=CREATE_DOC, message=message)
        if self._find_label(repo, body["name"]) is not None:
            raise invalid("Label", "already_exists", "name", doc=CREATE_DOC)
        label = self._new_label(repo, body["name"], body.get("color") or "ededed", body.get("description") or "")
        return 201, copy.deepcopy(label)
