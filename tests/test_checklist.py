"""Tests for bot.rules.checklist: template parsing, normalisation and sign-off comparison."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from harness import COMMENT_LIMIT as LIMIT
from harness import fill
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.rules.checklist import MAX_CANDIDATES, Item, Template, TemplateProblem, compare, normalise, template_items

REAL = [("PR_REVIEW_CHECKLIST.md", "## Template"), ("PR_REVIEW_CHECKLIST_zh.md", "## 模板")]

SMALL = """# Checklist

## Template
````markdown
As a PR reviewer and CODEOWNER, I have reviewed this and have:
- [ ] Read the [guide](https://example.com/guide).
* [ ] Checked **all** the `configs`
  carefully, line by line.
1. [ ] Ran the sweep:
   - [ ] on `main`
     and on the PR head
   - [ ] with _evals_

Signed: `FILL_IN_GITHUB_USERNAME`
````
"""


def small() -> Template:
    parsed = template_items(SMALL)
    assert isinstance(parsed, Template)
    return parsed


def ticked(block: str, signer: str = "@alice") -> str:
    body = block.replace("[ ]", "[x]")
    return body.replace("`FILL_IN_GITHUB_USERNAME`", signer)


def block_of(markdown: str, heading: str) -> str:
    """The text inside the fenced block under heading (what a reviewer copies)."""
    lines = markdown.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(heading)) + 2
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("```"))
    return "\n".join(lines[start:end])


SMALL_SIGNOFF = ticked(block_of(SMALL.replace("````markdown", "```").replace("````", "```"), "## Template"))


def test_template_items_depth_continuation_and_fields():
    parsed = small()
    assert [(i.line, i.depth, i.text) for i in parsed.items] == [
        (6, 0, "Read the [guide](https://example.com/guide)."),
        (7, 0, "Checked **all** the `configs` carefully, line by line."),
        (9, 0, "Ran the sweep:"),
        (10, 1, "on `main` and on the PR head"),
        (12, 1, "with _evals_"),
    ]
    assert parsed.items[1].normalised == "Checked all the configs carefully, line by line."
    assert parsed.fields == (
        "As a PR reviewer and CODEOWNER, I have reviewed this and have:",
        "Signed: `FILL_IN_GITHUB_USERNAME`",
    )


@pytest.mark.parametrize(
    ("markdown", "reason"),
    [
        ("# Nothing here\n", "not found"),
        ("## Template\nsome prose\n```\n- [ ] a\n```\n", "no fenced code block"),
        ("## Template\n```\n- [ ] a\n", "not closed"),
        ("## Template\n~~~\njust text\n~~~\n", "no checklist items"),
    ],
)
def test_template_problems(markdown, reason):
    parsed = template_items(markdown)
    assert isinstance(parsed, TemplateProblem)
    assert reason in parsed.reason


def test_tilde_fence_and_custom_heading():
    parsed = template_items("## Vorlage (bitte kopieren)\n\n~~~~\n- [ ] one\n~~~\n- [ ] two\n~~~~\n", "## Vorlage")
    assert isinstance(parsed, Template)
    assert [i.text for i in parsed.items] == ["one", "two"]  # a shorter fence does not close


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("  a \t b\n c ", "a b c"),
        ("**bold** and *it* and _it_ and __b__ and ~~gone~~", "bold and it and it and b and gone"),
        ("see [MODELS.md](https://x/MODELS.md) now", "see MODELS.md now"),
        ("run `git apply` here", "run git apply here"),
        ("Case Kept.", "Case Kept."),
        # regression: underscores inside a word were stripped as emphasis (PRREVIEWCHECKLIST.md in a verdict)
        (
            "the [PR_REVIEW_CHECKLIST.md](https://x) and `<PR_NUMBER>.md`",
            "the PR_REVIEW_CHECKLIST.md and <PR_NUMBER>.md",
        ),
        ("![alt](img.png) <https://a.b/c>", "alt https://a.b/c"),
    ],
)
def test_normalise(raw, expected):
    assert normalise(raw) == expected


def _names(items: list[Item]) -> list[str]:
    return [i.text for i in items]


CASES = [
    # (id, sign-off body, signer, ok, missing, unticked, changed-item, signed_by)
    ("all ticked", SMALL_SIGNOFF, "alice", True, [], [], [], "alice"),
    (
        "in fence with CRLF",
        "```\r\n" + SMALL_SIGNOFF.replace("\n", "\r\n") + "\r\n```",
        "alice",
        True,
        [],
        [],
        [],
        "alice",
    ),
    ("capital X and case of signer", SMALL_SIGNOFF.replace("[x]", "[X]"), "@ALICE", True, [], [], [], "alice"),
    ("bare login", SMALL_SIGNOFF.replace("@alice", "Alice"), "alice", True, [], [], [], "Alice"),
    (
        "links and emphasis do not matter",
        SMALL_SIGNOFF.replace("[guide](https://example.com/guide)", "*guide*")
        .replace("**all**", "all")
        .replace("with _evals_", "with **evals**"),
        "alice",
        True,
        [],
        [],
        [],
        "alice",
    ),
    (
        "nested item unticked",
        SMALL_SIGNOFF.replace("- [x] with _evals_", "- [ ] with _evals_"),
        "alice",
        False,
        [],
        ["with _evals_"],
        [],
        "alice",
    ),
    (
        "nested item missing",
        SMALL_SIGNOFF.replace("   - [x] with _evals_\n", ""),
        "alice",
        False,
        ["with _evals_"],
        [],
        [],
        "alice",
    ),
    (
        "continuation reworded",
        SMALL_SIGNOFF.replace("carefully, line by line.", "carefully, line by line"),
        "alice",
        False,
        [],
        [],
        ["Checked **all** the `configs` carefully, line by line."],
        "alice",
    ),
    ("wrong signer", SMALL_SIGNOFF, "bob", False, [], [], [], "alice"),
    ("not signed", SMALL_SIGNOFF.replace("Signed: @alice", ""), "alice", False, [], [], [], None),
    ("signed in bold", SMALL_SIGNOFF.replace("Signed:", "__Signed__:"), "alice", True, [], [], [], "alice"),
    ("signed with a long s", SMALL_SIGNOFF.replace("Signed:", "\u017figned:"), "alice", True, [], [], [], "alice"),
    ("signed in an item", SMALL_SIGNOFF.replace("Signed:", "- [x] Signed:"), "alice", True, [], [], [], "alice"),
]


@pytest.mark.parametrize(
    ("body", "signer", "ok", "missing", "unticked", "changed", "signed_by"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_compare_table(body, signer, ok, missing, unticked, changed, signed_by):
    result = compare(small(), body, signer)
    assert result.ok is ok
    assert _names(result.missing) == missing
    assert _names(result.unticked) == unticked
    assert [item.text for item, _ in result.changed] == changed
    assert result.signed_by == signed_by
    assert result.signed_ok is (signed_by is not None and signed_by.lower() == signer.lstrip("@").lower())


def real_template(data: Path, name: str, heading: str) -> tuple[Template, str]:
    markdown = (data / name).read_text(encoding="utf-8")
    parsed = template_items(markdown, heading)
    assert isinstance(parsed, Template), parsed
    return parsed, ticked(block_of(markdown, heading))


@pytest.mark.parametrize(("name", "heading"), REAL)
def test_real_template_shape(real_data, name, heading):
    template, _ = real_template(real_data, name, heading)
    assert len(template.items) == (15 if name == "PR_REVIEW_CHECKLIST.md" else 14)
    assert [i.depth for i in template.items].count(1) == 1
    assert template.fields[-1] == "Signed: `FILL_IN_GITHUB_USERNAME`"
    assert all(i.text.startswith(("Verified", "For ", "If ", "I ")) for i in template.items)


@pytest.mark.parametrize(("name", "heading"), REAL)
def test_real_all_ticked_passes(real_data, name, heading):
    template, signoff = real_template(real_data, name, heading)
    for body in (signoff, "```\r\n" + signoff.replace("\n", "\r\n") + "\r\n```"):
        result = compare(template, body, "alice")
        assert result.ok, result
        assert result.signed_by == "alice"


@pytest.mark.parametrize(("name", "heading"), REAL)
def test_real_reworded_item_is_changed(real_data, name, heading):
    template, signoff = real_template(real_data, name, heading)
    target = template.items[1]
    body = signoff.replace("does not make the code quality any worse.", "does not make the code quality worse.")
    result = compare(template, body, "alice")
    assert not result.ok
    assert [item for item, _ in result.changed] == [target]
    assert result.changed[0][1].endswith("does not make the code quality worse.")
    assert result.missing == [] and result.unticked == []


@pytest.mark.parametrize(("name", "heading"), REAL)
def test_real_unticked_and_missing(real_data, name, heading):
    template, signoff = real_template(real_data, name, heading)
    nested = next(i for i in template.items if i.depth == 1)
    lines = signoff.split("\n")
    lines = [line.replace("[x]", "[ ]") if nested.text in line else line for line in lines]
    # Drop item 9 entirely: item 10 is similar, but it is matched exactly, so 9 is missing.
    ninth = template.items[8]
    lines = [line for line in lines if ninth.text not in line]
    result = compare(template, "\n".join(lines), "alice")
    assert not result.ok
    assert result.unticked == [nested]
    assert result.missing == [ninth]
    assert result.changed == []


@pytest.mark.parametrize(("name", "heading"), REAL)
def test_real_links_and_emphasis_do_not_matter(real_data, name, heading):
    template, signoff = real_template(real_data, name, heading)
    body = (
        signoff.replace("[MODELS.md](https://github.com/SemiAnalysisAI/InferenceX/blob/main/MODELS.md)", "MODELS.md")
        .replace("Verified that the general", "**Verified** that the _general_")
        .replace("`<PR_NUMBER>.md`", "<PR_NUMBER>.md")
        .replace("evals.  Please", "evals. Please")
    )
    assert body != signoff
    assert compare(template, body, "alice").ok


@pytest.mark.parametrize(("name", "heading"), REAL)
def test_real_wrong_signer_fails(real_data, name, heading):
    template, signoff = real_template(real_data, name, heading)
    result = compare(template, signoff, "bob")
    assert not result.ok and not result.signed_ok
    assert result.signed_by == "alice"
    unsigned = compare(template, signoff.replace("@alice", "`FILL_IN_GITHUB_USERNAME`"), "alice")
    assert not unsigned.ok and not unsigned.signed_ok


# -- normalise: linear, and as before on ordinary text ---------------------------------------------

# The regexes normalise used before they were made linear (quadratic on `[` x N, `![` x N, `<http:` x N): the
# reference for ordinary text, where a link's label and URL hold no bracket and an autolink no `<`.
OLD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
OLD_REF = re.compile(r"\[([^\]]*)\]\[[^\]]*\]")
OLD_AUTOLINK = re.compile(r"<((?:https?|mailto):[^>\s]*)>")
OLD_EMPHASIS = re.compile(r"\*+|(?<![A-Za-z0-9])_+|_+(?![A-Za-z0-9])|~~|`+")


def old_normalise(text: str) -> str:
    text = OLD_AUTOLINK.sub(r"\1", OLD_REF.sub(r"\1", OLD_LINK.sub(r"\1", text)))
    return re.sub(r"\s+", " ", OLD_EMPHASIS.sub("", text)).strip()


ORDINARY = st.lists(
    st.sampled_from(
        [
            "word",
            "Verified",
            " ",
            "  ",
            "\t",
            "\n",
            ".",
            ",",
            "(",
            ")",
            "!",
            "]",
            ">",
            ":",
            "-",
            "a_b",
            "_x_",
            "__b__",
            "*",
            "**",
            "~~",
            "`code`",
            "``",
            "[label](https://x/y)",
            "![alt](img.png)",
            "[guide](https://e.com/a_(b))",
            "[ref][r]",
            "[x]",
            "[ ]",
            "<https://a.b/c>",
            "<mailto:a@b>",
            "https://hub.docker.com/u/vllm",
            "\u00a0",
            "é",
            "模板",
        ]
    ),
    max_size=30,
).map(" ".join)  # words and links in prose, a space between them


@settings(max_examples=500, deadline=None)
@given(ORDINARY)
def test_normalise_gives_what_it_gave_before_on_ordinary_text(text):
    """Regression: the linear link regexes read ordinary text as the old quadratic ones did."""
    assert normalise(text) == old_normalise(text)


def test_the_real_templates_normalise_as_before(real_data):
    for name, heading in REAL:
        template, signoff = real_template(real_data, name, heading)
        for item in template.items:
            assert item.normalised == old_normalise(item.text)
        for line in signoff.split("\n"):
            assert normalise(line) == old_normalise(line)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("[a [b](c)", "[a b"),  # a label holds no bracket: the inner link is the link
        ("[x](u[v) y", "[x](u[v) y"),  # nor does a URL
        ("<http://a<http://b>", "<http://ahttp://b"),  # nor an autolink a `<`
    ],
)
def test_normalise_where_it_differs_from_before(raw, expected):
    """What the linear regexes read otherwise than the old ones: brackets inside a link, `<` inside an autolink
    (CommonMark allows neither in an autolink; a nested label is rare in a checklist)."""
    assert normalise(raw) == expected


@pytest.mark.parametrize(
    ("piece", "expected"),
    [
        pytest.param("[", "[", id="brackets"),
        pytest.param("![", "![", id="image-openers"),
        pytest.param("<http:", "<http:", id="autolink-openers"),
        pytest.param("[a](", "[a](", id="link-openers"),
        pytest.param("[a][", "[a][", id="reference-openers"),
        pytest.param("[a](b)", "a", id="links"),
        pytest.param("<http://x>", "http://x", id="autolinks"),
        pytest.param("`", "", id="backticks"),
        pytest.param("_a ", "a ", id="underscores"),
        pytest.param("_a", "_a", id="underscores-inside-words"),
        pytest.param(" \n\t", "", id="whitespace"),
    ],
)
def test_normalise_worst_cases_at_githubs_limit(piece, expected):
    """Regression: `[` x 65,536 took 28 s in normalise (IMAGE_OR_LINK_RE and REF_LINK_RE rescanned
    to the end from every `[`, AUTOLINK_RE from every `<http:`)."""
    raw = fill(piece)
    assert len(raw) <= LIMIT
    expected = " ".join((expected * (LIMIT // len(piece))).split())
    assert normalise(raw) == (expected[1:] if piece == "_a" else expected)  # but the first `_`: it opens no word


# -- compare: bounded --------------------------------------------------------------------------------


def test_a_reworded_item_is_found_among_many_unmatched_items():
    body = SMALL_SIGNOFF.replace(
        "- [x] with _evals_",
        "- [x] with the evals\n" + "".join(f"- [x] unrelated remark number {i}\n" for i in range(10)),
    )
    result = compare(small(), body, "alice")
    assert [(item.text, written) for item, written in result.changed] == [("with _evals_", "with the evals")]


def test_only_the_first_unmatched_items_are_candidates():
    """The search for a reworded item looks at the first MAX_CANDIDATES distinct unmatched items only."""
    filler = "".join(f"- [x] unrelated remark number {i}\n" for i in range(MAX_CANDIDATES))
    reworded = SMALL_SIGNOFF.replace("- [x] with _evals_\n", "").replace("Signed:", "- [x] with the evals\nSigned:")
    result = compare(small(), filler + reworded, "alice")
    assert result.changed == [] and _names(result.missing) == ["with _evals_"]
    repeated = "- [x] unrelated remark\n" * (2 * MAX_CANDIDATES)  # one distinct item, however often
    assert [item.text for item, _ in compare(small(), repeated + reworded, "alice").changed] == ["with _evals_"]


def test_a_reworded_item_written_as_a_plain_line_is_missing():
    """Only checklist items are candidates for a reworded item: a line without its box is not one."""
    body = SMALL_SIGNOFF.replace("   - [x] with _evals_", "with _evals_ too")
    result = compare(small(), body, "alice")
    assert _names(result.missing) == ["with _evals_"] and result.changed == []


def test_the_rewording_is_shown_as_first_written():
    """Items that normalise alike are one candidate: the verdict quotes the first as written."""
    body = SMALL_SIGNOFF.replace("- [x] with _evals_", "- [x] with **the** evals\n   - [x] with the evals")
    assert [w for _, w in compare(small(), body, "alice").changed] == ["with **the** evals"]


def test_the_most_alike_candidate_is_the_rewording_and_ties_go_to_the_first():
    body = SMALL_SIGNOFF.replace(
        "- [x] with _evals_", "- [x] with evals, maybe\n   - [x] with the evals\n   - [x] with some evals"
    )
    assert [w for _, w in compare(small(), body, "alice").changed] == ["with the evals"]


def real_signoff_body(items: list[str]) -> str:
    return "As a PR reviewer and CODEOWNER, I have reviewed this and have:\n" + "\n".join(items)


SIGNOFF_WORST = [
    pytest.param(fill("["), id="brackets"),
    pytest.param(fill("!["), id="image-openers"),
    pytest.param(fill("- [ ] "), id="boxes-on-one-line"),
    pytest.param(fill("- [x] x\n"), id="item-lines"),
    pytest.param(fill("x\n"), id="lines"),
    pytest.param(fill("\n"), id="empty-lines"),
    pytest.param(fill("  more\n", "- [x] item\n"), id="one-item-continued-on-every-line"),
    pytest.param(fill("> x\n"), id="quoted-lines"),
]


@pytest.mark.parametrize("body", SIGNOFF_WORST)
def test_compare_worst_cases_at_githubs_limit(body):
    """Regression: compare ran difflib over every unmatched line x every template item (`[` x 65,536
    took minutes); now only unmatched items, the first MAX_CANDIDATES of them, the most alike MAX_RATIOS."""
    assert len(body) <= LIMIT
    template = small()
    result = compare(template, body, "alice")
    assert not result.ok and result.unticked == [] and result.changed == []
    assert result.missing == list(template.items)


@pytest.mark.parametrize(("name", "heading"), REAL)
def test_compare_worst_real_sign_offs_at_githubs_limit(real_data, name, heading):
    """Near-copies of every real item again and again (each close to one, none equal), shuffled copies, and one
    huge item: the answers stay right."""
    template, signoff = real_template(real_data, name, heading)
    texts = [item.text for item in template.items]
    near = real_signoff_body([f"- [x] {text} {n}" for n in range(200) for text in texts])[:LIMIT]
    result = compare(template, near, "alice")
    assert [item for item, _ in result.changed] == list(template.items)
    assert all(written == f"{item.text} 0" for item, written in result.changed)
    shuffled = real_signoff_body([f"- [x] {' '.join(reversed(text.split()))}" for _ in range(30) for text in texts])
    result = compare(template, shuffled[:LIMIT], "alice")
    assert result.changed == [] and result.missing == list(template.items)
    huge = fill(" ".join(texts) + " ", "- [x] ")
    assert compare(template, huge, "alice").missing == list(template.items)
    assert compare(template, signoff + "\n" + fill("- [x] x\n", suffix="")[: LIMIT - len(signoff) - 1], "alice").ok


@pytest.mark.parametrize(
    "block",
    [
        pytest.param(fill("- [ ] x\n"), id="items"),
        pytest.param(fill("  more\n", "- [ ] item\n"), id="one-item-continued-on-every-line"),
        pytest.param(fill("["), id="brackets"),
        pytest.param(fill("x\n", "- [ ] item\n"), id="fields"),
    ],
)
def test_template_items_worst_cases(block):
    """Regression: continuation lines were joined by copying the item's text again for every line, and
    every item's text went through the quadratic normalise."""
    parsed = template_items(f"## Template\n```\n{block}\n```\n")
    if block.startswith("["):
        assert isinstance(parsed, TemplateProblem)
        return
    assert isinstance(parsed, Template)
    lines = block.rstrip("\n").split("\n")
    items = [line for line in lines if line.startswith("- [ ]")]
    assert len(parsed.items) == len(items)
    if block.startswith("- [ ] item\n  more"):
        assert parsed.items[0].text == "item" + " more" * (len(lines) - 1)
    assert len(parsed.fields) == len(lines) - len(items) - (len(lines) - 1 if "  more" in block else 0)
