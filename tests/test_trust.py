"""Trust only what the bot did: each hole found in what it trusted, through the webhook into the shared fake.

A fork controls its copy of the workflow files (so the names and results of its own `pull_request` runs), its
branch names, its commit messages and its PR text: none of it is authority. Only the bot's own dispatches, and
people whose write permission the bot confirmed, count.
"""

from __future__ import annotations

import asyncio
import copy

import pytest
import respx
from harness import REPO, start_harness, stop_harness
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_reuse_command import command, fake_clock, finished_run, pin, reactions, reply  # noqa: F401
from test_signoff import check_line, owned, sign, signoff_body, verdicts  # noqa: F401
from test_sweep_gate import (  # noqa: F401  the fixtures this module's tests take
    CHANGELOG,
    FAIL_FAST,
    english,
    inputs,
    label,
    make_harness,  # noqa: F401
    no_merge_wait,
    open_pull,
    push,
    repo,
    runs,
    send,
    status,
    unlabel,
)

from bot.app.sandbox import add_sweep_workflows
from bot.rules.markers import marker
from bot.rules.sweep_record import SweepRecord
from bot.testing import InMemoryGitHub
from handlers import registry

AMD_FILE = "configs/amd-master.yaml"
BOT_LOGIN = InMemoryGitHub().bot_login


def record(github, number: int) -> SweepRecord:
    return SweepRecord.parse(status(github, number))


def forks_own_run(
    github,
    number: int,
    *,
    title_id: str | None = None,
    conclusion: str = "success",
    workflow: str = "run-sweep.yml",
    artifact: bool = True,
) -> dict:
    """A run of the fork's own `pull_request` workflow (its copy of the file, so its `run-name:` is the fork's
    choice): on the PR's head commit, started by the fork's author, in the base repository as GitHub runs it."""
    pr = github.pull(REPO, number)
    run = github.add_run(
        REPO,
        workflow,
        head_sha=pr["head"]["sha"],
        head_branch=pr["head"]["ref"],
        event="pull_request",
        conclusion=conclusion,
        actor="partner",
        inputs={"dispatch-id": title_id} if title_id else None,
    )
    live = github._repo(REPO).runs[run["id"]]
    live["head_repository"] = copy.deepcopy(pr["head"]["repo"])
    if artifact:
        github.add_artifact(REPO, run["id"], "results_bmk_fork")
    return run


def status_line(github, number: int, title: str) -> str:
    return next(line for line in english(status(github, number)).splitlines() if f"**{title}:**" in line)


# -- a run counts only when the bot dispatched it for this PR -------------------------------------------


async def test_a_forks_run_named_with_another_prs_dispatch_id_never_enters_its_record(repo, make_harness):
    """Regression: a fork's `pull_request` run whose run-name carried PR 81's dispatch id was added to PR 81's
    record: its status said the sweep finished with `success` and showed the attacker's viewer links while the
    real run was queued; a bare `/reuse-sweep-run` then pinned it; 20 such runs pushed the real one out of the
    record, and the next push did not cancel it."""
    open_pull(repo, 81)
    open_pull(repo, 82, fork=True)
    h = await make_harness()
    await label(h, 81, FAIL_FAST)
    (real,) = runs(repo)
    victim = record(repo, 81).latest.dispatch_id
    before = status(repo, 81)
    forged = [forks_own_run(repo, 82, title_id=victim) for _ in range(21)]
    for run in forged:
        await h.deliver("workflow_run", repo.workflow_run_payload(REPO, run["id"]))
    assert status(repo, 81) == before, "the victim's status is untouched"
    assert [r.run_id for r in record(repo, 81).runs] == [real["id"]]
    assert "unofficialRun" not in status(repo, 81)

    c = await command(h, 81, "/reuse-sweep-run")
    assert reactions(repo, c) == ["-1"] and pin(repo, 81) is None
    assert str(forged[-1]["id"]) not in reply(repo, 81, c)

    push(repo, 81, "8" * 40)
    await send(h, 81, "synchronize", sender="partner")
    assert next(r for r in repo.runs(REPO) if r["id"] == real["id"])["conclusion"] == "cancelled"


