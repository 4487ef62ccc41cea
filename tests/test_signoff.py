"""Sign-off verification through the webhook into the fake GitHub: one verdict per sign-off, edited in
place, and a `signoff` check run that succeeds only while a sign-off of the PR's head passes."""

from __future__ import annotations

import pytest
from harness import REPO
from test_reuse_command import command, fake_clock, finished_run  # noqa: F401
from test_sweep_gate import CHANGELOG, ENTRY, english, make_harness, no_merge_wait, open_pull, push, repo  # noqa: F401

from bot.rules.markers import read_hidden_record

PHRASE = "As a PR reviewer and CODEOWNER, I have reviewed this and have"
CODEOWNERS = """\
# broad rules first: a later, narrower line wins
*                    @catchall-one @catchall-two
configs/             @broad-owner
configs/amd-*        @amd-owner
configs/nvidia-*     @acme/nvidia
inferencex-e2e/      @amd-owner @acme/nvidia
"""
CHECKLIST = """\
# Review checklist

## Template
```
As a PR reviewer and CODEOWNER, I have reviewed this and have:
- [ ] Verified that as of the moment of typing this, this is the latest version of [PR_REVIEW_CHECKLIST.md](https://example.com/c.md)
- [ ] Verified that this PR has passed PR validation. Please link to GitHub Action workflow that shows this.
- [ ] Verified that this PR passes evals.
- [ ] Verified that this PR does not patch the inference engine:
  - [ ] not even with **inline** patches

Signed: `FILL_IN_GITHUB_USERNAME`
```
"""
AMD_FILE = "configs/amd-master.yaml"


def template_block() -> str:
    lines = CHECKLIST.split("\n")
    start = lines.index("```") + 1
    return "\n".join(lines[start : lines.index("```", start)])


def signoff_body(signer: str, *, block: str | None = None) -> str:
    body = (block or template_block()).replace("[ ]", "[x]")
    return body.replace("`FILL_IN_GITHUB_USERNAME`", f"@{signer}")


@pytest.fixture
def owned(repo):
    repo.set_file(REPO, ".github/CODEOWNERS", CODEOWNERS, ref="main")
    repo.set_file(REPO, "docs/PR_REVIEW_CHECKLIST.md", CHECKLIST, ref="main")
    repo.add_team("acme", "nvidia", ["nv-member"], pending=["nv-invited"])
    repo.set_permission(REPO, "maintainer", "write")
    return repo


def verdicts(github, number: int) -> dict[str, dict]:
    """The bot's verdict comments by sign-off key: {key: {"body": english text, "record": hidden record}}."""
    found = {}
    for c in github.comments(REPO, number):
        if c["user"]["login"] == github.bot_login and c["body"].startswith("<!-- sweepbot:signoff-"):
            record = read_hidden_record("signoff", c["body"])
            text = english(c["body"]).split("\n", 2)[2]  # after the marker and the hidden record
            found[record["signoff"]] = {"body": text, "record": record, "id": c["id"]}
    return found


def verdict(github, number: int, comment: dict, source: str = "comment") -> dict:
    return verdicts(github, number)[f"{source}-{comment['id']}"]


def signoff_check(github, sha: str) -> dict:
    """The `signoff` check run GitHub shows on `sha`: the newest of that name (one that passed or failed and then
    waits again is a new one: GitHub never moves a completed check run back)."""
    found = [c for c in github.check_runs(REPO, sha) if c["name"] == "signoff"]
    assert found and all(c["status"] == "completed" for c in found[:-1]), found
    return found[-1]


def check_line(body: str, title: str) -> str:
    (line,) = [ln for ln in body.splitlines() if f"**{title}:**" in ln]
    return line


async def sign(h, number: int, signer: str, body: str | None = None) -> dict:
    comment = h.github.add_comment(REPO, number, body if body is not None else signoff_body(signer), user=signer)
    await h.deliver("issue_comment", h.github.issue_comment_payload(REPO, number, comment))
    return comment


