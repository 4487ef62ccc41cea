"""Changelog errors as data: a `ChangelogError` is a head-file line, a code and the params its template
(templates/_changelog_error.{en,zh}.j2) renders; the words are the templates'. Every error is built by `_err`
(which cuts long params) or by one of the builders here that more than one part of the check uses."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

_PARAM_CHARS = 240  # a string param is cut to this (the templates show 120 characters of it)
_SHOWN_LINES = 10  # a character rule's `lines` param: the first ten (the templates show ten)


@dataclass(frozen=True)
class ChangelogError:
    """One thing wrong, on one line of the head file: its `code` and the `params` its template renders."""

    line: int
    code: str
    params: dict[str, Any] = field(default_factory=dict)


def _show(value: Any) -> str:
    """A value from the file as a param shows it: a string as it is, anything else in YAML flow style, clipped."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    # In the order written (not sorted), so that the clipped copy reads as the start of the whole value.
    return (
        yaml.safe_dump(_clip(value, [64], 0), default_flow_style=True, width=10**6, sort_keys=False)
        .strip()
        .removesuffix("...")
        .strip()
    )


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
        return set(list(value)[: max(budget[0], 0)])
    if isinstance(value, tuple):
        return tuple(_clip(item, budget, depth + 1) for item in value[: max(budget[0], 0)])
    if isinstance(value, bytes):
        return value[:130]
    return value


def _param(value: Any) -> Any:
    """A param as kept: a string from the file is cut to _PARAM_CHARS (the templates show 120 of them), so that
    a cached result holds what is shown, not a 2 MB line."""
    if isinstance(value, str) and len(value) > _PARAM_CHARS:
        return value[: _PARAM_CHARS - 3] + "..."
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


def _history_error(
    line: int,
    base_line: int,
    change: str,
    expected: str | None,
    found: str | None,
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


def _too_complex(line: int, exc: BaseException) -> ChangelogError:
    """The check ran out of memory or of Python's recursion near `line`."""
    return _err(line, "too-complex", cause="memory" if isinstance(exc, MemoryError) else "recursion")


def _yaml_error(exc: yaml.YAMLError, first_line: int, floor: int) -> ChangelogError:
    """A syntax error at its line (`first_line` is the head line of the parsed text's line 0)."""
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    # Where a scanned token began (an unclosed quote) names the cause; a parser's context is only the
    # enclosing collection, and there the token it stumbled on is the better line.
    mark = getattr(exc, "problem_mark", None)
    context_mark = getattr(exc, "context_mark", None)
    if context_mark is not None and (mark is None or str(context).startswith("while scanning")):
        mark = context_mark
    line = max(first_line + mark.line, floor) if mark is not None else floor
    # `- *-mtp`: a config-keys wildcard at the start of a value reads as a YAML alias; the fix is quotes
    needs_quotes = "alias" in problem or "anchor" in problem or "tag" in problem
    return _err(line, "yaml-syntax", problem=problem, context=context, needs_quotes=needs_quotes)
