"""CODEOWNERS (docs/spec.md, "Sign-offs"): parse GitHub's CODEOWNERS file and say which rule owns a path and
which files a login owns."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple

# Owners GitHub accepts: `@user`, `@org/team`, or an email address. Anything else makes the line a problem.
USER_RE = re.compile(r"@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?")
TEAM_RE = re.compile(r"@[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
EMAIL_RE = re.compile(r"[^@\s]+@[^@\s/]+\.[^@\s/]+")

# A `#` that starts a token (line start, or after whitespace) starts a comment; `\#` and `\ ` are literal.
COMMENT = "#"
ESCAPE = "\\"
_TOKEN = re.compile(r"(?:\\.|[^\s\\])++|\\$")  # possessive: no backtracking state per character

# gitignore features GitHub's CODEOWNERS does not support. `!` (negation) makes the line a problem; `[` and `]`
# are matched literally (no character classes). `?` is one character other than `/`.
NEGATION = "!"

# A path segment of wildcards, translated to a regular expression (paths are case-sensitive, as on GitHub).
STAR = "[^/]*"
QMARK = "[^/]"


class Rule(NamedTuple):
    line: int  # 1-based line number in the file
    pattern: str  # as written, escapes included
    owners: tuple[str, ...]  # empty: the rule un-owns what it matches


class Problem(NamedTuple):
    line: int
    reason: str


class Match(NamedTuple):
    rule: Rule


@dataclass(frozen=True)
class CodeOwners:
    rules: tuple[Rule, ...]
    problems: tuple[Problem, ...]
    # Each rule's expression, compiled the first time a path reaches it and kept with the file (a shared cache of
    # a fixed size would compile every rule again, for every path, once a file has more rules than it holds).
    _compiled: dict[int, re.Pattern[str]] = field(default_factory=dict, compare=False, repr=False)

    def owners_of(self, path: str) -> Match | None:
        """The last rule matching `path` (repository-relative, `/`-separated), or None when no rule matches."""
        path = path.lstrip("/")
        for index in range(len(self.rules) - 1, -1, -1):
            regex = self._compiled.get(index)
            if regex is None:
                regex = self._compiled[index] = _regex(self.rules[index].pattern)
            if regex.match(path):
                return Match(self.rules[index])
        return None


def parse(text: str) -> CodeOwners:
    """Rules in file order; malformed lines are skipped (as GitHub skips them) and collected as problems."""
    rules: list[Rule] = []
    problems: list[Problem] = []
    for number, line in enumerate(text.splitlines(), start=1):
        tokens, error = _tokens(line)
        if error:
            problems.append(Problem(number, error))
            continue
        if not tokens:
            continue
        pattern, owners = tokens[0], tuple(tokens[1:])
        reason = _pattern_problem(pattern) or next(
            (f"invalid owner {owner!r}" for owner in owners if not _valid_owner(owner)), None
        )
        if reason:
            problems.append(Problem(number, reason))
        else:
            rules.append(Rule(number, pattern, owners))
    return CodeOwners(tuple(rules), tuple(problems))


def owned_files(
    codeowners: CodeOwners, files: Iterable[str], login: str, teams_of: Mapping[str, set[str]]
) -> list[tuple[str, Rule]]:
    """The files whose winning rule names `@login` or a team of it (case-insensitive); emails never match a login."""
    mine = handles(login, teams_of.get(login, teams_of.get(login.lower(), set())))
    owned = []
    for path in files:
        match = codeowners.owners_of(path)
        if match and any(owner.lower() in mine for owner in match.rule.owners):
            owned.append((path, match.rule))
    return owned


def handles(login: str, teams: Iterable[str]) -> set[str]:
    """The owners, as CODEOWNERS writes them and lower-cased, that stand for `login`: `@login` and `@org/team` for
    each of its `teams` (`org/team`)."""
    return {"@" + login.lower()} | {"@" + team.lower() for team in teams}


def is_handle(owner: str) -> bool:
    """`@user` or `@org/team`: an owner that names a GitHub account (an email address names none)."""
    return any(regex.fullmatch(owner) for regex in (USER_RE, TEAM_RE))


def _tokens(line: str) -> tuple[list[str], str | None]:
    """Whitespace-separated tokens up to an unescaped comment, escapes kept; or an error. One regex pass: a token
    is a run of escaped characters and of characters that are neither space nor backslash."""
    tokens: list[str] = []
    for match in _TOKEN.finditer(line):
        token = match.group()
        if token == ESCAPE:
            return [], "trailing backslash"
        if token.startswith(COMMENT):
            break
        tokens.append(token)
    return tokens, None


def _pattern_problem(pattern: str) -> str | None:
    if pattern.startswith(NEGATION):
        return "negation (!) is not supported in CODEOWNERS"
    if not pattern.strip("/"):
        return "empty pattern"
    return None


def _valid_owner(owner: str) -> bool:
    return any(regex.fullmatch(owner) for regex in (USER_RE, TEAM_RE, EMAIL_RE))


@lru_cache(maxsize=1024)
def _regex(pattern: str) -> re.Pattern[str]:
    """A pattern as a regular expression over a whole path (see the module constants for the semantics)."""
    directory = pattern.endswith("/") and not pattern.endswith("\\/")
    body = pattern.rstrip("/") if directory else pattern
    anchored = "/" in body  # at the start or in the middle: relative to the repository root
    body = body.lstrip("/")
    segments = body.split("/")
    # `**/**` means what `**` means; written out it nests `(?:.*/)?` groups whose backtracking grows
    # exponentially with their number
    segments = [seg for i, seg in enumerate(segments) if not (seg == "**" and i and segments[i - 1] == "**")]
    parts = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            # `a/**/b`: zero or more directories; trailing `a/**`: everything under a; leading `**/b`: b anywhere.
            parts.append(".*" if last else "(?:.*/)?")
        else:
            parts.append(_segment(segment) + ("" if last else "/"))
    prefix = "" if anchored else "(?:.*/)?"
    if directory:
        suffix = "/.*"  # a directory: everything under it
    elif segments[-1] in ("*", "**"):
        suffix = ""  # `/docs/*`: direct children only (GitHub, unlike gitignore, does not recurse)
    else:
        suffix = "(?:/.*)?"  # the path itself, or a directory of that name and everything under it
    return re.compile(prefix + "".join(parts) + suffix + r"\Z")


def _segment(segment: str) -> str:
    out = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == ESCAPE and i + 1 < len(segment):
            out.append(re.escape(segment[i + 1]))
            i += 2
            continue
        out.append(STAR if char == "*" else QMARK if char == "?" else re.escape(char))
        i += 1
    return "".join(out)
