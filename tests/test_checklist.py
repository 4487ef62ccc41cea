"""Tests for bot.checklist: template parsing, normalisation and sign-off comparison."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.checklist import Item, Template, TemplateProblem, compare, normalise, template_items

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "inferencex"
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
        ("the [PR_REVIEW_CHECKLIST.md](https://x) and `<PR_NUMBER>.md`", "the PR_REVIEW_CHECKLIST.md and <PR_NUMBER>.md"),
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
    ("in fence with CRLF", "```\r\n" + SMALL_SIGNOFF.replace("\n", "\r\n") + "\r\n```", "alice", True, [], [], [], "alice"),
    ("capital X and case of signer", SMALL_SIGNOFF.replace("[x]", "[X]"), "@ALICE", True, [], [], [], "alice"),
    ("bare login", SMALL_SIGNOFF.replace("@alice", "Alice"), "alice", True, [], [], [], "Alice"),
    (
        "links and emphasis do not matter",
        SMALL_SIGNOFF.replace("[guide](https://example.com/guide)", "*guide*")
        .replace("**all**", "all")
        .replace("with _evals_", "with **evals**"),
        "alice",
        True, [], [], [], "alice",
    ),
    (
        "nested item unticked",
        SMALL_SIGNOFF.replace("- [x] with _evals_", "- [ ] with _evals_"),
        "alice",
        False, [], ["with _evals_"], [], "alice",
    ),
    (
        "nested item missing",
        SMALL_SIGNOFF.replace("   - [x] with _evals_\n", ""),
        "alice",
        False, ["with _evals_"], [], [], "alice",
    ),
    (
        "continuation reworded",
        SMALL_SIGNOFF.replace("carefully, line by line.", "carefully, line by line"),
        "alice",
        False, [], [], ["Checked **all** the `configs` carefully, line by line."], "alice",
    ),
    ("wrong signer", SMALL_SIGNOFF, "bob", False, [], [], [], "alice"),
    ("not signed", SMALL_SIGNOFF.replace("Signed: @alice", ""), "alice", False, [], [], [], None),
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


def real_template(name: str, heading: str) -> tuple[Template, str]:
    if not DATA.is_dir():
        pytest.skip(f"{DATA} is absent: real checklists are not available")
    markdown = (DATA / name).read_text(encoding="utf-8")
    parsed = template_items(markdown, heading)
    assert isinstance(parsed, Template), parsed
    return parsed, ticked(block_of(markdown, heading))


@pytest.mark.parametrize(("name", "heading"), REAL)
def test_real_template_shape(name, heading):
    template, _ = real_template(name, heading)
    assert len(template.items) == (15 if name == "PR_REVIEW_CHECKLIST.md" else 14)
    assert [i.depth for i in template.items].count(1) == 1
    assert template.fields[-1] == "Signed: `FILL_IN_GITHUB_USERNAME`"
    assert all(i.text.startswith(("Verified", "For ", "If ", "I ")) for i in template.items)


@pytest.mark.parametrize(("name", "heading"), REAL)
def test_real_all_ticked_passes(name, heading):
    template, signoff = real_template(name, heading)
    for body in (signoff, "```\r\n" + signoff.replace("\n", "\r\n") + "\r\n```"):
        result = compare(template, body, "alice")
        assert result.ok, result
        assert result.signed_by == "alice"


@pytest.mark.parametrize(("name", "heading"), REAL)
def test_real_reworded_item_is_changed(name, heading):
    template, signoff = real_template(name, heading)
    target = template.items[1]
    body = signoff.replace("does not make the code quality any worse.", "does not make the code quality worse.")
    result = compare(template, body, "alice")
    assert not result.ok
    assert [item for item, _ in result.changed] == [target]
    assert result.changed[0][1].endswith("does not make the code quality worse.")
    assert result.missing == [] and result.unticked == []


@pytest.mark.parametrize(("name", "heading"), REAL)
def test_real_unticked_and_missing(name, heading):
    template, signoff = real_template(name, heading)
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
def test_real_links_and_emphasis_do_not_matter(name, heading):
    template, signoff = real_template(name, heading)
    body = (
        signoff.replace("[MODELS.md](https://github.com/SemiAnalysisAI/InferenceX/blob/main/MODELS.md)", "MODELS.md")
        .replace("Verified that the general", "**Verified** that the _general_")
        .replace("`<PR_NUMBER>.md`", "<PR_NUMBER>.md")
        .replace("evals.  Please", "evals. Please")
    )
    assert body != signoff
    assert compare(template, body, "alice").ok


@pytest.mark.parametrize(("name", "heading"), REAL)
def test_real_wrong_signer_fails(name, heading):
    template, signoff = real_template(name, heading)
    result = compare(template, signoff, "bob")
    assert not result.ok and not result.signed_ok
    assert result.signed_by == "alice"
    unsigned = compare(template, signoff.replace("@alice", "`FILL_IN_GITHUB_USERNAME`"), "alice")
    assert not unsigned.ok and not unsigned.signed_ok
