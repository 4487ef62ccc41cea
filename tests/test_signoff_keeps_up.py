"""Verdicts that keep up through the webhook into the fake GitHub: a sign-off is verified again when a
sweep the bot dispatched for the PR finishes, a pin is set or withdrawn, or "Re-run" is pressed on the bot's own
`signoff` check; each verdict is edited in place, nothing new is posted, and nothing is written when nothing
changed."""

from __future__ import annotations

import re

from harness import REPO
from test_reuse_command import command, fake_clock, finished_run  # noqa: F401
from test_signoff import (  # noqa: F401  the fixtures this module's tests take
    AMD_FILE,
    check_line,
    owned,
    real,
    sign,
    signoff_check,  # noqa: F401
    verdict,
    verdicts,
)
from test_sweep_gate import (  # noqa: F401  the fixtures this module's tests take
    CHANGELOG,
    FAIL_FAST,
    label,
    make_harness,
    no_merge_wait,  # noqa: F401
    open_pull,
    push,
    repo,
    runs,
    send,
)

NO_REUSE = "signoff:\n  require_reuse: false\n"  # the sweep alone decides: the pin is not asked for


def bot_comments(github, number: int) -> list[dict]:
    return [c for c in github.comments(REPO, number) if c["user"]["login"] == github.bot_login]


def writes_to(github, comment_id: int) -> list:
    return [w for w in github.writes if w.path.endswith(f"/issues/comments/{comment_id}")]


def check_writes(github) -> list:
    return [w for w in github.writes if "/check-runs" in w.path]


async def signed_while_the_sweep_runs(h, number: int) -> tuple[dict, dict]:
    """A labelled PR whose sweep the bot dispatched and that is still running, signed by its owner: (run, comment)."""
    h.github.set_file(REPO, ".github/sweepbot.yml", NO_REUSE, ref="main")
    open_pull(h.github, number, files=(CHANGELOG, AMD_FILE))
    await label(h, number, FAIL_FAST)
    (run,) = runs(h.github)
    comment = await sign(h, number, "amd-owner")
    return run, comment


def rerequested(github, check: dict, sender: str = "maintainer") -> dict:
    """GitHub's `check_run` `rerequested` delivery for a check run of the fake ("Re-run" pressed on it)."""
    repo_json = github._repo(REPO).json
    return {
        "action": "rerequested",
        "check_run": check,
        "repository": repo_json,
        "sender": {"login": sender, "type": "User"},
        "installation": {"id": github._repo(REPO).installation_id},
    }


async def test_a_wait_while_the_sweep_runs_flips_to_pass_in_place_when_it_finishes(owned, make_harness):
    """Pins the bug "a verdict flipping to PASS when the sweep finishes without a new sign-off": the same
    verdict comment is edited, no other comment is posted (the run's own comment is the sweep gate's), and the
    `signoff` check run turns to success. While the sweep runs the verdict waits, it does not fail."""
    h = await make_harness()
    run, comment = await signed_while_the_sweep_runs(h, 130)
    before = verdict(owned, 130, comment)
    assert before["record"]["outcome"] == "wait", before["body"]
    assert check_line(before["body"], "Sweep").startswith("- ⏳")
    head = owned.pull(REPO, 130)["head"]["sha"]
    assert signoff_check(owned, head)["status"] == "in_progress"
    posted = len(bot_comments(owned, 130))
    await h.deliver("workflow_run", owned.workflow_run_payload(REPO, run["id"], "completed", conclusion="success"))
    after = verdict(owned, 130, comment)
    assert after["id"] == before["id"] and len(verdicts(owned, 130)) == 1
    assert after["record"]["outcome"] == "pass", after["body"]
    assert after["body"].startswith("### ✅ PASS: sign-off by `amd-owner`")
    assert f"[Run {run['id']}]" in check_line(after["body"], "Sweep")
    new = [c["body"].split(" -->", 1)[0] for c in bot_comments(owned, 130)[posted:]]
    assert new == [f"<!-- sweepbot:sweep-run-{run['id']}"], "nothing new is posted but the sweep's run comment"
    assert signoff_check(owned, head)["conclusion"] == "success"
    assert "Edit the sign-off" not in after["body"] and "edit the sign-off" not in after["body"], (
        "a PASS never asks to be edited again"
    )


