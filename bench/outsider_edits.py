"""A maintainer's dispatch while an outsider edits a refused command many times a second.

A real bot (journal on disk, workers on their own thread, webhook server: `tests/harness.py`) against the
in-memory fake GitHub behind respx, every request answered `--latency` seconds late, the installation's writes
paced as live (80 in any 60 s). Two runs, each on a fresh bot:

1. alone: `maintainer` (write permission) adds `full-sweep-fail-fast` to PR 1 (a valid changelog entry);
2. with an outsider: `stranger` (no permission) posts `/use 1` on PR 2 and edits it `--rate` times a second for
   `--seconds`; halfway through, the maintainer labels PR 1 as in run 1.

Printed: the time from the maintainer's `labeled` POST to the fake's receipt of the sweep's dispatch in each run
and their ratio, and the GitHub writes the outsider's deliveries caused (the writes of run 2 less those of run 1).
Before outsiders' commands cost one write, each edit cost about four and the dispatch took 55.4 s instead of about 3.5 s
(with the 3 s settle).

    .venv/bin/python bench/outsider_edits.py [--seconds 60] [--rate 24] [--latency 0.05]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import httpx
import respx

ROOT = Path(__file__).resolve().parent.parent
for _path in (str(ROOT), str(ROOT / "tests")):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from harness import REPO, start_harness, stop_harness  # noqa: E402

from bot.app.sandbox import _generate_key, add_sweep_workflows  # noqa: E402
from bot.github.client import WritePacer  # noqa: E402
from bot.testing import InMemoryGitHub  # noqa: E402

CHANGELOG = "inferencex-e2e/perf-changelog.yaml"
HISTORY = b'- config-keys:\n    - dsr1-fp8-h200-sglang\n  description:\n    - "Older"\n  pr-link: XXX\n'
ENTRY = b'\n- config-keys:\n    - dsr1-fp8-mi355x-sglang\n  description:\n    - "New"\n  pr-link: XXX\n'
LABEL = "full-sweep-fail-fast"
WRITER_PR, OUTSIDER_PR, WARM_PR = 1, 2, 3


def seed(fake: InMemoryGitHub) -> None:
    fake.add_repo(REPO, default_branch="main", installation_id=1)
    fake.set_permission(REPO, "maintainer", "write")
    add_sweep_workflows(fake, REPO)
    for number in (WRITER_PR, OUTSIDER_PR, WARM_PR):
        pr = fake.add_pull(REPO, number=number, user="partner", head_ref=f"recipe-{number}", files=[CHANGELOG])
        fake.set_file(REPO, CHANGELOG, HISTORY, ref=pr["base"]["sha"])
        fake.set_file(REPO, CHANGELOG, HISTORY + ENTRY, ref=pr["head"]["sha"])


def late(fake: InMemoryGitHub, latency: float, dispatched: list[float]):
    async def handle(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(latency)
        response = fake.handle(request)
        if request.method == "POST" and request.url.path.endswith("/dispatches") and "/workflows/" in request.url.path:
            dispatched.append(time.perf_counter())
        return response

    return handle


async def outsider(h, fake: InMemoryGitHub, seconds: float, rate: float) -> int:
    """`stranger` posts `/use 1` and edits it `rate` times a second for `seconds`; returns the deliveries sent."""
    comment = fake.add_comment(REPO, OUTSIDER_PR, "/use 1", user="stranger", author_association="NONE")
    await h.post("issue_comment", fake.issue_comment_payload(REPO, OUTSIDER_PR, comment))
    sent, started = 1, time.perf_counter()
    while time.perf_counter() - started < seconds:
        before = comment["body"]
        comment["body"] = f"/use {sent + 1}"
        payload = fake.issue_comment_payload(REPO, OUTSIDER_PR, comment, action="edited")
        payload["changes"] = {"body": {"from": before}}
        resp = await h.post("issue_comment", payload)
        resp.release()
        sent += 1
        await asyncio.sleep(max(0.0, started + sent / rate - time.perf_counter()))
    return sent


async def one_run(key: str, *, seconds: float, rate: float, latency: float, with_outsider: bool) -> dict:
    fake = InMemoryGitHub()
    seed(fake)
    dispatched: list[float] = []
    with respx.mock(assert_all_called=False) as router, tempfile.TemporaryDirectory() as tmp:
        router.route(host="api.github.com").mock(side_effect=late(fake, latency, dispatched))
        h = await start_harness(
            Path(tmp), fake, key, settle_seconds=0.0, worker_thread=True, router=None
        )  # every feature, as `sweepbot serve` runs them
        h.bot.app._pacer_factory = lambda: WritePacer(limit=80)  # paced as live, really waiting
        try:
            fake.label_issue(REPO, WARM_PR, "documentation", actor="maintainer")
            await h.deliver(
                "pull_request",
                fake.pull_request_payload(REPO, WARM_PR, "labeled", sender="maintainer", label="documentation"),
            )
            writes_before = len(fake.writes)
            outsiders = asyncio.ensure_future(outsider(h, fake, seconds, rate)) if with_outsider else None
            if outsiders is not None:
                await asyncio.sleep(seconds / 2)
            fake.label_issue(REPO, WRITER_PR, LABEL, actor="maintainer")
            sent_at = time.perf_counter()
            await h.post(
                "pull_request", fake.pull_request_payload(REPO, WRITER_PR, "labeled", sender="maintainer", label=LABEL)
            )
            while not dispatched:
                await asyncio.sleep(0.01)
            delay = dispatched[0] - sent_at
            print(
                f"{'with the outsider' if with_outsider else 'alone'}: labeled -> dispatch {delay * 1000:.0f} ms",
                file=sys.stderr,
                flush=True,
            )
            edits = await outsiders if outsiders is not None else 0
            await h.bot.wait_idle(600)
            writes = len(fake.writes) - writes_before
        finally:
            await stop_harness(h)
    return {"delay": delay, "edits": edits, "writes": writes}


async def main_async(args: argparse.Namespace) -> int:
    key = _generate_key()
    alone = await one_run(key, seconds=args.seconds, rate=args.rate, latency=args.latency, with_outsider=False)
    crowded = await one_run(key, seconds=args.seconds, rate=args.rate, latency=args.latency, with_outsider=True)
    print(
        f"outsider edits: {crowded['edits']} deliveries in {args.seconds:g} s ({args.rate:g}/s), every GitHub "
        f"request {args.latency * 1000:.0f} ms late, writes paced 80 a minute, settle 0 s"
    )
    print("| run | labeled -> dispatch | outsider's writes |")
    print("| --- | ---: | ---: |")
    print(f"| alone | {alone['delay'] * 1000:.0f} ms | 0 |")
    print(f"| with the outsider | {crowded['delay'] * 1000:.0f} ms | {crowded['writes'] - alone['writes']} |")
    print(f"ratio: {crowded['delay'] / alone['delay']:.2f}x (goal: within 2x)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rate", type=float, default=24.0, help="edits a second")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds each GitHub request is answered late")
    return asyncio.run(main_async(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
