"""GitHub requests per scenario, counted by the in-memory fake GitHub, printed as a Markdown table.

Each scenario starts a real bot (journal, workers, webhook server: `tests/harness.py`) against a fresh
`InMemoryGitHub` behind respx, sends signed webhooks and counts what reached GitHub. "Warm" means the
process has already handled one event: the installation token, the App's identity (`GET /app`) and the
repository's `.github/sweepbot.yml` are cached. Two tables: the welcome and autolabel scenarios (every feature
but the sweep gate) and the sweep-gate scenarios (every feature). Every request is answered 50 ms late
(`bot/testing/round_trips.py`), so that the requests a delivery makes together overlap: beside each count, the
round trips on its critical path (the longest chain of requests made one after another; what a person waits
for). The test suite runs the same functions (`tests/test_welcome.py`, `tests/test_gate_requests.py`), so the
numbers cannot drift from the code silently.

    .venv/bin/python bench/github_requests.py
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import re
import sys
import tempfile
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import respx

ROOT = Path(__file__).resolve().parent.parent
for _path in (str(ROOT), str(ROOT / "tests")):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from harness import REPO, Harness, start_harness, stop_harness  # noqa: E402

from bot.app.sandbox import add_sweep_workflows  # noqa: E402
from bot.rules.markers import marker  # noqa: E402
from bot.rules.sweep_record import RunRecord, SweepRecord  # noqa: E402
from bot.testing import InMemoryGitHub, RecordedRequest  # noqa: E402
from bot.testing.round_trips import LateGitHub, Trip, chain_depths, critical_path  # noqa: E402
from handlers import pr_state, registry, sweep_gate  # noqa: E402
from handlers.registry import PR_WORKFLOW, router_without  # noqa: E402

FORK = "partner/InferenceX"
BENCH_ONLY = "inferencex-e2e/recipes/mi355x-sglang.yaml"  # a benchmark path no autolabel rule matches
CHANGELOG = "inferencex-e2e/perf-changelog.yaml"  # benchmark path and the perf-changelog rule

NAMES = [  # (method, path regex, short name) for the Markdown table
    ("POST", r"^/app/installations/\d+/access_tokens$", "token"),
    ("GET", r"^/app$", "App identity"),
    ("GET", r"/contents/\.github/sweepbot\.yml$", "read sweepbot.yml"),
    ("GET", r"/pulls/\d+$", "read PR"),
    ("GET", r"/pulls/\d+/files$", "list files"),
    ("GET", r"/issues/\d+/comments$", "list comments"),
    ("POST", r"/issues/\d+/comments$", "create comment"),
    ("PATCH", r"/issues/comments/\d+$", "edit comment"),
    ("GET", r"/issues/\d+/labels$", "list PR labels"),
    ("POST", r"/issues/\d+/labels$", "add labels"),
    ("DELETE", r"/issues/\d+/labels/", "remove label"),
    ("GET", r"/issues/\d+/events$", "list label events"),
    ("GET", r"/labels/[^/]+$", "look up label"),
    ("POST", r"/labels$", "create label"),
    ("GET", rf"^/repos/(?!{REPO}/)[^/]+/[^/]+/compare/[^/]+$", "compare (submodule)"),
    ("GET", r"/compare/[^/]+$", "compare (merge base)"),
    ("GET", r"/commits$", "list commits of a path"),
    ("GET", r"/commits/[^/]+/pulls$", "PRs of a commit"),
    ("GET", r"/contents/.+$", "read file at commit"),  # after sweepbot.yml: the changelog at a SHA
    ("GET", r"/git/blobs/[^/]+$", "read blob"),
    ("GET", r"/git/commits/[^/]+$", "read commit"),
    ("GET", r"/actions/workflows/[^/]+/runs$", "list runs"),
    ("POST", r"/actions/workflows/[^/]+/dispatches$", "dispatch"),
    ("GET", r"/actions/runs/\d+$", "read run"),
    ("POST", r"/actions/runs/\d+/cancel$", "cancel run"),
    ("GET", r"/pulls/\d+/reviews$", "list reviews"),
    ("GET", r"/actions/runs/\d+/jobs$", "list run jobs"),
    ("GET", r"/commits/[^/]+/check-runs$", "list check runs"),
    ("POST", r"/check-runs$", "create check run"),
    ("PATCH", r"/check-runs/\d+$", "update check run"),
    ("GET", r"/collaborators/[^/]+/permission$", "read permission"),
    ("POST", r"/issues/comments/\d+/reactions$", "add reaction"),
    ("DELETE", r"/issues/comments/\d+/reactions/\d+$", "remove reaction"),
    ("GET", r"/actions/runs/\d+/artifacts$", "list run artifacts"),
    ("POST", r"/dispatches$", "repository dispatch"),
]


def is_auth(r: RecordedRequest) -> bool:
    """The App authenticating (installation token, the App's own identity), not work on a repository."""
    return r.path == "/app" or r.path.startswith("/app/")


def short_name(r: RecordedRequest) -> str:
    for method, pattern, name in NAMES:
        if r.method == method and re.search(pattern, r.path):
            page = r.query.get("page")
            name = f"{name} p{page}" if page and page != "1" else name
            return name + (" (304)" if r.status == 304 else "")
    return f"{r.method} {r.path}"


# Every request of a scenario is answered this late, so that requests made together overlap and the round trips
# on the critical path can be told apart from the requests made (bot/testing/round_trips.py).
LATENCY = 0.05
# The late GitHub each harness of `stage` is answered through, whose round trips `counted` reports.
LATE: weakref.WeakKeyDictionary[Harness, LateGitHub] = weakref.WeakKeyDictionary()


@dataclass
class Count:
    scenario: str
    requests: list[RecordedRequest]  # everything the fake answered during the scenario, in order
    trips: tuple[Trip, ...] = ()  # the same requests as the bot waited for them

    @property
    def round_trips(self) -> int:
        """Round trips on the critical path: the longest chain of requests made one after another."""
        return critical_path([t for t in self.trips if not (t.path == "/app" or t.path.startswith("/app/"))])

    @property
    def work(self) -> list[RecordedRequest]:
        """Requests after the token: everything but the App's authentication."""
        return [r for r in self.requests if not is_auth(r)]

    def method(self, method: str) -> int:
        return sum(1 for r in self.work if r.method == method)

    @property
    def total(self) -> int:
        return len(self.work)

    @property
    def writes(self) -> int:
        return sum(1 for r in self.work if r.method != "GET")

    @property
    def auth(self) -> int:
        return sum(1 for r in self.requests if is_auth(r))

    @property
    def sequence(self) -> str:
        """The requests round trip by round trip ("→" between two), sorted by name within one: requests made
        together are answered in any order, so the order they were answered in is not a figure."""
        work = [(r, t) for r, t in zip(self.requests, self.trips, strict=True) if not is_auth(r)]
        if not work:
            return "none"
        depths = chain_depths([t for _, t in work])
        waves: dict[int, list[str]] = {}
        for (r, _), depth in zip(work, depths):
            waves.setdefault(depth, []).append(short_name(r))
        return " → ".join(", ".join(sorted(waves[d])) for d in sorted(waves))


@contextlib.asynccontextmanager
async def stage(
    key: str,
    *,
    warm: bool = True,
    setup: Callable[[InMemoryGitHub], None] | None = None,
    features: Any = None,
    **settings: Any,
) -> AsyncIterator[Harness]:
    """A bot against a fresh fake GitHub holding REPO (default branch main, installation 1). Without `features`:
    every feature but the sweep gate (these scenarios measure the welcome and the autolabels)."""
    fake = InMemoryGitHub()
    fake.add_repo(REPO, default_branch="main", installation_id=1)
    fake.set_permission(REPO, "maintainer", "write")
    if setup is not None:
        setup(fake)
    late = LateGitHub(fake.handle, LATENCY)
    with respx.mock(assert_all_called=False) as router, tempfile.TemporaryDirectory() as tmp:
        router.route(host="api.github.com").mock(side_effect=late)
        h = await start_harness(Path(tmp), fake, key, router=features or router_without(*PR_WORKFLOW), **settings)
        LATE[h] = late
        try:
            if warm:  # a push to another branch: token, App identity and policy cached, nothing else done
                await h.deliver("push", fake.push_payload(REPO, ref="refs/heads/warm-up", after="0" * 40))
            fake.reset_requests()
            late.reset()
            yield h
        finally:
            await stop_harness(h)


def reset(h: Harness) -> None:
    """Count from here: what came before is the scenario's setting."""
    h.github.reset_requests()
    LATE[h].reset()


def counted(h: Harness, scenario: str) -> Count:
    """What reached the fake GitHub since the last reset, and when."""
    return Count(scenario, list(h.github.requests), tuple(LATE[h].trips.get(None, ())))


def pull(number: int, files: list[str], **kw) -> Callable[[InMemoryGitHub], None]:
    def setup(fake: InMemoryGitHub) -> None:
        fake.add_pull(REPO, number=number, user="partner", head_repo=FORK, files=files, **kw)

    return setup


def chatter(fake: InMemoryGitHub, number: int, count: int) -> None:
    for i in range(count):
        fake.add_comment(REPO, number, f"review comment {i}", user=f"reviewer{i % 5}")


async def opened(h: Harness, number: int, delivery: str | None = None) -> None:
    await h.deliver(
        "pull_request", h.github.pull_request_payload(REPO, number, "opened", sender="partner"), delivery=delivery
    )


# ---- scenarios -----------------------------------------------------------------------------------------------


async def welcome_zero_comments(key: str) -> Count:
    async with stage(key, setup=pull(2, [BENCH_ONLY])) as h:
        await opened(h, 2)
        return counted(h, "welcome, PR with 0 comments")


async def welcome_zero_comments_cold(key: str) -> Count:
    async with stage(key, warm=False, setup=pull(2, [BENCH_ONLY])) as h:
        await opened(h, 2)
        return counted(h, "welcome, PR with 0 comments, cold (first event of the process)")


async def opened_with_new_label(key: str) -> Count:
    async with stage(key, setup=pull(1, [CHANGELOG])) as h:
        await opened(h, 1)
        return counted(h, "opened: welcome + `perf-changelog` label new to the repo")


async def redelivery_same_id(key: str) -> Count:
    async with stage(key, setup=pull(1, [CHANGELOG])) as h:
        payload = h.github.pull_request_payload(REPO, 1, "opened", sender="partner")
        await h.deliver("pull_request", payload, delivery="original")
        reset(h)
        await h.deliver("pull_request", payload, delivery="original")
        return counted(h, "opened redelivered, same delivery id")


async def redelivery_new_id(key: str) -> Count:
    async with stage(key, setup=pull(1, [CHANGELOG])) as h:
        payload = h.github.pull_request_payload(REPO, 1, "opened", sender="partner")  # as GitHub redelivers it
        await h.deliver("pull_request", payload, delivery="original")
        reset(h)
        await h.deliver("pull_request", payload, delivery="redelivered")
        return counted(h, "opened redelivered, new delivery id")


async def welcome_150_comments(key: str) -> Count:
    def setup(fake: InMemoryGitHub) -> None:
        pull(2, [BENCH_ONLY])(fake)
        chatter(fake, 2, 150)

    async with stage(key, setup=setup) as h:
        await opened(h, 2)
        return counted(h, "welcome, PR with 150 comments")


async def redelivery_150_comments(key: str) -> Count:
    def setup(fake: InMemoryGitHub) -> None:
        pull(2, [BENCH_ONLY])(fake)
        chatter(fake, 2, 120)

    async with stage(key, setup=setup) as h:
        await opened(h, 2)  # the welcome is comment 121, on page 2
        chatter(h.github, 2, 29)
        reset(h)
        await opened(h, 2)
        return counted(h, "opened redelivered, 150 comments, welcome on page 2")


async def synchronize_no_change(key: str) -> Count:
    async with stage(key, setup=pull(1, [CHANGELOG])) as h:
        await opened(h, 1)
        reset(h)
        await h.deliver("pull_request", h.github.pull_request_payload(REPO, 1, "synchronize", sender="partner"))
        return counted(h, "synchronize, no label change")


async def synchronize_removes_label(key: str) -> Count:
    async with stage(key, setup=pull(1, [CHANGELOG, "configs/amd-master.yaml"])) as h:
        await opened(h, 1)
        h.github.pull_files(REPO, 1)[:] = [{"filename": CHANGELOG}]
        reset(h)
        await h.deliver("pull_request", h.github.pull_request_payload(REPO, 1, "synchronize", sender="partner"))
        return counted(h, "synchronize removing the bot's `amd` label")


async def help_reply(key: str) -> Count:
    async with stage(key, setup=pull(1, [CHANGELOG])) as h:
        asked = h.github.add_comment(REPO, 1, "/help", user="partner")
        await h.deliver("issue_comment", h.github.issue_comment_payload(REPO, 1, asked))
        return counted(h, "`/help` reply")


SCENARIOS: list[Callable[[str], Awaitable[Count]]] = [
    welcome_zero_comments,
    welcome_zero_comments_cold,
    opened_with_new_label,
    redelivery_same_id,
    redelivery_new_id,
    welcome_150_comments,
    redelivery_150_comments,
    synchronize_no_change,
    synchronize_removes_label,
    help_reply,
]


# ---- sweep-gate scenarios (every feature, as `sweepbot serve` runs them) --------------------------------------

PREFIX = f"https://github.com/{REPO}/pull/"
HISTORY = (
    b'- config-keys:\n    - dsr1-fp8-h200-sglang\n  description:\n    - "Older recipe"\n'
    b"  pr-link: " + PREFIX.encode() + b"1\n"
)
ENTRY = b'\n- config-keys:\n    - dsr1-fp8-mi355x-sglang\n  description:\n    - "New MI355X recipe"\n  pr-link: XXX\n'
TBD_ENTRY = ENTRY.replace(b"XXX", b"TBD")
PRIMARY, SECOND_PRIMARY = "full-sweep-fail-fast", "full-sweep-enabled"


def gate_pull(
    number: int,
    *,
    entry: bytes | None = ENTRY,
    fork: bool = False,
    files: tuple[str, ...] = (CHANGELOG,),
    workflows: bool = True,
) -> Callable[[InMemoryGitHub], None]:
    """The repository's sweep workflows and one PR whose changelog gains `entry` (base and head bytes by SHA),
    carrying the autolabel its files earn (applied by the bot, as on `opened`: the autolabels cost nothing here
    but their `list files`); a fork PR has its merge commit computed already. `workflows=False`: a further PR,
    the workflows are there already."""

    def setup(fake: InMemoryGitHub) -> None:
        if workflows:
            add_sweep_workflows(fake, REPO)
        pr = fake.add_pull(
            REPO,
            number=number,
            user="partner",
            title="MI355X recipe",
            head_ref=f"recipe-{number}",
            head_repo=FORK if fork else None,
            files=list(files),
        )
        fake.set_file(REPO, CHANGELOG, HISTORY, ref=pr["base"]["sha"])
        if entry is not None:
            fake.set_file(REPO, CHANGELOG, HISTORY + entry, ref=pr["head"]["sha"])
        if CHANGELOG in files:
            fake.label_issue(REPO, number, "perf-changelog", actor=fake.bot_login)
        if fork:
            fake.update_pull(REPO, number, merge_commit_sha=f"{number:040x}")

    return setup


@contextlib.asynccontextmanager
async def gate_stage(
    key: str, setup: Callable[[InMemoryGitHub], None], setup_first: Callable[[InMemoryGitHub], None] | None = None
) -> AsyncIterator[Harness]:
    """`stage` with every feature. The gate's per-process caches of changelog verdicts and head messages (keyed
    by SHA), and the stale-branch guard's, are emptied first: the fake's SHAs repeat from one scenario to the next,
    a real PR's do not. `setup_first` runs before `setup` (a repository policy, say)."""
    sweep_gate._changelog_checks.clear()
    sweep_gate._commits.clear()
    sweep_gate._key_costs.clear()  # the master configs cost per commit: read again, as by a new process
    sweep_gate._job_history.clear()
    sweep_gate._timed_runs.clear()
    pr_state.forget_guard_reads()

    def both(fake: InMemoryGitHub) -> None:
        if setup_first is not None:
            setup_first(fake)
        setup(fake)

    async with stage(key, setup=both, features=registry.router) as h:
        yield h


def labeled_payload(h: Harness, number: int, name: str, by: str) -> dict[str, Any]:
    return h.github.pull_request_payload(REPO, number, "labeled", sender=by, label=name)


async def add_label(h: Harness, number: int, name: str, *, by: str = "maintainer", delivery: str | None = None) -> None:
    h.github.label_issue(REPO, number, name, actor=by)
    await h.deliver("pull_request", labeled_payload(h, number, name, by), delivery=delivery)


async def labeled(key: str) -> Count:
    async with gate_stage(key, gate_pull(40)) as h:
        await add_label(h, 40, PRIMARY)
        return counted(h, "labeled: valid changelog append, primary label by a maintainer")


async def labeled_redelivered_new_id(key: str) -> Count:
    async with gate_stage(key, gate_pull(40)) as h:
        await add_label(h, 40, PRIMARY, delivery="original")
        reset(h)
        await h.deliver("pull_request", labeled_payload(h, 40, PRIMARY, "maintainer"), delivery="redelivered")
        return counted(h, "labeled redelivered, new delivery id")


async def synchronize_new_push(key: str) -> Count:
    async with gate_stage(key, gate_pull(40)) as h:
        await add_label(h, 40, PRIMARY)
        h.github.push_commit(REPO, 40, sha="9" * 40, message="Tune the recipe")
        h.github.set_file(REPO, CHANGELOG, HISTORY + ENTRY, ref="9" * 40)
        reset(h)
        await h.deliver("pull_request", h.github.pull_request_payload(REPO, 40, "synchronize", sender="partner"))
        return counted(h, "synchronize: new head with a valid append, sweep running")


async def two_primaries(key: str) -> Count:
    async with gate_stage(key, gate_pull(40)) as h:
        await add_label(h, 40, PRIMARY)
        reset(h)
        await add_label(h, 40, SECOND_PRIMARY)
        return counted(h, "labeled: a second primary label, sweep running")


async def fork_labeled_by_writer(key: str) -> Count:
    async with gate_stage(key, gate_pull(40, fork=True)) as h:
        await add_label(h, 40, PRIMARY)
        return counted(h, "fork PR labeled by a writer (trusted workflow)")


async def fork_labeled_by_non_writer(key: str) -> Count:
    async with gate_stage(key, gate_pull(40, fork=True)) as h:
        await add_label(h, 40, PRIMARY, by="drive-by")
        return counted(h, "fork PR labeled by a non-writer (label removed, reply)")


async def invalid_changelog(key: str) -> Count:
    async with gate_stage(key, gate_pull(40, entry=TBD_ENTRY)) as h:
        await add_label(h, 40, PRIMARY)
        return counted(h, "labeled, changelog `pr-link: TBD` (annotated check run)")


async def run_completed(key: str) -> Count:
    async with gate_stage(key, gate_pull(40)) as h:
        await add_label(h, 40, PRIMARY)
        (run,) = h.github.runs(REPO, "run-sweep.yml")
        payload = h.github.workflow_run_payload(REPO, run["id"], "completed", conclusion="success")
        reset(h)
        await h.deliver("workflow_run", payload)
        return counted(h, "`workflow_run` completed for the dispatched run")


async def opened_no_changelog(key: str) -> Count:
    async with gate_stage(key, gate_pull(40, entry=None, files=("README.md",))) as h:
        await opened(h, 40)
        return counted(h, "opened, README.md only, no sweep label")


RESULTS_SERVICE = "SemiAnalysisAI/InferenceX-app"  # the example policy's results repository


def finished_sweep(fake: InMemoryGitHub, number: int) -> dict:
    """A successful sweep the bot dispatched for PR `number`'s head, with its results artifact, in the record of
    the bot's status comment (as the gate would have left it)."""
    pr = fake.pull(REPO, number)
    fork = pr["head"]["repo"]["full_name"].lower() != REPO.lower()
    workflow = "e2e-tests.yml" if fork else "run-sweep.yml"  # a fork's sweep runs the trusted workflow on main
    dispatch_id = f"sw-{number}-{1:012x}"
    run = fake.add_run(
        REPO,
        workflow,
        head_sha=pr["head"]["sha"],
        head_branch="main" if fork else pr["head"]["ref"],
        event="workflow_dispatch",
        conclusion="success",
        inputs={"dispatch-id": dispatch_id},
        actor=fake.bot_login,
    )
    fake.add_artifact(REPO, run["id"], "results_bmk_dsr1")
    record = SweepRecord().add_run(
        RunRecord(dispatch_id, run["id"], pr["head"]["sha"], workflow, "completed", "success", run["html_url"])
    )
    fake.add_comment(
        REPO, number, f"{marker(pr_state.STATUS_PURPOSE)}\n{record.line()}\n", user=fake.bot_login, user_type="Bot"
    )
    return run


@contextlib.contextmanager
def fake_now() -> Any:
    """The bot's clock on the fake GitHub's (its runs start on 2026-01-01, their artifacts expire 90 days later)."""
    saved = pr_state.utcnow
    pr_state.utcnow = lambda: dt.datetime(2026, 1, 2, tzinfo=dt.UTC)
    try:
        yield
    finally:
        pr_state.utcnow = saved


async def use_pins_and_stages(key: str) -> Count:
    with fake_now():
        return await _use_pins_and_stages(key)


async def _use_pins_and_stages(key: str) -> Count:
    async with gate_stage(key, gate_pull(40)) as h:
        h.github.add_repo(RESULTS_SERVICE, installation_id=1)
        h.github.label_issue(REPO, 40, PRIMARY, actor="maintainer")
        run = finished_sweep(h.github, 40)
        reset(h)
        comment = h.github.add_comment(REPO, 40, f"/use {run['id']}", user="maintainer", author_association="MEMBER")
        await h.deliver("issue_comment", h.github.issue_comment_payload(REPO, 40, comment))
        return counted(h, "`/use <run>` by a maintainer: pinned, staged, replied")


# ---- the stale-branch guard: labeled -> dispatch with the guards on and off ----------------------------------

GUARDS_OFF = (
    "stale_branch:\n  submodules: 'off'\n  reverted_files: 'off'\n  changelog_coverage: 'off'\n  stale_pin: false\n"
)
SRT, SRT_REPO = "utils/srt-slurm", "acme/srt-slurm"
SRT_BASE, SRT_HEAD = "ae3d6877" + "1" * 32, "f00d" + "2" * 36  # the PR moves the submodule forward
AMD_MASTER = "inferencex-e2e/configs/amd-master.yaml"
RECIPE = "inferencex-e2e/recipes/dsr1-fp4-mi355x-sglang.sh"
GUARDED_ENTRY = ENTRY.replace(b"dsr1-fp8-mi355x-sglang", b"dsr1-fp4-mi355x-*")


def guarded_pull(number: int, *, off: bool) -> Callable[[InMemoryGitHub], None]:
    """A PR that gives every guard work and passes them all: it moves `utils/srt-slurm` forward, changes a key of
    upstream's amd-master.yaml that its changelog entry covers with a wildcard, and changes a recipe with a base
    history of four commits; `off`: the repository's policy turns the guards off."""
    base_setup = gate_pull(number, entry=GUARDED_ENTRY, files=(CHANGELOG, AMD_MASTER, RECIPE))

    def setup(fake: InMemoryGitHub) -> None:
        if off:
            fake.set_file(REPO, ".github/sweepbot.yml", GUARDS_OFF)
        base_setup(fake)
        pr = fake.pull(REPO, number)
        base, head = pr["base"]["sha"], pr["head"]["sha"]
        fake.pull_files(REPO, number).append(
            {
                "filename": SRT,
                "status": "modified",
                "sha": SRT_HEAD,
                "additions": 1,
                "deletions": 1,
                "changes": 2,
                "patch": f"@@ -1 +1 @@\n-Subproject commit {SRT_BASE}\n+Subproject commit {SRT_HEAD}",
            }
        )
        fake.add_repo(SRT_REPO, installation_id=None)
        fake.add_history(SRT_REPO, [SRT_BASE, SRT_HEAD])
        fake.set_file(
            REPO,
            ".gitmodules",
            f'[submodule "{SRT}"]\n\tpath = {SRT}\n\turl = https://github.com/{SRT_REPO}.git\n',
            ref=base,
        )
        fake.set_submodule(REPO, SRT, SRT_BASE, ref=base)
        amd = (ROOT / "tests" / "data" / "inferencex" / "amd-master.yaml").read_text(encoding="utf-8")
        fake.set_file(REPO, AMD_MASTER, amd, ref=base)
        fake.set_file(REPO, AMD_MASTER, amd.replace("v0.5.12-rocm700-mi35x", "v0.5.13-rocm700-mi35x", 1), ref=head)
        fake.set_path_history(REPO, RECIPE, [(f"{n:x}" * 40, f"tp: {n}\n") for n in range(4, 0, -1)])

    return setup


async def labeled_guards_off(key: str) -> Count:
    async with gate_stage(
        key, gate_pull(40), setup_first=lambda fake: fake.set_file(REPO, ".github/sweepbot.yml", GUARDS_OFF)
    ) as h:
        await add_label(h, 40, PRIMARY)
        return counted(h, "labeled (as above), the guards off")


async def labeled_guarded(key: str) -> Count:
    async with gate_stage(key, guarded_pull(40, off=False)) as h:
        await add_label(h, 40, PRIMARY)
        return counted(h, "labeled: a submodule moved forward, a master-config key and a recipe changed; guards on")


async def labeled_guarded_off(key: str) -> Count:
    async with gate_stage(key, guarded_pull(40, off=True)) as h:
        await add_label(h, 40, PRIMARY)
        return counted(h, "labeled: the same PR, guards off")


async def modifier_guarded(key: str, *, off: bool) -> Count:
    async with gate_stage(key, guarded_pull(40, off=off)) as h:
        await add_label(h, 40, PRIMARY)
        reset(h)
        await add_label(h, 40, "all-evals")
        return counted(h, f"then a modifier added (the same commits evaluated again); guards {'off' if off else 'on'}")


async def modifier_guarded_on(key: str) -> Count:
    return await modifier_guarded(key, off=False)


async def modifier_guarded_off(key: str) -> Count:
    return await modifier_guarded(key, off=True)


GUARD_SCENARIOS: list[Callable[[str], Awaitable[Count]]] = [
    labeled_guards_off,
    labeled_guarded,
    labeled_guarded_off,
    modifier_guarded_on,
    modifier_guarded_off,
]


async def merge_command(key: str, *, fork: bool = False, base_moved: bool = False) -> Count:
    """`/merge` of a pinned, signed-off PR, from the command to GitHub showing it merged (the notice and the ingest
    request included: they go out in the same delivery)."""
    with fake_now():
        async with gate_stage(key, gate_pull(40, fork=fork)) as h:
            fake = h.github
            fake.add_repo(RESULTS_SERVICE, installation_id=1)
            fake.label_issue(REPO, 40, PRIMARY, actor="maintainer")
            pr = fake.pull(REPO, 40)
            fake.set_file(REPO, CHANGELOG, HISTORY, ref="main")
            run = finished_sweep(fake, 40)
            pin = fake.add_comment(REPO, 40, f"/use {run['id']}", user="maintainer", author_association="MEMBER")
            await h.deliver("issue_comment", fake.issue_comment_payload(REPO, 40, pin))
            fake.add_check_run(REPO, "signoff", pr["head"]["sha"], "success")
            if base_moved:  # another PR's entry landed on main after this PR branched: the tail is resolved
                fake.set_branch(REPO, "main", "b" * 40)
                fake.set_file(
                    REPO,
                    CHANGELOG,
                    HISTORY + TBD_ENTRY.replace(b"TBD", PREFIX.encode() + b"7").replace(b"New", b"Other"),
                    ref="b" * 40,
                )
                fake.set_merge_base(REPO, pr["head"]["sha"], pr["base"]["sha"])
            reset(h)
            comment = fake.add_comment(REPO, 40, "/merge", user="maintainer", author_association="MEMBER")
            await h.deliver("issue_comment", fake.issue_comment_payload(REPO, 40, comment))
            assert fake.pull(REPO, 40)["merged"], "the bench's PR was not merged"
            way = "a fork: merge commit, fast-forward" if fork else "same repository: merge API"
            tail = ", the changelog's tail resolved on the branch" if base_moved else ""
            return counted(h, f"`/merge` by a maintainer ({way}{tail})")


async def merge_same_repo(key: str) -> Count:
    return await merge_command(key)


async def merge_tail_resolved(key: str) -> Count:
    return await merge_command(key, base_moved=True)


async def merge_fork(key: str) -> Count:
    return await merge_command(key, fork=True)


MERGE_SCENARIOS: list[Callable[[str], Awaitable[Count]]] = [merge_same_repo, merge_tail_resolved, merge_fork]
MERGE_LATENCY = 0.150  # seconds a request takes, for the merge's wall time: round trips times this

GATE_SCENARIOS: list[Callable[[str], Awaitable[Count]]] = [
    labeled,
    labeled_redelivered_new_id,
    synchronize_new_push,
    two_primaries,
    fork_labeled_by_writer,
    fork_labeled_by_non_writer,
    invalid_changelog,
    run_completed,
    opened_no_changelog,
    use_pins_and_stages,
]


def table(counts: list[Count]) -> str:
    lines = [
        "| Scenario | Requests after the token | Round trips (critical path) | GET | POST | PATCH | DELETE | Writes "
        "| Requests, round trip by round trip |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for c in counts:
        lines.append(
            f"| {c.scenario} | {c.total} | {c.round_trips} | {c.method('GET')} | {c.method('POST')} "
            f"| {c.method('PATCH')} | {c.method('DELETE')} | {c.writes} | {c.sequence} |"
        )
    return "\n".join(lines)


async def run(key: str, scenarios: list[Callable[[str], Awaitable[Count]]] = SCENARIOS) -> list[Count]:
    return [await scenario(key) for scenario in scenarios]


def main() -> None:
    import logging

    from bot.app.sandbox import _generate_key

    logging.disable(logging.CRITICAL)
    key = _generate_key()
    counts = asyncio.run(run(key))
    print("GitHub requests per welcome/autolabel scenario (every feature but the sweep gate):")
    print()
    print(table(counts))
    cold = next(c for c in counts if c.scenario.startswith("welcome, PR with 0 comments, cold"))
    print()
    print(
        f"Warm scenarios make no authentication request. A cold process adds {cold.auth} App requests "
        "(installation token, `GET /app` for the bot's login) and one read of `.github/sweepbot.yml` "
        "(cached for an hour, refreshed by a push that changes it)."
    )
    print()
    print("GitHub requests per sweep-gate scenario (every feature, warm process):")
    print()
    print(table(asyncio.run(run(key, GATE_SCENARIOS))))
    print()
    print("The stale-branch guard: `labeled` -> dispatch with the guards on and off (every feature, warm process):")
    print()
    print(table(asyncio.run(run(key, GUARD_SCENARIOS))))
    print()
    print(
        "Each gate scenario starts with the PR new to the process (the gate's caches of changelog verdicts and "
        "head commit messages emptied); the labels, pushes and runs before the counted delivery are not counted."
    )
    print()
    print(f"`/merge` to merged, every request {MERGE_LATENCY * 1000:.0f} ms late (wall time = round trips x that):")
    print()
    merges = asyncio.run(run(key, MERGE_SCENARIOS))
    print(table(merges))
    print()
    for c in merges:
        print(f"- {c.scenario}: {c.round_trips} round trips, about {c.round_trips * MERGE_LATENCY:.2f} s")


if __name__ == "__main__":
    main()
