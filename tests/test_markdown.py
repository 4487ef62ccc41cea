"""bot/rules/markdown.py: what of a comment is visible prose (the command grammar's table: tests/test_commands.py)."""

from __future__ import annotations

import re
from unittest import mock

import pytest
from harness import COMMENT_LIMIT as LIMIT
from harness import fill
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.rules import markdown
from bot.rules.markdown import BREAK, mentions, prose, visible_lines
from bot.rules.signoff import has_phrase

PHRASE = "As a PR reviewer and CODEOWNER, I have reviewed this and have"


def case(body, expected, id):
    return pytest.param(body, expected, id=id)


# -- visible lines --------------------------------------------------------------------------------

VISIBLE_CASES = [
    case("a\nb", [(1, "a"), (2, "b")], "paragraph"),
    case("a\n\n    code\nb", [(1, "a"), (4, "b")], "indented-code-after-a-blank"),
    case("a\n    more", [(1, "a"), (2, "    more")], "an-indented-line-continues-a-paragraph"),
    case("1. item\n\n    more", [(1, "1. item"), (3, "    more")], "indented-inside-a-list-item"),
    case("- item\n\n      code", [(1, "- item")], "indented-code-inside-a-list-item"),
    case("- item\n\n    more", [(1, "- item"), (3, "    more")], "indented-inside-a-bullet-item"),
    case("-\n  x\n\n    y", [(1, "-"), (2, "  x"), (4, "    y")], "indented-inside-an-item-begun-empty"),
    case("- item\n\nb\n\n    code", [(1, "- item"), (3, "b")], "a-paragraph-ends-the-bullet-list"),
    case("- a\n  - b\n\n      c", [(1, "- a"), (2, "  - b"), (4, "      c")], "nested-list-item"),
    case("- a\n\nb\n\n    code", [(1, "- a"), (3, "b")], "a-paragraph-ends-the-list"),
    case("1. a\n\n   > quoted\nb", [(1, "1. a")], "quote-inside-a-list-item-and-its-lazy-line"),
    case("# title\n    code", [(1, "# title")], "a-heading-is-no-paragraph"),
    case("a\n---\nb", [(1, "a"), (3, "b")], "a-thematic-break-shows-nothing"),
    case("a <!-- x\ny --> b", [(1, "a  b")], "comment-joins-its-lines"),
    case("> q\n\u00a0\n/x", [], "a-no-break-space-line-does-not-end-a-quote"),
    case("<details>\n\ntext\n</details>", [(1, "<details>"), (3, "text"), (4, "</details>")], "html-is-shown"),
]


@pytest.mark.parametrize(("body", "expected"), VISIBLE_CASES)
def test_visible_lines(body, expected):
    assert list(visible_lines(body)) == expected


# -- prose ----------------------------------------------------------------------------------------

PROSE_CASES = [
    case("a\nb\n\nc", "a\nb\n\nc", "paragraphs"),
    case("a `b` c", f"a {BREAK} c", "code-span"),
    case("a ``b ` c`` d", f"a {BREAK} d", "double-backtick-span"),
    case("a `b\nc` d", f"a {BREAK} d", "code-span-over-two-lines"),
    case("a `b\n\nc` d", "a `b\n\nc` d", "no-code-span-across-paragraphs"),
    case("a \\`b` c", "a \\`b` c", "escaped-backtick-opens-no-span"),
    case("a `` b", "a `` b", "unclosed-backticks-are-text"),
    case("a <code>b</code> c", f"a {BREAK} c", "inline-code-element"),
    case("a <pre class='x'>b\nc</PRE> d", f"a {BREAK} d", "inline-pre-element-over-two-lines"),
    case("a <code>b", "a <code>b", "unclosed-code-element-is-text"),
    case("a \\<code>b</code>", "a \\<code>b</code>", "escaped-tag"),
    case("a `<code>` b</code>", f"a {BREAK} b</code>", "tag-in-code-span-is-code"),
    case("a\n```\nx\n```\nb", f"a\n{BREAK}\nb", "hidden-block-between-paragraphs"),
    case("```\nx\n```\nb", "b", "hidden-block-first"),
    case("a\n> q\nlazy\n\nb", f"a\n{BREAK}\nb", "quote-and-its-lazy-line"),
    case("a <!-- x --> b", "a  b", "comment-shows-nothing"),
    case("# `h\nb` c", "# `h\n\nb` c", "no-code-span-from-a-heading-into-a-paragraph"),
    case("- `a\n- b` c", "- `a\n\n- b` c", "no-code-span-from-one-item-into-the-next"),
]


@pytest.mark.parametrize(("body", "expected"), PROSE_CASES)
def test_prose(body, expected):
    assert prose(body) == expected


def subsequence(part: str, whole: str) -> bool:
    rest = iter(whole)
    return all(char in rest for char in part)


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from("ab `<>!-\\\n/#~"), max_size=40))
def test_prose_is_made_of_the_visible_lines(body):
    """Whatever the body, prose holds nothing but the visible lines' characters, in order (with BREAKs and line
    breaks between them)."""
    visible = "".join(line for _, line in visible_lines(body))
    assert subsequence(prose(body).replace(BREAK, "").replace("\n", ""), visible)


