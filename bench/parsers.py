"""Parsers of user text on their worst inputs: time and peak memory, before and after, in one run.

Every function that reads text a user controls, on inputs built to be expensive: each comment-sized input is
exactly `--size` characters (65,536, GitHub's comment limit), each changelog head about `--changelog-bytes`
(2 MB, the policy's `limits.changelog_bytes`), each callback payload about 12 times that (25 MB). "after" is a
copy of the working tree taken when the script starts (others may edit while it runs); "before" is
`git archive --before` (default 7b8dd28, the commit before this work) of bot/, templates/ and app.yaml.

Each measurement runs in a subprocess of this script (`--worker`, the venv's interpreter) with PYTHONPATH at
the tree measured, so both versions are measured in one run without import clashes. The worker builds the
input (not timed), then calls the function up to `--repeat` times (fewer once `--budget` seconds are spent);
the figure is the median. Peak memory is measured in a second subprocess, one call under tracemalloc (Python
allocations made by the call; the input itself is not counted), so that tracing does not inflate the times;
"RSS+" is the growth of the process's peak RSS during the first timed call (C allocations too, e.g. libyaml's).
A call that takes longer than `--timeout` seconds is killed; an exception or a crash is printed instead of a
number. Each worker runs under an address-space limit (RLIMIT_AS, `--memory-limit`) so that a memory bomb
fails there rather than on the machine.

Budget, judged on "after": 50 ms for comment-sized inputs; 2 s and 100 MB for file-sized ones (a
changelog, a 2 MB CODEOWNERS, a 25 MB callback payload).

Then two "loop held" figures, after only: check_append on the slowest 2 MB input, run by asyncio.to_thread and
by bot.core.offload (the worker process the sweep gate uses), while
a ticker on the event loop sleeps 1 ms at a time and records how late it wakes (sys.setswitchinterval(0.001),
as bot/app/runtime.py sets it).

    .venv/bin/python bench/parsers.py [--before REF] [--size 65536] [--changelog-bytes 2097152] [--repeat N]
        [--timeout 60] [--only TEXT] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import gc
import itertools
import json
import os
import platform
import queue
import random
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "inferencex"  # real upstream files (tests/data/inferencex/SOURCE.md)
CHECKLIST_FILE = DATA / "PR_REVIEW_CHECKLIST.md"
CHANGELOG_TAIL = DATA / "perf-changelog.tail.yaml"
TREE_PARTS = ("bot", "templates", "app.yaml")

SCHEMAS = "examples/schemas"  # the data package sweepbot_schemas (bot/rules/message_schemas.py)
BEFORE_REF = "7b8dd28"  # the commit before the parsers were made linear and capped
COMMENT_CHARS = 65_536  # GitHub's limit on a comment body
CHANGELOG_BYTES = 2_097_152  # the policy's limits.changelog_bytes
PAYLOAD_FACTOR = 12  # a callback payload: 12 x the changelog size, 25 MB
DEEP = 100_000  # nesting of a callback's counts
LAUGHS = 9  # billion laughs: 9 levels of 9
REPEAT = 5
TIMEOUT_S = 60.0
BUDGET_S = 20.0  # a worker stops repeating once its calls have taken this long (it has at least one figure)
MEMORY_LIMIT_MB = 4096
QUICK = dict(size=2048, changelog_bytes=65_536, repeat=1, timeout=20.0, deep=2_000, laughs=4)

COMMENT, FILE = "comment", "file"
BUDGETS = {COMMENT: (0.050, None), FILE: (2.0, 100.0)}  # (seconds, peak MB)
TICK_S = 0.001  # the loop-held ticker's sleep
SWITCH_INTERVAL = 0.001  # bot/app/runtime.py

PREFIX = "https://github.com/SemiAnalysisAI/InferenceX/pull/"
SIGNER = "octocat"
DEPTHS = (300, 10_000)  # block sequences nested under `description:`
GLOBSTARS = 12  # `**/` segments of the CODEOWNERS rule whose regex backtracks (the cost grows like C(2k, k))


@dataclass(frozen=True)
class Sizes:
    n: int  # characters of a comment-sized input
    c: int  # bytes of a changelog head (and of a big CODEOWNERS)
    payload: int  # bytes of strings in a callback payload
    deep: int
    laughs: int


# -- what the inputs are made of ---------------------------------------------------------------------------


def policy() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "app.yaml").read_text())["policy"]


def fill(unit: str, n: int) -> str:
    """`unit` repeated to exactly n characters (the last copy cut short)."""
    return (unit * (n // len(unit) + 1))[:n]


def fill_bytes(unit: bytes, budget: int) -> bytes:
    """As many whole copies of `unit` as fit in `budget` bytes."""
    return unit * (budget // len(unit))


def template_item_texts() -> list[str]:
    """The real checklist's items (the lines `- [ ] ...` in the block under `## Template`), as written."""
    block = CHECKLIST_FILE.read_text().split("## Template", 1)[1].split("```")[1]
    return [m.group(1) for m in re.finditer(r"^\s*- \[ \] (.*)$", block, re.MULTILINE)]


def history(limit: int) -> bytes:
    """Real changelog entries (the tail's, cycled) joined as the file joins them, at most `limit` bytes."""
    tail = CHANGELOG_TAIL.read_bytes()
    entries = tail.rstrip(b"\n").split(b"\n\n")
    out, size = [], 0
    for entry in itertools.cycle(entries):
        if size + len(entry) + 2 > limit:
            break
        out.append(entry)
        size += len(entry) + 2
    return b"\n\n".join(out) + b"\n"


def base_history(s: Sizes) -> bytes:
    """The base of most changelog cases: the real tail (262 KB), cut to a quarter of the head in --quick."""
    tail = CHANGELOG_TAIL.read_bytes()
    return tail if len(tail) <= s.c // 4 else history(s.c // 4)


