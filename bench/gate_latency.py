"""Sweep gate latency: a `labeled` delivery to the sweep's dispatch, on a warm process, 200 PRs unpaced.

A real bot (journal on disk, workers on their own thread and loop as `sweepbot serve` runs them, webhook server:
`tests/harness.py`) against the in-memory fake GitHub behind respx, all in this one process. 200 same-repository
PRs each append a valid entry (`pr-link: XXX`) to `inferencex-e2e/perf-changelog.yaml` (base: a one-entry
history). The process is warmed by one untimed delivery: a label that is not a sweep label on one more such PR,
so the installation token, the App's identity, the repository's policy and the gate's compiled templates are
cached and no run is started. Then `maintainer` (write permission) applies `full-sweep-fail-fast` to all 200 and
their 200 signed `labeled` deliveries are posted back to back by `--senders` concurrent clients, with no pause;
the bot's writes are unpaced (`writes_per_minute=0`), the workers at the bot's default concurrency.

Per PR, from the moment its webhook POST is sent (`time.perf_counter()` just before it) to the moment the fake
GitHub receives (a) its `POST .../actions/workflows/run-sweep.yml/dispatches` and (b) the write of its status
comment. Also: the part of the dispatch time spent in a worker (the delivery's first GitHub request -> its
dispatch; the rest is intake, the journal and waiting in the queue behind other PRs), dispatches per second, and
the GitHub requests each `labeled` delivery made, attributed by the delivery id in the bot's log context. Median,
p99 (nearest rank) and max come from this one run. It checks that exactly one run exists per PR, from one
dispatch POST, and exits non-zero otherwise.

By default the PRs are new to the bot: the labeled delivery reads the PR, its files, the changelog at the merge
base and the head, and creates the status comment. `--opened-first` first delivers and handles (untimed) every
PR's `opened`, as in production: the welcome, the `perf-changelog` label, a status comment and check run are then
in place, the changelog check is cached in the process, and the labeled delivery edits the status comment.

`settle_seconds=0`: the bot's default holds every label event 3 s (the settle window, so a burst of label
changes ends in one decision); with the default every figure here is 3 s longer. These figures measure the
processing. Everything runs in one process on one machine: the fake GitHub answers without a network but shares
the CPU (and the GIL) with the bot (the time spent inside it is printed); round trips to api.github.com (tens to
hundreds of ms each, several in sequence per PR) are not in these figures.

`--github-latency MS` answers every fake GitHub request MS ms late (an asyncio sleep in the respx side effect, so
the bot's requests wait as they would on api.github.com) and prints the round trips on each delivery's critical
path: the longest chain of requests made one after another (`bot/testing/round_trips.py`), up to the dispatch and
up to the status comment. `--one-at-a-time` posts the next PR's label only once the previous delivery is handled
(no queue: the figures are one delivery's own), `--fork` makes every PR a fork's (the writer's label approves it).

`--in-flight N` sets the bot's budget of GitHub requests under way at once (`SWEEPBOT_GITHUB_IN_FLIGHT`). `--live`
runs the bot as live `sweepbot serve` does, with its webhook intake and its workers in processes of their own,
against the fake GitHub in a process of its own (`bot.testing.server`): this process only sends, so the bot's CPU
is not shared with the fake's or the sender's, as on a real deployment; the times come from the fake's log of
requests, and no round trips are counted. It also prints the CPU each process used from the first POST until the
backlog drained, per PR (intake, workers, fake GitHub; read from /proc, so Linux only). `--opened-first` works
with it too.

    .venv/bin/python bench/gate_latency.py [--prs 200] [--workers 64] [--in-flight 90] [--senders 20]
        [--opened-first] [--one-loop]
        [--github-latency 150] [--one-at-a-time] [--fork] [--live]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import respx

ROOT = Path(__file__).resolve().parent.parent
for _path in (str(ROOT), str(ROOT / "tests")):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from harness import REPO, Harness, start_harness, stop_harness  # noqa: E402

from bot.app.sandbox import add_sweep_workflows  # noqa: E402
from bot.core.config import Settings  # noqa: E402
from bot.effects.comments import purpose_of  # noqa: E402
from bot.telemetry import logs  # noqa: E402
from bot.testing import InMemoryGitHub  # noqa: E402
from bot.testing.round_trips import LateGitHub, critical_path  # noqa: E402
from bot.testing.server import FakeGitHubProcess  # noqa: E402

CHANGELOG = "inferencex-e2e/perf-changelog.yaml"
LABEL = "full-sweep-fail-fast"
WARM_UP_LABEL = "documentation"  # not a sweep label: the gate runs, nothing is dispatched
MAINTAINER = "maintainer"
PREFIX = "https://github.com/SemiAnalysisAI/InferenceX/pull/"
HISTORY = f"""\
- config-keys:
    - dsr1-fp8-h200-sglang
  description:
    - "Update image"
  pr-link: {PREFIX}1033
