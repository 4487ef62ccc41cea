"""The performance changelog's append-only rules (SPEC.md section 3), as pure functions over bytes.

`check_append(base, head, pr_number=..., canonical_prefix=...)` compares the file at a PR's base SHA with the
file at its head SHA. The base must stay a byte-exact prefix of the head; only the appended text is parsed
and judged, so lines of history the PR did not add are never blamed (the real history holds links and
whitespace the rules refuse in new entries). A PR that appends nothing may correct `pr-link` values of
existing entries and nothing else.

Errors are data: a stable `code`, the head-file `line` (1-based), the `params` a template needs, and an
English `message` and `fix`. Every error that can be found is reported, not only the first.

Cost is linear in the file: the history is compared as bytes and never parsed, except when the head is not
an extension of the base (then the base is parsed once to find its `pr-link` values).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

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
_CONTROL = re.compile("[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
# Line breaks YAML knows besides LF; they would shift YAML's line numbers away from the file's.
_OTHER_BREAKS = str.maketrans({"\x85": " ", "\u2028": " ", "\u2029": " "})
_ENTRY_START = re.compile(r"-(?:[ \t]|$)")  # a top-level sequence item: `-` in column 0
_DOCUMENT_MARKER = re.compile(r"(?:---|\.\.\.)(?:[ \t]|$)|%")
_MERGE_TAG = "tag:yaml.org,2002:merge"


# ---------------------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class ChangelogError:
    """One thing wrong, on one line of the head file: `str(error)` reads `line N: message; fix: fix`."""

    line: int
    message: str
    fix: str
    code: str
    params: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}; fix: {self.fix}"


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
    """

    entries: tuple[AppendedEntry, ...] = ()
    errors: tuple[ChangelogError, ...] = ()
    link_corrections: tuple[LinkCorrection, ...] = ()

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


# ---------------------------------------------------------------------------------------------------------
# Wording. Every error is built here, so that code, params and English stay together.


def _code(value: Any) -> str:
    """`value` as a Markdown code span that survives backticks and edge spaces inside it."""
    text = value if isinstance(value, str) else _show(value)
    text = text if len(text) <= 120 else text[:117] + "..."
    ticks = "`"
    while ticks in text:
        ticks += "`"
    pad = " " if text.startswith("`") or text.endswith("`") or text[:1] == " " or text[-1:] == " " else ""
    return f"{ticks}{pad}{text}{pad}{ticks}" if text else "an empty string"


def _show(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return yaml.safe_dump(value, default_flow_style=True, width=10**6).strip().removesuffix("...").strip()


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    for kind, name in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"),
                       (list, "list"), (dict, "mapping"), (bytes, "binary")):
        if isinstance(value, kind):
            return name
    return type(value).__name__  # date, datetime, set


_EXPECTED = {  # wrong-type's `expected` tokens
    "string": "a string",
    "list-of-strings": "a list of strings",
    "list-of-scenario-types": "a list of " + " or ".join(f"`{s}`" for s in SCENARIO_TYPES),
    "boolean": "`true` or `false`",
    "positive-integer": "an integer of at least 1",
}

_ARTICLE = {"integer": "an integer", "list": "a list", "mapping": "a mapping", "null": "null (no value)",
            "boolean": "a boolean", "number": "a number", "string": "a string", "binary": "binary data",
            "date": "a date", "datetime": "a timestamp", "set": "a set"}


def _a(kind: str) -> str:
    return _ARTICLE.get(kind, kind)


def _link_forms(prefix: str, pr_number: int) -> list[str]:
    return [PLACEHOLDER, prefix + PLACEHOLDER, f"{prefix}{pr_number}"]


def _or(items: list[str]) -> str:
    spans = [_code(i) for i in items]
    return spans[0] if len(spans) == 1 else ", ".join(spans[:-1]) + " or " + spans[-1]


def _lines_note(lines: list[int]) -> str:
    if len(lines) == 1:
        return f"line {lines[0]}"
    shown = ", ".join(str(n) for n in lines[:10])
    more = f" and {len(lines) - 10} more" if len(lines) > 10 else ""
    return f"{len(lines)} lines ({shown}{more})"


def _err(line: int, code: str, message: str, fix: str, **params: Any) -> ChangelogError:
    return ChangelogError(line=line, message=message, fix=fix, code=code, params=params)


_CHARACTER_RULES = {
    "tab": ("tab characters", "indent with spaces and replace every tab with spaces"),
    "cr": ("carriage returns (CR, Windows line endings)", "save the file with LF (Unix) line endings"),
    "nul": ("NUL bytes", "remove the NUL bytes; the file is plain text"),
    "control-character": ("control characters YAML does not allow", "remove the control characters"),
    "not-utf8": ("bytes that are not valid UTF-8", "save the file as UTF-8"),
}


