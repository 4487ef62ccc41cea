"""Three `sweepbot serve` processes on one PostgreSQL: 300 PRs opened, spread over them, one replica
SIGKILLed mid-drain while it runs a lane under lease, which another replica takes over; then the database restarted
mid-drain. GitHub is a separate fake process, so its state outlives any replica: every PR must be welcomed exactly
once, and one PR's deliveries finish in arrival order. Every wait is bounded (a hang fails, saying what it waited
for)."""

from __future__ import annotations

import collections
import json
import os
import signal
import time
import urllib.error

import psycopg
import pytest
from harness import free_port, post_webhook, process_health, start_server_process, wait_until_blocking
from postgres import postgres_db, postgres_url, restart_server  # noqa: F401

from bot.testing.server import FakeGitHubProcess

SECRET = "replica-secret"
RECIPE = "inferencex-e2e/recipes/mi355x.yaml"  # a benchmark path (welcome), not the changelog (no gate comment)
WELCOME = "<!-- sweepbot:welcome -->"
DRAIN_TIMEOUT = 180.0
TAKEN_OVER = "delivery taken over from a replica whose lease ran out"

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def fake():
    with FakeGitHubProcess() as process:
        yield process


def start_replica(tmp_path, fake, app_key: str, db: str, index: int, port: int):
    env = {
        "APP_ID": "1",
        "PRIVATE_KEY": app_key,
        "WEBHOOK_SECRET": SECRET,
        "GITHUB_API_URL": fake.url,
        "SWEEPBOT_DB": db,
        "SWEEPBOT_WORKERS": "4",
        "SWEEPBOT_WRITES_PER_MINUTE": "0",
        "SWEEPBOT_SETTLE_SECONDS": "0",
        "SWEEPBOT_LEASE_SECONDS": "3",
        "LOG_LEVEL": "INFO",
    }
    return start_server_process(
        port,
        env,
        cwd=tmp_path,
        stdout=open(tmp_path / f"out-{index}.txt", "a"),
        stderr=open(tmp_path / f"log-{index}.jsonl", "a"),
    )


def seed(fake, repo: str, prs: int) -> None:
    fake.add_repo(repo, default_branch="main", installation_id=1)
    for number in range(1, prs + 1):
        fake.add_pull(repo, number=number, user=f"partner{number}", files=[RECIPE])


def opened(fake, repo: str, number: int) -> dict:
    return fake.pull_request_payload(repo, number, "opened", sender=f"partner{number}")


def unfinished(db: str) -> int:
    with psycopg.connect(db) as conn:
        row = conn.execute("SELECT count(*) FROM deliveries WHERE status IN ('queued','running','retrying')").fetchone()
    assert row is not None  # count(*) always gives one row
    return row[0]


def wait_drained(db: str, timeout: float = DRAIN_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if unfinished(db) == 0:
                return
        except psycopg.OperationalError:
            pass  # the database is restarting
        time.sleep(0.2)
    raise AssertionError(f"{unfinished(db)} deliveries still unfinished after {timeout} s")


def log_lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]


def holder_of(log) -> str:
    """The lease holder a replica calls itself (its "replica started" line)."""
    return next(line["holder"] for line in log_lines(log) if line["msg"] == "replica started")


def stopped(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] == "T"


def running_lanes(db: str, holder: str) -> dict[str, tuple[int, str]]:
    """The lanes `holder` has a live lease on whose head is running: lane -> (seq, delivery id)."""
    with psycopg.connect(db) as conn:
        rows = conn.execute(
            "SELECT l.lane, d.seq, d.id FROM lanes l JOIN deliveries d ON d.lane = l.lane"
            " WHERE l.holder = %s AND l.expires_at > clock_timestamp() AND d.status = 'running'",
            (holder,),
        ).fetchall()
    return {lane: (seq, delivery) for lane, seq, delivery in rows}


def freeze_while_running_a_lane(proc, port: int, db: str, holder: str, tries: int = 100) -> dict[str, tuple[int, str]]:
    """SIGSTOP the replica (its intake `proc` and its workers' process, which runs the lanes) at a moment it
    holds a lease on a lane and runs that lane's head; returns those lanes, read once the process is stopped and
    two reads 0.1 s apart agree (what it sent before it stopped has landed; its leases last 3 s), so they are
    what it holds when it dies."""
    pids = [proc.pid, process_health(port)["workers_process"]["pid"]]

    def signal_all(sig: int) -> None:
        for pid in pids:
            os.kill(pid, sig)

    for _ in range(tries):
        signal_all(signal.SIGSTOP)
        wait_until_blocking(lambda: all(stopped(pid) for pid in pids), "the replica stopped", seconds=10, every=0.01)
        reads = [running_lanes(db, holder)]
        while len(reads) < 2 or reads[-1] != reads[-2]:
            assert len(reads) < 20, "the lanes of a stopped replica kept changing"
            time.sleep(0.1)
            reads.append(running_lanes(db, holder))
        if reads[-1]:
            return reads[-1]
        signal_all(signal.SIGCONT)  # between two lanes: let it take the next one
        wait_until_blocking(
            lambda: not any(stopped(pid) for pid in pids), "the replica running again", seconds=10, every=0.01
        )
    raise AssertionError(f"the replica never ran a lane under lease in {tries} tries")


def welcomes(fake, repo: str, prs: int) -> collections.Counter:
    return collections.Counter(
        {n: sum(1 for c in fake.comments(repo, n) if c["body"].startswith(WELCOME)) for n in range(1, prs + 1)}
    )


