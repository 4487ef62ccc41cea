"""Slash-command grammar: find, interpret and compare the commands written in a comment body."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

# What a command's argument may be.
RUN_ID_REQUIRED = "required"  # exactly one run id
RUN_ID_OPTIONAL = "optional"  # one run id or none
NO_ARGUMENTS = "none"  # takes nothing; words after the name are ignored
# Who may run a command (SPEC.md section 4: write, maintain or admin permission for maintainers).
MAINTAINERS = "maintainers"
ANYONE = "anyone"


@dataclass(frozen=True)
class CommandSpec:
    kind: str  # what the command does; the key under `commands:` in the policy
    default_name: str  # its name in app.yaml, without the slash
    run_id: str  # RUN_ID_REQUIRED, RUN_ID_OPTIONAL or NO_ARGUMENTS
    who: str  # MAINTAINERS or ANYONE
    help: str  # the key of its help text in templates/help.*.md.j2


# The one table of commands. It feeds the grammar (KINDS, interpret), the policy
# check (command_name_errors) and the /help reply, which lists them in this order.
# A new command is one entry here plus its help text in both help templates.
COMMANDS: tuple[CommandSpec, ...] = (
    CommandSpec("use", "use", RUN_ID_REQUIRED, MAINTAINERS, "use"),
    CommandSpec("reuse", "reuse-sweep-run", RUN_ID_OPTIONAL, MAINTAINERS, "reuse"),
    CommandSpec("stage", "stage-results", RUN_ID_OPTIONAL, MAINTAINERS, "stage"),
    CommandSpec("help", "help", NO_ARGUMENTS, ANYONE, "help"),
)
SPECS: dict[str, CommandSpec] = {spec.kind: spec for spec in COMMANDS}
KINDS = tuple(SPECS)
DEFAULT_NAMES: dict[str, str] = {spec.kind: spec.default_name for spec in COMMANDS}
# A configured name: a lower-case ASCII letter, then lower-case ASCII letters, digits or dashes.
COMMAND_WORD = re.compile(r"[a-z][a-z0-9-]*")

NEEDS_RUN_ID = "use-needs-run-id"
NOT_NUMERIC = "run-id-not-numeric"
OUT_OF_RANGE = "run-id-out-of-range"
TOO_MANY = "too-many-arguments"
USAGE_PROBLEMS: frozenset[str] = frozenset({NEEDS_RUN_ID, NOT_NUMERIC, OUT_OF_RANGE, TOO_MANY})

MAX_INDENT = 3  # more leading spaces than this (or any tab) is indented code
MAX_RUN_ID = 2**63 - 1  # GitHub ids are signed 64-bit
COMMENT_OPEN, COMMENT_CLOSE = "<!--", "-->"
# Invisible characters that render as nothing; deleted so the text reads as it looks.
INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u2060\ufeff"))

_FENCE = re.compile(r"(`{3,}|~{3,})(.*)")
_BACKTICKS = re.compile(r"`+")
_LIST_MARKER = re.compile(r"(?:[-*+]|\d{1,9}[.)])(?=\s)")


@dataclass(frozen=True)
class CommandLine:
    name: str  # canonical lower-case name, without the slash, e.g. "use"
    args: tuple[str, ...]  # whitespace-separated words after the name
    line: int  # 1-based line number in the original body
    text: str  # the line (HTML comments and invisible characters removed), stripped


@dataclass(frozen=True)
class Command:
    kind: str  # one of KINDS
    run_id: int | None  # the pinned/staged run id, if any
    problem: str | None  # None when the arguments are valid, else one of USAGE_PROBLEMS
    source: CommandLine


def find_commands(body: str | None, names: Iterable[str]) -> list[CommandLine]:
    """Every line of `body` that is a command with one of `names`, in order."""
    wanted = {_normalise(name) for name in names}
    return [command for number, line in _visible_lines(body)
            if (command := _command_on(line, number, wanted)) is not None]


def last_command(body: str | None, names: Iterable[str]) -> CommandLine | None:
    """The last command line of `body`: when one comment holds several, the last one wins."""
    commands = find_commands(body, names)
    return commands[-1] if commands else None


def interpret(line: CommandLine, names: Mapping[str, str]) -> Command:
    """Check the arguments of `line` against the grammar of its kind (`names`: kind -> configured name)."""
    kind = _kinds_by_name(names).get(line.name)
    if kind is None:
        raise ValueError(f"/{line.name} is not one of the configured commands")
    rule = SPECS[kind].run_id
    if rule == NO_ARGUMENTS:
        return Command(kind, None, None, line)
    if len(line.args) > 1:
        return Command(kind, None, TOO_MANY, line)
    if not line.args:
        return Command(kind, None, NEEDS_RUN_ID if rule == RUN_ID_REQUIRED else None, line)
    run_id, problem = _run_id(line.args[0])
    return Command(kind, run_id, problem, line)


def parse(body: str | None, names: Mapping[str, str]) -> Command | None:
    """The effective command of `body`, or None when it holds none."""
    line = last_command(body, names.values())
    return None if line is None else interpret(line, names)


def edit_is_new_command(old_body: str | None, new_body: str | None, names: Mapping[str, str]) -> bool:
    """Whether an edit from `old_body` to `new_body` adds or changes the effective command."""
    new = parse(new_body, names)
    if new is None:
        return False
    old = parse(old_body, names)
    return old is None or (old.kind, old.run_id, old.problem) != (new.kind, new.run_id, new.problem)


def command_name_errors(names: Mapping[str, object]) -> list[str]:
    """Every problem with the `commands:` mapping of a policy (kind -> name), each naming its key."""
    errors: list[str] = []
    for kind in KINDS:
        if kind not in names:
            errors.append(f"commands.{kind}: missing: every command needs a name")
    owner: dict[str, str] = {}
    for kind, name in names.items():
        if kind not in SPECS:
            errors.append(f"commands.{kind}: unknown command; the commands are {', '.join(KINDS)}")
        elif not isinstance(name, str) or not COMMAND_WORD.fullmatch(name):
            errors.append(f"commands.{kind}: {name!r} is not a command word: a lower-case ASCII letter, "
                          "then lower-case ASCII letters, digits or dashes")
        elif name in owner:
            errors.append(f"commands.{kind}: {name!r} is also the name of commands.{owner[name]}")
        else:
            owner[name] = kind
    return errors


def _normalise(name: str) -> str:
    clean = name.strip().removeprefix("/").lower()
    if not COMMAND_WORD.fullmatch(clean):
        raise ValueError(f"invalid command name {name!r}")
    return clean


def _kinds_by_name(names: Mapping[str, str]) -> dict[str, str]:
    kinds: dict[str, str] = {}
    for kind, name in names.items():
        if kind not in SPECS:
            raise ValueError(f"unknown command kind {kind!r}")
        clean = _normalise(name)
        if clean in kinds:
            raise ValueError(f"/{clean} is configured for both {kinds[clean]!r} and {kind!r}")
        kinds[clean] = kind
    return kinds


def _run_id(arg: str) -> tuple[int | None, str | None]:
    if not (arg.isascii() and arg.isdigit()):
        return None, NOT_NUMERIC
    digits = arg.lstrip("0")
    # The length check comes first: int() refuses very long digit strings.
    if not digits or len(digits) > len(str(MAX_RUN_ID)) or int(digits) > MAX_RUN_ID:
        return None, OUT_OF_RANGE
    return int(digits), None


def _visible_lines(body: str | None) -> Iterator[tuple[int, str]]:
    """(1-based line number, text) of every line outside code blocks, with its HTML comments removed.

    An HTML comment counts only outside code: a `<!--` inside a fenced block, in
    a fence's info string or in an inline code span is text. An unclosed
    comment hides the rest of the body. What follows a multi-line comment
    continues the line the comment opened on, with that line's number
    (`/use 1 <!--\\n-->2` reads `/use 1 2`, line 1).
    """
    if not body:
        return
    text = body.replace("\r\n", "\n").replace("\r", "\n").translate(INVISIBLE)
    fence: tuple[str, int, int] | None = None
    opened: tuple[int, str] | None = None  # (line number, visible text before it) of a comment still open
    for number, raw in enumerate(text.split("\n"), start=1):
        if fence is not None:
            if _closes_fence(raw, *fence):
                fence = None
            continue
        if opened is not None:
            close = raw.find(COMMENT_CLOSE)
            if close == -1:
                continue
            (number, before), opened = opened, None
            raw = before + raw[close + len(COMMENT_CLOSE):]
        fence = _opens_fence(raw)  # before comments are looked for: its info string is text
        if fence is not None:
            continue
        line, still_open = _strip_comments(raw)
        if still_open:
            opened = (number, line)
            continue
        fence = _opens_fence(line)  # a fence after a comment on its line (`<!-- x -->```) still opens
        if fence is None:
            yield number, line
    if opened is not None and _opens_fence(opened[1]) is None:
        yield opened  # the text before an unclosed comment


def _strip_comments(line: str) -> tuple[str, bool]:
    """`line` without its HTML comments, and whether the last one is still open at its end.

    Read left to right as CommonMark does: an inline code span (a run of
    backticks up to the next run of the same length) is text whatever it holds,
    and so are a `\\<!--` and a `\\``. Linear in the line's length.
    """
    if COMMENT_OPEN not in line:
        return line, False
    runs: dict[int, list[int]] = {}  # backtick run length -> where such runs start, in order
    for match in _BACKTICKS.finditer(line):
        runs.setdefault(match.end() - match.start(), []).append(match.start())
    out: list[str] = []
    pos, start = 0, line.find(COMMENT_OPEN)
    while start != -1:
        tick = _unescaped(line, "`", pos, start)
        if tick != -1:
            run = _BACKTICKS.match(line, tick).end() - tick
            same = runs.get(run, [])
            after = bisect.bisect_left(same, tick + run)
            end = same[after] + run if after < len(same) else tick + run  # no closer: the backticks are literal
            out.append(line[pos:end])
            pos = end
        elif _escaped(line, start):
            out.append(line[pos:start + 1])
            pos = start + 1
        else:
            out.append(line[pos:start])
            close = line.find(COMMENT_CLOSE, start + len(COMMENT_OPEN))
            if close == -1:
                return "".join(out), True
            pos = close + len(COMMENT_CLOSE)
        if start < pos:
            start = line.find(COMMENT_OPEN, pos)
    out.append(line[pos:])
    return "".join(out), False


