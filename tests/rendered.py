"""A comment as GitHub shows it: Markdown rendered by cmark-gfm (GitHub's own parser, through `cmarkgfm`), then
read back as text. For the template tests and for bench scripts (put tests/ on sys.path and import `rendered`).

- `to_html(markdown)`: the HTML GitHub's parser makes, with the extensions GitHub turns on for comments.
- `visible_text(markdown)`: what a reader sees before expanding anything, to measure a comment's length.
- `render_problems(markdown)`: Markdown that did not render: bold left as `**`, a link left as text, a stray
  backtick, an empty link address.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import cmarkgfm  # type: ignore[import-untyped]  # cmarkgfm ships no type hints (no py.typed, no types- package)
from cmarkgfm.cmark import Options  # type: ignore[import-untyped]  # the same

# The extensions GitHub uses for comments. Raw HTML is kept (`<details>`, `<summary>`) as GitHub keeps it before
# its sanitizer; `tagfilter` disarms the tags GitHub disallows.
EXTENSIONS = ("table", "strikethrough", "autolink", "tagfilter", "tasklist")
OPTIONS = Options.CMARK_OPT_GITHUB_PRE_LANG | Options.CMARK_OPT_UNSAFE

_SPACE = re.compile(r"\s+")
# Markdown left as text once parsed: `**` or `__` (bold that did not render), `](` (a link that did not
# render: `[text](url)`, the `](url)` after a closing bracket, or `[text] (url)`), a backtick (an unclosed code span).
_LEFT_OVER = (
    (re.compile(r"\*\*|__"), "bold or emphasis markers left as text"),
    (re.compile(r"\][ \t]*\("), "a link left as text"),
    (re.compile(r"`"), "a stray backtick (an unclosed code span)"),
)


def to_html(markdown: str) -> str:
    """`markdown` rendered as GitHub renders a comment (cmark-gfm with GitHub's extensions)."""
    return cmarkgfm.markdown_to_html_with_extensions(markdown, options=OPTIONS, extensions=list(EXTENSIONS))


class _Reader(HTMLParser):
    """Walks the rendered HTML: the text shown (HTML comments are never shown), the text outside code, the links."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.shown: list[str] = []  # text outside any collapsed <details> (its <summary> shown)
        self.prose: list[str] = []  # text outside <code> and <pre>; a code element leaves one space
        self.hrefs: list[str | None] = []
        self._code = 0
        self._collapsed: list[bool] = []  # one entry per open <details>: True when collapsed
        self._summary = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("code", "pre"):
            if not self._code:
                self.prose.append(" ")
            self._code += 1
        elif tag == "details":
            self._collapsed.append("open" not in dict(attrs))
        elif tag == "summary":
            self._summary += 1
        elif tag == "a":
            self.hrefs.append(dict(attrs).get("href"))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("code", "pre") and self._code:
            self._code -= 1
        elif tag == "details" and self._collapsed:
            self._collapsed.pop()
        elif tag == "summary" and self._summary:
            self._summary -= 1

    def handle_data(self, data: str) -> None:
        # Inside a collapsed <details> only the innermost <summary> is shown (nested ones are inside the fold).
        hidden = sum(self._collapsed) - (1 if self._summary and self._collapsed and self._collapsed[-1] else 0)
        if hidden <= 0:
            self.shown.append(data)
        if not self._code:
            self.prose.append(data)


def _read(markdown: str) -> _Reader:
    reader = _Reader()
    reader.feed(to_html(markdown))
    reader.close()
    return reader


def visible_text(markdown: str) -> str:
    """The text a reader sees of `markdown` on GitHub before expanding anything: rendered by cmark-gfm, without
    HTML comments, without what a collapsed `<details>` holds (its `<summary>` is shown), every run of
    whitespace one space, stripped. `len(visible_text(body))` is the comment's visible length."""
    return _SPACE.sub(" ", "".join(_read(markdown).shown)).strip()


def prose_text(markdown: str) -> str:
    """The text of `markdown` as GitHub renders it, outside code spans and code blocks (each leaves one space),
    collapsed details included: the words a glossary check reads."""
    return _SPACE.sub(" ", "".join(_read(markdown).prose)).strip()


def render_problems(markdown: str) -> list[str]:
    """What of `markdown` GitHub would not render as meant: each problem with the text around it. Code spans and
    code blocks are left out (a `**` there is meant)."""
    reader = _read(markdown)
    problems = []
    prose = "".join(reader.prose)
    for pattern, what in _LEFT_OVER:
        for found in pattern.finditer(prose):
            around = prose[max(0, found.start() - 30) : found.end() + 30].replace("\n", " ")
            problems.append(f"{what}: …{around}…")
    problems.extend(f"a link with an empty address: {href!r}" for href in reader.hrefs if not (href or "").strip())
    return problems