LINE_PIECES = st.sampled_from(
    [
        "> ",
        ">",
        "# ",
        "#",
        "- ",
        "* ",
        "1. ",
        "2. ",
        "-",
        "***",
        "___",
        "```",
        "~~~",
        "=",
        "x",
        "`",
        " ",
        "  ",
        "    ",
        "\t",
        "\n",
        "\n\n",
        "<!--",
        "-->",
        "<pre>",
        "</pre>",
        "<div>",
        "[x]",
        "/use 1",
    ]
)


@settings(max_examples=500, deadline=None)
@given(st.lists(LINE_PIECES, max_size=30).map("".join))
def test_the_shortcuts_read_lines_as_the_general_path_does(body):
    """Plain lines, quoted text, headings and bullets have shortcuts in `_Reader.feed`: with them switched off,
    every line goes through `_Reader._place`, and the visible lines and the prose are the same."""
    fast = list(visible_lines(body)), prose(body)
    with (
        mock.patch.object(markdown, "_BLOCK_START", re.compile("")),
        mock.patch.object(markdown, "BULLETS", frozenset()),
    ):
        assert (list(visible_lines(body)), prose(body)) == fast


def reference_without_code(text: str) -> str:
    """Code spans and `<code>`/`<pre>` elements as CommonMark reads them, the slow obvious way."""
    out, i = [], 0
    while i < len(text):
        escaped = i > 0 and text[i - 1] == "\\" and (len(text[:i]) - len(text[:i].rstrip("\\"))) % 2 == 1
        run = re.match(r"`+", text[i:])
        tag = re.match(r"<(pre|code)(?=[\s>])", text[i:], re.IGNORECASE)
        if run and not escaped:
            n = len(run.group())
            close = next((m.end() for m in re.finditer(r"`+", text[i + n :]) if len(m.group()) == n), None)
            if close is not None:
                out.append(BREAK)
                i += n + close
                continue
            out.append(run.group())
            i += n
            continue
        if tag and not escaped:
            closer = re.compile(rf"</{tag.group(1)}\s*>", re.IGNORECASE).search(text, i + tag.end())
            if closer is not None:
                out.append(BREAK)
                i = closer.end()
                continue
        if run:  # escaped: its first backtick is text, the rest may open a span
            out.append("`")
            i += 1
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


@settings(max_examples=1000, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "`",
                "``",
                "```",
                "\\",
                "a",
                " ",
                "\n",
                "<code>",
                "</code>",
                "<pre>",
                "</PRE>",
                "<code",
                "<pre ",
                "</code >",
            ]
        ),
        max_size=20,
    ).map("".join)
)
def test_code_is_found_as_commonmark_finds_it(text):
    assert markdown._without_code(text) == reference_without_code(text)


# -- the cheap test before prose -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (PHRASE, True),
        (PHRASE.upper(), True),
        ("have this reviewed: As I, a PR CODEOWNER and reviewer", True),  # words, not the phrase: prose decides
        (PHRASE.replace("CODEOWNER", "CODE**OWNER**"), True),  # emphasis inside a word
        (PHRASE.replace("reviewer", "re\u200bviewer"), True),  # an invisible character inside a word
        (PHRASE.replace("CODEOWNER", "CODE<!-- -->OWNER"), False),  # a comment inside a word: refused
        (PHRASE.replace("reviewed", "seen"), False),
        ("", False),
        (None, False),
    ],
)
def test_mentions(body, expected):
    assert mentions(body, PHRASE.casefold()) is expected


def test_mentions_needs_a_word():
    assert mentions("anything", " , ") is False


# -- the sign-off phrase: visible prose only ----------------------------------------------------