async def test_a_redelivered_completion_writes_nothing_again(owned, make_harness):
    """Pins "no write when nothing changed": the second delivery of the same completion edits no verdict and
    writes no check run."""
    h = await make_harness()
    run, comment = await signed_while_the_sweep_runs(h, 131)
    payload = owned.workflow_run_payload(REPO, run["id"], "completed", conclusion="success")
    await h.deliver("workflow_run", payload)
    verdict_id = verdict(owned, 131, comment)["id"]
    edits, checks = len(writes_to(owned, verdict_id)), len(check_writes(owned))
    assert edits == 1, "edited once, to PASS"
    await h.deliver("workflow_run", payload, delivery="redelivered")
    assert len(writes_to(owned, verdict_id)) == edits
    assert len(check_writes(owned)) == checks
    planned = await h.bot.journal.effects((await h.journal_row("redelivered")).seq)
    assert not [key for key in planned if "signoff" in key], "not even planned: the verdict's text is the same"


async def test_a_finished_run_the_bot_did_not_dispatch_changes_no_verdict(owned, make_harness):
    """Pins that a run counts only through bot.rules.dispatched_runs: a maintainer's own green run of the
    sweep workflow on the PR's head, finished, re-verifies nothing (the verdict still waits for a sweep,
    untouched, and the PR is not even read)."""
    h = await make_harness()
    owned.set_file(REPO, ".github/sweepbot.yml", NO_REUSE, ref="main")
    open_pull(owned, 132, files=(CHANGELOG, AMD_FILE))
    comment = await sign(h, 132, "amd-owner")
    verdict_id = verdict(owned, 132, comment)["id"]
    edits = len(writes_to(owned, verdict_id))
    other = finished_run(owned, 132, by_bot=False)
    owned.reset_requests()
    await h.deliver("workflow_run", owned.workflow_run_payload(REPO, other["id"], "completed"))
    assert verdict(owned, 132, comment)["record"]["outcome"] == "wait"
    assert len(writes_to(owned, verdict_id)) == edits
    assert not [r for r in owned.requests if r.path.endswith("/pulls/132")], "not even verified again"


async def test_a_pin_set_and_withdrawn_reverifies_the_same_verdict(owned, make_harness):
    """Pins the re-verification on a pin set and withdrawn (the reuse feature's record change, handed over by
    the registry): waiting for a pin, PASS once `/use` pins the run, waiting again when the `/use` comment is
    deleted; always the same comment."""
    h = await make_harness()
    open_pull(owned, 133, files=(CHANGELOG, AMD_FILE))
    run = finished_run(owned, 133)
    comment = await sign(h, 133, "amd-owner")
    first = verdict(owned, 133, comment)
    assert check_line(first["body"], "Reuse pin").startswith("- ⏳"), first["body"]
    use = await command(h, 133, f"/use {run['id']}")
    pinned = verdict(owned, 133, comment)
    assert pinned["id"] == first["id"] and pinned["record"]["outcome"] == "pass", pinned["body"]
    assert check_line(pinned["body"], "Reuse pin").startswith("- ✅")
    head = owned.pull(REPO, 133)["head"]["sha"]
    assert signoff_check(owned, head)["conclusion"] == "success"
    await h.deliver("issue_comment", owned.issue_comment_payload(REPO, 133, use, "deleted"))
    unpinned = verdict(owned, 133, comment)
    assert unpinned["id"] == first["id"] and unpinned["record"]["outcome"] == "wait"
    assert check_line(unpinned["body"], "Reuse pin").startswith("- ⏳")
    assert signoff_check(owned, head)["status"] == "in_progress"
    assert len(verdicts(owned, 133)) == 1


