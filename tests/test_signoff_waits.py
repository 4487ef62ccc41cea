"""Sign-offs that wait through the webhook into the fake GitHub: a sign-off whose own checks hold while
its sweep or pin is not there yet is a pending verdict (⏳, the `signoff` check in progress), edited in place as the
sweep and the pin come, until PASS; only a failing check of the sign-off's own (CODEOWNER, checklist) is a FAIL,
and its first line says what the signer must change."""

from __future__ import annotations

from harness import REPO
from test_reuse_command import command, fake_clock, finished_run  # noqa: F401
from test_signoff import AMD_FILE, owned, sign, signoff_body, verdict, verdicts  # noqa: F401
from test_sweep_gate import (  # noqa: F401  the fixtures this module's tests take
    CHANGELOG,
    FAIL_FAST,
    label,
    make_harness,
    no_merge_wait,  # noqa: F401
    open_pull,
    repo,
    runs,
)


def shown(body: str) -> str:
    """What a reader sees of a verdict before expanding anything: the text above its first <details>."""
    return body.split("<details>", 1)[0]


def signoff_checks(github, sha: str) -> list[dict]:
    """The `signoff` check runs on a commit, oldest first (GitHub shows the newest)."""
    return [c for c in github.check_runs(REPO, sha) if c["name"] == "signoff"]


async def signed_while_the_sweep_runs(h, number: int, body: str | None = None) -> tuple[dict, dict]:
    """A PR the AMD owner owns every changed file of (both owner groups), labelled, its sweep dispatched by the bot
    and still running, signed off by that owner: (the run, the sign-off comment)."""
    open_pull(h.github, number, files=(CHANGELOG, AMD_FILE))
    await label(h, number, FAIL_FAST)
    (run,) = runs(h.github)
    h.github.start_run(REPO, run["id"])
    return run, await sign(h, number, "amd-owner", body)


async def test_a_signoff_given_while_the_sweep_runs_waits_and_passes_in_place_once_pinned(owned, make_harness):
    """Pins the bug "FAIL while only waiting": a CODEOWNER's complete sign-off given while the sweep ran got
    "### ❌ FAIL" and a failing `signoff` check whose only ❌ items were the unfinished sweep and the missing pin,
    nothing the signer could fix, and was told "A CODEOWNER or checklist problem is fixed by editing the
    sign-off". Now it waits (⏳, the check in progress), says whose turn it is, and turns to PASS in the same
    comment when the run is green and pinned."""
    h = await make_harness()
    run, comment = await signed_while_the_sweep_runs(h, 150)
    head = owned.pull(REPO, 150)["head"]["sha"]
    first = verdict(owned, 150, comment)
    assert first["record"]["outcome"] == "wait", first["body"]
    assert first["body"].startswith(
        "### ⏳ WAITING: sign-off by `amd-owner` waits for a maintainer to pin a green"
        " sweep; nothing for `amd-owner` to change\n"
    ), first["body"]
    visible = shown(first["body"])
    assert "❌" not in visible and "FAIL" not in visible and "edit" not in visible.lower(), visible
    assert [line[:12] for line in visible.splitlines() if line.startswith("- ")] == [
        "- ⏳ **Sweep:",
        "- ⏳ **Reuse ",
    ], "only the open checks show, each ⏳"
    assert f"[run {run['id']}]" in visible and "is still `in_progress`" in visible
    (check,) = signoff_checks(owned, head)
    assert (check["status"], check["conclusion"]) == ("in_progress", None)

    owned.add_artifact(REPO, run["id"], "results_bmk_dsr1")  # what a pin needs of the run
    await h.deliver("workflow_run", owned.workflow_run_payload(REPO, run["id"], "completed", conclusion="success"))
    green = verdict(owned, 150, comment)
    assert green["record"]["outcome"] == "wait" and green["id"] == first["id"]
    assert green["body"].startswith(
        "### ⏳ WAITING: sign-off by `amd-owner` waits for a maintainer to pin the"
        " green run; nothing for `amd-owner` to change\n"
    ), green["body"]
    (check,) = signoff_checks(owned, head)
    assert (check["status"], check["conclusion"]) == ("in_progress", None)

    await command(h, 150, f"/use {run['id']}")
    passed = verdict(owned, 150, comment)
    assert passed["id"] == first["id"] and len(verdicts(owned, 150)) == 1
    assert passed["record"]["outcome"] == "pass", passed["body"]
    assert passed["body"].startswith("### ✅ PASS: sign-off by `amd-owner`; nothing left to do\n")
    assert "- " not in shown(passed["body"]), "nothing is open, so nothing is listed above the details"
    (check,) = signoff_checks(owned, head)  # the same check run, completed
    assert (check["status"], check["conclusion"]) == ("completed", "success")