def _character_error(code: str, lines: list[int], **extra: Any) -> ChangelogError:
    what, fix = _CHARACTER_RULES[code]
    return _err(lines[0], code, f"the appended text has {what} on {_lines_note(lines)}", fix,
                lines=lines, count=len(lines), **extra)


def _history_error(line: int, base_line: int, change: str, expected: str | None, found: str | None,
                   ) -> ChangelogError:
    was = f"line {base_line} of the base branch's file reads {_code(expected.strip())}" if expected \
        else f"line {base_line} of the base branch's file is empty" if expected is not None \
        else f"the base branch's file ends at line {base_line - 1}"
    message = {
        "changed": f"the existing history was changed at line {line} ({was})",
        "whitespace": f"the whitespace of the existing history was changed at line {line} ({was}; an editor "
                      "may have trimmed trailing spaces or changed line endings)",
        "removed": f"lines of the existing history were removed at line {line} ({was})",
        "inserted": f"text was inserted into the existing history at line {line}",
        "moved": f"the existing history was reordered at line {line} ({was})",
        "extended": f"the history's last line {line} was extended: the base branch's file does not end with a "
                    "newline and the appended text does not start with one",
    }[change]
    fix = {
        "changed": "restore the base branch's text of the file exactly and add new entries only at its end",
        "whitespace": "restore the base branch's bytes exactly (turn off whitespace trimming for this file) "
                      "and add new entries only at its end",
        "removed": "restore the removed lines: entries are never deleted, only appended",
        "inserted": "move the new text to the end of the file, after one empty line",
        "moved": "restore the base branch's order of entries and add new entries only at the end",
        "extended": "start the appended text with a newline, then one empty line, then the entry",
    }[change]
    return _err(line, "history-changed", message, fix, change=change, base_line=base_line,
                expected=expected, found=found)


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
    what = f"{problem} ({context})" if context else problem
    needs_quotes = "alias" in problem or "anchor" in problem or "tag" in problem
    if needs_quotes:
        # `- *-mtp`: a config-keys wildcard at the start of a value reads as a YAML alias
        fix = "put a value that starts with `*`, `&` or `!` in quotes, e.g. `- \"*-mtp\"`"
    else:
        fix = ("fix the YAML syntax at that line: keep each entry's keys indented by two spaces under its "
               "`- `, and quote strings that contain `: ` or start with a special character")
    return _err(line, "yaml-syntax", f"the YAML cannot be read at line {line}: {what}", fix,
                problem=problem, context=context, needs_quotes=needs_quotes)


# ---------------------------------------------------------------------------------------------------------
# Checking one entry