async def test_a_stale_verdict_stays_stale_when_a_sweep_finishes(owned, make_harness):
    """Pins "the head changes (stale, as today, until re-signed)": a sweep of the new head finishing does not
    turn the old sign-off into a verdict on a head its signer never saw."""
    h = await make_harness()
    run, comment = await signed_while_the_sweep_runs(h, 134)
    push(owned, 134, "e" * 40)
    await send(h, 134, "synchronize")
    assert verdict(owned, 134, comment)["record"]["state"] == "stale"
    newer = [r for r in runs(owned) if r["id"] != run["id"]]
    for finished in [run, *newer]:
        await h.deliver(
            "workflow_run", owned.workflow_run_payload(REPO, finished["id"], "completed", conclusion="success")
        )
    found = verdict(owned, 134, comment)
    assert found["record"]["state"] == "stale" and found["record"]["outcome"] == "wait"
    assert found["body"].startswith("### ➖ STALE: sign-off by `amd-owner`")


async def test_re_run_on_the_signoff_check_verifies_again(owned, make_harness):
    """Pins the bug ""Re-run" on the `signoff` check does nothing": the sweep finished without its delivery
    reaching the bot; "Re-run" on the check re-verifies the sign-off to PASS (the fake's check run lists no PR,
    as for a fork: the PR is found by its head)."""
    h = await make_harness()
    run, comment = await signed_while_the_sweep_runs(h, 135)
    owned.complete_run(REPO, run["id"], "success")  # its workflow_run delivery never came
    head = owned.pull(REPO, 135)["head"]["sha"]
    check = signoff_check(owned, head)
    assert check["status"] == "in_progress"
    await h.deliver("check_run", rerequested(owned, check))
    found = verdict(owned, 135, comment)
    assert found["record"]["outcome"] == "pass", found["body"]
    assert signoff_check(owned, head)["conclusion"] == "success"


async def test_re_run_on_another_apps_check_of_that_name_does_nothing(owned, make_harness):
    """Pins that only the bot's own `signoff` check is re-run: the same press on a check of that name made by
    another App, or on another check, verifies nothing."""
    h = await make_harness()
    run, comment = await signed_while_the_sweep_runs(h, 136)
    owned.complete_run(REPO, run["id"], "success")
    check = signoff_check(owned, owned.pull(REPO, 136)["head"]["sha"])
    for other in (
        {**check, "app": {"id": 999, "slug": "someone-elses-app", "name": "x"}},
        {**check, "name": "sweep-gate-of-sorts"},
    ):
        await h.deliver("check_run", rerequested(owned, other), delivery=f"rerun-{other['name']}-{other['app']['id']}")
    assert verdict(owned, 136, comment)["record"]["outcome"] == "wait"


async def test_the_real_checklist_lists_its_judgement_items_whole_and_collapsed(real, make_harness):
    """Pins the bug "13–18 items under "not verified by the bot", each cut at about 160 characters": with the
    real checklist they are in a collapsed <details> with their count, none cut."""
    h = await make_harness()
    h.github.add_team("InferenceX", "core", ["core-member"])  # the changelog's owners sign too
    open_pull(h.github, 137, files=(CHANGELOG, "configs/amd-master.yaml"))
    run = finished_run(h.github, 137)
    await command(h, 137, f"/use {run['id']}")
    await sign(h, 137, "core-member", real.replace("@billishyahao", "@core-member"))
    found = verdict(h.github, 137, await sign(h, 137, "billishyahao", real))
    assert found["record"]["outcome"] == "pass", found["body"]
    items = found["record"]["not_verified"]
    assert len(items) == 13 and not any(item.endswith("…") for item in items)
    assert max(len(item) for item in items) > 160, "an item longer than the old cut is whole"
    (collapsed,) = re.findall(
        r"<details>\n<summary><b>Not verified by the bot: 13 items</b></summary>\n(.*?)</details>", found["body"], re.S
    )
    assert all(f"`{item}`" in collapsed for item in items)
    assert "…" not in found["body"].split("<details>", 1)[1]


