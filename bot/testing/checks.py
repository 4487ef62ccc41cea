"""Check runs: create, update (with their buttons, `actions`), get, rerequest, and list for a commit."""

from __future__ import annotations

import copy
import json
from typing import Any

from bot.testing.core import GitHubCore, R
from bot.testing.model import CHECK_TEXT_MAX, NOT_FOUND, Call, Reply, Repo, not_supplied, unprocessable, user_json

CHECK_STATUSES = ("queued", "in_progress", "completed")
CHECK_CONCLUSIONS = (
    "action_required",
    "cancelled",
    "failure",
    "neutral",
    "success",
    "skipped",
    "stale",
    "timed_out",
)
CREATE_DOC = "checks/runs#create-a-check-run"
UPDATE_DOC = "checks/runs#update-a-check-run"


class ChecksMixin(GitHubCore):
    ROUTES = [
        ("POST", R + "/check-runs", "post_check_run"),
        ("GET", R + "/check-runs/{id}", "get_check_run"),
        ("PATCH", R + "/check-runs/{id}", "patch_check_run"),
        ("GET", R + "/commits/{ref}/check-runs", "list_check_runs"),
        ("GET", R + "/check-runs/{id}/annotations", "list_annotations"),
        ("POST", R + "/check-runs/{id}/rerequest", "post_rerequest_check_run"),
    ]

    def add_check_run(self, full_name: str, name: str, head_sha: str, conclusion: str) -> dict[str, Any]:
        """A completed check run of the App's own on `head_sha` (what the bot wrote in an earlier delivery)."""
        repo = self._repo(full_name)
        check_id = self._next_id()
        stamp = self._stamp()
        run: dict[str, Any] = {
            "id": check_id,
            "name": name,
            "head_sha": head_sha,
            "external_id": "",
            "details_url": None,
            "url": f"{self.base_url}/repos/{repo.full_name}/check-runs/{check_id}",
            "html_url": f"{repo.json['html_url']}/runs/{check_id}",
            "status": "completed",
            "conclusion": conclusion,
            "started_at": stamp,
            "completed_at": stamp,
            "output": {"title": "", "summary": "", "text": None, "annotations_count": 0},
            "check_suite": {"id": self._next_id()},
            "app": {"id": self.app_id, "slug": self.app_slug, "name": self.app_slug},
            "pull_requests": [],
            "actions": [],
        }
        repo.check_runs[check_id] = run
        return copy.deepcopy(run)

    def rerequest_check_run(self, full_name: str, check_id: int) -> dict[str, Any]:
        """What a person's "Re-run" of a check does to it: queued again, its conclusion cleared (GitHub then sends
        `check_run` `rerequested` to the App that made it; build it with check_run_payload)."""
        repo = self._repo(full_name)
        run = self._check_run(repo, check_id)
        run.update(status="queued", conclusion=None, completed_at=None)
        return copy.deepcopy(run)

    def _route_post_rerequest_check_run(self, call: Call, repo: Repo, id: int) -> tuple[int, Any]:
        self.rerequest_check_run(repo.full_name, id)
        return 201, {}

    def check_run_payload(
        self, full_name: str, check_id: int, action: str, *, sender: str = "maintainer", identifier: str | None = None
    ) -> dict[str, Any]:
        """A `check_run` delivery for a check of the fake: `requested_action` (a button, `identifier`) or
        `rerequested` ("Re-run"). Like GitHub, `pull_requests` lists only same-repository PRs at its head."""
        repo = self._repo(full_name)
        run = copy.deepcopy(self._check_run(repo, check_id))
        if action == "requested_action" and not any(b["identifier"] == identifier for b in run.get("actions", [])):
            raise ValueError(f"check run {check_id} has no button {identifier!r}: GitHub would send no such press")
        run.pop("actions", None)  # GitHub's check run JSON does not show them
        run["pull_requests"] = [
            {
                "id": item["id"],
                "number": item["number"],
                "url": f"{self.base_url}/repos/{repo.full_name}/pulls/{item['number']}",
                "head": {"ref": item["head"]["ref"], "sha": item["head"]["sha"]},
                "base": {"ref": item["base"]["ref"], "sha": item["base"]["sha"]},
            }
            for item in repo.items.values()
            if "head" in item
            and item["state"] == "open"
            and item["head"]["sha"] == run["head_sha"]
            and item["head"]["repo"]["full_name"].lower() == repo.full_name.lower()
        ]
        payload: dict[str, Any] = {
            "action": action,
            "check_run": run,
            "repository": copy.deepcopy(repo.json),
            "sender": user_json(sender),
            "installation": {"id": repo.installation_id},
        }
        if action == "requested_action":
            payload["requested_action"] = {"identifier": identifier}
        return payload

    def check_runs(self, full_name: str, head_sha: str | None = None) -> list[dict[str, Any]]:
        """Every check run (oldest first), or those on one commit."""
        runs = self._repo(full_name).check_runs.values()
        return [copy.deepcopy(r) for r in runs if head_sha in (None, r["head_sha"])]

    def check_annotations(self, full_name: str, check_id: int) -> list[dict[str, Any]]:
        """Every annotation a check run was given, in order."""
        return copy.deepcopy(self._repo(full_name).annotations.get(check_id, []))

    def _keep_annotations(self, repo: Repo, check_id: int, run: dict[str, Any], fields: dict[str, Any]) -> None:
        notes = fields.pop("annotations", [])
        repo.annotations.setdefault(check_id, []).extend(notes)  # GitHub appends, never replaces
        run["output"]["annotations_count"] = len(repo.annotations[check_id])

    def _route_list_annotations(self, call: Call, repo: Repo, id: int) -> tuple[int, Any, dict[str, str]]:
        self._check_run(repo, id)
        return self._paginate(call, copy.deepcopy(repo.annotations.get(id, [])))

    def _route_post_check_run(self, call: Call, repo: Repo) -> tuple[int, Any]:
        body = call.fields
        missing = [f for f in ("name", "head_sha") if not isinstance(body.get(f), str) or not body[f]]
        if missing:
            raise not_supplied(*missing, doc=CREATE_DOC)
        fields = _check_fields(body, CREATE_DOC)
        check_id = self._next_id()
        stamp = self._stamp()
        run: dict[str, Any] = {
            "id": check_id,
            "name": body["name"],
            "head_sha": body["head_sha"],
            "external_id": body.get("external_id") or "",
            "details_url": body.get("details_url"),
            "url": f"{self.base_url}/repos/{repo.full_name}/check-runs/{check_id}",
            "html_url": f"{repo.json['html_url']}/runs/{check_id}",
            "status": "queued",
            "conclusion": None,
            "started_at": stamp,
            "completed_at": None,
            "output": {
                "title": None,
                "summary": None,
                "text": None,
                "annotations_count": 0,
                "annotations_url": f"{self.base_url}/repos/{repo.full_name}/check-runs/{check_id}/annotations",
            },
            "check_suite": {"id": self._next_id()},
            "app": {"id": self.app_id, "slug": self.app_slug, "name": self.app_slug},
            "pull_requests": [],
        }
        self._keep_annotations(repo, check_id, run, fields)
        run["actions"] = fields.pop("actions", [])
        _apply(run, fields, stamp)
        repo.check_runs[check_id] = run
        return 201, copy.deepcopy(run)

    def _route_get_check_run(self, call: Call, repo: Repo, id: int) -> tuple[int, Any]:
        return 200, copy.deepcopy(self._check_run(repo, id))

    def _route_patch_check_run(self, call: Call, repo: Repo, id: int) -> tuple[int, Any]:
        run = self._check_run(repo, id)
        body = call.fields
        if "name" in body and (not isinstance(body["name"], str) or not body["name"]):
            raise not_supplied("name", doc=UPDATE_DOC)
        fields = _check_fields(body, UPDATE_DOC)
        if run["status"] == "completed" and fields.get("status", "completed") != "completed":
            # GitHub moves a check run's status one way only, queued -> in_progress -> completed (only its own
            # "Re-run" queues a completed one again): an App that has more to say makes a new check run
            raise unprocessable(
                f"Invalid request.\n\nCheck run {id} is completed; its status cannot go back to "
                f"{json.dumps(fields['status'])}.",
                doc=UPDATE_DOC,
            )
        if "name" in body:
            run["name"] = body["name"]
        for key in ("external_id", "details_url"):
            if key in body:
                run[key] = body[key]
        self._keep_annotations(repo, id, run, fields)
        if "actions" in fields:  # an update with `actions` replaces the buttons; one without leaves them
            run["actions"] = fields.pop("actions")
        _apply(run, fields, self._stamp())
        return 200, copy.deepcopy(run)

    def _route_list_check_runs(self, call: Call, repo: Repo, ref: str) -> tuple[int, Any, dict[str, str]]:
        sha = self._branch_sha(repo, ref) or ref
        runs = [r for r in repo.check_runs.values() if r["head_sha"] == sha]
        if call.query.get("check_name"):
            runs = [r for r in runs if r["name"] == call.query["check_name"]]
        if call.query.get("status"):
            runs = [r for r in runs if r["status"] == call.query["status"]]
        if call.query.get("filter", "latest") == "latest":
            newest: dict[str, dict[str, Any]] = {}
            for r in runs:
                newest[r["name"]] = r
            runs = list(newest.values())
        runs = sorted(runs, key=lambda r: r["id"], reverse=True)
        return self._paginate_wrapped(call, "check_runs", copy.deepcopy(runs))

    def _check_run(self, repo: Repo, check_id: int) -> dict[str, Any]:
        run = repo.check_runs.get(check_id)
        if run is None:
            raise Reply(404, NOT_FOUND)
        return run