VALID_ENTRY = (
    b'\n- config-keys:\n    - dsr1-fp8-mi355x-sglang\n  description:\n    - "Tune MI355X SGLang"\n  pr-link: XXX\n'
)
ENTRY_HEAD = b"\n- config-keys:\n    - dsr1-fp8-mi355x-sglang\n  description:\n"


# -- comment bodies (each exactly n characters) ------------------------------------------------------------


def brackets(n: int) -> str:
    return fill("[", n)


def comment_openers(n: int) -> str:
    return fill("<!--", n)


def backticks(n: int) -> str:
    return fill("`", n)


def growing_backtick_runs(n: int) -> str:
    """` `` ``` ```` ... (no run closes another), then a comment opener after all of them."""
    parts, size, k = [], 0, 1
    while size + k + 1 + 4 <= n:
        parts.append("`" * k + " ")
        size += k + 1
        k += 1
    return ("".join(parts) + "<!--").ljust(n, " ")


def escapes(n: int) -> str:
    return fill("\\`\\<!--", n)


def quote_markers(n: int) -> str:
    return fill(">", n)


def quoted_lines(n: int) -> str:
    return fill("> x\n", n)


def use_lines(n: int) -> str:
    return fill("/use 1\n", n)


def long_run_id(n: int) -> str:
    return "/use " + fill("9", n - 5)


def listed_fence(n: int) -> str:
    """`- - - - ... ```` on one line: a fence opened under 32,766 nested list markers."""
    markers = (n - 3) // 2
    return ("- " * markers + "```").ljust(n, " ")


def unclosed_comments(n: int) -> str:
    return fill("<!-- \n", n)


def unclosed_pre(n: int) -> str:
    return fill("<pre>\n", n)


def reopened_comments(n: int) -> str:
    """A comment closed and opened again on every line: the visible text is carried from line to line."""
    return "x<!--\n" + fill("-->x<!--\n", n - 6)


def image_openers(n: int) -> str:
    return fill("![", n)


def autolink_openers(n: int) -> str:
    return fill("<http:", n)


def link_openers(n: int) -> str:
    return fill("[a](", n)


def underscores(n: int) -> str:
    return fill("_", n)


def stars(n: int) -> str:
    return fill("*", n)


def phrase_then_brackets(n: int) -> str:
    phrase = policy()["signoff_phrase"]
    return phrase + "\n" + fill("[", n - len(phrase) - 1)


COMMENT_BODIES: tuple[tuple[str, Callable[[int], str]], ...] = (
    ("`[` x N", brackets),
    ("`<!--` x N", comment_openers),
    ("backtick x N", backticks),
    ("backtick runs of growing length", growing_backtick_runs),
    ("`\\` escapes", escapes),
    ("`>` x N", quote_markers),
    ("`> x` lines", quoted_lines),
    ("`/use 1` on every line", use_lines),
    ("one `/use` + 65 K digits", long_run_id),
    ("`- - - ... ```` one line", listed_fence),
    ("`<!-- ` lines, never closed", unclosed_comments),
    ("`<pre>` lines, never closed", unclosed_pre),
    ("`-->x<!--` lines (reopened)", reopened_comments),
)
MARKDOWN_BODIES: tuple[tuple[str, Callable[[int], str]], ...] = (
    ("`[` x N", brackets),
    ("`![` x N/2", image_openers),
    ("`<http:` x N/6", autolink_openers),
    ("`[a](` x N/4", link_openers),
    ("`_` x N", underscores),
    ("`*` x N", stars),
    ("phrase + `[` x 65 K", phrase_then_brackets),
)


# -- sign-off bodies for the checklist (the phrase, then items, n characters) -------------------------------


def signoff_body(n: int, items: Callable[[random.Random], str]) -> str:
    rng = random.Random(15)
    lines = [policy()["signoff_phrase"] + ":"]
    size = len(lines[0])
    while size < n:
        line = "- [x] " + items(rng)
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)[:n]


def shuffled_real_words(n: int) -> str:
    """Items of the real items' lengths, made of their own words in another order (similar, not the same)."""
    real = template_item_texts()
    counter = itertools.count()

    def item(rng: random.Random) -> str:
        text = real[next(counter) % len(real)]
        words = text.split()
        rng.shuffle(words)
        return " ".join(words)

    return signoff_body(n, item)


def random_words(n: int) -> str:
    def item(rng: random.Random) -> str:
        return " ".join(
            "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
            for _ in range(rng.randint(1, 12))
        )

    return signoff_body(n, item)


def one_huge_item(n: int) -> str:
    words = " ".join(template_item_texts()).split()
    first = policy()["signoff_phrase"] + ":\n- [x] "
    return first + fill(" ".join(words) + " ", n - len(first))


def near_duplicates(n: int) -> str:
    """Every real item again and again, one word changed each time: close to an item, never equal."""
    real = template_item_texts()
    counter = itertools.count()

    def item(rng: random.Random) -> str:
        words = real[next(counter) % len(real)].split()
        words[rng.randrange(len(words))] = rng.choice(("checked", "confirmed", "ensured", "reviewed"))
        return " ".join(words)

    return signoff_body(n, item)


SIGNOFF_BODIES: tuple[tuple[str, Callable[[int], str]], ...] = (
    ("items of real length, their words shuffled", shuffled_real_words),
    ("items of random words", random_words),
    ("one huge item", one_huge_item),
    ("near-duplicates of the real items", near_duplicates),
)


# -- changelog appends (each at most `budget` bytes after a base that ends with a newline) ------------------


def padded(entry: bytes, budget: int) -> bytes:
    """`entry`, then valid entries up to the budget (so the head is as big as the others; the reference case
    "many small valid entries" is what that padding costs alone)."""
    return entry + fill_bytes(VALID_ENTRY, budget - len(entry))


def valid_entries(budget: int, s: Sizes) -> bytes:
    """The reference: small valid entries, as many as fit (what every padded case below also carries)."""
    return fill_bytes(VALID_ENTRY, budget)


