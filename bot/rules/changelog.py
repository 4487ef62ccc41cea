"""The performance changelog's append-only rules (SPEC.md section 3), as pure functions over bytes.

`check_append(base, head, pr_number=..., canonical_prefix=...)` compares the file at a PR's base SHA with the
file at its head SHA. The base must stay a byte-exact prefix of the head; only the appended text is parsed
and judged, so lines of history the PR did not add are never blamed (the real history holds links and
whitespace the rules refuse in new entries). A PR that appends nothing may correct `pr-link` values of
existing entries and nothing else.

Errors are data: a stable `code`, the head-file `line` (1-based) and the `params` its template needs (the
words are in templates/_changelog_error.{en,zh}.j2, nowhere else). A result keeps the first
`ChangelogLimits.max_errors` errors by line and counts the rest (`error_count`); once that many are kept and
the check has passed their lines, it stops at the next error it could not keep, and the count says "at least"
(`error_count_is_lower_bound`).

Cost is bounded by `ChangelogLimits`, whatever the input: a head above `max_bytes` is one error and nothing is
parsed; each appended entry is read on its own (in batches, with libyaml when installed), and only a batch of
entries is in memory at a time; nesting deeper than `max_depth` is found on the YAML events, without recursion,
before anything recursive (PyYAML's composer, the constructor, the representer) sees it; more than `max_values`
YAML values in the appended text stop the check at the line where the limit is passed. A `RecursionError` or
`MemoryError` anywhere inside is one `too-complex` error, never an exception. The history is compared as
bytes and never parsed, except when the head is not an extension of the base (then the base's YAML events are
read once to find its `pr-link` values).
"""

from __future__ import annotations

import bisect
import difflib
import re
from array import array
from dataclasses import dataclass, field
from typing import Any, Iterator

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError
from yaml.error import Mark
from yaml.events import (AliasEvent, CollectionEndEvent, MappingStartEvent, ScalarEvent,
                         SequenceStartEvent)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

FIELDS = (
    "config-keys", "description", "pr-link", "scenario-type",
    "evals-only", "all-evals", "append-only", "eval-min-prefill-ep",
)
REQUIRED_FIELDS = ("config-keys", "description", "pr-link")
SCENARIO_TYPES = ("fixed-seq-len", "agentic-coding")
BOOLEAN_FIELDS = ("evals-only", "all-evals", "append-only")
PLACEHOLDER = "XXX"

# What YAML itself refuses to read (yaml.reader.Reader.NON_PRINTABLE), minus TAB, LF and CR, which have
# rules of their own here; found before parsing so that each is named by its line, not by a stream offset.
_ALLOWED = "\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff"
_CONTROL = re.compile(f"[^{_ALLOWED}]")
_CONTROL_BUT_NUL = re.compile(f"[^\x00{_ALLOWED}]")  # NUL has a rule of its own
# Line breaks YAML knows besides LF; they would shift YAML's line numbers away from the file's.
_OTHER_BREAKS = str.maketrans({"\x85": " ", "\u2028": " ", "\u2029": " "})
_ENTRY_START = re.compile(r"-(?:[ \t]|$)")  # a top-level sequence item: `-` in column 0
_DOCUMENT_MARKER = re.compile(r"(?:---|\.\.\.)(?:[ \t]|$)|%")
_DOCUMENT_MARKER_LINE = re.compile(r"^(?:(?:---|\.\.\.)(?:[ \t].*)?|%.*)$", re.M)  # the whole line
_ENTRY_START_LINE = re.compile(r"^-(?:[ \t]|$)", re.M)
_SURROGATE = re.compile("[\udc80-\udcff]")  # a byte that is not UTF-8, as surrogateescape decodes it
# Where an anchor `&a` or an alias `*a` can begin (a token starts after a line start, a space or a flow
# indicator; `:` for JSON-like `"k":*a`). No match in an entry's text: it has neither, and is composed by the
# fast path; a match (also inside a quoted string) only sends the entry the slower, exact way.
_ANCHOR_OR_ALIAS = re.compile(r"(?:^|[\s\[\]{},:\ufeff])[*&]", re.M)
_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG, _SEQ_TAG, _MAP_TAG = "tag:yaml.org,2002:str", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"
_VALUE_TAG = "tag:yaml.org,2002:value"  # `=`: SafeConstructor reads it as the string "="
_BATCH_CHARS = 32 * 1024  # entries composed together: bounds the nodes in memory at once
_PARAM_CHARS = 240  # a string param is cut to this (the templates show 120 characters of it)
_SHOWN_LINES = 10  # a character rule's `lines` param: the first ten (the templates show ten)


# ---------------------------------------------------------------------------------------------------------
# Limits and results


@dataclass(frozen=True)
class ChangelogLimits:
    """Caps on the work one changelog may cost (the repository policy's `limits` may set them).

    `max_bytes`: a head file bigger than this is one `file-too-large` error, and nothing is parsed.
    `max_depth`: how deeply values may nest, counting the file's list as level 1: a valid entry is a list item
    (1) that is a mapping (2) of lists (3) of strings (4), so 4 is all an entry needs. 32 is eight times that,
    and keeps every recursive reader of a checked entry (PyYAML's constructor and representer, about three
    Python frames a level) far below Python's recursion limit of 1000, wherever the check is called from.
    `max_errors`: the errors a result keeps (the first by line); the rest are counted.
    `max_values`: YAML values (keys, items, scalars; an alias is one) the appended text may hold. A real
    changelog holds about 37,000 in 2 MB; 2 MB of `[a,a,...]` holds a million, more than Python checks in the
    time a delivery may take, and each composed value costs about 460 bytes.
    """

    max_bytes: int = 2 * 1024 * 1024
    max_depth: int = 32
    max_errors: int = 50
    max_values: int = 100_000

    def __post_init__(self) -> None:
        for name in ("max_bytes", "max_depth", "max_errors", "max_values"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"ChangelogLimits.{name} must be a whole number above 0, not {value!r}")
        if not 4 <= self.max_depth <= 100:
            raise ValueError("ChangelogLimits.max_depth must be between 4 (what a valid entry needs) and 100 "
                             f"(recursive readers stay far below Python's recursion limit), not {self.max_depth}")


DEFAULT_LIMITS = ChangelogLimits()


@dataclass(frozen=True)
class ChangelogError:
    """One thing wrong, on one line of the head file: its `code` and the `params` its template renders."""

    line: int
    code: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AppendedEntry:
    """A valid entry the PR appends; `line` is its first line (the `- ` line) in the head file."""

    line: int
    config_keys: tuple[str, ...]
    description: tuple[str, ...]
    pr_link: str
    scenario_type: tuple[str, ...] = ()
    evals_only: bool = False
    all_evals: bool = False
    append_only: bool = False
    eval_min_prefill_ep: int | None = None


@dataclass(frozen=True)
class LinkCorrection:
    """A `pr-link` of an existing entry that a PR appending nothing changes (`old` and `new` as written)."""

    line: int
    old: str
    new: str


@dataclass(frozen=True)
class ChangelogResult:
    """Either the valid appended entries (and link corrections), or the errors: never entries with errors.

    A sweep gate wants `ok and has_entry`; `append_only` etc. say whether any appended entry sets the flag.
    `errors` holds at most `ChangelogLimits.max_errors` errors, the first by line (ties in the order found);
    `error_count` is how many the check found, kept or not. When `error_count_is_lower_bound` is true the check
    stopped early (at an error it could not keep, or at the `max_values` limit), so there are at least
    `error_count` errors; otherwise `error_count` is exact. Left out, `error_count` is `len(errors)`.
    """

    entries: tuple[AppendedEntry, ...] = ()
    errors: tuple[ChangelogError, ...] = ()
    link_corrections: tuple[LinkCorrection, ...] = ()
    error_count: int = -1
    error_count_is_lower_bound: bool = False

    def __post_init__(self) -> None:
        if self.error_count < 0:
            object.__setattr__(self, "error_count", len(self.errors))

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def has_entry(self) -> bool:
        return bool(self.entries)

    @property
    def evals_only(self) -> bool:
        return any(e.evals_only for e in self.entries)

    @property
    def all_evals(self) -> bool:
        return any(e.all_evals for e in self.entries)

    @property
    def append_only(self) -> bool:
        return any(e.append_only for e in self.entries)

    @property
    def unshown_errors(self) -> int:
        """Errors found but not kept (at least this many when `error_count_is_lower_bound`)."""
        return self.error_count - len(self.errors)


# ---------------------------------------------------------------------------------------------------------
# Errors: the code and params of each are built here (their words are the templates').


