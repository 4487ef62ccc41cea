"""Parse the sign-off checklist template and check a sign-off against it (pure, no I/O)."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

DEFAULT_HEADING = "## Template"
SIMILAR_RATIO = 0.8
TAB_WIDTH = 4

# An opening/closing code fence: up to 3 spaces, then 3+ backticks or tildes.
FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
# A checklist item: bullet (- * +) or number (1. / 1)), a box, then the text.
ITEM_RE = re.compile(r"^(?P<indent>\s*)(?:[-*+]|\d{1,9}[.)])\s+\[(?P<box>[ xX])\](?:\s+(?P<text>.*))?$")
SIGNED_RE = re.compile(r"^\s*[*_]*signed[*_]*\s*:\s*[*_]*\s*(?P<value>.*)$", re.IGNORECASE)
LOGIN_RE = re.compile(r"@?(?P<login>[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\[bot\])?)")
IMAGE_OR_LINK_RE = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
REF_LINK_RE = re.compile(r"\[([^\]]*)\]\[[^\]]*\]")
AUTOLINK_RE = re.compile(r"<((?:https?|mailto):[^>\s]*)>")
# `_` inside a word (PR_REVIEW_CHECKLIST.md) is not emphasis in CommonMark; around a word it is.
EMPHASIS_RE = re.compile(r"\*+|(?<![A-Za-z0-9])_+|_+(?![A-Za-z0-9])|~~|`+")
SPACE_RE = re.compile(r"\s+")


@dataclass(frozen=True)
class Item:
    line: int  # 1-based line number where the item starts in its document
    depth: int  # 0 for top-level items, 1 for items nested under one, ...
    text: str  # item text as written, continuation lines joined with one space
    normalised: str


@dataclass(frozen=True)
class Template:
    items: tuple[Item, ...]
    fields: tuple[str, ...]  # non-blank template lines that are not items, stripped


@dataclass(frozen=True)
class TemplateProblem:
    reason: str


@dataclass(frozen=True)
class ChecklistResult:
    ok: bool
    missing: list[Item] = field(default_factory=list)
    unticked: list[Item] = field(default_factory=list)
    changed: list[tuple[Item, str]] = field(default_factory=list)
    signed_by: str | None = None
    signed_ok: bool = False


@dataclass(frozen=True)
class _Entry:
    """One parsed line (or item with its continuation lines) of a document."""

    line: int
    depth: int
    text: str
    ticked: bool | None  # None: not a checklist item


def normalise(text: str) -> str:
    """Text as compared: links -> label, no emphasis/code marks, whitespace collapsed, case kept."""
    text = IMAGE_OR_LINK_RE.sub(r"\1", text)
    text = REF_LINK_RE.sub(r"\1", text)
    text = AUTOLINK_RE.sub(r"\1", text)
    text = EMPHASIS_RE.sub("", text)
    return SPACE_RE.sub(" ", text).strip()


def _indent(line: str) -> int:
    expanded = line.expandtabs(TAB_WIDTH)
    return len(expanded) - len(expanded.lstrip(" "))


def _is_fence(line: str) -> bool:
    return FENCE_RE.match(line.expandtabs(TAB_WIDTH)) is not None


def _heading_matches(line: str, heading: str) -> bool:
    stripped = line.strip()
    if not stripped.startswith(heading):
        return False
    rest = stripped[len(heading):]
    return rest == "" or not (rest[0].isalnum() or rest[0] == "_")


def _fenced_block(lines: list[str], heading: str) -> tuple[int, list[str]] | TemplateProblem:
    """(index of the first line inside the block, its lines) for the block right under heading."""
    starts = [i for i, line in enumerate(lines) if _heading_matches(line, heading)]
    if not starts:
        return TemplateProblem(f"heading {heading!r} not found")
    i = starts[0] + 1
    while i < len(lines) and not lines[i].strip():
        i += 1
    opener = FENCE_RE.match(lines[i].expandtabs(TAB_WIDTH)) if i < len(lines) else None
    if opener is None or (opener.group(1)[0] == "`" and "`" in opener.group(2)):
        return TemplateProblem(f"no fenced code block right under {heading!r}")
    marks = opener.group(1)
    closer = re.compile(r"^ {0,3}" + re.escape(marks[0]) + "{" + str(len(marks)) + r",}\s*$")
    for j in range(i + 1, len(lines)):
        if closer.match(lines[j].expandtabs(TAB_WIDTH)):
            return i + 1, lines[i + 1:j]
    return TemplateProblem(f"fenced code block under {heading!r} is not closed")


def _parse_lines(lines: list[str], first_line: int) -> list[_Entry]:
    """Entries for lines; an indented line right after an item continues that item."""
    entries: list[_Entry] = []
    open_indents: list[int] = []
    in_item = False
    for offset, raw in enumerate(lines):
        number = first_line + offset
        if not raw.strip():
            in_item = False
            continue
        match = ITEM_RE.match(raw.expandtabs(TAB_WIDTH))
        if match:
            indent = len(match.group("indent"))
            while open_indents and open_indents[-1] >= indent:
                open_indents.pop()
            depth = len(open_indents)
            open_indents.append(indent)
            ticked = match.group("box") in "xX"
            entries.append(_Entry(number, depth, (match.group("text") or "").strip(), ticked))
            in_item = True
        elif in_item and _indent(raw) > 0 and not SIGNED_RE.match(raw):
            last = entries[-1]
            entries[-1] = _Entry(last.line, last.depth, f"{last.text} {raw.strip()}", last.ticked)
        else:
            if _indent(raw) == 0:
                open_indents.clear()
            entries.append(_Entry(number, 0, raw.strip(), None))
            in_item = False
    return entries


def template_items(markdown: str, heading: str = DEFAULT_HEADING) -> Template | TemplateProblem:
    """The checklist items and other lines of the fenced block right under heading."""
    lines = markdown.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    block = _fenced_block(lines, heading)
    if isinstance(block, TemplateProblem):
        return block
    start, body = block
    entries = _parse_lines(body, start + 1)
    items = tuple(Item(e.line, e.depth, e.text, normalise(e.text)) for e in entries if e.ticked is not None)
    if not items:
        return TemplateProblem(f"the template under {heading!r} has no checklist items")
    fields = tuple(e.text for e in entries if e.ticked is None)
    return Template(items, fields)


def _signoff_entries(body: str) -> list[_Entry]:
    lines = body.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    # The sign-off may be pasted inside a code fence: fence lines are ignored, not their content.
    return _parse_lines(["" if _is_fence(line) else line for line in lines], 1)


def _signed_login(entries: list[_Entry]) -> str | None:
    """Login named on the last `Signed:` line (without '@'), or None."""
    for entry in reversed(entries):
        match = SIGNED_RE.match(entry.text)
        if match:
            login = LOGIN_RE.match(EMPHASIS_RE.sub("", match.group("value")).strip())
            return login.group("login") if login else None
    return None


def _closest(target: str, candidates: list[_Entry]) -> tuple[float, _Entry | None]:
    best: tuple[float, _Entry | None] = (0.0, None)
    for entry in candidates:
        ratio = difflib.SequenceMatcher(None, target, normalise(entry.text), autojunk=False).ratio()
        if ratio > best[0]:
            best = (ratio, entry)
    return best


def compare(template: Template, signoff_body: str, signer: str) -> ChecklistResult:
    """Check that every template item is in the sign-off, ticked, and that it is signed by signer."""
    entries = _signoff_entries(signoff_body)
    wanted = {item.normalised for item in template.items}
    unmatched = [e for e in entries if not (e.ticked is not None and normalise(e.text) in wanted)]
    missing: list[Item] = []
    unticked: list[Item] = []
    changed: list[tuple[Item, str]] = []
    for item in template.items:
        same = [e for e in entries if e.ticked is not None and normalise(e.text) == item.normalised]
        if any(e.ticked for e in same):
            continue
        if same:
            unticked.append(item)
            continue
        ratio, closest = _closest(item.normalised, unmatched)
        if closest is not None and ratio >= SIMILAR_RATIO:
            changed.append((item, closest.text))
        else:
            missing.append(item)
    signed_by = _signed_login(entries)
    signed_ok = signed_by is not None and signed_by.lower() == signer.strip().lstrip("@").lower()
    ok = signed_ok and not (missing or unticked or changed)
    return ChecklistResult(ok, missing, unticked, changed, signed_by, signed_ok)
