"""Results callbacks as they arrive: the median time of one parse_callback, before and after.

"after" validates with the JSON Schemas (bot/rules/message_schemas.py, examples/schemas/) after a bounds
check; "before" (`--before`, default b3e2371, the commit before this work) checked every field by hand. The
inputs are ordinary callbacks, not worst cases (bench/parsers.py has those): the three example payloads of
examples/payloads/ and a few refused ones (and, apart, the judge's example answer through judge_result). Each tree is
measured in a subprocess of this script (`--worker`) with PYTHONPATH at a copy of it (`git archive` for before, the
working tree for after, the schemas copied in as the data package `sweepbot_schemas`). The first call is timed on its
own (after: it loads and compiles the schema), then each callback is parsed `--repeat` times; the figure is the median
of those calls.

    .venv/bin/python bench/callbacks.py [--before REF] [--repeat 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PAYLOADS = ROOT / "examples" / "payloads"
BEFORE_REF = "b3e2371"
RESULTS = "SemiAnalysisAI/InferenceX-app"
HOSTS = ("inferencex.semianalysis.com",)


def callbacks() -> list[tuple[str, str, dict[str, Any]]]:
    """(label, event type, client_payload): the examples, then refused ones built from them."""
    example = {
        event: json.loads((PAYLOADS / f"{event}.callback.json").read_text())
        for event in ("stage-results-started", "stage-results-completed", "ingest-completed")
    }
    ingest = example["ingest-completed"]
    return [
        ("started (example)", "stage-results-started", example["stage-results-started"]),
        ("completed (example)", "stage-results-completed", example["stage-results-completed"]),
        ("ingested (example)", "ingest-completed", ingest),
        ("refused: run-id 'abc'", "stage-results-started", {**example["stage-results-started"], "run-id": "abc"}),
        (
            "refused: another source",
            "stage-results-started",
            {**example["stage-results-started"], "source-repository": "someone/else"},
        ),
        (
            "refused: a negative count",
            "ingest-completed",
            {**ingest, "counts": {**ingest["counts"], "eval": {**ingest["counts"]["eval"], "new": -1}}},
        ),
    ]


def worker(repeat: int) -> None:
    from bot.rules.results_callbacks import parse_callback

    for label, event, payload in callbacks():
        start = time.perf_counter_ns()
        answer = parse_callback(event, payload, results_repository=RESULTS, link_hosts=HOSTS)
        first = time.perf_counter_ns() - start
        times = []
        for _ in range(repeat):
            start = time.perf_counter_ns()
            parse_callback(event, payload, results_repository=RESULTS, link_hosts=HOSTS)
            times.append(time.perf_counter_ns() - start)
        verdict = getattr(answer, "code", None) or "accepted"
        print(
            json.dumps(
                {
                    "label": label,
                    "first_us": first / 1e3,
                    "median_us": statistics.median(times) / 1e3,
                    "verdict": verdict,
                }
            ),
            flush=True,
        )
    from bot.rules.signoff import judge_result  # the judge's answer, for comparison (not in the median)

    answer = json.loads((PAYLOADS / "signoff-judged.callback.json").read_text())
    start = time.perf_counter_ns()
    verdict = "accepted" if isinstance(judge_result(answer), dict) else "refused"
    first = time.perf_counter_ns() - start
    times = []
    for _ in range(repeat):
        start = time.perf_counter_ns()
        judge_result(answer)
        times.append(time.perf_counter_ns() - start)
    print(
        json.dumps(
            {
                "label": "judge_result: signoff-judged (example)",
                "first_us": first / 1e3,
                "median_us": statistics.median(times) / 1e3,
                "verdict": verdict,
                "judge": True,
            }
        ),
        flush=True,
    )


def trees(tmp: Path, before_ref: str) -> tuple[Path, Path]:
    before, after = tmp / "before", tmp / "after"
    before.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", before_ref, "bot"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
    shutil.copytree(ROOT / "bot", after / "bot", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "examples" / "schemas", after / "sweepbot_schemas")
    return before, after


def measure(tree: Path, repeat: int) -> list[dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--worker", "--repeat", str(repeat)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tree,
        timeout=600,
        check=True,
    )
    return [json.loads(line) for line in done.stdout.splitlines()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=BEFORE_REF, help="git ref of the before tree")
    parser.add_argument("--repeat", type=int, default=2000, help="calls per callback")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.repeat)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        before_tree, after_tree = trees(Path(tmp), args.before)
        before, after = measure(before_tree, args.repeat), measure(after_tree, args.repeat)
    print(
        f"{os.cpu_count()} cores, Python {platform.python_version()}; before: {args.before}; after: the working "
        f"tree; median of {args.repeat:,} calls per callback"
    )
    print("| callback | verdict before | verdict after | before µs | after µs | after/before | first call after µs |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
    for b, a in zip(before, after):
        print(
            f"| {a['label']} | {b['verdict']} | {a['verdict']} | {b['median_us']:.1f} | {a['median_us']:.1f} | "
            f"{a['median_us'] / b['median_us']:.1f}x | {a['first_us']:,.0f} |"
        )
    results = [(b, a) for b, a in zip(before, after) if not a.get("judge")]
    print(
        f"parse_callback, median over the callbacks: before "
        f"{statistics.median(b['median_us'] for b, _ in results):.1f} µs, "
        f"after {statistics.median(a['median_us'] for _, a in results):.1f} µs"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
