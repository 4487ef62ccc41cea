"""Table-driven tests of the slash-command grammar (bot/rules/commands.py)."""

import re

import pytest
from harness import COMMENT_LIMIT as LIMIT
from harness import fill
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from bot.core.config import default_policy
from bot.rules.commands import (
    COMMANDS,
    DEFAULT_NAMES,
    KINDS,
    NO_ARGUMENTS,
    RUN_ID_OPTIONAL,
    RUN_ID_REQUIRED,
    USAGE_PROBLEMS,
    Command,
    CommandLine,
    command_name_errors,
    find_commands,
    interpret,
    is_new_command,
    last_command,
    parse,
)

NAMES = {"use": "use", "reuse": "reuse-sweep-run", "stage": "stage-results", "merge": "merge", "help": "help"}
ALL = tuple(NAMES.values())
FENCE = "```"


def case(body, expected, id):
    return pytest.param(body, expected, id=id)


def summary(command: Command | None):
    """(kind, run_id, problem, line) or None, the shape the tables below expect."""
    if command is None:
        return None
    return command.kind, command.run_id, command.problem, command.source.line


# --- which line is the effective command --------------------------------------------------------

PARSE_CASES = [
    # plain commands and their arguments
    case("/use 123", ("use", 123, None, 1), "use-with-id"),
    case("/use", ("use", None, "use-needs-run-id", 1), "use-alone"),
    case("/use   ", ("use", None, "use-needs-run-id", 1), "use-trailing-spaces"),
    case("/use abc", ("use", None, "run-id-not-numeric", 1), "use-word"),
    case("/use #123", ("use", None, "run-id-not-numeric", 1), "use-hash-id"),
    case("/use 123.", ("use", None, "run-id-not-numeric", 1), "use-trailing-period"),
    case("/use 123,", ("use", None, "run-id-not-numeric", 1), "use-trailing-comma"),
    case("/use -5", ("use", None, "run-id-not-numeric", 1), "use-negative"),
    case("/use 1e3", ("use", None, "run-id-not-numeric", 1), "use-exponent"),
    case("/use <run_id>", ("use", None, "run-id-not-numeric", 1), "use-placeholder-pasted"),
    case("/use \uff11\uff12\uff13", ("use", None, "run-id-not-numeric", 1), "use-full-width-digits"),
    case("/use \u0661\u0662", ("use", None, "run-id-not-numeric", 1), "use-arabic-indic-digits"),
    case("/use \u00b2", ("use", None, "run-id-not-numeric", 1), "use-superscript-digit"),
    case("/use 0", ("use", None, "run-id-out-of-range", 1), "use-zero"),
    case("/use 000", ("use", None, "run-id-out-of-range", 1), "use-zeros"),
    case("/use 0042", ("use", 42, None, 1), "use-leading-zeros"),
    case("/use 25000000000", ("use", 25000000000, None, 1), "use-huge-id"),
    case("/use 9223372036854775807", ("use", 2**63 - 1, None, 1), "use-max-int64"),
    case("/use 9223372036854775808", ("use", None, "run-id-out-of-range", 1), "use-above-int64"),
    case("/use " + "9" * 5000, ("use", None, "run-id-out-of-range", 1), "use-5000-digits"),
    case("/use 123 please", ("use", None, "too-many-arguments", 1), "use-trailing-prose"),
    case("/use 1 2", ("use", None, "too-many-arguments", 1), "use-two-ids"),
    case("/use abc def", ("use", None, "too-many-arguments", 1), "use-two-words"),
    case("/reuse-sweep-run", ("reuse", None, None, 1), "legacy-alone-is-automatic"),
    case("/reuse-sweep-run 77", ("reuse", 77, None, 1), "legacy-with-id"),
    case("/reuse-sweep-run abc", ("reuse", None, "run-id-not-numeric", 1), "legacy-word"),
    case("/reuse-sweep-run 0", ("reuse", None, "run-id-out-of-range", 1), "legacy-zero"),
    case("/reuse-sweep-run 1 2", ("reuse", None, "too-many-arguments", 1), "legacy-two-ids"),
    case("/stage-results", ("stage", None, None, 1), "stage-alone"),
    case("/stage-results 9", ("stage", 9, None, 1), "stage-with-id"),
    case("/stage-results x", ("stage", None, "run-id-not-numeric", 1), "stage-word"),
    case("/stage-results 9 now", ("stage", None, "too-many-arguments", 1), "stage-too-many"),
    case("/help", ("help", None, None, 1), "help"),
    case("/help me with /use 1", ("help", None, None, 1), "help-ignores-arguments"),
    # names: case-insensitive, whole word only
    case("/Use 123", ("use", 123, None, 1), "capitalised"),
    case("/USE 123", ("use", 123, None, 1), "upper-case"),
    case("/Reuse-Sweep-Run", ("reuse", None, None, 1), "legacy-capitalised"),
    case("/user 123", None, "user-is-not-use"),
    case("/use123", None, "glued-id"),
    case("/use:1", None, "colon"),
    case("/use, 1", None, "comma-after-name"),
    case("/use.", None, "period-after-name"),
    case("/reuse 5", None, "reuse-is-not-configured"),
    case("/ use 1", None, "space-after-slash"),
    case("//use 1", None, "double-slash"),
    case("/", None, "lone-slash"),
    case("/u\u017fe 1", None, "long-s-is-not-s"),
    case("/\uff55se 1", None, "full-width-letter-in-name"),
    # position on the line
    case("   /use 1", ("use", 1, None, 1), "three-spaces"),
    case("    /use 1", None, "four-spaces-is-code"),
    case("\t/use 1", None, "tab-is-code"),
    case(" \t/use 1", None, "space-tab-is-code"),
    case("please /use 1", None, "mid-line"),
    case("- /use 1", None, "list-item"),
    case("# /use 1", None, "heading"),
    case("\\/use 1", None, "escaped-slash"),
    case("*/use 1*", None, "emphasis"),
    case("see /path/to/file\n/usr/bin/env", None, "paths-in-prose"),
    case("/path/to/file", None, "path-at-line-start"),
    case("/tmp 1\n/use 3", ("use", 3, None, 2), "unknown-word-then-command"),
    # whitespace and line endings
    case("/use\u00a0123", ("use", 123, None, 1), "nbsp-separator"),
    case("/use\u2003123", ("use", 123, None, 1), "em-space-separator"),
    case("/use\u3000123", ("use", 123, None, 1), "ideographic-space-separator"),
    case("\u00a0/use 5", ("use", 5, None, 1), "nbsp-indent"),
    case("\u00a0\u00a0\u00a0\u00a0/use 5", None, "four-nbsp-indent"),
    case("/use 123\u00a0", ("use", 123, None, 1), "trailing-nbsp"),
    case("/use\u200b123", None, "zero-width-space-glues"),
    case("/use 123\u200b", ("use", 123, None, 1), "trailing-zero-width-space"),
    case("\ufeff/use 4", ("use", 4, None, 1), "byte-order-mark"),
    case("thanks\r\n/use 5\r\n", ("use", 5, None, 2), "crlf"),
    case("thanks\r/use 5\r", ("use", 5, None, 2), "cr"),
    case("a\r\n\r\nb\r\n/use 5", ("use", 5, None, 4), "crlf-blank-lines-count"),
    case(None, None, "none-body"),
    case("", None, "empty-body"),
    case("\n\n  \n", None, "blank-body"),
    # several commands: the last wins
    case("/use 1\n/use 2", ("use", 2, None, 2), "last-wins"),
    case("/use 1\nprose\n/reuse-sweep-run", ("reuse", None, None, 3), "bare-legacy-after-pin"),
    case("/reuse-sweep-run\n/use 8", ("use", 8, None, 2), "pin-after-bare-legacy"),
    case("/use 1\n/use abc", ("use", None, "run-id-not-numeric", 2), "last-wins-even-if-invalid"),
    case("/use 1\n/help", ("help", None, None, 2), "help-last"),
    case("/use 1\n> /use 2", ("use", 1, None, 1), "quoted-later-command-ignored"),
    # fenced code
    case(f"{FENCE}\n/use 1\n{FENCE}", None, "backtick-fence"),
    case("~~~\n/use 1\n~~~", None, "tilde-fence"),
    case(f"{FENCE}\n/use 1\n{FENCE}\n/use 2", ("use", 2, None, 4), "command-after-fence"),
    case(f"{FENCE}sh\n/use 1\n{FENCE}\n/use 2", ("use", 2, None, 4), "fence-with-info"),
    case(f"{FENCE}\n/use 1", None, "unclosed-fence-runs-to-end"),
    case(f"{FENCE}\n/use 1\n~~~\n/use 2", None, "tilde-does-not-close-backticks"),
    case(f"~~~\n/use 1\n{FENCE}\n/use 2", None, "backticks-do-not-close-tilde"),
    case(f"````\n{FENCE}\n/use 1\n````\n/use 2", ("use", 2, None, 5), "shorter-fence-inside-longer"),
    case(f"{FENCE}\n/use 1\n`````\n/use 2", ("use", 2, None, 4), "longer-closing-fence"),
    case(f"{FENCE}\n/use 1\n{FENCE} x\n/use 2", None, "closing-fence-with-text-does-not-close"),
    case(f"{FENCE}\n/use 1\n   {FENCE}\n/use 2", ("use", 2, None, 4), "closing-fence-three-spaces"),
    case(f"{FENCE}\n/use 1\n    {FENCE}\n/use 2", None, "closing-fence-four-spaces-is-content"),
    case(f"   {FENCE}\n/use 1\n{FENCE}\n/use 2", ("use", 2, None, 4), "indented-opening-fence"),
    case(f"    {FENCE}\n/use 1", None, "deep-opening-fence-is-conservative"),
    case(f"    {FENCE}\n/use 1\n    {FENCE}\n/use 2", ("use", 2, None, 4), "deep-fence-closed-as-deep"),
    case(f"  {FENCE}\n/use 1\n    {FENCE}\n/use 2", None, "closing-fence-at-most-three-spaces-regardless"),
    case(f"- {FENCE}\n  /use 1\n  {FENCE}\n/use 2", ("use", 2, None, 4), "fence-in-list-item"),
    case(f"1. {FENCE}\n   /use 1", None, "unclosed-fence-in-numbered-item"),
    case("``\n/use 1", ("use", 1, None, 2), "two-backticks-is-not-a-fence"),
    case(f"{FENCE}x{FENCE}\n/use 1", ("use", 1, None, 2), "inline-triple-backticks-is-not-a-fence"),
    case("~~~x~~~\n/use 1\n~~~", None, "tilde-info-may-hold-tildes"),
    case(f"> {FENCE}\n> /use 1\n> {FENCE}\n/use 2", ("use", 2, None, 4), "fence-inside-quote"),
    case(f"> {FENCE}\n/use 1", ("use", 1, None, 2), "fence-inside-quote-does-not-leak"),
    case(f"{FENCE}\r\n/use 1\r\n{FENCE}\r\n/use 2\r\n", ("use", 2, None, 4), "fence-with-crlf"),
    # indented code, inline code, quotes
    case("text\n\n    /use 1\n", None, "indented-code-block"),
    case("`/use 1`", None, "inline-code"),
    case("`/use 1` then\n/use 2", ("use", 2, None, 2), "inline-code-then-command"),
    case("/use `1`", ("use", None, "run-id-not-numeric", 1), "id-in-backticks"),
    case("> /use 1", None, "quote"),
    case(">/use 1", None, "quote-without-space"),
    case("> > /use 1", None, "nested-quote"),
    case(">> /use 1", None, "nested-quote-compact"),
    case("   > /use 1", None, "indented-quote"),
    case("> quoted\n\n/use 3", ("use", 3, None, 3), "command-after-quote"),
    # HTML comments
    case("<!-- /use 1 -->", None, "html-comment"),
    case("<!--\n/use 1\n-->", None, "multi-line-html-comment"),
    case("<!--\n/use 1\n-->\n/use 2", ("use", 2, None, 4), "command-after-multi-line-comment"),
    case("<!-- a -->\n/use 2", ("use", 2, None, 2), "command-after-comment"),
    case("/use 1 <!-- pinned for the rerun -->", ("use", 1, None, 1), "trailing-comment"),
    case("<!-- x --> /use 1", ("use", 1, None, 1), "leading-comment"),
    case("/use <!-- x --> 1", ("use", 1, None, 1), "comment-between-name-and-id"),
    case("/use<!-- x -->1", None, "comment-glues-id"),
    case("<!--\n/use 1", None, "unclosed-comment-hides-rest"),
    case("/use 1\n<!--\n/use 2", ("use", 1, None, 1), "unclosed-comment-after-command"),
    case("<!-- -->\n<!--\n/use 1", None, "closed-then-unclosed"),
    case("<!-->\n/use 1\n-->", ("use", 1, None, 2), "empty-comment-closes-at-once"),
    case("<!--->\n/use 1\n-->", ("use", 1, None, 2), "empty-comment-with-a-dash-closes-at-once"),
    case("<!---->\n/use 1", ("use", 1, None, 2), "shortest-comment-with-a-body"),
    case("<!-->/use 1", ("use", 1, None, 1), "empty-comment-then-command"),
    case("/use 1 <!--->", ("use", 1, None, 1), "empty-comment-after-command"),
    case("<!-- -->\n<!--\n/use 1\n-->\n<!-->\n/use 2", ("use", 2, None, 6), "empty-comment-after-real-ones"),
    case("a <!--\n-->/use 1", None, "comment-joins-prose-and-command"),
    case("a <!--\n-->/use 1\nmore", None, "comment-joins-prose-and-command-mid-body"),
    case("<!--\n-->/use 1", ("use", 1, None, 1), "comment-at-line-start-then-command"),
    case("/use 1 <!--\n-->2", ("use", None, "too-many-arguments", 1), "comment-joins-lines"),
    case("<!-- a\nb\nc -->x\n/use 7", ("use", 7, None, 4), "line-numbers-kept-after-comment"),
    case("<!-- a\nb -->\n\n/use 7", ("use", 7, None, 4), "line-numbers-kept-after-comment-and-blank"),
    case("<!-- a --> <!--\nb -->\n/use 7", ("use", 7, None, 3), "two-comments-line-numbers"),
    case(f"<!--\n{FENCE}\n-->\n/use 2", ("use", 2, None, 4), "fence-inside-comment-ignored"),
    case("<!-- a -->\r\n/use 2\r\n", ("use", 2, None, 2), "comment-with-crlf"),
    # a realistic maintainer comment
    case(
        "Thanks! The earlier sweep was red because of the driver.\n\n"
        "> /use 111\n\n"
        f"{FENCE}\n/use 222\n{FENCE}\n\n"
        "Pinning the green one:\n/use 333\n",
        ("use", 333, None, 10),
        "realistic-comment",
    ),
]