class _EntryChecker:
    def __init__(self, loader: Any, lines: list[str], first_line: int, pr_number: int, prefix: str):
        self.loader = loader
        self.lines = lines  # the parsed text's lines
        self.first_line = first_line  # head line number of the parsed text's line 0
        self.pr_number = pr_number
        self.prefix = prefix
        self.errors: list[ChangelogError] = []
        self.own: range | None = None  # the entry's head lines, when other entries were parsed with it

    def at(self, node: yaml.Node) -> int:
        return self.first_line + node.start_mark.line

    def foreign(self, node: yaml.Node) -> bool:
        """A node written outside this entry's lines: it came in by an alias to another entry's anchor."""
        return self.own is not None and self.at(node) not in self.own

    def check(self, node: yaml.Node, dash_line: int, own: range | None = None,
              aliases: tuple[tuple[int, str, int], ...] = ()) -> AppendedEntry | None:
        """The entry, or None when it is not a mapping; its errors go to self.errors.

        `own` is the entry's head lines when the appended text was parsed as a whole (an alias there may name
        an anchor in another entry), and `aliases` its aliases to other entries' anchors, as (line, name, the
        anchor's line). Each is an error on its own line, and what it brings in is not checked here: the
        rules would blame the other entry's lines for it.
        """
        self.own = own
        for line, name, anchor_line in aliases:
            self.errors.append(_err(
                line, "yaml-syntax",
                f"the alias `*{name}` at line {line} names the anchor `&{name}` of another entry (line "
                f"{anchor_line}); each entry is read on its own",
                "write the value out in full in this entry (and put a value that starts with `*` in quotes, "
                "e.g. `- \"*-mtp\"`)",
                problem=f"found alias {name!r} of an anchor in another entry (line {anchor_line})",
                context="each entry is read on its own", needs_quotes=True))
        if self.foreign(node):
            return None  # the whole entry is an alias (`- *a`): nothing of its own to check
        if isinstance(node, yaml.MappingNode):
            # The merge key `<<` is not a field. PyYAML's constructor would flatten it into the mapping, so that
            # the merged fields look written here: take it out of the node before the entry is constructed.
            merges = [key_node for key_node, _ in node.value if key_node.tag == _MERGE_TAG]
            for key_node in merges:
                self.errors.append(_err(
                    self.at(key_node), "unknown-field",
                    "the merge key `<<` is not a field of a changelog entry",
                    "write the fields out in full", field="<<", suggestion=None, expected=list(FIELDS),
                    merge_key=True))
            if merges:
                node.value = [(k, v) for k, v in node.value if k.tag != _MERGE_TAG]
        self.loader.duplicates = []
        try:
            data = self.loader.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            self.loader.recursive_objects = {}
            self.errors.append(_yaml_error(exc, self.first_line, dash_line))
            return None
        for key, first, dup in self.loader.duplicates:
            line = self.first_line + dup
            self.errors.append(_err(
                line, "duplicate-key",
                f"the key {_code(_show(key))} appears twice in the entry at line {dash_line} (first at line "
                f"{self.first_line + first}, again at line {line}); YAML would silently keep only the last one",
                f"keep one {_code(_show(key))} and delete the other", key=_show(key),
                first_line=self.first_line + first, entry_line=dash_line))
        if not isinstance(node, yaml.MappingNode) or not isinstance(data, dict):
            self.errors.append(_err(
                dash_line, "not-a-mapping",
                f"the entry at line {dash_line} is {_a(_kind(data))}, not a mapping of fields",
                "write the entry as `- config-keys:` followed by its `description` and `pr-link` fields",
                actual=_kind(data), value=_show(data)))
            return None
        pairs: dict[Any, tuple[yaml.Node, yaml.Node]] = {}
        for key_node, value_node in node.value:
            if self.foreign(key_node):
                continue  # a key written as an alias to another entry: its alias error says so
            key = self.loader.construct_object(key_node, deep=True)
            if key in FIELDS:
                pairs[key] = (key_node, value_node)  # the last one, as in `data`
                continue
            shown = _show(key)
            guess = difflib.get_close_matches(shown.lower().replace("_", "-"), FIELDS, n=1, cutoff=0.6)
            fix = f"rename it to {_code(guess[0])}" if guess else \
                f"remove it; an entry's fields are {_or(list(FIELDS))}"
            self.errors.append(_err(
                self.at(key_node), "unknown-field",
                f"{_code(shown)} is not a field of a changelog entry", fix,
                field=shown, suggestion=guess[0] if guess else None, expected=list(FIELDS), merge_key=False))
        for name in REQUIRED_FIELDS:
            if name not in pairs:
                self.errors.append(_err(
                    dash_line, "missing-field",
                    f"the entry at line {dash_line} has no {_code(name)}",
                    f"add {_code(name + ':')} to the entry", field=name))

        # A value that is an alias to another entry's has its alias error; it is present, but not checked.
        checked = {key: pair for key, pair in pairs.items() if not self.foreign(pair[1])}
        config_keys = self.string_list(checked.get("config-keys"), data.get("config-keys"), "config-keys")
        description = self.string_list(checked.get("description"), data.get("description"), "description")
        scenario = self.string_list(checked.get("scenario-type"), data.get("scenario-type"), "scenario-type",
                                    allowed=SCENARIO_TYPES)
        flags = {name: self.boolean(checked.get(name), data.get(name), name) for name in BOOLEAN_FIELDS}
        ep = self.min_prefill(checked.get("eval-min-prefill-ep"), data.get("eval-min-prefill-ep"))
        link = self.pr_link(checked.get("pr-link"), data.get("pr-link"))
        if self.own is not None:
            # An alias deeper inside a value (a list item): what it brings is another entry's, on its lines.
            self.errors = [e for e in self.errors if e.line in self.own]
        if flags["append-only"]:
            combined = [name for name in ("evals-only", "all-evals") if flags[name]]
            if combined:
                line = self.at(checked["append-only"][0])
                self.errors.append(_err(
                    line, "append-only-combination",
                    f"`append-only: true` cannot be combined with {' and '.join(f'`{c}: true`' for c in combined)}"
                    " in one entry", "drop `append-only`, or drop " + " and ".join(f"`{c}`" for c in combined)
                    + " (an entry that only appends results runs no evals of its own)", combined=combined))
        return AppendedEntry(
            line=dash_line, config_keys=tuple(config_keys or ()), description=tuple(description or ()),
            pr_link=link or "", scenario_type=tuple(scenario or ()), evals_only=bool(flags["evals-only"]),
            all_evals=bool(flags["all-evals"]), append_only=bool(flags["append-only"]),
            eval_min_prefill_ep=ep)

    def wrong_type(self, line: int, name: str, expected: str, value: Any, index: int | None = None) -> None:
        """`expected` is a token of _EXPECTED; `actual` is _kind's name of what was written."""
        where = f"item {index + 1} of {_code(name)}" if index is not None else _code(name)
        wanted = _EXPECTED[expected]
        hint = " (in quotes, so that YAML reads it as a string)" if expected == "string" and value is not None \
            else ""
        self.errors.append(_err(
            line, "wrong-type", f"{where} must be {wanted}, but it is {_a(_kind(value))} ({_code(_show(value))})",
            f"write {where} as {wanted}{hint}",
            field=name, expected=expected, actual=_kind(value), value=_show(value), index=index,
            choices=list(SCENARIO_TYPES) if expected == "list-of-scenario-types" else None))

    def string_list(self, pair: tuple[yaml.Node, yaml.Node] | None, value: Any, name: str,
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
            self.errors.append(_err(line, "empty-list", f"{_code(name)} is an empty list",
                                    f"list at least one item under {_code(name + ':')}", field=name))
            return None
        items = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node] * len(value)
        good = True
        for index, (item, item_node) in enumerate(zip(value, items)):
            item_line = self.at(item_node)
            if not isinstance(item, str):
                self.wrong_type(item_line, name, "string", item, index)
                good = False
            elif not item.strip():
                self.errors.append(_err(
                    item_line, "empty-string", f"item {index + 1} of {_code(name)} is an empty string",
                    "write something in it or remove it", field=name, index=index))
                good = False
            elif allowed is not None and item not in allowed:
                self.errors.append(_err(
                    item_line, "invalid-value", f"{_code(item)} is not a {_code(name)}",
                    f"use {_or(list(allowed))}", field=name, value=item, expected=list(allowed)))
                good = False
        return value if good else None

    def boolean(self, pair: tuple[yaml.Node, yaml.Node] | None, value: Any, name: str) -> bool | None:
        if pair is None:
            return None
        if not isinstance(value, bool):
            self.wrong_type(self.at(pair[0]), name, "boolean", value)
            return None
        return value

    def min_prefill(self, pair: tuple[yaml.Node, yaml.Node] | None, value: Any) -> int | None:
        name = "eval-min-prefill-ep"
        if pair is None:
            return None
        line = self.at(pair[0])
        if isinstance(value, bool) or not isinstance(value, int):
            self.wrong_type(line, name, "positive-integer", value)
            return None
        if value < 1:
            self.errors.append(_err(
                line, "out-of-range", f"{_code(name)} is {value}, but it must be at least 1",
                f"set {_code(name)} to 1 or more, or remove it", field=name, value=value, minimum=1))
            return None
        return value

    def pr_link(self, pair: tuple[yaml.Node, yaml.Node] | None, value: Any) -> str | None:
        if pair is None:
            return None
        key_node, value_node = pair
        line = self.at(key_node)
        forms = _link_forms(self.prefix, self.pr_number)
        fix = f"use {_or(forms)}"
        params = {"pr_number": self.pr_number, "prefix": self.prefix, "expected": forms}
        if not isinstance(value, str) or not isinstance(value_node, yaml.ScalarNode):
            self.wrong_type(line, "pr-link", "string", value)
            return None
        if value_node.start_mark.line != key_node.start_mark.line:
            self.errors.append(_err(
                line, "pr-link-next-line",
                f"the value of `pr-link` starts on the next line, line {self.at(value_node)}",
                f"write the link on the same line as `pr-link:`, as `pr-link: {forms[0]}`", value=value,
                value_line=self.at(value_node), **params))
            return None
        if value not in forms:
            self.errors.append(_err(
                line, "pr-link-not-accepted",
                f"pr-link {_code(value)} is not accepted (this PR is #{self.pr_number})", fix,
                value=value, **params))
            return None
        text = self.lines[value_node.start_mark.line]
        between = text[key_node.end_mark.column:value_node.start_mark.column]
        after = text[value_node.end_mark.column:] if value_node.end_mark.line == value_node.start_mark.line \
            else None
        block = value_node.style in ("|", ">")  # libyaml gives a plain scalar the style "", PyYAML None
        spaces: int | None = None  # spacing-around-colon: after `pr-link:` (None: not only extra spaces)
        trailing: str | None = None  # text-after-link: what follows the link
        if block:
            problem, what = "block-scalar", "the link is written as a block (`|` or `>`)"
        elif between != ": ":
            problem = "spacing-around-colon"
            spaces = len(between) - 1
            if not (between[:1] == ":" and spaces > 1 and not between[1:].strip(" ")):
                spaces = None
            what = f"{spaces} spaces come after `pr-link:`" if spaces is not None else \
                "`pr-link` and the link are not separated by exactly `: `"
        elif after and not self.flow_tail(after) and not after.strip(" "):
            spaces = len(after)
            problem, what = "trailing-spaces", f"{len(after)} space{'s' if len(after) > 1 else ''} follow the link"
        elif after and not self.flow_tail(after):
            trailing = after.strip()
            problem, what = "text-after-link", f"text follows the link: {_code(after.strip())}"
        else:
            return value
        self.errors.append(_err(
            line, "pr-link-format", f"the `pr-link` line is not written exactly: {what}",
            f"write it as `pr-link: {value}`, with one space after the colon and nothing after the link",
            value=value, text=text, problem=problem, spaces=spaces, after=trailing, **params))
        return None

    @staticmethod
    def flow_tail(after: str) -> bool:
        """In a flow mapping (`{..., pr-link: XXX}`) the link is followed by `,` or `}`, with no space."""
        return after[:1] in (",", "}")