async def ready(h, number: int, files=(CHANGELOG, AMD_FILE)) -> dict:
    """A PR with a green sweep on its head, pinned by a maintainer."""
    open_pull(h.github, number, files=tuple(files))
    run = finished_run(h.github, number)
    await command(h, number, f"/use {run['id']}")
    return run


async def test_the_owner_of_one_changed_file_passes_and_the_check_succeeds(owned, make_harness):
    h = await make_harness()
    run = await ready(h, 50)
    comment = await sign(h, 50, "amd-owner")
    found = verdict(owned, 50, comment)
    assert found["record"]["outcome"] == "pass", found["body"]
    assert found["body"].startswith("### ✅ PASS: sign-off by `amd-owner`")
    assert "`configs/amd-master.yaml`: `@amd-owner` (line 4)" in found["body"]
    assert f"[run {run['id']}]" in check_line(found["body"], "Sweep")
    assert "✅" in check_line(found["body"], "Reuse pin")
    assert "All 5 items" in check_line(found["body"], "Checklist")
    check = signoff_check(owned, owned.pull(REPO, 50)["head"]["sha"])
    assert check["conclusion"] == "success"


async def test_judgement_items_are_listed_as_not_verified_never_as_passed(owned, make_harness):
    h = await make_harness()
    await ready(h, 51)
    comment = await sign(h, 51, "amd-owner")
    body = verdict(owned, 51, comment)["body"]
    not_verified = body.split("<summary><b>Not verified by the bot: 3 items</b></summary>", 1)[1]
    not_verified = not_verified.split("</details>", 1)[0]
    assert "`Verified that this PR passes evals.`" in not_verified
    assert "`not even with inline patches`" in not_verified
    assert "PR validation" not in not_verified  # the sweep check stands for that item
    assert "latest version" not in not_verified  # and the checklist check for this one


async def test_a_non_owner_fails_and_the_verdict_names_the_files_owners(owned, make_harness):
    h = await make_harness()
    await ready(h, 52)
    comment = await sign(h, 52, "drive-by")
    found = verdict(owned, 52, comment)
    assert found["record"]["outcome"] == "fail"
    line = check_line(found["body"], "CODEOWNER")
    assert line.startswith("- ❌") and "owns none of the changed files" in line
    assert "`configs/amd-master.yaml`: `@amd-owner` (line 4)" in found["body"]
    assert f"`{CHANGELOG}`: `@amd-owner` and `@acme/nvidia` (line 6)" in found["body"]
    assert found["body"].index("**CODEOWNER:**") < found["body"].index("**Sweep:**")  # failing checks first
    assert signoff_check(owned, owned.pull(REPO, 52)["head"]["sha"])["conclusion"] == "failure"


async def test_a_team_owner_passes_through_membership_and_an_invitation_does_not(owned, make_harness):
    h = await make_harness()
    await ready(h, 53, files=(CHANGELOG, "configs/nvidia-master.yaml"))
    member = await sign(h, 53, "nv-member")
    invited = await sign(h, 53, "nv-invited")
    assert verdict(owned, 53, member)["record"]["outcome"] == "pass"
    assert verdict(owned, 53, invited)["record"]["outcome"] == "fail"
    asked = [r.path for r in owned.requests if "/teams/" in r.path]
    assert asked == ["/orgs/acme/teams/nvidia/memberships/nv-member", "/orgs/acme/teams/nvidia/memberships/nv-invited"]


async def test_a_team_github_will_not_show_says_so_instead_of_calling_the_signer_a_non_owner(owned, make_harness):
    h = await make_harness()
    await ready(h, 54, files=(CHANGELOG, "configs/nvidia-master.yaml"))
    owned.fail_next("GET", r"/teams/", status=403, times=5)
    comment = await sign(h, 54, "nv-member")
    line = check_line(verdict(owned, 54, comment)["body"], "CODEOWNER")
    assert "`members: read`" in line and "`@acme/nvidia`" not in line and "`acme/nvidia`" in line