@pytest.mark.parametrize(("body", "expected"), PARSE_CASES)
def test_parse(body, expected):
    assert summary(parse(body, NAMES)) == expected


# --- HTML comments count only outside code ----------------------------------------------------

CODE_COMMENT_CASES = [
    # a `<!--` in code is text: the real command below it counts
    case(f"{FENCE}\n<!--\n{FENCE}\n/use 123", ("use", 123, None, 4), "opener-in-fenced-block"),
    case(f"{FENCE}html\n<!-- TODO\n{FENCE}\n\nso:\n/use 123", ("use", 123, None, 6), "opener-in-html-fence"),
    case("~~~\n<!--\n~~~\n/use 123", ("use", 123, None, 4), "opener-in-tilde-fence"),
    case(f"- {FENCE}\n  <!--\n  {FENCE}\n/use 123", ("use", 123, None, 4), "opener-in-fence-in-list-item"),
    case(f"{FENCE}<!--\n{FENCE}\n/use 123", ("use", 123, None, 3), "opener-in-fence-info-string"),
    case(
        f"{FENCE}\n<!--\n{FENCE}\n/use 1\n{FENCE}\n-->\n{FENCE}\n/use 2",
        ("use", 2, None, 8),
        "closer-in-fenced-block-is-text-too",
    ),
    case("`<!--`\n/use 123", ("use", 123, None, 2), "opener-in-inline-code"),
    case("Write `<!--` to start a comment.\n/use 123", ("use", 123, None, 2), "opener-in-inline-code-in-prose"),
    case("``a <!-- ` b``\n/use 123", ("use", 123, None, 2), "opener-in-double-backtick-span"),
    case("`x` and `<!--` and `y`\n/use 123", ("use", 123, None, 2), "opener-in-second-span"),
    case("/use 123 `<!--`", ("use", None, "too-many-arguments", 1), "opener-in-span-after-command-is-an-argument"),
    case("\\<!--\n/use 123", ("use", 123, None, 2), "escaped-opener-is-text"),
    # a real HTML comment still hides what it holds, and an unclosed one the rest
    case(f"{FENCE}\n<!--\n{FENCE}\n<!-- /use 1 -->\n/use 2", ("use", 2, None, 5), "real-comment-after-fence"),
    case(f"{FENCE}\n<!--\n{FENCE}\n<!--\n/use 123", None, "unclosed-real-comment-after-fence-hides-rest"),
    case("`<!--`\n<!--\n/use 123\n-->", None, "real-comment-after-inline-code"),
    case("`x` <!--\n/use 123", None, "unclosed-comment-after-inline-code"),
    case("`<!-- no closing backtick\n/use 123", None, "lone-backtick-is-literal-comment-is-real"),
    case("`<!-- ``\n/use 123", None, "span-needs-a-closer-of-the-same-length"),
    case("<!-- ` -->\n/use 123", ("use", 123, None, 2), "backtick-inside-comment"),
    case("<!-- `\n/use 1\n` -->\n/use 2", ("use", 2, None, 4), "backticks-inside-comment-do-not-make-code"),
    case("<!-- `<!--` -->\n/use 2", ("use", 2, None, 2), "comment-ends-at-first-closer"),
    case("\\`<!--`\n/use 123", None, "escaped-backtick-opens-no-span"),
    case("\\\\<!--\n/use 123", None, "escaped-backslash-then-real-comment"),
    case(f"{FENCE}\n/use 1\n<!-- x -->{FENCE}\n/use 2", None, "closing-fence-must-stand-alone-on-its-line"),
    case("/use 5 <!--", ("use", 5, None, 1), "text-before-an-unclosed-comment-counts"),
    case(f"<!-- x -->{FENCE}\n/use 1\n{FENCE}\n/use 2", ("use", 2, None, 4), "fence-after-a-comment-still-opens"),
    case("<!-- a --><!--\n/use 1\n-->", None, "comment-right-after-a-comment"),
    case("`a`<!--\n/use 1\n-->", None, "comment-right-after-a-code-span"),
]


