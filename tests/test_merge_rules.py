"""The `/merge` rules (bot/rules/merge.py): tables of cases, each id saying what it pins, then the real changelog.

`resolve_changelog` reproduces the cases of upstream's merge helper (InferenceX
utils/changelog_gate_tests/test_prepare_perf_changelog_merge.py): the base's bytes kept, one blank line between
contributions, a duplicate refused, only the placeholder rewritten, and two PRs merged one after the other.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest

from bot.core.config import default_policy
from bot.rules.changelog import ChangelogLimits, check_append, validate_default_branch
from bot.rules.merge import (
    AUTHOR,
    CHANGELOG_BASE_UNREADABLE,
    CHANGELOG_DUPLICATE,
    CHANGELOG_INVALID,
    CHANGELOG_NOT_APPEND,
    CHANGELOG_RESULT_INVALID,
    CODEOWNER,
    CONFLICT,
    DRAFT,
    FIXERS,
    GIT_DATA,
    MAINTAINER,
    MERGE_API,
    NO_ELIGIBLE_RUN,
    NO_PRIMARY_LABEL,
    NOT_OPEN,
    PIN_NOT_ELIGIBLE,
    PIN_STALE,
    PR_URL_NOT_CANONICAL,
    REFUSAL_CODES,
    REUSE_BLOCKED,
    SEVERAL_PRIMARY_LABELS,
    SIGNOFF_MISSING,
    WRONG_BASE,
    MergeFacts,
    Refusal,
    Resolution,
    Reuse,
    merge_refusals,
    merge_way,
    refusal,
    resolve_changelog,
    reused_run,
)
from bot.rules.pins import BLOCKED_BY_LABEL, ELIGIBLE, NO_RESULT_ARTIFACT, NOT_DISPATCHED, Selection, Verdict

P = "https://github.com/SemiAnalysisAI/InferenceX/pull/"
URL = P + "42"


def block(key: str, link: str, *extra: str, desc: str | None = None) -> bytes:
    """One entry as upstream's tests write it: its `pr-link` is its 5th line, `extra` lines follow."""
    lines = [
        "- config-keys:",
        f"    - {key}",
        "  description:",
        f'    - "{desc or "Update " + key}"',
        f"  pr-link: {link}",
        *extra,
    ]
    return ("\n".join(lines) + "\n").encode()


BASE = block("base-config", P + "1")  # the file at the merge base: one merged entry, 5 lines
MAIN = BASE + b"  \n" + block("main-config", P + "41")  # main moved on: a separator with spaces, then #41's entry


# -- resolve_changelog ------------------------------------------------------------------------------------------


@dataclass
class Case:
    id: str
    base: bytes  # the file on the base branch now
    head: bytes  # on the PR's head
    merge_base: bytes = BASE
    content: bytes | None = None  # the expected result, exactly; None: a refusal is expected
    code: str | None = None  # the expected refusal
    rewritten: tuple[int, ...] | None = None  # the expected rewritten lines, when given
    url: str = URL
    limits: ChangelogLimits = dataclasses.field(default_factory=ChangelogLimits)


