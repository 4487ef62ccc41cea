"""bot/rules/signoff.py without HTTP: which comment is a sign-off, each check's table, the verdict and the check."""

from __future__ import annotations

import pytest

from bot.rules import signoff as rules
from bot.rules.checklist import compare, template_items
from bot.rules.codeowners import parse
from bot.rules.policy import VerifiedItem
from bot.rules.pull_request import own_check_run

PHRASE = "As a PR reviewer and CODEOWNER, I have reviewed this and have"
SHA, OLD = "a" * 40, "b" * 40


# -- which comment is a sign-off ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (f"{PHRASE}:\n- [x] one", True),
        (f"  {PHRASE.upper()}:", True),  # case is not significant
        (PHRASE.replace(" ", "\n  ", 3), True),  # nor how the lines are wrapped
        ("**As a PR reviewer and CODEOWNER**, I have reviewed this and have:", True),  # nor emphasis
        (f"> {PHRASE}:\n\nI agree with the above.", False),  # a quote of someone's sign-off
        (f"   > {PHRASE}", False),
        (f"> Quoting you:\n{PHRASE}", False),  # a lazy line continues the quote
        (f"> quoted\n\n{PHRASE}:", True),
        (f"<!-- {PHRASE} -->", False),  # hidden in an HTML comment
        (f"```\n{PHRASE}\n```", False),  # in code: fenced, indented, a code span, <pre>/<code>
        (f"Template:\n\n    {PHRASE}", False),
        (f"`{PHRASE}`", False),
        (f"<pre>\n{PHRASE}\n</pre>", False),
        (f"Like <code>{PHRASE}</code>", False),
        (f"1. Reviewed.\n\n    {PHRASE}:", True),  # inside a list item, not code
        ("As a PR reviewer, I have reviewed this", False),
        ("", False),
        (None, False),
    ],
)
def test_has_phrase(body, expected):
    assert rules.has_phrase(body, PHRASE) is expected


def test_an_empty_phrase_matches_nothing():
    assert rules.has_phrase("anything", "  ") is False


def _comment(body, **extra):
    return {"id": 7, "body": body, "user": {"login": "alice"}, "html_url": "https://x/7", **extra}


@pytest.mark.parametrize(
    ("event", "data", "key"),
    [
        ("issue_comment", {"issue": {"pull_request": {}}, "comment": _comment(PHRASE)}, "comment-7"),
        ("issue_comment", {"issue": {}, "comment": _comment(PHRASE)}, None),  # on an issue, not a PR
        ("pull_request_review", {"review": _comment(PHRASE)}, "review-7"),
        ("pull_request_review", {"review": _comment(None)}, None),  # a review without a body
        ("pull_request_review_comment", {"comment": _comment(PHRASE)}, "review-comment-7"),
        ("issue_comment", {"issue": {"pull_request": {}}, "comment": _comment("LGTM")}, None),
        ("push", {"comment": _comment(PHRASE)}, None),
    ],
)
def test_signoff_of(event, data, key):
    found = rules.signoff_of(event, data, PHRASE)
    assert (found.key if found else None) == key
    if found:
        assert (found.signer, found.url, found.purpose) == ("alice", "https://x/7", f"signoff-{key}")


# -- CODEOWNER ------------------------------------------------------------------------------------

OWNERS = parse("* @core\nconfigs/ @broad\nconfigs/amd-* @amd @acme/amd\ndocs/ \n")


@pytest.mark.parametrize(
    ("files", "signer", "teams", "ok", "code"),
    [
        (["configs/amd-a.yaml"], "amd", (), True, "owns"),
        (["configs/amd-a.yaml"], "AMD", (), True, "owns"),  # logins are case-insensitive
        (["configs/amd-a.yaml"], "broad", (), False, "not_owner"),  # the later, narrower rule wins
        (["configs/other.yaml"], "broad", (), True, "owns"),
        (["configs/amd-a.yaml"], "teammate", ("acme/amd",), True, "owns"),  # through the team
        (["configs/amd-a.yaml"], "teammate", (), False, "not_owner"),
        (["README.md"], "core", (), True, "owns"),  # the catch-all
        (["docs/x.md"], "core", (), False, "not_owner"),  # a rule without owners un-owns
        (["README.md", "configs/amd-a.yaml"], "amd", (), True, "owns"),  # one owned file is enough
        ([], "amd", (), False, "no_files"),
    ],
)
def test_codeowner_check(files, signer, teams, ok, code):
    check = rules.codeowner_check(OWNERS, files, signer, teams)
    assert (check.ok, check.code) == (ok, code)


def test_a_failed_codeowner_check_names_every_file_with_its_owners_and_rule_line():
    check = rules.codeowner_check(OWNERS, ["configs/amd-a.yaml", "docs/x.md"], "drive-by", ())
    assert check.params["files"] == [
        {"path": "configs/amd-a.yaml", "owners": ["@amd", "@acme/amd"], "line": 3},
        {"path": "docs/x.md", "owners": [], "line": 4},
    ]