async def test_a_fork_pr_pins_its_trusted_sweep_and_never_its_own_runs(repo, make_harness):
    """Regression: on a fork PR `/use <the e2e-tests.yml run the bot dispatched>` was refused as "wrong
    workflow", and a bare `/reuse-sweep-run` pinned the fork's own `pull_request` run instead."""
    open_pull(repo, 83, fork=True)
    h = await make_harness()
    forks_own_run(repo, 83)  # green, with artifacts, on the PR's head: still the fork's own
    bare = await command(h, 83, "/reuse-sweep-run")
    assert reactions(repo, bare) == ["-1"] and "found nothing to pin" in reply(repo, 83, bare)

    await label(h, 83, FAIL_FAST)
    (trusted,) = runs(repo, "e2e-tests.yml")
    repo.add_artifact(REPO, trusted["id"], "results_bmk_mi355x")
    await h.deliver("workflow_run", repo.workflow_run_payload(REPO, trusted["id"], conclusion="success"))
    c = await command(h, 83, f"/use {trusted['id']}")
    assert reactions(repo, c) == ["+1"] and pin(repo, 83).run_id == trusted["id"]
    again = await command(h, 83, "/reuse-sweep-run")
    assert reactions(repo, again) == ["+1"] and pin(repo, 83).run_id == trusted["id"]


async def test_a_forks_own_green_run_is_no_sweep_for_its_sign_off(owned, make_harness):
    """Regression: a sign-off on a fork PR that never had an approved sweep showed "✅ Sweep" for the fork's
    own `pull_request` run."""
    open_pull(owned, 84, fork=True, files=(CHANGELOG, AMD_FILE))
    h = await make_harness()
    forks_own_run(owned, 84)
    found = verdicts(owned, 84)
    comment = await sign(h, 84, "amd-owner")
    found = verdicts(owned, 84)[f"comment-{comment['id']}"]
    assert check_line(found["body"], "Sweep").startswith(  # ⏳: waiting for a sweep, not done
        "- ⏳ **Sweep:** No sweep run has started on a commit of this PR yet"
    ), found["body"]


async def test_a_forks_sweep_on_main_reports_to_the_fork_pr_not_to_a_pr_from_main(repo, make_harness):
    """Regression: with a `main -> release` PR open, a fork's completed run (on main) was attributed to that PR
    (its `pull_requests`) and the fork PR never showed its result."""
    open_pull(repo, 85, fork=True)
    main = repo.branch_sha(REPO, "main")
    release = repo.add_pull(REPO, number=86, head_ref="main", head_sha=main, base_ref="release")
    h = await make_harness()
    await label(h, 85, FAIL_FAST)
    (run,) = runs(repo, "e2e-tests.yml")
    payload = repo.workflow_run_payload(REPO, run["id"], conclusion="success")
    assert [p["number"] for p in payload["workflow_run"]["pull_requests"]] == [release["number"]]
    await h.deliver("workflow_run", payload)
    assert " passed on " in english(status(repo, 85)) and f"unofficialRun={run['id']}" in status(repo, 85)
    assert not any(c["body"].startswith(marker("sweep-status")) for c in repo.comments(REPO, 86))


# -- fork approvals -------------------------------------------------------------------------------------


async def test_a_triager_taking_a_modifier_off_an_approved_fork_sweep_changes_nothing(repo, make_harness):
    """Regression: a triage-only user removing `all-evals` from an approved fork sweep cancelled it and started
    another with other inputs."""
    repo.set_permission(REPO, "triager", "triage")
    open_pull(repo, 87, fork=True)
    h = await make_harness()
    await label(h, 87, FAIL_FAST)
    await label(h, 87, "all-evals")
    approved = max(runs(repo, "e2e-tests.yml"), key=lambda r: r["id"])
    assert inputs(repo, approved)["all-evals"] == "true" and approved["status"] == "queued"
    await unlabel(h, 87, "all-evals", by="triager")
    assert len(runs(repo, "e2e-tests.yml")) == 2
    assert next(r for r in repo.runs(REPO) if r["id"] == approved["id"])["status"] == "queued"
    await unlabel(h, 87, FAIL_FAST, by="triager")
    assert next(r for r in repo.runs(REPO) if r["id"] == approved["id"])["status"] == "queued"
    assert len(runs(repo, "e2e-tests.yml")) == 2


