"""The sandbox: an in-memory GitHub with one demo repository, and the script of a PR's whole lifecycle.

`make serve` without credentials walks `lifecycle()`: each step is what a person, GitHub or the results service
does (the fake GitHub changed as they would change it) and the signed delivery GitHub would then send. Every write
the bot makes is one line on stdout and written in full to a transcript file.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import sys
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol, TextIO

import httpx

from bot.core.config import default_policy
from bot.github.client import GitHubApp, RetryPolicy, WritePacer
from bot.rules.gate import DISPATCH_INPUTS, FORK_INPUTS
from bot.rules.markers import purpose_of
from bot.telemetry.metrics import Metrics
from bot.testing import InMemoryGitHub
from bot.testing.model import RecordedRequest

DEMO_REPO = "demo-org/InferenceX"
DEMO_FORK = "partner-dev/InferenceX"
DEMO_SECRET = "sandbox-secret"
DEMO_AUTHOR = "partner-dev"
DEMO_MAINTAINER = "maintainer"
DEMO_CONFIG = "inferencex-e2e/configs/amd-master.yaml"  # the upstream layout, matched by the default autolabels
DEMO_CONFIG_CHANGE = (
    "dsr1-fp8-mi355x-sglang:\n  runner: mi355x\n  scenarios:\n    fixed-seq-len:\n    - isl: 1024\n      osl: 1024\n"
    "      search-space:\n      - { tp: 8, conc-start: 4, conc-end: 64 }\n"
)
RESULTS_REPO = default_policy().results.repository
RESULTS_SENDER = "inferencex-results[bot]"  # the results service's account, trusted by the demo's policy
TRANSCRIPT_PREFIX = "sweepbot-sandbox-transcript-"  # and a unique part, .md, in the temp directory

DEMO_FILES = {
    # the changelog is nobody's: the AMD config's owner alone covers every owned file the demo PR changes
    ".github/CODEOWNERS": "inferencex-e2e/configs/ @demo-org/maintainers\ninferencex-e2e/configs/amd-* @amd-partner\n",
    ".github/sweepbot.yml": f'results:\n  senders: ["{RESULTS_SENDER}"]\n',
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


DEMO_ENTRY = (
    "\n- config-keys:\n    - dsr1-fp8-mi355x-sglang\n  description:\n    - Tuned SGLang recipe\n  pr-link: XXX\n"
)
DEMO_LABEL = "full-sweep-fail-fast"
DEMO_SIGNER = "amd-partner"  # owns inferencex-e2e/configs/amd-* by the demo CODEOWNERS
SWEEP_RUN_NAME = "Sweep ${{ inputs.dispatch-id }}"
DEMO_ARTIFACT = "results_bmk_dsr1-fp8-mi355x-sglang"
APP_RUN_STAGE, APP_RUN_INGEST = 24680, 98765  # the results service's own workflow runs
INGEST_COUNTS = {
    "benchmark": {"new": 12, "duplicate": 3, "skipped": 0, "unmapped": 0, "failed": 0},
    "eval": {"new": 4, "duplicate": 0, "skipped": 0, "unmapped": 0, "failed": 0},
    "trace": {"new": 0, "duplicate": 0, "skipped": 0, "unmapped": 0, "failed": 0},
    "power": {"new": 0, "duplicate": 0, "skipped": 0, "unmapped": 0, "failed": 0},
}


def _generate_key() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


# -- what is shown of each write ---------------------------------------------------------------------------


def write_summary(req: RecordedRequest) -> str:
    """One line for one GitHub write: what it is, without its text (that goes to the transcript)."""
    data = req.json if isinstance(req.json, dict) else {}
    head = f"{req.method} {req.path} -> {req.status}"
    if isinstance(data.get("body"), str):
        purpose = purpose_of(data["body"])
        what = f"comment[{purpose}]" if purpose else "body"
        return f"{head}  {what}, {len(data['body']):,} chars"
    if "output" in data or "conclusion" in data or ("name" in data and "head_sha" in data):
        state = data.get("conclusion") or data.get("status") or ""
        title = (data.get("output") or {}).get("title") or ""
        return f"{head}  check run {data.get('name') or ''} {state} {title!r}".rstrip()
    shown = {k: v for k, v in data.items() if k not in ("body", "output")}
    text = json.dumps(shown, ensure_ascii=False)
    return f"{head}  {text[:140] + ' ...' if len(text) > 140 else text}" if shown else head


def write_in_full(req: RecordedRequest) -> str:
    """The transcript's entry for one write: its line, then every text it carries, whole."""
    data = req.json if isinstance(req.json, dict) else {}
    parts = [f"#### {write_summary(req)}", ""]
    texts = []
    if isinstance(data.get("body"), str):
        texts.append(("body", data["body"]))
    output = data["output"] if isinstance(data.get("output"), dict) else {}
    for key in ("title", "summary", "text"):
        if isinstance(output.get(key), str):
            texts.append((f"output.{key}", output[key]))
    rest = {k: v for k, v in data.items() if k not in ("body", "output")}
    if isinstance(output.get("annotations"), list):
        rest["output.annotations"] = output["annotations"]
    for name, text in texts:
        parts += [f"{name}:", "", "~~~~~~markdown", text, "~~~~~~", ""]
    if rest:
        parts += ["~~~~~~json", json.dumps(rest, indent=2, ensure_ascii=False), "~~~~~~", ""]
    return "\n".join(parts)