def test_many_files_are_shown_up_to_a_limit_and_counted():
    files = [f"configs/amd-{i}.yaml" for i in range(rules.SHOWN_FILES + 7)]
    check = rules.codeowner_check(OWNERS, files, "drive-by", ())
    assert (len(check.params["files"]), check.params["more"]) == (rules.SHOWN_FILES, 7)


def test_no_codeowners_file_and_an_unreadable_team_fail_with_their_own_reason():
    assert rules.codeowner_check(None, ["a"], "x", (), path=".github/CODEOWNERS").code == "no_codeowners"
    check = rules.codeowner_check(OWNERS, ["configs/amd-a.yaml"], "teammate", (), ["acme/amd"])
    assert (check.ok, check.code, check.params["teams"]) == (False, "team_unreadable", ["acme/amd"])


def test_only_the_teams_of_winning_rules_are_asked_about():
    owners = parse("* @acme/everyone\nconfigs/ @acme/configs @solo\n")
    assert rules.teams_to_ask(owners, ["configs/a.yaml"]) == ["acme/configs"]
    assert rules.teams_to_ask(owners, ["configs/a.yaml", "README.md"]) == ["acme/configs", "acme/everyone"]


# -- sweep and reuse ------------------------------------------------------------------------------


def run(run_id, sha=SHA, conclusion="success", status="completed", created="2026-01-01T00:00:0{}Z"):
    return rules.SweepRun(run_id, sha, status, conclusion, f"https://x/runs/{run_id}", created.format(run_id % 10))


@pytest.mark.parametrize(
    ("runs", "commits", "pinned", "asked", "ok", "code", "run_id"),
    [
        ([run(1)], [SHA], None, True, True, "green_run", 1),
        ([run(1), run(2)], [SHA], None, True, True, "green_run", 2),  # the newest
        ([run(1, conclusion="failure")], [SHA], None, True, False, "no_green_run", None),
        ([run(1, status="in_progress", conclusion=None)], [SHA], None, True, False, "no_green_run", None),
        ([run(1, sha=OLD)], [SHA], None, True, False, "no_green_run", None),  # force-pushed away
        ([run(1, sha=OLD)], [OLD, SHA], None, True, True, "green_run", 1),  # an earlier commit still in the PR
        ([], [SHA], run(9, conclusion="failure"), True, True, "pinned_run", 9),  # a valid pin stands for the sweep
        ([], [SHA], None, False, None, "not_asked", None),
        ([run(1)], [SHA], None, False, True, "green_run", 1),  # a green run counts even where none was asked for
    ],
)
def test_sweep_check(runs, commits, pinned, asked, ok, code, run_id):
    check = rules.sweep_check(runs, commits, pinned=pinned, asked=asked)
    assert (check.ok, check.code, check.params.get("run_id")) == (ok, code, run_id)


def test_a_failing_sweep_check_names_the_latest_run_of_the_pr():
    check = rules.sweep_check(
        [run(1, conclusion="failure"), run(2, conclusion="cancelled"), run(3, sha=OLD)], [SHA], pinned=None, asked=True
    )
    assert (check.params["latest"]["run_id"], check.params["latest"]["conclusion"]) == (2, "cancelled")


@pytest.mark.parametrize(
    ("pin", "code", "required", "asked", "ok", "expected"),
    [
        (333, "eligible", True, True, True, "pinned"),
        (333, "no-result-artifact", True, True, False, "pin_invalid"),
        (333, "not-found", True, True, False, "pin_invalid"),
        (None, None, True, True, False, "no_pin"),
        (None, None, True, False, None, "not_asked"),
        (None, None, False, True, None, "not_required"),
        (333, "no-result-artifact", False, True, None, "not_required"),
    ],
)
def test_reuse_check(pin, code, required, asked, ok, expected):
    check = rules.reuse_check(pin, "maintainer" if pin else None, code, required=required, asked=asked)
    assert (check.ok, check.code) == (ok, expected)


# -- checklist ------------------------------------------------------------------------------------

TEMPLATE = template_items(
    "## Template\n```\n- [ ] Verified this PR has passed PR validation.\n"
    "- [ ] Verified the evals.\n  - [ ] with _all_ of them\n\nSigned: `X`\n```\n"
)
COVERED = [VerifiedItem(check="sweep", contains="has passed pr VALIDATION")]


def test_checklist_check_passes_a_complete_signoff_and_lists_problems_otherwise():
    body = "- [x] Verified this PR has passed PR validation.\n- [x] Verified the evals.\n  - [x] with all of them\n"
    good = rules.checklist_check(TEMPLATE, compare(TEMPLATE, body + "Signed: @alice", "alice"), "alice", path="c.md")
    assert (good.ok, good.code, good.params["count"]) == (True, "complete", 3)
    bad = rules.checklist_check(
        TEMPLATE, compare(TEMPLATE, body.replace("[x] Verified the", "[ ] Verified the"), "alice"), "alice", path="c.md"
    )
    assert (bad.ok, bad.params["unticked"], bad.params["signed_ok"]) == (False, ["Verified the evals."], False)


