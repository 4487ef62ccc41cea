"""The changelog append check (bot/rules/changelog/) against docs/spec.md, "The performance changelog": a table
of cases, then real data.

Each case gives the file at the PR's base (None: new on this PR), at its head, and the PR number, and
expects either exactly these errors, as (code, head line) pairs, or exactly these appended entries.
"""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass, field
from typing import Any, overload

import pytest
import yaml

import bot.rules.changelog.entries
import bot.rules.changelog.errors
import bot.rules.changelog.loading
import bot.rules.changelog.results
from bot.rules.changelog import (
    ChangelogError,
    ChangelogLimits,
    ChangelogResult,
    check_append,
    check_default_branch,
    validate_default_branch,
)

PREFIX = "https://github.com/SemiAnalysisAI/InferenceX/pull/"
PR = 1234

# Two entries of history, 11 lines; what a PR appends starts at line 12 (the empty line), its entry at 13.
HISTORY = f"""\
- config-keys:
    - dsr1-fp8-h200-sglang
  description:
    - "Update image"
  pr-link: {PREFIX}1033

- config-keys:
    - glm5-fp8-mi355x-*
  description:
    - "Add GLM"
  pr-link: {PREFIX}1040
"""


def entry(
    link: str = "XXX", *extra: str, keys: tuple[str, ...] = ("dsr1-fp8-b200-sglang",), desc: tuple[str, ...] = ("Tune",)
) -> str:
    """One entry; with one key and one description line its `pr-link` is its 5th line, `extra` lines follow."""
    lines = [
        "- config-keys:",
        *(f"    - {k}" for k in keys),
        "  description:",
        *(f'    - "{d}"' for d in desc),
        f"  pr-link: {link}",
        *extra,
    ]
    return "\n".join(lines) + "\n"


def appended(*entries: str) -> str:
    """HISTORY plus entries, each after one empty line: the first entry starts at line 13."""
    return HISTORY + "".join("\n" + e for e in entries)


@dataclass
class Case:
    name: str
    head: str | bytes
    errors: list[tuple[str, int]] = field(default_factory=list)
    entries: list[dict[str, Any]] = field(default_factory=list)
    base: str | bytes | None = HISTORY
    pr: int = PR
    params: dict[str, Any] = field(default_factory=dict)  # of the first error: a subset that must match
    corrections: list[tuple[int, str]] = field(default_factory=list)


@overload
def _b(text: str | bytes) -> bytes: ...
@overload
def _b(text: str | bytes | None) -> bytes | None: ...
def _b(text: str | bytes | None) -> bytes | None:
    """A head or base as check_append takes it: str encoded, None (no base: a new file) kept."""
    return text.encode() if isinstance(text, str) else text