RESOLVE_CASES = [
    # upstream: "conflict resolution preserves main bytes and appends the PR entry"
    Case(
        "base-bytes-kept-pr-entry-after-them",
        MAIN,
        BASE + b"\n" + block("pr-config", "XXX"),
        content=MAIN + b"\n" + block("pr-config", URL),
        rewritten=(17,),
    ),
    # upstream: "separates multiple contributions by one blank line"
    Case(
        "two-entries-one-blank-line-each",
        MAIN,
        BASE + b"\n" + block("new-a", "XXX") + b"\n" + block("new-b", "XXX"),
        content=MAIN + b"\n" + block("new-a", URL) + b"\n" + block("new-b", URL),
        rewritten=(17, 23),
    ),
    Case(
        "base-not-moved-is-the-head-with-the-link",
        BASE,
        BASE + b"\n" + block("pr-config", "XXX"),
        content=BASE + b"\n" + block("pr-config", URL),
        rewritten=(11,),
    ),
    Case(
        "base-ending-in-a-blank-line-gets-none-more",
        MAIN + b"\n",
        BASE + b"\n" + block("pr-config", "XXX"),
        content=MAIN + b"\n" + block("pr-config", URL),
    ),
    Case(
        "base-without-final-newline-gets-one-then-a-blank",
        MAIN[:-1],
        BASE + b"\n" + block("pr-config", "XXX"),
        content=MAIN + b"\n" + block("pr-config", URL),
    ),
    Case(
        "pr-on-a-history-ending-in-a-blank-line",
        MAIN,
        BASE + b"\n" + block("pr-config", "XXX"),
        merge_base=BASE + b"\n",
        content=MAIN + b"\n" + block("pr-config", URL),
    ),
    Case(
        "new-file-on-both-sides",
        b"",
        block("pr-config", "XXX"),
        merge_base=b"",
        content=block("pr-config", URL),
        rewritten=(5,),
    ),
    Case(
        "comment-before-the-entry-kept",
        MAIN,
        BASE + b"\n# tuned for MI355X\n\n" + block("pr-config", "XXX"),
        content=MAIN + b"\n# tuned for MI355X\n\n" + block("pr-config", URL),
        rewritten=(19,),
    ),
    # upstream: "canonicalize only changes the appended placeholder"
    Case(
        "history-placeholder-untouched",
        block("old", "XXX") + b"\n" + block("main-config", P + "41"),
        block("old", "XXX") + b"\n" + block("pr-config", "XXX"),
        merge_base=block("old", "XXX"),
        content=block("old", "XXX") + b"\n" + block("main-config", P + "41") + b"\n" + block("pr-config", URL),
        rewritten=(17,),
    ),
    Case(
        "only-the-link-not-a-description-quoting-it",
        MAIN,
        BASE + b"\n" + block("pr-config", "XXX", desc="pr-link: XXX"),
        content=MAIN + b"\n" + block("pr-config", URL, desc="pr-link: XXX"),
        rewritten=(17,),
    ),
    Case(
        "prefix-placeholder-rewritten",
        MAIN,
        BASE + b"\n" + block("pr-config", P + "XXX"),
        content=MAIN + b"\n" + block("pr-config", URL),
    ),
    Case(
        "quoted-placeholder-keeps-its-quotes",
        MAIN,
        BASE + b"\n" + block("pr-config", '"XXX"'),
        content=MAIN + b"\n" + block("pr-config", f'"{URL}"'),
    ),
    Case(
        "single-quoted-prefix-placeholder",
        MAIN,
        BASE + b"\n" + block("pr-config", f"'{P}XXX'"),
        content=MAIN + b"\n" + block("pr-config", f"'{URL}'"),
    ),
    Case(
        "own-link-kept-nothing-rewritten",
        MAIN,
        BASE + b"\n" + block("pr-config", URL),
        content=MAIN + b"\n" + block("pr-config", URL),
        rewritten=(),
    ),
    Case(
        "flow-mapping-entry",
        MAIN,
        BASE + b"\n- {config-keys: [pr-config], description: [Tune], pr-link: XXX}\n",
        content=MAIN + f"\n- {{config-keys: [pr-config], description: [Tune], pr-link: {URL}}}\n".encode(),
        rewritten=(13,),
    ),
    Case(
        "trailing-fields-after-the-link-kept",
        MAIN,
        BASE + b"\n" + block("pr-config", "XXX", "  evals-only: true"),
        content=MAIN + b"\n" + block("pr-config", URL, "  evals-only: true"),
    ),
    Case("pr-changing-nothing-gets-the-base", MAIN, BASE, content=MAIN),
    # refusals
    # upstream: "rejects duplicate remaining contribution"
    Case(
        "duplicate-of-a-base-entry",
        BASE + b"\n" + block("same-config", P + "41"),
        BASE + b"\n" + block("same-config", "XXX"),
        code=CHANGELOG_DUPLICATE,
    ),
    Case(
        "duplicate-despite-a-false-flag-written-out",
        MAIN + b"\n" + block("pr-config", P + "43", "  evals-only: false"),
        BASE + b"\n" + block("pr-config", "XXX"),
        code=CHANGELOG_DUPLICATE,
    ),
    Case(
        "another-description-is-no-duplicate",
        BASE + b"\n" + block("same-config", P + "41", desc="Older"),
        BASE + b"\n" + block("same-config", "XXX"),
        content=BASE + b"\n" + block("same-config", P + "41", desc="Older") + b"\n" + block("same-config", URL),
    ),
    Case(
        "another-flag-is-no-duplicate",
        BASE + b"\n" + block("same-config", P + "41", "  all-evals: true"),
        BASE + b"\n" + block("same-config", "XXX"),
        content=BASE + b"\n" + block("same-config", P + "41", "  all-evals: true") + b"\n" + block("same-config", URL),
    ),
    # upstream: "rejects historical whitespace change"
    Case(
        "history-whitespace-edited",
        MAIN,
        BASE.replace(b'config"\n', b'config"  \n') + b"\n" + block("x", "XXX"),
        code=CHANGELOG_NOT_APPEND,
    ),
    Case("history-entry-removed", MAIN, block("pr-config", "XXX"), code=CHANGELOG_NOT_APPEND),
    Case("link-correction-only", MAIN, BASE.replace(P.encode() + b"1", P.encode() + b"2"), code=CHANGELOG_NOT_APPEND),
    Case("entry-with-a-tbd-link", MAIN, BASE + b"\n" + block("pr-config", "TBD"), code=CHANGELOG_INVALID),
    Case("entry-with-another-prs-link", MAIN, BASE + b"\n" + block("pr-config", P + "41"), code=CHANGELOG_INVALID),
    Case("two-blank-lines-before-the-entry", MAIN, BASE + b"\n\n" + block("pr-config", "XXX"), code=CHANGELOG_INVALID),
    Case(
        "url-of-another-repository",
        MAIN,
        BASE + b"\n" + block("pr-config", "XXX"),
        url="https://github.com/acme/InferenceX/pull/42",
        code=PR_URL_NOT_CANONICAL,
    ),
    Case(
        "url-without-a-number", MAIN, BASE + b"\n" + block("pr-config", "XXX"), url=P + "XXX", code=PR_URL_NOT_CANONICAL
    ),
    Case(
        "base-not-a-list", b"entries: none\n", BASE + b"\n" + block("pr-config", "XXX"), code=CHANGELOG_BASE_UNREADABLE
    ),
    Case(
        "result-over-the-size-limit",
        MAIN,
        BASE + b"\n" + block("pr-config", "XXX"),
        limits=ChangelogLimits(max_bytes=len(MAIN) + 40),
        code=CHANGELOG_RESULT_INVALID,
    ),
]