def test_checklist_check_without_a_template_fails_with_the_reason():
    assert rules.checklist_check(None, None, "a", path="c.md").code == "no_checklist"
    problem = template_items("# no template here")
    check = rules.checklist_check(problem, None, "a", path="c.md")
    assert (check.ok, check.code, check.params["reason"]) == (False, "template_problem", problem.reason)


def test_items_a_check_covers_are_not_listed_as_unverified_and_the_rest_are():
    assert rules.not_verified(TEMPLATE, COVERED) == ["Verified the evals.", "with all of them"]
    assert rules.covered_items(TEMPLATE, COVERED) == [
        {"item": "Verified this PR has passed PR validation.", "check": "sweep"}
    ]
    assert rules.not_verified(None, COVERED) == []


def test_a_long_item_is_listed_whole_as_not_verified_and_shortened_where_a_check_stands_for_it():
    """Regression: "not verified" items were cut at 160 characters with "…"; they are listed whole (collapsed)."""
    long = template_items("## Template\n```\n- [ ] " + "word " * 100 + "\n```\n")
    (shown,) = rules.not_verified(long, [])
    assert shown == ("word " * 100).strip()
    (row,) = rules.covered_items(long, [VerifiedItem(check="sweep", contains="word word")])
    assert len(row["item"]) == rules.ITEM_CHARS and row["item"].endswith("…")


# -- the verdict and the check run ----------------------------------------------------------------


def check(name, ok):
    return rules.Check(name, ok, "x")


@pytest.mark.parametrize(
    ("checks", "outcome", "order"),
    [
        (
            [check("codeowner", True), check("sweep", True), check("reuse", True), check("checklist", True)],
            "pass",
            ["codeowner", "sweep", "reuse", "checklist"],
        ),
        (
            [check("codeowner", True), check("sweep", None), check("reuse", None), check("checklist", True)],
            "pass",
            ["codeowner", "checklist", "sweep", "reuse"],
        ),
        (
            [check("codeowner", True), check("sweep", False), check("reuse", None), check("checklist", False)],
            "fail",
            ["sweep", "checklist", "codeowner", "reuse"],
        ),
    ],
)
def test_outcome_and_failing_checks_first(checks, outcome, order):
    assert rules.outcome(checks) == outcome
    assert [c.name for c in rules.ordered(checks)] == order


LATEST = {"run_id": 7, "url": "https://x/runs/7", "sha": SHA, "conclusion": None}


@pytest.mark.parametrize(
    ("check", "mark"),
    [
        (rules.Check("codeowner", True, "owns"), "done"),
        (rules.Check("sweep", None, "not_asked"), "na"),
        # what waits on others: no sweep yet, one running, no pin or one no longer eligible, another group's sign-off
        (rules.Check("sweep", False, "no_green_run", {"latest": None}), "wait"),
        (rules.Check("sweep", False, "no_green_run", {"latest": {**LATEST, "status": "in_progress"}}), "wait"),
        (rules.Check("reuse", False, "no_pin"), "wait"),
        (rules.Check("reuse", False, "pin_invalid"), "wait"),
        (rules.Check("groups", False, "uncovered"), "wait"),
        # what a person must fix: a sweep that ended without success, and the sign-off's own checks
        (
            rules.Check(
                "sweep", False, "no_green_run", {"latest": {**LATEST, "status": "completed", "conclusion": "failure"}}
            ),
            "fix",
        ),
        (rules.Check("groups", False, "not_checked"), "fix"),
        (rules.Check("codeowner", False, "not_owner"), "fix"),
        (rules.Check("codeowner", False, "own_pr"), "fix"),
        (rules.Check("checklist", False, "incomplete"), "fix"),
    ],
)
def test_mark(check, mark):
    assert rules.mark(check) == mark


OWNS, COMPLETE = rules.Check("codeowner", True, "owns"), rules.Check("checklist", True, "complete")
RUNNING = rules.Check("sweep", False, "no_green_run", {"latest": {**LATEST, "status": "in_progress"}})
FAILED = rules.Check(
    "sweep", False, "no_green_run", {"latest": {**LATEST, "status": "completed", "conclusion": "failure"}}
)
NO_PIN = rules.Check("reuse", False, "no_pin")


@pytest.mark.parametrize(
    ("checks", "outcome"),
    [
        ([OWNS, RUNNING, NO_PIN, COMPLETE], "wait"),  # only waiting is no FAIL
        ([OWNS, FAILED, NO_PIN, COMPLETE], "wait"),  # the sweep failed: not the signer's to fix
        ([OWNS, rules.Check("groups", False, "uncovered"), COMPLETE], "wait"),  # another owner group's sign-off
        ([OWNS, RUNNING, NO_PIN, rules.Check("checklist", False, "incomplete")], "fail"),  # the sign-off's own
        ([rules.Check("codeowner", False, "not_owner"), RUNNING, COMPLETE], "fail"),
        ([OWNS, rules.Check("groups", False, "not_checked"), COMPLETE], "fail"),
        ([OWNS, rules.Check("sweep", True, "green_run"), rules.Check("reuse", True, "pinned"), COMPLETE], "pass"),
    ],
)
def test_a_verdict_waits_while_its_own_checks_hold(checks, outcome):
    assert rules.outcome(checks) == outcome