def _unescaped(line: str, char: str, start: int, end: int) -> int:
    """The first `char` in line[start:end] that no backslash escapes, or -1."""
    while (found := line.find(char, start, end)) != -1:
        if not _escaped(line, found):
            return found
        start = found + 1
    return -1


def _escaped(line: str, index: int) -> bool:
    """Whether an odd run of backslashes stands right before line[index]."""
    before = index
    while before > 0 and line[before - 1] == "\\":
        before -= 1
    return (index - before) % 2 == 1


def _split_indent(line: str) -> tuple[str, str]:
    rest = line.lstrip()
    return line[: len(line) - len(rest)], rest


def _width(lead: str) -> int:
    return len(lead.expandtabs(4))


def _opens_fence(line: str) -> tuple[str, int, int] | None:
    """(fence char, fence length, deepest indent of its closing fence) when `line` opens a code fence.

    Conservative: a fence also opens after list markers or deeper than three
    spaces, so code inside list items stays code.
    """
    lead, rest = _split_indent(line)
    column, listed = _width(lead), False
    while (marker := _LIST_MARKER.match(rest)) is not None:
        after = rest[marker.end():]
        rest = after.lstrip()
        column += marker.end() + len(after) - len(rest)
        listed = True
    match = _FENCE.match(rest)
    if match is None:
        return None
    fence, info = match.groups()
    if fence[0] == "`" and "`" in info:
        return None  # ```x``` is inline code, not a fence
    deepest = MAX_INDENT if not listed and column <= MAX_INDENT else column + MAX_INDENT
    return fence[0], len(fence), deepest


def _closes_fence(line: str, char: str, length: int, deepest: int) -> bool:
    lead, rest = _split_indent(line)
    run = len(rest) - len(rest.lstrip(char))
    return _width(lead) <= deepest and run >= length and not rest[run:].strip()


def _command_on(line: str, number: int, wanted: set[str]) -> CommandLine | None:
    lead, rest = _split_indent(line)
    if "\t" in lead or len(lead) > MAX_INDENT or not rest.startswith("/"):
        return None  # indented code, or not a command (quotes and inline code start otherwise)
    head = rest[1:]
    if not head or head[0].isspace():
        return None
    name, *args = head.split()
    if not name.isascii() or name.lower() not in wanted:
        return None
    return CommandLine(name.lower(), tuple(args), number, rest.strip())
