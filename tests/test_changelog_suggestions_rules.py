"""Two pure rules of the changelog's checks: the one-click fixes (bot/rules/changelog/suggestions.py) and the
PR each non-canonical default-branch link belongs to (bot/rules/changelog/default_branch_links.py)."""

from __future__ import annotations

import pytest

from bot.rules.changelog import check_append, validate_default_branch
from bot.rules.changelog.default_branch_links import (
    BadLink,
    bad_links,
    first_new_line,
    links_record,
    push_may_change,
    pushed_pr,
    remembered_links,
)
from bot.rules.changelog.errors import ChangelogError
from bot.rules.changelog.suggestions import Suggestion, safe_line, suggestions

PREFIX = "https://github.com/acme/InferenceX/pull/"
BASE = "- config-keys:\n    - a\n  description:\n    - d\n  pr-link: https://github.com/acme/InferenceX/pull/1\n"
ENTRY = "- config-keys:\n    - b\n  description:\n    - x\n"
LINK7 = f"  pr-link: {PREFIX}7"


def applied(text: str, found: list[Suggestion]) -> str:
    """`text` with each suggestion applied, as GitHub commits it (every line it writes ends with a newline)."""
    lines = text.split("\n")
    ends = lines[-1] == ""
    if ends:
        lines.pop()
    for s in sorted(found, key=lambda s: s.start_line, reverse=True):
        lines[s.start_line - 1 : s.line] = list(s.lines)
    return "\n".join(lines) + "\n"


# (name, the PR's file, the suggestions expected as (start_line, line, lines))
CASES = [
    ("not accepted", BASE + "\n" + ENTRY + "  pr-link: TBD\n", [(11, 11, (LINK7,))]),
    ("another PR's number", BASE + "\n" + ENTRY + f"  pr-link: {PREFIX}8\n", [(11, 11, (LINK7,))]),
    ("trailing spaces", BASE + "\n" + ENTRY + "  pr-link: XXX   \n", [(11, 11, (LINK7,))]),
    ("spaces after the colon", BASE + "\n" + ENTRY + "  pr-link:   XXX\n", [(11, 11, (LINK7,))]),
    ("text after the link", BASE + "\n" + ENTRY + "  pr-link: XXX # soon\n", [(11, 11, (LINK7,))]),
    ("the value on the next line", BASE + "\n" + ENTRY + "  pr-link:\n    XXX\n", [(11, 12, (LINK7,))]),
    (
        "first key of the entry",
        BASE + "\n- pr-link: TBD\n  config-keys:\n    - b\n  description:\n    - x\n",
        [(7, 7, (f"- pr-link: {PREFIX}7",))],
    ),
    ("no final newline", BASE + "\n" + ENTRY + "  pr-link: XXX", [(11, 11, ("  pr-link: XXX",))]),
    ("extra blank lines at the end", BASE + "\n" + ENTRY + "  pr-link: XXX\n\n  \n", [(12, 13, ())]),
    ("no separator line", BASE + ENTRY + "  pr-link: XXX\n", [(6, 6, ("", "- config-keys:"))]),
    ("two separator lines", BASE + "\n\n" + ENTRY + "  pr-link: XXX\n", [(7, 7, ())]),
    (
        "several at once",
        BASE + ENTRY + "  pr-link: TBD\n\n" + ENTRY + "  pr-link: XXX  \n\n",
        [(6, 6, ("", "- config-keys:")), (10, 10, (LINK7,)), (16, 16, (LINK7,)), (17, 17, ())],
    ),
]


@pytest.mark.parametrize("name, head, expected", CASES, ids=[c[0] for c in CASES])
def test_each_fixable_error_gets_its_one_fix_and_the_fixed_file_passes(name, head, expected):
    errors = check_append(BASE.encode(), head.encode(), pr_number=7, canonical_prefix=PREFIX).errors
    assert errors, "the case must hold an error"
    found = suggestions(errors, head.encode(), pr_number=7, canonical_prefix=PREFIX)
    assert [(s.start_line, s.line, s.lines) for s in found] == expected
    fixed = applied(head, found)
    assert check_append(BASE.encode(), fixed.encode(), pr_number=7, canonical_prefix=PREFIX).ok, fixed