def bad_entries(budget: int, s: Sizes) -> bytes:
    return fill_bytes(
        b"\n- config-keys: 5\n  description: [1, {a: b}]\n  pr-link: https://example.com/1\n"
        b"  scenario-type: [bogus]\n  evals-only: maybe\n  colour: red\n",
        budget,
    )


def huge_description(budget: int, s: Sizes) -> bytes:
    head, tail = ENTRY_HEAD + b'    - "', b'"\n  pr-link: XXX\n'
    return head + fill("Update the image ", budget - len(head) - len(tail)).encode() + tail


def nested_blocks(depth: int) -> Callable[[int, Sizes], bytes]:
    def make(budget: int, s: Sizes) -> bytes:
        return padded(ENTRY_HEAD + b"    " + b"- " * depth + b"x\n  pr-link: XXX\n", budget)

    return make


def flow_nesting(budget: int, s: Sizes) -> bytes:
    head, tail = b"\n- config-keys:\n    - dsr1-fp8-mi355x-sglang\n  description: ", b"\n  pr-link: XXX\n"
    depth = (budget - len(head) - len(tail)) // 2
    return head + b"[" * depth + b"]" * depth + tail


def laughs(budget: int, s: Sizes) -> bytes:
    """Billion laughs in one entry's description: level k is a list of 9 aliases of level k-1."""
    names = "abcdefghijklmnop"[: s.laughs]
    lines = [f"    - &{names[0]} [{', '.join(['lol'] * 9)}]"]
    lines += [f"    - &{name} [{', '.join([f'*{prev}'] * 9)}]" for prev, name in zip(names, names[1:])]
    return padded(ENTRY_HEAD + "\n".join(lines).encode() + b"\n  pr-link: XXX\n", budget)


def merge_laughs(budget: int, s: Sizes) -> bytes:
    """The same with merge keys: each level's mapping merges 9 copies of the one before (`<<: [*a, *a, ...]`)."""
    names = "abcdefghijklmnop"[: s.laughs]
    lines = [f"    - &{names[0]} {{lol: 1}}"]
    lines += [f"    - &{name} {{<<: [{', '.join([f'*{prev}'] * 9)}]}}" for prev, name in zip(names, names[1:])]
    return padded(ENTRY_HEAD + "\n".join(lines).encode() + b"\n  pr-link: XXX\n", budget)


