"""What of a Markdown comment a reader sees as prose: its lines outside code, quotes and HTML comments (linear)."""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Iterator

MAX_INDENT = 3  # more leading columns than this (or any tab) start indented code, outside a paragraph
TAB_WIDTH = 4
COMMENT_OPEN, COMMENT_CLOSE = "<!--", "-->"
# Invisible characters that render as nothing; deleted so the text reads as it looks.
INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u2060\ufeff"))
# What `prose` writes for code and for a hidden block between visible lines: no phrase runs across it.
BREAK = "\x00"
# How a visible line follows the visible line before it.
CONTINUES, NEW, AFTER_HIDDEN = 0, 1, 2
# First characters of a line that may start a block. A line starting otherwise, with no `<`, is plain text.
BLOCK_STARTS = frozenset("`~>#<-*+_=0123456789")
BULLETS = frozenset(("- ", "* ", "+ "))  # how an unindented bullet list item starts
FENCE_STARTS = frozenset("`~-*+0123456789")  # a fence, or the list markers before one
ITEM_STARTS = frozenset("-*+0123456789")  # a list marker
INTERRUPTS = frozenset("#<-*_+0123456789")  # besides `>`: a heading, an HTML block, a thematic break, a list item
# CommonMark's HTML block start condition 6: these tags (opening or closing) start a block that interrupts a paragraph.
HTML_BLOCK_TAGS = frozenset(
    "address article aside base basefont blockquote body caption center col colgroup dd details dialog dir div dl "
    "dt fieldset figcaption figure footer form frame frameset h1 h2 h3 h4 h5 h6 head header hr html iframe legend li "
    "link main menu menuitem nav noframes ol optgroup option p param search section summary table tbody td tfoot "
    "th thead title tr track ul".split()
)
# Emphasis marks `mentions` ignores inside a word (`CODE**OWNER**`).
MARKS = dict.fromkeys(map(ord, "*_~`"), None) | INVISIBLE

