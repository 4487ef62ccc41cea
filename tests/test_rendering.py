"""Every comment template as GitHub shows it (issue 28): each sample of tests/test_templates.py rendered in both
languages by cmark-gfm, GitHub's own Markdown parser (tests/rendered.py), must show no Markdown left as text."""

from __future__ import annotations

import pytest

from rendered import render_problems, to_html, visible_text
from test_templates import KINDS, TEMPLATES, halves, samples

LANGUAGES = ("en", "zh")

# Template/language pairs whose text is known not to render today, each with why; strict, so the mark must go
# once the text is fixed. Empty: every template renders.
RENDER_XFAIL: dict[tuple[str, str], str] = {}


def pairs(xfail: dict[tuple[str, str], str]) -> list:
    return [pytest.param(kind, language, id=f"{kind}-{language}",
                         marks=[pytest.mark.xfail(strict=True, reason=xfail[kind, language])]
                         if (kind, language) in xfail else [])
            for kind in KINDS for language in LANGUAGES]


@pytest.mark.parametrize(("kind", "language"), pairs(RENDER_XFAIL))
def test_every_template_renders_as_meant_on_github(kind, language):
    """Regression (issue 28): the Chinese welcome wrote `**Changelog：**在`; a closing `**` after full-width
    punctuation and before a CJK letter is not right-flanking, so GitHub showed the asterisks. Every sample of
    every template, in each language, is rendered by cmark-gfm and must leave no `**`/`__`, no link as text, no
    empty link address and no stray backtick."""
    found = []
    for number, sample in enumerate(samples(kind)):
        half = halves(TEMPLATES.render(kind, **sample))[LANGUAGES.index(language)]
        found.extend(f"sample {number}: {problem}" for problem in render_problems(half))
    assert found == []


@pytest.mark.parametrize(("markdown", "problem"), [
    ("1. **Changelog：**在 `x` 末尾追加", "bold"),  # the welcome's bug: not right-flanking before 在
    ("**注意**：这条评论", None),  # closed after a letter: bold
    ("- ✅ **检查：** 通过", None),  # full-width colon, then a space: bold
    ("snake__case__name stays", "bold"),
    ("see [the run] (https://x.example)", "link"),
    ("see [the run](https://x.example", "link"),
    ("see [the run]()", "empty"),
    ("[the run](<>)", "empty"),
    ("an `unclosed span", "backtick"),
    ("a ``span with ` inside`` is fine, **bold** too, [a link](https://x.example) as well", None),
    ("```\n**code** [a](b\n```", None),  # code blocks are meant as written
], ids=["cjk-bold", "cjk-bold-ok", "cjk-bold-space", "underscores", "space-before-paren", "unclosed-paren",
        "empty-href", "empty-angle-href", "stray-backtick", "all-fine", "code-block"])
def test_the_render_check_finds_each_kind_of_left_over_markdown(markdown, problem):
    problems = render_problems(markdown)
    words = {"bold": "bold", "link": "link left as text", "empty": "empty address", "backtick": "backtick"}
    if problem is None:
        assert problems == []
    else:
        assert problems and all(words[problem] in p for p in problems), problems


def test_the_renderer_is_githubs_with_its_extensions():
    html = to_html("| a |\n| - |\n| b |\n\n~~gone~~ https://x.example\n\n- [x] done\n\n<script>x</script>\n")
    assert "<table>" in html and "<del>gone</del>" in html and '<a href="https://x.example">' in html
    assert 'type="checkbox"' in html and "&lt;script>" in html  # tasklist; tagfilter disarms the tag


def test_visible_text_leaves_out_comments_and_collapsed_details():
    markdown = ("<!-- sweepbot:x -->\n**Next:**   do   [this](https://x.example).\n\n<details>\n<summary>More</summary>"
                "\n\nHidden **text**.\n\n<details>\n<summary>Inner</summary>\n\nDeeper.\n</details>\n\n</details>\n\n"
                "<details open>\n<summary>Open</summary>\n\nShown.\n\n</details>\n\n`a  b`\n")
    assert visible_text(markdown) == "Next: do this. More Open Shown. a b"