async def test_a_fork_is_dispatched_only_with_the_merge_commit_of_its_approved_head(repo, make_harness):
    """Regression: a draft labelled at commit A, pushed to B (GitHub computed merge(B)), force-pushed back to A
    and marked ready at once dispatched head-sha=A with merge-sha=merge(B)."""
    pr = open_pull(repo, 88, fork=True, draft=True)
    a = pr["head"]["sha"]
    h = await make_harness()
    await label(h, 88, FAIL_FAST)  # approves A; a draft starts nothing
    push(repo, 88, "b" * 40)
    merge_of_b = repo.pull(REPO, 88)["merge_commit_sha"]
    repo.push_commit(REPO, 88, sha=a, merge=False)  # back to A before GitHub recomputed its merge commit
    assert repo.pull(REPO, 88)["merge_commit_sha"] == merge_of_b
    repo.update_pull(REPO, 88, draft=False)
    await send(h, 88, "ready_for_review", sender="partner")
    assert runs(repo, "e2e-tests.yml") == []
    assert status_line(repo, 88, "Merge commit").startswith("- ⏳"), "waiting for GitHub: nobody's fix"

    repo.update_pull(REPO, 88, merge_commit_sha="a1" * 20)  # GitHub has computed merge(A)
    await send(h, 88, "ready_for_review", sender="partner")
    (run,) = runs(repo, "e2e-tests.yml")
    assert (inputs(repo, run)["head-sha"], inputs(repo, run)["merge-sha"]) == (a, "a1" * 20)


async def test_a_redelivered_old_label_event_never_undoes_a_newer_approval(repo, make_harness):
    """Regression: a redelivered old `labeled` event re-approved the head of its own moment and so undid the
    approval of the current head that a maintainer had given since."""
    open_pull(repo, 89, fork=True)
    h = await make_harness()
    repo.label_issue(REPO, 89, FAIL_FAST, actor="maintainer")
    old = repo.pull_request_payload(REPO, 89, "labeled", sender="maintainer", label=FAIL_FAST)
    await h.deliver("pull_request", old)
    push(repo, 89, "9" * 40)
    await send(h, 89, "synchronize", sender="partner")
    await unlabel(h, 89, FAIL_FAST)
    await label(h, 89, FAIL_FAST)
    assert record(repo, 89).approval(FAIL_FAST).head_sha == "9" * 40
    dispatched = len(runs(repo, "e2e-tests.yml"))
    await h.deliver("pull_request", old)  # GitHub redelivers the first one, under a new delivery id
    assert record(repo, 89).approval(FAIL_FAST).head_sha == "9" * 40
    assert status_line(repo, 89, "Fork approval").startswith("- ✅")
    assert len(runs(repo, "e2e-tests.yml")) == dispatched


# -- authority ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("body", ["/use {run}", "/stage-results {run}"])
async def test_a_read_only_collaborator_can_neither_pin_nor_stage(repo, make_harness, body):
    """Regression: a read-only COLLABORATOR pinned and staged with no permission lookup (the association was
    trusted), while the README and the refusal text say write permission."""
    repo.set_permission(REPO, "reader", "read")
    repo.add_repo("SemiAnalysisAI/InferenceX-app", installation_id=1)
    open_pull(repo, 90)
    repo.label_issue(REPO, 90, FAIL_FAST, actor="maintainer")
    h = await make_harness()
    run = finished_run(repo, 90)
    c = await command(h, 90, body.format(run=run["id"]), user="reader", association="COLLABORATOR")
    assert reactions(repo, c) == [] and pin(repo, 90) is None  # the reply alone: one write
    assert repo.repository_dispatches("SemiAnalysisAI/InferenceX-app") == []
    assert repo.count("GET", r"/collaborators/reader/permission$") == 1