def verdict_of(key, signer="amd-owner", *, head=SHA, state="fresh", outcome="pass", signed_at="2026-01-01T00:00:00Z"):
    return {
        "signoff": key,
        "signer": signer,
        "head_sha": head,
        "state": state,
        "outcome": outcome,
        "signed_at": signed_at,
    }


@pytest.mark.parametrize(
    ("records", "conclusion"),
    [
        ([verdict_of("comment-1")], "success"),
        ([verdict_of("comment-1", outcome="fail")], "failure"),
        ([verdict_of("comment-1", head=OLD, state="stale")], "failure"),  # a pass for an older head
        ([verdict_of("comment-1", state="withdrawn")], "failure"),
        (
            [verdict_of("comment-1", outcome="fail"), verdict_of("comment-2", "nv-member")],
            "success",
        ),  # one passing sign-off of this head is enough (settle counted its owner groups)
        (
            [verdict_of("comment-1"), verdict_of("comment-2", outcome="fail", signed_at="2026-01-02T00:00:00Z")],
            "failure",
        ),  # the signer's newer sign-off supersedes the passing one
        ([], "failure"),
        ([verdict_of("comment-1", outcome="wait")], "pending"),  # in progress while it waits
        ([verdict_of("comment-1", outcome="fail"), verdict_of("comment-2", "nv-member", outcome="wait")], "pending"),
        ([verdict_of("comment-1", outcome="wait"), verdict_of("comment-2", "nv-member")], "success"),
        ([verdict_of("comment-1", head=OLD, state="stale", outcome="wait")], "failure"),
    ],
)
def test_check_conclusion(records, conclusion):
    assert rules.check_conclusion({r["signoff"]: r for r in records}, SHA) == conclusion


GOOD = {
    "pr-number": "12",
    "signoff-id": "comment-7",
    "head-sha": SHA,
    "verdict": "fail",
    "summary": " patched ",
    "run-url": "https://github.com/acme/x/actions/runs/9",
}


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({}, None),
        ({"pr-number": 12}, "pr-number"),
        ({"signoff-id": "comment-x"}, "signoff-id"),
        ({"signoff-id": "issue-7"}, "signoff-id"),
        ({"head-sha": "A" * 40}, "head-sha"),
        ({"verdict": "maybe"}, "verdict"),
        ({"summary": "x" * 2001}, "summary"),
        ({"run-url": "javascript:alert(1)"}, "run-url"),
        ({"run-url": "https://github.com/acme/x/actions/runs/9)[x](https://evil.example)"}, "run-url"),
        ({"dispatch-id": "sw-12-0123456789ab"}, "dispatch-id"),
    ],
)
def test_judge_result(change, problem):
    answer = rules.judge_result({**GOOD, **change})
    if problem is None:
        assert answer == {
            "pr": 12,
            "signoff": "comment-7",
            "head_sha": SHA,
            "verdict": "fail",
            "summary": "patched",
            "run_id": 9,
            "dispatch_id": None,
            "ignored": [],
        }
    else:
        assert isinstance(answer, str) and problem in answer


def test_a_judge_answer_may_carry_fields_the_bot_does_not_read():
    """The judge workflow may send more than the bot reads: such fields are ignored and named, not refused."""
    answer = rules.judge_result({**GOOD, "extra": "1", "dispatch-id": "so-12-0123456789ab"})
    assert answer["ignored"] == ["extra"] and answer["dispatch_id"] == "so-12-0123456789ab"
    assert rules.judge_result({**GOOD, "run-url": ""})["run_id"] is None


def test_judge_result_refuses_what_is_not_an_object():
    assert rules.judge_result(["not", "an", "object"]) == "client_payload is not an object"


# -- which verdicts keep up ------------------------------------------------------------------------


def verdict_record(key, signer="amd-owner", *, head=SHA, state="fresh", signed_at="2026-01-01T00:00:00Z"):
    return {"signoff": key, "signer": signer, "head_sha": head, "state": state, "signed_at": signed_at}