@pytest.mark.parametrize(("body", "expected"), CODE_COMMENT_CASES)
def test_an_html_comment_counts_only_outside_code(body, expected):
    """Regression: `<!--` inside a fenced code block or an inline code span started an HTML comment
    (`_strip_html_comments` ran before code was recognised) and hid a real `/use 123` written below it."""
    assert summary(parse(body, NAMES)) == expected


def test_an_empty_comment_closes_at_once():
    """Regression: `<!-->` and `<!--->` (whole comments in CommonMark) were read as openers whose `-->` had not
    come yet, so they hid the rest of the comment: a `/use 1` written below them never counted."""
    assert summary(parse("<!-->\n/use 1", NAMES)) == ("use", 1, None, 2)
    assert summary(parse("<!--->\n/use 1", NAMES)) == ("use", 1, None, 2)


# --- <pre> and <code> blocks --------------------------------------------------------------------

HTML_BLOCK_CASES = [
    case("<pre>\n/use 1\n</pre>", None, "pre-block"),
    case("<pre>\n/use 1\n</pre>\n/use 2", ("use", 2, None, 4), "command-after-pre-block"),
    case("<pre>/use 1</pre>", None, "pre-on-one-line"),
    case("<code>\n/use 1\n</code>", None, "code-block"),
    case("<code>/use 1</code>", None, "code-on-one-line"),
    case("<code>/use 1</code>\n/use 2", ("use", 2, None, 2), "command-after-code-on-one-line"),
    case("<PRE>\n/use 1\n</Pre>\n/use 2", ("use", 2, None, 4), "tags-ignore-case"),
    case('<pre class="x">\n/use 1\n</pre>', None, "tag-with-attributes"),
    case("<pre\n/use 1\n</pre>", None, "tag-name-at-end-of-line"),
    case("   <pre>\n/use 1\n</pre>", None, "three-spaces-before-tag"),
    case("    <pre>\n/use 1", ("use", 1, None, 2), "four-spaces-is-indented-code-not-a-block"),
    case("<pre>\n/use 1", None, "unclosed-block-runs-to-end"),
    case("<pre>\n</pre>/use 1", None, "closing-line-belongs-to-block"),
    case("<pre>\n/use 1\n</pre >\n/use 2", ("use", 2, None, 4), "closing-tag-with-space"),
    case("<pre>\n/use 1\n</code>\n/use 2", None, "the-other-closing-tag-does-not-close"),
    case("<preview>\n/use 1", ("use", 1, None, 2), "longer-tag-name-is-not-pre"),
    case("<codex>\n/use 1", ("use", 1, None, 2), "longer-tag-name-is-not-code"),
    case("text <pre>\n/use 1", ("use", 1, None, 2), "tag-not-at-line-start"),
    case("<pre>\n```\n</pre>\n/use 2", ("use", 2, None, 4), "fence-inside-pre-is-text"),
    case("```\n<pre>\n```\n/use 2", ("use", 2, None, 4), "pre-inside-fence-is-text"),
    case("<!-- <pre> -->\n/use 1", ("use", 1, None, 2), "pre-inside-comment-is-nothing"),
    case("`<pre>`\n/use 1", ("use", 1, None, 2), "pre-in-code-span-is-text"),
    case("<!-- x --><pre>\n/use 1\n</pre>\n/use 2", ("use", 2, None, 4), "pre-after-comment-opens"),
]