# ---------------------------------------------------------------------------------------------------------
# The appended text


def _is_blank(line: str) -> bool:
    return not line.strip()


def _is_comment(line: str) -> bool:
    return line.lstrip().startswith("#")


def _trailing_blank_lines(text: bytes) -> int:
    lines = text.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    count = 0
    for line in reversed(lines):
        if line.strip():
            break
        count += 1
    return count


def _check_appended(appended: bytes, first_line: int, history: bytes, pr_number: int, prefix: str,
                    ) -> tuple[list[AppendedEntry], list[ChangelogError]]:
    errors: list[ChangelogError] = []
    raw_lines = appended.split(b"\n")

    # Characters: one error per rule, naming every line.
    found: dict[str, list[int]] = {code: [] for code in _CHARACTER_RULES}
    first_control: str | None = None
    for index, raw in enumerate(raw_lines):
        number = first_line + index
        try:
            decoded = raw.decode("utf-8")
        except UnicodeDecodeError:
            found["not-utf8"].append(number)
            decoded = raw.decode("utf-8", "replace")
        for char, code in (("\t", "tab"), ("\r", "cr"), ("\0", "nul")):
            if char in decoded:
                found[code].append(number)
        control = _CONTROL.search(decoded.replace("\0", ""))
        if control:
            found["control-character"].append(number)
            first_control = first_control or f"U+{ord(control.group()):04X}"
    for code, lines in found.items():
        if lines:
            extra = {"character": first_control} if code == "control-character" else {}
            errors.append(_character_error(code, lines, **extra))
    tab_lines = set(found["tab"])

    text = appended.decode("utf-8", "replace").replace("\r", "").replace("\0", "")
    text = _CONTROL.sub(" ", text).translate(_OTHER_BREAKS)
    if not history and text.startswith("\ufeff"):
        text = text[1:]  # a byte-order mark opening a new file is UTF-8 too, and YAML skips it
    lines = text.split("\n")  # lines[-1] is "" when the text ends with a newline
    last = first_line + len(lines) - 1

    # The end of the file: exactly one newline.
    if not text.endswith("\n"):
        errors.append(_err(last, "trailing-newline", f"the file does not end with a newline after line {last}",
                           "add a newline at the end of the last line", problem="missing", blank_lines=0))
    else:
        blank = 0
        while blank < len(lines) - 1 and _is_blank(lines[-2 - blank]):
            blank += 1
        if blank:
            start = last - blank
            errors.append(_err(
                start, "trailing-newline",
                f"the file ends with {blank} empty line{'s' if blank > 1 else ''} (from line {start})",
                "remove the empty lines at the end: the file ends with exactly one newline, right after the "
                "last entry", problem="extra-blank-lines", blank_lines=blank))

    # Lines YAML would read as a new document or a directive; text before the first entry.
    parse_lines = list(lines)
    first_entry = next((i for i, line in enumerate(lines) if _ENTRY_START.match(line)), None)
    for index, line in enumerate(lines):
        if _DOCUMENT_MARKER.match(line):
            errors.append(_err(
                first_line + index, "document-marker",
                f"line {first_line + index} ({_code(line.strip())}) would start or end a YAML document: the "
                "changelog is one list", "remove the line", value=line.strip()))
            parse_lines[index] = ""
    stray = [i for i in range(len(lines) if first_entry is None else first_entry)
             if not _is_blank(lines[i]) and not _is_comment(lines[i]) and parse_lines[i]]
    if stray:
        number = first_line + stray[0]
        indented = lines[stray[0]][:1] in (" ", "\t")
        extends_history = indented and bool(history.strip())
        if extends_history:
            message = (f"line {number} is indented but is not inside a new entry: it would add to the last "
                       "entry of the existing history")
        else:
            message = f"line {number} is not inside a list entry: the changelog is a YAML list"
        errors.append(_err(
            number, "outside-entry", message,
            "start each new entry with `- config-keys:` in the first column, after one empty line",
            value=lines[stray[0]].strip(), indented=indented, extends_history=extends_history))
        for i in stray:
            parse_lines[i] = ""

    # Parse the appended text alone: the history ends at a line boundary with a complete list, so the
    # appended lines, each entry starting with `- ` in column 0, are the list's new items.
    entries: list[AppendedEntry] = []
    # (loader, entry node, its `- ` line, the head line of the parsed text's first line, the parsed lines,
    #  the entry's own head lines and its aliases to other entries, when the entries were parsed together)
    located: list[tuple[Any, yaml.Node, int, int, list[str], range | None, tuple[tuple[int, str, int], ...]]] = []
    parse_errors: list[ChangelogError] = []
    dash_lines: set[int] = set()
    whole = _parse(parse_lines, first_line)
    if isinstance(whole, ChangelogError):
        # Each entry (from one `- ` line in column 0 to the next) parsed alone: an unclosed quote is named
        # in its own entry rather than where the parser gave up, and the other entries are still checked.
        # Only if every entry parses alone (an alias to an anchor in another entry) is the error the whole's.
        starts = [i for i, line in enumerate(parse_lines) if _ENTRY_START.match(line)]
        dash_lines = {first_line + i for i in starts}
        for start, end in zip(starts, starts[1:] + [len(parse_lines)]):
            part_lines = parse_lines[start:end]
            part = _parse(part_lines, first_line + start)
            if isinstance(part, ChangelogError):
                parse_errors.append(part)
            elif part is not None:
                loader, node = part
                located.extend((loader, item, first_line + start, first_line + start, part_lines, None, ())
                               for item in node.value)
        if not parse_errors:
            parse_errors.append(whole)
    elif whole is not None:
        loader, node = whole
        starts, aliases = _items_and_aliases(parse_lines, len(node.value))
        starts = starts or [item.start_mark.line for item in node.value]
        dashes = []
        for start in starts:
            dash = start
            while dash > 0 and not _ENTRY_START.match(parse_lines[dash]):
                dash -= 1
            dashes.append(dash)
        for index, item in enumerate(node.value):
            end = dashes[index + 1] if index + 1 < len(dashes) else len(parse_lines)
            own = range(first_line + dashes[index], first_line + end)
            uses = tuple((first_line + line, name, first_line + anchor) for i, line, name, anchor in aliases
                         if i == index)
            located.append((loader, item, first_line + dashes[index], first_line, parse_lines, own, uses))
            dash_lines.add(first_line + dashes[index])
    # A tab breaks YAML where it indents; the tab error already names that line.
    errors.extend(e for e in parse_errors if not (e.code == "yaml-syntax" and e.line in tab_lines))

    for loader, item, dash_line, text_line, text_lines, own, uses in located:
        checker = _EntryChecker(loader, text_lines, text_line, pr_number, prefix)
        entry = checker.check(item, dash_line, own, uses)
        errors.extend(checker.errors)
        if entry is not None:
            entries.append(entry)

    # Separators: exactly one empty line before each entry (none at the top of a new file).
    history_blank = _trailing_blank_lines(history)
    history_content = bool(history.strip())
    for dash_line in sorted(dash_lines):
        index = dash_line - first_line - 1
        blank = 0
        while index >= 0 and _is_blank(lines[index]):
            blank += 1
            index -= 1
        if index >= 0:
            expected, found_blank = 1, blank
        elif not history_content:
            expected, found_blank = 0, blank
        elif history_blank:
            expected, found_blank = history_blank, history_blank + blank  # the history's own are not blamed
        else:
            expected, found_blank = 1, blank
        if found_blank == expected:
            continue
        if expected == 0:
            message = f"the file must start with its first entry, but {found_blank} empty line(s) come before it"
            fix = "remove the empty lines at the top of the file"
        elif found_blank < expected:
            message = f"the entry at line {dash_line} is not separated from the text above it by an empty line"
            fix = f"add one empty line before line {dash_line}"
        else:
            message = (f"the entry at line {dash_line} is preceded by {found_blank} empty lines; entries are "
                       "separated by exactly one")
            fix = f"remove {found_blank - expected} of the empty lines before line {dash_line}"
        errors.append(_err(dash_line, "separator", message, fix, blank_lines=found_blank, expected=expected))
    return entries, errors