async def test_a_catch_all_rule_alone_passes_for_any_listed_owner(owned, make_harness):
    h = await make_harness()
    open_pull(owned, 55, entry=None, files=("README.md",))
    for signer in ("catchall-one", "catchall-two"):
        comment = await sign(h, 55, signer)
        found = verdict(owned, 55, comment)
        assert found["record"]["outcome"] == "pass", found["body"]
        assert check_line(found["body"], "Sweep").startswith("- ➖")  # a README change asks for no sweep
    assert verdict(owned, 55, await sign(h, 55, "broad-owner"))["record"]["outcome"] == "fail"


async def test_the_last_matching_rule_wins_over_an_earlier_broader_one(owned, make_harness):
    h = await make_harness()
    await ready(h, 56, files=(AMD_FILE,))
    broad = await sign(h, 56, "broad-owner")
    assert verdict(owned, 56, broad)["record"]["outcome"] == "fail"
    assert "`configs/amd-master.yaml`: `@amd-owner` (line 4)" in verdict(owned, 56, broad)["body"]


async def test_codeowners_changed_in_the_pr_itself_does_not_count(owned, make_harness):
    h = await make_harness()
    await ready(h, 57, files=(CHANGELOG, AMD_FILE, ".github/CODEOWNERS"))
    head = owned.pull(REPO, 57)["head"]["sha"]
    owned.set_file(REPO, ".github/CODEOWNERS", "* @intruder\n", ref=head)
    owned.set_file(REPO, ".github/CODEOWNERS", "* @intruder\n", ref="recipe-57")
    comment = await sign(h, 57, "intruder")
    assert verdict(owned, 57, comment)["record"]["outcome"] == "fail"
    assert not any(
        "CODEOWNERS" in r.path and r.query.get("ref") != "main" for r in owned.requests if "/contents/" in r.path
    )


async def test_one_unticked_item_fails_naming_it(owned, make_harness):
    h = await make_harness()
    await ready(h, 58)
    body = signoff_body("amd-owner").replace(
        "- [x] Verified that this PR passes evals.", "- [ ] Verified that this PR passes evals."
    )
    found = verdict(owned, 58, await sign(h, 58, "amd-owner", body))
    assert found["record"]["outcome"] == "fail"
    assert "  - Not ticked: `Verified that this PR passes evals.`" in found["body"]


async def test_an_outdated_template_with_one_item_reworded_fails_naming_it(owned, make_harness):
    h = await make_harness()
    await ready(h, 59)
    body = signoff_body("amd-owner").replace("does not patch the inference engine", "does not patch the engine")
    found = verdict(owned, 59, await sign(h, 59, "amd-owner", body))
    assert found["record"]["outcome"] == "fail"
    assert (
        "  - Worded differently from the template: `Verified that this PR does not patch the inference engine:`,"
        " written as `Verified that this PR does not patch the engine:`"
    ) in found["body"]


async def test_a_signed_line_naming_someone_else_fails(owned, make_harness):
    h = await make_harness()
    await ready(h, 60)
    body = signoff_body("amd-owner").replace("@amd-owner", "@someone-else")
    found = verdict(owned, 60, await sign(h, 60, "amd-owner", body))
    assert "`Signed:` names `someone-else`, not the signer `amd-owner`" in found["body"]


async def test_no_sweep_run_yet_is_waited_for(owned, make_harness):
    """No sweep and no pin yet are nothing the signer can fix: the verdict waits (⏳), it does not fail."""
    h = await make_harness()
    open_pull(owned, 61, files=(CHANGELOG, AMD_FILE))
    found = verdict(owned, 61, await sign(h, 61, "amd-owner"))
    assert found["record"]["outcome"] == "wait"
    assert check_line(found["body"], "Sweep").startswith("- ⏳ **Sweep:** No sweep run has started on a commit of")
    assert check_line(found["body"], "Reuse pin").startswith("- ⏳ **Reuse pin:** No maintainer has pinned")
    assert signoff_check(owned, owned.pull(REPO, 61)["head"]["sha"])["status"] == "in_progress"


