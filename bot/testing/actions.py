"""GitHub Actions: workflows, workflow_dispatch, runs (list, get, cancel, re-run failed jobs), their jobs and
their artifacts."""

from __future__ import annotations

import copy
import datetime as dt
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from bot.testing.core import GitHubCore, R
from bot.testing.model import (
    NOT_FOUND,
    Call,
    Reply,
    Repo,
    Workflow,
    not_supplied,
    unprocessable,
)

DISPATCH_DOC = "actions/workflows#create-a-workflow-dispatch-event"
CANCEL_DOC = "actions/workflow-runs#cancel-a-workflow-run"
RERUN_FAILED_DOC = "actions/workflow-runs#re-run-failed-jobs-from-a-workflow-run"
JOBS_DOC = "actions/workflow-jobs#list-jobs-for-a-workflow-run"
# Job conclusions that "Re-run failed jobs" runs again (with the jobs that depend on them, which the fake omits).
RERUN_CONCLUSIONS = frozenset({"failure", "cancelled", "timed_out", "startup_failure"})
MAX_INPUTS = 25
STATUSES = frozenset({"queued", "in_progress", "completed", "requested", "waiting", "pending"})
CONCLUSIONS = frozenset(
    {
        "success",
        "failure",
        "cancelled",
        "skipped",
        "timed_out",
        "action_required",
        "neutral",
        "stale",
        "startup_failure",
    }
)
ARTIFACT_DAYS = 90
_EXPRESSION = re.compile(r"\$\{\{\s*inputs\.([A-Za-z0-9_-]+)\s*\}\}")


