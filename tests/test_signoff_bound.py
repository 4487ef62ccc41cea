"""Sign-offs bound to a commit through the webhook into the fake GitHub: a review counts for the commit
it was written on (`commit_id`), a comment for the PR's head when it was written (by the PR's timeline of
commits and force pushes, not the head the bot reads later), and a push after it makes it stale."""

from __future__ import annotations

from harness import REPO
from test_reuse_command import fake_clock, finished_run  # noqa: F401
from test_signoff import AMD_FILE, owned, signoff_body, signoff_check, verdict  # noqa: F401
from test_sweep_gate import CHANGELOG, make_harness, no_merge_wait, open_pull, push, repo, send  # noqa: F401

NO_REUSE = "signoff:\n  require_reuse: false\n"  # the green sweep alone decides: no pin is asked for
NEW = "e" * 40


def green_pr(github, number: int) -> str:
    """A PR whose head has a green sweep the bot dispatched; its head."""
    github.set_file(REPO, ".github/sweepbot.yml", NO_REUSE, ref="main")
    open_pull(github, number, files=(CHANGELOG, AMD_FILE))
    finished_run(github, number)
    return github.pull(REPO, number)["head"]["sha"]


async def deliver_comment(h, number: int, comment: dict) -> None:
    await h.deliver("issue_comment", h.github.issue_comment_payload(REPO, number, comment))


async def test_a_review_of_an_older_commit_does_not_pass_on_the_new_head(owned, make_harness):
    """Pins the bug "a review of an older commit passes on the new head": the CODEOWNER reviewed X, the vendor
    pushed Y while the review was written; the verdict said "PASS ... on commit Y" and `signoff` was success on
    Y, which nobody reviewed. The review counts for X (its commit_id) and is stale on Y."""
    h = await make_harness()
    reviewed = green_pr(owned, 90)
    push(owned, 90, NEW)
    await send(h, 90, "synchronize", sender="partner")
    review = owned.add_review(REPO, 90, signoff_body("amd-owner"), user="amd-owner", commit_id=reviewed)
    await h.deliver("pull_request_review", owned.pull_request_review_payload(REPO, 90, review))
    found = verdict(owned, 90, review, "review")
    assert (found["record"]["head_sha"], found["record"]["state"]) == (reviewed, "stale"), found["body"]
    assert f"on commit `{reviewed[:7]}`, the commit it was written on" in found["body"]
    assert found["body"].startswith(
        f"### ➖ STALE: sign-off by `amd-owner` is for `{reviewed[:7]}`, and the PR is"
        " now at `eeeeeee`; `amd-owner` signs off again for it to count\n"
    )
    check = signoff_check(owned, NEW)
    assert check["conclusion"] == "failure"
    assert "➖ STALE [sign-off by `amd-owner`]" in check["output"]["summary"]
    assert f"on `{reviewed[:7]}`, a commit before the latest push" in check["output"]["summary"]


async def test_a_review_of_the_head_still_passes(owned, make_harness):
    """The other side of the review's commit: a review written on the head passes on it."""
    h = await make_harness()
    head = green_pr(owned, 91)
    review = owned.add_review(REPO, 91, signoff_body("amd-owner"), user="amd-owner", commit_id=head)
    await h.deliver("pull_request_review", owned.pull_request_review_payload(REPO, 91, review))
    found = verdict(owned, 91, review, "review")
    assert (found["record"]["outcome"], found["record"]["state"]) == ("pass", "fresh"), found["body"]
    assert signoff_check(owned, head)["conclusion"] == "success"


async def test_a_comment_written_before_a_push_is_judged_on_its_head_and_stays_stale(owned, make_harness):
    """Pins the bug "a push racing a sign-off comment": the comment was verified against the head read when
    the bot handled it, so a push landing first got the PASS, and the `synchronize` after it did not mark it
    stale. It is judged on the head GitHub had when it was written, and stale after the push."""
    h = await make_harness()
    written_on = green_pr(owned, 92)
    comment = owned.add_comment(REPO, 92, signoff_body("amd-owner"), user="amd-owner")
    push(owned, 92, NEW)  # lands before the bot handles the comment
    finished_run(owned, 92)  # and is swept green too: only the sign-off's commit is wrong
    await deliver_comment(h, 92, comment)
    found = verdict(owned, 92, comment)
    assert (found["record"]["head_sha"], found["record"]["state"]) == (written_on, "stale"), found["body"]
    assert f"on commit `{written_on[:7]}`, the PR's head when it was written" in found["body"]
    await send(h, 92, "synchronize", sender="partner")
    assert verdict(owned, 92, comment)["record"]["state"] == "stale"
    assert signoff_check(owned, NEW)["conclusion"] == "failure"