def _items_and_aliases(lines: list[str], count: int) -> tuple[list[int], list[tuple[int, int, str, int]]]:
    """What the composed nodes of a parsed list do not keep, from its YAML events (0-based lines of `lines`).

    An alias becomes the very node of its anchor, marks and all, so the nodes cannot say where an alias is
    written. The events can: each of the `count` items' first line (of `- *a` too), and each alias that names
    an anchor of another item, as (its item, its line, the name, the anchor's line). Aliases in the value of an
    entry's merge key `<<` are left out: that key is the error there, and its value is not read.
    """
    loader = Loader("\n".join(lines))
    starts: list[int] = []
    aliases: list[tuple[int, int, str, int]] = []
    anchors: dict[str, tuple[int, int]] = {}  # name -> (item, line) of its latest definition
    stack: list[list[bool]] = []  # each open collection: [a mapping, its key comes next, in a merge key's value]
    try:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, yaml.CollectionEndEvent):
                stack.pop()
            elif isinstance(event, yaml.NodeEvent):
                if len(stack) == 1:
                    starts.append(event.start_mark.line)
                item = len(starts) - 1
                entry = stack[1] if len(stack) > 1 and stack[1][0] else None
                merged = entry is not None and entry[2]
                if isinstance(event, yaml.AliasEvent):
                    anchor = anchors.get(event.anchor)
                    if anchor is not None and anchor[0] != item and not merged:
                        aliases.append((item, event.start_mark.line, event.anchor, anchor[1]))
                else:
                    if event.anchor is not None:
                        anchors[event.anchor] = (item, event.start_mark.line)
                    if entry is not None and len(stack) == 2 and entry[1] and isinstance(event, yaml.ScalarEvent):
                        tag = event.tag if event.tag not in (None, "!") else \
                            loader.resolve(yaml.ScalarNode, event.value, event.implicit)
                        entry[2] = tag == _MERGE_TAG
                    if isinstance(event, yaml.CollectionStartEvent):
                        stack.append([isinstance(event, yaml.MappingStartEvent), True, False])
                        continue
            else:
                continue
            if stack and stack[-1][0]:  # a node of a mapping ended: a key is followed by its value, and back
                stack[-1][2] = stack[-1][2] and stack[-1][1]
                stack[-1][1] = not stack[-1][1]
    except yaml.YAMLError:  # not expected: the same text was composed without an error
        starts = []
    finally:
        loader.dispose()
    if len(starts) != count:
        return [], []
    return starts, aliases