async def test_a_permission_lookup_github_does_not_answer_gets_a_reply_and_holds_nothing(repo, make_harness):
    """Regression: a permission lookup that failed (5xx) left 👀 and no reply, and was retried for hours with
    the PR's lane blocked."""
    open_pull(repo, 91)
    h = await make_harness()
    run = finished_run(repo, 91)
    repo.fail_next("GET", r"/collaborators/[^/]+/permission$", 502, times=50)
    comment = repo.add_comment(REPO, 91, f"/use {run['id']}", user="private-member")
    await h.deliver("issue_comment", repo.issue_comment_payload(REPO, 91, comment), delivery="perm-502")
    assert (await h.journal_row("perm-502")).status == "done"
    assert reactions(repo, comment) == ["-1"]
    assert "GitHub did not answer" in reply(repo, 91, comment) and pin(repo, 91) is None


async def test_a_fork_label_whose_labellers_permission_github_does_not_confirm_is_neither_counted_nor_removed(
    repo, make_harness
):
    open_pull(repo, 92, fork=True)
    h = await make_harness()
    repo.fail_next("GET", r"/collaborators/[^/]+/permission$", 502, times=50)
    await label(h, 92, FAIL_FAST, delivery="label-502")
    assert (await h.journal_row("label-502")).status == "done"
    assert runs(repo, "e2e-tests.yml") == [] and FAIL_FAST in repo.issue_labels(REPO, 92)
    assert "GitHub did not answer" in status_line(repo, 92, "Fork approval")


async def test_a_pin_that_cannot_be_recorded_is_neither_announced_nor_staged(repo, make_harness):
    """Regression: the reply said "pinned" and the `stage-results` dispatch went out before the pin was written
    to the status comment; when writing it failed, the PR had a reply and a staging request but no pin."""
    repo.add_repo("SemiAnalysisAI/InferenceX-app", installation_id=1)
    open_pull(repo, 98)
    repo.label_issue(REPO, 98, FAIL_FAST, actor="maintainer")
    h = await make_harness()
    run = finished_run(repo, 98)
    repo.fail_next("PATCH", r"/issues/comments/\d+$", 422, times=5)  # the status comment holding the record
    comment = repo.add_comment(REPO, 98, f"/use {run['id']}", user="maintainer", author_association="MEMBER")
    await h.deliver("issue_comment", repo.issue_comment_payload(REPO, 98, comment), delivery="pin-fails")
    assert (await h.journal_row("pin-fails")).status == "failed"
    assert pin(repo, 98) is None
    assert not any(c["body"].startswith(marker(f"reply-{comment['id']}")) for c in repo.comments(REPO, 98))
    assert repo.repository_dispatches("SemiAnalysisAI/InferenceX-app") == []


# -- bounded work ---------------------------------------------------------------------------------------------


def nested_entry(depth: int) -> bytes:
    item = "x"
    for _ in range(depth):
        item = f"[{item}]"
    return (
        b"\n- config-keys:\n    - dsr1-fp8-mi355x-sglang\n  description:\n    - "
        + item.encode()
        + b"\n  pr-link: XXX\n"
    )


async def test_a_changelog_nested_300_deep_is_an_error_on_the_pr_and_a_pin_still_records(repo, make_harness):
    """Regression: a `description` item nested 300 levels raised RecursionError out of check_append; the
    delivery failed with no status, and a `/use` on that PR replied "pinned", sent a `stage-results` dispatch
    and recorded no pin."""
    repo.add_repo("SemiAnalysisAI/InferenceX-app", installation_id=1)
    open_pull(repo, 60, entry=nested_entry(300))
    h = await make_harness()
    await label(h, 60, FAIL_FAST, delivery="deep")
    assert (await h.journal_row("deep")).status == "done"
    assert "nested more than 32 levels deep" in english(status(repo, 60)) and runs(repo) == []
    run = finished_run(repo, 60)
    c = await command(h, 60, f"/use {run['id']}")
    assert reactions(repo, c) == ["+1"] and pin(repo, 60).run_id == run["id"]