@pytest.mark.parametrize("case", RESOLVE_CASES, ids=lambda c: c.id)
def test_resolve_changelog(case: Case):
    got = resolve_changelog(case.base, case.head, case.merge_base, case.url, P, limits=case.limits)
    if case.code is not None:
        assert isinstance(got, Refusal) and got.code == case.code, got
        assert got.fixer == FIXERS[case.code]
        return
    assert isinstance(got, Resolution), got
    assert got.content == case.content
    assert got.content.startswith(case.base.rstrip(b"\n") if not case.base.endswith(b"\n") else case.base)
    if case.rewritten is not None:
        assert got.rewritten == case.rewritten
        lines = got.content.split(b"\n")
        assert all(URL.encode() in lines[n - 1] for n in got.rewritten)
    assert all(e.pr_link == URL for e in got.entries)
    if got.entries:  # the result passes the PR rules against the base, and its new links the default branch's
        assert check_append(case.base, got.content, pr_number=42, canonical_prefix=P).ok


def test_every_changelog_refusal_has_a_case():
    codes = {c.code for c in RESOLVE_CASES}
    assert codes >= {
        CHANGELOG_DUPLICATE,
        CHANGELOG_NOT_APPEND,
        CHANGELOG_INVALID,
        PR_URL_NOT_CANONICAL,
        CHANGELOG_BASE_UNREADABLE,
        CHANGELOG_RESULT_INVALID,
    }