"""
STATUS_PURPOSE = "sweep-status"
LIVE_LOG = subprocess.DEVNULL  # --live: where the bot's log goes (BENCH_LOG_LEVEL=WARNING shows it on stderr)


def appended_entry(number: int) -> str:
    return (
        "- config-keys:\n    - dsr1-fp8-mi355x-sglang\n  description:\n"
        f'    - "Tune MI355X SGLang, bench PR {number}"\n  pr-link: XXX\n'
    )


def labeled_id(number: int) -> str:
    return f"labeled-{number}"


@dataclass
class Clock:
    """What the fake GitHub saw, stamped with perf_counter as each request reached it."""

    sent: dict[int, float] = field(default_factory=dict)  # PR -> its labeled webhook POST was sent
    dispatched: dict[int, list[float]] = field(default_factory=lambda: collections.defaultdict(list))
    status_written: dict[int, list[float]] = field(default_factory=lambda: collections.defaultdict(list))
    first_request: dict[int, float] = field(default_factory=dict)  # PR -> a worker's first request for it
    in_fake: float = 0.0  # seconds spent inside the fake's handler during the timed phase
    requests: collections.Counter = field(default_factory=collections.Counter)  # labeled delivery -> requests
    writes: collections.Counter = field(default_factory=collections.Counter)
    failed: list[str] = field(default_factory=list)  # requests of a labeled delivery answered >= 400
    unattributed: int = 0  # requests during the timed phase outside a labeled delivery's context
    live_requests: int = 0  # --live: every request the fake answered in the timed phase
    timing: bool = False


def timed_handle(fake: InMemoryGitHub, clock: Clock):
    """`fake.handle`, noting when a dispatch or a status comment write arrives and which delivery asked."""

    def handle(request: httpx.Request) -> httpx.Response:
        arrived = time.perf_counter()
        response = fake.handle(request)
        if not clock.timing:
            return response
        clock.in_fake += time.perf_counter() - arrived
        delivery = logs.CONTEXT.get().get("delivery") or ""
        if not delivery.startswith("labeled-"):
            clock.unattributed += 1
            return response
        number = int(delivery.removeprefix("labeled-"))
        clock.requests[number] += 1
        clock.first_request.setdefault(number, arrived)
        method, path = request.method.upper(), request.url.path
        if method != "GET":
            clock.writes[number] += 1
        if response.status_code >= 400:
            clock.failed.append(f"PR {number}: {method} {path} -> {response.status_code}")
            return response
        if method == "POST" and path.endswith("/dispatches"):
            inputs = json.loads(request.content or b"{}").get("inputs") or {}
            clock.dispatched[int(inputs.get("pr-number", -1))].append(arrived)
        elif (method == "POST" and path.endswith("/comments")) or (method == "PATCH" and "/issues/comments/" in path):
            if purpose_of(json.loads(request.content or b"{}").get("body")) == STATUS_PURPOSE:
                clock.status_written[number].append(arrived)
        return response

    return handle


def delivery_of_request() -> str | None:
    return logs.CONTEXT.get().get("delivery")


def seed(fake: InMemoryGitHub | FakeGitHubProcess, prs: int, fork: bool = False) -> None:
    fake.add_repo(REPO, default_branch="main", installation_id=1)
    fake.set_rate_limit(1_000_000)  # ~20 requests a PR; GitHub's 5,000 an hour is not the subject
    fake.set_permission(REPO, MAINTAINER, "write")
    add_sweep_workflows(fake, REPO)
    for number in range(1, prs + 1):
        add_changelog_pull(fake, number, fork)


def add_changelog_pull(fake: InMemoryGitHub | FakeGitHubProcess, number: int, fork: bool = False) -> None:
    """A PR appending one valid entry to the changelog (base: a one-entry history); a fork's has its merge commit
    computed already."""
    pull = fake.add_pull(
        REPO,
        number=number,
        title=f"Tune MI355X recipe {number}",
        user=f"dev{number}",
        head_ref=f"bench-{number}",
        files=[CHANGELOG],
        head_repo=f"dev{number}/InferenceX" if fork else None,
    )
    if fork:
        fake.update_pull(REPO, number, merge_commit_sha=f"{number:040x}")
    fake.set_file(REPO, CHANGELOG, HISTORY, ref=pull["base"]["sha"])
    fake.set_file(REPO, CHANGELOG, HISTORY + "\n" + appended_entry(number), ref=pull["head"]["sha"])


def quantiles(values: list[float]) -> tuple[float, float, float]:
    """(median, p99, max) in ms; p99 is the value 99% of the sorted run are at or below (nearest rank)."""
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, max(0, -(-len(ordered) * 99 // 100) - 1))]
    return statistics.median(ordered) * 1000, p99 * 1000, ordered[-1] * 1000


async def post_all(
    h: Harness, payloads: dict[int, dict[str, Any]], senders: int, clock: Clock, one_at_a_time: bool = False
) -> list[int]:
    """Every `labeled` delivery, back to back from `senders` clients (or each once the one before is handled);
    the time before each POST is its start."""
    queue = collections.deque(sorted(payloads))
    statuses: list[int] = []
    if one_at_a_time:
        for number in sorted(payloads):
            clock.sent[number] = time.perf_counter()
            resp = await h.post("pull_request", payloads[number], delivery=labeled_id(number))
            await resp.release()
            statuses.append(resp.status)
            await h.bot.wait_idle(60)
        return statuses

    async def sender() -> None:
        while queue:
            number = queue.popleft()
            clock.sent[number] = time.perf_counter()
            resp = await h.post("pull_request", payloads[number], delivery=labeled_id(number))
            await resp.release()
            statuses.append(resp.status)

    await asyncio.gather(*(sender() for _ in range(senders)))
    return statuses


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


async def run(
    key: str,
    prs: int = 200,
    workers: int = Settings.workers,
    senders: int = 20,
    *,
    worker_thread: bool = True,
    opened_first: bool = False,
    latency: float = 0.0,
    one_at_a_time: bool = False,
    fork: bool = False,
    in_flight: int = Settings.github_in_flight,
) -> dict[str, Any]:
    fake = InMemoryGitHub()
    seed(fake, prs, fork)
    warm_up = prs + 1
    add_changelog_pull(fake, warm_up, fork)
    fake.label_issue(REPO, warm_up, WARM_UP_LABEL, actor=MAINTAINER)
    clock = Clock()
    with respx.mock(assert_all_called=False) as router, tempfile.TemporaryDirectory() as tmp:
        late = LateGitHub(timed_handle(fake, clock), latency, delivery_of_request)
        router.route(host="api.github.com").mock(side_effect=late if latency > 0 else timed_handle(fake, clock))
        h = await start_harness(
            Path(tmp),
            fake,
            key,
            settle_seconds=0.0,
            writes_per_minute=0,
            workers=workers,
            worker_thread=worker_thread,
            github_in_flight=in_flight,
        )
        try:
            # Untimed warm-up, one delivery: a label that is not a sweep label on one more PR. The gate reads that PR
            # and its changelog and writes its status comment and check run, but starts nothing; the installation
            # token, the App's identity (GET /app), the repository's policy and the compiled templates are cached.
            await h.deliver(
                "pull_request",
                fake.pull_request_payload(REPO, warm_up, "labeled", sender=MAINTAINER, label=WARM_UP_LABEL),
                delivery="warm-up",
            )
            assert not fake.runs(REPO), "the warm-up's label started a sweep"
            if opened_first:  # untimed: every PR opened and handled (welcome, label, status comment, check run)
                for number in range(1, prs + 1):
                    resp = await h.post(
                        "pull_request",
                        fake.pull_request_payload(REPO, number, "opened", sender=f"dev{number}"),
                        delivery=f"opened-{number}",
                    )
                    await resp.release()
                await h.bot.wait_idle(300)
                assert not fake.runs(REPO), "a PR without a sweep label was dispatched on `opened`"
            payloads = {}
            for number in range(1, prs + 1):
                fake.label_issue(REPO, number, LABEL, actor=MAINTAINER)
                payloads[number] = fake.pull_request_payload(REPO, number, "labeled", sender=MAINTAINER, label=LABEL)
            fake.reset_requests()
            late.reset()
            clock.timing = True
            started = time.perf_counter()
            statuses = await post_all(h, payloads, senders, clock, one_at_a_time)
            posted = time.perf_counter() - started
            await h.bot.wait_idle(300)
            clock.timing = False
            rows = [await h.journal_row(labeled_id(n)) for n in range(1, prs + 1)]
            health = await h.bot.health()
        finally:
            await stop_harness(h)
    return {
        "fake": fake,
        "clock": clock,
        "statuses": collections.Counter(statuses),
        "posted_s": posted,
        "started": started,
        "journal": collections.Counter(r.status if r else "missing" for r in rows),
        "health": health,
        "prs": prs,
        "workers": workers,
        "in_flight": in_flight,
        "senders": senders,
        "worker_thread": worker_thread,
        "opened_first": opened_first,
        "latency": latency,
        "trips": dict(late.trips),
        "one_at_a_time": one_at_a_time,
        "fork": fork,
    }


def cpu_seconds(pid: int) -> float:
    """User and system CPU a process has used (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def cpu_of(processes: dict[str, list[int]]) -> dict[str, float]:
    """Name -> CPU seconds used so far by its processes."""
    return {name: sum(cpu_seconds(pid) for pid in pids) for name, pids in processes.items()}


def run_live(
    key: str,
    prs: int,
    workers: int,
    senders: int,
    *,
    latency: float,
    one_at_a_time: bool,
    fork: bool,
    in_flight: int,
    fake_niceness: int = 0,
    opened_first: bool = False,
) -> dict[str, Any]:
    """`--live`: as `sweepbot serve` runs for real. The bot in processes of its own (the webhook intake, and its
    workers in a process of their own), the fake GitHub in another (`bot.testing.server`, every request answered
    `latency` late), this one only sends. Times come from the fake's log of requests (stamped as each arrives)."""
    import sqlite3

    import aiohttp
    from harness import SECRET, free_port, process_health, start_server_process

    from bench.drain import fake_pid
    from bench.slow_github import drained as drained_since
    from bot.app.webhook_signature import sign

    def drained(port: int) -> None:
        drained_since(port, time.perf_counter())

    clock = Clock()
    log = None if os.environ.get("BENCH_LOG_LEVEL") else LIVE_LOG  # None: the bot's stderr is this one's
    with tempfile.TemporaryDirectory() as tmp, FakeGitHubProcess() as fake:
        if fake_niceness:
            os.setpriority(os.PRIO_PROCESS, fake_pid(fake), fake_niceness)
        seed(fake, prs, fork)  # the same calls, made in the fake's process
        warm_up = prs + 1
        add_changelog_pull(fake, warm_up, fork)
        fake.label_issue(REPO, warm_up, WARM_UP_LABEL, actor=MAINTAINER)
        fake.set_latency(None, r"^/", latency)
        port = free_port()
        env = {
            "APP_ID": "1",
            "PRIVATE_KEY": key,
            "WEBHOOK_SECRET": SECRET,
            "GITHUB_API_URL": fake.url,
            "SWEEPBOT_DB": str(Path(tmp) / "journal.db"),
            "SWEEPBOT_WORKERS": str(workers),
            "SWEEPBOT_WRITES_PER_MINUTE": "0",
            "SWEEPBOT_SETTLE_SECONDS": "0",
            "SWEEPBOT_GITHUB_IN_FLIGHT": str(in_flight),
            "LOG_LEVEL": os.environ.get("BENCH_LOG_LEVEL", "ERROR"),
        }
        proc = start_server_process(port, env, cwd=tmp, stdout=subprocess.DEVNULL, stderr=log)
        url = f"http://127.0.0.1:{port}/webhook"
        statuses: collections.Counter = collections.Counter()

        async def post(session: aiohttp.ClientSession, delivery: str, payload: dict[str, Any]) -> int:
            body = json.dumps(payload).encode()
            headers = {
                "Content-Type": "application/json",
                "X-GitHub-Event": "pull_request",
                "X-GitHub-Delivery": delivery,
                "X-Hub-Signature-256": sign(body, SECRET),
            }
            async with session.post(url, data=body, headers=headers) as resp:
                await resp.read()
                return resp.status

        async def send_all(payloads: dict[int, dict[str, Any]]) -> None:
            queue = collections.deque(sorted(payloads))
            async with aiohttp.ClientSession() as session:

                async def sender() -> None:
                    while queue:
                        number = queue.popleft()
                        clock.sent[number] = time.time()
                        statuses[await post(session, labeled_id(number), payloads[number])] += 1
                        if one_at_a_time:
                            await asyncio.to_thread(drained, port)

                await asyncio.gather(*(sender() for _ in range(1 if one_at_a_time else senders)))

        async def warm() -> None:
            async with aiohttp.ClientSession() as session:
                await post(
                    session,
                    "warm-up",
                    fake.pull_request_payload(REPO, warm_up, "labeled", sender=MAINTAINER, label=WARM_UP_LABEL),
                )

        async def open_all() -> None:
            async with aiohttp.ClientSession() as session:
                for number in range(1, prs + 1):
                    await post(
                        session,
                        f"opened-{number}",
                        fake.pull_request_payload(REPO, number, "opened", sender=f"dev{number}"),
                    )

        try:
            asyncio.run(warm())
            drained(port)
            assert not fake.runs(REPO), "the warm-up's label started a sweep"
            if opened_first:  # untimed, as in the in-process run
                asyncio.run(open_all())
                drained(port)
                assert not fake.runs(REPO), "a PR without a sweep label was dispatched on `opened`"
            payloads = {}
            for number in range(1, prs + 1):
                fake.label_issue(REPO, number, LABEL, actor=MAINTAINER)
                payloads[number] = fake.pull_request_payload(REPO, number, "labeled", sender=MAINTAINER, label=LABEL)
            since = len(fake.requests())
            processes = {"intake": [proc.pid], "workers": children(proc.pid), "fake GitHub": [fake_pid(fake)]}
            cpu_before = cpu_of(processes)
            started = time.time()
            asyncio.run(send_all(payloads))
            posted = time.time() - started
            drained(port)
            cpu = {name: used - cpu_before[name] for name, used in cpu_of(processes).items()}
            health = process_health(port)
            made = fake.requests(since)
            runs = fake.runs(REPO)
        finally:
            proc.terminate()
            proc.wait(60)
        with sqlite3.connect(Path(tmp) / "journal.db") as db:
            journal = collections.Counter(
                dict(
                    db.execute(
                        "SELECT status, count(*) FROM deliveries WHERE id LIKE 'labeled-%' GROUP BY status"
                    ).fetchall()
                )
            )
    for r in made:
        on_pr = pr_of_path(r.path)
        if on_pr is not None:
            clock.first_request.setdefault(on_pr, r.at)
        if r.method == "POST" and r.path.endswith("/dispatches"):
            clock.dispatched[int(((r.json or {}).get("inputs") or {}).get("pr-number", -1))].append(r.at)
        elif r.method == "POST" and r.path.endswith("/comments") and on_pr is not None:
            if purpose_of((r.json or {}).get("body")) == STATUS_PURPOSE:
                clock.status_written[on_pr].append(r.at)
        if r.status >= 400:
            clock.failed.append(f"{r.method} {r.path} -> {r.status}")
    clock.live_requests = len(made)
    return {
        "fake": None,
        "runs": runs,
        "fake_niceness": fake_niceness,
        "clock": clock,
        "statuses": statuses,
        "posted_s": posted,
        "started": started,
        "journal": journal,
        "health": health,
        "prs": prs,
        "workers": workers,
        "in_flight": in_flight,
        "senders": senders,
        "worker_thread": True,
        "opened_first": opened_first,
        "latency": latency,
        "trips": {},
        "one_at_a_time": one_at_a_time,
        "fork": fork,
        "live": True,
        "cpu": cpu,
    }


def pr_of_path(path: str) -> int | None:
    """The PR a request names in its path (`/pulls/N…`, `/issues/N…`); None for the others (compare, contents)."""
    parts = path.split("/")
    for i, part in enumerate(parts[:-1]):
        if part in ("pulls", "issues") and parts[i + 1].isdigit():
            return int(parts[i + 1])
    return None


def report(result: dict[str, Any], warnings: list[logging.LogRecord]) -> list[str]:
    fake: InMemoryGitHub = result["fake"]
    clock: Clock = result["clock"]
    prs, numbers = result["prs"], range(1, result["prs"] + 1)
    runs = result["runs"] if result.get("live") else fake.runs(REPO)
    per_pr_runs = collections.Counter(str((r.get("inputs") or {}).get("pr-number")) for r in runs)
    doubled = sorted(n for n, times in clock.dispatched.items() if len(times) > 1)
    missing = sorted(set(numbers) - set(clock.dispatched))
    dispatch = [clock.dispatched[n][0] - clock.sent[n] for n in numbers if n in clock.dispatched]
    service = [clock.dispatched[n][0] - clock.first_request[n] for n in numbers if n in clock.dispatched]
    status = [clock.status_written[n][-1] - clock.sent[n] for n in numbers if n in clock.status_written]
    last_dispatch = max((t[0] for t in clock.dispatched.values()), default=result["started"])
    span = last_dispatch - result["started"]
    requests = [clock.requests[n] for n in numbers]
    writes = [clock.writes[n] for n in numbers]
    where = "on their own thread and loop" if result["worker_thread"] else "on the server's loop"
    if result.get("live"):
        where = "in a process of their own beside the intake's (live `sweepbot serve`)"
    state = (
        "each PR opened and handled first (status comment edited, changelog check cached)"
        if result["opened_first"]
        else "PRs the bot has not seen (status comment created)"
    )
    warm = "warm, PRs opened first" if result["opened_first"] else "warm"
    kind = "fork" if result["fork"] else "same-repository"
    pace = "one at a time (each once the one before is handled)" if result["one_at_a_time"] else "unpaced"
    niceness = f" at niceness {result['fake_niceness']}" if result.get("fake_niceness") else ""
    lines = [
        f"sweep gate latency: {prs} {kind} PRs {pace}, {state}; {result['workers']} workers {where}, "
        f"at most {result['in_flight']} GitHub requests under way at once, "
        f"{result['senders']} senders, writes unpaced, settle_seconds=0, "
        f"fake GitHub {'in a process of its own' if result.get('live') else 'in-process'}"
        f"{niceness}, "
        f"every request answered {result['latency'] * 1000:g} ms late, {os.cpu_count()} cores"
    ]
    if dispatch:
        med, p99, mx = quantiles(dispatch)
        lines.append(
            f"labeled -> dispatch, {warm}, {prs} PRs {pace}: median {med:.0f} ms, p99 {p99:.0f} ms, max {mx:.0f} ms"
        )
    if status:
        med, p99, mx = quantiles(status)
        lines.append(
            f"labeled -> status comment written, {warm}, {prs} PRs {pace}: median {med:.0f} ms, "
            f"p99 {p99:.0f} ms, max {mx:.0f} ms"
        )
    if service:
        med, p99, mx = quantiles(service)
        lines.append(
            f"of labeled -> dispatch, in a worker (its first GitHub request -> dispatch): median "
            f"{med:.0f} ms, p99 {p99:.0f} ms, max {mx:.0f} ms; the rest: intake, journal, queue"
        )
    if result["latency"] > 0 and not result.get("live"):  # the fake in its own process notes no round trips
        latency_ms = result["latency"] * 1000
        trips = [result["trips"].get(labeled_id(n), []) for n in numbers]
        to_dispatch = [
            critical_path(t, lambda trip: trip.method == "POST" and trip.path.endswith("/dispatches")) for t in trips
        ]
        whole = [critical_path(t) for t in trips]
        for name, values in (("to the dispatch", to_dispatch), ("whole delivery", whole)):
            med, p99, mx = quantiles([v / 1000 for v in values])
            lines.append(
                f"round trips on the critical path, {name} (every request answered {latency_ms:g} ms "
                f"late): median {med:g}, p99 {p99:g}, max {mx:g}"
            )
    inside = "" if result.get("live") else f"; {clock.in_fake:.2f} s of CPU inside the fake GitHub"
    lines.append(
        f"throughput: {len(dispatch)} dispatches in {span:.2f} s from the first POST "
        f"({len(dispatch) / span if span > 0 else 0:.0f}/s); all {prs} deliveries posted in "
        f"{result['posted_s']:.2f} s{inside}"
    )
    if result.get("live"):
        lines.append(f"GitHub requests: {clock.live_requests} for {prs} PRs ({clock.live_requests / prs:.1f} a PR)")
        if result["one_at_a_time"]:  # between PRs this bench asks /healthz every 20 ms, which costs both processes
            lines.append("CPU per process: not shown one at a time (the bench's /healthz polls would count)")
        else:
            lines.append(
                "CPU from the first POST until drained, a PR: "
                + ", ".join(f"{name} {seconds * 1000 / prs:.1f} ms" for name, seconds in result["cpu"].items())
            )
    else:
        lines.append(
            f"GitHub requests per labeled PR: median {statistics.median(requests):g} "
            f"(writes {statistics.median(writes):g}), min {min(requests)}, max {max(requests)}; "
            f"outside a labeled delivery: {clock.unattributed}"
        )
    lines.append(
        f"runs: {len(runs)} for {prs} PRs ({sum(1 for n in numbers if per_pr_runs[str(n)] == 1)} PRs "
        f"with exactly one); dispatch POSTs doubled: {len(doubled)}, missing: {len(missing)}"
    )
    lines.append(
        "settle_seconds=0 here: the default 3 s label settle window adds 3 s to every figure above; "
        "these figures measure the processing."
    )
    lines.append(
        f"acks: {dict(result['statuses'])}; journal: {dict(result['journal'])}; health failed="
        f"{result['health'].get('failed')} retrying={result['health'].get('retrying')}; "
        f"failed requests: {len(clock.failed)}; bot warnings/errors logged: {len(warnings)}"
    )
    lines += [f"  failed request: {problem}" for problem in clock.failed[:5]]
    lines += [f"  log: {r.levelname} {r.getMessage()} {getattr(r, 'fields', '')}"[:400] for r in warnings[:5]]
    if doubled:
        lines.append(f"  dispatched twice: PRs {doubled[:20]}")
    if missing:
        lines.append(f"  no dispatch: PRs {missing[:20]}")
    return lines


def problems(result: dict[str, Any]) -> list[str]:
    """What must hold whatever the timing: exactly one run per PR, each from one dispatch POST."""
    fake: InMemoryGitHub = result["fake"]
    clock: Clock = result["clock"]
    prs, numbers = result["prs"], range(1, result["prs"] + 1)
    runs = result["runs"] if result.get("live") else fake.runs(REPO)
    per_pr = collections.Counter(str((r.get("inputs") or {}).get("pr-number")) for r in runs)
    found = []
    if len(runs) != prs:
        found.append(f"{len(runs)} runs for {prs} PRs")
    if any(per_pr[str(n)] != 1 for n in numbers):
        found.append(f"PRs without exactly one run: {[n for n in numbers if per_pr[str(n)] != 1][:20]}")
    if any(len(clock.dispatched.get(n, ())) != 1 for n in numbers):
        found.append(
            "PRs without exactly one dispatch POST: "
            f"{[n for n in numbers if len(clock.dispatched.get(n, ())) != 1][:20]}"
        )
    if set(result["journal"]) != {"done"}:
        found.append(f"labeled deliveries not done: {dict(result['journal'])}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prs", type=int, default=200, help="PRs labeled, one delivery each (default 200)")
    parser.add_argument(
        "--workers",
        type=int,
        default=Settings.workers,
        help=f"worker concurrency (default: the bot's, {Settings.workers})",
    )
    parser.add_argument("--senders", type=int, default=20, help="concurrent webhook senders (default 20)")
    parser.add_argument(
        "--in-flight",
        type=int,
        default=Settings.github_in_flight,
        help=f"GitHub requests under way at once (default: the bot's, {Settings.github_in_flight})",
    )
    parser.add_argument(
        "--opened-first",
        action="store_true",
        help="deliver and handle every PR's `opened` first (untimed), as in production",
    )
    parser.add_argument(
        "--one-loop",
        action="store_true",
        help="workers on the server's event loop (the test harness's way), not their own thread",
    )
    parser.add_argument(
        "--github-latency",
        type=float,
        default=0.0,
        metavar="MS",
        help="answer every fake GitHub request MS ms late and count the round trips (default 0)",
    )
    parser.add_argument(
        "--one-at-a-time",
        action="store_true",
        help="post each PR's label once the previous delivery is handled (no queue)",
    )
    parser.add_argument("--fork", action="store_true", help="every PR from a fork, approved by a writer's label")
    parser.add_argument(
        "--live",
        action="store_true",
        help="the bot as live `sweepbot serve` runs it (intake and workers in processes of their own) "
        "against the fake GitHub in a process of its own; no round-trip counts",
    )
    parser.add_argument(
        "--fake-niceness",
        type=int,
        default=0,
        help="--live: the fake GitHub's niceness, a stand-in for a GitHub that is not on this machine "
        "(the bot's workers run at 10)",
    )
    args = parser.parse_args(argv)

    from bot.app.sandbox import _generate_key

    collect = Collect()  # the bot's warnings and errors, counted and shown below instead of printed as they come
    bot_log = logging.getLogger("sweepbot")
    saved = bot_log.handlers[:], bot_log.level, bot_log.propagate
    bot_log.handlers[:], bot_log.propagate = [collect], False
    bot_log.setLevel(logging.WARNING)
    try:
        if args.live:
            result = run_live(
                _generate_key(),
                args.prs,
                args.workers,
                max(1, args.senders),
                latency=args.github_latency / 1000,
                one_at_a_time=args.one_at_a_time,
                fork=args.fork,
                in_flight=args.in_flight,
                fake_niceness=args.fake_niceness,
                opened_first=args.opened_first,
            )
        else:
            result = asyncio.run(
                run(
                    _generate_key(),
                    args.prs,
                    args.workers,
                    max(1, args.senders),
                    worker_thread=not args.one_loop,
                    opened_first=args.opened_first,
                    latency=args.github_latency / 1000,
                    one_at_a_time=args.one_at_a_time,
                    fork=args.fork,
                    in_flight=args.in_flight,
                )
            )
    finally:
        bot_log.handlers[:], level, bot_log.propagate = saved
        bot_log.setLevel(level)
    for line in report(result, collect.records):
        print(line)
    found = problems(result)
    for problem in found:
        print(f"FAILED: {problem}")
    if not found:
        print(f"checked: exactly {args.prs} runs, one per PR, each from one dispatch POST")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