def _check_fields(body: dict[str, Any], doc: str) -> dict[str, Any]:
    """The status, conclusion and output a create or update asks for, refused where GitHub refuses them."""
    out: dict[str, Any] = {}
    status = body.get("status")
    conclusion = body.get("conclusion")
    if status is not None:
        if status not in CHECK_STATUSES:
            raise unprocessable(
                f"Invalid request.\n\nFor 'properties/status', {json.dumps(status)} is not a member "
                f"of {json.dumps(list(CHECK_STATUSES))}.",
                doc=doc,
            )
        out["status"] = status
    if conclusion is not None:
        if conclusion not in CHECK_CONCLUSIONS:
            raise unprocessable(
                f"Invalid request.\n\nFor 'properties/conclusion', {json.dumps(conclusion)} is not a "
                f"member of {json.dumps(list(CHECK_CONCLUSIONS))}.",
                doc=doc,
            )
        out["status"], out["conclusion"] = "completed", conclusion  # a conclusion completes the run
    elif status == "completed":
        raise not_supplied("conclusion", doc=doc)
    if "actions" in body:
        out["actions"] = _buttons(body["actions"], doc)
    output = body.get("output")
    if output is not None:
        if not isinstance(output, dict):
            raise unprocessable(
                f"Invalid request.\n\nFor 'properties/output', {json.dumps(output)} is not an object.", doc=doc
            )
        missing = [f for f in ("title", "summary") if not output.get(f)]
        if missing:
            raise not_supplied(*missing, doc=doc)
        for key in ("summary", "text"):
            value = output.get(key)
            if isinstance(value, str) and len(value) > CHECK_TEXT_MAX:
                raise unprocessable(
                    f"Invalid request.\n\nOnly {CHECK_TEXT_MAX} characters are allowed in "
                    f"output.{key}; {len(value)} were supplied.",
                    doc=doc,
                )
        out["output"] = {k: output.get(k) for k in ("title", "summary", "text")}
        out["annotations"] = _annotations(output.get("annotations"), doc)
    return out