def test_a_duplicate_names_the_pr_line_and_the_base_line():
    base = BASE + b"\n" + block("same-config", P + "41")
    head = BASE + b"\n" + block("other", "XXX") + b"\n" + block("same-config", "XXX")
    got = resolve_changelog(base, head, BASE, URL, P)
    assert got == refusal(CHANGELOG_DUPLICATE, duplicates=[{"line": 13, "base_line": 7}])


def test_a_link_correction_names_what_it_corrects():
    got = resolve_changelog(MAIN, BASE.replace(P.encode() + b"1", P.encode() + b"2"), BASE, URL, P)
    assert isinstance(got, Refusal) and got.fixer == AUTHOR
    assert got.params["corrections"] == ({"line": 5, "old": P + "1", "new": P + "2"},)


def test_an_invalid_entry_carries_the_checks_errors():
    got = resolve_changelog(MAIN, BASE + b"\n" + block("pr-config", "TBD"), BASE, URL, P)
    assert isinstance(got, Refusal)
    assert [(e.code, e.line) for e in got.params["errors"]] == [("pr-link-not-accepted", 11)]


def test_two_prs_merged_one_after_the_other():
    """Upstream merges one PR, then the next on the first's result: both branched from BASE."""
    first = BASE + b"\n" + block("first", "XXX")
    second = BASE + b"\n" + block("second", P + "XXX") + b"\n" + block("second-mtp", "XXX")

    one = resolve_changelog(BASE, first, BASE, P + "50", P)
    assert isinstance(one, Resolution)
    two = resolve_changelog(one.content, second, BASE, P + "51", P)
    assert isinstance(two, Resolution)

    assert two.content == (
        BASE
        + b"\n"
        + block("first", P + "50")
        + b"\n"
        + block("second", P + "51")
        + b"\n"
        + block("second-mtp", P + "51")
    )
    assert two.content.startswith(one.content)
    assert [e.config_keys for e in two.entries] == [("second",), ("second-mtp",)]
    assert validate_default_branch(two.content, canonical_prefix=P) == []
    # the second PR again, on the result: each of its entries is on the base now
    again = resolve_changelog(two.content, second, BASE, P + "51", P)
    assert isinstance(again, Refusal) and again.code == CHANGELOG_DUPLICATE
    assert [d["base_line"] for d in again.params["duplicates"]] == [13, 19]


def test_a_resolution_is_stable_once_the_branch_holds_it():
    """The bot updates a PR's branch with the resolution, then merges: resolving again from there changes
    nothing (the branch's head is the result, its merge base the base)."""
    done = resolve_changelog(MAIN, BASE + b"\n" + block("pr-config", "XXX"), BASE, URL, P)
    assert isinstance(done, Resolution)
    again = resolve_changelog(MAIN, done.content, MAIN, URL, P)
    assert isinstance(again, Resolution) and again.content == done.content and again.rewritten == ()


# -- against the real changelog -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tail(real_data) -> bytes:
    return (real_data / "perf-changelog.tail.yaml").read_bytes()


def _entry_starts(text: bytes) -> list[int]:
    return [i + 1 for i in range(len(text)) if text.startswith(b"\n- config-keys:", i)]