SIGNOFF_CASES = [
    case(f"{PHRASE}:\n- [x] one", True, "plain"),
    case(f"<!-- {PHRASE} -->", False, "html-comment"),
    case(f"<!--\n{PHRASE}\n-->", False, "multi-line-html-comment"),
    case(f"{PHRASE} <!-- unclosed", True, "text-before-an-unclosed-comment"),
    case(f"<!-- note -->\n{PHRASE}", True, "after-a-comment"),
    case(PHRASE.replace("PR ", "PR <!-- x --> "), True, "comment-inside-the-phrase-shows-nothing"),
    case(f"```\n{PHRASE}\n```", False, "fenced"),
    case(f"~~~md\n{PHRASE}\n~~~", False, "tilde-fenced"),
    case(f"- ```\n  {PHRASE}\n  ```", False, "fenced-in-a-list-item"),
    case(f"    {PHRASE}", False, "indented-code"),
    case(f"intro\n\n    {PHRASE}", False, "indented-code-after-a-paragraph"),
    case(f"intro\n    {PHRASE}", True, "indented-continuation-line"),
    case(f"1. intro\n\n    {PHRASE}", True, "inside-a-list-item"),
    case(f"- [x] a\n\n      {PHRASE}", False, "indented-code-inside-a-list-item"),
    case(f"`{PHRASE}`", False, "code-span"),
    case(f"`{PHRASE[:21]}\n{PHRASE[21:]}`", False, "code-span-over-two-lines"),
    case(PHRASE.replace("reviewed", "`reviewed`"), False, "partly-in-a-code-span"),
    case(f"\\`{PHRASE}\\`", True, "escaped-backticks-are-text"),
    case(f"<pre>\n{PHRASE}\n</pre>", False, "pre-block"),
    case(f"<pre>{PHRASE}</pre>", False, "pre-on-one-line"),
    case(f"<code>{PHRASE}</code>", False, "code-element"),
    case(f"Here: <code>{PHRASE}</code>", False, "inline-code-element"),
    case(f"<pre>\n</pre>\n{PHRASE}", True, "after-a-pre-block"),
    case(f"> {PHRASE}", False, "quote"),
    case(f"> Someone wrote\n{PHRASE}", False, "lazy-continuation-of-a-quote"),
    case(f"> {PHRASE[:21]}\n{PHRASE[21:]}", False, "phrase-continued-lazily"),
    case(f"> quoted\n\n{PHRASE}", True, "after-a-quote-and-a-blank-line"),
    case(f"- > {PHRASE}", False, "quote-in-a-list-item"),
    case(f"1. a\n\n   > {PHRASE}", False, "indented-quote-in-a-list-item"),
    case(f"## {PHRASE}", True, "heading"),
    case(f"<details>\n\n{PHRASE}\n\n</details>", True, "inside-details"),
    case(PHRASE.replace(" CODEOWNER", "\n\nCODEOWNER"), True, "across-paragraphs"),
    case(PHRASE.replace(" CODEOWNER", "\n```\nx\n```\nCODEOWNER"), False, "across-a-code-block"),
]


@pytest.mark.parametrize(("body", "expected"), SIGNOFF_CASES)
def test_the_phrase_counts_only_in_visible_prose(body, expected):
    """Regression (sign-off integrity): the phrase inside an HTML comment, code (fenced, indented,
    an inline code span, `<pre>`/`<code>`) or a quote's lazy continuation line made a sign-off; only `>` lines
    were left out."""
    assert has_phrase(body, PHRASE) is expected


# -- worst cases at GitHub's limit: right answers (speed is measured by bench/parsers.py) ------------

WORST_PHRASE_CASES = [
    case(fill("["), False, "brackets"),
    case(fill("[", PHRASE + "\n"), True, "phrase-then-brackets"),
    case(fill("![", PHRASE + "\n"), True, "phrase-then-image-openers"),
    case(fill("<http:", PHRASE + "\n"), True, "phrase-then-autolink-openers"),
    case(fill("`", PHRASE + "\n"), True, "phrase-then-backticks"),
    case(fill("` x", PHRASE + "\n"), True, "phrase-then-code-spans"),
    case(fill("` x", f"`{PHRASE} "), False, "phrase-in-a-code-span-then-more"),
    case(fill("<!--", PHRASE + "\n"), True, "phrase-then-comment-openers"),
    case(fill("<!--", "", PHRASE), False, "phrase-after-comment-openers"),
    case(fill("> x\n", PHRASE + "\n"), True, "phrase-then-quoted-lines"),
    case(fill("> x\n", "", PHRASE), False, "quoted-lines-then-lazy-phrase"),
    case(fill("> x\n", "", "\n" + PHRASE), True, "quoted-lines-then-phrase"),
    case(fill("- [ ] ", PHRASE + "\n"), True, "phrase-then-boxes"),
    case(fill("- [x] x\n", PHRASE + "\n"), True, "phrase-then-items"),
    case(fill("x\n", PHRASE + "\n"), True, "phrase-then-lines"),
    case(fill("\n", "", PHRASE), True, "empty-lines-then-phrase"),
    case(fill("<code>x</code> ", PHRASE + "\n"), True, "phrase-then-code-elements"),
    case(fill("<pre>\n", "", PHRASE), False, "pre-lines-then-phrase"),
    case(fill("ab ", PHRASE + " "), True, "one-giant-line"),
]


@pytest.mark.parametrize(("body", "expected"), WORST_PHRASE_CASES)
def test_the_phrase_in_worst_case_bodies_at_githubs_limit(body, expected):
    """Regression: a 65,536-character comment of `[` stalled the worker for 20 s in has_phrase."""
    assert len(body) <= LIMIT
    assert has_phrase(body, PHRASE) is expected


def test_prose_of_worst_case_bodies_keeps_their_text():
    brackets = fill("[")
    assert prose(brackets) == brackets
    assert prose(fill("x\n")) == fill("x\n").rstrip("\n")
    assert prose(fill("` x")).count(BREAK) == LIMIT // 3 // 2
    assert prose(fill("> x\n")) == ""
    assert prose(fill("<code>x</code>\n")) == ""  # each on its own line: a block
    assert prose(fill("<code>x</code> ", "x ")) == "x " + f"{BREAK} " * ((LIMIT - 2) // 15)  # inline elements