class Recorder:
    """Each write as it happens: one line on `out`, in full in the transcript (when there is one), under the step
    that caused it. `writes` keeps (step number, request) for whoever checks the walk afterwards."""

    def __init__(self, out: TextIO, transcript: TextIO | None = None):
        self.out, self.transcript = out, transcript
        self.step = 0
        self.writes: list[tuple[int, RecordedRequest]] = []

    def begin(self, number: int, title: str) -> None:
        self.step = number
        if self.transcript is not None:
            self.transcript.write(f"\n## {title}\n\n")
            self.transcript.flush()

    def __call__(self, req: RecordedRequest) -> None:
        if req.path.startswith("/app/"):
            return  # the App's token exchange, not a write to a repository
        self.writes.append((self.step, req))
        print(f"  GitHub write: {write_summary(req)}", file=self.out, flush=True)
        if self.transcript is not None:
            self.transcript.write(write_in_full(req) + "\n")
            self.transcript.flush()


def printer(out: TextIO) -> Callable[[Any], None]:
    """One line per GitHub write on `out` (`sweepbot receive` in the sandbox)."""
    return Recorder(out)


# -- the demo repository -----------------------------------------------------------------------------------


def demo_github(out: TextIO | None = None, *, on_write: Callable[[Any], None] | None = None) -> InMemoryGitHub:
    fake = InMemoryGitHub(on_write=on_write or printer(out or sys.stdout))
    clock_from_today(fake)
    fake.add_repo(DEMO_REPO, default_branch="main", installation_id=1)
    fake.add_repo(RESULTS_REPO, default_branch="main", installation_id=1)  # where staging and ingest are asked
    for path, content in DEMO_FILES.items():
        fake.set_file(DEMO_REPO, path, content)
    fake.set_permission(DEMO_REPO, DEMO_MAINTAINER, "admin")
    pr = fake.add_pull(
        DEMO_REPO,
        number=1,
        title="Add MI355X SGLang recipe",
        user=DEMO_AUTHOR,
        head_repo=DEMO_FORK,
        head_ref="mi355x-sglang",
        files=["inferencex-e2e/perf-changelog.yaml", DEMO_CONFIG],
    )
    # the PR appends one valid entry; GitHub has its merge commit, so a maintainer's label can start a sweep
    changelog = DEMO_FILES["inferencex-e2e/perf-changelog.yaml"]
    fake.set_file(DEMO_REPO, "inferencex-e2e/perf-changelog.yaml", changelog, ref=pr["base"]["sha"])
    fake.set_file(DEMO_REPO, "inferencex-e2e/perf-changelog.yaml", changelog + DEMO_ENTRY, ref=pr["head"]["sha"])
    # the AMD config as the PR changes it: what the merge writes onto the base branch
    fake.set_file(DEMO_REPO, DEMO_CONFIG, DEMO_CONFIG_CHANGE, ref=pr["head"]["sha"])
    fake.update_pull(DEMO_REPO, 1, merge_commit_sha="5" * 40)
    add_sweep_workflows(fake, DEMO_REPO)
    return fake