@pytest.mark.parametrize(
    ("records", "expected"),
    [
        ([verdict_record("comment-1")], ["comment-1"]),
        ([verdict_record("comment-1", state="stale", head=OLD)], []),  # stale until signed again
        ([verdict_record("comment-1", state="withdrawn")], []),
        ([verdict_record("comment-1", state="stale")], []),  # only a fresh verdict counts, whatever its sha says
        ([verdict_record("comment-1", head=OLD)], []),  # verified on another head
        ([verdict_record("comment-1"), verdict_record("review-2", "nv-member")], ["comment-1", "review-2"]),
        # one signer's newest sign-off, by when it was last written, then by its id
        (
            [
                verdict_record("comment-9", signed_at="2026-01-01T00:00:00Z"),
                verdict_record("review-2", "AMD-owner", signed_at="2026-01-02T00:00:00Z"),
            ],
            ["review-2"],
        ),
        ([verdict_record("comment-3", signed_at=""), verdict_record("comment-4", signed_at="")], ["comment-4"]),
        (
            [
                verdict_record("comment-5"),
                verdict_record("comment-6", state="withdrawn", signed_at="2027-01-01T00:00:00Z"),
            ],
            ["comment-5"],
        ),  # a withdrawn newer one leaves the older current
        ([], []),
    ],
)
def test_current_signoffs(records, expected):
    assert rules.current(records, SHA) == expected


BOT = "sweepbot-test[bot]"


@pytest.mark.parametrize(
    ("check", "own"),
    [
        ({"name": "signoff", "app": {"id": 1, "slug": "sweepbot-test"}}, True),
        ({"name": "signoff", "app": {"id": 1, "slug": "SweepBot-Test"}}, True),
        ({"name": "sweep-gate", "app": {"id": 1, "slug": "sweepbot-test"}}, False),  # another check of this App
        ({"name": "signoff", "app": {"id": 2, "slug": "other-app"}}, False),  # another App's check of that name
        ({"name": "signoff", "app": {}}, False),
        ({"name": "signoff"}, False),
        ({"name": "signoff", "app": "sweepbot-test"}, False),
        (None, False),
    ],
)
def test_own_check_run(check, own):
    assert own_check_run(check, "signoff", BOT) is own


def test_a_signoff_knows_when_it_was_last_written():
    holder = {
        "id": 7,
        "body": PHRASE,
        "user": {"login": "a"},
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-03T00:00:00Z",
    }
    assert rules.signoff_in("comment", holder, PHRASE).signed_at == "2026-01-03T00:00:00Z"
    review = {"id": 8, "body": PHRASE, "user": {"login": "a"}, "submitted_at": "2026-01-02T00:00:00Z"}
    assert rules.signoff_in("review", review, PHRASE).signed_at == "2026-01-02T00:00:00Z"


# -- which commit a sign-off is for ---------------------------------------------------------------


def committed(sha, date):
    return {"event": "committed", "sha": sha, "committer": {"name": "v", "email": "v@x", "date": date}}


def force_pushed(sha, at):
    return {"event": "head_ref_force_pushed", "commit_id": sha, "created_at": at}


T = "2026-01-01T00:00:{:02d}Z".format  # T(5): second 5


@pytest.mark.parametrize(
    ("timeline", "when", "head"),
    [
        ([committed("x", T(1))], T(5), "x"),
        ([committed("x", T(1)), committed("y", T(6))], T(5), "x"),  # a commit dated after the comment came after it
        ([committed("x", T(1)), committed("y", T(5))], T(5), "y"),  # the same second: the head by then
        ([committed("x", T(1)), committed("y", T(3))], T(5), "y"),
        # a commit dated after the comment: it and what follows came later, whatever the dates below it say
        ([committed("x", T(1)), committed("y", T(7)), committed("z", T(3))], T(5), "z"),
        ([committed("x", T(1)), force_pushed("z", T(4)), committed("z", T(2))], T(5), "z"),
        # a force push after the comment may have brought every commit listed now: only force pushes count then
        ([committed("z", T(2)), force_pushed("z", T(8))], T(5), None),
        ([force_pushed("y", T(3)), committed("y", T(2)), committed("w", T(4)), force_pushed("z", T(8))], T(5), "y"),
        ([force_pushed(None, T(3)), committed("y", T(2))], T(5), "y"),  # GitHub may not name the new head
        ([committed("x", T(6))], T(5), None),  # nothing as early as the comment
        ([{"event": "commented", "created_at": T(1)}, committed("x", "not a date")], T(5), None),
        ([committed("x", "2026-01-01T01:00:03+01:00")], T(5), "x"),  # an offset is honoured
        ([committed("x", T(1))], "", None),
    ],
)
def test_head_at(timeline, when, head):
    assert rules.head_at(timeline, when) == head


def test_the_ordering_of_equal_times_follows_the_timeline():
    assert rules.head_at([committed("x", T(3)), committed("y", T(3))], T(5)) == "y"
    assert rules.head_at([committed("y", T(3)), committed("x", T(3))], T(5)) == "x"


@pytest.mark.parametrize(
    ("source", "holder", "commit"),
    [
        ("review", {"commit_id": "c1"}, "c1"),  # a review counts for the commit it was written on
        ("review-comment", {"commit_id": "c2", "original_commit_id": "c1"}, "c1"),  # GitHub moves commit_id on
        ("review", {}, ""),  # none named: for no commit
        ("comment", {"commit_id": "c1"}, "x"),  # a comment: the PR's head when it was last written
    ],
)
def test_written_on(source, holder, commit):
    signoff = rules.signoff_in(
        source, {"id": 7, "body": PHRASE, "user": {"login": "a"}, "updated_at": T(5), **holder}, PHRASE
    )
    assert rules.written_on(signoff, [committed("x", T(1)), committed("y", T(9))]) == commit