def _parse(lines: list[str], first_line: int) -> tuple[Any, yaml.Node] | ChangelogError | None:
    """Compose `lines` as one YAML document: (loader, sequence node), None when empty, or the error."""
    loader = Loader("\n".join(lines))
    try:
        node = loader.get_single_node()
    except yaml.YAMLError as exc:
        loader.dispose()
        return _yaml_error(exc, first_line, first_line)
    if node is None:
        return None
    if not isinstance(node, yaml.SequenceNode):
        line = first_line + node.start_mark.line
        return _err(line, "not-a-list", f"the text from line {line} is not a YAML list of entries",
                    "start each entry with `- ` in the first column", actual=node.id)
    return loader, node


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
    """Where each existing entry's link is written: from after `pr-link:` to the end of the value's line."""
    loader = Loader(base)
    try:
        node = loader.get_single_node()
    except (yaml.YAMLError, UnicodeError):
        return []
    finally:
        loader.dispose()
    if not isinstance(node, yaml.SequenceNode):
        return []
    starts = _line_starts(base)
    regions: list[tuple[int, int]] = []
    for item in node.value:
        if not isinstance(item, yaml.MappingNode) or item.flow_style:
            continue
        for key_node, value_node in item.value:
            if not (isinstance(key_node, yaml.ScalarNode) and key_node.value == "pr-link"
                    and isinstance(value_node, yaml.ScalarNode) and value_node.style in (None, "", "'", '"')):
                continue
            key_end = starts[key_node.end_mark.line] + key_node.end_mark.column
            colon = base.find(":", key_end)
            value_end = starts[value_node.end_mark.line] + value_node.end_mark.column
            end = base.find("\n", value_end)
            end = len(base) if end == -1 else end
            if colon == -1 or base[key_end:colon].strip(" ") or colon > value_end or (
                    regions and colon < regions[-1][1]):
                continue
            regions.append((colon + 1, end))
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


