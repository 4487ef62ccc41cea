"""The appended text's rules (docs/spec.md, "The performance changelog"): characters, the file's end,
document markers, text outside entries, one empty line before each entry; then each entry is read and checked."""

from __future__ import annotations

import bisect
import re
from array import array
from collections.abc import MutableSequence
from typing import TypeVar

from bot.rules.changelog.entries import _EntryChecker
from bot.rules.changelog.errors import _SHOWN_LINES, _character_error, _err
from bot.rules.changelog.reading import _DOCUMENT_MARKER_LINE, _Entries, _Stop
from bot.rules.changelog.results import (
    _PHASE_CHARACTERS,
    _PHASE_END,
    _PHASE_MARKER,
    _PHASE_OUTSIDE,
    _PHASE_SEPARATOR,
    AppendedEntry,
    _Sink,
)
from bot.rules.changelog.state import _Check

# What YAML itself refuses to read (yaml.reader.Reader.NON_PRINTABLE), minus TAB, LF and CR, which have
# rules of their own here; found before parsing so that each is named by its line, not by a stream offset.
_ALLOWED = "\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff"
_CONTROL = re.compile(f"[^{_ALLOWED}]")
_CONTROL_BUT_NUL = re.compile(f"[^\x00{_ALLOWED}]")  # NUL has a rule of its own
# Line breaks YAML knows besides LF; they would shift YAML's line numbers away from the file's.
_OTHER_BREAKS = str.maketrans({"\x85": " ", "\u2028": " ", "\u2029": " "})
_DOCUMENT_MARKER = re.compile(r"(?:---|\.\.\.)(?:[ \t]|$)|%")
_ENTRY_START_LINE = re.compile(r"^-(?:[ \t]|$)", re.M)
_Lines = TypeVar("_Lines", bound=MutableSequence[int])  # a list, or an array("q") for very many lines
_SURROGATE = re.compile("[\udc80-\udcff]")  # a byte that is not UTF-8, as surrogateescape decodes it


def _trailing_blank_lines(text: bytes) -> int:
    """How many whitespace-only lines end `text` (not counting the empty string after a final newline)."""
    if not text:
        return 0
    count, end = 0, len(text) - (1 if text.endswith(b"\n") else 0)
    while True:
        start = text.rfind(b"\n", 0, end) + 1
        if text[start:end].strip():
            return count
        count += 1
        if start == 0:
            return count
        end = start - 1


def _lines_matching(
    text: str,
    pattern: re.Pattern[str],
    first_line: int,
    shown: _Lines,
    every: bool = False,
) -> tuple[_Lines, int, str | None]:
    """Lines of `text` with a match of `pattern`: (`shown` with the first _SHOWN_LINES of them, or all when
    `every`, added; how many; the first match). One search per such line, whatever the line holds."""
    count, first, pos, line, counted = 0, None, 0, first_line, 0
    while (match := pattern.search(text, pos)) is not None:
        line += text.count("\n", counted, match.start())
        counted = match.start()
        count += 1
        if every or len(shown) < _SHOWN_LINES:
            shown.append(line)
        first = first if first is not None else match.group()
        newline = text.find("\n", match.start())
        if newline == -1:
            break
        pos = newline + 1
    return shown, count, first


_CHARACTER_PATTERNS = {
    "tab": re.compile("\t"),
    "cr": re.compile("\r"),
    "nul": re.compile("\x00"),
    "control-character": _CONTROL_BUT_NUL,
}