def pushed_record(key, *, head=SHA, state="fresh", source="comment", signed_at=T(5), current=SHA):  # noqa: B008  T is str.format: a plain string
    return {
        "signoff": key,
        "source": source,
        "head_sha": head,
        "state": state,
        "signed_at": signed_at,
        "current_sha": current,
    }


NEWER = "c" * 40


@pytest.mark.parametrize(
    ("record", "changed"),
    [
        (pushed_record("comment-1"), {"state": "stale", "current_sha": NEWER}),  # for the head before the push
        (pushed_record("comment-1", state="withdrawn"), None),
        (pushed_record("comment-1", head=OLD, state="stale", current=SHA), {"current_sha": NEWER}),
        (pushed_record("comment-1", head=OLD, state="stale", current=NEWER), None),  # a redelivered push
        # a comment's verdict for the new head, written before GitHub says it was pushed: bound by a commit date
        (
            pushed_record("comment-1", head=NEWER, current=NEWER, signed_at=T(5)),
            {"head_sha": SHA, "state": "stale", "current_sha": NEWER},
        ),
        (
            pushed_record(
                "comment-1", head=NEWER, current=NEWER, signed_at=T(8)
            ),  # the same second: cannot tell, stale
            {"head_sha": SHA, "state": "stale", "current_sha": NEWER},
        ),
        (pushed_record("comment-1", head=NEWER, current=NEWER, signed_at=T(9)), None),  # written after the push
        (pushed_record("review-1", source="review", head=NEWER, current=NEWER, signed_at=T(5)), None),  # its own commit
    ],
)
def test_after_push(record, changed):
    found = rules.after_push({"k": record}, SHA, NEWER, T(8))
    if changed is None:
        assert found == {}
    else:
        assert found == {"k": {**record, **changed}}


def test_after_push_without_the_pushs_time_or_before_leaves_a_verdict_of_the_new_head():
    record = pushed_record("comment-1", head=NEWER, current=NEWER, signed_at=T(5))
    assert rules.after_push({"k": record}, SHA, NEWER, "") == {}
    assert rules.after_push({"k": record}, "", NEWER, T(8)) == {}


# -- owner groups ---------------------------------------------------------------------------------

GROUPED = parse(
    "* @core\nconfigs/ @broad\nconfigs/amd-* @AMD @acme/amd\nconfigs/nv-* @acme/nv\n"
    "docs/ \nconfigs/amd-x.yaml @acme/amd @amd\n"
)


def test_owner_groups_are_the_owners_of_the_last_matching_lines():
    groups = rules.owner_groups(
        GROUPED, ["configs/amd-a.yaml", "configs/amd-x.yaml", "README.md", "docs/a.md", "configs/nv-b.yaml"]
    )
    assert [(g.owners, g.lines, g.files) for g in groups] == [
        (("@core",), (1,), ("README.md",)),
        (("@AMD", "@acme/amd"), (3, 6), ("configs/amd-a.yaml", "configs/amd-x.yaml")),  # one group, two lines
        (("@acme/nv",), (4,), ("configs/nv-b.yaml",)),
    ]  # docs/a.md: a line without owners un-owns it


@pytest.mark.parametrize(
    ("signer", "teams", "sufficient", "covered", "through"),
    [
        ("amd", (), (), ["@acme/amd @amd"], ""),
        ("AMD", (), (), ["@acme/amd @amd"], ""),  # logins compare without case
        ("teammate", ("acme/amd",), (), ["@acme/amd @amd"], ""),
        ("teammate", ("acme/nv", "ACME/AMD"), (), ["@acme/amd @amd", "@acme/nv"], ""),
        ("core", (), (), ["@core"], ""),
        ("drive-by", (), (), [], ""),
        # owners the policy names suffice: through a group they are named in, their sign-off covers all
        ("core", (), ("@Core",), ["@core", "@acme/amd @amd", "@acme/nv"], "@core"),
        ("teammate", ("acme/nv",), ("@acme/nv",), ["@core", "@acme/amd @amd", "@acme/nv"], "@acme/nv"),
        ("amd", (), ("@core",), ["@acme/amd @amd"], ""),  # a sufficient owner the signer is not
        ("drive-by", (), ("@drive-by",), [], ""),  # named by the policy, but in no group of the PR
    ],
)
def test_covers(signer, teams, sufficient, covered, through):
    groups = rules.owner_groups(GROUPED, ["README.md", "configs/amd-a.yaml", "configs/nv-b.yaml"])
    assert rules.covers(groups, signer, teams, sufficient) == (covered, through)