@pytest.mark.parametrize(("body", "expected"), HTML_BLOCK_CASES)
def test_pre_and_code_blocks_are_not_commands(body, expected):
    """Regression: a `/use` inside an HTML `<pre>` or `<code>` block (or `<pre>/use 1</pre>` on one line) counted,
    though GitHub shows it as code. A block opens on a line starting (after at most 3 spaces) with the tag and lasts
    to the line holding its closing tag."""
    assert summary(parse(body, NAMES)) == expected


# --- lazy continuation of a quote ----------------------------------------------------------------

LAZY_CASES = [
    case("> quoted\n/use 12", None, "lazy-line"),
    case("> quoted\ntext\n/use 12", None, "lazy-lines"),
    case("> quoted\n\n/use 12", ("use", 12, None, 3), "blank-line-ends-quote"),
    case("> quoted\n>\n/use 12", ("use", 12, None, 3), "empty-quote-line-ends-paragraph"),
    case("> quoted\n> \n/use 12", ("use", 12, None, 3), "quote-marker-and-space-ends-paragraph"),
    case("> a\nb\n\n/use 12", ("use", 12, None, 4), "blank-after-lazy-lines"),
    # a line that interrupts a paragraph is not lazy
    case("> quoted\n```\n/use 1\n```\n/use 12", ("use", 12, None, 5), "fence-interrupts"),
    case("> quoted\n~~~\n/use 1\n~~~\n/use 12", ("use", 12, None, 5), "tilde-fence-interrupts"),
    case("> quoted\n# heading\n/use 12", ("use", 12, None, 3), "heading-interrupts"),
    case("> quoted\n#hashtag\n/use 12", None, "hash-without-space-is-no-heading"),
    case("> quoted\n---\n/use 12", ("use", 12, None, 3), "thematic-break-interrupts"),
    case("> quoted\n***\n/use 12", ("use", 12, None, 3), "star-break-interrupts"),
    case("> quoted\n- item\n/use 12", ("use", 12, None, 3), "list-item-interrupts"),
    case("> quoted\n1. item\n/use 12", ("use", 12, None, 3), "numbered-item-from-one-interrupts"),
    case("> quoted\n2. item\n/use 12", None, "numbered-item-from-two-does-not-interrupt"),
    case("> quoted\n-\n/use 12", None, "empty-item-does-not-interrupt"),
    case("> quoted\n 2. item\n/use 12", None, "indented-numbered-item-from-two-does-not-interrupt"),
    case("> quoted\n -\n/use 12", None, "indented-empty-item-does-not-interrupt"),
    case("> quoted\n - item\n/use 12", ("use", 12, None, 3), "indented-list-item-interrupts"),
    case("> quoted\n<div>\n/use 12", ("use", 12, None, 3), "html-block-interrupts"),
    case("> quoted\n<span>\n/use 12", None, "inline-tag-does-not-interrupt"),
    case("> quoted\n<!-- x -->\n/use 12", ("use", 12, None, 3), "comment-line-interrupts"),
    case("> quoted\n<!-- x --> /use 12", ("use", 12, None, 2), "comment-at-line-start-interrupts"),
    case("> quoted\n  <!-- x -->\n/use 12", ("use", 12, None, 3), "indented-comment-line-interrupts"),
    case("> quoted\n<pre>\n/use 1\n</pre>\n/use 12", ("use", 12, None, 5), "pre-block-interrupts"),
    case("> quoted\n===\n/use 12", None, "setext-underline-cannot-be-lazy"),
    # what the quote holds: only a paragraph has lazy lines
    case("> ```\n> x\n/use 12", ("use", 12, None, 3), "fence-in-quote-has-no-lazy-lines"),
    case("> ```\n# h\n> ```\n> y\n/use 12", ("use", 12, None, 5), "fence-in-quote-ends-with-the-quote"),
    case("> ```\n # h\n> ```\n> y\n/use 12", ("use", 12, None, 5), "fence-in-quote-ends-with-the-quote-indented"),
    case("> # title\n/use 12", ("use", 12, None, 2), "heading-in-quote-has-no-lazy-lines"),
    case(">     code\n/use 12", ("use", 12, None, 2), "indented-code-in-quote-has-no-lazy-lines"),
    case("> <pre>\n/use 12", ("use", 12, None, 2), "html-block-in-quote-has-no-lazy-lines"),
    case("> - item\n/use 12", None, "item-in-quote-has-lazy-lines"),
    case("> > nested\n/use 12", None, "nested-quote-has-lazy-lines"),
    case("- > quoted\n/use 12", None, "quote-in-list-item-has-lazy-lines"),
    case("> quoted <!--\n-->\n/use 12", None, "comment-closed-in-lazy-line"),
]


