"""One-click fixes: the changelog errors that have one obvious fix, as the lines that replace the lines at fault
(a GitHub `suggestion` block each). Every replacement is built from validated parts: the canonical link from
the policy and the PR's number, whitespace-only lines removed, or a line of the head kept exactly as it is, and
only when it holds no ``` (which would close the block) and no control character."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from bot.rules.changelog.errors import ChangelogError

MAX_SUGGESTIONS = 20  # per review: the first by line
_LINK_KEY = re.compile(r"(?P<lead>(?: *- +)* *)pr-link *:")  # `pr-link:` alone or after list dashes, spaces only
_SAFE_PREFIX = re.compile(r"https://[A-Za-z0-9.-]+(?::\d+)?/[A-Za-z0-9._~/-]*")
# pr-link-format problems whose fix is "the key, one space, the link, nothing after": a block scalar's value
# runs over more lines and has no one obvious replacement
_ONE_LINE_PROBLEMS = ("spacing-around-colon", "trailing-spaces", "text-after-link")


@dataclass(frozen=True)
class Suggestion:
    """Replace head lines `start_line`..`line` (1-based, inclusive) with `lines` (no line breaks; () deletes
    them). `code` is the error it fixes, reported on `error_line`."""

    start_line: int
    line: int
    lines: tuple[str, ...]
    code: str
    error_line: int


def safe_line(text: str) -> bool:
    """Whether a line of the file may be repeated inside a suggestion block as it is."""
    return "```" not in text and "~~~" not in text and text.isprintable()


def suggestions(
    errors: Iterable[ChangelogError],
    head: str | bytes,
    *,
    pr_number: int,
    canonical_prefix: str,
    limit: int = MAX_SUGGESTIONS,
) -> list[Suggestion]:
    """The fixes for those of `errors` (of the PR check, lines of `head`) that have one obvious fix: at most
    `limit`, by line, never two on overlapping lines."""
    text = head.decode("utf-8", "replace") if isinstance(head, bytes) else head
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the empty string after a final newline is not a line
    link = f"{canonical_prefix}{int(pr_number)}" if _SAFE_PREFIX.fullmatch(canonical_prefix) else None
    found: list[Suggestion] = []
    # on one line a link's fix comes before the missing newline's: it rewrites the line, and ends it too
    for error in sorted(errors, key=lambda e: (e.line, e.code == "trailing-newline")):
        made = _fix(error, lines, link)
        if made is None or (found and made.start_line <= found[-1].line):
            continue
        found.append(made)
        if len(found) >= limit:
            break
    return found


def _line(lines: list[str], number: int) -> str | None:
    return lines[number - 1] if 1 <= number <= len(lines) else None


def _blank(lines: list[str], first: int, last: int) -> bool:
    return 1 <= first <= last <= len(lines) and all(not lines[n - 1].strip(" ") for n in range(first, last + 1))


def _fix(error: ChangelogError, lines: list[str], link: str | None) -> Suggestion | None:
    code, at, params = error.code, error.line, error.params
    if code in ("pr-link-not-accepted", "pr-link-format", "pr-link-next-line"):
        if link is None or (code == "pr-link-format" and params.get("problem") not in _ONE_LINE_PROBLEMS):
            return None
        line = _line(lines, at) or ""
        key = _LINK_KEY.match(line)
        if key is None:
            return None  # a flow mapping (`{pr-link: ...}`) or a line the rule did not expect
        last = at
        rest, value = line[key.end() :].strip(" "), params.get("value")
        if code == "pr-link-not-accepted" and rest not in (value, f"'{value}'", f'"{value}"'):
            return None  # not the whole value on this line (a block scalar, a value running on): no one fix
        if code == "pr-link-next-line":
            if params.get("value_line") != at + 1 or rest or (_line(lines, at + 1) or "").strip(" ") != value:
                return None
            last = at + 1
        return Suggestion(at, last, (f"{key.group('lead')}pr-link: {link}",), code, at)
    if code == "trailing-newline" and params.get("problem") == "missing":
        text = _line(lines, at)
        if at != len(lines) or text is None or not safe_line(text):
            return None
        return Suggestion(at, at, (text,), code, at)  # the same line, now ended by a newline
    if code == "trailing-newline" and params.get("problem") == "extra-blank-lines":
        last = at + int(params.get("blank_lines") or 0) - 1
        return Suggestion(at, last, (), code, at) if _blank(lines, at, last) else None
    if code == "separator":
        found, expected = params.get("blank_lines"), params.get("expected")
        if not isinstance(found, int) or not isinstance(expected, int):
            return None
        if found > expected:  # the extra blank lines are the last before the entry (the history's come first)
            first = at - (found - expected)
            return Suggestion(first, at - 1, (), code, at) if _blank(lines, first, at - 1) else None
        if found == 0 and expected == 1:
            text = _line(lines, at)
            if text is None or not safe_line(text):
                return None
            return Suggestion(at, at, ("", text), code, at)  # a blank line, then the entry's first line as it is
    return None