async def test_a_failed_sweep_is_named_as_the_latest_run(owned, make_harness):
    h = await make_harness()
    open_pull(owned, 62, files=(CHANGELOG, AMD_FILE))
    run = finished_run(owned, 62, conclusion="failure")
    line = check_line(verdict(owned, 62, await sign(h, 62, "amd-owner"))["body"], "Sweep")
    assert f"the latest, [run {run['id']}]" in line and "`failure`" in line


async def test_a_green_run_on_a_commit_no_longer_in_the_pr_does_not_count(owned, make_harness):
    h = await make_harness()
    open_pull(owned, 63, files=(CHANGELOG, AMD_FILE))
    finished_run(owned, 63, sha="f" * 40)
    line = check_line(verdict(owned, 63, await sign(h, 63, "amd-owner"))["body"], "Sweep")
    assert line.startswith("- ⏳ **Sweep:** No sweep run has started on a commit of this PR yet"), line


async def test_a_new_push_after_pass_marks_the_verdict_stale_and_the_check_fails_on_the_new_head(owned, make_harness):
    h = await make_harness()
    await ready(h, 64)
    comment = await sign(h, 64, "amd-owner")
    old = owned.pull(REPO, 64)["head"]["sha"]
    assert signoff_check(owned, old)["conclusion"] == "success"
    push(owned, 64, "e" * 40)
    await h.deliver("pull_request", owned.pull_request_payload(REPO, 64, "synchronize"))
    found = verdict(owned, 64, comment)
    assert found["record"]["state"] == "stale"
    assert found["body"].startswith(
        f"### ➖ STALE: sign-off by `amd-owner` is for `{old[:7]}`, and the PR is now at"
        " `eeeeeee`; `amd-owner` edits the sign-off, or signs off again, for it to count"
    )
    new_check = signoff_check(owned, "e" * 40)
    assert new_check["conclusion"] == "failure"
    assert "➖ STALE" in new_check["output"]["summary"]


async def test_an_edited_signoff_updates_the_same_verdict_comment(owned, make_harness):
    h = await make_harness()
    await ready(h, 65)
    before = signoff_body("amd-owner").replace(
        "- [x] Verified that this PR passes evals.", "- [ ] Verified that this PR passes evals."
    )
    comment = await sign(h, 65, "amd-owner", before)
    first = verdict(owned, 65, comment)
    assert first["record"]["outcome"] == "fail"
    comment["body"] = signoff_body("amd-owner")
    await h.deliver(
        "issue_comment", owned.issue_comment_payload(REPO, 65, comment, "edited", changes={"body": {"from": before}})
    )
    second = verdict(owned, 65, comment)
    assert second["id"] == first["id"] and second["record"]["outcome"] == "pass"
    assert len(verdicts(owned, 65)) == 1


async def test_an_edit_after_a_push_verifies_the_new_head(owned, make_harness):
    """The edit is the comment's latest writing (GitHub's `updated_at`): it is a sign-off of the head then."""
    h = await make_harness()
    await ready(h, 66)
    comment = await sign(h, 66, "amd-owner")
    push(owned, 66, "d" * 40)
    await h.deliver("pull_request", owned.pull_request_payload(REPO, 66, "synchronize"))
    finished_run(owned, 66)  # the new head swept green too
    old_body = comment["body"]
    comment = owned.edit_comment(REPO, comment["id"], old_body + "\n\n- re-checked after the push")
    await h.deliver(
        "issue_comment", owned.issue_comment_payload(REPO, 66, comment, "edited", changes={"body": {"from": old_body}})
    )
    record = verdict(owned, 66, comment)["record"]
    assert (record["state"], record["head_sha"]) == ("fresh", "d" * 40)
    assert signoff_check(owned, "d" * 40)["conclusion"] == "success"