def clock_from_today(fake: InMemoryGitHub) -> None:
    """The fake's clock (one second per stamp) starts at midnight UTC today instead of 2026-01-01, so the
    artifacts of the demo's run are not expired by the bot's real clock (they expire after 90 days)."""
    fake.set_clock(dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT00:00:00Z"))


def demo_signoff(fake: InMemoryGitHub) -> dict[str, Any]:
    """The AMD CODEOWNER signs off PR #1 with the checklist ticked, before its sweep has finished."""
    template = DEMO_FILES["docs/PR_REVIEW_CHECKLIST.md"].split("```\n")[1]
    body = template.replace("[ ]", "[x]").replace("`FILL_IN_GITHUB_USERNAME`", "@" + DEMO_SIGNER)
    comment = fake.add_comment(DEMO_REPO, 1, body, user=DEMO_SIGNER)
    return fake.issue_comment_payload(DEMO_REPO, 1, comment)


class WorkflowHolder(Protocol):
    """A fake GitHub that takes workflows: the in-memory one, or its copy in another process."""

    def add_workflow(
        self, full_name: str, file: str, *, inputs: Iterable[str] = (), run_name: str | None = None
    ) -> Any: ...


def add_sweep_workflows(fake: WorkflowHolder, repo: str) -> None:
    """The default policy's two sweep workflows, taking the gate's inputs, their runs named by dispatch id (as
    the real workflows' `run-name:` must be)."""
    workflows = default_policy().workflows
    for workflow, inputs in ((workflows.sweep, DISPATCH_INPUTS), (workflows.fork_sweep, FORK_INPUTS)):
        fake.add_workflow(repo, workflow, inputs=list(inputs), run_name=SWEEP_RUN_NAME)


def seed_from_payload(fake: InMemoryGitHub, payload: dict[str, Any]) -> None:
    """Make the repository and PR of an arbitrary payload exist, so `sweepbot receive` works on any file."""
    repo = (payload.get("repository") or {}).get("full_name")
    if not repo or fake.has_repo(repo):
        return
    fake.add_repo(
        repo,
        default_branch=payload["repository"].get("default_branch") or "main",
        installation_id=(payload.get("installation") or {}).get("id") or 1,
    )
    pr = payload.get("pull_request")
    if isinstance(pr, dict) and isinstance(pr.get("number"), int):
        fake.add_pull(
            repo,
            number=pr["number"],
            title=pr.get("title") or "",
            user=(pr.get("user") or {}).get("login") or "contributor",
        )


def pull_named(payload: dict[str, Any]) -> int | None:
    """The number of the PR a payload is about: its pull_request's, or its issue's when the issue is a PR."""
    pr, issue = payload.get("pull_request"), payload.get("issue")
    item = pr if isinstance(pr, dict) else issue if isinstance(issue, dict) and "pull_request" in issue else {}
    number = item.get("number")
    return number if isinstance(number, int) else None


def held_pulls(fake: InMemoryGitHub) -> list[str]:
    """Every PR the sandbox's GitHub holds, as owner/name#number."""
    return [
        f"{repo}#{issue['number']}" for repo in fake.repos for issue in fake.issues(repo) if "pull_request" in issue
    ]


def not_held(fake: InMemoryGitHub, payload: dict[str, Any]) -> str | None:
    """The PR the payload is about when the sandbox's GitHub lacks it, in one sentence (None: it holds it, or the
    payload names none), once `seed_from_payload` has made what it can (the repository always)."""
    repo = (payload.get("repository") or {}).get("full_name")
    number = pull_named(payload)
    if not isinstance(repo, str) or number is None:
        return None
    if f"{repo}#{number}".lower() in {held.lower() for held in held_pulls(fake)}:
        return None
    return f"the sandbox holds no PR {repo}#{number} ({sandbox_holds(fake)})"


def sandbox_holds(fake: InMemoryGitHub) -> str:
    """The PRs the sandbox holds, and how another repository's come to be."""
    return (
        f"it holds {', '.join(held_pulls(fake)) or 'no PR'}, and makes the repository and PR of a"
        f" pull_request payload for a repository it lacks"
    )


def sandbox_app(fake: InMemoryGitHub, metrics: Metrics) -> GitHubApp:
    http = httpx.AsyncClient(transport=httpx.MockTransport(fake.handle))
    return GitHubApp(
        app_id="1",
        private_key=_generate_key(),
        api_url=fake.base_url,
        metrics=metrics,
        http=http,
        retry=RetryPolicy(attempts=2, base_delay=0.05),
        pacer_factory=lambda: WritePacer(limit=0),
    )  # unpaced: GitHub's write limits don't apply here


# -- the lifecycle -----------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Step:
    """What happens (one line for people), and the delivery GitHub then sends: `act` changes the fake GitHub as
    the person, GitHub or the results service would, and returns the payload. It runs when the step's turn
    comes, after the bot has settled on the step before (the run the bot dispatched exists by then)."""

    what: str
    event: str
    act: Callable[[InMemoryGitHub], dict[str, Any]]


def sweep_run(fake: InMemoryGitHub) -> dict[str, Any]:
    """The sweep run the bot dispatched for PR #1 (the newest run of the fork workflow)."""
    runs = fake.runs(DEMO_REPO, default_policy().workflows.fork_sweep)
    if not runs:
        raise LookupError("the bot dispatched no sweep run: the label step left no dispatch")
    return runs[-1]


def seed_jobs(fake: InMemoryGitHub, run_id: int, *, failing: bool) -> None:
    """The jobs of the run's current attempt: a canary and two matrix jobs, the MI355X one failing on the first."""
    jobs = [
        {"name": "canary / dsr1-fp8-mi355x-sglang", "status": "completed", "conclusion": "success"},
        {
            "name": "matrix / dsr1-fp8-mi355x-sglang tp8 conc64",
            "status": "completed",
            "conclusion": "failure" if failing else "success",
        },
        {"name": "matrix / dsr1-fp8-mi355x-sglang tp4 conc16", "status": "completed", "conclusion": "success"},
    ]
    fake.set_jobs(DEMO_REPO, run_id, jobs)


def results_request(fake: InMemoryGitHub, event_type: str) -> dict[str, Any]:
    """The client_payload of the newest `event_type` request the bot sent the results service ({} if none)."""
    sent = [d for d in fake.repository_dispatches(RESULTS_REPO) if d.get("event_type") == event_type]
    return dict(sent[-1]["client_payload"]) if sent else {}


def callback(fake: InMemoryGitHub, event_type: str, payload: dict[str, Any]) -> dict[str, Any]:
    """A callback of the results service: a repository_dispatch on the demo repository from its account."""
    return fake.repository_dispatch_payload(DEMO_REPO, event_type, payload, sender=RESULTS_SENDER)


def lifecycle() -> list[Step]:
    """PR #1 from opened to ingested, as its people live it."""

    def opened(fake: InMemoryGitHub) -> dict[str, Any]:
        return fake.pull_request_payload(DEMO_REPO, 1, "opened", sender=DEMO_AUTHOR)

    def labeled(fake: InMemoryGitHub) -> dict[str, Any]:
        fake.label_issue(DEMO_REPO, 1, DEMO_LABEL, actor=DEMO_MAINTAINER)
        return fake.pull_request_payload(DEMO_REPO, 1, "labeled", sender=DEMO_MAINTAINER, label=DEMO_LABEL)

    def started(fake: InMemoryGitHub) -> dict[str, Any]:
        run = fake.start_run(DEMO_REPO, sweep_run(fake)["id"])
        return fake.workflow_run_payload(DEMO_REPO, run["id"], "in_progress")

    def failed(fake: InMemoryGitHub) -> dict[str, Any]:
        run_id = sweep_run(fake)["id"]
        seed_jobs(fake, run_id, failing=True)
        return fake.workflow_run_payload(DEMO_REPO, run_id, "completed", conclusion="failure")

    def rerun(fake: InMemoryGitHub) -> dict[str, Any]:
        fake.rerun_failed_jobs(DEMO_REPO, sweep_run(fake)["id"], actor=DEMO_MAINTAINER)  # "Re-run failed jobs"
        run = fake.start_run(DEMO_REPO, sweep_run(fake)["id"])
        return fake.workflow_run_payload(DEMO_REPO, run["id"], "in_progress", sender=DEMO_MAINTAINER)

    def signed(fake: InMemoryGitHub) -> dict[str, Any]:
        return demo_signoff(fake)

    def green(fake: InMemoryGitHub) -> dict[str, Any]:
        run_id = sweep_run(fake)["id"]
        seed_jobs(fake, run_id, failing=False)
        fake.add_artifact(DEMO_REPO, run_id, DEMO_ARTIFACT)
        return fake.workflow_run_payload(DEMO_REPO, run_id, "completed", conclusion="success")

    def pinned(fake: InMemoryGitHub) -> dict[str, Any]:
        body = f"/{default_policy().commands.use} {sweep_run(fake)['id']}"
        comment = fake.add_comment(DEMO_REPO, 1, body, user=DEMO_MAINTAINER, author_association="MEMBER")
        return fake.issue_comment_payload(DEMO_REPO, 1, comment)

    def stage(kind: str) -> Callable[[InMemoryGitHub], dict[str, Any]]:
        def act(fake: InMemoryGitHub) -> dict[str, Any]:
            request = results_request(fake, "stage-results")
            if not request:
                raise LookupError("the /use step sent the results service no stage-results request")
            payload = {**request, "source-repository": RESULTS_REPO, "app-run-id": str(APP_RUN_STAGE)}
            if kind == "completed":
                viewer = default_policy().results.viewer
                payload.update({"stage-succeeded": "true", "results-url": f"{viewer}/runs/{APP_RUN_STAGE}"})
            return callback(fake, f"stage-results-{kind}", payload)

        return act

    def merge(fake: InMemoryGitHub) -> dict[str, Any]:
        body = f"/{default_policy().commands.merge}"
        comment = fake.add_comment(DEMO_REPO, 1, body, user=DEMO_MAINTAINER, author_association="MEMBER")
        return fake.issue_comment_payload(DEMO_REPO, 1, comment)

    def ingested(fake: InMemoryGitHub) -> dict[str, Any]:
        asked = results_request(fake, "ingest-results")  # what the bot asked at merge, echoed (if it asked)
        payload = {
            **asked,
            "source-repository": RESULTS_REPO,
            "pr-number": "1",
            "run-id": str(sweep_run(fake)["id"]),
            "app-run-id": str(APP_RUN_INGEST),
            "counts": INGEST_COUNTS,
        }
        return callback(fake, "ingest-completed", payload)

    return [
        Step(f"{DEMO_AUTHOR} opens PR #1 from a fork (the changelog and an AMD config)", "pull_request", opened),
        Step(
            f"{DEMO_MAINTAINER} adds {DEMO_LABEL}: after the label settle, the bot dispatches the sweep",
            "pull_request",
            labeled,
        ),
        Step("the sweep run starts", "workflow_run", started),
        Step("the sweep run fails: one matrix job failed", "workflow_run", failed),
        Step(f"{DEMO_MAINTAINER} reruns the failed jobs", "workflow_run", rerun),
        Step(
            f"{DEMO_SIGNER}, the AMD CODEOWNER, signs off while the rerun is going: the verdict waits",
            "issue_comment",
            signed,
        ),
        Step("the rerun finishes green: the sign-off is verified again", "workflow_run", green),
        Step(f"{DEMO_MAINTAINER} pins the green run with /use: staging is asked for", "issue_comment", pinned),
        Step("the results service starts staging the run", "repository_dispatch", stage("started")),
        Step("the results service has staged the run", "repository_dispatch", stage("completed")),
        Step(f"{DEMO_MAINTAINER} writes /merge: the bot merges PR #1 and asks for the ingest", "issue_comment", merge),
        Step("the results service has ingested the pinned run", "repository_dispatch", ingested),
    ]


Deliver = Callable[[str, dict[str, Any]], Awaitable[str]]


async def walk(
    steps: list[Step],
    fake: InMemoryGitHub,
    deliver: Deliver,
    settle: Callable[[], Awaitable[None]],
    recorder: Recorder,
    out: TextIO,
) -> None:
    """Each step in turn: its change to GitHub, its delivery (`deliver` posts it signed, answers the webhook's
    reply), then `settle` until the bot has done everything it does about it."""
    for number, step in enumerate(steps, 1):
        try:
            payload = step.act(fake)
        except LookupError as exc:  # the bot did not do what this step follows on from
            print(f"[{number}/{len(steps)}] not walked further: {exc}", file=out, flush=True)
            return
        title = f"[{number}/{len(steps)}] {step.what}"
        recorder.begin(number, f"{title} ({step.event}.{payload.get('action')})")
        print(f"{title}  ({step.event}.{payload.get('action')})", file=out, flush=True)
        answer = await deliver(step.event, payload)
        if answer:
            print(f"  webhook answered {answer}", file=out, flush=True)
        try:
            await settle()
        except TimeoutError:
            print(
                f"[{number}/{len(steps)}] not walked further: the bot did not settle on this step in time",
                file=out,
                flush=True,
            )
            return