def _show(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    # In the order written (not sorted), so that the clipped copy reads as the start of the whole value.
    return yaml.safe_dump(_clip(value, [64], 0), default_flow_style=True, width=10**6, sort_keys=False
                          ).strip().removesuffix("...").strip()


def _clip(value: Any, budget: list[int], depth: int) -> Any:
    """A copy of `value` with at most budget[0] values and strings of at most 130 characters, for `_show`: past
    64 values (each at least 3 characters in flow style) the text is longer than the 120 characters shown, so
    what is cut is never seen; a value shared by aliases is copied each time, within the same budget."""
    budget[0] -= 1
    if budget[0] < 0 or depth > 32:
        return "..."
    if isinstance(value, str):
        return value if len(value) <= 130 else value[:130]
    if isinstance(value, list):
        out = []
        for item in value:
            if budget[0] <= 0:
                out.append("...")
                break
            out.append(_clip(item, budget, depth + 1))
        return out
    if isinstance(value, dict):
        copy: dict[Any, Any] = {}
        for key, item in value.items():
            if budget[0] <= 0:
                break
            copy[_clip(key, budget, depth + 1) if isinstance(key, str) else key] = _clip(item, budget, depth + 1)
        return copy
    if isinstance(value, (set, frozenset)):
        return set(list(value)[:max(budget[0], 0)])
    if isinstance(value, tuple):
        return tuple(_clip(item, budget, depth + 1) for item in value[:max(budget[0], 0)])
    if isinstance(value, bytes):
        return value[:130]
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    for kind, name in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"),
                       (list, "list"), (dict, "mapping"), (bytes, "binary")):
        if isinstance(value, kind):
            return name
    return type(value).__name__  # date, datetime, set


# wrong-type's `expected` tokens: what a field must be
_EXPECTED = ("string", "list-of-strings", "list-of-scenario-types", "boolean", "positive-integer")


def _link_forms(prefix: str, pr_number: int) -> list[str]:
    return [PLACEHOLDER, prefix + PLACEHOLDER, f"{prefix}{pr_number}"]


def _param(value: Any) -> Any:
    """A param as kept: a string from the file is cut to _PARAM_CHARS (the templates show 120 of them), so that
    a cached result holds what is shown, not a 2 MB line."""
    if isinstance(value, str) and len(value) > _PARAM_CHARS:
        return value[:_PARAM_CHARS - 3] + "..."
    return value


def _err(line: int, code: str, **params: Any) -> ChangelogError:
    return ChangelogError(line=line, code=code, params={key: _param(value) for key, value in params.items()})


# The codes of the character rules: one error per rule, naming its lines (`lines`, `count`).
_CHARACTER_CODES = ("tab", "cr", "nul", "control-character", "not-utf8")


def _character_error(code: str, lines: list[int], count: int | None = None, **extra: Any) -> ChangelogError:
    """`lines`: the first lines that break the rule (at least the first ten); `count`: how many lines do."""
    count = len(lines) if count is None else count
    return _err(lines[0], code, lines=lines[:_SHOWN_LINES], count=count, **extra)


# The kinds of change a `history-changed` error names (its `change` param).
_HISTORY_CHANGES = ("changed", "whitespace", "removed", "inserted", "moved", "extended")


def _history_error(line: int, base_line: int, change: str, expected: str | None, found: str | None,
                   ) -> ChangelogError:
    """`expected` is the base's line `base_line` (None past its end), `found` the head's line `line`."""
    return _err(line, "history-changed", change=change, base_line=base_line, expected=expected, found=found)


def _file_too_large(size: int, limit: int, line: int) -> ChangelogError:
    """The head is `size` bytes, more than `limit`, which it passes at `line`: nothing was checked."""
    return _err(line, "file-too-large", size=size, limit=limit)


def _too_deep(line: int, limit: int) -> ChangelogError:
    """The value at `line` nests more than `limit` levels (the file's list is level 1); it was not read."""
    return _err(line, "too-deep", limit=limit)


def _too_many_values(line: int, limit: int) -> ChangelogError:
    """More than `limit` YAML values (keys, items, scalars) by `line`: the check stops there."""
    return _err(line, "too-many-values", limit=limit)


def unfinished_check(size: int) -> ChangelogResult:
    """The result when the check itself did not finish (its worker process died, or ran out of time: see
    bot/core/offload.py): one `too-complex` error on line 1, cause `unfinished`."""
    return ChangelogResult(errors=(_err(1, "too-complex", cause="unfinished"),))


def _too_complex(line: int, exc: BaseException) -> ChangelogError:
    """The check ran out of memory or of Python's recursion near `line`."""
    return _err(line, "too-complex", cause="memory" if isinstance(exc, MemoryError) else "recursion")


# ---------------------------------------------------------------------------------------------------------
# Errors as found: the first `max_errors` by line, and how many there were


_PHASE_CHARACTERS, _PHASE_END, _PHASE_MARKER, _PHASE_OUTSIDE, _PHASE_ENTRY, _PHASE_SEPARATOR = range(6)


class _Sink:
    """Keeps the first `cap` errors by (line, phase, order found) and counts every error found.

    `room(line)` says whether an error at `line` would be kept, so that one that would not is counted
    (`skip`) without being built. The phases order errors of one line as the check always has: characters,
    the file's end, document markers, text outside entries, an entry's own errors, separators.
    """

    def __init__(self, cap: int):
        self.cap = cap
        self.kept: list[tuple[tuple[int, int, int], ChangelogError]] = []
        self.count = 0
        self.dropped = False  # an error found was not kept
        self.partial = False  # some errors were neither built nor counted: the count is a lower bound

    def room(self, line: int, phase: int = _PHASE_ENTRY) -> bool:
        return len(self.kept) < self.cap or (line, phase, self.count) < self.kept[-1][0]

    def add(self, error: ChangelogError, phase: int = _PHASE_ENTRY) -> None:
        key = (error.line, phase, self.count)
        self.count += 1
        if len(self.kept) < self.cap or key < self.kept[-1][0]:
            bisect.insort(self.kept, (key, error), key=lambda kept: kept[0])
            if len(self.kept) > self.cap:
                self.kept.pop()
                self.dropped = True
        else:
            self.dropped = True

    def skip(self) -> None:
        """An error found that `room` says would not be kept: counted, not built."""
        self.count += 1
        self.dropped = True

    def passed(self, line: int) -> bool:
        """Nothing from `line` on can be kept, and an error was already left out: checking further only counts."""
        return self.dropped and len(self.kept) >= self.cap and line > self.kept[-1][0][0]

    def errors(self) -> tuple[ChangelogError, ...]:
        return tuple(error for _, error in self.kept)

    def result(self, **fields: Any) -> ChangelogResult:
        if self.kept:
            return ChangelogResult(errors=self.errors(), error_count=self.count,
                                   error_count_is_lower_bound=self.partial)
        return ChangelogResult(**fields)


# ---------------------------------------------------------------------------------------------------------
# YAML: a safe loader that records duplicate keys instead of silently keeping the last one.


def _loader_class(base: type) -> type:
    class DuplicateKeyLoader(base):  # type: ignore[misc, valid-type]
        """SafeLoader (libyaml's when available) that records every duplicate mapping key with its lines."""

        def __init__(self, stream: str):
            super().__init__(stream)
            self.duplicates: list[tuple[Any, int, int]] = []  # (key, first line, duplicate line), 0-based

        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE_TAG:
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    if key in seen:
                        self.duplicates.append((key, seen[key], key_node.start_mark.line))
                    else:
                        seen[key] = key_node.start_mark.line
                except TypeError:  # an unhashable key: the safe constructor refuses it below, with its mark
                    continue
            return super().construct_mapping(node, deep=deep)

    return DuplicateKeyLoader