_FENCE = re.compile(r"(`{3,}|~{3,})(.*)")
_BACKTICKS = re.compile(r"`+")
_LIST_MARKERS = re.compile(r"(?:(?:[-*+]|\d{1,9}[.)])(?=\s)\s*)*")
_ITEM = re.compile(r"(?:[-*+]|(\d{1,9})[.)])(?:([ \t]+)|$)")
_QUOTE_MARKS = re.compile(r"(?:[ \t]{0,3}>[ \t]?)+")
_HEADING = re.compile(r"#{1,6}(?:[ \t]|$)")
_THEMATIC_BREAK = re.compile(r"(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
_HTML_START = re.compile(
    r"<(?:(?:script|style|textarea|pre)(?:[\s>]|$)|!--|\?|![A-Za-z]|!\[CDATA\["
    r"|/?([A-Za-z][A-Za-z0-9-]*)(?:[\s>]|/>|$))",
    re.IGNORECASE,
)
# A `<pre>` or `<code>` block: opened by its tag at the start of a line, ended by the line holding its closing tag.
_CODE_BLOCK = re.compile(r"<(pre|code)(?=[\s>]|$)", re.IGNORECASE)
# What `_without_code` reads, in order: runs of backticks, and `<code>`/`<pre>` tags inside a paragraph.
_INLINE_CODE = re.compile(r"`+|<(pre|code)(?=[\s>])", re.IGNORECASE)
_CODE_END = {"pre": re.compile(r"</pre\s*>", re.IGNORECASE), "code": re.compile(r"</code\s*>", re.IGNORECASE)}
_WORD = re.compile(r"[^\W_]+")
# What an unindented line starting with one of BLOCK_STARTS (and holding no `<`) needs to start a block; any other
# such line (`1x`, `#x`, `=`, `` `x` ``, `_a_`) is plain text too.
_BLOCK_START = re.compile(
    rf"(?P<quote>>)|(?P<heading>{_HEADING.pattern})|{_THEMATIC_BREAK.pattern}"
    r"|(?P<item>(?:[-*+]|(?P<number>\d{1,9})[.)])(?:[ \t]+|$))|`{3}|~{3}"
)


def visible_lines(body: str | None) -> Iterator[tuple[int, str]]:
    """(1-based line number, text) of every line a reader sees as prose, with its HTML comments removed.

    Hidden: fenced code (also in list items, and deeper than three spaces: conservative), indented code,
    `<pre>`/`<code>` blocks (from the line starting with the tag to the line holding its closing tag), quotes
    (`>` lines, and the lazy lines that continue a quoted paragraph) and HTML comments. A comment counts only
    outside code: a `<!--` inside a fenced block, in a fence's info string or in an inline code span is text;
    `<!-->` and `<!--->` are whole comments. An unclosed comment hides the rest of the body. What follows a
    multi-line comment continues the line the comment opened on, with that line's number (`/use 1 <!--\\n-->2`
    reads `/use 1 2`, line 1).
    """
    for number, line, _ in _scan(body):
        yield number, line


def prose(body: str | None) -> str:
    """The visible prose of `body`: its visible lines, a paragraph's lines joined by line breaks and paragraphs by
    blank lines, with each code span, inline `<code>`/`<pre>` element and hidden block between lines as BREAK."""
    pieces: list[str] = []
    start, code = 0, False  # where the paragraph being read starts in pieces, and whether it may hold code
    for _, line, gap in _scan(body):
        if gap == CONTINUES:
            pieces += ["\n", line]
        else:
            if code:
                pieces[start:] = [_without_code("".join(pieces[start:]))]
            if pieces:
                pieces.append(f"\n{BREAK}\n" if gap == AFTER_HIDDEN else "\n\n")
            start, code = len(pieces), False
            pieces.append(line)
        code = code or "`" in line or "<" in line
    if code:
        pieces[start:] = [_without_code("".join(pieces[start:]))]
    return "".join(pieces)


def mentions(body: str | None, phrase: str) -> bool:
    """Whether every word of `phrase` (a run of letters or digits) occurs in `body`, ignoring case, emphasis marks
    and invisible characters: a cheap test that `phrase` may be in the prose of `body`, to run before `prose`."""
    words = _WORD.findall(phrase.casefold())
    if not body or not words:
        return False
    text = body.casefold().translate(MARKS)
    return all(word in text for word in words)


# -- the pass over the lines ----------------------------------------------------------------------------------


def _scan(body: str | None) -> Iterator[tuple[int, str, int]]:
    """(number, text, gap: CONTINUES, NEW or AFTER_HIDDEN) of every visible line of `body`, in order."""
    if not body:
        return
    text = body.replace("\r\n", "\n").replace("\r", "\n").translate(INVISIBLE)
    reader = _Reader()
    blank = False  # the line before was empty: another one changes nothing
    for number, raw in enumerate(text.split("\n"), start=1):
        if raw:
            blank = False
        elif blank:
            continue
        else:
            blank = True
        if (seen := reader.feed(number, raw)) is not None:
            yield seen
    if (seen := reader.end()) is not None:
        yield seen


class _Reader:
    """Reads a comment line by line, remembering the blocks still open (CommonMark's, as far as hiding needs)."""

    def __init__(self) -> None:
        self.fence: tuple[str, int, int] | None = None  # (char, length, deepest closing indent) of an open fence
        self.closer: re.Pattern[str] | None = None  # what ends an open <pre>/<code> block
        self.opened: tuple[int, list[str], bool] | None = None  # an open HTML comment: its line's number, the
        # visible text around it so far, and whether that line starts with it (an HTML block: it ends a paragraph)
        self.para = False  # the line before leaves a paragraph open, which the next line may continue
        self.quoted = False  # ... inside a quote: a line continuing it (a lazy line) is quoted too
        self.quote_fence: tuple[str, int, int] | None = None  # a fence open inside a quote
        self.lists: list[int] = []  # content columns of the list items still open, increasing
        self.gap = NEW  # how the next visible line follows the last one shown

    def feed(self, number: int, raw: str) -> tuple[int, str, int] | None:
        """(number, text, gap) when `raw` (with the lines before it) makes a visible line, else None."""
        if self.fence is not None:
            if _closes_fence(raw, *self.fence):
                self.fence = None
            return None
        if self.closer is not None:
            if self.closer.search(raw):
                self.closer = None
            return None
        if self.opened is not None:
            return self._close_comment(raw)
        first = raw[:1]
        if not first:
            self._blank()
            return None
        if "<" not in raw and not first.isspace():  # the common lines, read at once
            block = _BLOCK_START.match(raw) if first in BLOCK_STARTS else None
            if block is None:
                return self._plain(number, raw)
            if block.lastgroup == "quote" and self.quote_fence is None and self._quoted_text(raw):
                return None
            if block.lastgroup == "heading":
                return self._heading(number, raw)
            if raw[:2] in BULLETS and _plain_start(raw[2:3]):
                return self._bullet(number, raw)
            if block.lastgroup == "item" and not _may_fence(raw):
                return self._item(number, raw, block)
        if COMMENT_OPEN not in raw:
            return self._place(number, raw, False)
        fence = _opens_fence(raw) if _may_fence(raw) else None  # before comments are looked for: its info is text
        if fence is not None:
            self._hide(fence)
            return None
        starts_comment = raw.lstrip(" \t").startswith(COMMENT_OPEN) and _width(raw[: raw.index("<")]) <= MAX_INDENT
        line, still_open = _strip_comments(raw)
        if still_open:
            self.opened = (number, [line], starts_comment)
            return None
        return self._place(number, line, starts_comment)

    def end(self) -> tuple[int, str, int] | None:
        """The text before a comment never closed, when it makes a visible line."""
        if self.opened is None:
            return None
        number, pieces, starts_comment = self.opened
        self.opened = None
        return self._place(number, "".join(pieces), starts_comment)

    def _close_comment(self, raw: str) -> tuple[int, str, int] | None:
        assert self.opened is not None
        close = raw.find(COMMENT_CLOSE)
        if close == -1:
            return None
        number, pieces, starts_comment = self.opened
        rest, still_open = _strip_comments(raw[close + len(COMMENT_CLOSE) :])
        pieces.append(rest)
        if still_open:
            return None
        self.opened = None
        return self._place(number, "".join(pieces), starts_comment)

    def _plain(self, number: int, line: str) -> tuple[int, str, int] | None:
        """A line that starts no block (and holds no `<`): it continues the paragraph before it, or starts one."""
        self.quote_fence = None
        if self.para:
            return None if self.quoted else (number, line, CONTINUES)
        self.lists.clear()
        self.para = True
        gap, self.gap = max(self.gap, NEW), CONTINUES
        return number, line, gap

    def _heading(self, number: int, line: str) -> tuple[int, str, int]:
        """An unindented ATX heading (no `<`): what `_place` does for it, done at once."""
        self.lists.clear()
        self.quote_fence = None
        self.para = self.quoted = False
        gap, self.gap = max(self.gap, NEW), CONTINUES
        return number, line, gap

    def _item(self, number: int, line: str, item: re.Match[str]) -> tuple[int, str, int] | None:
        """An unindented list item (no `<`, no fence; `item`: its marker): what `_place` does for it, done at once."""
        if self.para and not (item.end() < len(line) and item.group("number") in (None, "1")):
            return None if self.quoted else (number, line, CONTINUES)  # an item that cannot interrupt a paragraph
        self.quote_fence = None
        if item.end() == len(line):  # an empty item: its content would start a column after the marker
            self.lists[:] = [len(line.rstrip(" \t")) + 1]
            self.para = self.quoted = False
            gap, self.gap = max(self.gap, NEW), CONTINUES
            return number, line, gap
        self.lists.clear()
        return self._block(number, line, self._list_items(line, 0), False)

    def _bullet(self, number: int, line: str) -> tuple[int, str, int]:
        """An unindented list item holding plain text (`- [ ] text`): what `_place` does for it, done at once."""
        self.lists[:] = [2]  # its content column
        self.quote_fence = None
        self.para, self.quoted = True, False
        gap, self.gap = max(self.gap, NEW), CONTINUES
        return number, line, gap

    def _quoted_text(self, line: str) -> bool:
        """Whether `line` (unindented, no `<`) is a quote line holding plain text, taken in as such; the common
        case of what `_place` and `_in_quote` do, done at once."""
        if not _plain_start(line[_end(_QUOTE_MARKS, line) :][:1]):
            return False
        self.lists.clear()
        self.para = self.quoted = True
        self.gap = AFTER_HIDDEN
        return True

    def _blank(self) -> None:
        """A blank line: it ends paragraphs and quotes."""
        self.para = self.quoted = False
        self.quote_fence = None
        self.gap = max(self.gap, NEW)

    def _hide(self, fence: tuple[str, int, int] | None = None) -> None:
        self.fence = fence
        self.para = self.quoted = False
        self.gap = AFTER_HIDDEN

    def _place(self, number: int, line: str, starts_comment: bool) -> tuple[int, str, int] | None:
        """Where a line (its HTML comments removed; `starts_comment`: its line starts with one) falls: shown with
        its gap, or None when hidden or empty."""
        rest = line.lstrip()
        if not rest:
            if not line.strip(" \t"):  # blank, or `<!-- note -->` alone (an HTML block): either ends a paragraph
                self._blank()
            return None
        column = _width(line[: len(line) - len(rest)]) if len(rest) < len(line) else 0
        first = rest[0]
        if first in FENCE_STARTS and _may_fence(rest) and (fence := _opens_fence(line)) is not None:
            self._hide(fence)  # also a fence after a comment on its line (`<!-- x -->```)
            return None
        if self.quote_fence is not None and first != ">":
            self.quote_fence = None  # the quote ended, and the fence inside it with it
        if first == "<" and column <= MAX_INDENT and (end := _code_block_end(rest)) is not None:
            self.closer = None if end.search(rest) else end
            self._hide()
            return None
        lists = self.lists
        if self.para and not _interrupts(rest, starts_comment, column - _base(lists, column)):
            return None if self.quoted else (number, line, CONTINUES)
        del lists[bisect.bisect_right(lists, column) :]  # the items this line is not inside end
        if column - (lists[-1] if lists else 0) > MAX_INDENT:
            self._hide()  # indented code
            return None
        if first in "-*_" and _THEMATIC_BREAK.match(rest):
            self.para = self.quoted = False
            self.gap = max(self.gap, NEW)
            return None
        return self._block(
            number, line, self._list_items(rest, column) if first in ITEM_STARTS else rest, starts_comment
        )

    def _block(self, number: int, line: str, inside: str, starts_comment: bool) -> tuple[int, str, int] | None:
        """A line that starts a block, holding `inside` after its list markers: a quote (hidden) or shown."""
        if inside[:1] == ">":
            self._in_quote(inside[_end(_QUOTE_MARKS, inside) :])
            self.gap = AFTER_HIDDEN
            return None
        self.quoted = False
        self.para = bool(inside) and not starts_comment and not (inside[0] == "#" and _HEADING.match(inside))
        gap, self.gap = max(self.gap, NEW), CONTINUES
        return number, line, gap

    def _list_items(self, rest: str, column: int) -> str:
        """What `rest` holds after its list markers; the content column of each item it opens is remembered."""
        pos = 0
        while (item := _ITEM.match(rest, pos)) is not None:
            spaces = len(item.group(2) or "")
            content = item.end() if 0 < spaces <= TAB_WIDTH and item.end() < len(rest) else item.end() - spaces + 1
            self.lists.append(column + content)
            if spaces > TAB_WIDTH or item.end() == len(rest):
                return ""  # content indented as code, or none on this line
            pos = item.end()
        return rest[pos:]

    def _in_quote(self, inner: str) -> None:
        """A quote line holding `inner`: follow the blocks inside the quote as far as a lazy line needs."""
        continues = self.para and self.quoted
        self.para = False
        if self.quote_fence is not None:
            if _closes_fence(inner, *self.quote_fence):
                self.quote_fence = None
        elif _may_fence(inner) and (fence := _opens_fence(inner)) is not None:
            self.quote_fence = fence
        else:
            lead, rest = _split_indent(inner)
            block = _HEADING.match(rest) or _THEMATIC_BREAK.match(rest) or _html_block_start(rest)
            self.para = bool(rest) and not block and (continues or _width(lead) <= MAX_INDENT)
        self.quoted = self.para


def _plain_start(char: str) -> bool:
    """Whether a line's text starting with `char` starts no block."""
    return bool(char) and char not in BLOCK_STARTS and not char.isspace()


def _base(lists: list[int], column: int) -> int:
    """The content column of the deepest open list item a line at `column` is inside (0: none)."""
    inside = bisect.bisect_right(lists, column)
    return lists[inside - 1] if inside else 0


def _interrupts(rest: str, starts_comment: bool, indent: int) -> bool:
    """Whether a line (`rest`, indented `indent` columns in its list item) starts a block that ends a paragraph
    (a `/command` never does, so after a quote it is a lazy line, quoted too). Fences and code blocks came first."""
    first = rest[0]
    if starts_comment or first == ">" and indent <= MAX_INDENT:
        return True
    if indent > MAX_INDENT or first not in INTERRUPTS:
        return False
    if first == "#":
        return _HEADING.match(rest) is not None
    if first == "<":
        return _html_block_start(rest)
    if first in "-*_" and _THEMATIC_BREAK.match(rest):
        return True
    item = _ITEM.match(rest)  # a list item interrupts when it holds something and, numbered, starts at 1
    return item is not None and item.end() < len(rest) and item.group(1) in (None, "1")


def _html_block_start(rest: str) -> bool:
    """Whether `rest` starts a CommonMark HTML block of kinds 1 to 6 (kind 7 cannot interrupt a paragraph)."""
    match = _HTML_START.match(rest) if rest.startswith("<") else None
    return match is not None and (match.group(1) is None or match.group(1).lower() in HTML_BLOCK_TAGS)


def _code_block_end(rest: str) -> re.Pattern[str] | None:
    """The closing tag's pattern when `rest` (a line without its indent) opens a `<pre>` or `<code>` block."""
    match = _CODE_BLOCK.match(rest) if rest.startswith("<") else None
    return None if match is None else _CODE_END[match.group(1).lower()]


# -- HTML comments and code spans within a line ----------------------------------------------------------------


def _strip_comments(line: str) -> tuple[str, bool]:
    """`line` without its HTML comments, and whether the last one is still open at its end.

    Read left to right as CommonMark does: an inline code span (a run of backticks up to the next run of the
    same length) is text whatever it holds, and so are a `\\<!--` and a `\\``. `<!-->` and `<!--->` are whole
    comments. Linear in the line's length.
    """
    if COMMENT_OPEN not in line:
        return line, False
    runs = _runs(line)
    out: list[str] = []
    pos, start = 0, line.find(COMMENT_OPEN)
    while start != -1:
        tick = _unescaped(line, "`", pos, start)
        if tick != -1:
            end = _span_end(line, runs, tick)
            out.append(line[pos:end])
            pos = end
        elif _escaped(line, start):
            out.append(line[pos : start + 1])
            pos = start + 1
        else:
            out.append(line[pos:start])
            close = line.find(COMMENT_CLOSE, start + 2)  # from the opener's dashes: `<!-->` closes at once
            if close == -1:
                return "".join(out), True
            pos = close + len(COMMENT_CLOSE)
        if start < pos:
            start = line.find(COMMENT_OPEN, pos)
    out.append(line[pos:])
    return "".join(out), False


def _without_code(text: str) -> str:
    """`text` (one paragraph) with each code span and inline `<code>`/`<pre>` element replaced by BREAK.

    Read left to right, as `_strip_comments` reads a line: a run of backticks opens a span when a run of the same
    length comes later (the first such run closes it; a backslash before a run makes its first backtick text), and
    a `<code>`/`<pre>` tag opens an element when its closing tag comes later; what either holds is code. One pass.
    """
    if "`" not in text and "<" not in text:
        return text
    ahead = Counter(map(len, _BACKTICKS.findall(text)))  # run length -> how many such runs are still to come
    closed: dict[str, int] = {}  # a tag's name -> where its closing tag was last found (-1: none from there on)
    out: list[str] = []
    pos = opened = 0  # where the text not yet written starts; the length of the open span's backticks (0: none)
    for found in _INLINE_CODE.finditer(text):
        start, end = found.span()
        if found.group(1) is None:  # backticks
            ahead[end - start] -= 1
            if start < pos:
                continue  # inside an element
            if opened:
                if end - start == opened:
                    pos, opened = end, 0
                continue
            if start and text[start - 1] == "\\" and _escaped(text, start):
                start += 1
            if end > start and ahead[end - start] > 0:
                out += [text[pos:start], BREAK]
                opened = end - start
        elif not opened and start >= pos and not _escaped(text, start):
            name = found.group(1).lower()
            close = closed.get(name, 0)
            if close != -1 and close < end:
                closer = _CODE_END[name].search(text, end)
                close = closed[name] = -1 if closer is None else closer.start()
            if close != -1:
                out += [text[pos:start], BREAK]
                pos = _end(_CODE_END[name], text, close)
    out.append(text[pos:])
    return "".join(out)


def _runs(text: str) -> dict[int, list[int]]:
    """Backtick run length -> where such runs start in `text`, in order."""
    runs: dict[int, list[int]] = {}
    for match in _BACKTICKS.finditer(text):
        runs.setdefault(match.end() - match.start(), []).append(match.start())
    return runs


def _span_end(text: str, runs: dict[int, list[int]], tick: int) -> int:
    """Where the code span opened by the backticks at `tick` ends; with no closer, the end of those backticks."""
    run = _end(_BACKTICKS, text, tick) - tick
    same = runs.get(run, [])
    after = bisect.bisect_left(same, tick + run)
    return same[after] + run if after < len(same) else tick + run


def _end(pattern: re.Pattern[str], text: str, pos: int = 0) -> int:
    """Where `pattern`'s match at `pos` ends: every caller knows it matches there (an empty match counts)."""
    match = pattern.match(text, pos)
    assert match is not None
    return match.end()


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


# -- fences ----------------------------------------------------------------------------------------------------


def _split_indent(line: str) -> tuple[str, str]:
    rest = line.lstrip()
    return line[: len(line) - len(rest)], rest


def _width(lead: str) -> int:
    return len(lead.expandtabs(TAB_WIDTH))


def _may_fence(text: str) -> bool:
    """Whether `text` holds what a fence needs (a cheap test before `_opens_fence`)."""
    return "```" in text or "~~~" in text


def _opens_fence(line: str) -> tuple[str, int, int] | None:
    """(fence char, fence length, deepest indent of its closing fence) when `line` opens a code fence.

    Conservative: a fence also opens after list markers or deeper than three spaces, so code inside list items
    stays code.
    """
    lead, rest = _split_indent(line)
    if not rest or rest[0] not in "`~-*+0123456789":
        return None
    pos = _end(_LIST_MARKERS, rest)
    column, listed = _width(lead) + pos, pos > 0
    match = _FENCE.match(rest, pos)
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