def duplicate_keys(budget: int, s: Sizes) -> bytes:
    head = ENTRY_HEAD + b'    - "Tune"\n'
    line = b"  pr-link: XXX\n"
    return padded(head + line * min(100_000, (budget - len(head)) // len(line)), budget)


def tabs_and_crs(budget: int, s: Sizes) -> bytes:
    return fill_bytes(
        b"\r\n- config-keys:\t\r\n\t- dsr1-fp8-mi355x-sglang\t\r\n  description:\t\r\n"
        b'\t- "Tune MI355X SGLang"\t\r\n  pr-link: XXX\t\r\n',
        budget,
    )


def aliases_to_first(budget: int, s: Sizes) -> bytes:
    """Every entry's config-keys is an alias of the first entry's anchor (each alias is an error)."""
    first = b'\n- config-keys: &keys\n    - dsr1-fp8-mi355x-sglang\n  description:\n    - "Tune"\n  pr-link: XXX\n'
    return first + fill_bytes(b'\n- config-keys: *keys\n  description: ["Tune"]\n  pr-link: XXX\n', budget - len(first))


def appended_to_tail(append: Callable[[int, Sizes], bytes]) -> Callable[[Sizes], tuple[bytes, bytes]]:
    def make(s: Sizes) -> tuple[bytes, bytes]:
        base = base_history(s)
        return base, base + append(s.c - len(base), s)

    return make


def normal_big_file(s: Sizes) -> tuple[bytes, bytes]:
    base = history(s.c - len(VALID_ENTRY))
    return base, base + VALID_ENTRY


def every_link_corrected(s: Sizes) -> tuple[bytes, bytes]:
    """2 MB of history, every `pr-link` number changed (a correction PR, appending nothing)."""
    base = history(int(s.c * 0.97))
    return base, re.sub(rb"(pr-link: \S*/pull/)(\d)", rb"\g<1>9\2", base)


CHANGELOGS: tuple[tuple[str, Callable[[Sizes], tuple[bytes, bytes]]], ...] = (
    ("many small valid entries (reference)", appended_to_tail(valid_entries)),
    ("many small bad entries", appended_to_tail(bad_entries)),
    ("one 2 MB description line", appended_to_tail(huge_description)),
    ("`- ` nested 300 deep", appended_to_tail(nested_blocks(DEPTHS[0]))),
    ("`- ` nested 10,000 deep", appended_to_tail(nested_blocks(DEPTHS[1]))),
    ("flow `[[[...]]]` 900 K deep", appended_to_tail(flow_nesting)),
    ("billion laughs (aliases)", appended_to_tail(laughs)),
    ("billion laughs (merge keys)", appended_to_tail(merge_laughs)),
    ("100,000 duplicate keys", appended_to_tail(duplicate_keys)),
    ("tab and CR on every line", appended_to_tail(tabs_and_crs)),
    ("every entry aliases the first", appended_to_tail(aliases_to_first)),
    ("normal: 2 MB history + 1 entry", normal_big_file),
    ("2 MB history, every link corrected", every_link_corrected),
)


# -- callback payloads --------------------------------------------------------------------------------------


def valid_callback() -> dict[str, Any]:
    return {
        "source-repository": policy()["results"]["repository"],
        "pr-number": "1",
        "run-id": "2",
        "app-run-id": "3",
        "comment-id": "4",
        "run-date": "2025-06-30",
        "requested-by": "octocat",
    }


def counts_table(cell: Any) -> dict[str, Any]:
    return {
        row: {column: cell for column in ("new", "duplicate", "skipped", "unmapped", "failed")}
        for row in ("benchmark", "eval", "trace", "power")
    }


def huge_callback_fields(s: Sizes) -> dict[str, Any]:
    fields = list(valid_callback()) + ["counts"]
    return {key: fill("9", s.payload // len(fields)) for key in fields}


def deep_counts(s: Sizes) -> dict[str, Any]:
    cell: Any = 1
    for _ in range(s.deep):
        cell = [cell]
    return {**valid_callback(), "counts": counts_table(cell)}


def many_count_rows(s: Sizes) -> dict[str, Any]:
    table = counts_table(1)
    table.update({f"row-{i:020d}": 1 for i in range(s.payload // 30)})
    return {**valid_callback(), "counts": table}


def huge_judge_fields(s: Sizes) -> dict[str, Any]:
    keys = ("pr-number", "signoff-id", "head-sha", "verdict", "summary", "run-url")
    return {key: fill("9", s.payload // len(keys)) for key in keys}


def huge_judge_url(s: Sizes) -> dict[str, Any]:
    return {
        "pr-number": "1",
        "signoff-id": "comment-1",
        "head-sha": "0" * 40,
        "verdict": "pass",
        "summary": "ok",
        "run-url": "https://" + fill("a", s.payload),
    }


def many_judge_keys(s: Sizes) -> dict[str, Any]:
    return {f"key-{i:020d}": "x" for i in range(s.payload // 30)}


# -- CODEOWNERS and run titles --------------------------------------------------------------------------------


def globstar_rules(size: int) -> str:
    return fill("**/**/**/**/**/**/**/**/x @org/team\n", size)


def bracket_rule(size: int) -> str:
    return "[" * (size - 11) + " @org/team\n"


def escaped_rule(size: int) -> str:
    return fill("\\ ", size - 11) + " @org/team\n"


def distinct_rules(size: int) -> str:
    lines: list[str] = []
    total = 0
    for i in itertools.count():
        line = f"/dir{i}/file{i} @org/team"
        if total + len(line) + 1 > size:
            break
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines) + "\n"


def backtracking_rule(size: int) -> tuple[str, str]:
    return "**/" * GLOBSTARS + "x @org/team\n", "a/" * GLOBSTARS + "y"


def model_tokens(n: int) -> dict[str, str]:
    return {"display_title": fill("model=", n), "name": fill("model=", n)}


def repeated_summary(n: int) -> dict[str, str]:
    return {"display_title": fill("model=a ", n), "name": fill("model=a ", n)}


# -- the calls: each prepares (imports, setup) and returns the thunk that is timed ----------------------------


def commands_parse(body: str) -> Callable[[], Any]:
    from bot.rules import commands

    names = policy()["commands"]
    return lambda: commands.parse(body, names)


def commands_find(body: str) -> Callable[[], Any]:
    from bot.rules import commands

    names = list(policy()["commands"].values())
    return lambda: commands.find_commands(body, names)


def has_phrase(body: str) -> Callable[[], Any]:
    from bot.rules import signoff

    phrase = policy()["signoff_phrase"]
    return lambda: signoff.has_phrase(body, phrase)


def normalise(text: str) -> Callable[[], Any]:
    from bot.rules import checklist

    return lambda: checklist.normalise(text)


def compare(body: str) -> Callable[[], Any]:
    from bot.rules import checklist

    template = checklist.template_items(CHECKLIST_FILE.read_text(), policy()["checklist_heading"])
    if not isinstance(template, checklist.Template):
        raise ValueError(f"{CHECKLIST_FILE} holds no checklist: {template}")
    return lambda: checklist.compare(template, body, SIGNER)


def check_append(files: tuple[bytes, bytes]) -> Callable[[], Any]:
    from bot.rules import changelog

    base, head = files
    return lambda: changelog.check_append(base, head, pr_number=1, canonical_prefix=PREFIX)


def validate_default_branch(files: tuple[bytes, bytes]) -> Callable[[], Any]:
    from bot.rules import changelog

    head = files[1]
    return lambda: changelog.validate_default_branch(head, canonical_prefix=PREFIX)


def parse_callback(payload: dict[str, Any]) -> Callable[[], Any]:
    from bot.rules import results_callbacks

    repository = policy()["results"]["repository"]
    return lambda: results_callbacks.parse_callback("ingest-completed", payload, results_repository=repository)


def judge_result(payload: dict[str, Any]) -> Callable[[], Any]:
    from bot.rules import signoff

    return lambda: signoff.judge_result(payload)


def codeowners_parse(text: str) -> Callable[[], Any]:
    from bot.rules import codeowners

    return lambda: codeowners.parse(text)


def codeowners_owners_of(text_and_path: tuple[str, str]) -> Callable[[], Any]:
    from bot.rules import codeowners

    text, path = text_and_path
    owners = codeowners.parse(text)
    return lambda: owners.owners_of(path)


def gitmodules_repos(text: str) -> Callable[[], Any]:
    from bot.rules import stale_branch

    return lambda: stale_branch.gitmodules_repos(text, "acme/InferenceX")


def key_lines(text: str) -> Callable[[], Any]:
    from bot.rules import stale_branch

    return lambda: stale_branch.key_lines(text)


def unclosed_sections(size: int) -> str:
    """`.gitmodules` of one line of `[submodule "` openers, never closed."""
    return fill('[submodule "', size)


def submodule_sections(size: int) -> str:
    """`.gitmodules` of as many whole sections as fit, each with a path and an ssh url."""
    return fill('[submodule "a"]\n\tpath = a/b\n\turl = git@github.com:acme/b.git\n', size)


def colon_free_keys(size: int) -> str:
    """A master config of one long line that starts like a key and never reaches its colon."""
    return "a" * size


def top_level_keys(size: int) -> str:
    """A master config of as many one-line top-level keys as fit."""
    return fill("dsr1-fp4-mi355x-sglang-x:\n", size)


def run_summarize(run: dict[str, str]) -> Callable[[], Any]:
    from bot.rules import run_summary

    return lambda: run_summary.summarize(run)


# -- the table of cases ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    parser: str
    label: str
    make: Callable[[Sizes], Any]
    call: Callable[[Any], Callable[[], Any]]
    budget: str  # COMMENT or FILE

    @property
    def key(self) -> str:
        return f"{self.parser} | {self.label}"


def at_comment_size(gen: Callable[[int], str]) -> Callable[[Sizes], str]:
    """A case's input: `gen` of the comment size N."""
    return lambda s: gen(s.n)


def comment_cases(
    parser: str, call: Callable[[str], Callable[[], Any]], bodies: tuple[tuple[str, Callable[[int], str]], ...]
) -> list[Case]:
    return [Case(parser, label, at_comment_size(gen), call, COMMENT) for label, gen in bodies]


def file_cases(
    parser: str, call: Callable[[Any], Callable[[], Any]], inputs: tuple[tuple[str, Callable[[Sizes], Any]], ...]
) -> list[Case]:
    return [Case(parser, label, make, call, FILE) for label, make in inputs]


CASES: list[Case] = [
    *comment_cases("commands.parse", commands_parse, COMMENT_BODIES),
    *comment_cases("commands.find_commands", commands_find, COMMENT_BODIES),
    *comment_cases("signoff.has_phrase", has_phrase, COMMENT_BODIES + MARKDOWN_BODIES[1:]),
    *comment_cases("checklist.normalise", normalise, MARKDOWN_BODIES),
    *comment_cases("checklist.compare", compare, SIGNOFF_BODIES),
    *file_cases("changelog.check_append", check_append, CHANGELOGS),
    *file_cases("changelog.validate_default_branch", validate_default_branch, CHANGELOGS),
    *file_cases(
        "results_callbacks.parse_callback",
        parse_callback,
        (
            ("every field a 2 MB string", huge_callback_fields),
            ("counts: each cell nested 100,000 deep", deep_counts),
            ("counts: 840,000 unknown rows", many_count_rows),
        ),
    ),
    *file_cases(
        "signoff.judge_result",
        judge_result,
        (
            ("every field a 4 MB string", huge_judge_fields),
            ("run-url of 25 MB", huge_judge_url),
            ("840,000 unknown keys", many_judge_keys),
        ),
    ),
    Case("codeowners.parse", "`**/**/...` rules, 65 K", lambda s: globstar_rules(s.n), codeowners_parse, COMMENT),
    Case("codeowners.parse", "one `[[[...` rule, 65 K", lambda s: bracket_rule(s.n), codeowners_parse, COMMENT),
    Case("codeowners.parse", "`**/**/...` rules, 2 MB", lambda s: globstar_rules(s.c), codeowners_parse, FILE),
    Case("codeowners.parse", "one `\\ ` escaped rule, 2 MB", lambda s: escaped_rule(s.c), codeowners_parse, FILE),
    Case(
        "codeowners.owners_of",
        f"`**/` x {GLOBSTARS} rule, path {GLOBSTARS} deep",
        lambda s: backtracking_rule(s.n),
        codeowners_owners_of,
        COMMENT,
    ),
    Case(
        "codeowners.owners_of",
        "no match in 2 MB of distinct rules",
        lambda s: (distinct_rules(s.c), "no/where"),
        codeowners_owners_of,
        FILE,
    ),
    Case(
        "stale_branch.gitmodules_repos",
        'one line of `[submodule "` x N',
        lambda s: unclosed_sections(s.c),
        gitmodules_repos,
        FILE,
    ),
    Case(
        "stale_branch.gitmodules_repos", "2 MB of sections", lambda s: submodule_sections(s.c), gitmodules_repos, FILE
    ),
    Case(
        "stale_branch.key_lines", "one 4 MB line without a colon", lambda s: colon_free_keys(2 * s.c), key_lines, FILE
    ),
    Case("stale_branch.key_lines", "4 MB of top-level keys", lambda s: top_level_keys(2 * s.c), key_lines, FILE),
    Case("run_summary.summarize", "title of `model=` x N/6", lambda s: model_tokens(s.n), run_summarize, COMMENT),
    Case("run_summary.summarize", "title of `model=a ` x N/8", lambda s: repeated_summary(s.n), run_summarize, COMMENT),
]


def input_size(value: Any) -> int:
    """Characters (or bytes) of the text a case reads: a changelog's head, a payload's keys and strings (and 1
    for every other value or container, however deep)."""
    if isinstance(value, tuple) and isinstance(value[-1], bytes):
        return len(value[-1])  # (base, head): the head
    total, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, (str, bytes)):
            total += len(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            total += 1
            stack.extend(item)
        else:
            total += 1
    return total


def describe(value: Any) -> str:
    """What a call returned, in a few words."""
    name = type(value).__name__
    if value is None or isinstance(value, bool):
        return str(value)
    if isinstance(value, str):
        return f"str of {len(value):,}" if len(value) > 40 else repr(value)
    if name == "ChangelogResult" and value.ok:
        if value.link_corrections:
            return f"ok, {len(value.link_corrections):,} link corrections"
        return f"ok, {len(value.entries):,} entries"
    errors = value.errors if name == "ChangelogResult" else value if isinstance(value, list) else []
    if errors and type(errors[0]).__name__ == "ChangelogError":
        codes = Counter(e.code for e in errors).most_common(2)
        return f"{len(errors):,} errors: " + ", ".join(f"{code} {count:,}" for code, count in codes)
    if name == "Command":
        return f"/{value.kind} {value.run_id or ''} {value.problem or ''}".strip()
    if isinstance(value, list):
        return f"{len(value):,} {type(value[0]).__name__}" if value else "[]"
    if name == "ChecklistResult":
        return f"ok={value.ok} missing {len(value.missing)} unticked {len(value.unticked)} changed {len(value.changed)}"
    if name == "Rejected":
        return f"rejected {value.code}"
    if name == "CodeOwners":
        return f"{len(value.rules):,} rules, {len(value.problems):,} problems"
    if name == "Match":
        return f"rule at line {value.rule.line}"
    if isinstance(value, dict):
        return "accepted"
    return name


# -- the worker (one case, one tree, in its own process) --------------------------------------------------------


def rss_kb(field_name: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def reset_peak_rss() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # Linux: VmHWM := VmRSS
        return True
    except OSError:
        return False


def emit(**message: Any) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


async def held(
    thunk: Callable[[], Any], run_it: Callable[[Callable[[], Any]], Any] | None = None
) -> tuple[float, list[float], list[float]]:
    """(the call's seconds, the ticker's lateness while idle, while the call ran in a thread), in seconds.
    `run_it` awaits the call another way (the bot's worker process)."""
    loop = asyncio.get_running_loop()
    busy = asyncio.Event()
    lateness: dict[bool, list[float]] = {False: [], True: []}
    stop = asyncio.Event()

    async def ticker() -> None:
        while not stop.is_set():
            due = loop.time() + TICK_S
            state = busy.is_set()
            await asyncio.sleep(TICK_S)
            if busy.is_set() == state:
                lateness[state].append(max(0.0, loop.time() - due))

    task = asyncio.create_task(ticker())
    await asyncio.to_thread(lambda: None)  # the executor's thread exists before anything is measured
    await asyncio.sleep(0.5)  # idle: the ticker's own jitter
    if run_it is not None:
        await run_it(lambda: None)  # the worker process is up before anything is measured
    busy.set()
    started = time.perf_counter()
    await (asyncio.to_thread(thunk) if run_it is None else run_it(thunk))
    elapsed = time.perf_counter() - started
    busy.clear()
    stop.set()
    await task
    return elapsed, lateness[False], lateness[True]


def worker(args: argparse.Namespace) -> int:
    limit = args.memory_limit * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    case = next(c for c in CASES if c.key == args.case)
    import bot

    emit(module=bot.__file__)
    data = case.make(sizes_of(args))
    thunk = case.call(data)
    emit(ready=input_size(data))
    try:
        if args.mode == "memory":
            gc.collect()
            tracemalloc.start()
            thunk()
            emit(peak=tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
        elif args.mode in ("loop", "offload"):
            sys.setswitchinterval(SWITCH_INTERVAL)
            run_it = None
            if args.mode == "offload":  # as the sweep gate runs it: bot.core.offload's worker process
                from bot.core import offload
                from bot.rules import changelog

                base, head = data

                async def run_it(call: Callable[[], Any]) -> Any:
                    if call is thunk:
                        return await offload.run(
                            changelog.check_append,
                            base,
                            head,
                            pr_number=1,
                            canonical_prefix=PREFIX,
                            size=offload.IN_PROCESS_BYTES + len(head),
                        )
                    return await offload.run(len, b"", size=offload.IN_PROCESS_BYTES)

            for _ in range(args.repeat):
                elapsed, idle, busy = asyncio.run(held(thunk, run_it))
                emit(t=elapsed, idle=idle, busy=busy)
            if run_it is not None:
                from bot.core import offload

                offload.shutdown()
        else:
            spent = 0.0
            for index in range(args.repeat):
                gc.collect()
                measured = index == 0 and reset_peak_rss()
                before = rss_kb("VmRSS")
                started = time.perf_counter()
                result = thunk()
                elapsed = time.perf_counter() - started
                peak = rss_kb("VmHWM") if measured else None
                emit(
                    t=elapsed,
                    result=describe(result) if index == 0 else None,
                    rss=(peak - before) / 1024 if peak is not None and before is not None else None,
                )
                del result
                spent += elapsed
                if spent >= args.budget:
                    break
    except BaseException as exc:  # noqa: BLE001 - the figure is what it raised
        emit(error=f"{type(exc).__name__}: {str(exc)[:80]}")
        return 1
    emit(done=True)
    return 0


# -- the parent: run workers, kill them on timeout, collect ---------------------------------------------------


@dataclass
class Run:
    """What one worker reported."""

    times: list[float] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    result: str | None = None
    rss_mb: float | None = None
    peak_mb: float | None = None
    size: int | None = None
    error: str | None = None  # an exception, "timeout", "killed by SIGSEGV"
    module: str | None = None

    @property
    def median(self) -> float | None:
        return statistics.median(self.times) if self.times else None

    @property
    def failure(self) -> str | None:
        """The worker's error when it reported no time, else None."""
        return self.error if not self.times else None

    @property
    def failed(self) -> bool:
        return self.failure is not None


def sizes_of(args: argparse.Namespace) -> Sizes:
    return Sizes(args.size, args.changelog_bytes, PAYLOAD_FACTOR * args.changelog_bytes, args.deep, args.laughs)


def run_worker(tree: Path, case: Case, mode: str, args: argparse.Namespace, repeat: int | None = None) -> Run:
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--worker",
        "--case",
        case.key,
        "--mode",
        mode,
        "--size",
        str(args.size),
        "--changelog-bytes",
        str(args.changelog_bytes),
        "--repeat",
        str(repeat or args.repeat),
        "--budget",
        str(args.budget),
        "--deep",
        str(args.deep),
        "--laughs",
        str(args.laughs),
        "--memory-limit",
        str(args.memory_limit),
    ]
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
    run = Run()
    with tempfile.TemporaryFile("w+") as stderr:
        proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env, cwd=tree, start_new_session=True
        )
        lines: queue.Queue[str | None] = queue.Queue()

        out = proc.stdout
        assert out is not None  # stdout=PIPE

        def read() -> None:
            for line in out:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=read, daemon=True).start()
        while True:
            try:
                line = lines.get(timeout=args.timeout)  # every step (build, each call) gets the whole timeout
            except queue.Empty:
                os.killpg(proc.pid, signal.SIGKILL)
                run.error = f"> {args.timeout:.0f} s"
                break
            if line is None:
                break
            message = json.loads(line)
            run.messages.append(message)
            if "module" in message:
                run.module = message["module"]
            if "ready" in message:
                run.size = message["ready"]
            if "t" in message:
                run.times.append(message["t"])
                run.result = run.result or message.get("result")
                run.rss_mb = run.rss_mb if run.rss_mb is not None else message.get("rss")
            if "peak" in message:
                run.peak_mb = message["peak"] / 1e6
            if "error" in message:
                run.error = message["error"]
        code = proc.wait()
        if code < 0 and run.error is None:
            run.error = f"killed by {signal.Signals(-code).name}"
        elif code != 0 and run.error is None:
            stderr.seek(0)
            run.error = (stderr.read().strip().splitlines() or [f"exit {code}"])[-1][:80]
    if run.module is not None and not run.module.startswith(str(tree)):
        raise RuntimeError(f"the worker for {tree} imported {run.module}")
    return run


def memory_run(tree: Path, case: Case, timed: Run, args: argparse.Namespace) -> Run | None:
    """The tracemalloc run, unless the call failed or is slower than --budget (then RSS+ is the figure)."""
    if timed.median is None or timed.median > args.budget:  # failed, or too slow
        return None
    return run_worker(tree, case, "memory", args)


def snapshot(tree: Path, args: argparse.Namespace) -> tuple[Path, Path, str]:
    """(before, after) trees in `tree`, and a line saying what each is."""
    before, after = tree / "before", tree / "after"
    before.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", args.before, *TREE_PARTS], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
    after.mkdir()
    for part in TREE_PARTS:
        source = ROOT / part
        if source.is_dir():
            shutil.copytree(source, after / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, after / part)
    for side, ref in ((before, args.before), (after, None)):  # the message schemas, as the wheel maps them
        schemas = side / "sweepbot_schemas"
        if ref is None and (ROOT / SCHEMAS).is_dir():
            shutil.copytree(ROOT / SCHEMAS, schemas)
        elif ref is not None:
            found = subprocess.run(["git", "-C", str(ROOT), "archive", ref, SCHEMAS], capture_output=True)
            if found.returncode == 0:  # a ref from before the schemas has none, and needs none
                subprocess.run(["tar", "-x", "-C", str(side)], input=found.stdout, check=True)
                (side / SCHEMAS).rename(schemas)
    git = lambda *a: subprocess.run(["git", "-C", str(ROOT), *a], capture_output=True, text=True).stdout.strip()  # noqa: E731
    dirty = git("status", "--porcelain", "--", *TREE_PARTS).splitlines()
    what = (
        f"before: {args.before} ({git('rev-parse', '--short', args.before + '^{commit}')}); after: the working "
        f"tree at HEAD {git('rev-parse', '--short', 'HEAD')}"
        + (f" with {len(dirty)} uncommitted file(s) in {', '.join(TREE_PARTS)}" if dirty else ", clean")
    )
    return before, after, what


# -- the report ---------------------------------------------------------------------------------------------


def ms(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    value = seconds * 1000
    return f"{value:,.2f}" if value < 10 else f"{value:,.1f}" if value < 1000 else f"{value:,.0f}"


def timing(run: Run | None) -> str:
    if run is None:
        return "—"
    if run.failure is not None:
        return run.failure.split(":")[0]
    return ms(run.median)


def megabytes(timed: Run, run: Run | None) -> str:
    """The tracemalloc peak; for a call too slow to trace, the RSS growth of its timed run (marked RSS+)."""
    if run is None:
        return "—" if timed.rss_mb is None else f"RSS+ {timed.rss_mb:,.1f}"
    if run.peak_mb is None:
        return "—" if run.error is None else run.error.split(":")[0]
    return f"{run.peak_mb:,.1f}"


def ratio(before: Run, after: Run, timeout: float) -> str:
    if after.median is None:
        return "—"
    low = max(after.median, 1e-6)
    if before.median is None:
        return f"> {timeout / low:,.0f}x" if (before.failure or "").startswith(">") else "—"
    value = before.median / low
    return f"{value:,.0f}x" if value >= 10 else f"{value:.2f}x"


def verdict(case: Case, after: Run, memory: Run | None) -> str:
    seconds, megs = BUDGETS[case.budget]
    if after.median is None:
        return f"OVER ({(after.failure or 'no time').split(':')[0]})"
    over = []
    if after.median > seconds:
        over.append("time")
    if megs is not None and memory is not None and memory.peak_mb is not None and memory.peak_mb > megs:
        over.append("memory")
    if megs is not None and after.rss_mb is not None and after.rss_mb > megs:
        over.append("RSS")
    limit = f"{seconds * 1000:.0f} ms" + (f", {megs:.0f} MB" if megs else "")
    return f"OVER ({', '.join(over)}; {limit})" if over else f"ok ({limit})"


def size_text(run: Run) -> str:
    if run.size is None:
        return "—"
    return f"{run.size / 2**20:,.1f} MB" if run.size >= 2**20 else f"{run.size:,}"


def cell(text: str) -> str:
    return text.replace("|", "\\|")


@dataclass
class Row:
    case: Case
    before: Run
    after: Run
    before_memory: Run | None
    after_memory: Run | None


def print_table(rows: list[Row], timeout: float) -> None:
    print(
        "| parser | input | size | before ms | after ms | before/after | before peak MB | after peak MB "
        "| after RSS+ MB | runs b/a | after within budget | after returns |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    for r in rows:
        rss = "—" if r.after.rss_mb is None else f"{r.after.rss_mb:,.1f}"
        print(
            f"| {r.case.parser} | {cell(r.case.label)} | {size_text(r.after)} | {timing(r.before)} | "
            f"{timing(r.after)} | {ratio(r.before, r.after, timeout)} | {megabytes(r.before, r.before_memory)} | "
            f"{megabytes(r.after, r.after_memory)} | {rss} | {len(r.before.times)}/{len(r.after.times)} | "
            f"{verdict(r.case, r.after, r.after_memory)} | {cell(r.after.result or r.after.error or '—')} |"
        )


def slowest(rows: list[Row], side: str, count: int = 5) -> list[str]:
    def key(row: Row) -> float:
        run: Run = getattr(row, side)
        return float("inf") if run.median is None else run.median

    ranked = sorted(rows, key=key, reverse=True)[:count]
    return [
        f"{r.case.parser} on {r.case.label} ({timing(getattr(r, side))}"
        + ("" if getattr(r, side).failed else " ms")
        + ")"
        for r in ranked
    ]


def loop_held(rows: list[Row], after_tree: Path, args: argparse.Namespace) -> None:
    candidates = [
        (r.after.median, r) for r in rows if r.case.parser == "changelog.check_append" and r.after.median is not None
    ]
    if not candidates:
        print("loop held: no check_append case completed on after")
        return
    worst = max(candidates, key=lambda timed: timed[0])[1]
    for mode, how in (("loop", "via asyncio.to_thread"), ("offload", "via bot.core.offload (the worker process)")):
        run = run_worker(after_tree, worst.case, mode, args, repeat=max(1, min(args.repeat, 3)))
        if not run.times:
            print(f"loop held: check_append on {worst.case.label} {how}: {run.error}")
            continue
        idle = sorted(x for m in run.messages if "idle" in m for x in m["idle"])
        busy = sorted(x for m in run.messages if "busy" in m for x in m["busy"])
        print(
            f"loop held (after): check_append on {worst.case.label!r} ({size_text(run)}) {how}, "
            f"{len(run.times)} run(s), call median {ms(statistics.median(run.times))} ms; a ticker sleeping "
            f"{TICK_S * 1000:.0f} ms on the loop, switchinterval {SWITCH_INTERVAL * 1000:.0f} ms: lateness during "
            f"the call max {ms(busy[-1] if busy else None)} ms, p99 {ms(_p99(busy))} ms over {len(busy):,} ticks "
            f"(idle, same loop: max {ms(idle[-1] if idle else None)} ms, p99 {ms(_p99(idle))} ms)"
        )


def _p99(values: list[float]) -> float:
    return values[min(len(values) - 1, max(0, -(-len(values) * 99 // 100) - 1))] if values else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", default=BEFORE_REF, help="git ref of the before tree")
    parser.add_argument("--size", type=int, default=COMMENT_CHARS, help="characters of a comment-sized input")
    parser.add_argument("--changelog-bytes", type=int, default=CHANGELOG_BYTES, help="bytes of a changelog head")
    parser.add_argument("--repeat", type=int, default=REPEAT, help="timed calls per case and tree (median)")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S, help="seconds a call may take before a kill")
    parser.add_argument("--budget", type=float, default=BUDGET_S, help="seconds of calls after which a worker stops")
    parser.add_argument("--memory-limit", type=int, default=MEMORY_LIMIT_MB, help="RLIMIT_AS of a worker, MB")
    parser.add_argument("--deep", type=int, default=DEEP, help=argparse.SUPPRESS)
    parser.add_argument("--laughs", type=int, default=LAUGHS, help=argparse.SUPPRESS)
    parser.add_argument("--only", action="append", default=[], help="only cases whose 'parser | input' has this")
    parser.add_argument("--quick", action="store_true", help="small sizes, 1 repeat: a smoke test")
    parser.add_argument("--no-loop", action="store_true", help="skip the loop-held figure")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="time", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)
    if args.quick:
        for name, value in QUICK.items():
            setattr(args, name, value)
    cases = [c for c in CASES if all(text in c.key for text in args.only)]
    with tempfile.TemporaryDirectory(prefix="bench-parsers-") as tmp:
        before_tree, after_tree, what = snapshot(Path(tmp), args)
        print(
            f"parsers benchmark, {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}: {os.cpu_count()} cores, "
            f"Python {platform.python_version()} ({platform.machine()}), {platform.node()}"
        )
        print(f"{what}")
        print(
            f"comment-sized inputs {args.size:,} characters, changelog heads <= {args.changelog_bytes:,} bytes "
            f"(base: the real tail, {len(base_history(sizes_of(args))):,} bytes), callback payloads "
            f"~{PAYLOAD_FACTOR * args.changelog_bytes / 2**20:,.0f} MB; median of up to {args.repeat} calls "
            f"(fewer after {args.budget:.0f} s of calls), each in a subprocess, killed after {args.timeout:.0f} s; "
            f"peak MB: tracemalloc in a separate run; RSS+ MB: peak RSS growth in the first timed call; "
            f"RLIMIT_AS {args.memory_limit:,} MB"
        )
        rows: list[Row] = []
        for index, case in enumerate(cases, start=1):
            before = run_worker(before_tree, case, "time", args)
            after = run_worker(after_tree, case, "time", args)
            before_memory = memory_run(before_tree, case, before, args)
            after_memory = memory_run(after_tree, case, after, args)
            rows.append(Row(case, before, after, before_memory, after_memory))
            print(
                f"[{index}/{len(cases)}] {case.key}: before {timing(before)}, after {timing(after)}",
                file=sys.stderr,
                flush=True,
            )
        print()
        print_table(rows, args.timeout)
        print()
        over = [r for r in rows if verdict(r.case, r.after, r.after_memory).startswith("OVER")]
        print(
            f"after within budget: {len(rows) - len(over)}/{len(rows)}"
            + (f"; over: {'; '.join(f'{r.case.parser} on {r.case.label}' for r in over)}" if over else "")
        )
        print(f"slowest before: {'; '.join(slowest(rows, 'before'))}")
        print(f"slowest after: {'; '.join(slowest(rows, 'after'))}")
        if not args.no_loop:
            loop_held(rows, after_tree, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