def test_real_changelog_a_pr_branched_before_the_last_merges(tail: bytes):
    """The PR branched before the last two entries were merged: the base's bytes, its own `XXX` of history (line
    2604) and its separators with spaces stay; the PR's entry follows, its link the PR's."""
    merge_base = tail[: _entry_starts(tail)[-2]]  # ends with the blank line before the third entry from the end
    entry = block(
        "dsr1-fp8-mi355x-sglang", "XXX", "  scenario-type:", "    - fixed-seq-len", desc="Bump SGLang to v0.5.13"
    )
    head = merge_base + entry

    got = resolve_changelog(tail, head, merge_base, P + "2800", P)

    assert isinstance(got, Resolution), got
    assert got.content == tail + b"\n" + entry.replace(b"pr-link: XXX", f"pr-link: {P}2800".encode())
    first = tail.count(b"\n") + 2
    assert [e.line for e in got.entries] == [first] and got.rewritten == (first + 4,)
    assert got.content.split(b"\n")[2603].endswith(b"/pull/XXX")  # the history's placeholder, as it was
    assert [e.line for e in validate_default_branch(got.content, canonical_prefix=P)] == [2129, 2604]


def test_real_changelog_a_pr_repeating_the_newest_entry(tail: bytes):
    starts = _entry_starts(tail)
    newest = tail[starts[-1] :]
    merge_base = tail[: starts[-1]]
    head = merge_base + newest.replace(newest[newest.index(b"pr-link: ") + 9 :].rstrip(b"\n"), b"XXX")

    got = resolve_changelog(tail, head, merge_base, P + "2800", P)

    assert got == refusal(
        CHANGELOG_DUPLICATE,
        duplicates=[{"line": tail[: starts[-1]].count(b"\n") + 1, "base_line": tail[: starts[-1]].count(b"\n") + 1}],
    )


# -- merge_refusals -------------------------------------------------------------------------------------------------

POLICY = default_policy()
GOOD_RUN = {"id": 101, "created_at": "2025-06-30T10:00:00Z"}
ELIGIBLE_PIN = Verdict(True, ELIGIBLE, {"run_id": 101, "head_sha": "a" * 40, "run_attempt": 1})
NEWEST = Verdict(True, ELIGIBLE, {"run_id": 202, "head_sha": "b" * 40, "run_attempt": 1})
EXPIRED = Verdict(False, NO_RESULT_ARTIFACT, {"run_id": 101, "expired": ("results_bmk",)})
LABEL_BLOCKED = Verdict(False, BLOCKED_BY_LABEL, {"run_id": 101, "labels": ("evals-only",)})
NO_RUNS = Selection(None, None, ())
ONE_ELIGIBLE = Selection({"id": 202}, NEWEST, ())
ONLY_BLOCKED = Selection(None, None, (({"id": 303}, Verdict(False, BLOCKED_BY_LABEL, {"run_id": 303})),))
ONLY_FOREIGN = Selection(None, None, (({"id": 304}, Verdict(False, NOT_DISPATCHED, {"run_id": 304})),))
RESOLVED = Resolution(MAIN + b"\n" + block("pr-config", URL))

GOOD = MergeFacts(
    state="open",
    merged=False,
    draft=False,
    base_ref="main",
    configured_base="main",
    labels=("full-sweep-fail-fast", "amd"),
    pin=ELIGIBLE_PIN,
    candidates=NO_RUNS,
    signoff_required=True,
    signoff_conclusion="success",
    changelog=RESOLVED,
    conflicts=(),
    stale_pin=(),
)