Loader = _loader_class(getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _yaml_error(exc: yaml.YAMLError, first_line: int, floor: int) -> ChangelogError:
    """A syntax error at its line (`first_line` is the head line of the parsed text's line 0)."""
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    # Where a scanned token began (an unclosed quote) names the cause; a parser's context is only the
    # enclosing collection, and there the token it stumbled on is the better line.
    mark = getattr(exc, "problem_mark", None)
    if getattr(exc, "context_mark", None) is not None and (mark is None or str(context).startswith("while scanning")):
        mark = exc.context_mark
    line = max(first_line + mark.line, floor) if mark is not None else floor
    # `- *-mtp`: a config-keys wildcard at the start of a value reads as a YAML alias; the fix is quotes
    needs_quotes = "alias" in problem or "anchor" in problem or "tag" in problem
    return _err(line, "yaml-syntax", problem=problem, context=context, needs_quotes=needs_quotes)


class _Builder:
    """An entry's Python value from its node, as SafeConstructor builds it, faster and without exploding.

    Strings, lists and mappings are built here (each node once, so a billion-laughs entry costs its nodes);
    any other tag (numbers, booleans, null, dates, binary, sets, omap...) goes to the loader. A merge key `<<`
    inside a value is kept as the key "<<", not merged: a mapping inside a field is wrong there whatever it
    holds (the entry's own merge keys are taken out before). Mapping keys that repeat are recorded in
    `duplicates`. Recursion is bounded: nothing deeper than `max_depth` is ever built."""

    def __init__(self, loader: Any):
        self.loader = loader
        loader.constructed_objects = {}
        loader.recursive_objects = {}
        loader.duplicates = []
        self.duplicates: list[tuple[Any, int, int]] = loader.duplicates
        self.built: dict[Node, Any] = {}
        self.building: set[int] = set()

    def build(self, node: Node) -> Any:
        if node in self.built:
            return self.built[node]
        tag = node.tag
        if type(node) is ScalarNode and (tag == _STR_TAG or tag == _VALUE_TAG or tag == _MERGE_TAG):
            value: Any = node.value
        elif type(node) is SequenceNode and tag == _SEQ_TAG:
            self.enter(node)
            value = [self.build(item) for item in node.value]
            self.building.discard(id(node))
        elif type(node) is MappingNode and tag == _MAP_TAG:
            self.enter(node)
            value = {}
            seen: dict[Any, int] = {}
            for key_node, value_node in node.value:
                key = self.build(key_node)
                try:
                    if key in seen:
                        if key_node.tag != _MERGE_TAG:
                            self.duplicates.append((key, seen[key], key_node.start_mark.line))
                    else:
                        seen[key] = key_node.start_mark.line
                except TypeError:
                    raise ConstructorError("while constructing a mapping", node.start_mark, "found unhashable key",
                                           key_node.start_mark) from None
                value[key] = self.build(value_node)
            self.building.discard(id(node))
        else:
            value = self.loader.construct_object(node, deep=True)
        self.built[node] = value
        return value

    def enter(self, node: Node) -> None:
        if id(node) in self.building:  # `&a [*a]`: SafeConstructor refuses it the same way when deep
            raise ConstructorError(None, None, "found unconstructable recursive node", node.start_mark)
        self.building.add(id(node))


# ---------------------------------------------------------------------------------------------------------
# Checking one entry


class _EntryChecker:
    """Checks one composed entry; its errors go to the check's sink, each built only if it would be kept."""

    def __init__(self, check: _Check, source: str, first_line: int):
        self.check_ = check
        self.sink = check.sink
        self.source = source  # the composed text
        self.first_line = first_line  # head line number of the composed text's line 0
        self.pr_number = check.pr_number
        self.prefix = check.prefix
        self.own: range | None = None  # the entry's head lines, when it may hold aliases to other entries

    def at(self, node: Node) -> int:
        return self.first_line + node.start_mark.line

    def foreign(self, node: Node) -> bool:
        """A node written outside this entry's lines: it came in by an alias to another entry's anchor."""
        return self.own is not None and self.at(node) not in self.own

    def wants(self, line: int) -> bool:
        """Whether to build an error on `line`: not for another entry's line (what an alias brought in is not
        this entry's), nor one the sink would not keep (that one is counted here instead)."""
        if self.own is not None and line not in self.own:
            return False
        if self.sink.room(line):
            return True
        self.sink.skip()
        return False

    def add(self, error: ChangelogError) -> None:
        self.sink.add(error)

    def check(self, node: Node, dash_line: int, own: range | None = None,
              aliases: tuple[tuple[int, str, int], ...] = ()) -> AppendedEntry | None:
        """The entry, or None when it is not a mapping or cannot be built; its errors go to the sink.

        `own` is the entry's head lines when it may hold aliases to anchors of other entries, and `aliases`
        those aliases, as (line, name, the anchor's line). Each is an error on its own line, and what it brings
        in is not checked here (it is a stand-in on the anchor's line): the rules would blame the other
        entry's lines for it.
        """
        self.own = own
        for line, name, anchor_line in aliases:
            if not self.wants(line):
                continue
            self.add(_err(
                line, "yaml-syntax",
                problem=f"found alias {name!r} of an anchor in another entry (line {anchor_line})",
                context="each entry is read on its own", needs_quotes=True))
        if self.foreign(node):
            return None  # the whole entry is an alias (`- *a`): nothing of its own to check
        if isinstance(node, MappingNode):
            # The merge key `<<` is not a field. PyYAML's constructor would flatten it into the mapping, so that
            # the merged fields look written here: take it out of the node before the entry is constructed.
            merges = [key_node for key_node, _ in node.value if key_node.tag == _MERGE_TAG]
            for key_node in merges:
                if self.wants(self.at(key_node)):
                    self.add(_err(self.at(key_node), "unknown-field", field="<<", suggestion=None,
                                  expected=list(FIELDS), merge_key=True))
            if merges:
                node.value = [(k, v) for k, v in node.value if k.tag != _MERGE_TAG]
        builder = _Builder(self.check_.constructor)
        try:
            data = builder.build(node)
        except yaml.YAMLError as exc:
            error = _yaml_error(exc, self.first_line, dash_line)
            if self.wants(error.line):
                self.add(error)
            return None
        for key, first, dup in builder.duplicates:
            line = self.first_line + dup
            if not self.wants(line):
                continue
            self.add(_err(line, "duplicate-key", key=_show(key), first_line=self.first_line + first,
                          entry_line=dash_line))
        if not isinstance(node, MappingNode) or not isinstance(data, dict):
            if self.wants(dash_line):
                self.add(_err(dash_line, "not-a-mapping", actual=_kind(data), value=_show(data)))
            return None
        pairs: dict[Any, tuple[Node, Node]] = {}
        for key_node, value_node in node.value:
            if self.foreign(key_node):
                continue  # a key written as an alias to another entry: its alias error says so
            key = builder.build(key_node)
            if key in FIELDS:
                pairs[key] = (key_node, value_node)  # the last one, as in `data`
                continue
            if not self.wants(self.at(key_node)):
                continue  # counted, not built: it would not be kept
            shown = _show(key)
            # A field name is at most 19 characters: a longer word cannot reach the 0.6 ratio (and difflib
            # would index every character of a 2 MB key).
            guess = difflib.get_close_matches(shown.lower().replace("_", "-"), FIELDS, n=1, cutoff=0.6) \
                if len(shown) <= 44 else []
            self.add(_err(self.at(key_node), "unknown-field", field=shown, suggestion=guess[0] if guess else None,
                          expected=list(FIELDS), merge_key=False))
        for name in REQUIRED_FIELDS:
            if name not in pairs and self.wants(dash_line):
                self.add(_err(dash_line, "missing-field", field=name))

        # A value that is an alias to another entry's has its alias error; it is present, but not checked.
        checked = {key: pair for key, pair in pairs.items() if not self.foreign(pair[1])}
        config_keys = self.string_list(checked.get("config-keys"), data.get("config-keys"), "config-keys")
        description = self.string_list(checked.get("description"), data.get("description"), "description")
        scenario = self.string_list(checked.get("scenario-type"), data.get("scenario-type"), "scenario-type",
                                    allowed=SCENARIO_TYPES)
        flags = {name: self.boolean(checked.get(name), data.get(name), name) for name in BOOLEAN_FIELDS}
        ep = self.min_prefill(checked.get("eval-min-prefill-ep"), data.get("eval-min-prefill-ep"))
        link = self.pr_link(checked.get("pr-link"), data.get("pr-link"))
        if flags["append-only"]:
            combined = [name for name in ("evals-only", "all-evals") if flags[name]]
            if combined and self.wants(self.at(checked["append-only"][0])):
                self.add(_err(self.at(checked["append-only"][0]), "append-only-combination", combined=combined))
        return AppendedEntry(
            line=dash_line, config_keys=tuple(config_keys or ()), description=tuple(description or ()),
            pr_link=link or "", scenario_type=tuple(scenario or ()), evals_only=bool(flags["evals-only"]),
            all_evals=bool(flags["all-evals"]), append_only=bool(flags["append-only"]),
            eval_min_prefill_ep=ep)

    def wrong_type(self, line: int, name: str, expected: str, value: Any, index: int | None = None) -> None:
        """`expected` is a token of _EXPECTED; `actual` is _kind's name of what was written."""
        if not self.wants(line):
            return
        self.add(_err(
            line, "wrong-type", field=name, expected=expected, actual=_kind(value), value=_show(value), index=index,
            choices=list(SCENARIO_TYPES) if expected == "list-of-scenario-types" else None))

    def string_list(self, pair: tuple[Node, Node] | None, value: Any, name: str,
                    allowed: tuple[str, ...] | None = None) -> list[str] | None:
        if pair is None:
            return None
        key_node, value_node = pair
        line = self.at(key_node)
        expected = "list-of-strings" if allowed is None else "list-of-scenario-types"
        if not isinstance(value, list):
            self.wrong_type(line, name, expected, value)
            return None
        if not value:
            if self.wants(line):
                self.add(_err(line, "empty-list", field=name))
            return None
        items = value_node.value if isinstance(value_node, SequenceNode) else [value_node] * len(value)
        good = True
        for index, (item, item_node) in enumerate(zip(value, items)):
            if isinstance(item, str) and item.strip() and (allowed is None or item in allowed):
                continue
            good = False
            item_line = self.at(item_node)
            if not isinstance(item, str):
                self.wrong_type(item_line, name, "string", item, index)
            elif not item.strip():
                if self.wants(item_line):
                    self.add(_err(item_line, "empty-string", field=name, index=index))
            elif self.wants(item_line):
                self.add(_err(item_line, "invalid-value", field=name, value=item, expected=list(allowed or ())))
        return value if good else None

    def boolean(self, pair: tuple[Node, Node] | None, value: Any, name: str) -> bool | None:
        if pair is None:
            return None
        if not isinstance(value, bool):
            self.wrong_type(self.at(pair[0]), name, "boolean", value)
            return None
        return value

    def min_prefill(self, pair: tuple[Node, Node] | None, value: Any) -> int | None:
        name = "eval-min-prefill-ep"
        if pair is None:
            return None
        line = self.at(pair[0])
        if isinstance(value, bool) or not isinstance(value, int):
            self.wrong_type(line, name, "positive-integer", value)
            return None
        if value < 1:
            if self.wants(line):
                self.add(_err(line, "out-of-range", field=name, value=value, minimum=1))
            return None
        return value

    def pr_link(self, pair: tuple[Node, Node] | None, value: Any) -> str | None:
        if pair is None:
            return None
        key_node, value_node = pair
        line = self.at(key_node)
        forms = self.check_.forms
        if not isinstance(value, str) or not isinstance(value_node, ScalarNode):
            self.wrong_type(line, "pr-link", "string", value)
            return None
        if value_node.start_mark.line != key_node.start_mark.line:
            if self.wants(line):
                self.add(_err(line, "pr-link-next-line", value=value, value_line=self.at(value_node),
                              **self.link_params()))
            return None
        if value not in forms:
            if self.wants(line):
                self.add(_err(line, "pr-link-not-accepted", value=value, **self.link_params()))
            return None
        start = self.source.rfind("\n", 0, value_node.start_mark.index) + 1
        end = self.source.find("\n", value_node.start_mark.index)
        text = self.source[start:] if end == -1 else self.source[start:end]
        between = text[key_node.end_mark.column:value_node.start_mark.column]
        after = text[value_node.end_mark.column:] if value_node.end_mark.line == value_node.start_mark.line \
            else None
        block = value_node.style in ("|", ">")  # libyaml gives a plain scalar the style "", PyYAML None
        spaces: int | None = None  # spacing-around-colon: after `pr-link:` (None: not only extra spaces)
        trailing: str | None = None  # text-after-link: what follows the link
        if block:
            problem = "block-scalar"  # `|` or `>`
        elif between != ": ":
            problem = "spacing-around-colon"
            spaces = len(between) - 1
            if not (between[:1] == ":" and spaces > 1 and not between[1:].strip(" ")):
                spaces = None  # not only extra spaces after the colon
        elif after and not self.flow_tail(after) and not after.strip(" "):
            spaces = len(after)
            problem = "trailing-spaces"
        elif after and not self.flow_tail(after):
            trailing = after.strip()
            problem = "text-after-link"
        else:
            return value
        if self.wants(line):
            self.add(_err(line, "pr-link-format", value=value, text=text, problem=problem, spaces=spaces,
                          after=trailing, **self.link_params()))
        return None

    def link_params(self) -> dict[str, Any]:
        return {"pr_number": self.pr_number, "prefix": self.prefix, "expected": list(self.check_.forms)}

    @staticmethod
    def flow_tail(after: str) -> bool:
        """In a flow mapping (`{..., pr-link: XXX}`) the link is followed by `,` or `}`, with no space."""
        return after[:1] in (",", "}")


# ---------------------------------------------------------------------------------------------------------
# Reading the appended entries: each on its own, a batch of them at a time


class _Check:
    """The state of one check: its sink, limits, the values read so far, anchors of the entries read."""

    def __init__(self, pr_number: int, prefix: str, limits: ChangelogLimits):
        self.pr_number = pr_number
        self.prefix = prefix
        self.limits = limits
        self.forms = tuple(_link_forms(prefix, pr_number))
        self.sink = _Sink(limits.max_errors)
        self.line = 1  # the line being read: where a RecursionError or MemoryError is reported
        self.values = 0  # YAML values of the appended text read so far
        self.anchors: dict[str, tuple[int, int]] = {}  # name -> (head line, column) of an entry's anchor
        self._constructor: Any = None

    @property
    def constructor(self) -> Any:
        """A loader used only to construct values (numbers, dates...) from nodes."""
        if self._constructor is None:
            self._constructor = Loader("")
        return self._constructor


class _Stop(Exception):
    """Raised inside a composer: this entry ends with `error` (a limit), and the rest of its text is not read."""

    def __init__(self, error: ChangelogError, stop_all: bool = False):
        self.error, self.stop_all = error, stop_all


def _flow_overflow(text: str, pos: int, level: int, limit: int) -> int | None:
    """The text line (0-based) where flow collections opened from `pos` on pass `limit` levels, `level` being the
    level the next one opens at; None if they do not. libyaml refuses 1000 levels while it looks ahead for a
    key, before it hands out the events that would show the depth: this finds the line on the text itself,
    skipping quoted strings and comments as its scanner does (in flow context plain text holds no brackets)."""
    line = text.count("\n", 0, pos)
    index, end = pos, len(text)
    while index < end:
        char = text[index]
        if char in "[{":
            if level > limit:
                return line
            level += 1
        elif char in "]}":
            level -= 1
        elif char == "\n":
            line += 1
        elif char == '"' or char == "'":
            close = index + 1
            while close < end:
                if text[close] == char:
                    if char == "'" and text[close + 1:close + 2] == "'":
                        close += 2
                        continue
                    break
                close += 2 if char == '"' and text[close] == "\\" else 1
            line += text.count("\n", index, close)
            index = close
        elif char == "#" and (index == 0 or text[index - 1] in " \t\n"):
            newline = text.find("\n", index)
            index = end if newline == -1 else newline
            continue
        index += 1
    return None


class _Entries:
    """The appended entries of `text` (the appended text as parsed): each from one `- ` line in column 0 to the
    next, read on its own, yielded in order as (entry index, node or None, the composed text, the head line of
    its line 0, the entry's own head lines (when it may hold aliases to other entries), its aliases to other
    entries, its errors). `starts` and `offsets` give each entry's first line and where it begins in `text`.

    Entries without anchors or aliases are composed by the loader (libyaml when installed), a batch of up to
    _BATCH_CHARS characters at a time, and measured (values, depth, shared nodes) on the nodes without
    recursion before anything recursive sees them; libyaml itself refuses 1000 levels, so its composer never
    recurses deeper. The others, big entries, and those libyaml refuses are composed here from the YAML events,
    without recursion, an entry ending at the line where it passes `max_depth` or `max_values`.
    """

    def __init__(self, check: _Check, text: str, first_line: int, starts: Any, offsets: Any, line_count: int):
        self.check = check
        self.text = text
        self.first_line = first_line
        self.starts = starts
        self.offsets = offsets
        self.count = len(starts)
        self.line_count = line_count
        self.libyaml = hasattr(yaml, "CParser") and issubclass(Loader, yaml.CParser)

    def end_line(self, k: int) -> int:
        """The line index after entry k's last line."""
        return self.starts[k + 1] if k + 1 < self.count else self.line_count

    def span(self, k: int, j: int) -> tuple[int, int]:
        """Where entries k..j-1 are in self.text (without the newline after them)."""
        return self.offsets[k], (self.offsets[j] - 1 if j < self.count else len(self.text))

    def source(self, k: int, j: int) -> str:
        """The text of entries k..j-1 as YAML reads it: lines that would start or end a document are blank
        (they are errors of their own), with their length kept so that columns stay the file's."""
        a, b = self.span(k, j)
        text = self.text[a:b]
        if _DOCUMENT_MARKER_LINE.search(text):
            text = _DOCUMENT_MARKER_LINE.sub(lambda m: " " * len(m.group()), text)
        return text

    def slow(self, k: int) -> bool:
        a, b = self.span(k, k + 1)
        if b - a > _BATCH_CHARS or _ANCHOR_OR_ALIAS.search(self.text, a, b):
            return True  # a big entry is read from its events, which stop at `max_values`
        if self.libyaml:
            return False
        # PyYAML's own composer recurses: an upper bound on the depth from the indicators that open a
        # collection (each collection has one of its own), and the exact reading beyond it.
        count = self.text.count
        indicators = sum(count(s, a, b) for s in ("[", "{", ": ", ":\n", ":\t", '":', "':", "]:", "}:", "- ",
                                                   "-\n", "-\t", "? ", "?\n", "?\t"))
        return 3 + indicators > self.check.limits.max_depth

    def __iter__(self) -> Iterator[tuple[int, Node | None, str, int, range | None, tuple[Any, ...],
                                         list[ChangelogError]]]:
        k, n = 0, self.count
        while k < n:
            slow = self.slow(k)
            j, size = k + 1, self.span(k, k + 1)[1] - self.offsets[k]
            while j < n and self.slow(j) == slow:
                size += self.span(j, j + 1)[1] - self.offsets[j] + 1
                if size > _BATCH_CHARS:
                    break
                j += 1
            yield from (self.events(k, j) if slow else self.composed(k, j))
            k = j

    def own(self, k: int) -> range:
        return range(self.first_line + self.starts[k], self.first_line + self.end_line(k))

    # -- the loader's composer

    def composed(self, k: int, j: int) -> Iterator[Any]:
        source = self.source(k, j)
        loader = Loader(source)
        error: ChangelogError | None = None  # built here: a kept exception would keep this frame alive
        try:
            root = loader.get_single_node()
        except yaml.YAMLError as exc:
            root = None
            if not isinstance(exc, ComposerError) and "nesting depth" not in str(exc):
                line = self.first_line + self.starts[k]
                error = _yaml_error(exc, line, line)
        finally:
            loader.dispose()
        items = root.value if isinstance(root, SequenceNode) else None
        if items is None or len(items) != j - k:
            if j - k > 1:  # find the entry that does not compose alone, halving
                middle = (k + j) // 2
                yield from self.composed(k, middle)
                yield from self.composed(middle, j)
            elif error is not None:
                yield k, None, source, self.first_line + self.starts[k], None, (), [error]
            else:  # an alias, an anchor, libyaml's nesting limit: read exactly from the events
                yield from self.events(k, j)
            return
        limits = self.check.limits
        for index, item in enumerate(items):
            count, deep, over, shared = _walk(item, limits.max_depth, limits.max_values - self.check.values)
            self.check.values += count
            first = self.first_line + self.starts[k]
            if shared:
                self.check.values -= count
                yield from self.events(k + index, k + index + 1)
            elif over is not None:
                raise _Stop(_too_many_values(first + over.start_mark.line, limits.max_values), stop_all=True)
            elif deep is not None:
                yield k + index, None, source, first, None, (), [_too_deep(first + deep.start_mark.line,
                                                                           limits.max_depth)]
            else:
                yield k + index, item, source, first, None, (), []

    # -- composed here, from the events

    def events(self, k: int, j: int) -> Iterator[Any]:
        while k < j:
            k = yield from self.event_run(k, j)

    def event_run(self, k: int, j: int) -> Iterator[Any]:
        """Entries k..j-1 composed from one run of events; returns where the next run starts (j when done).
        An entry that fails ends the run: it is read again alone if its error lies past its own lines."""
        check, limits = self.check, self.check.limits
        text = self.source(k, j)
        base = self.starts[k]
        offset = self.first_line + base
        loader = Loader(text)
        resolve = loader.resolve
        stack: list[list[Any]] = []  # [node, is a mapping, its pending key, in a merge value, height of children]
        current = k - 1  # the entry being read, or the last one read
        pending: tuple[Any, ...] | None = None  # the last entry read, yielded once its text is known to end
        local: dict[str, Node] = {}
        heights: dict[int, int] = {}
        aliases: list[tuple[int, str, int]] = []
        extra: list[ChangelogError] = []
        reading = started = False
        last = 0  # where the last event ended in `text`
        values = check.values  # before the entry being read: it is counted again if it is read again

        def attach(node: Node, height: int) -> tuple[Any, ...] | None:
            if not stack:
                return (current, node, text, offset, self.own(current), tuple(aliases), list(extra))
            frame = stack[-1]
            frame[4] = max(frame[4], height)
            if not frame[1]:
                frame[0].value.append(node)
            elif frame[2] is None:
                frame[2] = node
            else:
                frame[0].value.append((frame[2], node))
                frame[2] = None
            return None

        def anchor(name: str | None, node: Node, line: int, mark: Mark) -> None:
            if name is None:
                return
            if name in local:
                raise ComposerError(f"found duplicate anchor {name!r}; first occurrence", local[name].start_mark,
                                    "second occurrence", mark)
            if name in check.anchors:
                first = check.anchors[name][0]
                extra.append(_err(
                    line, "yaml-syntax", problem=f"found duplicate anchor {name!r} (first at line {first})",
                    context="each anchor name is used once in the file", needs_quotes=True))
            local[name] = node
            check.anchors[name] = (line, mark.column)

        try:
            while loader.check_event():
                event = loader.get_event()
                kind = type(event)
                if not started:
                    if kind is SequenceStartEvent:
                        started = True
                    last = event.end_mark.index
                    continue
                if isinstance(event, CollectionEndEvent) and not stack:
                    break  # the end of the list
                if kind is ScalarEvent or kind is AliasEvent or isinstance(event, (SequenceStartEvent,
                                                                                   MappingStartEvent)):
                    line = offset + event.start_mark.line
                    if not stack:  # an entry begins
                        if pending is not None:
                            yield pending
                            pending = None
                        row = base + event.start_mark.line
                        if current + 1 >= j or not self.starts[current + 1] <= row < self.end_line(current + 1):
                            raise _Mismatch()
                        current += 1
                        reading = True
                        values = check.values
                        local, heights, aliases, extra = {}, {}, [], []
                        check.line = self.first_line + self.starts[current]
                    level = len(stack) + 2  # the file's list is level 1
                    check.values += 1
                    if check.values > limits.max_values:
                        raise _Stop(_too_many_values(line, limits.max_values), stop_all=True)
                    if level > limits.max_depth:
                        raise _Stop(_too_deep(line, limits.max_depth))
                    # In the value of the entry's merge key `<<` (that key is the error there; its value is not read)
                    merged = bool(stack) and (stack[-1][3] or (len(stack) == 1 and stack[0][1]
                                                               and stack[0][2] is not None
                                                               and stack[0][2].tag == _MERGE_TAG))
                    if kind is AliasEvent:
                        name = event.anchor
                        if name in local:
                            node = local[name]
                            height = heights.get(id(node), 1)  # still open: `&a [*a]`, refused when built
                            if level - 1 + height > limits.max_depth:
                                raise _Stop(_too_deep(line, limits.max_depth))
                        elif name in check.anchors:
                            anchor_line, column = check.anchors[name]
                            if not merged:
                                aliases.append((line, name, anchor_line))
                            # A stand-in on the anchor's line: the rules skip what is not this entry's.
                            mark = Mark("<alias>", 0, anchor_line - offset, column, None, None)
                            node, height = ScalarNode(_STR_TAG, "", mark, mark), 1
                        else:
                            raise ComposerError(None, None, "found undefined alias", event.start_mark)
                        done = attach(node, height)
                    elif kind is ScalarEvent:
                        tag = event.tag
                        if tag is None or tag == "!":
                            tag = resolve(ScalarNode, event.value, event.implicit)
                        node = ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
                        anchor(event.anchor, node, line, event.start_mark)
                        done = attach(node, 1)
                    else:
                        mapping = kind is MappingStartEvent
                        node_class = MappingNode if mapping else SequenceNode
                        tag = event.tag
                        if tag is None or tag == "!":
                            tag = resolve(node_class, None, event.implicit)
                        node = node_class(tag, [], event.start_mark, None, flow_style=event.flow_style)
                        anchor(event.anchor, node, line, event.start_mark)
                        stack.append([node, mapping, None, merged, 0])
                        done = None
                elif isinstance(event, CollectionEndEvent):
                    frame = stack.pop()
                    frame[0].end_mark = event.end_mark
                    heights[id(frame[0])] = frame[4] + 1
                    done = attach(frame[0], frame[4] + 1)
                else:
                    done = None
                last = event.end_mark.index
                if done is not None:
                    pending, reading = done, False
        except _Mismatch:
            check.values = values
            if pending is not None:
                yield pending
            for single in range(current + 1, j):
                yield from self.events_alone(single)
            return j
        except (_Stop, yaml.YAMLError) as exc:
            mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
            row = base + mark.line if mark is not None else base
            if reading:
                failed = current
            elif pending is not None and row < self.end_line(current):
                failed, pending = current, None  # text after the entry, in its own lines: the entry fails
            else:
                failed = min(current + 1, j - 1)
            if isinstance(exc, yaml.YAMLError) and "nesting depth" in str(getattr(exc, "problem", "")):
                # libyaml's own limit, met while it looked ahead: where this check's limit was passed
                row = _flow_overflow(text, last, len(stack) + 2, limits.max_depth)
                if row is not None:
                    exc = _Stop(_too_deep(offset + row, limits.max_depth))
            if pending is not None:
                yield pending
            pending = None
            if isinstance(exc, _Stop):
                if exc.stop_all:
                    raise
                yield failed, None, text, offset, None, (), [exc.error]
                return failed + 1
            check.values = values
            if j - k > 1 and not self.starts[failed] <= row < self.end_line(failed):
                yield from self.events_alone(failed)  # its own error, as when it is read alone
            else:
                line = self.first_line + self.starts[failed]
                yield failed, None, text, offset, None, (), [_yaml_error(exc, offset, line)]
            return failed + 1
        finally:
            loader.dispose()
        if pending is not None:
            yield pending
        return j

    def events_alone(self, k: int) -> Iterator[Any]:
        yield from self.events(k, k + 1)


class _Mismatch(Exception):
    """The events began an entry that is not the next `- ` line's: the run's entries are read alone."""


def _walk(item: Node, max_depth: int, room: int) -> tuple[int, Node | None, Node | None, bool]:
    """An entry's composed nodes in document order, without recursion: (how many, the first deeper than
    `max_depth` (the entry is level 2), the first past `room` values, whether a node is reached twice)."""
    seen: set[int] = set()
    stack: list[tuple[Node, int]] = [(item, 2)]
    count = 0
    while stack:
        node, level = stack.pop()
        if id(node) in seen:
            return count, None, None, True
        seen.add(id(node))
        count += 1
        if level > max_depth:
            return count, node, None, False
        if count > room:
            return count, None, node, False
        if type(node) is SequenceNode:
            stack.extend((child, level + 1) for child in reversed(node.value))
        elif type(node) is MappingNode:
            for key, value in reversed(node.value):
                stack.append((value, level + 1))
                stack.append((key, level + 1))
    return count, None, None, False


# ---------------------------------------------------------------------------------------------------------
# The appended text


def _trailing_blank_lines(text: bytes) -> int:
    """How many whitespace-only lines end `text` (not counting the empty string after a final newline)."""
    if not text:
        return 0
    count, end = 0, len(text) - (1 if text.endswith(b"\n") else 0)
    while True:
        start = text.rfind(b"\n", 0, end) + 1
        if text[start:end].strip():
            return count
        count += 1
        if start == 0:
            return count
        end = start - 1


def _lines_matching(text: str, pattern: re.Pattern[str], first_line: int, every: bool = False,
                    ) -> tuple[list[int], int, str | None]:
    """Lines of `text` with a match of `pattern`: (the first _SHOWN_LINES of them, or all when `every`; how many;
    the first match). One search per such line, whatever the line holds."""
    shown: Any = array("q") if every else []
    count, first, pos, line, counted = 0, None, 0, first_line, 0
    while (match := pattern.search(text, pos)) is not None:
        line += text.count("\n", counted, match.start())
        counted = match.start()
        count += 1
        if every or len(shown) < _SHOWN_LINES:
            shown.append(line)
        first = first if first is not None else match.group()
        newline = text.find("\n", match.start())
        if newline == -1:
            break
        pos = newline + 1
    return shown, count, first


_CHARACTER_PATTERNS = {"tab": re.compile("\t"), "cr": re.compile("\r"), "nul": re.compile("\x00"),
                       "control-character": _CONTROL_BUT_NUL}


def _check_appended(appended: bytes, first_line: int, history: bytes, check: _Check) -> list[AppendedEntry]:
    """The appended text's entries (valid or not); every error goes to the check's sink. Memory is a few copies
    of the text: lines are found in it, never split into a list of their own."""
    sink = check.sink
    check.line = first_line

    # Characters: one error per rule, naming its lines.
    try:
        decoded = appended.decode("utf-8")
        bad_utf8: tuple[list[int], int, str | None] = ([], 0, None)
    except UnicodeDecodeError:
        decoded = appended.decode("utf-8", "surrogateescape")
        bad_utf8 = _lines_matching(decoded, _SURROGATE, first_line)
        decoded = _SURROGATE.sub("\ufffd", decoded)
    tab_lines: array[int] = array("q")  # every line with a tab: a YAML error there is the tab's
    for code, pattern in _CHARACTER_PATTERNS.items():
        lines_found, count, first = _lines_matching(decoded, pattern, first_line, every=code == "tab")
        if code == "tab":
            tab_lines, lines_found = lines_found, list(lines_found[:_SHOWN_LINES])
        if count:
            extra = {"character": f"U+{ord(first or ' '):04X}"} if code == "control-character" else {}
            sink.add(_character_error(code, lines_found, count, **extra), _PHASE_CHARACTERS)
    if bad_utf8[1]:
        sink.add(_character_error("not-utf8", bad_utf8[0], bad_utf8[1]), _PHASE_CHARACTERS)

    text = decoded.replace("\r", "").replace("\0", "")
    del decoded
    text = _CONTROL.sub(" ", text).translate(_OTHER_BREAKS)
    if not history and text.startswith("\ufeff"):
        text = text[1:]  # a byte-order mark opening a new file is UTF-8 too, and YAML skips it
    line_count = text.count("\n") + 1  # the last line is "" when the text ends with a newline
    last = first_line + line_count - 1

    # The end of the file: exactly one newline.
    if not text.endswith("\n"):
        sink.add(_err(last, "trailing-newline", problem="missing", blank_lines=0), _PHASE_END)
    else:
        blank, end = 0, len(text) - 1
        while blank < line_count - 1:
            begin = text.rfind("\n", 0, end) + 1
            if text[begin:end].strip():
                break
            blank, end = blank + 1, begin - 1
        if blank:
            start = last - blank
            sink.add(_err(start, "trailing-newline", problem="extra-blank-lines", blank_lines=blank), _PHASE_END)

    # Lines YAML would read as a new document or a directive (blanked where an entry is read).
    counted, line = 0, first_line
    for match in _DOCUMENT_MARKER_LINE.finditer(text):
        line += text.count("\n", counted, match.start())
        counted = match.start()
        if sink.room(line, _PHASE_MARKER):
            value = match.group().strip()
            sink.add(_err(line, "document-marker", value=value), _PHASE_MARKER)
        else:
            sink.skip()

    # Where each entry starts: a `- ` line in column 0.
    starts, offsets = array("q"), array("q")
    counted, row = 0, 0
    for match in _ENTRY_START_LINE.finditer(text):
        row += text.count("\n", counted, match.start())
        counted = match.start()
        starts.append(row)
        offsets.append(match.start())

    # Text before the first entry (it is never read as YAML).
    pos, row = 0, 0
    limit = offsets[0] if starts else len(text)
    while pos < limit:
        newline = text.find("\n", pos, limit)
        stop = limit if newline == -1 else newline
        candidate = text[pos:stop]
        if candidate.strip() and not candidate.lstrip().startswith("#") and not _DOCUMENT_MARKER.match(candidate):
            number = first_line + row
            indented = candidate[:1] in (" ", "\t")
            extends_history = indented and bool(history.strip())  # it would add to the history's last entry
            sink.add(_err(number, "outside-entry", value=candidate.strip(), indented=indented,
                          extends_history=extends_history), _PHASE_OUTSIDE)
            break
        pos, row = stop + 1, row + 1

    # Each entry (from one `- ` line in column 0 to the next) is read on its own: an unclosed quote is named
    # in its own entry, and the other entries are still checked; an alias to another entry's anchor is an
    # error of its own line. The history ends at a line boundary with a complete list, so these are its new
    # items.
    entries: list[AppendedEntry] = []
    history_blank = _trailing_blank_lines(history)
    history_content = bool(history.strip())
    reader = _Entries(check, text, first_line, starts, offsets, line_count)
    try:
        for k, node, source, source_line, own, aliases, errors in reader:
            dash_line = first_line + starts[k]
            if sink.passed(dash_line):
                sink.partial = True  # the errors kept are the first; the rest is not read
                break
            check.line = dash_line
            _separator(sink, text, offsets[k], dash_line, history_blank, history_content)
            for error in errors:
                if error.code == "yaml-syntax" and _contains(tab_lines, error.line):
                    continue  # a tab breaks YAML where it indents; the tab error already names that line
                if sink.room(error.line):
                    sink.add(error)
                else:
                    sink.skip()
            if node is not None:
                entry = _EntryChecker(check, source, source_line).check(node, dash_line, own, aliases)
                if entry is not None:
                    entries.append(entry)
    except _Stop as stop:
        if sink.room(stop.error.line):
            sink.add(stop.error)
        else:
            sink.skip()
        sink.partial = True
    return entries


def _contains(sorted_numbers: array[int], number: int) -> bool:
    index = bisect.bisect_left(sorted_numbers, number)
    return index < len(sorted_numbers) and sorted_numbers[index] == number


def _separator(sink: _Sink, text: str, offset: int, dash_line: int, history_blank: int,
               history_content: bool) -> None:
    """Exactly one empty line before each entry (none at the top of a new file); `offset` is where its `- `
    line begins in `text`."""
    blank, end = 0, offset - 1
    while end >= 0:
        begin = text.rfind("\n", 0, end) + 1
        if text[begin:end].strip():
            break
        blank += 1
        end = begin - 1
    if end >= 0:
        expected, found_blank = 1, blank
    elif not history_content:
        expected, found_blank = 0, blank
    elif history_blank:
        expected, found_blank = history_blank, history_blank + blank  # the history's own are not blamed
    else:
        expected, found_blank = 1, blank
    if found_blank == expected:
        return
    if not sink.room(dash_line, _PHASE_SEPARATOR):
        sink.skip()
        return
    sink.add(_err(dash_line, "separator", blank_lines=found_blank, expected=expected), _PHASE_SEPARATOR)


# ---------------------------------------------------------------------------------------------------------
# History: the byte-exact prefix rule and the link-correction exception


def _common_prefix(a: str, ai: int, b: str, bi: int) -> int:
    """Length of the common prefix of a[ai:] and b[bi:], by halving slice comparisons (linear, in C)."""
    low, high = 0, min(len(a) - ai, len(b) - bi)
    while low < high:
        mid = (low + high + 1) // 2
        if a[ai + low:ai + mid] == b[bi + low:bi + mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _line_starts(text: str) -> list[int]:
    starts = [0]
    index = text.find("\n")
    while index != -1:
        starts.append(index + 1)
        index = text.find("\n", index + 1)
    return starts


def _link_regions(base: str) -> list[tuple[int, int]]:
    """Where each existing entry's link is written: from after `pr-link:` to the end of the value's line.

    Read from the YAML events (nothing is composed, so a big or deep base costs no memory): the `pr-link` keys
    of each block mapping that is an item of the top-level list, with a scalar value that is not a block."""
    loader = Loader(base)
    starts = _line_starts(base)
    regions: list[tuple[int, int]] = []
    depth = 0  # open collections
    item: list[Any] | None = None  # the item mapping: [block style, its key comes next, the `pr-link` key]
    try:
        if not loader.check_event(yaml.StreamStartEvent):
            return []
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, (yaml.StreamStartEvent, yaml.StreamEndEvent, yaml.DocumentStartEvent,
                                  yaml.DocumentEndEvent)):
                continue
            if depth == 0 and not isinstance(event, SequenceStartEvent):
                return []  # not a list
            if isinstance(event, CollectionEndEvent):
                depth -= 1
                if depth == 1:
                    item = None
                elif depth == 2 and item is not None:
                    item[1], item[2] = not item[1], None  # a collection key or value ended
                continue
            if isinstance(event, (SequenceStartEvent, MappingStartEvent)):
                depth += 1
                if depth == 2 and isinstance(event, MappingStartEvent):
                    item = [not event.flow_style, True, None]
                if depth != 3 or item is None:
                    continue
                item[2] = None  # a collection as a key or value: no link
                continue
            if depth != 2 or item is None:
                continue
            if item[1]:  # a key
                item[2] = event if isinstance(event, ScalarEvent) and event.value == "pr-link" else None
                item[1] = False
                continue
            key, item[1], item[2] = item[2], True, None
            if key is None or not item[0] or not isinstance(event, ScalarEvent) \
                    or event.style not in (None, "", "'", '"'):
                continue
            key_end = starts[key.end_mark.line] + key.end_mark.column
            colon = base.find(":", key_end)
            value_end = starts[event.end_mark.line] + event.end_mark.column
            end = base.find("\n", value_end)
            end = len(base) if end == -1 else end
            if colon == -1 or base[key_end:colon].strip(" ") or colon > value_end or (
                    regions and colon < regions[-1][1]):
                continue
            regions.append((colon + 1, end))
    except (yaml.YAMLError, UnicodeError):
        return []
    finally:
        loader.dispose()
    return regions


def _line_at(lines: list[str], index: int) -> str | None:
    """Line `index` of a text split on newlines, None past its end (the "" after a final newline)."""
    if index >= len(lines) or (index == len(lines) - 1 and lines[index] == ""):
        return None
    return lines[index]


def _history_change(base: str, head: str, base_pos: int, head_pos: int) -> ChangelogError:
    """The history-changed error at the first difference, with what kind of change it looks like."""
    base_lines, head_lines = base.split("\n"), head.split("\n")
    bi, hi = base.count("\n", 0, base_pos), head.count("\n", 0, head_pos)
    expected, found = _line_at(base_lines, bi), _line_at(head_lines, hi)
    if found is None:
        change = "removed"
    elif expected is None:
        change = "inserted"
    elif expected.split() == found.split():
        change = "whitespace"  # spaces, line endings or indentation
    elif not expected.strip() and _line_at(base_lines, bi + 1) == found:
        change = "whitespace"  # an empty line removed
    elif not found.strip() and _line_at(head_lines, hi + 1) == expected:
        change = "whitespace"  # an empty line added
    elif _line_at(head_lines, hi + 1) == expected:
        change = "inserted"
    elif _line_at(base_lines, bi + 1) == found:
        change = "removed"
    else:
        later_in_head = expected in head_lines[hi + 1:]
        later_in_base = found in base_lines[bi + 1:]
        change = {(False, True): "removed", (True, False): "inserted", (True, True): "moved"}.get(
            (later_in_head, later_in_base), "changed")
    return _history_error(hi + 1, bi + 1, change, expected, found)


def _check_history(base_bytes: bytes, head_bytes: bytes, check: _Check) -> ChangelogResult:
    """The head is not base + appended text: only `pr-link` values may have changed, with nothing appended."""
    prefix, sink = check.prefix, check.sink
    base = base_bytes.decode("utf-8", "surrogateescape")
    head = head_bytes.decode("utf-8", "surrogateescape")
    # A base above the size limit is not read: no link of it may be corrected, every change is a change.
    regions = _link_regions(base) if len(base_bytes) <= check.limits.max_bytes else []
    accepted = re.compile(
        rf" (?P<q>[\"']?)(?P<v>{re.escape(prefix)}\d+|{re.escape(PLACEHOLDER)}|{re.escape(prefix + PLACEHOLDER)})"
        r"(?P=q)")
    rejected: list[int] = []
    corrections: list[LinkCorrection] = []
    base_pos = head_pos = 0
    counted = newlines = 0  # newlines in head[:counted]: line numbers in one pass, however many links change
    for start, end in regions + [(len(base), len(base))]:
        segment = base[base_pos:start]
        if not head.startswith(segment, head_pos):
            same = _common_prefix(head, head_pos, base, base_pos)
            sink.add(_history_change(base, head, base_pos + same, head_pos + same))
            return sink.result()
        head_pos += len(segment)
        base_pos = end
        if start == len(base):
            break
        old = base[start:end]
        after = head_pos + len(old)
        if head.startswith(old, head_pos) and (after == len(head) or head[after] == "\n"):
            head_pos = after  # unchanged (it may span two lines: `pr-link:`, then the value)
            continue
        stop = head.find("\n", head_pos)
        stop = len(head) if stop == -1 else stop
        if not head[head_pos:stop].strip():
            # Nothing after `pr-link:`: the value is still on the lines below, as many as in the base.
            for _ in range(old.count("\n")):
                following = head.find("\n", stop + 1)
                stop = len(head) if following == -1 else following
        new = head[head_pos:stop]
        newlines += head.count("\n", counted, head_pos)
        counted = head_pos
        line = newlines + 1
        check.line = line
        if accepted.fullmatch(new):
            corrections.append(LinkCorrection(line, " ".join(old.split()), new.strip()))
        else:
            rejected.append(line)
            if not sink.room(line):
                sink.skip()
                head_pos = stop
                continue
            text = head[head.rfind("\n", 0, head_pos) + 1:head_pos] + new
            forms = [f"{prefix}<number>", PLACEHOLDER, prefix + PLACEHOLDER]
            next_line = "\n" in new or not new.strip()  # the changed value is on the line below `pr-link:`
            sink.add(_err(
                line, "link-correction-not-accepted", value=" ".join(new.split()), old=" ".join(old.split()),
                text=text, reason="value-on-next-line" if next_line else "not-accepted", expected=forms))
        head_pos = stop
    if head_pos < len(head):
        # Every link matched and the rest of the history too, but the head goes on: an append as well.
        appended_line = newlines + head.count("\n", counted, head_pos) + 1
        first = corrections[0].line if corrections else (rejected[0] if rejected else appended_line)
        sink.add(_err(
            first, "correction-with-append", corrected_lines=([c.line for c in corrections] + rejected)[:_SHOWN_LINES],
            corrected_count=len(corrections) + len(rejected), appended_line=appended_line))
    return sink.result(link_corrections=tuple(corrections))


# ---------------------------------------------------------------------------------------------------------
# Entry points


def check_append(base: bytes | None, head: bytes, *, pr_number: int, canonical_prefix: str,
                 limits: ChangelogLimits = DEFAULT_LIMITS) -> ChangelogResult:
    """Judge a PR's change to the changelog: `base` is the file at the base SHA (None: new on this PR),
    `head` the file at the head SHA. Every rule of SPEC.md section 3 that applies to a PR, within `limits`.
    Never raises for what the file holds: a RecursionError or MemoryError is a `too-complex` error."""
    check = _Check(pr_number, canonical_prefix, limits)
    try:
        return _check_append(base, head, check)
    except (RecursionError, MemoryError) as exc:
        return ChangelogResult(errors=(_too_complex(check.line, exc),), error_count=1,
                               error_count_is_lower_bound=True)


def _check_append(base: bytes | None, head: bytes, check: _Check) -> ChangelogResult:
    limit = check.limits.max_bytes
    if len(head) > limit:
        return ChangelogResult(errors=(_file_too_large(len(head), limit, head.count(b"\n", 0, limit) + 1),))
    history = b"" if base is None else base
    if not head.startswith(history):
        return _check_history(history, head, check)
    appended = head[len(history):]
    first_line = history.count(b"\n") + 1
    if history and not history.endswith(b"\n") and appended:
        if not appended.startswith(b"\n"):
            line = first_line
            return ChangelogResult(errors=(_history_error(line, line, "extended", None, None),))
        appended = appended[1:]
        first_line += 1
    if not appended:
        return ChangelogResult()
    entries = _check_appended(appended, first_line, history, check)
    return check.sink.result(entries=tuple(entries))


def validate_default_branch(text: str | bytes, *, canonical_prefix: str,
                            limits: ChangelogLimits = DEFAULT_LIMITS) -> list[ChangelogError]:
    """The merge-time rule: on the default branch every `pr-link` is the canonical prefix + digits.
    The first `limits.max_errors` errors by line; `check_default_branch` also counts the rest."""
    return list(check_default_branch(text, canonical_prefix=canonical_prefix, limits=limits).errors)


def check_default_branch(text: str | bytes, *, canonical_prefix: str,
                         limits: ChangelogLimits = DEFAULT_LIMITS) -> ChangelogResult:
    """`validate_default_branch` as a result: its errors (the first `max_errors` by line) and their count."""
    check = _Check(0, canonical_prefix, limits)
    try:
        return _default_branch(text, check)
    except (RecursionError, MemoryError) as exc:
        return ChangelogResult(errors=(_too_complex(check.line, exc),), error_count=1,
                               error_count_is_lower_bound=True)


def _default_branch(text: str | bytes, check: _Check) -> ChangelogResult:
    limits, sink = check.limits, check.sink
    size = len(text) if isinstance(text, bytes) or text.isascii() else len(text.encode("utf-8", "replace"))
    if size > limits.max_bytes:
        data = text if isinstance(text, bytes) else text.encode("utf-8", "replace")
        return ChangelogResult(errors=(_file_too_large(size, limits.max_bytes,
                                                       data.count(b"\n", 0, limits.max_bytes) + 1),))
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = text.count(b"\n", 0, exc.start) + 1
            return ChangelogResult(errors=(_character_error("not-utf8", [line]),))
    pattern = re.compile(re.escape(check.prefix) + r"\d+")
    expected = f"{check.prefix}<number>"
    loader = Loader(text)
    resolve = loader.resolve
    # Read from the events, nothing composed. What an item says about its links: its kind, its start line, and
    # its `pr-link` pairs as (key line, value tag, value, value kind); anchored values are remembered so that an
    # alias reads as its anchor, as the composed file would.
    anchors: dict[str, tuple[str, int, Any]] = {}  # name -> (kind, line, scalar (tag, value) or mapping links)
    stack: list[list[Any]] = []  # [kind, start line, links, key pending (a key summary or None), anchor]
    root_seen = False
    last = 0

    def finish(summary: tuple[str, int, Any]) -> None:
        """A node ended: give it to its parent, or judge it when it is an item of the list."""
        if len(stack) > 1:
            frame = stack[-1]
            if frame[0] == "mapping":
                if frame[3] is None:
                    frame[3] = summary
                else:
                    key = frame[3]
                    frame[3] = None
                    if key[0] == "scalar" and key[2][1] == "pr-link":
                        frame[2].append((key[1], summary))
            return
        kind, line, detail = summary
        check.line = line
        if kind != "mapping":
            if sink.room(line):
                sink.add(_err(line, "not-a-mapping", actual=kind, value=None))
            else:
                sink.skip()
            return
        if not detail:
            if sink.room(line):
                sink.add(_err(line, "missing-field", field="pr-link"))
            else:
                sink.skip()
        for key_line, (value_kind, _, value) in detail:
            tag, scalar = value if value_kind == "scalar" else (None, None)
            if tag == _STR_TAG and isinstance(scalar, str) and pattern.fullmatch(scalar):
                continue
            if not sink.room(key_line):
                sink.skip()
                continue
            shown = scalar if isinstance(scalar, str) else value_kind
            sink.add(_err(key_line, "default-branch-link", value=shown, expected=expected))

    try:
        while loader.check_event():
            event = loader.get_event()
            kind = type(event)
            if kind in (yaml.StreamStartEvent, yaml.StreamEndEvent, yaml.DocumentStartEvent, yaml.DocumentEndEvent):
                continue
            line = event.start_mark.line + 1
            if not root_seen:
                root_seen = True
                if kind is not SequenceStartEvent:
                    return ChangelogResult(errors=(_err(
                        1, "not-a-list", actual={MappingStartEvent: "mapping"}.get(kind, "scalar")),))
                stack.append(["sequence", line, [], None, None])
                last = event.end_mark.index
                continue
            if isinstance(event, CollectionEndEvent):
                frame = stack.pop()
                summary = (frame[0], frame[1], frame[2] if frame[0] == "mapping" else None)
                if frame[4] is not None:
                    anchors[frame[4]] = summary
                if stack:
                    finish(summary)
                last = event.end_mark.index
                continue
            check.values += 1
            if check.values > limits.max_values:
                sink.add(_too_many_values(line, limits.max_values))
                sink.partial = True
                break
            if len(stack) + 1 > limits.max_depth:
                return ChangelogResult(errors=(_too_deep(line, limits.max_depth),))
            if kind is AliasEvent:
                if event.anchor not in anchors:
                    raise ComposerError(None, None, "found undefined alias", event.start_mark)
                finish(anchors[event.anchor])
            elif kind is ScalarEvent:
                tag = event.tag
                if tag is None or tag == "!":
                    tag = resolve(ScalarNode, event.value, event.implicit)
                summary = ("scalar", line, (tag, event.value))
                if event.anchor is not None:
                    anchors[event.anchor] = summary
                finish(summary)
            else:
                mapping = kind is MappingStartEvent
                stack.append(["mapping" if mapping else "sequence", line, [], None, event.anchor])
            last = event.end_mark.index
    except yaml.YAMLError as exc:
        if "nesting depth" in str(getattr(exc, "problem", "")):
            row = _flow_overflow(text, last, len(stack) + 1, limits.max_depth)
            if row is not None:
                return ChangelogResult(errors=(_too_deep(row + 1, limits.max_depth),))
        return ChangelogResult(errors=(_yaml_error(exc, 1, 1),))
    finally:
        loader.dispose()
    return sink.result()