async def test_a_changelog_over_the_size_limit_is_one_error_naming_the_limit(repo, make_harness):
    huge = b'\n- config-keys:\n    - a\n  description:\n    - "' + b"x" * (3 * 1024 * 1024) + b'"\n  pr-link: XXX\n'
    open_pull(repo, 61, entry=huge)
    h = await make_harness()
    await label(h, 61, FAIL_FAST, delivery="huge")
    assert (await h.journal_row("huge")).status == "done"
    body = english(status(repo, 61))
    assert "2,097,152" in body and runs(repo) == []


async def test_thousands_of_bad_entries_show_the_first_and_count_the_rest(repo, make_harness):
    """Regression: a 4.3 MB append of bad entries stalled the loop 18 s and kept every one of its 300,000 errors
    cached per head; now the check runs in the worker process, keeps the first 50 and counts the rest."""
    bad = b"".join(b"\n- config-keys: %d\n  description: []\n  pr-link: TBD\n" % i for i in range(20_000))
    assert len(bad) > 256 * 1024  # big enough to be checked in the worker process
    open_pull(repo, 62, entry=bad)
    h = await make_harness()
    await label(h, 62, FAIL_FAST, delivery="bad")
    assert (await h.journal_row("bad")).status == "done"
    body = english(status(repo, 62))
    assert "And 30 more, each marked on its line" in body and "more problems are not listed here" in body
    gate = repo.check_runs(REPO, repo.pull(REPO, 62)["head"]["sha"])
    (check,) = [c for c in gate if c["name"] == "sweep-gate"]
    assert len(repo.check_annotations(REPO, check["id"])) == 50


# -- sign-offs --------------------------------------------------------------------------------------------


async def test_a_maintainer_editing_someone_elses_comment_into_a_sign_off_signs_nothing(owned, make_harness):
    """Regression: a maintainer editing a CODEOWNER's comment into the sign-off phrase gave "PASS, sign-off by
    amd-owner": the edit's sender is not the author."""
    open_pull(owned, 93, files=(CHANGELOG, AMD_FILE))
    h = await make_harness()
    comment = owned.add_comment(REPO, 93, "LGTM", user="amd-owner")
    old_body = comment["body"]
    comment["body"] = signoff_body("amd-owner")
    payload = owned.issue_comment_payload(REPO, 93, comment, "edited", changes={"body": {"from": old_body}})
    payload["sender"] = {"login": "maintainer", "type": "User"}
    await h.deliver("issue_comment", payload)
    assert verdicts(owned, 93) == {}


async def test_a_sign_off_is_verified_again_when_the_pr_is_retargeted(owned, make_harness):
    """Regression: a sign-off judged against a release branch's CODEOWNERS stayed PASS after the PR was
    retargeted to main, whose CODEOWNERS does not make the signer an owner."""
    owned.set_file(REPO, ".github/CODEOWNERS", "configs/ @amd-owner\ninferencex-e2e/ @amd-owner\n", ref="release")
    owned.set_file(
        REPO,
        "docs/PR_REVIEW_CHECKLIST.md",
        owned._repo(REPO).files["main"]["docs/PR_REVIEW_CHECKLIST.md"],
        ref="release",
    )
    owned.set_file(REPO, ".github/CODEOWNERS", "* @someone-else\n", ref="main")
    open_pull(owned, 94, files=(CHANGELOG, AMD_FILE))
    owned.pull(REPO, 94)["base"]["ref"] = "release"
    h = await make_harness()
    run = finished_run(owned, 94)
    await command(h, 94, f"/use {run['id']}")
    comment = await sign(h, 94, "amd-owner")
    assert verdicts(owned, 94)[f"comment-{comment['id']}"]["record"]["outcome"] == "pass"
    owned.pull(REPO, 94)["base"]["ref"] = "main"
    await send(h, 94, "edited", changes={"base": {"ref": {"from": "release"}, "sha": {"from": "0" * 40}}})
    found = verdicts(owned, 94)[f"comment-{comment['id']}"]
    assert found["record"]["outcome"] == "fail" and check_line(found["body"], "CODEOWNER").startswith("- ❌")
    assert len(verdicts(owned, 94)) == 1, "the same verdict, edited in place"