class ActionsMixin(GitHubCore):
    ROUTES = [
        ("POST", R + "/actions/workflows/{workflow}/dispatches", "post_workflow_dispatch"),
        ("GET", R + "/actions/workflows/{workflow}/runs", "list_workflow_runs"),
        ("GET", R + "/actions/runs", "list_runs"),
        ("GET", R + "/actions/runs/{id}", "get_run"),
        ("POST", R + "/actions/runs/{id}/cancel", "post_cancel_run"),
        ("GET", R + "/actions/runs/{id}/artifacts", "list_run_artifacts"),
        ("GET", R + "/actions/runs/{id}/jobs", "list_run_jobs"),
        ("POST", R + "/actions/runs/{id}/rerun-failed-jobs", "post_rerun_failed_jobs"),
    ]

    # ---- state setup ----------------------------------------------------------------------

    def add_workflow(
        self,
        full_name: str,
        file: str,
        *,
        inputs: Iterable[str] | Mapping[str, Mapping[str, Any]] = (),
        name: str | None = None,
        run_name: str | None = None,
    ) -> dict[str, Any]:
        """Register `.github/workflows/<file>` with `on: workflow_dispatch` and these inputs.

        `inputs` is a list of names (optional inputs) or a mapping name -> {"required": bool, "default": ...}.
        `run_name` is the workflow's `run-name:`; `${{ inputs.NAME }}` in it is replaced by the input. Without
        it a run is named after the workflow, followed by the `dispatch-id` input when one is given.
        """
        repo = self._repo(full_name)
        if file in repo.workflows:
            raise ValueError(f"workflow {file} already exists in {full_name}")
        specs = dict(inputs) if isinstance(inputs, Mapping) else {n: {} for n in inputs}
        if len(specs) > MAX_INPUTS:
            raise ValueError(f"a workflow_dispatch workflow has at most {MAX_INPUTS} inputs")
        workflow = Workflow(
            self._next_id(), file, name or file.rsplit(".", 1)[0], {k: dict(v) for k, v in specs.items()}, run_name
        )
        repo.workflows[file] = workflow
        return self._workflow_json(repo, workflow)

    def delete_workflow(self, full_name: str, file: str) -> None:
        """`.github/workflows/<file>` is gone: dispatching it is 404 again."""
        self._repo(full_name).workflows.pop(file, None)

    def add_run(
        self,
        full_name: str,
        workflow: str,
        *,
        head_sha: str,
        head_branch: str | None = None,
        event: str = "push",
        status: str = "completed",
        conclusion: str | None = "success",
        inputs: Mapping[str, Any] | None = None,
        actor: str = "maintainer",
    ) -> dict[str, Any]:
        """A run that already happened (or is under way), e.g. from a push: for tests of run selection."""
        repo = self._repo(full_name)
        wf = self._workflow(repo, workflow)
        if status not in STATUSES or (conclusion is not None and conclusion not in CONCLUSIONS):
            raise ValueError(f"not a run status/conclusion GitHub has: {status!r}/{conclusion!r}")
        run = self._new_run(
            repo, wf, head_branch or repo.json["default_branch"], head_sha, event, dict(inputs or {}), self._know(actor)
        )
        run.update(status=status, conclusion=conclusion if status == "completed" else None)
        return self._run_json(repo, run)

    def start_run(self, full_name: str, run_id: int) -> dict[str, Any]:
        repo = self._repo(full_name)
        run = self._run(repo, run_id)
        run.update(status="in_progress", updated_at=self._stamp())
        return self._run_json(repo, run)

    def complete_run(self, full_name: str, run_id: int, conclusion: str = "success") -> dict[str, Any]:
        """The run finishes with `conclusion` (success, failure, cancelled, timed_out...)."""
        if conclusion not in CONCLUSIONS:
            raise ValueError(f"not a conclusion GitHub has: {conclusion!r}")
        repo = self._repo(full_name)
        run = self._run(repo, run_id)
        run.update(status="completed", conclusion=conclusion, updated_at=self._stamp())
        return self._run_json(repo, run)

    def add_artifact(
        self, full_name: str, run_id: int, name: str, *, expired: bool = False, size_in_bytes: int = 1024
    ) -> dict[str, Any]:
        repo = self._repo(full_name)
        run = self._run(repo, run_id)
        artifact_id = self._next_id()
        created = self._stamp()
        expires = dt.datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ") + dt.timedelta(days=ARTIFACT_DAYS)
        api = f"{self.base_url}/repos/{repo.full_name}/actions/artifacts/{artifact_id}"
        artifact = {
            "id": artifact_id,
            "name": name,
            "size_in_bytes": size_in_bytes,
            "url": api,
            "archive_download_url": f"{api}/zip",
            "expired": expired,
            "created_at": created,
            "updated_at": created,
            "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "workflow_run": {
                "id": run["id"],
                "repository_id": repo.json["id"],
                "head_repository_id": run["head_repository"]["id"],
                "head_branch": run["head_branch"],
                "head_sha": run["head_sha"],
            },
        }
        repo.artifacts.setdefault(run_id, []).append(artifact)
        return copy.deepcopy(artifact)

    def set_jobs(self, full_name: str, run_id: int, jobs: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The jobs of the run's current attempt, each {"name", "conclusion"} (and optionally "status", and
        "started_at"/"completed_at" to give a job its duration); ids, URLs and other times are filled in. Replaces
        the jobs of that attempt."""
        repo = self._repo(full_name)
        run = self._run(repo, run_id)
        attempt = run["run_attempt"]
        kept = [j for j in repo.jobs.get(run_id, []) if j["run_attempt"] != attempt]
        made = []
        for given in jobs:
            conclusion = given.get("conclusion")
            if conclusion is not None and conclusion not in CONCLUSIONS:
                raise ValueError(f"not a job conclusion GitHub has: {conclusion!r}")
            status = given.get("status") or ("completed" if conclusion is not None else "queued")
            job = self._new_job(repo, run, str(given["name"]), status, conclusion)
            job.update({key: given[key] for key in ("started_at", "completed_at") if key in given})
            made.append(job)
        repo.jobs[run_id] = kept + made
        return copy.deepcopy(made)

    def _new_job(
        self, repo: Repo, run: dict[str, Any], name: str, status: str, conclusion: str | None
    ) -> dict[str, Any]:
        job_id = self._next_id()
        stamp = self._stamp()
        return {
            "id": job_id,
            "run_id": run["id"],
            "run_attempt": run["run_attempt"],
            "run_url": run["url"],
            "url": f"{self.base_url}/repos/{repo.full_name}/actions/jobs/{job_id}",
            "html_url": f"{repo.json['html_url']}/actions/runs/{run['id']}/job/{job_id}",
            "head_sha": run["head_sha"],
            "head_branch": run["head_branch"],
            "workflow_name": run["name"],
            "name": name,
            "status": status,
            "conclusion": conclusion if status == "completed" else None,
            "created_at": stamp,
            "started_at": stamp,
            "completed_at": stamp if status == "completed" else None,
            "steps": [],
            "labels": ["ubuntu-latest"],
        }

    # ---- inspection -----------------------------------------------------------------------

    def runs(self, full_name: str, workflow: str | None = None) -> list[dict[str, Any]]:
        """Every run (oldest first), as the API shows it plus "inputs": what the dispatch passed, defaults included."""
        repo = self._repo(full_name)
        wf = self._workflow(repo, workflow) if workflow is not None else None
        out = []
        for run_id, run in repo.runs.items():
            if wf is None or run["workflow_id"] == wf.id:
                out.append({**self._run_json(repo, run), "inputs": copy.deepcopy(repo.run_inputs.get(run_id, {}))})
        return out

    def workflows(self, full_name: str) -> dict[str, dict[str, Any]]:
        repo = self._repo(full_name)
        return {file: self._workflow_json(repo, wf) for file, wf in repo.workflows.items()}

    # ---- helpers --------------------------------------------------------------------------

    def _workflow(self, repo: Repo, key: str) -> Workflow:
        for wf in repo.workflows.values():
            if key in (wf.file, str(wf.id)):
                return wf
        raise ValueError(f"no workflow {key} in {repo.full_name}: add_workflow first")

    def _find_workflow(self, repo: Repo, key: str) -> Workflow | None:
        try:
            return self._workflow(repo, key)
        except ValueError:
            return None

    def _run(self, repo: Repo, run_id: int) -> dict[str, Any]:
        run = repo.runs.get(run_id)
        if run is None:
            raise Reply(404, NOT_FOUND)
        return run

    def _run_json(self, repo: Repo, run: dict[str, Any]) -> dict[str, Any]:
        """The run as the API shows it: `pull_requests` lists the open same-repository PRs at its head, as GitHub
        does (fork PRs never appear there)."""
        out = copy.deepcopy(run)
        out["pull_requests"] = [
            {
                "id": item["id"],
                "number": item["number"],
                "url": f"{self.base_url}/repos/{repo.full_name}/pulls/{item['number']}",
                "head": {
                    "ref": item["head"]["ref"],
                    "sha": item["head"]["sha"],
                    "repo": {"id": repo.json["id"], "url": repo.json["url"], "name": repo.json["name"]},
                },
                "base": {
                    "ref": item["base"]["ref"],
                    "sha": item["base"]["sha"],
                    "repo": {"id": repo.json["id"], "url": repo.json["url"], "name": repo.json["name"]},
                },
            }
            for item in repo.items.values()
            if "head" in item
            and item["state"] == "open"
            and item["head"]["sha"] == run["head_sha"]
            and item["head"]["repo"]["full_name"].lower() == repo.full_name.lower()
        ]
        return out

    def _workflow_json(self, repo: Repo, wf: Workflow) -> dict[str, Any]:
        return {
            "id": wf.id,
            "name": wf.name,
            "path": f".github/workflows/{wf.file}",
            "state": "active",
            "url": f"{self.base_url}/repos/{repo.full_name}/actions/workflows/{wf.id}",
            "html_url": f"{repo.json['html_url']}/blob/{repo.json['default_branch']}/.github/workflows/{wf.file}",
            "badge_url": f"{repo.json['html_url']}/workflows/{wf.name}/badge.svg",
        }

    def _new_run(
        self, repo: Repo, wf: Workflow, branch: str, sha: str, event: str, inputs: dict[str, Any], actor: dict[str, Any]
    ) -> dict[str, Any]:
        run_id = self._next_id()
        stamp = self._stamp()
        if wf.run_name is not None:
            title = _EXPRESSION.sub(lambda m: str(inputs.get(m[1], "")), wf.run_name)
        elif inputs.get("dispatch-id") not in (None, ""):
            title = f"{wf.name} {inputs['dispatch-id']}"
        else:
            title = wf.name
        api = f"{self.base_url}/repos/{repo.full_name}/actions/runs/{run_id}"
        number = 1 + sum(1 for r in repo.runs.values() if r["workflow_id"] == wf.id)
        run = {
            "id": run_id,
            "name": title,
            "display_title": title,
            "head_branch": branch,
            "head_sha": sha,
            "path": f".github/workflows/{wf.file}",
            "run_number": number,
            "run_attempt": 1,
            "event": event,
            "status": "queued",
            "conclusion": None,
            "workflow_id": wf.id,
            "url": api,
            "html_url": f"{repo.json['html_url']}/actions/runs/{run_id}",
            "jobs_url": f"{api}/jobs",
            "logs_url": f"{api}/logs",
            "artifacts_url": f"{api}/artifacts",
            "cancel_url": f"{api}/cancel",
            "rerun_url": f"{api}/rerun",
            "workflow_url": f"{self.base_url}/repos/{repo.full_name}/actions/workflows/{wf.id}",
            "created_at": stamp,
            "updated_at": stamp,
            "run_started_at": stamp,
            "actor": dict(actor),
            "triggering_actor": dict(actor),
            "pull_requests": [],
            "head_commit": {"id": sha, "tree_id": sha, "message": title, "timestamp": stamp},
            "repository": copy.deepcopy(repo.json),
            "head_repository": copy.deepcopy(repo.json),
        }
        repo.runs[run_id] = run
        repo.run_inputs[run_id] = copy.deepcopy(inputs)
        return run

    def _filtered_runs(self, call: Call, repo: Repo, runs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        q = call.query
        out = []
        for run in runs:
            if q.get("branch") and run["head_branch"] != q["branch"]:
                continue
            if q.get("head_sha") and run["head_sha"] != q["head_sha"]:
                continue
            if q.get("event") and run["event"] != q["event"]:
                continue
            if q.get("actor") and run["actor"]["login"].lower() != q["actor"].lower():
                continue
            if q.get("status") and q["status"] not in (run["status"], run["conclusion"]):
                continue  # GitHub's `status` filter takes a status or a conclusion
            out.append(self._run_json(repo, run))
        out.reverse()  # newest first, like GitHub
        return out

    # ---- routes ---------------------------------------------------------------------------

    def _route_post_workflow_dispatch(self, call: Call, repo: Repo, workflow: str) -> tuple[int, Any]:
        wf = self._find_workflow(repo, workflow)
        if wf is None:
            raise unprocessable("Workflow does not exist", doc=DISPATCH_DOC)
        body = call.fields
        ref = body.get("ref")
        if not isinstance(ref, str) or not ref:
            raise not_supplied("ref", doc=DISPATCH_DOC)
        given = body.get("inputs") or {}
        if not isinstance(given, dict):
            raise unprocessable(
                f"Invalid request.\n\nFor 'properties/inputs', {json.dumps(given)} is not an object.", doc=DISPATCH_DOC
            )
        if len(given) > MAX_INPUTS:
            raise unprocessable(
                f"Invalid request.\n\nNo more than {MAX_INPUTS} properties are allowed; {len(given)} were supplied.",
                doc=DISPATCH_DOC,
            )
        details = body.get("return_run_details", False)
        if not isinstance(details, bool):
            raise unprocessable(
                f"Invalid request.\n\nFor 'properties/return_run_details', {json.dumps(details)} is not a boolean.",
                doc=DISPATCH_DOC,
            )
        sha = self._branch_sha(repo, ref)
        if sha is None:
            raise unprocessable(f"No ref found for: {ref}", doc=DISPATCH_DOC)
        unexpected = [name for name in given if name not in wf.inputs]
        if unexpected:
            raise unprocessable(f"Unexpected inputs provided: {json.dumps(unexpected)}", doc=DISPATCH_DOC)
        inputs = {}
        for name, spec in wf.inputs.items():
            if name in given:
                value = given[name]
                inputs[name] = value if isinstance(value, str) else json.dumps(value)
            elif spec.get("required") and "default" not in spec:
                raise unprocessable(f"Required input '{name}' not provided", doc=DISPATCH_DOC)
            elif "default" in spec:
                inputs[name] = str(spec["default"])
        run = self._new_run(repo, wf, ref.removeprefix("refs/heads/"), sha, "workflow_dispatch", inputs, call.user)
        if details:
            return 200, {"workflow_run_id": run["id"], "run_url": run["url"], "html_url": run["html_url"]}
        return 204, None

    def _route_list_workflow_runs(self, call: Call, repo: Repo, workflow: str) -> tuple[int, Any, dict[str, str]]:
        wf = self._find_workflow(repo, workflow)
        if wf is None:
            raise Reply(404, NOT_FOUND)
        runs = self._filtered_runs(call, repo, (r for r in repo.runs.values() if r["workflow_id"] == wf.id))
        return self._paginate_wrapped(call, "workflow_runs", runs)

    def _route_list_runs(self, call: Call, repo: Repo) -> tuple[int, Any, dict[str, str]]:
        return self._paginate_wrapped(call, "workflow_runs", self._filtered_runs(call, repo, repo.runs.values()))

    def _route_get_run(self, call: Call, repo: Repo, id: int) -> tuple[int, Any]:
        return 200, self._run_json(repo, self._run(repo, id))

    def _route_post_cancel_run(self, call: Call, repo: Repo, id: int) -> tuple[int, Any]:
        run = self._run(repo, id)
        if run["status"] == "completed":
            raise Reply(
                409,
                {
                    "message": "Cannot cancel a workflow run that is completed.",
                    "documentation_url": f"https://docs.github.com/rest/{CANCEL_DOC}",
                },
            )
        run.update(status="completed", conclusion="cancelled", updated_at=self._stamp())
        return 202, {}

    def _route_list_run_jobs(self, call: Call, repo: Repo, id: int) -> tuple[int, Any, dict[str, str]]:
        self._run(repo, id)
        wanted = call.query.get("filter", "latest")
        if wanted not in ("latest", "all"):
            raise unprocessable(
                f"Invalid request.\n\n{json.dumps(wanted)} is not a filter: latest or all.", doc=JOBS_DOC
            )
        jobs = repo.jobs.get(id, [])
        if wanted == "latest":  # each job as its newest attempt left it
            newest: dict[str, dict[str, Any]] = {}
            for job in jobs:
                newest[job["name"]] = job
            jobs = list(newest.values())
        return self._paginate_wrapped(call, "jobs", copy.deepcopy(jobs))

    def rerun_failed_jobs(self, full_name: str, run_id: int, actor: str = "maintainer") -> dict[str, Any]:
        """What a person's "Re-run failed jobs" does (the route below, without the request)."""
        repo = self._repo(full_name)
        self._rerun_failed(repo, run_id, self._know(actor))
        return self._run_json(repo, self._run(repo, run_id))

    def _route_post_rerun_failed_jobs(self, call: Call, repo: Repo, id: int) -> tuple[int, Any]:
        self._rerun_failed(repo, id, call.actor)
        return 201, {}

    def _rerun_failed(self, repo: Repo, id: int, actor: dict[str, Any] | None) -> None:
        """The run is queued again as its next attempt; its failed and cancelled jobs are queued in it, the
        others carried over as they ended. Refused while the run is not finished."""
        run = self._run(repo, id)
        if run["status"] != "completed":
            raise Reply(
                403,
                {
                    "message": "This workflow is already running",
                    "documentation_url": f"https://docs.github.com/rest/{RERUN_FAILED_DOC}",
                },
            )
        latest: dict[str, dict[str, Any]] = {}
        for job in repo.jobs.get(id, []):
            latest[job["name"]] = job
        run.update(
            status="queued",
            conclusion=None,
            run_attempt=run["run_attempt"] + 1,
            updated_at=self._stamp(),
            triggering_actor=dict(actor or run["triggering_actor"]),
        )
        again = [
            self._new_job(repo, run, job["name"], "queued", None)
            for job in latest.values()
            if job["conclusion"] in RERUN_CONCLUSIONS
        ]
        repo.jobs.setdefault(id, []).extend(again)

    def _route_list_run_artifacts(self, call: Call, repo: Repo, id: int) -> tuple[int, Any, dict[str, str]]:
        self._run(repo, id)
        wanted = call.query.get("name")
        artifacts = [a for a in repo.artifacts.get(id, []) if wanted in (None, a["name"])]
        return self._paginate_wrapped(call, "artifacts", copy.deepcopy(artifacts))