async def test_a_failed_sweep_is_said_and_is_not_the_signers_to_fix(owned, make_harness):
    """The sweep fails after the sign-off: the verdict still waits (the signer has nothing to change) and its first
    line names the failed run and whose turn it is; the sweep's line is ❌, the one thing someone must fix."""
    h = await make_harness()
    run, comment = await signed_while_the_sweep_runs(h, 151)
    await h.deliver("workflow_run", owned.workflow_run_payload(REPO, run["id"], "completed", conclusion="failure"))
    found = verdict(owned, 151, comment)
    assert found["record"]["outcome"] == "wait", found["body"]
    headline = found["body"].splitlines()[0]
    assert headline.startswith(f"### ⏳ WAITING: sign-off by `amd-owner` waits for a green sweep ([run {run['id']}]")
    assert "ended with `failure`: the PR's author fixes it, or a maintainer runs it again" in headline
    assert headline.endswith("nothing for `amd-owner` to change")
    assert [line[:12] for line in shown(found["body"]).splitlines() if line.startswith("- ")] == [
        "- ❌ **Sweep:",
        "- ⏳ **Reuse ",
    ]
    (check,) = signoff_checks(owned, owned.pull(REPO, 151)["head"]["sha"])
    assert check["status"] == "in_progress"


async def test_a_real_problem_is_still_a_fail_that_says_what_the_signer_must_change(owned, make_harness):
    """The sign-off's own checks still fail it, sweep or no sweep: a signer who owns none of the changed files, and
    an owner who left an item unticked. The first line says what is to change and whose it is; the unticked item
    is named above the details; the `signoff` check fails."""
    h = await make_harness()
    run, unticked = await signed_while_the_sweep_runs(
        h,
        152,
        signoff_body("amd-owner").replace(
            "- [x] Verified that this PR passes evals.", "- [ ] Verified that this PR passes evals."
        ),
    )
    stranger = await sign(h, 152, "drive-by")
    found = verdict(owned, 152, unticked)
    assert found["record"]["outcome"] == "fail", found["body"]
    assert found["body"].startswith(
        "### ❌ FAIL: sign-off by `amd-owner`: `amd-owner` edits the sign-off to match the checklist, as listed below\n"
    ), found["body"]
    assert "  - Not ticked: `Verified that this PR passes evals.`" in shown(found["body"])
    other = verdict(owned, 152, stranger)
    assert other["record"]["outcome"] == "fail"
    assert other["body"].startswith(
        "### ❌ FAIL: sign-off by `drive-by`: `drive-by` owns none of the changed files,"
        " so this sign-off cannot count; an owner of them signs off instead\n"
    )
    (check,) = signoff_checks(owned, owned.pull(REPO, 152)["head"]["sha"])
    assert (check["status"], check["conclusion"]) == ("completed", "failure")


async def test_a_check_that_passed_and_waits_again_is_a_new_check_run(owned, make_harness):
    """A pin withdrawn after a PASS: the verdict waits again and so does the `signoff` check. GitHub never moves a
    completed check run back to in progress, so the bot makes a new one of that name, which GitHub then shows."""
    h = await make_harness()
    open_pull(owned, 153, files=(CHANGELOG, AMD_FILE))
    run = finished_run(owned, 153)
    use = await command(h, 153, f"/use {run['id']}")
    comment = await sign(h, 153, "amd-owner")
    head = owned.pull(REPO, 153)["head"]["sha"]
    assert [c["conclusion"] for c in signoff_checks(owned, head)] == ["success"]
    await h.deliver("issue_comment", owned.issue_comment_payload(REPO, 153, use, "deleted"))
    found = verdict(owned, 153, comment)
    assert found["record"]["outcome"] == "wait", found["body"]
    assert [(c["status"], c["conclusion"]) for c in signoff_checks(owned, head)] == [
        ("completed", "success"),
        ("in_progress", None),
    ]