async def test_a_base_branch_name_is_one_query_value(owned, make_harness):
    """Regression: query values were not URL-encoded; CODEOWNERS of a base branch `v1#old` was read from `v1`
    (the `#old` went as a URL fragment)."""
    owned.set_file(REPO, ".github/CODEOWNERS", "* @amd-owner\n", ref="v1#old")
    owned.set_file(REPO, ".github/CODEOWNERS", "* @someone-else\n", ref="v1")
    for ref in ("v1#old", "v1"):
        owned.set_file(
            REPO, "docs/PR_REVIEW_CHECKLIST.md", owned._repo(REPO).files["main"]["docs/PR_REVIEW_CHECKLIST.md"], ref=ref
        )
    open_pull(owned, 95, files=(CHANGELOG, AMD_FILE))
    owned.pull(REPO, 95)["base"]["ref"] = "v1#old"
    h = await make_harness()
    comment = await sign(h, 95, "amd-owner")
    found = verdicts(owned, 95)[f"comment-{comment['id']}"]
    assert check_line(found["body"], "CODEOWNER").startswith("- ✅"), found["body"]


@pytest.mark.parametrize(
    "wrap",
    [
        pytest.param(lambda body: f"<!--\n{body}\n-->", id="html-comment"),
        pytest.param(lambda body: f"```\n{body}\n```", id="fenced-code"),
        pytest.param(lambda body: "\n".join("> " + line for line in body.split("\n")), id="quote"),
        pytest.param(lambda body: "<pre>\n" + body + "\n</pre>", id="pre"),
    ],
)
async def test_a_phrase_in_a_comment_code_or_a_quote_is_no_sign_off(owned, make_harness, wrap):
    """Regression: a sign-off inside an HTML comment counted."""
    open_pull(owned, 96, files=(CHANGELOG, AMD_FILE))
    h = await make_harness()
    await sign(h, 96, "amd-owner", wrap(signoff_body("amd-owner")))
    assert verdicts(owned, 96) == {}


async def test_a_judge_answer_counts_only_from_an_accepted_sender_once_and_never_links_elsewhere(owned, make_harness):
    """Regression: `signoff-judged` had no source check (anyone who could send a repository_dispatch answered
    for the judge) and its `run-url` was rendered whatever its host."""
    owned.set_file(REPO, ".github/sweepbot.yml", "signoff:\n  judge:\n    enabled: true\n", ref="main")
    owned.add_workflow(REPO, "signoff-judge.yml", inputs=["pr-number", "head-sha", "signoff-id", "dispatch-id"])
    open_pull(owned, 97, files=(CHANGELOG, AMD_FILE))
    h = await make_harness()
    comment = await sign(h, 97, "amd-owner")
    (judge_run,) = owned.runs(REPO, "signoff-judge.yml")
    head = owned.pull(REPO, 97)["head"]["sha"]
    answer = {
        "pr-number": "97",
        "signoff-id": f"comment-{comment['id']}",
        "head-sha": head,
        "verdict": "pass",
        "summary": "all good",
        "run-url": "https://evil.example/acme/InferenceX/actions/runs/1",
    }
    key = f"comment-{comment['id']}"
    await h.deliver(
        "repository_dispatch", owned.repository_dispatch_payload(REPO, "signoff-judged", answer, sender="someone-else")
    )
    assert verdicts(owned, 97)[key]["record"]["judge"]["state"] == "requested"
    await h.deliver(
        "repository_dispatch",
        owned.repository_dispatch_payload(
            REPO, "signoff-judged", {**answer, "extra-field": "x"}, sender="github-actions[bot]"
        ),
    )
    found = verdicts(owned, 97)[key]
    assert found["record"]["judge"]["state"] == "pass" and "evil.example" not in found["body"]
    assert f"actions/runs/{judge_run['id']}" in found["body"], "the run the bot dispatched is the one linked"
    await h.deliver(
        "repository_dispatch",
        owned.repository_dispatch_payload(
            REPO, "signoff-judged", {**answer, "verdict": "fail"}, sender="github-actions[bot]"
        ),
    )
    assert verdicts(owned, 97)[key]["record"]["judge"]["state"] == "pass", "answered once: a later answer is ignored"


