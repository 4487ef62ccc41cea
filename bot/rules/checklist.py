"""Parse the sign-off checklist template and check a sign-off against it (pure, no I/O)."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import NamedTuple

from bot.rules.markdown import ITEM_STARTS, TAB_WIDTH  # Markdown's: a tab's width, a list item's first characters

DEFAULT_HEADING = "## Template"
SIMILAR_RATIO = (
    0.8  # an unmatched item of the sign-off this similar to a template item (word by word) is that item reworded
)
MAX_CANDIDATES = 50  # distinct unmatched items of a sign-off looked at as rewordings, the first ones first
MAX_RATIOS = 3  # of those, how many (the most alike by difflib's quick_ratio) are compared in full for one item

# An opening/closing code fence: up to 3 spaces, then 3+ backticks or tildes.
FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
# A checklist item: bullet (- * +) or number (1. / 1)), a box, then the text.
ITEM_RE = re.compile(r"^(?P<indent>\s*)(?:[-*+]|\d{1,9}[.)])\s+\[(?P<box>[ xX])\](?:\s+(?P<text>.*))?$")
SIGNED_RE = re.compile(r"^\s*[*_]*signed[*_]*\s*:\s*[*_]*\s*(?P<value>.*)$", re.IGNORECASE)
LOGIN_RE = re.compile(r"@?(?P<login>[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\[bot\])?)")
# Links. A label, a reference or a URL holds no bracket, and an autolink no `<`: so each attempt to match stops at
# the next bracket (or `<`), and no character is read twice by failed attempts (linear in the text's length).
IMAGE_OR_LINK_RE = re.compile(r"!?\[([^\[\]]*)\]\([^\[)]*\)")
REF_LINK_RE = re.compile(r"\[([^\[\]]*)\]\[[^\[\]]*\]")
AUTOLINK_RE = re.compile(r"<((?:https?|mailto):[^<>\s]*)>")
# `_` inside a word (PR_REVIEW_CHECKLIST.md) is not emphasis in CommonMark; around a word it is.
EMPHASIS_RE = re.compile(r"\*+|(?<![A-Za-z0-9])_+|_+(?![A-Za-z0-9])|~~|`+")
# What `_reworded` compares: words, and each punctuation mark on its own.
TOKEN_RE = re.compile(r"\w+|[^\w\s]")


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


class _Entry(NamedTuple):
    """One parsed line (or item with its continuation lines) of a document."""

    line: int
    depth: int
    text: str
    ticked: bool | None  # None: not a checklist item


def normalise(text: str) -> str:
    """Text as compared: links -> label, no emphasis/code marks, whitespace collapsed, case kept. Linear."""
    if "[" in text:
        text = REF_LINK_RE.sub(r"\1", IMAGE_OR_LINK_RE.sub(r"\1", text))
    if "<" in text:
        text = AUTOLINK_RE.sub(r"\1", text)
    return " ".join(EMPHASIS_RE.sub("", text).split())


def _indent(line: str) -> int:
    expanded = line.expandtabs(TAB_WIDTH)
    return len(expanded) - len(expanded.lstrip(" "))


def _heading_matches(line: str, heading: str) -> bool:
    stripped = line.strip()
    if not stripped.startswith(heading):
        return False
    rest = stripped[len(heading) :]
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
            return i + 1, lines[i + 1 : j]
    return TemplateProblem(f"fenced code block under {heading!r} is not closed")


def _parse_lines(lines: list[str], first_line: int, *, signoff: bool = False) -> list[_Entry]:
    """Entries for lines; an indented line right after an item continues that item. Linear in the lines' length.

    For a sign-off (`signoff`), a fence line reads as a blank line (the sign-off may be pasted inside a code fence:
    fence lines are ignored, not their content), and of the lines that are not items only those that may be its
    `Signed:` line are kept.
    """
    entries: list[_Entry] = []
    items: list[tuple[int, list[str]]] = []  # (index in entries, the text's parts) of every item
    open_indents: list[int] = []
    in_item = False
    for number, raw in enumerate(lines, start=first_line):
        first = raw[:1]
        if first and first not in ITEM_STARTS and first not in "`~" and not first.isspace():
            open_indents.clear()  # unindented, and neither an item nor a fence: a line of its own
            in_item = False
            if not signoff or first in "sS_\u017f" and SIGNED_RE.match(raw):  # \u017f: ſ, an s to IGNORECASE
                entries.append(_Entry(number, 0, raw.strip(), None))
            continue
        expanded = raw.expandtabs(TAB_WIDTH)
        if not raw.strip() or signoff and FENCE_RE.match(expanded):
            in_item = False
            continue
        match = ITEM_RE.match(expanded)
        if match:
            indent = len(match.group("indent"))
            while open_indents and open_indents[-1] >= indent:
                open_indents.pop()
            depth = len(open_indents)
            open_indents.append(indent)
            items.append((len(entries), [(match.group("text") or "").strip()]))
            entries.append(_Entry(number, depth, "", match.group("box") in "xX"))
            in_item = True
        elif in_item and _indent(raw) > 0 and not SIGNED_RE.match(raw):
            items[-1][1].append(raw.strip())
        else:
            if _indent(raw) == 0:
                open_indents.clear()
            in_item = False
            if not signoff or SIGNED_RE.match(raw.strip()):
                entries.append(_Entry(number, 0, raw.strip(), None))
    for index, parts in items:
        entries[index] = entries[index]._replace(text=" ".join(parts))
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
    return _parse_lines(lines, 1, signoff=True)


def _signed_login(entries: list[_Entry]) -> str | None:
    """Login named on the last `Signed:` line (without '@'), or None."""
    for entry in reversed(entries):
        match = SIGNED_RE.match(entry.text)
        if match:
            login = LOGIN_RE.match(EMPHASIS_RE.sub("", match.group("value")).strip())
            return login.group("login") if login else None
    return None


def _reworded(target: str, candidates: dict[str, tuple[_Entry, list[str]]]) -> _Entry | None:
    """The candidate (normalised text -> entry, its tokens) that is `target` reworded: the most alike, word by word,
    at least SIMILAR_RATIO alike; None when there is none. Bounded: difflib's cheap upper bounds
    (real_quick_ratio, then quick_ratio) rule candidates out, and only the MAX_RATIOS most alike by quick_ratio are
    compared in full (ratio). Ties go to the first in the sign-off."""
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(TOKEN_RE.findall(target))
    alike: list[tuple[float, int, _Entry, list[str]]] = []
    for order, (entry, tokens) in enumerate(candidates.values()):
        matcher.set_seq1(tokens)
        if matcher.real_quick_ratio() >= SIMILAR_RATIO and (quick := matcher.quick_ratio()) >= SIMILAR_RATIO:
            alike.append((-quick, order, entry, tokens))
    scored = []
    for _, order, entry, tokens in sorted(alike)[:MAX_RATIOS]:
        matcher.set_seq1(tokens)
        scored.append((matcher.ratio(), -order, entry))
    best = max(scored, key=lambda score: score[:2], default=None)
    return best[2] if best is not None and best[0] >= SIMILAR_RATIO else None


def compare(template: Template, signoff_body: str, signer: str) -> ChecklistResult:
    """Check that every template item is in the sign-off, ticked, and that it is signed by signer.

    An item found nowhere may be there reworded: a sign-off item matching no template item, among the first
    MAX_CANDIDATES distinct ones, at least SIMILAR_RATIO alike word by word (see `_reworded`). Linear in the
    sign-off's length, and bounded by the template's size otherwise.
    """
    entries = _signoff_entries(signoff_body)
    wanted = {item.normalised for item in template.items}
    ticked: dict[str, bool] = {}  # normalised text of a sign-off item -> whether any item with that text is ticked
    candidates: dict[str, tuple[_Entry, list[str]]] = {}
    for entry in entries:
        if entry.ticked is None:
            continue
        text = normalise(entry.text)
        ticked[text] = ticked.get(text, False) or entry.ticked
        if text not in wanted and text not in candidates and len(candidates) < MAX_CANDIDATES:
            candidates[text] = (entry, TOKEN_RE.findall(text))
    missing: list[Item] = []
    unticked: list[Item] = []
    changed: list[tuple[Item, str]] = []
    for item in template.items:
        found = ticked.get(item.normalised)
        if found:
            continue
        if found is not None:
            unticked.append(item)
            continue
        closest = _reworded(item.normalised, candidates)
        if closest is not None:
            changed.append((item, closest.text))
        else:
            missing.append(item)
    signed_by = _signed_login(entries)
    signed_ok = signed_by is not None and signed_by.lower() == signer.strip().lstrip("@").lower()
    ok = signed_ok and not (missing or unticked or changed)
    return ChecklistResult(ok, missing, unticked, changed, signed_by, signed_ok)
