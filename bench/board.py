"""The maintainers' board under a burst: how many times the board issue is written for a burst of events, and how
big its body is with many open PRs.

A real bot (journal on disk, workers as `sweepbot serve` runs them: `tests/harness.py`) against the in-memory fake
GitHub behind respx, in this one process. `--prs` same-repository PRs (default 50) each append a valid changelog
entry for `dsr1-fp8-mi355x-sglang` (runner `mi355x` in the base's master config) and carry `full-sweep-fail-fast`,
applied by a maintainer; the repository's policy turns the board on (`board.edit_interval`: `--interval`, default
10 s) and caps `mi355x` at 4 sweeps, so most PRs wait in its queue. `--title-chars` makes every PR title that long
(GitHub allows 256), to see the body past GitHub's 65,536 characters.

First every PR's `labeled` delivery is handled (the gate dispatches 4 sweeps and queues the rest; the board is
created). Then the burst: one `synchronize` delivery per PR, posted back to back, and, once they are handled,
the first 4 sweeps completing (4 `workflow_run` deliveries, each starting the next in the queue). It prints the
board's writes (issue created, edited) during the burst and how long it took, the body's characters and how many
PRs it cut, and the requests one render made.

    .venv/bin/python bench/board.py [--prs 50] [--interval 10] [--title-chars 40]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import sys
import tempfile
import time
from pathlib import Path

import respx

ROOT = Path(__file__).resolve().parent.parent
for _path in (str(ROOT), str(ROOT / "tests")):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from harness import REPO, start_harness, stop_harness  # noqa: E402

from bench.gate_latency import LABEL, MAINTAINER, seed  # noqa: E402
from bot.app.sandbox import _generate_key  # noqa: E402
from bot.rules.markers import marker  # noqa: E402
from bot.testing import InMemoryGitHub  # noqa: E402
from handlers import board  # noqa: E402

MASTER = "inferencex-e2e/configs/amd-master.yaml"
CONFIGS = "dsr1-fp8-mi355x-sglang:\n  runner: mi355x\n"


def board_writes(fake: InMemoryGitHub) -> list[str]:
    """The writes of the board issue: its creation and its edits."""
    found = []
    for r in fake.writes:
        tail = r.path.rstrip("/").split("/")
        if r.method == "POST" and tail[-1] == "issues":
            found.append("create")
        elif r.method == "PATCH" and tail[-2] == "issues" and tail[-1].isdigit():
            found.append("edit")
    return found


def the_board(fake: InMemoryGitHub) -> dict:
    (issue,) = [i for i in fake.issues(REPO) if (i.get("body") or "").startswith(marker("board") + "\n")]
    return issue


async def run(prs: int, interval: int, title_chars: int) -> dict:
    fake = InMemoryGitHub()
    seed(fake, prs)
    fake.set_file(
        REPO,
        ".github/sweepbot.yml",
        f"sweeps:\n  concurrency:\n    mi355x: 4\nboard:\n  enabled: true\n  title: Sweep board\n"
        f"  label: sweep-board\n  edit_interval: {interval}\n",
    )
    for number in range(1, prs + 1):
        pull = fake.pull(REPO, number)
        fake.set_file(REPO, MASTER, CONFIGS, ref=pull["base"]["sha"])
        if title_chars:
            fake.update_pull(REPO, number, title=(f"#{number} " + "Tune the MI355X recipe | " * 20)[:title_chars])
        fake.label_issue(REPO, number, LABEL, actor=MAINTAINER)
    with respx.mock(assert_all_called=False) as router, tempfile.TemporaryDirectory() as tmp:
        router.route(host="api.github.com").mock(side_effect=fake.handle)
        h = await start_harness(Path(tmp), fake, _generate_key(), settle_seconds=0.0, writes_per_minute=0)
        try:
            for number in range(1, prs + 1):
                payload = fake.pull_request_payload(REPO, number, "labeled", sender=MAINTAINER, label=LABEL)
                await h.post("pull_request", payload, delivery=f"labeled-{number}")
            await h.bot.wait_idle(600)
            fake.reset_requests()
            started = time.perf_counter()
            for number in range(1, prs + 1):
                payload = fake.pull_request_payload(REPO, number, "synchronize", sender=f"dev{number}")
                await h.post("pull_request", payload, delivery=f"burst-{number}")
            await h.bot.wait_idle(600)
            runs = sorted(fake.runs(REPO, "run-sweep.yml"), key=lambda r: r["id"])[:4]
            for run in runs:
                payload = fake.workflow_run_payload(REPO, run["id"], "completed", conclusion="success")
                await h.post("workflow_run", payload, delivery=f"done-{run['id']}")
            await h.bot.wait_idle(600)
            took = time.perf_counter() - started
            writes = board_writes(fake)
            issue = the_board(fake)
            fake.reset_requests()
            board._last_edit.clear()  # one render more, on its own, to count what it reads
            await h.deliver(
                "pull_request",
                fake.pull_request_payload(REPO, 1, "synchronize", sender="dev1"),
                delivery="count-reads",
            )
            reads = [r for r in fake.requests if r.method == "GET"]
        finally:
            await stop_harness(h)
    body = issue["body"]
    cut = body.split("## 中文")[0].count("more PRs are not shown") + body.split("## 中文")[0].count("more PR is not")
    shown = body.split("## 中文")[0].count("\n| #")
    return {
        "events": prs + len(runs),
        "took": took,
        "writes": writes,
        "chars": len(body),
        "shown": shown,
        "cut_note": bool(cut),
        "runs": len(fake.runs(REPO, "run-sweep.yml")),
        "most_runs_of_a_pr": max(
            collections.Counter(
                fake._repo(REPO).run_inputs[r["id"]]["pr-number"] for r in fake.runs(REPO, "run-sweep.yml")
            ).values()
        ),
        "reads": len(reads),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prs", type=int, default=50)
    parser.add_argument("--interval", type=int, default=10)
    parser.add_argument("--title-chars", type=int, default=0)
    args = parser.parse_args(argv)
    result = asyncio.run(run(args.prs, args.interval, args.title_chars))
    print(f"open PRs: {args.prs}; board.edit_interval: {args.interval} s; titles: {args.title_chars or 'short'}")
    print(
        f"burst: {result['events']} events ({args.prs} synchronize, then 4 runs completing) in {result['took']:.1f} s"
        f" -> board writes: {len(result['writes'])} ({', '.join(result['writes']) or 'none'})"
    )
    print(
        f"sweeps dispatched in all: {result['runs']} (mi355x capped at 4; each completion started the next);"
        f" most runs of one PR: {result['most_runs_of_a_pr']}"
    )
    print(
        f"board body: {result['chars']:,} characters (GitHub's limit 65,536); PRs shown: {result['shown']} of"
        f" {args.prs}; cut note: {'yes' if result['cut_note'] else 'no'}"
    )
    print(f"one render's delivery: {result['reads']} GET requests (the gate's reads of that PR included)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
