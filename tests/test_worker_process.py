"""Live `sweepbot serve` runs its workers in a process of their own: the intake process only
journals and acknowledges. GitHub is a fake in its own process. What must hold: deliveries are welcomed once;
the workers' process, killed, is started again and loses nothing acknowledged meanwhile; SIGTERM stops both;
a killed server takes its workers with it; /metrics and /healthz speak for both."""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.error
import urllib.request

import pytest
from harness import free_port, post_webhook, process_health, start_server_process, wait_until_blocking

from bot.testing.server import FakeGitHubProcess

SECRET = "apart-secret"
RECIPE = "inferencex-e2e/recipes/mi355x.yaml"  # a benchmark path: a welcome, no gate comment
WELCOME = "<!-- sweepbot:welcome -->"

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def fake():
    with FakeGitHubProcess() as process:
        yield process


def start_bot(tmp_path, fake, app_key: str, port: int, run: int = 1, **extra: str):
    env = {
        "APP_ID": "1",
        "PRIVATE_KEY": app_key,
        "WEBHOOK_SECRET": SECRET,
        "GITHUB_API_URL": fake.url,
        "SWEEPBOT_DB": str(tmp_path / "journal.db"),
        "SWEEPBOT_WORKERS": "4",
        "SWEEPBOT_WRITES_PER_MINUTE": "0",
        "SWEEPBOT_SETTLE_SECONDS": "0",
        "LOG_LEVEL": "INFO",
        **extra,
    }
    return start_server_process(
        port,
        env,
        cwd=tmp_path,
        stdout=open(tmp_path / f"out-{run}.txt", "w"),
        stderr=open(tmp_path / f"log-{run}.jsonl", "w"),
    )


def seed(fake, repo: str, first: int, count: int) -> None:
    fake.add_repo(repo, default_branch="main", installation_id=1)
    for number in range(first, first + count):
        fake.add_pull(repo, number=number, user=f"partner{number}", files=[RECIPE])


def open_prs(fake, port: int, repo: str, first: int, count: int) -> list[int]:
    return [
        post_webhook(
            port,
            "pull_request",
            f"{repo}-{n}",
            fake.pull_request_payload(repo, n, "opened", sender=f"partner{n}"),
            SECRET,
        )
        for n in range(first, first + count)
    ]


def welcomes(fake, repo: str, numbers: range) -> dict[int, int]:
    return {n: sum(1 for c in fake.call("comments", repo, n) if WELCOME in c["body"]) for n in numbers}


def workers_pid(port: int) -> int:
    return process_health(port)["workers_process"]["pid"]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead too
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_the_workers_run_apart_and_welcome_each_pr_once(tmp_path, fake, app_key):
    repo = "acme/apart-basic"
    seed(fake, repo, 1, 10)
    port = free_port()
    bot = start_bot(tmp_path, fake, app_key, port)
    try:
        pid = workers_pid(port)
        assert pid != bot.pid and alive(pid)
        assert os.getpriority(os.PRIO_PROCESS, pid) > os.getpriority(os.PRIO_PROCESS, bot.pid), (
            "the workers yield the CPU to the intake"
        )
        assert open_prs(fake, port, repo, 1, 10) == [202] * 10
        wait_until_blocking(
            lambda: process_health(port)["backlog"] == 0 and all(welcomes(fake, repo, range(1, 11)).values()),
            "10 welcomes",
        )
        assert welcomes(fake, repo, range(1, 11)) == {n: 1 for n in range(1, 11)}
        health = process_health(port)
        assert health["ok"] and health["workers_state"] == "running" and health["workers"] == 4
        assert health["authentication"] == "ok" and health["installations"]["1"]["authenticated"] is True
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            text = resp.read().decode()
        # the intake counted the acks, the workers the GitHub requests: one text, each family once
        assert 'sweepbot_deliveries_total{event="pull_request",outcome="accepted"} 10.0' in text
        assert "sweepbot_github_requests_total{" in text
        assert text.count("# HELP sweepbot_deliveries_total ") == 1
    finally:
        bot.send_signal(signal.SIGTERM)
        assert bot.wait(60) == 0
    assert not alive(pid), "SIGTERM stops the workers' process too"
    log = (tmp_path / "log-1.jsonl").read_text()
    assert '"workers process started"' in log and "ended unasked" not in log


def test_a_killed_workers_process_is_started_again_and_loses_nothing_acknowledged(tmp_path, fake, app_key):
    repo = "acme/apart-restart"
    seed(fake, repo, 1, 20)
    port = free_port()
    bot = start_bot(tmp_path, fake, app_key, port)
    try:
        first = workers_pid(port)
        assert open_prs(fake, port, repo, 1, 5) == [202] * 5
        os.kill(first, signal.SIGKILL)
        # the intake keeps acknowledging while the workers are away: each ack is a committed journal row
        assert open_prs(fake, port, repo, 6, 15) == [202] * 15
        wait_until_blocking(
            lambda: (
                process_health(port).get("workers_process", {}).get("pid") not in (None, first)
                and process_health(port)["workers_state"] == "running"
            ),
            "a new workers' process",
        )
        wait_until_blocking(lambda: process_health(port)["backlog"] == 0, "the backlog drained")
        assert welcomes(fake, repo, range(1, 21)) == {n: 1 for n in range(1, 21)}
        health = process_health(port)
        assert health["workers_process"]["restarts"] == 1 and health["ok"]
    finally:
        bot.send_signal(signal.SIGTERM)
        assert bot.wait(60) == 0
    lines = [json.loads(line) for line in (tmp_path / "log-1.jsonl").read_text().splitlines() if line.startswith("{")]
    ended = [line for line in lines if line["msg"] == "workers process ended unasked; starting it again"]
    assert len(ended) == 1 and ended[0]["exit"] == -signal.SIGKILL


