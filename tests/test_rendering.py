"""Every comment template as GitHub shows it: each sample of tests/test_templates.py rendered in both
languages by cmark-gfm, GitHub's own Markdown parser (tests/rendered.py), must show no Markdown left as text; and
the Chinese texts use the one term templates/GLOSSARY.md gives for each thing."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from rendered import prose_text, render_problems, to_html, visible_text
from test_templates import KINDS, TEMPLATES, halves, samples

from bot.core.templates import DEFAULT_DIRECTORY

LANGUAGES = ("en", "zh")

# Template/language pairs whose text is known not to render today, each with why; strict, so the mark must go
# once the text is fixed. Empty: every template renders.
RENDER_XFAIL: dict[tuple[str, str], str] = {}


def pairs(xfail: dict[tuple[str, str], str]) -> list:
    return [
        pytest.param(
            kind,
            language,
            id=f"{kind}-{language}",
            marks=[pytest.mark.xfail(strict=True, reason=xfail[kind, language])] if (kind, language) in xfail else [],
        )
        for kind in KINDS
        for language in LANGUAGES
    ]


@pytest.mark.parametrize(("kind", "language"), pairs(RENDER_XFAIL))
def test_every_template_renders_as_meant_on_github(kind, language):
    """Regression: the Chinese welcome wrote `**Changelog：**在`; a closing `**` after full-width
    punctuation and before a CJK letter is not right-flanking, so GitHub showed the asterisks. Every sample of
    every template, in each language, is rendered by cmark-gfm and must leave no `**`/`__`, no link as text, no
    empty link address and no stray backtick."""
    found = []
    for number, sample in enumerate(samples(kind)):
        half = halves(TEMPLATES.render(kind, **sample))[LANGUAGES.index(language)]
        found.extend(f"sample {number}: {problem}" for problem in render_problems(half))
    assert found == []


@pytest.mark.parametrize(
    ("markdown", "problem"),
    [
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
    ],
    ids=[
        "cjk-bold",
        "cjk-bold-ok",
        "cjk-bold-space",
        "underscores",
        "space-before-paren",
        "unclosed-paren",
        "empty-href",
        "empty-angle-href",
        "stray-backtick",
        "all-fine",
        "code-block",
    ],
)
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
    markdown = (
        "<!-- sweepbot:x -->\n**Next:**   do   [this](https://x.example).\n\n<details>\n<summary>More</summary>"
        "\n\nHidden **text**.\n\n<details>\n<summary>Inner</summary>\n\nDeeper.\n</details>\n\n</details>\n\n"
        "<details open>\n<summary>Open</summary>\n\nShown.\n\n</details>\n\n`a  b`\n"
    )
    assert visible_text(markdown) == "Next: do this. More Open Shown. a b"


# --- the glossary (templates/GLOSSARY.md) ------------------------------------------------------------------------

GLOSSARY = DEFAULT_DIRECTORY / "GLOSSARY.md"
_JINJA = re.compile(r"\{#.*?#\}|\{%.*?%\}|\{\{.*?\}\}", re.S)
_TAG = re.compile(r"<[^>]*>")


@dataclass(frozen=True)
class Term:
    english: str
    chinese: str
    variants: tuple[str, ...]  # words the Chinese texts must not use for it


def glossary() -> list[Term]:
    """The glossary's table: one Term a row (English | 中文 | Use | Not, the last as code spans)."""
    rows = [line for line in GLOSSARY.read_text(encoding="utf-8").splitlines() if line.startswith("| ")]
    assert rows[0].split("|")[1:5] == [" English ", " 中文 ", " Use ", " Not "], rows[0]
    terms = []
    for row in rows[2:]:
        english, chinese, _use, avoid = (cell.strip() for cell in row.split("|")[1:5])
        terms.append(Term(english, chinese, tuple(re.findall(r"`([^`]+)`", avoid))))
    return terms


def variant_pattern(word: str) -> re.Pattern:
    """An English word as a whole word (not inside `stage-results` or `Commit suggestion`: case counts), a Chinese
    one anywhere."""
    if word.isascii():
        return re.compile(rf"(?<![A-Za-z0-9_/-]){re.escape(word)}(?![A-Za-z0-9_-])")
    return re.compile(re.escape(word))