async def test_a_retarget_verifies_the_current_verdict_and_leaves_a_stale_one_stale(owned, make_harness):
    """Pins "the head changes (stale, as today, until re-signed)" for the base-branch change: retargeting the PR
    used to verify every verdict again on the PR's head, so a sign-off made before a push became a fresh verdict
    on a commit its signer never saw. Now only the current one is verified again."""
    h = await make_harness()
    owned.set_file(REPO, ".github/sweepbot.yml", NO_REUSE, ref="main")
    open_pull(owned, 138, files=(CHANGELOG, AMD_FILE))
    early = await sign(h, 138, "nv-member")
    push(owned, 138, "e" * 40)
    await send(h, 138, "synchronize")
    late = await sign(h, 138, "amd-owner")
    assert verdict(owned, 138, early)["record"]["state"] == "stale"
    assert verdict(owned, 138, late)["record"]["state"] == "fresh"
    owned.set_file(REPO, ".github/CODEOWNERS", "* @someone-else\n", ref="release")
    owned.set_file(
        REPO,
        "docs/PR_REVIEW_CHECKLIST.md",
        owned._repo(REPO).files["main"]["docs/PR_REVIEW_CHECKLIST.md"],
        ref="release",
    )
    owned.pull(REPO, 138)["base"]["ref"] = "release"
    await send(h, 138, "edited", changes={"base": {"ref": {"from": "main"}, "sha": {"from": "0" * 40}}})
    stale, current = verdict(owned, 138, early), verdict(owned, 138, late)
    assert stale["record"]["state"] == "stale" and stale["record"]["head_sha"] != "e" * 40
    assert check_line(current["body"], "CODEOWNER").startswith("- ❌"), "verified against the new base's CODEOWNERS"


async def test_re_run_of_an_unchanged_check_completes_it_again(owned, make_harness):
    """Pins "Re-run leaves the `signoff` check queued": GitHub queues a check again when "Re-run" is pressed; the
    bot verified the sign-offs again and, their verdicts unchanged, wrote nothing, so the check stayed queued
    (pending) under a PASS. It is written again, as the verdicts say."""
    h = await make_harness()
    open_pull(owned, 139, files=(CHANGELOG, AMD_FILE))
    run = finished_run(owned, 139)
    await command(h, 139, f"/use {run['id']}")
    await sign(h, 139, "amd-owner")
    head = owned.pull(REPO, 139)["head"]["sha"]
    check = signoff_check(owned, head)
    assert check["conclusion"] == "success"
    owned.rerequest_check_run(REPO, check["id"])  # what the press does on GitHub's side
    await h.deliver("check_run", rerequested(owned, signoff_check(owned, head)))
    again = signoff_check(owned, head)
    assert again["id"] == check["id"] and (again["status"], again["conclusion"]) == ("completed", "success")


async def test_re_run_when_the_verdict_now_waits_brings_the_same_check_back_in_progress(owned, make_harness):
    """ "Re-run" on a check that had passed, when the verdict now waits (the pinned run's artifact has expired, so
    the pin is no longer eligible): GitHub queued that check again, so the bot writes it back in progress rather
    than leaving it queued beside a new one."""
    h = await make_harness()
    open_pull(owned, 140, files=(CHANGELOG, AMD_FILE))
    run = finished_run(owned, 140)
    await command(h, 140, f"/use {run['id']}")
    comment = await sign(h, 140, "amd-owner")
    head = owned.pull(REPO, 140)["head"]["sha"]
    check = signoff_check(owned, head)
    assert check["conclusion"] == "success"
    for artifact in owned._repo(REPO).artifacts[run["id"]]:
        artifact["expired"] = True
    owned.rerequest_check_run(REPO, check["id"])
    await h.deliver("check_run", rerequested(owned, signoff_check(owned, head)))
    assert verdict(owned, 140, comment)["record"]["outcome"] == "wait"
    (again,) = [c for c in owned.check_runs(REPO, head) if c["name"] == "signoff"]
    assert again["id"] == check["id"] and again["status"] == "in_progress"