def lane_order_violations(db: str) -> list[str]:
    """Lanes where a later delivery finished before an earlier one."""
    with psycopg.connect(db) as conn:
        rows = conn.execute(
            "SELECT lane, seq, finished_at FROM deliveries WHERE status='done' ORDER BY lane, seq"
        ).fetchall()
    bad: list[str] = []
    last: dict[str, float] = {}  # lane -> finished_at of its latest delivery so far
    for lane, _seq, finished in rows:
        if lane in last and finished < last[lane]:
            bad.append(lane)
        last[lane] = finished
    return bad


def post_all(ports: list[int], deliveries: list[tuple[str, str, dict]]) -> list[int]:
    """Each delivery to the next replica in turn; a replica that answers nothing is skipped for the next."""
    statuses = []
    for i, (event, delivery, payload) in enumerate(deliveries):
        for attempt in range(len(ports)):
            try:
                statuses.append(post_webhook(ports[(i + attempt) % len(ports)], event, delivery, payload, SECRET))
                break
            except OSError:
                continue
    return statuses


def test_three_replicas_one_sigkilled_mid_drain_welcome_every_pr_exactly_once(tmp_path, fake, app_key, postgres_db):  # noqa: F811
    repo, prs = "acme/replicas-300", 300
    seed(fake, repo, prs)
    # The drain must outlast the freeze below: at 0.25 s per welcome, 3 replicas of 8 workers need at least 3 s
    # for 300 (at 0.05 s, on a loaded machine, the drain could end before the freeze caught a lane under lease).
    fake.set_latency("POST", r"/issues/\d+/comments$", 0.25, commit="start")
    ports = [free_port() for _ in range(3)]
    procs = [start_replica(tmp_path, fake, app_key, postgres_db, i, port) for i, port in enumerate(ports)]
    try:
        deliveries = [("pull_request", f"open-{n}", opened(fake, repo, n)) for n in range(1, prs + 1)]
        for n in range(1, 21):  # a labeled/unlabeled/labeled sequence on 20 PRs, behind their `opened`
            for step, action in enumerate(("labeled", "unlabeled", "labeled")):
                payload = fake.pull_request_payload(repo, n, action, sender="maintainer", label="documentation")
                deliveries.append(("pull_request", f"label-{n}-{step}", payload))
        statuses = post_all(ports, deliveries)
        assert statuses == [202] * len(deliveries)  # every one acknowledged: committed before the answer
        wait_until_blocking(lambda: fake.count("POST", r"/issues/\d+/comments$") >= 30, "30 welcomes posted")
        dead = holder_of(tmp_path / "log-0.jsonl")
        held = freeze_while_running_a_lane(procs[0], ports[0], postgres_db, dead)
        procs[0].send_signal(signal.SIGKILL)  # mid-drain, with lanes under lease and writes under way; its workers'
        # process, stopped, dies with it (the kernel's parent-death signal)
        procs[0].wait(10)
        wait_drained(postgres_db)
        assert welcomes(fake, repo, prs) == collections.Counter({n: 1 for n in range(1, prs + 1)})
        assert lane_order_violations(postgres_db) == []
        # Each lane it ran when it died: another replica took it over (its log says so), and the head it was
        # running was done once more, counted as interrupted once. (A head left running for good would have
        # kept wait_drained from returning.)
        taken = {
            (line["lane"], line["delivery"])
            for index in (1, 2)
            for line in log_lines(tmp_path / f"log-{index}.jsonl")
            if line["msg"] == TAKEN_OVER
        }
        assert {(lane, delivery) for lane, (_, delivery) in held.items()} <= taken
        with psycopg.connect(postgres_db) as conn:
            rows = conn.execute(
                "SELECT seq, status, interrupted FROM deliveries WHERE seq = ANY(%s) ORDER BY seq",
                ([seq for seq, _ in held.values()],),
            ).fetchall()
        assert rows == [(seq, "done", 1) for seq, _ in sorted(held.values())]
        health = process_health(ports[1])
        assert health["database"]["reachable"] and health["database"]["oldest_pending_seconds"] is None
    finally:
        fake.clear_latency()
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(60)  # the workers drain (20 s at most), then the intake ends
    with psycopg.connect(postgres_db) as conn:  # SIGTERM handed the survivors' leases back; the dead one's ran out
        assert conn.execute("SELECT count(*) FROM lanes WHERE expires_at > clock_timestamp()").fetchone() == (0,)


def test_the_database_restarted_mid_drain_loses_nothing_that_was_acknowledged(tmp_path, fake, app_key, postgres_db):  # noqa: F811
    repo, prs = "acme/replicas-restart", 80
    seed(fake, repo, prs)
    fake.set_latency("POST", r"/issues/\d+/comments$", 0.05, commit="start")
    ports = [free_port() for _ in range(2)]
    procs = [start_replica(tmp_path, fake, app_key, postgres_db, 10 + i, port) for i, port in enumerate(ports)]
    try:
        statuses = post_all(ports, [("pull_request", f"r-open-{n}", opened(fake, repo, n)) for n in range(1, prs + 1)])
        assert statuses == [202] * prs
        wait_until_blocking(lambda: fake.count("POST", r"/issues/\d+/comments$") >= 20, "20 welcomes posted")
        refused = []

        def while_down() -> None:  # intake answers 503 while the database is away
            try:
                refused.append(post_webhook(ports[0], "pull_request", "r-during", opened(fake, repo, 1), SECRET))
            except urllib.error.HTTPError as exc:
                refused.append(exc.code)

        restart_server(while_down)
        assert refused == [503]
        wait_drained(postgres_db)
        assert welcomes(fake, repo, prs) == collections.Counter({n: 1 for n in range(1, prs + 1)})
        assert all(process_health(port)["database"]["reachable"] for port in ports)  # recovered by itself
    finally:
        fake.clear_latency()
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