def _check_appended(appended: bytes, first_line: int, history: bytes, check: _Check) -> list[AppendedEntry]:
    """The appended text's entries (valid or not); every error goes to the check's sink. Memory is a few copies
    of the text: lines are found in it, never split into a list of their own."""
    sink = check.sink
    check.line = first_line

    # Characters: one error per rule, naming its lines.
    try:
        decoded = appended.decode("utf-8")
        bad_utf8: tuple[list[int], int, str | None] = ([], 0, None)
    except UnicodeDecodeError:
        decoded = appended.decode("utf-8", "surrogateescape")
        bad_utf8 = _lines_matching(decoded, _SURROGATE, first_line, [])
        decoded = _SURROGATE.sub("\ufffd", decoded)
    tab_lines: array[int] = array("q")  # every line with a tab: a YAML error there is the tab's
    for code, pattern in _CHARACTER_PATTERNS.items():
        if code == "tab":
            tab_lines, count, first = _lines_matching(decoded, pattern, first_line, array("q"), every=True)
            lines_found = list(tab_lines[:_SHOWN_LINES])
        else:
            lines_found, count, first = _lines_matching(decoded, pattern, first_line, [])
        if count:
            extra = {"character": f"U+{ord(first or ' '):04X}"} if code == "control-character" else {}
            sink.add(_character_error(code, lines_found, count, **extra), _PHASE_CHARACTERS)
    if bad_utf8[1]:
        sink.add(_character_error("not-utf8", bad_utf8[0], bad_utf8[1]), _PHASE_CHARACTERS)

    text = decoded.replace("\r", "").replace("\0", "")
    del decoded
    text = _CONTROL.sub(" ", text).translate(_OTHER_BREAKS)
    if not history and text.startswith("\ufeff"):
        text = text[1:]  # a byte-order mark opening a new file is UTF-8 too, and YAML skips it
    line_count = text.count("\n") + 1  # the last line is "" when the text ends with a newline
    last = first_line + line_count - 1

    # The end of the file: exactly one newline.
    if not text.endswith("\n"):
        sink.add(_err(last, "trailing-newline", problem="missing", blank_lines=0), _PHASE_END)
    else:
        blank, end = 0, len(text) - 1
        while blank < line_count - 1:
            begin = text.rfind("\n", 0, end) + 1
            if text[begin:end].strip():
                break
            blank, end = blank + 1, begin - 1
        if blank:
            start = last - blank
            sink.add(_err(start, "trailing-newline", problem="extra-blank-lines", blank_lines=blank), _PHASE_END)

    # Lines YAML would read as a new document or a directive (blanked where an entry is read).
    counted, line = 0, first_line
    for match in _DOCUMENT_MARKER_LINE.finditer(text):
        line += text.count("\n", counted, match.start())
        counted = match.start()
        if sink.room(line, _PHASE_MARKER):
            value = match.group().strip()
            sink.add(_err(line, "document-marker", value=value), _PHASE_MARKER)
        else:
            sink.skip()

    # Where each entry starts: a `- ` line in column 0.
    starts, offsets = array("q"), array("q")
    counted, row = 0, 0
    for match in _ENTRY_START_LINE.finditer(text):
        row += text.count("\n", counted, match.start())
        counted = match.start()
        starts.append(row)
        offsets.append(match.start())

    # Text before the first entry (it is never read as YAML).
    pos, row = 0, 0
    limit = offsets[0] if starts else len(text)
    while pos < limit:
        newline = text.find("\n", pos, limit)
        stop = limit if newline == -1 else newline
        candidate = text[pos:stop]
        if candidate.strip() and not candidate.lstrip().startswith("#") and not _DOCUMENT_MARKER.match(candidate):
            number = first_line + row
            indented = candidate[:1] in (" ", "\t")
            extends_history = indented and bool(history.strip())  # it would add to the history's last entry
            sink.add(
                _err(
                    number, "outside-entry", value=candidate.strip(), indented=indented, extends_history=extends_history
                ),
                _PHASE_OUTSIDE,
            )
            break
        pos, row = stop + 1, row + 1

    # Each entry (from one `- ` line in column 0 to the next) is read on its own: an unclosed quote is named
    # in its own entry, and the other entries are still checked; an alias to another entry's anchor is an
    # error of its own line. The history ends at a line boundary with a complete list, so these are its new
    # items.
    entries: list[AppendedEntry] = []
    history_blank = _trailing_blank_lines(history)
    history_content = bool(history.strip())
    reader = _Entries(check, text, first_line, starts, offsets, line_count)
    try:
        for k, node, source, source_line, own, aliases, errors in reader:
            dash_line = first_line + starts[k]
            if sink.passed(dash_line):
                sink.partial = True  # the errors kept are the first; the rest is not read
                break
            check.line = dash_line
            _separator(sink, text, offsets[k], dash_line, history_blank, history_content)
            for error in errors:
                if error.code == "yaml-syntax" and _contains(tab_lines, error.line):
                    continue  # a tab breaks YAML where it indents; the tab error already names that line
                if sink.room(error.line):
                    sink.add(error)
                else:
                    sink.skip()
            if node is not None:
                entry = _EntryChecker(check, source, source_line).check(node, dash_line, own, aliases)
                if entry is not None:
                    entries.append(entry)
    except _Stop as stop:
        if sink.room(stop.error.line):
            sink.add(stop.error)
        else:
            sink.skip()
        sink.partial = True
    return entries


def _contains(sorted_numbers: array[int], number: int) -> bool:
    index = bisect.bisect_left(sorted_numbers, number)
    return index < len(sorted_numbers) and sorted_numbers[index] == number


def _separator(sink: _Sink, text: str, offset: int, dash_line: int, history_blank: int, history_content: bool) -> None:
    """Exactly one empty line before each entry (none at the top of a new file); `offset` is where its `- `
    line begins in `text`."""
    blank, end = 0, offset - 1
    while end >= 0:
        begin = text.rfind("\n", 0, end) + 1
        if text[begin:end].strip():
            break
        blank += 1
        end = begin - 1
    if end >= 0:
        expected, found_blank = 1, blank
    elif not history_content:
        expected, found_blank = 0, blank
    elif history_blank:
        expected, found_blank = history_blank, history_blank + blank  # the history's own are not blamed
    else:
        expected, found_blank = 1, blank
    if found_blank == expected:
        return
    if not sink.room(dash_line, _PHASE_SEPARATOR):
        sink.skip()
        return
    sink.add(_err(dash_line, "separator", blank_lines=found_blank, expected=expected), _PHASE_SEPARATOR)