REAL_FILES = [
    "inferencex-e2e/perf-changelog.yaml",
    "configs/amd-master.yaml",
    "configs/nvidia-master.yaml",
    "MODELS.md",
    "MODELS_zh.md",
    "experimental/operatorx/run.py",
]


@pytest.fixture
def real_owners(real_data):
    return parse((real_data / "CODEOWNERS").read_text(encoding="utf-8"))


def test_the_real_codeowners_groups(real_owners):
    groups = rules.owner_groups(real_owners, REAL_FILES)
    assert [(g.lines, g.files) for g in groups] == [
        ((1,), ("inferencex-e2e/perf-changelog.yaml",)),
        ((4,), ("configs/amd-master.yaml",)),
        ((7,), ("configs/nvidia-master.yaml",)),
        ((10, 11), ("MODELS.md", "MODELS_zh.md")),
        ((14,), ("experimental/operatorx/run.py",)),
    ]


@pytest.mark.parametrize(
    ("signer", "teams", "lines"),
    [
        ("billishyahao", (), [(4,)]),  # AMD's recipe only: not NVIDIA's, not the changelog
        ("ankur-singh", (), [(7,), (10, 11)]),
        ("kedarpotdar-nv", (), [(7,)]),
        ("core-member", ("InferenceX/core",), [(1,), (7,), (10, 11)]),  # the catch-all and the lines naming the team
        ("hbarclay", (), [(14,)]),
        ("drive-by", (), []),
    ],
)
def test_who_covers_what_by_the_real_codeowners(real_owners, signer, teams, lines):
    groups = rules.owner_groups(real_owners, REAL_FILES)
    covered, _ = rules.covers(groups, signer, teams)
    assert [g.lines for g in groups if g.key in covered] == lines


def test_a_vendor_alone_leaves_the_other_groups_of_a_real_pr_uncovered(real_owners):
    """The AMD owner's sign-off covers the AMD recipe's group, never NVIDIA's or the changelog's."""
    groups = rules.owner_groups(real_owners, REAL_FILES[:3])
    covered, _ = rules.covers(groups, "billishyahao", ())
    check = rules.groups_check(rules.group_rows(groups), {key: ["billishyahao"] for key in covered})
    assert (check.ok, check.code, check.params["missing"], check.params["total"]) == (False, "uncovered", 2, 3)
    assert [(g["lines"], g["by"]) for g in check.params["groups"]] == [
        ([1], []),
        ([7], []),
        ([4], ["billishyahao"]),
    ]  # those still needing a sign-off first


@pytest.mark.parametrize(
    ("groups", "by", "ok", "code", "missing"),
    [
        ([{"key": "a", "owners": ["@a"], "lines": [1], "files": ["x"], "more": 0}], {"a": ["a"]}, True, "covered", 0),
        ([{"key": "a", "owners": ["@a"], "lines": [1], "files": ["x"], "more": 0}], {}, False, "uncovered", 1),
        (
            [{"key": "a", "owners": ["@a"], "lines": [1], "files": ["x"], "more": 0}],
            {"b": ["b"]},
            False,
            "uncovered",
            1,
        ),
        ([], {"a": ["a"]}, None, "no_groups", None),  # no changed file has an owner
        (None, {"a": ["a"]}, False, "not_checked", None),  # a verdict written before groups were checked
    ],
)
def test_groups_check(groups, by, ok, code, missing):
    check = rules.groups_check(groups, by)
    assert (check.ok, check.code, check.params.get("missing")) == (ok, code, missing)


def test_many_groups_are_shown_up_to_a_limit_and_counted():
    rows = [
        {"key": f"k{i}", "owners": [f"@o{i}"], "lines": [i], "files": ["f"], "more": 0}
        for i in range(rules.SHOWN_GROUPS + 3)
    ]
    check = rules.groups_check(rows, {})
    assert (len(check.params["groups"]), check.params["more"], check.params["missing"]) == (
        rules.SHOWN_GROUPS,
        3,
        rules.SHOWN_GROUPS + 3,
    )


def test_the_authors_own_signoff_fails_the_codeowner_check():
    check = rules.codeowner_check(OWNERS, ["configs/amd-a.yaml"], "amd", (), authored=True)
    assert (check.ok, check.code, check.params["files"][0]["owners"]) == (False, "own_pr", ["@amd", "@acme/amd"])


# -- the sign-offs together -----------------------------------------------------------------------

ROWS = rules.group_rows(rules.owner_groups(GROUPED, ["configs/amd-a.yaml", "configs/nv-b.yaml"]))
AMD_KEY, NV_KEY = "@acme/amd @amd", "@acme/nv"


def signed(key, signer, covers, *, head=SHA, state="fresh", own=True, signed_at=T(1), groups=ROWS):  # noqa: B008
    checks = [
        {"name": "codeowner", "ok": own, "code": "x", "params": {}},
        {"name": "sweep", "ok": True, "code": "x", "params": {}},
        {"name": "checklist", "ok": True, "code": "x", "params": {}},
    ]
    record = {
        "signoff": key,
        "signer": signer,
        "head_sha": head,
        "state": state,
        "signed_at": signed_at,
        "outcome": "pass",
        "checks": checks,
        "covers": covers,
    }
    return record if groups is None else {**record, "groups": groups}