def _check_history(base_bytes: bytes, head_bytes: bytes, pr_number: int, prefix: str) -> ChangelogResult:
    """The head is not base + appended text: only `pr-link` values may have changed, with nothing appended."""
    base = base_bytes.decode("utf-8", "surrogateescape")
    head = head_bytes.decode("utf-8", "surrogateescape")
    regions = _link_regions(base)
    accepted = re.compile(
        rf" (?P<q>[\"']?)(?P<v>{re.escape(prefix)}\d+|{re.escape(PLACEHOLDER)}|{re.escape(prefix + PLACEHOLDER)})"
        r"(?P=q)")
    errors: list[ChangelogError] = []
    corrections: list[LinkCorrection] = []
    base_pos = head_pos = 0
    counted = newlines = 0  # newlines in head[:counted]: line numbers in one pass, however many links change
    for start, end in regions + [(len(base), len(base))]:
        segment = base[base_pos:start]
        if not head.startswith(segment, head_pos):
            same = _common_prefix(head, head_pos, base, base_pos)
            errors.append(_history_change(base, head, base_pos + same, head_pos + same))
            return ChangelogResult(errors=tuple(errors))
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
        text = head[head.rfind("\n", 0, head_pos) + 1:head_pos] + new
        if accepted.fullmatch(new):
            corrections.append(LinkCorrection(line, " ".join(old.split()), new.strip()))
        else:
            forms = [f"{prefix}<number>", PLACEHOLDER, prefix + PLACEHOLDER]
            next_line = "\n" in new or not new.strip()
            changed = "changes the existing `pr-link` value that is on the next line" if next_line else \
                f"changes the existing `pr-link` to {_code(new.strip())}, which is not a link the changelog accepts"
            errors.append(_err(
                line, "link-correction-not-accepted", f"this PR {changed}",
                f"write it as `pr-link: {prefix}<number>` (the PR that made the entry), on one line with one "
                "space after the colon", value=" ".join(new.split()), old=" ".join(old.split()), text=text,
                reason="value-on-next-line" if next_line else "not-accepted", expected=forms))
        head_pos = stop
    if head_pos < len(head):
        # Every link matched and the rest of the history too, but the head goes on: an append as well.
        appended_line = newlines + head.count("\n", counted, head_pos) + 1
        first = corrections[0].line if corrections else (errors[0].line if errors else appended_line)
        errors.append(_err(
            first, "correction-with-append",
            f"this PR changes existing `pr-link` values (from line {first}) and also appends text (from line "
            f"{appended_line}); a PR may do one or the other",
            "correct the links in a PR of its own, and append the new entry in another",
            corrected_lines=[c.line for c in corrections] + [e.line for e in errors
                                                            if e.code == "link-correction-not-accepted"],
            appended_line=appended_line))
    if errors:
        return ChangelogResult(errors=tuple(sorted(errors, key=lambda e: e.line)))
    return ChangelogResult(link_corrections=tuple(corrections))