def test_a_killed_server_takes_its_workers_with_it(tmp_path, fake, app_key):
    """The workers must not go on writing behind a server that was SIGKILLed (a restarted one would run the same
    deliveries beside them)."""
    repo = "acme/apart-killed"
    seed(fake, repo, 1, 1)
    fake.set_latency("POST", r"/repos/acme/apart-killed/issues/\d+/comments$", 30.0, commit="end")
    port = free_port()
    bot = start_bot(tmp_path, fake, app_key, port)
    try:
        pid = workers_pid(port)
        assert open_prs(fake, port, repo, 1, 1) == [202]
        wait_until_blocking(
            lambda: fake.count("GET", r"/repos/acme/apart-killed/issues/1/comments$"), "the welcome under way"
        )  # its create is next, and waits 30 s for its answer
        bot.send_signal(signal.SIGKILL)
        bot.wait(30)
        deadline = time.monotonic() + 3  # a workers' process left alone would drain for 20 s
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(pid)
    finally:
        fake.clear_latency()


def test_readiness_says_so_while_the_workers_process_is_away(tmp_path, fake, app_key):
    port = free_port()
    bot = start_bot(tmp_path, fake, app_key, port)
    try:
        pid = workers_pid(port)
        os.kill(pid, signal.SIGSTOP)  # stuck: alive, answering nothing
        try:
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=10)
            assert refused.value.code == 503 and json.loads(refused.value.read()) == {"ok": False}
            # each of the three asks waits for the stopped process in turn
            assert process_health(port, timeout=30)["workers_state"].startswith("not answering")
            assert post_webhook(port, "ping", "ping-1", {"zen": "x"}, SECRET) == 200  # intake still answers
        finally:
            os.kill(pid, signal.SIGCONT)
        wait_until_blocking(lambda: process_health(port)["ok"], "ready again", seconds=30)
    finally:
        bot.send_signal(signal.SIGTERM)
        assert bot.wait(60) == 0


def test_the_workers_on_a_thread_when_asked(tmp_path, fake, app_key):
    """SWEEPBOT_WORKER_PROCESS=0 keeps the one-process shape (workers on a thread of the server's)."""
    repo = "acme/apart-thread"
    seed(fake, repo, 1, 2)
    port = free_port()
    bot = start_bot(tmp_path, fake, app_key, port, SWEEPBOT_WORKER_PROCESS="0")
    try:
        health = process_health(port)
        assert "workers_process" not in health and health["workers_state"] == "running"
        assert open_prs(fake, port, repo, 1, 2) == [202, 202]
        wait_until_blocking(lambda: all(welcomes(fake, repo, range(1, 3)).values()), "2 welcomes")
    finally:
        bot.send_signal(signal.SIGTERM)
        assert bot.wait(60) == 0


# ---- the pure parts: the settings handed over, the two processes' /metrics texts made one ---------------------


def test_the_settings_handed_to_the_workers_process_are_the_intakes():
    from bot.app.worker_messages import Start, decode_message
    from bot.core.config import Settings

    settings = Settings(app_id="7", private_key="pem", webhook_secrets=("a", "b"), workers=3, settle_seconds=0.5)
    sent = json.loads(json.dumps(Start(settings).encode()))
    assert decode_message(sent) == Start(settings)
    sent["settings"]["from_a_newer_intake"] = 1
    assert decode_message(sent) == Start(settings)  # ignored


def test_two_metrics_texts_become_one_with_shared_samples_added_up():
    from prometheus_client.parser import text_string_to_metric_families

    from bot.telemetry.metrics import Metrics, merged_exposition

    intake, workers = Metrics(), Metrics()
    intake.deliveries.labels("pull_request", "accepted").inc(5)
    workers.deliveries.labels("pull_request", "accepted").inc(2)  # never happens, but would add up
    workers.deliveries.labels("pull_request", "failed").inc()
    workers.github_requests.labels("GET", "200").inc(9)
    workers.handler_seconds.labels("pull_request").observe(0.2)
    text = merged_exposition([intake.render(), workers.render()]).decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    values = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families.values() for s in f.samples}
    assert values[("sweepbot_deliveries_total", (("event", "pull_request"), ("outcome", "accepted")))] == 7
    assert values[("sweepbot_deliveries_total", (("event", "pull_request"), ("outcome", "failed")))] == 1
    assert values[("sweepbot_handler_seconds_count", (("event", "pull_request"),))] == 1
    assert text.count("# TYPE sweepbot_deliveries_total counter") == 1
    created = [v for (name, _), v in values.items() if name == "sweepbot_deliveries_created"]
    assert created and all(v <= time.time() for v in created), "a creation time is the earliest, not a sum of two"