async def test_a_commit_dated_before_the_comment_but_pushed_after_it_is_put_right_by_the_push(owned, make_harness):
    """A commit's date is its committer's (made before the sign-off and pushed after it, or dated by hand), so
    the timeline puts it before the comment; the `synchronize`, which GitHub dates at the push, makes the verdict
    stale and names the head the comment was written on."""
    h = await make_harness()
    written_on = green_pr(owned, 93)
    dated = owned.pull(REPO, 93)["updated_at"]  # the commit says it was made before the comment below
    comment = owned.add_comment(REPO, 93, signoff_body("amd-owner"), user="amd-owner")
    owned.push_commit(REPO, 93, sha=NEW, committed_at=dated)
    await deliver_comment(h, 93, comment)
    assert verdict(owned, 93, comment)["record"]["head_sha"] == NEW  # as far as the dates tell
    await send(h, 93, "synchronize", sender="partner")
    found = verdict(owned, 93, comment)
    assert (found["record"]["head_sha"], found["record"]["state"]) == (written_on, "stale"), found["body"]
    assert signoff_check(owned, NEW)["conclusion"] == "failure"


async def test_a_comment_written_before_a_force_push_is_stale_whatever_the_new_commit_says(owned, make_harness):
    """A force push is dated by GitHub (`head_ref_force_pushed`): the commit it brings, dated before the
    comment (a rebase keeps old dates), does not make the comment a sign-off of it. The head the comment was
    written on left the PR's commits, so the verdict cannot name it, and says so."""
    h = await make_harness()
    green_pr(owned, 94)
    dated = owned.pull(REPO, 94)["updated_at"]
    comment = owned.add_comment(REPO, 94, signoff_body("amd-owner"), user="amd-owner")
    owned.force_push(REPO, 94, sha=NEW, committed_at=dated)
    finished_run(owned, 94)
    await deliver_comment(h, 94, comment)
    found = verdict(owned, 94, comment)
    assert (found["record"]["head_sha"], found["record"]["state"]) == ("", "stale"), found["body"]
    assert "on an earlier head of this PR, which a force push replaced" in found["body"]
    assert found["body"].startswith(
        "### ➖ STALE: sign-off by `amd-owner` is for an earlier head, and the PR is now at `eeeeeee`"
    )
    assert signoff_check(owned, NEW)["conclusion"] == "failure"


async def test_a_comment_written_after_a_push_passes_on_the_new_head(owned, make_harness):
    """The other side of the race: a sign-off written once the push landed is a sign-off of the new head."""
    h = await make_harness()
    green_pr(owned, 95)
    push(owned, 95, NEW)
    await send(h, 95, "synchronize", sender="partner")
    finished_run(owned, 95)
    comment = owned.add_comment(REPO, 95, signoff_body("amd-owner"), user="amd-owner")
    await deliver_comment(h, 95, comment)
    found = verdict(owned, 95, comment)
    assert (found["record"]["head_sha"], found["record"]["outcome"], found["record"]["state"]) == (
        NEW,
        "pass",
        "fresh",
    ), found["body"]
    assert signoff_check(owned, NEW)["conclusion"] == "success"


async def test_a_review_comment_counts_for_the_commit_it_was_written_on(owned, make_harness):
    """A line comment carries its commit too (`original_commit_id`): one written on X does not pass on Y."""
    h = await make_harness()
    reviewed = green_pr(owned, 96)
    push(owned, 96, NEW)
    line = owned.add_review_comment(
        REPO, 96, signoff_body("amd-owner"), user="amd-owner", path=AMD_FILE, commit_id=reviewed
    )
    await h.deliver("pull_request_review_comment", owned.review_comment_payload(REPO, 96, line))
    found = verdict(owned, 96, line, "review-comment")
    assert (found["record"]["head_sha"], found["record"]["state"]) == (reviewed, "stale"), found["body"]
    assert signoff_check(owned, NEW)["conclusion"] == "failure"