# (name, the PR's file): errors with no one obvious fix get no suggestion
UNFIXABLE = [
    ("a flow mapping", BASE + "\n- {config-keys: [b], description: [x], pr-link: TBD}\n"),
    ("a block scalar link", BASE + "\n" + ENTRY + "  pr-link: |\n    XXX\n"),
    ("a missing field", BASE + "\n- config-keys:\n    - b\n  pr-link: XXX\n"),
    ("history changed", BASE.replace("- a", "- z") + "\n" + ENTRY + "  pr-link: XXX\n"),
    ("a fence in the last line", BASE + "\n" + ENTRY + "  pr-link: XXX\n  # ```"),
    (
        "a fence in the entry's first line",
        BASE + "- config-keys: # ```\n    - b\n  description:\n    - x\n  pr-link: XXX\n",
    ),
]


@pytest.mark.parametrize("name, head", UNFIXABLE, ids=[c[0] for c in UNFIXABLE])
def test_errors_without_one_obvious_fix_get_none(name, head):
    errors = check_append(BASE.encode(), head.encode(), pr_number=7, canonical_prefix=PREFIX).errors
    assert errors
    assert suggestions(errors, head, pr_number=7, canonical_prefix=PREFIX) == []


def test_a_prefix_that_is_not_a_plain_link_is_never_suggested():
    head = BASE + "\n" + ENTRY + "  pr-link: TBD\n"
    errors = [ChangelogError(11, "pr-link-not-accepted", {"value": "TBD"})]  # as check_append builds it
    assert suggestions(errors, head, pr_number=7, canonical_prefix="https://x.test/```\n") == []
    assert suggestions(errors, head, pr_number=7, canonical_prefix="https://x.test/pull/") != []


def test_at_most_the_limit_by_line_and_never_overlapping():
    head = "".join(f"  pr-link: TBD{i}\n" for i in range(30))
    errors = [ChangelogError(n, "pr-link-not-accepted", {"value": f"TBD{n - 1}"}) for n in range(30, 0, -1)]
    errors.append(ChangelogError(3, "trailing-newline", {"problem": "missing"}))  # overlaps line 3's fix
    found = suggestions(errors, head, pr_number=7, canonical_prefix=PREFIX)
    assert [s.line for s in found] == list(range(1, 21))
    assert {s.code for s in found} == {"pr-link-not-accepted"}


@pytest.mark.parametrize(
    "text, safe",
    [
        ("  pr-link: XXX", True),
        ("", True),
        ("- 中文描述", True),
        ("a ``` b", False),
        ("~~~", False),
        ("tab\there", False),
        ("nul\x00", False),
        ("bidi\u202e", False),
    ],
)
def test_safe_line(text, safe):
    assert safe_line(text) is safe


# -- the default branch --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "commits, may",
    [
        ([{"modified": ["log.yaml"]}], True),
        ([{"added": ["log.yaml"]}], True),
        ([{"removed": ["log.yaml"]}], False),  # nothing left to check
        ([{"modified": ["README.md"]}], False),
        ([], False),
        ([{"modified": ["README.md"]}] * 20, True),  # capped at 20 commits: cannot tell
        ([{"modified": [f"f{i}" for i in range(3000)]}], True),  # capped at 3000 files
        ([{"modified": None}, "junk"], False),
        (None, False),
    ],
)
def test_push_may_change(commits, may):
    assert push_may_change(commits, "log.yaml") is may


@pytest.mark.parametrize(
    "before, after, line",
    [
        (None, b"a\nb\n", 1),
        (b"", b"a\n", 1),
        (b"a\nb\n", b"a\nb\nc\n", 3),
        (b"a\nb\n", b"a\nb\n", 3),
        (b"a\nb\nc\n", b"a\nX\nc\nd\n", 2),
        (b"a\nbb\n", b"a\nbc\n", 2),
        (b"a\nb\nc\n", b"a\n", 2),
    ],
)
def test_first_new_line(before, after, line):
    assert first_new_line(before, after) == line


