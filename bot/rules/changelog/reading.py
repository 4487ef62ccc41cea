"""Reading the appended entries: each on its own, a batch of them at a time, within `max_depth` and
`max_values`, without recursion before anything recursive sees them."""

from __future__ import annotations

import re
from collections.abc import Generator, Iterator
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.error import Mark
from yaml.events import AliasEvent, CollectionEndEvent, MappingStartEvent, ScalarEvent, SequenceStartEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from bot.rules.changelog import loading
from bot.rules.changelog.errors import ChangelogError, _err, _too_deep, _too_many_values, _yaml_error
from bot.rules.changelog.loading import _MERGE_TAG, _STR_TAG
from bot.rules.changelog.state import _Check

_DOCUMENT_MARKER_LINE = re.compile(r"^(?:(?:---|\.\.\.)(?:[ \t].*)?|%.*)$", re.M)  # the whole line
# Where an anchor `&a` or an alias `*a` can begin (a token starts after a line start, a space or a flow
# indicator; `:` for JSON-like `"k":*a`). No match in an entry's text: it has neither, and is composed by the
# fast path; a match (also inside a quoted string) only sends the entry the slower, exact way.
_ANCHOR_OR_ALIAS = re.compile(r"(?:^|[\s\[\]{},:\ufeff])[*&]", re.M)
_BATCH_CHARS = 32 * 1024  # entries composed together: bounds the nodes in memory at once


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
                    if char == "'" and text[close + 1 : close + 2] == "'":
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
        self.libyaml = hasattr(yaml, "CParser") and issubclass(loading.Loader, yaml.CParser)

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
        indicators = sum(
            count(s, a, b)
            for s in ("[", "{", ": ", ":\n", ":\t", '":', "':", "]:", "}:", "- ", "-\n", "-\t", "? ", "?\n", "?\t")
        )
        return 3 + indicators > self.check.limits.max_depth

    def __iter__(
        self,
    ) -> Iterator[tuple[int, Node | None, str, int, range | None, tuple[Any, ...], list[ChangelogError]]]:
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
        loader = loading.Loader(source)
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
                yield (
                    k + index,
                    None,
                    source,
                    first,
                    None,
                    (),
                    [_too_deep(first + deep.start_mark.line, limits.max_depth)],
                )
            else:
                yield k + index, item, source, first, None, (), []

    # -- composed here, from the events

    def events(self, k: int, j: int) -> Generator[Any, None, None]:
        while k < j:
            k = yield from self.event_run(k, j)

    def event_run(self, k: int, j: int) -> Generator[Any, None, int]:
        """Entries k..j-1 composed from one run of events; returns where the next run starts (j when done).
        An entry that fails ends the run: it is read again alone if its error lies past its own lines."""
        check, limits = self.check, self.check.limits
        text = self.source(k, j)
        base = self.starts[k]
        offset = self.first_line + base
        loader = loading.Loader(text)
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
                raise ComposerError(
                    f"found duplicate anchor {name!r}; first occurrence",
                    local[name].start_mark,
                    "second occurrence",
                    mark,
                )
            if name in check.anchors:
                first = check.anchors[name][0]
                extra.append(
                    _err(
                        line,
                        "yaml-syntax",
                        problem=f"found duplicate anchor {name!r} (first at line {first})",
                        context="each anchor name is used once in the file",
                        needs_quotes=True,
                    )
                )
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
                if (
                    kind is ScalarEvent
                    or kind is AliasEvent
                    or isinstance(event, (SequenceStartEvent, MappingStartEvent))
                ):
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
                    merged = bool(stack) and (
                        stack[-1][3]
                        or (
                            len(stack) == 1
                            and stack[0][1]
                            and stack[0][2] is not None
                            and stack[0][2].tag == _MERGE_TAG
                        )
                    )
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
                            mark = Mark("<alias>", 0, anchor_line - offset, column, None, 0)
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
            where = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
            row = base + where.line if where is not None else base
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
