"""The sandbox: an in-memory GitHub with one demo repository, where every write the bot makes is printed."""

from __future__ import annotations

import sys
from typing import Any, Callable, TextIO

import httpx

from bot.core.config import default_policy
from bot.rules.gate import DISPATCH_INPUTS, FORK_INPUTS
from bot.github.client import GitHubApp, RetryPolicy, WritePacer
from bot.testing import InMemoryGitHub
from bot.telemetry.metrics import Metrics

DEMO_REPO = "demo-org/InferenceX"
DEMO_FORK = "partner-dev/InferenceX"
DEMO_SECRET = "sandbox-secret"
PREVIEW_LINES = 14

DEMO_FILES = {
    ".github/CODEOWNERS": "inferencex-e2e/ @demo-org/maintainers\nconfigs/amd-* @amd-partner\n",
    "docs/PR_REVIEW_CHECKLIST.md": (
        "# Review checklist\n\n## Template\n\n```\nAs a PR reviewer and CODEOWNER, I have reviewed this and have:\n"
        "- [ ] Verified that this PR has passed PR validation.\n- [ ] Verified that this PR passes evals.\n\n"
        "Signed: `FILL_IN_GITHUB_USERNAME`\n```\n"
    ),
    "inferencex-e2e/perf-changelog.yaml": (
        "- config-keys:\n    - dsr1-fp8-mi355x-sglang\n  description:\n    - Baseline\n"
        "  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/1\n"
    ),
}


DEMO_ENTRY = ("\n- config-keys:\n    - dsr1-fp8-mi355x-sglang\n  description:\n    - Tuned SGLang recipe\n"
              "  pr-link: XXX\n")
DEMO_LABEL = "full-sweep-fail-fast"
DEMO_SIGNER = "amd-partner"  # owns configs/amd-* by the demo CODEOWNERS
SWEEP_RUN_NAME = "Sweep ${{ inputs.dispatch-id }}"


def _generate_key() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def printer(out: TextIO) -> Callable[[Any], None]:
    """Shows one GitHub write the way a reviewer would want to read it."""

    def show(req: Any) -> None:
        if req.path.startswith("/app/"):
            return  # the App's token exchange, not a write to a repository
        data = req.json if isinstance(req.json, dict) else {}
        print(f"  GitHub write: {req.method} {req.path} -> {req.status}", file=out)
        text = data.get("body")
        if isinstance(text, str):
            lines = text.splitlines()
            for line in lines[:PREVIEW_LINES]:
                print(f"      | {line}", file=out)
            if len(lines) > PREVIEW_LINES:
                print(f"      | ... ({len(lines) - PREVIEW_LINES} more lines, {len(text)} chars in all)", file=out)
        else:
            shown = {k: v for k, v in data.items() if k != "body"}
            if shown:
                print(f"      {shown}", file=out)
        out.flush()

    return show


def demo_github(out: TextIO | None = None) -> InMemoryGitHub:
    fake = InMemoryGitHub(on_write=printer(out or sys.stdout))
    fake.add_repo(DEMO_REPO, default_branch="main", installation_id=1)
    for path, content in DEMO_FILES.items():
        fake.set_file(DEMO_REPO, path, content)
    fake.set_permission(DEMO_REPO, "maintainer", "admin")
    pr = fake.add_pull(
        DEMO_REPO, number=1, title="Add MI355X SGLang recipe", user="partner-dev", head_repo=DEMO_FORK,
        head_ref="mi355x-sglang", files=["inferencex-e2e/perf-changelog.yaml", "configs/amd-master.yaml"],
    )
    # the PR appends one valid entry; GitHub has its merge commit, so a maintainer's label can start a sweep
    changelog = DEMO_FILES["inferencex-e2e/perf-changelog.yaml"]
    fake.set_file(DEMO_REPO, "inferencex-e2e/perf-changelog.yaml", changelog, ref=pr["base"]["sha"])
    fake.set_file(DEMO_REPO, "inferencex-e2e/perf-changelog.yaml", changelog + DEMO_ENTRY, ref=pr["head"]["sha"])
    fake.update_pull(DEMO_REPO, 1, merge_commit_sha="5" * 40)
    add_sweep_workflows(fake, DEMO_REPO)
    return fake


def demo_signoff(fake: InMemoryGitHub) -> dict[str, Any]:
    """The AMD CODEOWNER signs off PR #1 with the checklist ticked, before its sweep has finished."""
    template = DEMO_FILES["docs/PR_REVIEW_CHECKLIST.md"].split("```\n")[1]
    body = template.replace("[ ]", "[x]").replace("`FILL_IN_GITHUB_USERNAME`", "@" + DEMO_SIGNER)
    comment = fake.add_comment(DEMO_REPO, 1, body, user=DEMO_SIGNER)
    return fake.issue_comment_payload(DEMO_REPO, 1, comment)


def add_sweep_workflows(fake: InMemoryGitHub, repo: str) -> None:
    """The default policy's two sweep workflows, taking the gate's inputs, their runs named by dispatch id (as
    the real workflows' `run-name:` must be)."""
    workflows = default_policy()["workflows"]
    for workflow, inputs in ((workflows["sweep"], DISPATCH_INPUTS), (workflows["fork_sweep"], FORK_INPUTS)):
        fake.add_workflow(repo, workflow, inputs=list(inputs), run_name=SWEEP_RUN_NAME)


def seed_from_payload(fake: InMemoryGitHub, payload: dict[str, Any]) -> None:
    """Make the repository and PR of an arbitrary payload exist, so `sweepbot receive` works on any file."""
    repo = (payload.get("repository") or {}).get("full_name")
    if not repo or fake.has_repo(repo):
        return
    fake.add_repo(repo, default_branch=payload["repository"].get("default_branch") or "main",
                  installation_id=(payload.get("installation") or {}).get("id") or 1)
    pr = payload.get("pull_request")
    if isinstance(pr, dict) and isinstance(pr.get("number"), int):
        fake.add_pull(repo, number=pr["number"], title=pr.get("title") or "", user=(pr.get("user") or {}).get("login")
                      or "contributor")


def sandbox_app(fake: InMemoryGitHub, metrics: Metrics) -> GitHubApp:
    http = httpx.AsyncClient(transport=httpx.MockTransport(fake.handle))
    return GitHubApp(app_id="1", private_key=_generate_key(), api_url=fake.base_url, metrics=metrics, http=http,
                     retry=RetryPolicy(attempts=2, base_delay=0.05),
                     pacer_factory=lambda: WritePacer(limit=0))  # unpaced: GitHub's write limits don't apply here