# -- properties -------------------------------------------------------------------------------------------

EVENTS = st.sampled_from(
    [
        "workflow_dispatch",
        "pull_request",
        "pull_request_target",
        "push",
        "workflow_run",
        "schedule",
        "repository_dispatch",
    ]
)
ACTORS = st.sampled_from(["partner", "maintainer", "github-actions[bot]", "dependabot[bot]", BOT_LOGIN])


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    event=EVENTS,
    actor=ACTORS,
    fork=st.booleans(),
    workflow=st.sampled_from(["run-sweep.yml", "e2e-tests.yml"]),
    named=st.booleans(),
)
def test_no_run_but_the_bots_dispatch_reaches_a_record_a_pin_or_a_sign_off(
    tmp_path_factory, app_key, event, actor, fork, workflow, named
):
    """Property: a run whose event is not `workflow_dispatch` or whose actor is not the bot, whatever its name
    (the PR's real dispatch id included), its workflow and its conclusion, never enters the PR's record, is
    never pinned by a bare `/reuse-sweep-run` nor accepted by `/use`, and is never the sign-off's sweep."""
    if event == "workflow_dispatch" and actor == BOT_LOGIN:
        return  # the one kind of run that may count
    asyncio.run(
        _inject_and_look(
            tmp_path_factory.mktemp("trust"),
            app_key,
            event=event,
            actor=actor,
            fork=fork,
            workflow=workflow,
            named=named,
        )
    )


async def _inject_and_look(tmp_path, app_key, *, event, actor, fork, workflow, named) -> None:
    github = InMemoryGitHub()
    with respx.mock(assert_all_called=False) as mock:
        mock.route(host="api.github.com").mock(side_effect=github.handle)
        github.add_repo(REPO, default_branch="main", installation_id=1)
        github.set_permission(REPO, "maintainer", "write")
        add_sweep_workflows(github, REPO)
        github.set_file(REPO, ".github/CODEOWNERS", "* @amd-owner\n", ref="main")
        github.set_file(
            REPO, "docs/PR_REVIEW_CHECKLIST.md", "## Template\n```\n- [ ] ok\n\nSigned: `X`\n```\n", ref="main"
        )
        h = await start_harness(tmp_path, github, app_key, router=registry.router)
        try:
            open_pull(github, 70, fork=fork)
            await label(h, 70, FAIL_FAST)
            latest = record(github, 70).latest
            assert latest is not None, "the label dispatched no run"
            dispatch_id = latest.dispatch_id
            pr = github.pull(REPO, 70)
            run = github.add_run(
                REPO,
                workflow,
                head_sha=pr["head"]["sha"],
                head_branch=pr["head"]["ref"],
                event=event,
                conclusion="success",
                actor=actor,
                inputs={"dispatch-id": dispatch_id} if named else None,
            )
            github.add_artifact(REPO, run["id"], "results_bmk_injected")
            await h.deliver("workflow_run", github.workflow_run_payload(REPO, run["id"]))
            assert run["id"] not in [r.run_id for r in record(github, 70).runs]
            for body in ("/reuse-sweep-run", f"/use {run['id']}"):
                await command(h, 70, body)
                assert pin(github, 70) is None
            comment = await sign(
                h,
                70,
                "amd-owner",
                "As a PR reviewer and CODEOWNER, I have reviewed this and have:\n- [x] ok\n\nSigned: @amd-owner",
            )
            found = verdicts(github, 70)[f"comment-{comment['id']}"]
            assert not check_line(found["body"], "Sweep").startswith("- ✅"), found["body"]
            assert str(run["id"]) not in check_line(found["body"], "Sweep")
        finally:
            await stop_harness(h)
