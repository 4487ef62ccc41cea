"""The merge-time rule of docs/spec.md, "The performance changelog": on the default branch every `pr-link` is
the canonical prefix and a PR number. Read from the YAML events, nothing composed."""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.events import AliasEvent, CollectionEndEvent, MappingStartEvent, ScalarEvent, SequenceStartEvent
from yaml.nodes import ScalarNode

from bot.rules.changelog import loading
from bot.rules.changelog.errors import (
    ChangelogError,
    _character_error,
    _err,
    _file_too_large,
    _too_complex,
    _too_deep,
    _too_many_values,
    _yaml_error,
)
from bot.rules.changelog.limits import DEFAULT_LIMITS, ChangelogLimits
from bot.rules.changelog.loading import _STR_TAG
from bot.rules.changelog.reading import _flow_overflow
from bot.rules.changelog.results import ChangelogResult
from bot.rules.changelog.state import _Check


def validate_default_branch(
    text: str | bytes, *, canonical_prefix: str, limits: ChangelogLimits = DEFAULT_LIMITS
) -> list[ChangelogError]:
    """The merge-time rule: on the default branch every `pr-link` is the canonical prefix + digits.
    The first `limits.max_errors` errors by line; `check_default_branch` also counts the rest."""
    return list(check_default_branch(text, canonical_prefix=canonical_prefix, limits=limits).errors)


def check_default_branch(
    text: str | bytes, *, canonical_prefix: str, limits: ChangelogLimits = DEFAULT_LIMITS
) -> ChangelogResult:
    """`validate_default_branch` as a result: its errors (the first `max_errors` by line) and their count."""
    check = _Check(0, canonical_prefix, limits)
    try:
        return _default_branch(text, check)
    except (RecursionError, MemoryError) as exc:
        return ChangelogResult(errors=(_too_complex(check.line, exc),), error_count=1, error_count_is_lower_bound=True)


def _default_branch(text: str | bytes, check: _Check) -> ChangelogResult:
    limits, sink = check.limits, check.sink
    size = len(text) if isinstance(text, bytes) or text.isascii() else len(text.encode("utf-8", "replace"))
    if size > limits.max_bytes:
        data = text if isinstance(text, bytes) else text.encode("utf-8", "replace")
        return ChangelogResult(
            errors=(_file_too_large(size, limits.max_bytes, data.count(b"\n", 0, limits.max_bytes) + 1),)
        )
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = exc.object.count(b"\n", 0, exc.start) + 1
            return ChangelogResult(errors=(_character_error("not-utf8", [line]),))
    pattern = re.compile(re.escape(check.prefix) + r"\d+")
    expected = f"{check.prefix}<number>"
    loader = loading.Loader(text)
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
            line, end = event.start_mark.line + 1, event.end_mark.index
            if not root_seen:
                root_seen = True
                if kind is not SequenceStartEvent:
                    return ChangelogResult(
                        errors=(_err(1, "not-a-list", actual={MappingStartEvent: "mapping"}.get(kind, "scalar")),)
                    )
                stack.append(["sequence", line, [], None, None])
                last = end
                continue
            if isinstance(event, CollectionEndEvent):
                frame = stack.pop()
                summary = (frame[0], frame[1], frame[2] if frame[0] == "mapping" else None)
                if frame[4] is not None:
                    anchors[frame[4]] = summary
                if stack:
                    finish(summary)
                last = end
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
            last = end
    except yaml.YAMLError as exc:
        if "nesting depth" in str(getattr(exc, "problem", "")):
            row = _flow_overflow(text, last, len(stack) + 1, limits.max_depth)
            if row is not None:
                return ChangelogResult(errors=(_too_deep(row + 1, limits.max_depth),))
        return ChangelogResult(errors=(_yaml_error(exc, 1, 1),))
    finally:
        loader.dispose()
    return sink.result()