@pytest.mark.parametrize(("body", "expected"), LAZY_CASES)
def test_a_lazy_continuation_of_a_quote_is_quoted(body, expected):
    """Regression: `> quoted` then `/use 12` on the next line ran the command, though CommonMark renders that line
    inside the quote (paragraph continuation text). A blank or `>`-only line ends the paragraph; a line that
    interrupts a paragraph (fence, heading, thematic break, HTML block, list item) is not lazy."""
    assert summary(parse(body, NAMES)) == expected


def test_visible_text_keeps_code_spans_whole():
    body = "/use 7 `<!--` <!-- note -->\n"
    assert find_commands(body, ALL) == [CommandLine("use", ("7", "`<!--`"), 1, "/use 7 `<!--`")]


# --- worst cases at GitHub's limit (65,536 characters): right answers (speed: bench/parsers.py) --------------


WORST_CASES = [
    case(fill("["), [], "brackets"),
    case(fill("![", suffix="\n/use 1"), [("use", ("1",), 2)], "image-openers"),
    case(fill("<http:", suffix="\n/use 1"), [("use", ("1",), 2)], "autolink-openers"),
    case(fill("`", suffix="\n/use 1"), [], "backticks-open-a-fence"),
    case(fill("`", suffix=" x\n/use 1"), [], "backticks-open-a-fence-with-info"),
    case(fill("` x", suffix="\n/use 1"), [("use", ("1",), 2)], "code-spans"),
    case(fill("<!--", suffix="\n/use 1"), [], "comment-openers-never-closed"),
    case(fill("<!-->", suffix="\n/use 1"), [("use", ("1",), 2)], "empty-comments"),
    case(fill("<!-- -->\n", suffix="/use 1"), [("use", ("1",), (LIMIT - 6) // 9 + 1)], "comment-lines"),
    case(fill("<!-- \n", suffix="/use 1"), [], "comment-lines-never-closed"),
    case("x<!--\n" + fill("-->x<!--\n", suffix="-->/use 1")[6:], [], "comment-reopened-on-every-line"),
    case(fill("\\`\\<!--", suffix="\n/use 1"), [("use", ("1",), 2)], "escapes"),
    case(fill(">", suffix="\n/use 1"), [("use", ("1",), 2)], "empty-nested-quotes-have-no-lazy-line"),
    case(fill(">", suffix=" x\n/use 1"), [], "nested-quotes-then-lazy-line"),
    case(fill("> x\n", suffix="/use 1"), [], "quoted-lines-then-lazy-line"),
    case(fill("> x\n", suffix="\n/use 1"), [("use", ("1",), (LIMIT - 7) // 4 + 2)], "quoted-lines-then-blank"),
    case(fill("- [ ] ", suffix="\n/use 1"), [("use", ("1",), 2)], "boxes-on-one-line"),
    case(fill("- [ ] x\n", suffix="/use 1"), [("use", ("1",), (LIMIT - 6) // 8 + 1)], "item-lines"),
    case(("- " * ((LIMIT - 10) // 2)) + "```\n/use 1", [], "fence-under-32-thousand-list-markers"),
    case(fill("<pre>\n", suffix="/use 1"), [], "pre-lines-never-closed"),
    case(fill("ab ", suffix="\n/use 1"), [("use", ("1",), 2)], "one-giant-line"),
    case(fill("\n", suffix="/use 1"), [("use", ("1",), LIMIT - 5)], "empty-lines"),
    case(fill("/use 1\n"), [("use", ("1",), n) for n in range(1, LIMIT // 7 + 1)], "a-command-on-every-line"),
    case("/use " + "9" * (LIMIT - 5), [("use", ("9" * (LIMIT - 5),), 1)], "a-65-thousand-digit-run-id"),
]


@pytest.mark.parametrize(("body", "expected"), WORST_CASES)
def test_worst_case_bodies_at_githubs_limit(body, expected):
    """Regression: bodies built to be expensive, at GitHub's 65,536-character limit, read right."""
    assert len(body) <= LIMIT
    assert [(c.name, c.args, c.line) for c in find_commands(body, ALL)] == expected


# --- every command line, in order ---------------------------------------------------------------

FIND_CASES = [
    case(
        "/use 1\ntext\n/Use 2 3\n/help",
        [("use", ("1",), 1), ("use", ("2", "3"), 3), ("help", (), 4)],
        "all-in-order",
    ),
    case(
        "/reuse-sweep-run\n/stage-results 4",
        [("reuse-sweep-run", (), 1), ("stage-results", ("4",), 2)],
        "legacy-and-stage",
    ),
    case("  /use  1\u00a0 2  ", [("use", ("1", "2"), 1)], "args-split-on-any-whitespace"),
    case(f"{FENCE}\n/use 1\n{FENCE}\n> /use 2\n\n/use 3", [("use", ("3",), 6)], "only-the-real-one"),
    case("nothing here", [], "no-commands"),
]


@pytest.mark.parametrize(("body", "expected"), FIND_CASES)
def test_find_commands(body, expected):
    assert [(c.name, c.args, c.line) for c in find_commands(body, ALL)] == expected


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        pytest.param(["use"], [("use", 1)], id="only-use"),
        pytest.param(["help"], [("help", 3)], id="only-help"),
        pytest.param(["reuse-sweep-run"], [("reuse-sweep-run", 2)], id="only-legacy"),
        pytest.param([], [], id="no-names"),
        pytest.param(iter(["use", "help"]), [("use", 1), ("help", 3)], id="names-as-iterator"),
        pytest.param(["/USE"], [("use", 1)], id="configured-name-normalised"),
    ],
)
def test_find_commands_ignores_names_not_passed(names, expected):
    body = "/use 1\n/reuse-sweep-run\n/help\n/stage-results"
    assert [(c.name, c.line) for c in find_commands(body, names)] == expected


def test_command_line_fields():
    body = "hi\r\n  /Use\u00a0 42   <!-- note -->  \r\n"
    assert find_commands(body, ALL) == [CommandLine(name="use", args=("42",), line=2, text="/Use\u00a0 42")]


def test_last_command():
    body = "/use 1\n/stage-results\n> /use 3"
    assert last_command(body, ALL) == CommandLine("stage-results", (), 2, "/stage-results")
    assert last_command("no command", ALL) is None
    assert last_command(None, ALL) is None


# --- names configured differently ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("names", "body", "expected"),
    [
        pytest.param({"use": "pin", "reuse": "reuse"}, "/pin 5", ("use", 5, None, 1), id="renamed-use"),
        pytest.param({"use": "pin", "reuse": "reuse"}, "/use 5", None, id="default-name-no-longer-known"),
        pytest.param({"use": "pin", "reuse": "reuse"}, "/reuse", ("reuse", None, None, 1), id="renamed-reuse"),
        pytest.param({"use": "use"}, "/help", None, id="help-not-configured"),
        pytest.param({"use": "/Use"}, "/use 5", ("use", 5, None, 1), id="configured-with-slash-and-case"),
        pytest.param({"use": "pick"}, "/pic\u212a 5", None, id="kelvin-sign-is-not-k"),
    ],
)
def test_configured_names(names, body, expected):
    assert summary(parse(body, names)) == expected


@pytest.mark.parametrize(
    "names",
    [
        pytest.param({"use": "use", "reuse": "USE"}, id="same-name-twice"),
        pytest.param({"pin": "use"}, id="unknown-kind"),
        pytest.param({"use": ""}, id="empty-name"),
        pytest.param({"use": "/"}, id="slash-only"),
        pytest.param({"use": "use run"}, id="name-with-space"),
    ],
)
def test_bad_configuration_raises(names):
    with pytest.raises(ValueError):
        parse("/use 1", names)


def test_interpret_rejects_unconfigured_line():
    with pytest.raises(ValueError):
        interpret(CommandLine("deploy", (), 1, "/deploy"), NAMES)


# --- problems ------------------------------------------------------------------------------------


def test_usage_problems_are_exactly_those_produced():
    produced = {expected[2] for _, expected in (p.values for p in PARSE_CASES) if expected and expected[2]}
    assert produced == USAGE_PROBLEMS
    assert all(isinstance(p, str) and p == p.strip().lower() for p in USAGE_PROBLEMS)


def test_valid_commands_have_no_problem_and_invalid_no_run_id():
    for param in PARSE_CASES:
        command = parse(param.values[0], NAMES)
        if command is not None and command.problem is not None:
            assert command.run_id is None, param.id
        if command is not None and command.kind == "use" and command.problem is None:
            assert command.run_id is not None and command.run_id >= 1, param.id


# --- edits ----------------------------------------------------------------------------------------

EDIT_CASES = [
    case(("/use 1\nthanks", "/use 1\nthanks a lot"), False, "prose-only-edit"),
    case(("thanks", "thanks\n/use 1"), True, "command-added"),
    case((None, "/use 1"), True, "no-old-body"),
    case(("/use 1", "/use 2"), True, "id-changed"),
    case(("/use 1", "/use 1\n\nedit: typo"), False, "prose-added-after-command"),
    case(("/use 1", "thanks"), False, "command-removed"),
    case(("/use 1", ""), False, "body-emptied"),
    case(("/use 1", "/Use  1"), False, "same-command-retyped"),
    case(("/use 1", "some prose\n/use 1"), False, "same-command-moved-down"),
    case(("/use 1", "/reuse-sweep-run 1"), True, "kind-changed-same-id"),
    case(("/reuse-sweep-run 5", "/reuse-sweep-run"), True, "pin-to-automatic"),
    case(("/use", "/use 5"), True, "problem-fixed"),
    case(("/use 5", "/use five"), True, "problem-introduced"),
    case(("/use abc", "/use xyz"), False, "same-problem-different-text"),
    case(("/use 1", "/use 1\n/use 2"), True, "second-command-appended"),
    case(("/use 1\n/use 2", "/use 2"), False, "earlier-line-deleted"),
    case(("/use 1", f"{FENCE}\n/use 1\n{FENCE}"), False, "command-fenced-off"),
    case((f"{FENCE}\n/use 1\n{FENCE}", "/use 1"), True, "command-unfenced"),
    case(("/use 1", "/use 1 <!-- done -->"), False, "comment-added"),
    case(("<!-- /use 1 -->", "/use 1"), True, "comment-removed"),
    case(("/use 1\r\n", "/use 1\n"), False, "line-endings-changed"),
]


@pytest.mark.parametrize(("bodies", "expected"), EDIT_CASES)
def test_is_new_command(bodies, expected):
    old, new = bodies
    assert is_new_command(parse(old, NAMES), parse(new, NAMES)) is expected


# --- the command registry -------------------------------------------------------------------------


def test_the_registry_is_the_list_of_kinds_and_default_names():
    assert KINDS == tuple(spec.kind for spec in COMMANDS) == ("use", "reuse", "stage", "merge", "help")
    assert DEFAULT_NAMES == NAMES
    assert default_policy().commands.names() == DEFAULT_NAMES  # app.yaml names every command of the registry


ARGUMENT_RULES = {  # what the bare command, one run id and two run ids give, per argument rule
    RUN_ID_REQUIRED: [(None, "use-needs-run-id"), (5, None), (None, "too-many-arguments")],
    RUN_ID_OPTIONAL: [(None, None), (5, None), (None, "too-many-arguments")],
    NO_ARGUMENTS: [(None, None), (None, None), (None, None)],
}


@pytest.mark.parametrize("spec", COMMANDS, ids=lambda spec: spec.kind)
def test_each_command_follows_the_argument_rule_of_its_registry_entry(spec):
    name = "/" + spec.default_name
    got = [parse(body, NAMES) for body in (name, f"{name} 5", f"{name} 5 6")]
    assert [command.kind for command in got] == [spec.kind] * 3
    assert [(command.run_id, command.problem) for command in got] == ARGUMENT_RULES[spec.run_id]


NOT_A_WORD = "is not a command word: a lower-case ASCII letter, then lower-case ASCII letters, digits or dashes"


@pytest.mark.parametrize(
    ("names", "errors"),
    [
        pytest.param(NAMES, [], id="defaults"),
        pytest.param({**NAMES, "use": "pin-2", "help": "commands"}, [], id="renamed"),
        pytest.param(
            {**NAMES, "use": "\u4f7f\u7528"}, [f"commands.use: '\u4f7f\u7528' {NOT_A_WORD}"], id="chinese-name"
        ),
        pytest.param({**NAMES, "use": "USE"}, [f"commands.use: 'USE' {NOT_A_WORD}"], id="upper-case"),
        pytest.param({**NAMES, "use": "/use"}, [f"commands.use: '/use' {NOT_A_WORD}"], id="with-slash"),
        pytest.param({**NAMES, "use": "use run"}, [f"commands.use: 'use run' {NOT_A_WORD}"], id="space"),
        pytest.param({**NAMES, "use": "pin_run"}, [f"commands.use: 'pin_run' {NOT_A_WORD}"], id="underscore"),
        pytest.param({**NAMES, "use": "2use"}, [f"commands.use: '2use' {NOT_A_WORD}"], id="leading-digit"),
        pytest.param({**NAMES, "use": "-use"}, [f"commands.use: '-use' {NOT_A_WORD}"], id="leading-dash"),
        pytest.param({**NAMES, "use": "pic\u212a"}, [f"commands.use: 'pic\u212a' {NOT_A_WORD}"], id="kelvin-sign"),
        pytest.param({**NAMES, "use": ""}, [f"commands.use: '' {NOT_A_WORD}"], id="empty"),
        pytest.param({**NAMES, "use": 5}, [f"commands.use: 5 {NOT_A_WORD}"], id="number"),
        pytest.param(
            {**NAMES, "reuse": "use"}, ["commands.reuse: 'use' is also the name of commands.use"], id="shared-name"
        ),
        pytest.param(
            {"use": "use", "reuse": "reuse-sweep-run", "stage": "stage-results", "merge": "merge"},
            ["commands.help: missing: every command needs a name"],
            id="missing-kind",
        ),
        pytest.param(
            {**NAMES, "deploy": "deploy"},
            ["commands.deploy: unknown command; the commands are use, reuse, stage, merge, help"],
            id="unknown-kind",
        ),
        pytest.param(
            {"use": "USE", "reuse": "help", "help": "help", "pin": "pin"},
            [
                "commands.stage: missing: every command needs a name",
                "commands.merge: missing: every command needs a name",
                f"commands.use: 'USE' {NOT_A_WORD}",
                "commands.help: 'help' is also the name of commands.reuse",
                "commands.pin: unknown command; the commands are use, reuse, stage, merge, help",
            ],
            id="every-problem-at-once",
        ),
    ],
)
def test_command_name_errors(names, errors):
    assert command_name_errors(names) == errors


@pytest.mark.parametrize("name", ["use", "pin-2", "a", "x-"], ids=lambda name: name)
def test_a_name_the_check_accepts_is_one_the_grammar_reads(name):
    names = {**NAMES, "use": name}
    assert command_name_errors(names) == []
    assert summary(parse(f"/{name} 7", names)) == ("use", 7, None, 1)


@pytest.mark.parametrize("name", ["\u4f7f\u7528", "use.x", "pin_run", "2use"], ids=lambda name: name)
def test_a_name_the_check_refuses_the_grammar_refuses_too(name):
    """Regression: `commands: {use: \u4f7f\u7528}` passed the config check and then failed every comment delivery."""
    names = {**NAMES, "use": name}
    assert command_name_errors(names) != []
    with pytest.raises(ValueError, match="invalid command name"):
        parse("/help", names)


# -- properties: what is quoted or fenced never runs (hypothesis) --------------------------------------


NAMES = {"use": "use", "reuse": "reuse-sweep-run", "stage": "stage-results", "merge": "merge", "help": "help"}
# Bodies made of the characters that matter to the grammar, with real command lines mixed in.
PIECES = st.sampled_from(
    [
        "/use 123",
        "/reuse-sweep-run",
        "/help",
        "/stage-results 9",
        "```",
        "~~~",
        "`",
        ">",
        "<!--",
        "-->",
        "<!-->",
        "<!--->",
        "<pre>",
        "</pre>",
        "<code>",
        "</code>",
        "<div>",
        "#",
        "---",
        "    ",
        "\t",
        "\n",
        "\r\n",
        "\r",
        " ",
        "text",
        "- ",
        "1. ",
        "2. ",
    ]
)
BODIES = st.lists(PIECES | st.text(max_size=8), max_size=25).map("".join)


def fenced(body: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{body}\n{fence}\n"


def quoted(body: str) -> str:
    return "\n".join("> " + line for line in re.split(r"\r\n|\r|\n", body)) + "\n"


@settings(max_examples=400, deadline=None)
@given(BODIES)
def test_a_fenced_body_never_yields_a_command(body):
    assert find_commands(fenced(body), NAMES.values()) == []


@settings(max_examples=400, deadline=None)
@given(BODIES)
def test_a_quoted_body_never_yields_a_command(body):
    assert find_commands(quoted(body), NAMES.values()) == []


@settings(max_examples=300, deadline=None)
@given(BODIES, st.sampled_from(["pre", "code", "PRE"]))
def test_a_body_in_a_pre_or_code_block_never_yields_a_command(body, tag):
    assume(f"</{tag.lower()}" not in body.lower())
    assert find_commands(f"<{tag}>\n{body}\n</{tag}>\n", NAMES.values()) == []


# A quoted paragraph line, then lines that continue it (none blank, none interrupting), then a command.
WORDS = st.text(
    st.characters(
        blacklist_categories=["Cs"],  # a list: mypy infers ("Cs",) as tuple[str]
        blacklist_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029",
    ),
    max_size=12,
)
PARAGRAPH_LINE = st.builds(lambda word, rest: word + rest, st.sampled_from(["a", "Text", "x,", "é", "/use 5"]), WORDS)


@settings(max_examples=400, deadline=None)
@given(PARAGRAPH_LINE, st.lists(PARAGRAPH_LINE, max_size=4), st.sampled_from(["/use 123", "/help", "  /stage-results"]))
def test_a_lazy_continuation_line_never_yields_a_command(first, lazy, command):
    body = "\n".join([f"> {first}", *lazy, command])
    assert find_commands(body, NAMES.values()) == []


def test_the_properties_are_not_vacuous():
    assert find_commands("/use 123", NAMES.values()) and find_commands("x\n/use 1\n", NAMES.values())
    assert find_commands("<pre>\nx\n</pre>\n/use 1", NAMES.values())
    assert find_commands("> a\n\n/use 123", NAMES.values())
