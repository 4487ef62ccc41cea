"""The sweep's cost (bot/rules/sweep_cost.py): how long counting the points of every config key takes, on
upstream's real master configs and on inputs built to be expensive, as a PR changing a master config could send.

`costs_of_files` parses the files and counts every key's rows; it runs in the worker process when the files
are 128 KB or more (bot/core/offload.py), else on the event loop. Printed: the input's size, the median time of
`--repeat` calls, the rows counted and the keys read.

    .venv/bin/python bench/sweep_cost.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from bot.rules import sweep_cost

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "inferencex"


def upstream() -> dict[str, str | None]:
    return {name: (DATA / name).read_text(encoding="utf-8") for name in ("amd-master.yaml", "nvidia-master.yaml")}


def aliased_rows(rows: int, keys: int) -> dict[str, str | None]:
    """One search-space row named `rows` times through an alias, in the one scenario row every key aliases."""
    lines = [
        "base: &base",
        "  runner: mi355x",
        "  scenarios:",
        "    fixed-seq-len: &rows",
        "    - isl: 1",
        "      osl: 1",
    ]
    lines += ["      search-space:", "      - &row {conc-start: 1, conc-end: 1048576}"]
    lines += ["      - *row"] * rows
    lines += [f"k{n}: {{runner: mi355x, scenarios: {{fixed-seq-len: *rows}}}}" for n in range(keys)]
    return {"m.yaml": "\n".join(lines) + "\n"}


def long_lists(rows: int) -> dict[str, str | None]:
    """`rows` search-space rows, each a conc-list of the most values a row may have."""
    values = ", ".join(str(n) for n in range(1, sweep_cost.MAX_VALUES_PER_ROW + 1))
    lines = ["k:", "  runner: mi355x", "  scenarios:", "    fixed-seq-len:", "    - isl: 1", "      osl: 1"]
    lines += ["      search-space:"] + [f"      - {{conc-list: [{values}]}}"] * rows
    return {"m.yaml": "\n".join(lines) + "\n"}


CASES = [
    ("upstream amd-master.yaml + nvidia-master.yaml", upstream),
    ("1 row aliased 100,000 times, in 2,000 keys", lambda: aliased_rows(100_000, 2_000)),
    ("3,000 rows of 256 concurrencies (under the 4 MB cap)", lambda: long_lists(3_000)),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print("| input | bytes | median time | points counted | keys |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, make in CASES:
        texts = make()
        size = sum(len(t.encode()) for t in texts.values() if t is not None)
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            costs = sweep_cost.costs_of_files(texts)
            times.append(time.perf_counter() - start)
        points = sum(cost.totals()[0] for cost in costs.values())
        print(f"| {name} | {size:,} | {statistics.median(times) * 1000:,.0f} ms | {points:,} | {len(costs):,} |")


if __name__ == "__main__":
    main()