# ---------------------------------------------------------------------------------------------------------
# Entry points


def check_append(base: bytes | None, head: bytes, *, pr_number: int, canonical_prefix: str) -> ChangelogResult:
    """Judge a PR's change to the changelog: `base` is the file at the base SHA (None: new on this PR),
    `head` the file at the head SHA. Every rule of SPEC.md section 3 that applies to a PR."""
    history = b"" if base is None else base
    if not head.startswith(history):
        return _check_history(history, head, pr_number, canonical_prefix)
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
    entries, errors = _check_appended(appended, first_line, history, pr_number, canonical_prefix)
    if errors:
        return ChangelogResult(errors=tuple(sorted(errors, key=lambda e: e.line)))
    return ChangelogResult(entries=tuple(entries))


def validate_default_branch(text: str | bytes, *, canonical_prefix: str) -> list[ChangelogError]:
    """The merge-time rule: on the default branch every `pr-link` is the canonical prefix + digits."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = text.count(b"\n", 0, exc.start) + 1
            return [_character_error("not-utf8", [line])]
    loader = Loader(text)
    try:
        node = loader.get_single_node()
    except yaml.YAMLError as exc:
        return [_yaml_error(exc, 1, 1)]
    finally:
        loader.dispose()
    if node is None:
        return []
    if not isinstance(node, yaml.SequenceNode):
        return [_err(1, "not-a-list", "the changelog is not a YAML list of entries",
                     "make the file a list: each entry starts with `- ` in the first column", actual=node.id)]
    pattern = re.compile(re.escape(canonical_prefix) + r"\d+")
    errors: list[ChangelogError] = []
    expected = f"{canonical_prefix}<number>"
    for item in node.value:
        line = item.start_mark.line + 1
        if not isinstance(item, yaml.MappingNode):
            errors.append(_err(line, "not-a-mapping", f"the entry at line {line} is not a mapping of fields",
                               "write the entry as a mapping with `config-keys`, `description` and `pr-link`",
                               actual=item.id, value=None))
            continue
        links = [(k, v) for k, v in item.value if isinstance(k, yaml.ScalarNode) and k.value == "pr-link"]
        if not links:
            errors.append(_err(line, "missing-field", f"the entry at line {line} has no `pr-link`",
                               f"add `pr-link: {expected}`", field="pr-link"))
        for key_node, value_node in links:
            key_line = key_node.start_mark.line + 1
            value = value_node.value if isinstance(value_node, yaml.ScalarNode) else None
            if value_node.tag != "tag:yaml.org,2002:str" or not isinstance(value, str) \
                    or not pattern.fullmatch(value):
                shown = value if isinstance(value, str) else value_node.id
                errors.append(_err(
                    key_line, "default-branch-link",
                    f"pr-link {_code(shown)} on the default branch is not {_code(expected)}",
                    f"replace it with the link of the PR that added the entry, {_code(expected)}",
                    value=shown, expected=expected))
    return errors