MERGE_CASES = [
    # (id, changes to GOOD, expected [(code, fixer)])
    ("mergeable", {}, []),
    ("closed", {"state": "closed"}, [(NOT_OPEN, AUTHOR)]),
    ("merged-already", {"state": "closed", "merged": True}, [(NOT_OPEN, AUTHOR)]),
    ("draft", {"draft": True}, [(DRAFT, AUTHOR)]),
    ("targets-another-branch", {"base_ref": "release/1.2"}, [(WRONG_BASE, AUTHOR)]),
    ("no-primary-only-a-modifier", {"labels": ("all-evals",)}, [(NO_PRIMARY_LABEL, MAINTAINER)]),
    (
        "two-primaries",
        {"labels": ("full-sweep-enabled", "full-sweep-fail-fast")},
        [(SEVERAL_PRIMARY_LABELS, MAINTAINER)],
    ),
    ("one-primary-in-two-cases-is-one", {"labels": ("Full-Sweep-Enabled", "full-sweep-enabled")}, []),
    ("all-evals-does-not-block", {"labels": ("full-sweep-enabled", "all-evals")}, []),
    (
        "evals-only-named-once-not-as-the-pin-too",
        {"labels": ("full-sweep-enabled", "evals-only"), "pin": LABEL_BLOCKED},
        [(REUSE_BLOCKED, MAINTAINER)],
    ),
    (
        "agentx-fast-named-once-not-as-no-run",
        {"labels": ("full-sweep-enabled", "AgentX-Fast"), "pin": None, "candidates": ONLY_BLOCKED},
        [(REUSE_BLOCKED, MAINTAINER)],
    ),
    (
        "blocked-and-no-run-at-all",
        {"labels": ("full-sweep-enabled", "evals-only"), "pin": None},
        [(REUSE_BLOCKED, MAINTAINER), (NO_ELIGIBLE_RUN, MAINTAINER)],
    ),
    ("pin-artifacts-expired", {"pin": EXPIRED}, [(PIN_NOT_ELIGIBLE, MAINTAINER)]),
    ("pin-stale-after-a-push", {"stale_pin": ("benchmarks/a.sh",)}, [(PIN_STALE, MAINTAINER)]),
    (
        "an-invalid-pin-is-named-once-not-stale-too",
        {"pin": EXPIRED, "stale_pin": ("a",)},
        [(PIN_NOT_ELIGIBLE, MAINTAINER)],
    ),
    ("pin-run-not-found", {"pin": Verdict(False, "not-found", {"run_id": 9})}, [(PIN_NOT_ELIGIBLE, MAINTAINER)]),
    ("pin-blocked-by-a-label-that-no-longer-counts", {"pin": LABEL_BLOCKED}, [(PIN_NOT_ELIGIBLE, MAINTAINER)]),
    (
        "invalid-pin-not-replaced-by-the-newest-run",
        {"pin": EXPIRED, "candidates": ONE_ELIGIBLE},
        [(PIN_NOT_ELIGIBLE, MAINTAINER)],
    ),
    ("no-pin-the-newest-eligible-run-will-do", {"pin": None, "candidates": ONE_ELIGIBLE}, []),
    ("no-pin-no-run", {"pin": None}, [(NO_ELIGIBLE_RUN, MAINTAINER)]),
    (
        "no-pin-only-runs-the-bot-did-not-dispatch",
        {"pin": None, "candidates": ONLY_FOREIGN},
        [(NO_ELIGIBLE_RUN, MAINTAINER)],
    ),
    ("signoff-failed", {"signoff_conclusion": "failure"}, [(SIGNOFF_MISSING, CODEOWNER)]),
    ("signoff-check-absent", {"signoff_conclusion": None}, [(SIGNOFF_MISSING, CODEOWNER)]),
    ("signoff-not-required", {"signoff_required": False, "signoff_conclusion": "failure"}, []),
    (
        "changelog-refusal-passed-on",
        {"changelog": refusal(CHANGELOG_DUPLICATE, duplicates=[])},
        [(CHANGELOG_DUPLICATE, AUTHOR)],
    ),
    (
        "changelog-of-the-maintainers",
        {"changelog": refusal(PR_URL_NOT_CANONICAL, pr_url="x", prefix=P)},
        [(PR_URL_NOT_CANONICAL, MAINTAINER)],
    ),
    ("conflict-outside-the-changelog", {"conflicts": ("configs/amd-master.yaml",)}, [(CONFLICT, AUTHOR)]),
    (
        "everything-wrong-in-the-fixed-order",
        {
            "state": "closed",
            "draft": True,
            "base_ref": "dev",
            "labels": ("evals-only",),
            "pin": EXPIRED,
            "signoff_conclusion": "failure",
            "changelog": refusal(CHANGELOG_NOT_APPEND, corrections=()),
            "conflicts": ("a", "b"),
        },
        [
            (NOT_OPEN, AUTHOR),
            (DRAFT, AUTHOR),
            (WRONG_BASE, AUTHOR),
            (NO_PRIMARY_LABEL, MAINTAINER),
            (REUSE_BLOCKED, MAINTAINER),
            (PIN_NOT_ELIGIBLE, MAINTAINER),
            (SIGNOFF_MISSING, CODEOWNER),
            (CHANGELOG_NOT_APPEND, AUTHOR),
            (CONFLICT, AUTHOR),
        ],
    ),
]