def test_pushed_pr_is_the_merged_pr_of_that_commit():
    pulls = [
        {"number": 3, "merged_at": None},
        {"number": 4, "merged_at": "x", "merge_commit_sha": "other"},
        {"number": 5, "merged_at": "x", "merge_commit_sha": "abc"},
    ]
    assert pushed_pr(pulls, "abc") == 5
    assert pushed_pr(pulls, "zzz") == 4
    assert pushed_pr([{"number": 3, "merged_at": None}], "abc") is None
    assert pushed_pr([], "abc") is None


def test_bad_links_name_the_push_pr_for_new_lines_and_remember_old_ones():
    text = BASE + "\n" + ENTRY + "  pr-link: XXX\n\n" + ENTRY + f"  pr-link: {PREFIX}XXX\n"
    errors = validate_default_branch(text, canonical_prefix=PREFIX)
    assert [e.line for e in errors] == [11, 17]
    found = bad_links(errors, first_new=13, pr_number=42, remembered={(11, "XXX"): 9}, canonical_prefix=PREFIX)
    assert found == [BadLink(11, "XXX", 9, f"{PREFIX}9"), BadLink(17, f"{PREFIX}XXX", 42, f"{PREFIX}42")]
    # a line that was there before the push and is not remembered: unknown
    assert bad_links(errors, first_new=13, pr_number=42, remembered={}, canonical_prefix=PREFIX)[0].pr_number is None
    # a direct push (no PR): nothing known
    assert [
        b.pr_number for b in bad_links(errors, first_new=1, pr_number=None, remembered={}, canonical_prefix=PREFIX)
    ] == [None, None]


def test_the_record_round_trips_and_ignores_bad_data():
    links = [BadLink(11, "XXX", 9, "u"), BadLink(17, "TBD", None, None)]
    assert remembered_links(links_record(links)) == {(11, "XXX"): 9}
    assert remembered_links({"links": [[1, "a", True], ["1", "a", 2], [1, "a"], 5]}) == {}
    assert remembered_links(None) == {} and remembered_links([1]) == {}


def test_two_fixes_of_one_line_give_one_suggestion():
    """The last line lacks its newline and holds a bad link: the link's fix (which ends the line too) is kept."""
    head = BASE + "\n" + ENTRY + "  pr-link: TBD"
    errors = check_append(BASE.encode(), head.encode(), pr_number=7, canonical_prefix=PREFIX).errors
    assert sorted(e.code for e in errors) == ["pr-link-not-accepted", "trailing-newline"]
    found = suggestions(errors, head, pr_number=7, canonical_prefix=PREFIX)
    assert [(s.line, s.lines) for s in found] == [(11, (LINK7,))]
    assert check_append(BASE.encode(), applied(head, found).encode(), pr_number=7, canonical_prefix=PREFIX).ok


def test_a_link_with_a_page_after_it_names_its_own_pr():
    errors = [
        ChangelogError(3, "default-branch-link", {"value": f"{PREFIX}2305/changes"}),
        ChangelogError(5, "default-branch-link", {"value": f"{PREFIX}XXX"}),
        ChangelogError(7, "default-branch-link", {"value": f"{PREFIX}0"}),
    ]
    found = bad_links(errors, first_new=10, pr_number=None, remembered={}, canonical_prefix=PREFIX)
    assert [(b.line, b.pr_number, b.expected) for b in found] == [
        (3, 2305, f"{PREFIX}2305"),
        (5, None, None),
        (7, None, None),
    ]


def test_the_real_changelog_tail(real_data):
    """The real upstream tail holds two links the default-branch rule refuses: one names its PR, one does not."""
    upstream = "https://github.com/SemiAnalysisAI/InferenceX/pull/"
    text = (real_data / "perf-changelog.tail.yaml").read_bytes()
    errors = validate_default_branch(text, canonical_prefix=upstream)
    found = bad_links(
        errors, first_new=first_new_line(text, text), pr_number=None, remembered={}, canonical_prefix=upstream
    )
    assert [(b.value.removeprefix(upstream), b.pr_number) for b in found] == [("2305/changes", 2305), ("XXX", None)]