async def test_two_signers_get_two_verdicts_and_one_pass_is_enough_for_the_check(owned, make_harness):
    """A stranger's failing sign-off does not hold back an owner's that covers every owner group (the AMD owner
    owns both files' lines here; tests/test_signoff_groups.py has PRs that need more than one owner)."""
    h = await make_harness()
    await ready(h, 67, files=(CHANGELOG, AMD_FILE))
    amd = await sign(h, 67, "amd-owner")
    stranger = await sign(h, 67, "drive-by")
    found = verdicts(owned, 67)
    assert sorted(found) == sorted([f"comment-{amd['id']}", f"comment-{stranger['id']}"])
    assert found[f"comment-{amd['id']}"]["record"]["outcome"] == "pass"
    assert found[f"comment-{stranger['id']}"]["record"]["outcome"] == "fail"
    check = signoff_check(owned, owned.pull(REPO, 67)["head"]["sha"])
    assert check["conclusion"] == "success"
    assert check["output"]["summary"].index("amd-owner") < check["output"]["summary"].index("drive-by")


async def test_a_signoff_as_a_review_and_as_a_review_comment_are_verified_too(owned, make_harness):
    h = await make_harness()
    await ready(h, 68)
    review = owned.add_review(REPO, 68, signoff_body("amd-owner"), user="amd-owner")
    await h.deliver("pull_request_review", owned.pull_request_review_payload(REPO, 68, review))
    line = owned.add_review_comment(REPO, 68, signoff_body("nv-member"), user="nv-member", path=CHANGELOG)
    await h.deliver("pull_request_review_comment", owned.review_comment_payload(REPO, 68, line))
    assert verdict(owned, 68, review, "review")["record"]["outcome"] == "pass"
    assert verdict(owned, 68, line, "review-comment")["record"]["outcome"] == "pass"
    assert "[this sign-off review]" in verdict(owned, 68, review, "review")["body"]


async def test_a_quoted_signoff_or_the_bots_own_comment_starts_nothing(owned, make_harness):
    h = await make_harness()
    await ready(h, 69)
    quoted = "\n".join("> " + line for line in signoff_body("amd-owner").splitlines()) + "\n\nAgreed."
    await sign(h, 69, "drive-by", quoted)
    bot = owned.add_comment(REPO, 69, f"{PHRASE}: quoted by a bot", user="other-bot[bot]", user_type="Bot")
    await h.deliver("issue_comment", owned.issue_comment_payload(REPO, 69, bot))
    assert verdicts(owned, 69) == {}


async def test_deleting_the_signoff_or_editing_the_phrase_out_withdraws_the_verdict(owned, make_harness):
    h = await make_harness()
    await ready(h, 70, files=(CHANGELOG,))  # one owner group, line 6: either signer covers it
    deleted = await sign(h, 70, "amd-owner")
    edited = await sign(h, 70, "nv-member")
    head = owned.pull(REPO, 70)["head"]["sha"]
    await h.deliver("issue_comment", owned.issue_comment_payload(REPO, 70, deleted, "deleted"))
    assert signoff_check(owned, head)["conclusion"] == "success"  # nv-member's sign-off still stands
    before = edited["body"]
    edited["body"] = "Never mind, I will look again tomorrow."
    await h.deliver(
        "issue_comment", owned.issue_comment_payload(REPO, 70, edited, "edited", changes={"body": {"from": before}})
    )
    assert {k: v["record"]["state"] for k, v in verdicts(owned, 70).items()} == {
        f"comment-{deleted['id']}": "withdrawn",
        f"comment-{edited['id']}": "withdrawn",
    }
    assert verdict(owned, 70, edited)["body"].startswith("### ➖ WITHDRAWN: sign-off by `nv-member` was deleted")
    assert signoff_check(owned, head)["conclusion"] == "failure"


async def test_a_redelivered_signoff_writes_nothing_again(owned, make_harness):
    h = await make_harness()
    await ready(h, 71)
    comment = owned.add_comment(REPO, 71, signoff_body("amd-owner"), user="amd-owner")
    payload = owned.issue_comment_payload(REPO, 71, comment)
    await h.deliver("issue_comment", payload)
    writes = [r for r in owned.requests if r.method != "GET"]
    await h.deliver("issue_comment", payload)  # GitHub redelivers (a new delivery id)
    assert [r for r in owned.requests if r.method != "GET"] == writes