E = entry()
ANCHORED = "- &base\n  " + E[2:]  # E with the anchor `&base` on its own first line: lines 13 to 18
CASES = [
    # --- history: the base must stay a byte-exact prefix
    Case(
        "history edited",
        HISTORY.replace("Update image", "Update image v2") + "\n" + E,
        errors=[("history-changed", 4)],
        params={"change": "changed", "base_line": 4, "expected": '    - "Update image"'},
    ),
    Case(
        "history entry deleted",
        HISTORY.split("\n\n")[1] + "\n" + E,
        errors=[("history-changed", 2)],
        params={"change": "removed"},
    ),
    Case(
        "history reordered",
        HISTORY.split("\n\n")[1] + "\n" + HISTORY.split("\n\n")[0] + "\n",
        errors=[("history-changed", 2)],
        params={"change": "moved"},
    ),
    Case(
        "history gains a trailing space",
        HISTORY.replace("  description:\n", "  description: \n", 1) + "\n" + E,
        errors=[("history-changed", 3)],
        params={"change": "whitespace"},
    ),
    Case(
        "history's trailing spaces trimmed",
        appended(E).replace("1033\n  \n", "1033\n\n"),
        base=HISTORY.replace("1033\n\n", "1033\n  \n"),
        errors=[("history-changed", 6)],
        params={"change": "whitespace", "expected": "  ", "found": ""},
    ),
    Case(
        "history converted to CRLF",
        appended(E).replace("\n", "\r\n"),
        errors=[("history-changed", 1)],
        params={"change": "whitespace"},
    ),
    Case(
        "entry inserted into the history",
        HISTORY.replace("1033\n\n", "1033\n\n" + E + "\n"),
        errors=[("history-changed", 8)],
        params={"change": "inserted"},
    ),
    Case(
        "history's final newline removed",
        HISTORY[:-1],
        errors=[("history-changed", 11)],
        params={"change": "whitespace"},
    ),
    Case(
        "history's last entry deleted",
        HISTORY.split("\n\n")[0] + "\n",
        errors=[("history-changed", 6)],
        params={"change": "removed"},
    ),
    Case(
        "appended field extends the last history entry",
        HISTORY + "  evals-only: true\n",
        errors=[("outside-entry", 12)],
        params={"indented": True},
    ),
    Case(
        "base without final newline extended on its last line",
        HISTORY[:-1] + "/\n\n" + E,
        base=HISTORY[:-1],
        errors=[("history-changed", 11)],
        params={"change": "extended"},
    ),
    Case(
        "base without final newline, append after a newline",
        HISTORY[:-1] + "\n\n" + E,
        base=HISTORY[:-1],
        entries=[{"line": 13}],
    ),
    # --- separators and the end of the file
    Case(
        "no empty line before the entry",
        HISTORY + E,
        errors=[("separator", 12)],
        params={"blank_lines": 0, "expected": 1},
    ),
    Case(
        "two empty lines before the entry", HISTORY + "\n\n" + E, errors=[("separator", 14)], params={"blank_lines": 2}
    ),
    Case("no empty line between appended entries", appended(E + entry(PREFIX + "XXX")), errors=[("separator", 18)]),
    Case(
        "two empty lines between appended entries",
        appended(E + "\n", entry(PREFIX + "XXX")),
        errors=[("separator", 20)],
        params={"blank_lines": 2},
    ),
    Case("missing final newline", appended(E)[:-1], errors=[("trailing-newline", 17)], params={"problem": "missing"}),
    Case(
        "two final newlines",
        appended(E) + "\n",
        errors=[("trailing-newline", 18)],
        params={"problem": "extra-blank-lines", "blank_lines": 1},
    ),
    Case("appending only an empty line", HISTORY + "\n", errors=[("trailing-newline", 12)]),
    Case("separator of spaces, as in the real history", HISTORY + "  \n" + E, entries=[{"line": 13}]),
    Case("history already ends with an empty line", HISTORY + "\n" + E, base=HISTORY + "\n", entries=[{"line": 13}]),
    Case(
        "history ends with an empty line and one more is added",
        HISTORY + "\n\n" + E,
        base=HISTORY + "\n",
        errors=[("separator", 14)],
    ),
    Case(
        "new file",
        E + "\n" + entry(PREFIX + str(PR), "  evals-only: true"),
        base=None,
        entries=[{"line": 1, "pr_link": "XXX"}, {"line": 7, "evals_only": True}],
    ),
    Case(
        "new file starting with an empty line",
        "\n" + E,
        base=None,
        errors=[("separator", 2)],
        params={"expected": 0, "blank_lines": 1},
    ),
    Case("new file with a byte-order mark", "\ufeff" + E, base=None, entries=[{"line": 1}]),
    Case("new empty file", "", base=None, entries=[]),
    Case("head identical to base", HISTORY, entries=[]),
    # --- characters and encoding
    Case(
        "tab in the indentation", appended(E.replace("    - dsr1-fp8-b200", "\t- dsr1-fp8-b200")), errors=[("tab", 14)]
    ),
    Case("tab inside a description", appended(entry("XXX", desc=("a\tb",))), errors=[("tab", 16)]),
    Case(
        "CRLF appended entry",
        HISTORY + ("\n" + E).replace("\n", "\r\n"),
        errors=[("cr", 12)],
        params={"lines": [12, 13, 14, 15, 16, 17], "count": 6},
    ),
    Case("NUL byte", appended(entry("XXX", desc=("a\0b",))), errors=[("nul", 16)]),
    Case(
        "control character",
        appended(entry("XXX", desc=("a\x01b",))),
        errors=[("control-character", 16)],
        params={"character": "U+0001"},
    ),
    Case(
        "invalid UTF-8",
        HISTORY.encode() + b"\n" + entry("XXX", desc=("caf\xc3",)).encode().replace("caf\xc3".encode(), b"caf\xe9"),
        errors=[("not-utf8", 16)],
        params={"lines": [16]},
    ),
    Case(
        "valid UTF-8 beyond ASCII",
        appended(entry("XXX", desc=("吞吐量 — Überblick",))),
        entries=[{"line": 13, "description": ("吞吐量 — Überblick",)}],
    ),
    # --- YAML
    Case(
        "duplicate key",
        appended(entry("XXX", f"  pr-link: {PREFIX}{PR}")),
        errors=[("duplicate-key", 18)],
        params={"key": "pr-link", "first_line": 17},
    ),
    Case(
        "duplicate key in a flow mapping",
        appended("- {config-keys: [a], description: [b], pr-link: XXX, description: [c]}\n"),
        errors=[("duplicate-key", 13)],
        params={"key": "description"},
    ),
    Case(
        "YAML syntax error, and an error in another entry",
        appended(entry("XXX", desc=("unclosed",)).replace('"unclosed"', '"unclosed'), entry("TBD")),
        errors=[("yaml-syntax", 16), ("pr-link-not-accepted", 23)],
    ),
    Case("entry is a string", appended("- just a note\n"), errors=[("not-a-mapping", 13)], params={"actual": "string"}),
    Case("document marker", appended(E) + "---\n", errors=[("document-marker", 18)]),
    Case(
        "a mapping instead of a list item",
        HISTORY + "\nconfig-keys:\n  - a\n",
        errors=[("outside-entry", 13)],
        params={"indented": False},
    ),
    Case(
        "comment lines are fine",
        appended("# the new entry\n" + E.replace("  description:\n", "  # why\n  description:\n")),
        errors=[("separator", 14)],
    ),
    # --- fields
    Case(
        "unknown field with a near name",
        appended(entry("XXX", "  evals_only: true")),
        errors=[("unknown-field", 18)],
        params={"field": "evals_only", "suggestion": "evals-only"},
    ),
    Case(
        "unknown field",
        appended(entry("XXX", "  owner: me")),
        errors=[("unknown-field", 18)],
        params={"field": "owner", "suggestion": None},
    ),
    Case(
        "missing description",
        appended("- config-keys:\n    - a\n  pr-link: XXX\n"),
        errors=[("missing-field", 13)],
        params={"field": "description"},
    ),
    Case(
        "missing config-keys and pr-link",
        appended("- description:\n    - a\n"),
        errors=[("missing-field", 13), ("missing-field", 13)],
    ),
    Case(
        "config-keys empty",
        appended("- config-keys: []\n  description:\n    - a\n  pr-link: XXX\n"),
        errors=[("empty-list", 13)],
        params={"field": "config-keys"},
    ),
    Case(
        "config-keys a string",
        appended("- config-keys: a\n  description:\n    - a\n  pr-link: XXX\n"),
        errors=[("wrong-type", 13)],
        params={"field": "config-keys", "actual": "string"},
    ),
    Case(
        "config-keys item not a string",
        appended(entry("XXX", keys=("ok-*", "123", "yes"))),
        errors=[("wrong-type", 15), ("wrong-type", 16)],
        params={"index": 1, "actual": "integer"},
    ),
    Case(
        "config-keys wildcards",
        appended(entry("XXX", keys=("dsr1-*-mi355x-?glang", '"*-mtp"'))),
        entries=[{"config_keys": ("dsr1-*-mi355x-?glang", "*-mtp")}],
    ),
    Case(
        "config-key starting with an unquoted *",
        appended(entry("XXX", keys=("*-mtp",))),
        errors=[("yaml-syntax", 14)],
        params={"problem": "found undefined alias"},
    ),
    Case(
        "description a string",
        appended("- config-keys:\n    - a\n  description: words\n  pr-link: XXX\n"),
        errors=[("wrong-type", 15)],
        params={"field": "description"},
    ),
    Case(
        "description empty string and a date",
        appended(entry("XXX", desc=("",)).replace('    - ""', '    - ""\n    - 2026-01-01')),
        errors=[("empty-string", 16), ("wrong-type", 17)],
    ),
    Case(
        "scenario-type valid",
        appended(entry("XXX", "  scenario-type:", "    - fixed-seq-len", "    - agentic-coding")),
        entries=[{"scenario_type": ("fixed-seq-len", "agentic-coding")}],
    ),
    Case(
        "scenario-type unknown value",
        appended(entry("XXX", "  scenario-type:", "    - agentic")),
        errors=[("invalid-value", 19)],
        params={"value": "agentic"},
    ),
    Case("scenario-type empty", appended(entry("XXX", "  scenario-type: []")), errors=[("empty-list", 18)]),
    Case(
        "booleans given as a string, a number and null",
        appended(entry("XXX", '  evals-only: "true"', "  all-evals: 1", "  append-only:")),
        errors=[("wrong-type", 18), ("wrong-type", 19), ("wrong-type", 20)],
        params={"field": "evals-only", "actual": "string"},
    ),
    Case(
        "booleans valid",
        appended(entry("XXX", "  all-evals: true", "  evals-only: false")),
        entries=[{"all_evals": True, "evals_only": False, "append_only": False}],
    ),
    Case(
        "eval-min-prefill-ep valid",
        appended(entry("XXX", "  eval-min-prefill-ep: 4")),
        entries=[{"eval_min_prefill_ep": 4}],
    ),
    Case(
        "eval-min-prefill-ep zero",
        appended(entry("XXX", "  eval-min-prefill-ep: 0")),
        errors=[("out-of-range", 18)],
        params={"value": 0, "minimum": 1},
    ),
    Case(
        "eval-min-prefill-ep a boolean",
        appended(entry("XXX", "  eval-min-prefill-ep: true")),
        errors=[("wrong-type", 18)],
        params={"actual": "boolean"},
    ),
    Case(
        "eval-min-prefill-ep a string and a float",
        appended(entry("XXX", '  eval-min-prefill-ep: "2"'), entry("XXX", "  eval-min-prefill-ep: 1.5")),
        errors=[("wrong-type", 18), ("wrong-type", 25)],
    ),
    Case(
        "append-only with evals-only",
        appended(entry("XXX", "  append-only: true", "  evals-only: true")),
        errors=[("append-only-combination", 18)],
        params={"combined": ["evals-only"]},
    ),
    Case(
        "append-only with all-evals and evals-only",
        appended(entry("XXX", "  all-evals: true", "  evals-only: true", "  append-only: true")),
        errors=[("append-only-combination", 20)],
        params={"combined": ["evals-only", "all-evals"]},
    ),
    Case(
        "append-only with evals-only false",
        appended(entry("XXX", "  append-only: true", "  evals-only: false")),
        entries=[{"append_only": True, "evals_only": False}],
    ),
    # --- pr-link forms
    Case("pr-link XXX", appended(entry("XXX")), entries=[{"pr_link": "XXX"}]),
    Case("pr-link prefix + XXX", appended(entry(PREFIX + "XXX")), entries=[{"pr_link": PREFIX + "XXX"}]),
    Case("pr-link prefix + this PR", appended(entry(f"{PREFIX}{PR}")), entries=[{"pr_link": f"{PREFIX}{PR}"}]),
    Case("pr-link quoted", appended(entry('"XXX"')), entries=[{"pr_link": "XXX"}]),
    Case(
        "pr-link TBD",
        appended(entry("TBD")),
        errors=[("pr-link-not-accepted", 17)],
        params={"value": "TBD", "pr_number": PR},
    ),
    Case("pr-link another PR's number", appended(entry(f"{PREFIX}999")), errors=[("pr-link-not-accepted", 17)]),
    Case("pr-link trailing slash", appended(entry(f"{PREFIX}{PR}/")), errors=[("pr-link-not-accepted", 17)]),
    Case(
        "pr-link http",
        appended(entry(f"http://github.com/SemiAnalysisAI/InferenceX/pull/{PR}")),
        errors=[("pr-link-not-accepted", 17)],
    ),
    Case("pr-link /changes", appended(entry(f"{PREFIX}{PR}/changes")), errors=[("pr-link-not-accepted", 17)]),
    Case("pr-link lower-case xxx", appended(entry("xxx")), errors=[("pr-link-not-accepted", 17)]),
    Case(
        "pr-link whitespace inside quotes",
        appended(entry('" XXX"')),
        errors=[("pr-link-not-accepted", 17)],
        params={"value": " XXX"},
    ),
    Case(
        "pr-link trailing spaces",
        appended(entry("XXX  ")),
        errors=[("pr-link-format", 17)],
        params={"problem": "trailing-spaces"},
    ),
    Case(
        "pr-link two spaces after the colon",
        appended(entry(" XXX")),
        errors=[("pr-link-format", 17)],
        params={"problem": "spacing-around-colon"},
    ),
    Case(
        "pr-link trailing comment",
        appended(entry("XXX # fill in")),
        errors=[("pr-link-format", 17)],
        params={"problem": "text-after-link"},
    ),
    Case(
        "pr-link as a block scalar",
        appended(entry("|-\n    XXX")),
        errors=[("pr-link-format", 17)],
        params={"problem": "block-scalar"},
    ),
    Case(
        "pr-link only a comment",
        appended(entry(f"#{PR}")),
        errors=[("wrong-type", 17)],
        params={"field": "pr-link", "actual": "null"},
    ),
    Case("pr-link a number", appended(entry(str(PR))), errors=[("wrong-type", 17)], params={"actual": "integer"}),
    Case(
        "pr-link on the next line",
        appended(entry("", f"    {PREFIX}{PR}").replace("pr-link: \n", "pr-link:\n")),
        errors=[("pr-link-next-line", 17)],
    ),
    Case(
        "pr-link missing",
        appended("- config-keys:\n    - a\n  description:\n    - b\n"),
        errors=[("missing-field", 13)],
        params={"field": "pr-link"},
    ),
    Case("entry with its dash alone on a line", appended("-\n  " + E[2:]), entries=[{"line": 13, "pr_link": "XXX"}]),
    Case("dash alone on a line, no empty line before", HISTORY + "-\n  " + E[2:], errors=[("separator", 12)]),
    Case(
        "pr-link in a flow entry",
        appended("- {config-keys: [a], description: [b], pr-link: XXX}\n"),
        entries=[{"line": 13, "pr_link": "XXX"}],
    ),
    # --- the exception: a PR that appends nothing may correct links of existing entries
    Case(
        "link corrected",
        HISTORY.replace(f"{PREFIX}1040", f"{PREFIX}1041"),
        corrections=[(11, f"{PREFIX}1041")],
        entries=[],
    ),
    Case(
        "placeholder link corrected",
        HISTORY.replace(f"{PREFIX}1040", f"{PREFIX}1040"),
        base=HISTORY.replace(f"{PREFIX}1040", f"{PREFIX}XXX"),
        corrections=[(11, f"{PREFIX}1040")],
    ),
    Case(
        "two links corrected",
        HISTORY.replace("1033", "1", 1).replace("1040", "2"),
        base=HISTORY.replace("1033", "XXX", 1).replace(f"{PREFIX}1040", "TBD"),
        corrections=[(5, f"{PREFIX}1"), (11, f"{PREFIX}2")],
    ),
    Case(
        "link corrected to TBD",
        HISTORY.replace(f"{PREFIX}1040", "TBD"),
        errors=[("link-correction-not-accepted", 11)],
        params={"value": "TBD"},
    ),
    Case(
        "link corrected with a trailing slash",
        HISTORY.replace("1040", "1040/"),
        errors=[("link-correction-not-accepted", 11)],
    ),
    Case(
        "link on the next line corrected there",
        HISTORY.replace(f"pr-link: {PREFIX}1040", f"pr-link:\n    {PREFIX}1041"),
        base=HISTORY.replace(f"pr-link: {PREFIX}1040", f"pr-link:\n    {PREFIX}1040"),
        errors=[("link-correction-not-accepted", 11)],
        params={"reason": "value-on-next-line"},
    ),
    Case(
        "link corrected and an entry appended",
        appended(E).replace("1040", "1041"),
        errors=[("correction-with-append", 11)],
        params={"appended_line": 12},
    ),
    Case(
        "link corrected and a description changed",
        HISTORY.replace("1040", "1041").replace("Update image", "Update images"),
        errors=[("history-changed", 4)],
        params={"change": "changed"},
    ),
    Case(
        "link corrected and a field added after it",
        HISTORY.replace("1033\n", "1034\n  evals-only: true\n"),
        errors=[("history-changed", 6)],
        params={"change": "inserted"},
    ),
    Case(
        "link on the next line corrected onto its key's line",
        HISTORY.replace(f"pr-link: {PREFIX}1040", f"pr-link: {PREFIX}1040"),
        base=HISTORY.replace(f"pr-link: {PREFIX}1040", f"pr-link: \n    {PREFIX}1040"),
        corrections=[(11, f"{PREFIX}1040")],
    ),
    # --- YAML merge keys and aliases: an entry says what its own lines say
    Case(
        "merge key with an inline mapping",
        appended(entry("XXX", "  <<: {evals-only: true}")),
        errors=[("unknown-field", 18)],
        params={"field": "<<", "merge_key": True, "suggestion": None},
    ),
    Case(
        "merge key bringing the required fields",
        appended("- <<: {config-keys: [a], description: [b], pr-link: XXX}\n"),
        errors=[("unknown-field", 13), ("missing-field", 13), ("missing-field", 13), ("missing-field", 13)],
        params={"field": "<<", "merge_key": True},
    ),
    Case(
        "merge key with an alias to an anchor in an earlier appended entry",
        appended(ANCHORED, "- <<: *base\n  evals-only: true\n"),
        errors=[("unknown-field", 20), ("missing-field", 20), ("missing-field", 20), ("missing-field", 20)],
        params={"field": "<<", "merge_key": True},
    ),
    Case(
        "merge key with an alias, after the entry's own fields",
        appended(ANCHORED, entry("XXX", "  <<: *base")),
        errors=[("unknown-field", 25)],
        params={"field": "<<", "merge_key": True},
    ),
    Case(
        "merge key in one of three appended entries",
        appended(E, entry("XXX", "  <<: {evals-only: true}"), entry(PREFIX + "XXX")),
        errors=[("unknown-field", 24)],
        params={"field": "<<", "merge_key": True},
    ),
    Case(
        "merge key whose value is not a mapping",
        appended(entry("XXX", "  <<: 5")),
        errors=[("unknown-field", 18)],
        params={"field": "<<", "merge_key": True},
    ),
    Case(
        "merge key written as a !!merge tag",
        appended(entry("XXX", "  !!merge x: {evals-only: true}")),
        errors=[("unknown-field", 18)],
        params={"field": "<<", "merge_key": True},
    ),
    Case(
        "merge key, and a syntax error in another entry",
        appended(
            entry("XXX", "  <<: {evals-only: true}"),
            entry("XXX", desc=("unclosed",)).replace('"unclosed"', '"unclosed'),
        ),
        errors=[("unknown-field", 18), ("yaml-syntax", 23)],
        params={"field": "<<", "merge_key": True},
    ),
    Case(
        "a quoted << is an ordinary unknown field",
        appended(entry("XXX", '  "<<": {evals-only: true}')),
        errors=[("unknown-field", 18)],
        params={"field": "<<", "merge_key": False},
    ),
    Case(
        "alias to a value in another appended entry",
        appended(entry("XXX", "  scenario-type: &s [agentic-coding]"), entry("XXX", "  scenario-type: *s")),
        errors=[("yaml-syntax", 25)],
        params={"needs_quotes": True},
    ),
    Case(
        "alias to another entry's value that is wrong here",
        appended(entry("XXX", keys=("&k agentic",)), entry("XXX", "  scenario-type: [*k]")),
        errors=[("yaml-syntax", 24)],
        params={"needs_quotes": True},
    ),
    Case(
        "pr-link an alias to another entry's link", appended(entry("&l XXX"), entry("*l")), errors=[("yaml-syntax", 23)]
    ),
    Case(
        "entry an alias of another appended entry",
        appended(ANCHORED, "- *base\n"),
        errors=[("yaml-syntax", 20)],
        params={"needs_quotes": True},
    ),
    Case(
        "entry an alias, without an empty line before it",
        appended(ANCHORED) + "- *base\n",
        errors=[("yaml-syntax", 19), ("separator", 19)],
    ),
    Case(
        "aliases within one entry",
        appended("- config-keys: &k [a]\n  description: *k\n  pr-link: XXX\n"),
        entries=[{"line": 13, "config_keys": ("a",), "description": ("a",)}],
    ),
    # --- real-looking appends of several entries
    Case(
        "three entries from one PR",
        appended(
            entry(
                PREFIX + str(PR),
                "  scenario-type:",
                "    - fixed-seq-len",
                keys=("dsr1-fp4-mi355x-sglang", "dsr1-fp4-mi355x-sglang-mtp"),
            ),
            entry("XXX", "  evals-only: true"),
            entry(
                PREFIX + "XXX",
                "  append-only: true",
                "  eval-min-prefill-ep: 2",
                desc=("Refresh: image v0.5.12 (rocm7.2)", "Add --enable-flashinfer-allreduce-fusion"),
            ),
        ),
        entries=[
            {
                "line": 13,
                "config_keys": ("dsr1-fp4-mi355x-sglang", "dsr1-fp4-mi355x-sglang-mtp"),
                "scenario_type": ("fixed-seq-len",),
            },
            {"line": 22, "evals_only": True, "append_only": False},
            {
                "line": 29,
                "append_only": True,
                "eval_min_prefill_ep": 2,
                "description": ("Refresh: image v0.5.12 (rocm7.2)", "Add --enable-flashinfer-allreduce-fusion"),
            },
        ],
    ),
    Case(
        "several entries, several errors",
        appended(
            entry("TBD"),
            entry("XXX", "  evals-only: yes please"),
            entry(f"{PREFIX}{PR}", "  append-only: true", "  all-evals: true"),
        ),
        errors=[("pr-link-not-accepted", 17), ("wrong-type", 24), ("append-only-combination", 31)],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case(case: Case):
    result = check_append(_b(case.base), _b(case.head), pr_number=case.pr, canonical_prefix=PREFIX)
    assert sorted((e.line, e.code) for e in result.errors) == sorted((line, code) for code, line in case.errors)
    assert result.ok is not case.errors
    for key, value in case.params.items():
        assert result.errors[0].params[key] == value, key
    if case.errors:
        assert result.entries == ()  # never entries alongside errors: a gate cannot take a half-valid file
    assert len(result.entries) == len(case.entries)
    for got, want in zip(result.entries, case.entries):
        for key, value in want.items():
            assert getattr(got, key) == value, key
    assert result.has_entry is bool(case.entries)
    assert [(c.line, c.new) for c in result.link_corrections] == case.corrections


def test_case_count():
    assert len(CASES) >= 40
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_with_pure_python_yaml(case: Case, monkeypatch: pytest.MonkeyPatch):
    """libyaml and PyYAML's own parser disagree on details (a plain scalar's style is "" in one, None in the
    other); the rules must not depend on which one is installed."""
    monkeypatch.setattr(
        bot.rules.changelog.loading, "Loader", bot.rules.changelog.loading._loader_class(yaml.SafeLoader)
    )
    result = check_append(_b(case.base), _b(case.head), pr_number=case.pr, canonical_prefix=PREFIX)
    assert sorted((e.line, e.code) for e in result.errors) == sorted((line, code) for code, line in case.errors)
    assert len(result.entries) == len(case.entries)


def test_flags_of_the_result():
    result = check_append(
        _b(HISTORY),
        _b(appended(entry("XXX", "  append-only: true"), entry("XXX"))),
        pr_number=PR,
        canonical_prefix=PREFIX,
    )
    assert result.ok and result.has_entry
    assert (result.append_only, result.evals_only, result.all_evals) == (True, False, False)
    assert [e.append_only for e in result.entries] == [True, False]


def test_a_link_not_accepted_names_its_line_and_every_accepted_form():
    """The sentence itself is the template's (tests/test_changelog_texts.py renders it)."""
    result = check_append(_b(HISTORY), _b(appended(entry("TBD"))), pr_number=PR, canonical_prefix=PREFIX)
    [error] = result.errors
    assert (error.code, error.line) == ("pr-link-not-accepted", 17)
    assert error.params == {
        "value": "TBD",
        "pr_number": PR,
        "prefix": PREFIX,
        "expected": ["XXX", f"{PREFIX}XXX", f"{PREFIX}{PR}"],
    }


def test_unquoted_wildcard_says_to_quote_it():
    """`*` opens a config-keys wildcard and a YAML alias alike: the error must ask for quotes (`needs_quotes`
    picks the template's sentence that says so)."""
    error = check_append(
        _b(HISTORY), _b(appended(entry("XXX", keys=("*-fp8-b200-sglang",)))), pr_number=PR, canonical_prefix=PREFIX
    ).errors[0]
    assert (error.code, error.line) == ("yaml-syntax", 14)
    assert error.params["needs_quotes"] is True


def test_merge_key_is_reported_not_flattened_into_the_entry(monkeypatch: pytest.MonkeyPatch):
    """Bug: the check for the merge key `<<` never ran, because PyYAML's constructor flattens merge keys
    (`flatten_mapping`) into the mapping before `_EntryChecker.check` looked at its keys: `- <<: {evals-only:
    true}` was accepted silently and set `evals_only=True`. Now it is the `unknown-field` error on its own line,
    with either YAML parser, and the merged fields are not the entry's."""
    head = appended(entry("XXX", "  <<: {evals-only: true}"))
    assert yaml.safe_load(head)[-1]["evals-only"] is True  # what a YAML reader downstream would take
    for loader in (bot.rules.changelog.loading.Loader, bot.rules.changelog.loading._loader_class(yaml.SafeLoader)):
        monkeypatch.setattr(bot.rules.changelog.loading, "Loader", loader)
        result = check_append(_b(HISTORY), _b(head), pr_number=PR, canonical_prefix=PREFIX)
        assert not result.ok and result.entries == () and not result.evals_only
        [error] = result.errors
        assert (error.code, error.line) == ("unknown-field", 18)
        assert error.params == {
            "field": "<<",
            "suggestion": None,
            "expected": list(bot.rules.changelog.FIELDS),
            "merge_key": True,
        }


def test_duplicate_keys_are_not_silently_dropped():
    """PyYAML's safe_load keeps the last of two equal keys; the check must see the first one too."""
    head = appended(entry("TBD", "  pr-link: XXX"))
    assert yaml.safe_load(head)[-1]["pr-link"] == "XXX"
    codes = [e.code for e in check_append(_b(HISTORY), _b(head), pr_number=PR, canonical_prefix=PREFIX).errors]
    assert "duplicate-key" in codes


def test_every_error_of_one_entry_is_reported():
    head = appended("- config-keys: []\n  description: x\n  pr-link: TBD\n  evals-only: 2\n  owner: me\n")
    result = check_append(_b(HISTORY), _b(head), pr_number=PR, canonical_prefix=PREFIX)
    assert [(e.line, e.code) for e in result.errors] == [
        (13, "empty-list"),
        (14, "wrong-type"),
        (15, "pr-link-not-accepted"),
        (16, "wrong-type"),
        (17, "unknown-field"),
    ]


def test_errors_are_data():
    error = check_append(
        _b(HISTORY),
        _b(appended(entry("XXX", "  scenario-type:", "    - agentic"))),
        pr_number=PR,
        canonical_prefix=PREFIX,
    ).errors[0]
    assert isinstance(error, ChangelogError)
    assert (error.code, error.line) == ("invalid-value", 19)
    assert error.params == {
        "field": "scenario-type",
        "value": "agentic",
        "expected": ["fixed-seq-len", "agentic-coding"],
    }


def test_default_branch_links():
    text = HISTORY.replace("1033", "XXX", 1) + "\n" + entry(f"{PREFIX}7/") + "\n" + entry(f"{PREFIX}8")
    errors = validate_default_branch(text, canonical_prefix=PREFIX)
    assert [(e.line, e.code, e.params["value"]) for e in errors] == [
        (5, "default-branch-link", f"{PREFIX}XXX"),
        (17, "default-branch-link", f"{PREFIX}7/"),
    ]
    assert validate_default_branch(HISTORY.encode(), canonical_prefix=PREFIX) == []
    assert [e.code for e in validate_default_branch("- a: [\n", canonical_prefix=PREFIX)] == ["yaml-syntax"]
    assert [(e.line, e.code) for e in validate_default_branch("- config-keys: [a]\n", canonical_prefix=PREFIX)] == [
        (1, "missing-field")
    ]


# --- the real upstream file


@pytest.fixture(scope="module")
def tail(real_data) -> bytes:
    return (real_data / "perf-changelog.tail.yaml").read_bytes()


def _lines(data: bytes) -> int:
    return data.count(b"\n")


def test_real_history_accepts_a_valid_entry(tail: bytes):
    head = tail + b"\n" + entry(f"{PREFIX}2800", "  scenario-type:", "    - agentic-coding").encode()
    result = check_append(tail, head, pr_number=2800, canonical_prefix=PREFIX)
    assert result.errors == ()
    assert [e.line for e in result.entries] == [_lines(tail) + 2]
    assert result.entries[0].scenario_type == ("agentic-coding",)


def test_real_history_tbd_names_its_line(tail: bytes):
    head = tail + b"\n" + entry("TBD").encode()
    result = check_append(tail, head, pr_number=2800, canonical_prefix=PREFIX)
    assert [(e.code, e.line) for e in result.errors] == [("pr-link-not-accepted", _lines(tail) + 6)]
    assert head.split(b"\n")[_lines(tail) + 5] == b"  pr-link: TBD"


def test_real_history_is_never_blamed(tail: bytes):
    """The real history holds a `/changes` link (line 2129), a merged `XXX` (2604), a link on its own line
    (601) and separators with trailing spaces: appending after them blames none of them."""
    lines = tail.split(b"\n")
    assert lines[2128].endswith(b"/pull/2305/changes") and lines[2603].endswith(b"/pull/XXX")
    assert lines[600] == b"  pr-link: " and b" \n" in tail
    assert check_append(tail, tail, pr_number=2800, canonical_prefix=PREFIX) == bot.rules.changelog.ChangelogResult()
    head = tail + b"\n" + entry("XXX").encode() + b"\n" + entry(f"{PREFIX}XXX", "  evals-only: true").encode()
    result = check_append(tail, head, pr_number=2800, canonical_prefix=PREFIX)
    assert result.ok and [e.line for e in result.entries] == [_lines(tail) + 2, _lines(tail) + 8]


def test_real_history_on_the_default_branch(tail: bytes):
    errors = validate_default_branch(tail, canonical_prefix=PREFIX)
    assert [(e.line, e.code) for e in errors] == [(2129, "default-branch-link"), (2604, "default-branch-link")]


def test_real_history_link_corrections(tail: bytes):
    fixed = tail.replace(b"/pull/XXX\n", b"/pull/2600\n").replace(
        b"pr-link: \n    https://github.com/SemiAnalysisAI/InferenceX/pull/1701\n",
        b"pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/1701\n",
    )
    result = check_append(tail, fixed, pr_number=2800, canonical_prefix=PREFIX)
    assert result.ok and not result.has_entry
    assert [(c.line, c.new) for c in result.link_corrections] == [(601, f"{PREFIX}1701"), (2603, f"{PREFIX}2600")]
    assert validate_default_branch(fixed, canonical_prefix=PREFIX)[0].line == 2128


def test_real_history_edit_names_its_line(tail: bytes):
    lines = tail.split(b"\n")
    index = next(i for i in range(1999, len(lines)) if lines[i].startswith(b'    - "'))
    lines[index] = lines[index][:-1] + b' (edited)"'
    result = check_append(tail, b"\n".join(lines), pr_number=2800, canonical_prefix=PREFIX)
    assert [(e.code, e.line, e.params["change"]) for e in result.errors] == [("history-changed", index + 1, "changed")]
    lines[2000:2001] = []  # and a line deleted before it
    result = check_append(tail, b"\n".join(lines), pr_number=2800, canonical_prefix=PREFIX)
    assert [(e.code, e.line) for e in result.errors] == [("history-changed", 2001)]


def test_real_history_trimmed_trailing_spaces(tail: bytes):
    head = b"\n".join(line.rstrip() for line in tail.split(b"\n"))
    result = check_append(tail, head, pr_number=2800, canonical_prefix=PREFIX)
    first = next(i for i, line in enumerate(tail.split(b"\n")) if line != line.rstrip()) + 1
    assert [(e.code, e.line, e.params["change"]) for e in result.errors] == [("history-changed", first, "whitespace")]


def test_real_file_as_a_new_file(tail: bytes):
    """All of it is appended: every entry's link is another PR's, and each is named on its own line (with room
    for all of them); with the default cap, the first 50 of them by line are kept and the count says more."""
    result = check_append(None, tail, pr_number=2800, canonical_prefix=PREFIX, limits=ChangelogLimits(max_errors=1000))
    codes = {e.code for e in result.errors}
    assert codes <= {"pr-link-not-accepted", "pr-link-next-line", "separator", "trailing-newline"}
    assert sum(e.code.startswith("pr-link") for e in result.errors) == 399  # 2604's `<prefix>XXX` is accepted
    assert 2604 not in {e.line for e in result.errors}
    assert any(e.code == "pr-link-next-line" and e.line == 601 for e in result.errors)
    assert (result.error_count, result.error_count_is_lower_bound) == (len(result.errors), False)
    capped = check_append(None, tail, pr_number=2800, canonical_prefix=PREFIX)
    assert capped.errors == result.errors[:50]
    assert capped.error_count_is_lower_bound and 50 < capped.error_count < len(result.errors)


# --- the caps: what one changelog may cost (ChangelogLimits), at the worst size -----------------------------
# Each input below is a hostile worst case (deep nesting, aliases, a file at the cap); sizes are the real cap's
# (2 MiB heads). No timing is asserted here: bench/ measures speed; these pin what the check answers.

MAX_BYTES = ChangelogLimits().max_bytes
LOADERS = {
    "libyaml": bot.rules.changelog.loading.Loader,
    "pure Python": bot.rules.changelog.loading._loader_class(yaml.SafeLoader),
}


@pytest.fixture(params=list(LOADERS))
def loader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test that takes it runs with libyaml's loader and with PyYAML's own (whose composer recurses)."""
    monkeypatch.setattr(bot.rules.changelog.loading, "Loader", LOADERS[request.param])
    return request.param


def _check(head: str | bytes, base: str | bytes | None = HISTORY, **limits: int) -> ChangelogResult:
    return check_append(_b(base), _b(head), pr_number=PR, canonical_prefix=PREFIX, limits=ChangelogLimits(**limits))


def _found(result: ChangelogResult) -> list[tuple[str, int]]:
    return [(e.code, e.line) for e in result.errors]


def _fill(unit: str, budget: int) -> str:
    return unit * (budget // len(unit))


def test_every_reader_takes_the_loader_that_loading_holds_at_call_time(monkeypatch: pytest.MonkeyPatch):
    """The `loader` fixture swaps `bot.rules.changelog.loading.Loader` for PyYAML's own: each part of the check
    that reads YAML must take the loader from there when it runs, or the pure-Python runs test libyaml twice."""
    readers: set[str] = set()

    class Recording(LOADERS["pure Python"]):  # type: ignore[misc, valid-type]
        def __init__(self, stream: str):
            readers.add(inspect.stack(0)[1].function)
            super().__init__(stream)

    monkeypatch.setattr(bot.rules.changelog.loading, "Loader", Recording)
    assert _found(_check(appended(E, entry("TBD"), ANCHORED))) == [("pr-link-not-accepted", 23)]
    assert _check(HISTORY.replace("1040\n", "1041\n")).link_corrections
    assert validate_default_branch(HISTORY, canonical_prefix=PREFIX) == []
    assert readers == {"composed", "event_run", "constructor", "_link_regions", "_default_branch"}


async def test_the_worker_process_runs_the_check_by_reference():
    """bot/core/offload.py hands `check_append` to its worker process by reference (its module and name), as the
    sweep gate does for a head of 128 KB or more: there it must import and answer as it does here."""
    from bot.core import offload

    head = HISTORY + _fill("\n" + E, offload.IN_PROCESS_BYTES) + "\n" + entry("TBD")
    assert len(head) >= offload.IN_PROCESS_BYTES
    try:
        found = await offload.run(
            check_append, _b(HISTORY), _b(head), pr_number=PR, canonical_prefix=PREFIX, size=len(head)
        )
    finally:
        offload.shutdown()
    assert found == check_append(_b(HISTORY), _b(head), pr_number=PR, canonical_prefix=PREFIX)
    assert _found(found) == [("pr-link-not-accepted", head.count("\n"))]  # the last line


def test_the_limits_and_their_defaults():
    limits = ChangelogLimits()
    assert (limits.max_bytes, limits.max_depth, limits.max_errors, limits.max_values) == (
        2 * 1024 * 1024,
        32,
        50,
        100_000,
    )
    for bad in (
        {"max_bytes": 0},
        {"max_errors": -1},
        {"max_values": True},
        {"max_bytes": 1.5},
        {"max_depth": 3},
        {"max_depth": 101},
    ):
        with pytest.raises(ValueError):
            ChangelogLimits(**bad)
    assert ChangelogResult().error_count == 0
    error = ChangelogError(3, "tab")
    assert ChangelogResult(errors=(error, error)).error_count == 2  # left out, the errors' own count


def test_a_head_above_max_bytes_is_one_error_and_is_not_read():
    """A head of exactly 2 MiB (one entry with a 2 MB one-line description) is checked; one byte more is the
    one `file-too-large` error, on the line where the limit is passed, even with the history edited too."""
    prefix = HISTORY + '\n- config-keys: [a]\n  pr-link: XXX\n  description: ["'
    at_limit = prefix + "x" * (MAX_BYTES - len(prefix) - 3) + '"]\n'
    assert len(at_limit) == MAX_BYTES
    result = _check(at_limit)
    assert result.ok and [len(e.description[0]) for e in result.entries] == [MAX_BYTES - len(prefix) - 3]
    over = at_limit.replace('"]\n', 'x"]\n').replace("Update image", "Update IMAGE")
    result = _check(over)
    assert _found(result) == [("file-too-large", 15)]
    assert result.errors[0].params == {"size": MAX_BYTES + 1, "limit": MAX_BYTES}
    assert (result.error_count, result.error_count_is_lower_bound, result.entries) == (1, False, ())
    assert _found(_check(HISTORY + "\n" + E, max_bytes=len(HISTORY) + 3)) == [("file-too-large", 13)]
    errors = validate_default_branch(over, canonical_prefix=PREFIX)
    assert [(e.code, e.line, e.params["size"]) for e in errors] == [("file-too-large", 15, MAX_BYTES + 1)]


def _deep_item(item: str) -> str:
    """An entry whose one description item (line 16) is `item`, then an entry with `pr-link: TBD` (line 23)."""
    return appended(entry("XXX").replace('    - "Tune"', "    " + item), entry("TBD"))


@pytest.mark.parametrize("depth", [300, 10_000])
@pytest.mark.parametrize("style", ["block", "flow"])
def test_nesting_past_max_depth_is_an_error_on_its_line(depth: int, style: str, loader: str):
    """Bug: a `description` item nested 300 levels raised RecursionError out of check_append (PyYAML's
    composer and constructor recurse), and the delivery failed with no status. The depth is measured on the
    YAML events, without recursion: `too-deep` on the line where level 33 begins, that entry is not
    composed, and the next entry is still checked."""
    item = "- " * depth + "x" if style == "block" else "[" * depth + "x" + "]" * depth
    result = _check(_deep_item(item))
    assert _found(result) == [("too-deep", 16), ("pr-link-not-accepted", 23)]
    assert result.errors[0].params == {"limit": 32}
    assert (result.error_count, result.error_count_is_lower_bound) == (2, False)


def test_flow_nesting_of_a_2_mb_line(loader: str):
    """`[[[...]]]` 900,000 deep on one 1.8 MB line: libyaml refuses 1000 levels before it hands out the events
    that show them; the line is still where this check's limit is passed."""
    head = HISTORY + "\n- config-keys: [a]\n  pr-link: XXX\n  description: " + "[" * 900_000 + "]" * 900_000 + "\n"
    assert _found(_check(head)) == [("too-deep", 15)]


def test_the_depth_error_names_the_line_where_the_limit_is_passed(loader: str):
    """Nesting over many lines: the line of the first value at level 33 (the file's list is level 1)."""
    flow = appended(entry("XXX").replace('    - "Tune"', "\n".join("    [" for _ in range(40)) + "x" + "]" * 40))
    assert _found(_check(flow)) == [("too-deep", 16 + 30)]  # the description's list is level 3, on line 16
    mappings = appended(
        "- config-keys: [a]\n  pr-link: XXX\n  description:\n"
        + "".join("  " * (i + 2) + f"k{i}:\n" for i in range(40))
        + "  " * 42
        + "x\n"
    )
    assert _found(_check(mappings)) == [("too-deep", 16 + 29)]  # the key `k29` on line 45 is level 33
    # the description's list is level 3 and its first item opens level 4: 29 `- ` put the `x` at level 32
    assert _found(_check(_deep_item("- " * 29 + "x"))) == [("wrong-type", 16), ("pr-link-not-accepted", 23)]
    assert _found(_check(_deep_item("- " * 30 + "x"))) == [("too-deep", 16), ("pr-link-not-accepted", 23)]
    assert _found(_check(_deep_item("- " * 3 + "x"), max_depth=6)) == [("wrong-type", 16), ("pr-link-not-accepted", 23)]
    assert _found(_check(_deep_item("- " * 4 + "x"), max_depth=6)) == [("too-deep", 16), ("pr-link-not-accepted", 23)]


def test_depth_through_aliases_counts_what_they_bring(loader: str):
    """Anchors that each wrap the one before nest deeper than any line shows: `k_i: &a_i [*a_(i-1)]` is
    i + 5 levels deep as YAML reads it, so `k28` (33 levels) is where the limit is passed."""
    head = appended(
        "- config-keys: [a]\n  pr-link: XXX\n  description: [x]\n  k0: &a0 [x]\n"
        + "".join(f"  k{i}: &a{i} [*a{i - 1}]\n" for i in range(1, 40))
    )
    assert _found(_check(head)) == [("too-deep", 16 + 29)]


_NAMES = "abcdefghi"
_LAUGHS = "\n".join(
    [f"    - &a [{', '.join(['lol'] * 9)}]"]
    + [f"    - &{name} [{', '.join([f'*{prev}'] * 9)}]" for prev, name in zip(_NAMES, _NAMES[1:])]
)
_MERGE_LAUGHS = "\n".join(
    ["    - &a {lol: 1}"]
    + [f"    - &{name} {{<<: [{', '.join([f'*{prev}'] * 9)}]}}" for prev, name in zip(_NAMES, _NAMES[1:])]
)


@pytest.mark.parametrize(
    ("laughs", "aliased_errors"),
    [
        (_LAUGHS, [("wrong-type", 23)] * 9),  # `scenario-type: *i`: nine items, each `*h` (line 23)
        (_MERGE_LAUGHS, [("wrong-type", 25)]),  # `scenario-type: *i`: a mapping, not a list
    ],
    ids=["aliases", "merge keys"],
)
def test_billion_laughs_in_one_entry_costs_its_nodes(laughs: str, aliased_errors: list[Any], loader: str):
    """Nine levels of nine aliases (9^9 strings if expanded; merge keys: 9^8 merged pairs): each node is built
    once and shown within a budget, so the answer is one `wrong-type` per description item, on its line."""
    result = _check(appended("- config-keys: [a]\n  description:\n" + laughs + "\n  pr-link: XXX\n"))
    assert _found(result) == [("wrong-type", line) for line in range(15, 24)]
    assert all(len(e.params["value"]) <= 240 for e in result.errors)
    aliased = _check(
        appended(
            "- config-keys: [a]\n  description: [x]\n  lol:\n" + laughs + "\n  scenario-type: *i\n  pr-link: XXX\n"
        )
    )
    assert _found(aliased) == [("unknown-field", 15)] + aliased_errors


def test_a_2_mb_line_of_values_stops_at_max_values(loader: str):
    """Bug: one 2 MB line `description: [1, 1, ...]` (700,000 values) was composed whole and gave one
    `wrong-type` per item: more than two minutes and hundreds of MB. Past `max_values` values the check stops
    at that line (`too-many-values`), and the entry is not composed."""
    head = HISTORY + "\n- {config-keys: [a], pr-link: XXX, description: [" + _fill("1, ", MAX_BYTES - 400) + "1]}\n"
    result = _check(head)
    assert _found(result) == [("too-many-values", 13)]
    assert result.errors[0].params == {"limit": 100_000}
    assert (result.error_count, result.error_count_is_lower_bound) == (1, True)


def test_max_values_counts_keys_items_and_strings(loader: str):
    """An entry of `entry()` is 9 values (mapping, 3 keys, 2 lists, 3 strings): the 19th, in the second
    entry, is the `- dsr1...` item on line 20."""
    assert _found(_check(appended(E, E), max_values=18)) == []
    assert _found(_check(appended(E, E), max_values=12)) == [("too-many-values", 20)]
    assert _found(_check(appended(E, E, entry("TBD")), max_values=12)) == [("too-many-values", 20)]


def test_2_mb_of_tiny_bad_entries_keeps_the_first_50():
    """Bug: a 4.3 MB append of bad entries kept every error (300,000 cached per head SHA, about 200 MB) and
    stalled the loop 18 s. 2 MB of `- x` entries (420,000 of them): the first 50 errors by line are kept,
    and the check stops at the first one it cannot keep; the count says "at least"."""
    result = _check(HISTORY + _fill("\n- x\n", MAX_BYTES - len(HISTORY)))
    assert _found(result) == [("not-a-mapping", line) for line in range(13, 113, 2)]
    assert (result.error_count, result.error_count_is_lower_bound, result.unshown_errors) == (51, True, 1)


def test_2_mb_of_bad_entries_with_many_errors_each():
    """Seven errors an entry: the first 50 by line (seven entries and the first error of the eighth)."""
    bad = (
        "\n- config-keys: 5\n  description: [1, {a: b}]\n  pr-link: https://example.com/1\n"
        "  scenario-type: [bogus]\n  evals-only: maybe\n  colour: red\n"
    )
    one = [
        ("wrong-type", 13),
        ("wrong-type", 14),
        ("wrong-type", 14),
        ("pr-link-not-accepted", 15),
        ("invalid-value", 16),
        ("wrong-type", 17),
        ("unknown-field", 18),
    ]
    result = _check(HISTORY + _fill(bad, MAX_BYTES - len(HISTORY)))
    assert _found(result) == [(code, line + 7 * n) for n in range(7) for code, line in one] + [("wrong-type", 62)]
    assert (result.error_count, result.error_count_is_lower_bound) == (56, True)  # all of the eighth entry's


def test_the_count_is_exact_when_the_check_read_everything():
    """60 errors in one entry, the last entry: all counted, the first 50 kept; and the errors kept are the
    first by line, whichever rule found them first (the missing final newline is the last line's)."""
    result = _check(appended(entry("XXX", desc=("",) * 60)))
    assert _found(result) == [("empty-string", line) for line in range(16, 66)]
    assert (result.error_count, result.error_count_is_lower_bound) == (60, False)
    result = _check(appended(entry("XXX", desc=("",) * 60))[:-1])
    assert ("trailing-newline", 77) not in _found(result) and result.error_count == 61
    assert _found(_check(appended(entry("XXX", desc=("",) * 3))[:-1])) == [
        ("empty-string", 16),
        ("empty-string", 17),
        ("empty-string", 18),
        ("trailing-newline", 19),
    ]


@pytest.mark.parametrize(
    ("count", "found"),
    [(100_000, [("too-many-values", 50_013)]), (20_000, [("duplicate-key", line) for line in range(18, 68)])],
)
def test_huge_numbers_of_duplicate_keys(count: int, found: list[tuple[str, int]]):
    """`pr-link: XXX` on 100,000 lines of one entry passes max_values at line 50,013 (7 values, then two a
    line); on 20,000 lines each repeat is counted (19,999) and the first 50 are kept."""
    head = appended("- config-keys:\n    - a\n  description:\n    - b\n" + "  pr-link: XXX\n" * count)
    result = _check(head)
    assert _found(result) == found
    if count == 20_000:
        assert (result.error_count, result.error_count_is_lower_bound) == (19_999, False)
        assert result.errors[0].params == {"key": "pr-link", "first_line": 17, "entry_line": 13}


def test_2_mb_of_entries_aliasing_the_first(loader: str):
    """Bug: 2 MB of entries whose `config-keys` is an alias of the first entry's anchor took 17 s (every
    alias found through the whole text's events). Each is read on its own: the first 50 alias errors, each on
    its line and naming the anchor's line."""
    first = '\n- config-keys: &keys\n    - a\n  description: ["b"]\n  pr-link: XXX\n'
    head = (
        HISTORY
        + first
        + _fill('\n- config-keys: *keys\n  description: ["b"]\n  pr-link: XXX\n', MAX_BYTES - len(HISTORY) - len(first))
    )
    result = _check(head)
    assert _found(result) == [("yaml-syntax", line) for line in range(18, 218, 4)]
    assert result.errors[0].params["problem"] == "found alias 'keys' of an anchor in another entry (line 13)"
    assert (result.error_count, result.error_count_is_lower_bound) == (51, True)


def test_an_anchor_defined_again_in_another_entry(loader: str):
    """YAML refuses a document that defines one anchor twice (a reader of the whole file would fail)."""
    result = _check(appended(entry("&k XXX"), entry("&k XXX")))
    assert _found(result) == [("yaml-syntax", 23)]
    assert result.errors[0].params["problem"] == "found duplicate anchor 'k' (first at line 17)"


def test_2_mb_of_document_markers_are_counted_not_kept():
    result = _check(appended(E) + _fill("---\n", MAX_BYTES - len(appended(E))))
    markers = (MAX_BYTES - len(appended(E))) // 4
    assert _found(result) == [("document-marker", line) for line in range(18, 68)]
    assert (result.error_count, result.error_count_is_lower_bound) == (markers, False)


def test_a_long_value_is_kept_short_in_the_params():
    """What a result keeps is what the texts show (120 characters of a value), not a 2 MB line."""
    result = _check(appended(entry("TBD" + "x" * 100_000), entry("XXX", "  ? " + "k" * 100_000, "  : 1")))
    assert _found(result) == [("pr-link-not-accepted", 17), ("unknown-field", 24)]
    assert [len(e.params.get("value") or e.params.get("field")) for e in result.errors] == [240, 240]


def test_link_corrections_are_capped_and_counted():
    base = "".join(entry(f"{PREFIX}{n}") + "\n" for n in range(60))[:-1]
    result = _check(base.replace(PREFIX, "TBD/"), base=base)
    assert _found(result) == [("link-correction-not-accepted", 5 + 6 * n) for n in range(50)]
    assert (result.error_count, result.error_count_is_lower_bound) == (60, False)
    fixed = _check(base.replace(f"{PREFIX}7\n", f"{PREFIX}8\n"), base=base)
    assert fixed.ok and [(c.line, c.new) for c in fixed.link_corrections] == [(47, f"{PREFIX}8")]
    too_big = _check(base.replace(f"{PREFIX}7\n", f"{PREFIX}8\n"), base=base, max_bytes=len(base) - 1)
    assert _found(too_big) == [("file-too-large", 60 * 6 - 1)]


def test_the_default_branch_check_is_capped_and_counted(tail: bytes):
    result = check_default_branch(tail, canonical_prefix=PREFIX, limits=ChangelogLimits(max_errors=1))
    assert (_found(result), result.error_count, result.error_count_is_lower_bound) == (
        [("default-branch-link", 2129)],
        2,
        False,
    )
    links = "".join(entry(f"TBD{n}") + "\n" for n in range(60))[:-1]
    result = check_default_branch(links, canonical_prefix=PREFIX)
    assert _found(result) == [("default-branch-link", 5 + 6 * n) for n in range(50)] and result.error_count == 60
    deep = "- config-keys: [a]\n  pr-link: XXX\n  description: " + "[" * 300 + "]" * 300 + "\n"
    assert [(e.code, e.line) for e in validate_default_branch(deep, canonical_prefix=PREFIX)] == [("too-deep", 3)]
    assert [(e.code, e.line) for e in validate_default_branch("- " * 10_000 + "x\n", canonical_prefix=PREFIX)] == [
        ("too-deep", 1)
    ]
    many = check_default_branch(links, canonical_prefix=PREFIX, limits=ChangelogLimits(max_values=100))
    assert _found(many)[-1] == ("too-many-values", 67) and many.error_count_is_lower_bound  # 9 values an entry


def _near_the_recursion_limit(call, room: int):
    """`call()` with only about `room` frames of Python's recursion limit left."""
    depth = len(inspect.stack(0))

    def down(n: int):
        return call() if n == 0 else down(n - 1)

    return down(sys.getrecursionlimit() - depth - room)


def test_a_recursion_error_is_a_changelog_error_not_a_failed_delivery():
    """Called with 60 frames to spare, an entry nested 31 levels (below the limit) runs out of recursion inside
    PyYAML's composer and constructor: one `too-complex` error on the entry's line, no exception."""
    head = appended(E, entry("XXX").replace('    - "Tune"', "    " + "[" * 28 + "x" + "]" * 28))
    assert _found(_check(head)) == [("wrong-type", 22)]  # with room: the nested list is the item's error
    result = _near_the_recursion_limit(lambda: _check(head), room=60)
    assert _found(result) == [("too-complex", 19)]
    assert (result.errors[0].params, result.error_count_is_lower_bound) == ({"cause": "recursion"}, True)


@pytest.mark.parametrize("exc", [RecursionError, MemoryError])
def test_recursion_and_memory_errors_anywhere_are_one_error(exc: type[Exception], monkeypatch: pytest.MonkeyPatch):
    cause = {RecursionError: "recursion", MemoryError: "memory"}[exc]
    real = bot.rules.changelog.entries._EntryChecker.check

    def failing(self, node, dash_line, *args):
        if dash_line == 19:
            raise exc()
        return real(self, node, dash_line, *args)

    monkeypatch.setattr(bot.rules.changelog.entries._EntryChecker, "check", failing)
    result = _check(appended(entry("TBD"), E))
    assert [(e.code, e.line, e.params) for e in result.errors] == [("too-complex", 19, {"cause": cause})]
    monkeypatch.setattr(bot.rules.changelog.results._Sink, "add", lambda *args: (_ for _ in ()).throw(exc()))
    errors = validate_default_branch(HISTORY + "\n" + entry("TBD"), canonical_prefix=PREFIX)
    assert [(e.code, e.line, e.params) for e in errors] == [("too-complex", 13, {"cause": cause})]


def test_a_big_value_is_shown_by_its_first_items():
    """The `value` of wrong-type or not-a-mapping is dumped from a copy of at most 64 values: 40,000 of them
    read as the whole value's first characters (more than the 120 the texts show), not 40,000 dumped."""
    for value in ({f"k{i}": [i] for i in range(40_000)}, [[i, str(i)] for i in range(40_000)]):
        shown = bot.rules.changelog.errors._show(value)
        whole = yaml.safe_dump(value, default_flow_style=True, width=10**6, sort_keys=False).strip()
        assert 120 < len(shown) < 1000 and shown[:120] == whole[:120]
