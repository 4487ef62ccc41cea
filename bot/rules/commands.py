"""Slash-command grammar: find, interpret and compare the commands written in a comment body."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from bot.rules.markdown import MAX_INDENT, visible_lines

# What a command's argument may be.
RUN_ID_REQUIRED = "required"  # exactly one run id
RUN_ID_OPTIONAL = "optional"  # one run id or none
NO_ARGUMENTS = "none"  # takes nothing; words after the name are ignored
# Who may run a command (docs/spec.md, "Commands": write, maintain or admin permission for maintainers).
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
    CommandSpec("merge", "merge", NO_ARGUMENTS, MAINTAINERS, "merge"),
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

MAX_RUN_ID = 2**63 - 1  # GitHub ids are signed 64-bit
USAGE_ANSWER = "help"  # the kind that answers a command written with wrong arguments (anyone may get it)


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
    if not body or "/" not in body:
        return []
    return [
        command
        for number, line in visible_lines(body)
        if "/" in line and (command := _command_on(line, number, wanted)) is not None
    ]


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


def is_new_command(old: Command | None, new: Command | None) -> bool:
    """Whether an edit adds or changes the effective command: `new` (parsed from the body after it) is another
    command than `old` (from the body before): another kind, run id or problem. Moving the same command to
    another line changes nothing."""
    return new is not None and not same_command(old, new)


def same_command(old: Command | None, new: Command | None) -> bool:
    if old is None or new is None:
        return old is new
    return (old.kind, old.run_id, old.problem) == (new.kind, new.run_id, new.problem)


def answering_kind(command: Command) -> str:
    """The kind whose function answers `command`: its own, or help's (a usage reply) when its arguments are wrong."""
    return USAGE_ANSWER if command.problem is not None else command.kind


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
            errors.append(
                f"commands.{kind}: {name!r} is not a command word: a lower-case ASCII letter, "
                "then lower-case ASCII letters, digits or dashes"
            )
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


def _command_on(line: str, number: int, wanted: set[str]) -> CommandLine | None:
    rest = line.lstrip()
    lead = line[: len(line) - len(rest)]
    if "\t" in lead or len(lead) > MAX_INDENT or not rest.startswith("/"):
        return None  # indented code, or not a command (quotes and inline code start otherwise)
    head = rest[1:]
    if not head or head[0].isspace():
        return None
    name, *args = head.split()
    if not name.isascii() or name.lower() not in wanted:
        return None
    return CommandLine(name.lower(), tuple(args), number, rest.strip())