async def test_a_verdict_created_but_answered_502_is_still_one_comment(owned, make_harness):
    """Pins the duplicate-verdict bug of the old Actions script: a lost answer must not post a second verdict."""
    h = await make_harness()
    await ready(h, 72)
    owned.fail_after_commit("POST", r"/issues/72/comments$", status=502)
    comment = await sign(h, 72, "amd-owner")
    assert verdict(owned, 72, comment)["record"]["outcome"] == "pass"
    assert len(verdicts(owned, 72)) == 1


async def test_a_closed_pr_gets_no_verdict(owned, make_harness):
    h = await make_harness()
    await ready(h, 73)
    owned.update_pull(REPO, 73, state="closed")
    await sign(h, 73, "amd-owner")
    assert verdicts(owned, 73) == {}


async def test_reuse_is_not_applicable_where_the_repository_does_not_require_it(owned, make_harness):
    h = await make_harness()
    owned.set_file(REPO, ".github/sweepbot.yml", "signoff:\n  require_reuse: false\n", ref="main")
    open_pull(owned, 74, files=(CHANGELOG, AMD_FILE))
    finished_run(owned, 74)
    found = verdict(owned, 74, await sign(h, 74, "amd-owner"))
    assert found["record"]["outcome"] == "pass", found["body"]
    assert check_line(found["body"], "Reuse pin").startswith("- ➖")


async def test_the_judge_is_dispatched_once_and_its_answer_lands_in_the_same_verdict(owned, make_harness):
    h = await make_harness()
    owned.set_file(REPO, ".github/sweepbot.yml", "signoff:\n  judge:\n    enabled: true\n", ref="main")
    owned.add_workflow(
        REPO,
        "signoff-judge.yml",
        inputs={name: {"required": True} for name in ("pr-number", "head-sha", "signoff-id", "dispatch-id")},
    )
    await ready(h, 75)
    comment = await sign(h, 75, "amd-owner")
    (run,) = owned.runs(REPO, "signoff-judge.yml")
    head = owned.pull(REPO, 75)["head"]["sha"]
    assert owned._repo(REPO).run_inputs[run["id"]] | {"dispatch-id": "x"} == {
        "pr-number": "75",
        "head-sha": head,
        "signoff-id": f"comment-{comment['id']}",
        "dispatch-id": "x",
    }
    assert "⏳ The bot asked `signoff-judge.yml`" in verdict(owned, 75, comment)["body"]
    answer = {
        "pr-number": "75",
        "signoff-id": f"comment-{comment['id']}",
        "head-sha": head,
        "verdict": "fail",
        "summary": "The recipe sets --hf-overrides.",
        "run-url": "https://github.com/acme/x/actions/runs/9",
    }
    await h.deliver(
        "repository_dispatch",
        owned.repository_dispatch_payload(REPO, "signoff-judged", answer, sender="github-actions[bot]"),
    )
    found = verdict(owned, 75, comment)
    assert "❌ The judge found a problem" in found["body"] and "`The recipe sets --hf-overrides.`" in found["body"]
    assert found["record"]["outcome"] == "pass"  # advisory: the bot's own checks decide
    assert len(owned.runs(REPO, "signoff-judge.yml")) == 1


# -- the real InferenceX files -----------------------------------------------------------------------


@pytest.fixture
def real(repo, real_data):
    repo.set_file(REPO, ".github/CODEOWNERS", (real_data / "CODEOWNERS").read_text(encoding="utf-8"), ref="main")
    checklist = (real_data / "PR_REVIEW_CHECKLIST.md").read_text(encoding="utf-8")
    repo.set_file(REPO, "docs/PR_REVIEW_CHECKLIST.md", checklist, ref="main")
    lines = checklist.split("\n")
    start = lines.index("## Template") + 2
    return signoff_body("billishyahao", block="\n".join(lines[start : lines.index("```", start)]))