def settled(*records):
    found = rules.settle({r["signoff"]: r for r in records}, SHA)
    return {
        key: (r["outcome"], next(c["code"] for c in r["checks"] if c["name"] == "groups")) for key, r in found.items()
    }


@pytest.mark.parametrize(
    ("records", "expected"),
    [
        # a sign-off whose own checks hold waits for the other owner groups' sign-offs
        ([signed("comment-1", "amd", [AMD_KEY])], {"comment-1": ("wait", "uncovered")}),
        (
            [signed("comment-1", "amd", [AMD_KEY]), signed("comment-2", "nv", [NV_KEY])],
            {"comment-1": ("pass", "covered"), "comment-2": ("pass", "covered")},
        ),
        # a sign-off whose own checks fail covers nothing (an author's, a non-owner's, an incomplete checklist)
        (
            [signed("comment-1", "amd", [AMD_KEY]), signed("comment-2", "nv", [NV_KEY], own=False)],
            {"comment-1": ("wait", "uncovered"), "comment-2": ("fail", "uncovered")},
        ),
        # a stale or withdrawn sign-off covers nothing, and is left as it is
        (
            [signed("comment-1", "amd", [AMD_KEY]), signed("comment-2", "nv", [NV_KEY], head=OLD, state="stale")],
            {"comment-1": ("wait", "uncovered")},
        ),
        (
            [signed("comment-1", "amd", [AMD_KEY]), signed("comment-2", "nv", [NV_KEY], state="withdrawn")],
            {"comment-1": ("wait", "uncovered")},
        ),
        # a signer's newer sign-off supersedes the older one
        (
            [signed("comment-1", "amd", [AMD_KEY, NV_KEY]), signed("comment-2", "amd", [AMD_KEY], signed_at=T(2))],
            {"comment-2": ("wait", "uncovered")},
        ),
        ([signed("comment-1", "core", [AMD_KEY, NV_KEY])], {"comment-1": ("pass", "covered")}),  # a sufficient owner
        # a verdict written before the groups were checked covers none, and says so
        ([signed("comment-1", "amd", [AMD_KEY, NV_KEY], groups=None)], {"comment-1": ("fail", "not_checked")}),
        ([signed("comment-1", "amd", [], groups=[])], {"comment-1": ("pass", "no_groups")}),
    ],
)
def test_settle(records, expected):
    assert settled(*records) == expected


def test_settle_keeps_each_verdicts_other_checks_and_orders_failing_first():
    (record,) = rules.settle({"comment-1": signed("comment-1", "amd", [AMD_KEY])}, SHA).values()
    assert [(c["name"], c["ok"]) for c in record["checks"]] == [
        ("groups", False),
        ("codeowner", True),
        ("sweep", True),
        ("checklist", True),
    ]
    assert [g["by"] for g in record["checks"][0]["params"]["groups"]] == [[], ["amd"]]


@pytest.mark.parametrize(
    ("owners", "error"),
    [
        ('["@InferenceX/core", "@solo"]', None),
        (
            '["InferenceX/core"]',
            "signoff.sufficient_owners[0]: 'InferenceX/core' is not an owner as CODEOWNERS names"
            " one (`@user` or `@org/team`)",
        ),
        ('["owner@example.com"]', "signoff.sufficient_owners[0]: 'owner@example.com' is not an owner"),
        ("[3]", "signoff.sufficient_owners[0]: expected a non-empty string, got a number"),
    ],
)
def test_sufficient_owners_must_be_owners_that_name_an_account(owners, error):
    from bot.core.config import ConfigError, parse_repo_config

    text = f"signoff:\n  sufficient_owners: {owners}\n"
    if error is None:
        assert parse_repo_config(text)
        return
    with pytest.raises(ConfigError) as raised:
        parse_repo_config(text)
    assert [str(e) for e in raised.value.errors][0].startswith(error)


@pytest.mark.parametrize(
    ("pull", "at"),
    [
        ({"updated_at": T(8), "head": {"repo": {"pushed_at": T(7)}}}, T(8)),
        ({"updated_at": T(7), "head": {"repo": {"pushed_at": "2026-01-01T01:00:06+01:00"}}}, T(7)),  # an offset
        (
            {"updated_at": T(7), "head": {"repo": {"pushed_at": "2026-01-01T01:00:09+01:00"}}},
            "2026-01-01T01:00:09+01:00",
        ),
        ({"updated_at": T(7), "head": {"repo": {"pushed_at": T(9)}}}, T(9)),
        ({"updated_at": "never", "head": {"repo": None}}, ""),
        ({}, ""),
    ],
)
def test_push_time_is_the_latest_time_github_gives_the_push(pull, at):
    assert rules.push_time(pull) == at
