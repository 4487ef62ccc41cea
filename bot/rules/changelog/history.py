"""The history a PR must keep: the base stays a byte-exact prefix of the head, except that a PR appending
nothing may correct `pr-link` values of existing entries."""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.events import CollectionEndEvent, MappingStartEvent, ScalarEvent, SequenceStartEvent

from bot.rules.changelog import loading
from bot.rules.changelog.errors import _SHOWN_LINES, ChangelogError, _err, _history_error
from bot.rules.changelog.fields import PLACEHOLDER
from bot.rules.changelog.results import ChangelogResult, LinkCorrection
from bot.rules.changelog.state import _Check


def _common_prefix(a: str, ai: int, b: str, bi: int) -> int:
    """Length of the common prefix of a[ai:] and b[bi:], by halving slice comparisons (linear, in C)."""
    low, high = 0, min(len(a) - ai, len(b) - bi)
    while low < high:
        mid = (low + high + 1) // 2
        if a[ai + low : ai + mid] == b[bi + low : bi + mid]:
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
    loader = loading.Loader(base)
    starts = _line_starts(base)
    regions: list[tuple[int, int]] = []
    depth = 0  # open collections
    item: list[Any] | None = None  # the item mapping: [block style, its key comes next, the `pr-link` key]
    try:
        if not loader.check_event(yaml.StreamStartEvent):
            return []
        while loader.check_event():
            event = loader.get_event()
            if isinstance(
                event, (yaml.StreamStartEvent, yaml.StreamEndEvent, yaml.DocumentStartEvent, yaml.DocumentEndEvent)
            ):
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
            if (
                key is None
                or not item[0]
                or not isinstance(event, ScalarEvent)
                or event.style not in (None, "", "'", '"')
                or event.end_mark is None
            ):
                continue
            key_end = starts[key.end_mark.line] + key.end_mark.column
            colon = base.find(":", key_end)
            value_end = starts[event.end_mark.line] + event.end_mark.column
            end = base.find("\n", value_end)
            end = len(base) if end == -1 else end
            if (
                colon == -1
                or base[key_end:colon].strip(" ")
                or colon > value_end
                or (regions and colon < regions[-1][1])
            ):
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
        later_in_head = expected in head_lines[hi + 1 :]
        later_in_base = found in base_lines[bi + 1 :]
        change = {(False, True): "removed", (True, False): "inserted", (True, True): "moved"}.get(
            (later_in_head, later_in_base), "changed"
        )
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
        r"(?P=q)"
    )
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
            text = head[head.rfind("\n", 0, head_pos) + 1 : head_pos] + new
            forms = [f"{prefix}<number>", PLACEHOLDER, prefix + PLACEHOLDER]
            next_line = "\n" in new or not new.strip()  # the changed value is on the line below `pr-link:`
            sink.add(
                _err(
                    line,
                    "link-correction-not-accepted",
                    value=" ".join(new.split()),
                    old=" ".join(old.split()),
                    text=text,
                    reason="value-on-next-line" if next_line else "not-accepted",
                    expected=forms,
                )
            )
        head_pos = stop
    if head_pos < len(head):
        # Every link matched and the rest of the history too, but the head goes on: an append as well.
        appended_line = newlines + head.count("\n", counted, head_pos) + 1
        first = corrections[0].line if corrections else (rejected[0] if rejected else appended_line)
        sink.add(
            _err(
                first,
                "correction-with-append",
                corrected_lines=([c.line for c in corrections] + rejected)[:_SHOWN_LINES],
                corrected_count=len(corrections) + len(rejected),
                appended_line=appended_line,
            )
        )
    return sink.result(link_corrections=tuple(corrections))