@pytest.mark.parametrize("changes, expected", [pytest.param(c, e, id=i) for i, c, e in MERGE_CASES])
def test_merge_refusals(changes, expected):
    got = merge_refusals(dataclasses.replace(GOOD, **changes), POLICY)
    assert [(r.code, r.fixer) for r in got] == expected


def test_every_refusal_code_has_a_fixer_and_a_case():
    assert set(FIXERS) == set(REFUSAL_CODES) and len(REFUSAL_CODES) == len(set(REFUSAL_CODES))
    cased = {code for _, _, expected in MERGE_CASES for code, _ in expected} | {c.code for c in RESOLVE_CASES if c.code}
    assert cased == set(REFUSAL_CODES)


def test_refusal_params_name_what_is_missing():
    facts = dataclasses.replace(
        GOOD,
        labels=("full-sweep-enabled", "full-sweep-fail-fast", "evals-only"),
        base_ref="dev",
        pin=EXPIRED,
        conflicts=("configs/amd-master.yaml",),
    )
    got = {r.code: dict(r.params) for r in merge_refusals(facts, POLICY)}
    assert got == {
        WRONG_BASE: {"base": "dev", "expected": "main"},
        SEVERAL_PRIMARY_LABELS: {"labels": ("full-sweep-enabled", "full-sweep-fail-fast")},
        REUSE_BLOCKED: {"labels": ("evals-only",)},
        PIN_NOT_ELIGIBLE: {"verdict": {"code": NO_RESULT_ARTIFACT, "params": dict(EXPIRED.params)}},
        CONFLICT: {"files": ("configs/amd-master.yaml",)},
    }


REUSE_CASES = [
    # (id, changes to GOOD, expected Reuse or None)
    ("the-pinned-run", {}, Reuse(101, ELIGIBLE_PIN, pinned_by_merge=False)),
    ("pinned-run-preferred-to-a-newer-one", {"candidates": ONE_ELIGIBLE}, Reuse(101, ELIGIBLE_PIN, False)),
    ("no-pin-the-merge-pins-the-newest", {"pin": None, "candidates": ONE_ELIGIBLE}, Reuse(202, NEWEST, True)),
    ("an-invalid-pin-reuses-nothing", {"pin": EXPIRED, "candidates": ONE_ELIGIBLE}, None),
    ("no-pin-no-run", {"pin": None}, None),
    ("a-verdict-without-a-run-id", {"pin": Verdict(True, ELIGIBLE, {})}, None),
]


@pytest.mark.parametrize("changes, expected", [pytest.param(c, e, id=i) for i, c, e in REUSE_CASES])
def test_reused_run(changes, expected):
    assert reused_run(dataclasses.replace(GOOD, **changes)) == expected


@pytest.mark.parametrize("fork, way", [(True, GIT_DATA), (False, MERGE_API)], ids=["fork-git-data", "own-merge-api"])
def test_merge_way(fork, way):
    assert merge_way(fork=fork) == way