def chinese_texts() -> dict[str, list[str]]:
    """Every Chinese text a reader meets, as words: each comment kind's samples rendered by cmark-gfm (code left
    out), and the titles and web pages from their source (Jinja and HTML tags left out)."""
    texts = {
        kind: [prose_text(halves(TEMPLATES.render(kind, **sample))[1]) for sample in samples(kind)] for kind in KINDS
    }
    for path in sorted([*DEFAULT_DIRECTORY.glob("*.zh.txt.j2"), *DEFAULT_DIRECTORY.glob("*.zh.html.j2")]):
        texts[path.name] = [_TAG.sub(" ", _JINJA.sub(" ", path.read_text(encoding="utf-8")))]
    return texts


def variants_in(text: str, terms: list[Term]) -> list[str]:
    found = []
    for term in terms:
        glossed = text
        for variant in term.variants:  # 固定（pin）: the English after the Chinese term is a gloss, allowed
            glossed = glossed.replace(f"{term.chinese}（{variant}）", term.chinese)
        for variant in term.variants:
            for hit in variant_pattern(variant).finditer(glossed):
                found.append(
                    f"{variant!r} for {term.english!r} ({term.chinese}): "
                    f"…{glossed[max(0, hit.start() - 20) : hit.end() + 20]}…"
                )
    return found


# Chinese texts that use a word the glossary rules out, today: others are rewriting them, or they predate it.
GLOSSARY_XFAIL = {
    "changelog_suggestions": "says `commit` where the glossary has 提交",
    "changelog_suggestions_outdated": "says `commit` where the glossary has 提交",
    "config_invalid": "says `commit` where the glossary has 提交",
    "default_branch_changelog": "says `commit` where the glossary has 提交",
    "sweep_status": "says `commit` (and `merge commit`) where the glossary has 提交 (in _gate_reason.zh.j2)",
    "help": "says 这次运行 for a run (the glossary keeps `run`)",
}
CHINESE_TEXTS = sorted(
    [
        *KINDS,
        *(p.name for p in DEFAULT_DIRECTORY.glob("*.zh.txt.j2")),
        *(p.name for p in DEFAULT_DIRECTORY.glob("*.zh.html.j2")),
    ]
)


def test_the_glossary_lists_each_term_once_with_one_chinese_term():
    terms = glossary()
    assert len(terms) >= 20
    assert len({t.english for t in terms}) == len(terms) and len({t.chinese for t in terms}) == len(terms)
    for term in terms:
        assert term.chinese and "/" not in term.chinese and "、" not in term.chinese, term
        assert term.chinese not in term.variants, term


def test_every_chinese_term_of_the_glossary_is_used():
    everything = " ".join(text for texts in chinese_texts().values() for text in texts)
    assert [t.chinese for t in glossary() if t.chinese not in everything] == []


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(
            name, marks=[pytest.mark.xfail(strict=True, reason=GLOSSARY_XFAIL[name])] if name in GLOSSARY_XFAIL else []
        )
        for name in CHINESE_TEXTS
    ],
)
def test_no_chinese_text_uses_a_word_the_glossary_rules_out(name):
    """One Chinese term per thing. The texts said 固定 for a pin in one place and left `pin` as it was in
    another; the welcome said `head commit` and 这次运行 for a run. A word in the glossary's last column may not
    appear in any Chinese text (outside code); each xfail above is a text to bring in line."""
    terms = glossary()
    found = [problem for text in chinese_texts()[name] for problem in variants_in(text, terms)]
    assert sorted(set(found)) == []


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("有 run 被 pin 或取消 pin", ["'pin'", "'pin'"]),
        ("用 `/use` 固定（pin）一个 run", []),
        ("请求结果服务暂存（stage）这个 run", []),
        ("`/stage-results` 重新暂存", []),
        ('点击 "Commit suggestion"', []),
        ("推送一个新的 commit", ["'commit'"]),
        ("这次运行没有结果", ["'这次运行'"]),
    ],
)
def test_the_variant_check_reads_words_not_parts_of_names(text, found):
    problems = variants_in(prose_text(text), glossary())
    assert [problem.split(" for ")[0] for problem in problems] == found