BUTTONS_MAX = 3
BUTTON_LIMITS = {"label": 20, "description": 40, "identifier": 20}


def _buttons(given: Any, doc: str) -> list[dict[str, str]]:
    """A check run's `actions`, refused where GitHub refuses them (over 3, a field missing or too long)."""
    if not isinstance(given, list):
        raise unprocessable(
            f"Invalid request.\n\nFor 'properties/actions', {json.dumps(given)} is not an array.", doc=doc
        )
    if len(given) > BUTTONS_MAX:
        raise unprocessable(f"Invalid request.\n\nOnly {BUTTONS_MAX} actions are allowed per request.", doc=doc)
    out = []
    for button in given:
        if not isinstance(button, dict):
            raise unprocessable("Invalid request.\n\nAn action is not an object.", doc=doc)
        missing = [f for f in BUTTON_LIMITS if not isinstance(button.get(f), str) or not button[f]]
        if missing:
            raise not_supplied(*missing, doc=doc)
        for field, limit in BUTTON_LIMITS.items():
            if len(button[field]) > limit:
                raise unprocessable(
                    f"Invalid request.\n\nOnly {limit} characters are allowed in actions.{field}; "
                    f"{len(button[field])} were supplied.",
                    doc=doc,
                )
        out.append({f: button[f] for f in BUTTON_LIMITS})
    return out


ANNOTATIONS_MAX = 50
ANNOTATION_LEVELS = ("notice", "warning", "failure")


def _annotations(given: Any, doc: str) -> list[dict[str, Any]]:
    """The annotations of one request, refused where GitHub refuses them (over 50, a field missing)."""
    if given is None:
        return []
    if not isinstance(given, list):
        raise unprocessable(
            f"Invalid request.\n\nFor 'properties/annotations', {json.dumps(given)} is not an array.", doc=doc
        )
    if len(given) > ANNOTATIONS_MAX:
        raise unprocessable(f"Invalid request.\n\nOnly {ANNOTATIONS_MAX} annotations are allowed per request.", doc=doc)
    out = []
    for note in given:
        if not isinstance(note, dict):
            raise unprocessable("Invalid request.\n\nAn annotation is not an object.", doc=doc)
        missing = [
            f for f in ("path", "start_line", "end_line", "annotation_level", "message") if note.get(f) in (None, "")
        ]
        if missing:
            raise not_supplied(*missing, doc=doc)
        if note["annotation_level"] not in ANNOTATION_LEVELS:
            raise unprocessable(
                f"Invalid request.\n\n{json.dumps(note['annotation_level'])} is not an annotation level.", doc=doc
            )
        out.append(copy.deepcopy(note))
    return out


def _apply(run: dict[str, Any], fields: dict[str, Any], stamp: str) -> None:
    if "output" in fields:
        run["output"].update(fields["output"])
    if "status" in fields:
        run["status"] = fields["status"]
        if fields["status"] != "completed":
            run["conclusion"], run["completed_at"] = None, None
    if "conclusion" in fields:
        run["conclusion"] = fields["conclusion"]
    if run["status"] == "completed" and run["completed_at"] is None:
        run["completed_at"] = stamp