async def test_the_real_template_pasted_and_ticked_passes_for_a_real_owner(real, make_harness):
    """The changelog's owners (the real CODEOWNERS' catch-all, `@InferenceX/core`) sign too: every owner group
    needs one (tests/test_signoff_groups.py)."""
    h = await make_harness()
    h.github.add_team("InferenceX", "core", ["core-member"])
    await ready(h, 80, files=(CHANGELOG, "configs/amd-master.yaml"))
    await sign(h, 80, "core-member", real.replace("@billishyahao", "@core-member"))
    found = verdict(h.github, 80, await sign(h, 80, "billishyahao", real))
    assert found["record"]["outcome"] == "pass", found["body"]
    assert "All 15 items" in check_line(found["body"], "Checklist")
    assert len(found["record"]["not_verified"]) == 13  # the latest-version and PR-validation items are the bot's
    assert "`configs/amd-master.yaml`: `@billishyahao`" in found["body"]


async def test_the_real_template_with_one_item_reworded_fails_naming_that_item(real, make_harness):
    h = await make_harness()
    await ready(h, 81, files=(CHANGELOG, "configs/amd-master.yaml"))
    reworded = real.replace("does not submit a deprecated model", "does not submit an old model")
    found = verdict(h.github, 81, await sign(h, 81, "billishyahao", reworded))
    assert found["record"]["outcome"] == "fail"
    (problem,) = [ln for ln in found["body"].splitlines() if ln.startswith("  - Worded differently")]
    assert "deprecated model" in problem and "an old model" in problem


async def test_one_verification_reads_twelve_things_and_writes_the_verdict_and_the_check(owned, make_harness):
    """Pins the request count the README quotes for one verification (one owning team, one pin; a comment reads
    the PR's timeline for the head it was written on, and the label events say which labels count for the pin:
    ten reads before both)."""
    h = await make_harness()
    await ready(h, 82, files=(CHANGELOG, "configs/nvidia-master.yaml"))
    owned.reset_requests()
    await sign(h, 82, "nv-member")
    work = [(r.method, r.path.split("/", 4)[-1]) for r in owned.requests if not r.path.startswith("/app")]
    reads = [path for method, path in work[:-3] if method == "GET"]
    assert len(reads) == 12 and len(work) == 15, work
    assert sum(1 for path in reads if path.endswith("/timeline")) == 1
    assert sum(1 for path in reads if path.endswith("/events")) == 1
    assert [m for m, _ in work[-3:]] == ["POST", "GET", "POST"]  # the verdict; the check run looked for, created


@pytest.mark.parametrize("recipe, mark", [("tp: 4\n", "✅"), ("tp: 8\n", "⏳")], ids=["changelog", "recipe"])
async def test_a_pin_made_stale_by_a_push_holds_the_reuse_check(owned, make_harness, recipe, mark):
    """A push after the pin that changes a benchmark file: the pinned run no longer tested the PR (the stale-branch
    guard's `pin_is_stale`); a push of the changelog alone keeps the pin."""
    h = await make_harness()
    await ready(h, 71)
    pinned_head = owned.pull(REPO, 71)["head"]["sha"]
    owned.set_file(REPO, "inferencex-e2e/recipes/mi355x.sh", "tp: 4\n", ref=pinned_head)
    push(owned, 71, "6" * 40, entry=ENTRY + ENTRY.replace(b"New", b"More"))  # the changelog changes either way
    owned.set_file(REPO, "inferencex-e2e/recipes/mi355x.sh", recipe, ref="6" * 40)
    comment = await sign(h, 71, "amd-owner")
    line = check_line(verdict(owned, 71, comment)["body"], "Reuse pin")
    assert line.startswith(f"- {mark}"), line
    assert ("the pin is stale" in line) == (mark == "⏳")  # a maintainer's to pin again, as any pin not eligible
