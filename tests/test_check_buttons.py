"""The `sweep-gate` check's buttons and its "Re-run": the rule (bot/rules/check_buttons.py) as a
table, then presses through the webhook into the fake GitHub."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import pytest
from harness import REPO, line_with
from test_sweep_gate import (  # noqa: F401  the fixtures this module's tests take
    FAIL_FAST,
    check,
    english,
    label,
    make_harness,
    no_merge_wait,
    open_pull,
    push,  # noqa: F401
    repo,
    runs,
    seed_pin,
    send,
    status,
)

from bot.rules import check_buttons as cb
from bot.rules.sweep_record import SweepRecord
from bot.testing.core import CLOCK_START
from handlers import pr_state


def c(name, ok, code):
    return SimpleNamespace(name=name, ok=ok, reason_code=code)


SAME_REPO_READY = [c("labels", True, "valid"), c("fork_approval", None, "same_repo")]


@pytest.mark.parametrize(
    "conditions, open_, fork, shown",
    [
        (SAME_REPO_READY, True, False, (cb.SWEEP_AGAIN,)),
        (SAME_REPO_READY, False, False, ()),  # closed: no buttons
        ([c("labels", None, "no_primary"), c("fork_approval", None, "same_repo")], True, False, ()),
        ([c("labels", False, "several_primaries"), c("fork_approval", None, "same_repo")], True, False, ()),
        (
            [c("labels", True, "valid"), c("fork_approval", False, "head_changed")],
            True,
            True,
            (cb.SWEEP_AGAIN, cb.APPROVE),
        ),
        (
            [c("labels", True, "valid"), c("fork_approval", False, "approval_unknown")],
            True,
            True,
            (cb.SWEEP_AGAIN, cb.APPROVE),
        ),
        ([c("labels", True, "valid"), c("fork_approval", True, "approved")], True, True, (cb.SWEEP_AGAIN,)),
        ([c("labels", None, "no_primary"), c("fork_approval", None, "awaiting_label")], True, True, ()),
        ([*SAME_REPO_READY, c("reuse_pin", True, "pinned")], True, False, (cb.SWEEP_AGAIN, cb.MERGE)),
        ([*SAME_REPO_READY, c("reuse_pin", True, "pinned")], False, False, ()),  # merged or closed: no merge
        ([*SAME_REPO_READY, c("reuse_pin", None, "no_pin")], True, False, (cb.SWEEP_AGAIN,)),  # nothing to reuse
    ],
)
def test_which_buttons_are_offered(conditions, open_, fork, shown):
    assert cb.offered(conditions, open=open_, is_fork=fork) == shown


@pytest.mark.parametrize(
    "identifier, writer, offered_now, recorded, outcome",
    [
        (cb.SWEEP_AGAIN, True, (cb.SWEEP_AGAIN,), None, cb.RESTART),
        (cb.SWEEP_AGAIN, True, (cb.SWEEP_AGAIN,), "tok", cb.ALREADY_DONE),  # the same press sent again
        (cb.SWEEP_AGAIN, True, (cb.SWEEP_AGAIN,), "older", cb.RESTART),  # a new press on the rewritten check
        (cb.SWEEP_AGAIN, False, (cb.SWEEP_AGAIN,), None, cb.NOT_A_WRITER),
        (cb.SWEEP_AGAIN, None, (cb.SWEEP_AGAIN,), None, cb.NOT_A_WRITER),  # GitHub would not say: counts for nothing
        (cb.SWEEP_AGAIN, True, (), None, cb.NOT_OFFERED),
        (cb.APPROVE, True, (cb.SWEEP_AGAIN, cb.APPROVE), None, cb.APPROVE_HEAD),
        (cb.APPROVE, True, (cb.SWEEP_AGAIN,), None, cb.NOT_OFFERED),  # already approved
        (cb.APPROVE, False, (cb.APPROVE,), None, cb.NOT_A_WRITER),
        (cb.MERGE, True, (cb.MERGE,), None, cb.MERGE_PR),
        (cb.MERGE, True, (cb.MERGE,), "tok", cb.MERGE_PR),  # sent again: the merge itself does nothing twice
        (cb.MERGE, False, (cb.MERGE,), None, cb.NOT_A_WRITER),
        (cb.MERGE, True, (cb.SWEEP_AGAIN,), None, cb.NOT_OFFERED),
        ("merge-it", True, (cb.SWEEP_AGAIN,), None, cb.UNKNOWN),
        (None, True, (cb.SWEEP_AGAIN,), None, cb.UNKNOWN),
    ],
)
def test_what_a_press_does(identifier, writer, offered_now, recorded, outcome):
    assert cb.press(identifier, writer=writer, offered_now=offered_now, token="tok", recorded_token=recorded) == outcome


def test_a_press_token_names_the_check_and_what_it_showed():
    assert cb.press_token(5, "abc") == cb.press_token(5, "abc")
    assert cb.press_token(5, "abc") != cb.press_token(5, "abd") != cb.press_token(6, "abd")


def test_the_button_words_fit_githubs_limits_in_both_languages():
    from bot.core.templates import Templates

    t = Templates()
    for button in cb.BUTTONS:
        label_text = t.title("sweep_button", button=button, part="label")
        description = t.title("sweep_button", button=button, part="description")
        assert len(label_text) <= 20 and len(description) <= 40 and len(button) <= 20
        assert " / " in label_text and " / " in description, "English / 中文"
    assert "Run the sweep again" in t.title("sweep_button", button=cb.SWEEP_AGAIN, part="description")
    assert "Approve this commit" in t.title("sweep_button", button=cb.APPROVE, part="description")


# -- through the webhook ---------------------------------------------------------------------------------


def button_ids(github, sha: str) -> list[str]:
    return [b["identifier"] for b in check(github, sha)["actions"]]


async def press(h, sha: str, identifier: str, *, by: str = "maintainer", delivery: str | None = None, payload=None):
    payload = payload or h.github.check_run_payload(
        REPO, check(h.github, sha)["id"], "requested_action", sender=by, identifier=identifier
    )
    await h.deliver("check_run", payload, delivery=delivery)
    return payload


async def test_run_the_sweep_again_starts_one_new_sweep_per_press_and_none_for_a_redelivery(repo, make_harness):
    """Pins: a writer's press of "Run the sweep again" dispatches a new sweep of the same commit and labels (as
    re-adding the primary label does), recorded by the bot; the same press sent again (another delivery id)
    starts nothing; a new press on the rewritten check starts one more."""
    pr = open_pull(repo, 70)
    h = await make_harness()
    await label(h, 70, FAIL_FAST)
    sha = pr["head"]["sha"]
    (first,) = runs(repo)
    await h.deliver("workflow_run", repo.workflow_run_payload(REPO, first["id"], "completed", conclusion="failure"))
    assert button_ids(repo, sha) == [cb.SWEEP_AGAIN]
    assert check(repo, sha)["actions"][0]["label"] == "Sweep again / 重跑"
    payload = await press(h, sha, cb.SWEEP_AGAIN, delivery="press-1")
    assert len(runs(repo)) == 2
    newest = max(runs(repo), key=lambda r: r["id"])
    assert newest["head_sha"] == sha and newest["status"] == "queued"
    assert SweepRecord.parse(status(repo, 70)).restart.by == "maintainer"
    await press(h, sha, cb.SWEEP_AGAIN, delivery="press-1-again", payload=payload)  # GitHub sends it again
    assert len(runs(repo)) == 2
    await press(h, sha, cb.SWEEP_AGAIN, delivery="press-2")  # a new press: the check shows newer content
    assert len(runs(repo)) == 3
    assert [r["conclusion"] for r in sorted(runs(repo), key=lambda r: r["id"])][:2] == ["failure", "cancelled"]


async def test_a_press_by_someone_without_write_does_nothing_visible(repo, make_harness):
    """Pins: everyone who can read sees the button; a press by a non-writer starts nothing and writes nothing
    (no comment, no check update)."""
    pr = open_pull(repo, 71)
    h = await make_harness()
    await label(h, 71, FAIL_FAST)
    sha = pr["head"]["sha"]
    comments, before = repo.comments(REPO, 71), check(repo, sha)
    await press(h, sha, cb.SWEEP_AGAIN, by="drive-by")
    assert len(runs(repo)) == 1
    assert repo.comments(REPO, 71) == comments and check(repo, sha) == before


async def test_a_press_after_a_pin_forces_a_sweep_as_re_adding_the_primary_does(repo, make_harness, monkeypatch):
    """Pins: "Run the sweep again" pressed after a pin sweeps despite it."""
    pr = open_pull(repo, 72)
    h = await make_harness()
    await label(h, 72, FAIL_FAST)
    sha = pr["head"]["sha"]
    pinned_at = CLOCK_START + dt.timedelta(hours=1)  # after the label, on the fake's clock
    seed_pin(repo, 72, 4242, created_at=pinned_at.strftime("%Y-%m-%dT%H:%M:%SZ"))
    monkeypatch.setattr(pr_state, "utcnow", lambda: pinned_at + dt.timedelta(hours=1))  # pressed after the pin
    await send(h, 72, "edited", changes={"base": {}})  # the gate reads the pin: sweeps paused
    assert "Run `4242` is pinned for reuse" in english(status(repo, 72))
    await press(h, sha, cb.SWEEP_AGAIN)
    assert len(runs(repo)) == 2
    line = line_with(english(status(repo, 72)), "**Reuse pin:**")
    assert "a sweep runs anyway" in line


async def test_approve_this_commit_on_a_fork_approves_the_new_head_and_starts_its_sweep(repo, make_harness):
    """Pins: after a push to an approved fork PR the check offers "Approve this commit"; a writer's press
    approves the head of that moment (recorded as by the presser, via the button) and starts the trusted
    sweep on it; a non-writer's press does nothing."""
    open_pull(repo, 73, fork=True)
    h = await make_harness()
    await label(h, 73, FAIL_FAST)
    assert len(runs(repo, "e2e-tests.yml")) == 1
    push(repo, 73, "7" * 40)
    await send(h, 73, "synchronize", sender="partner")
    assert button_ids(repo, "7" * 40) == [cb.SWEEP_AGAIN, cb.APPROVE]
    await press(h, "7" * 40, cb.APPROVE, by="partner")  # the fork's author: no write permission
    assert len(runs(repo, "e2e-tests.yml")) == 1
    repo.set_permission(REPO, "reviewer", "maintain")
    await press(h, "7" * 40, cb.APPROVE, by="reviewer")
    assert len(runs(repo, "e2e-tests.yml")) == 2
    newest = max(runs(repo, "e2e-tests.yml"), key=lambda r: r["id"])
    assert repo._repo(REPO).run_inputs[newest["id"]]["head-sha"] == "7" * 40
    approval = SweepRecord.parse(status(repo, 73)).approval(FAIL_FAST)
    assert (approval.head_sha, approval.by, approval.via) == ("7" * 40, "reviewer", "button")
    line = line_with(english(status(repo, 73)), "**Fork approval:**")
    assert line.startswith("- ✅") and "`reviewer`" in line and "Approve this commit" in line
    assert button_ids(repo, "7" * 40) == [cb.SWEEP_AGAIN], "approved: the button is gone"


async def test_re_run_of_sweep_gate_decides_again_and_completes_the_check(repo, make_harness):
    """Pins: "Re-run" resets the check to queued on GitHub; the `rerequested` event makes the gate decide again
    and write the check back, though its content has not changed."""
    pr = open_pull(repo, 74)
    h = await make_harness()
    await label(h, 74, FAIL_FAST)
    sha = pr["head"]["sha"]
    repo.rerequest_check_run(REPO, check(repo, sha)["id"])
    assert check(repo, sha)["status"] == "queued"
    await h.deliver("check_run", repo.check_run_payload(REPO, check(repo, sha)["id"], "rerequested"))
    assert (check(repo, sha)["status"], check(repo, sha)["conclusion"]) == ("completed", "success")
    assert len(runs(repo)) == 1


async def test_others_checks_are_left_alone(repo, make_harness):
    """Pins: only this App's `sweep-gate` is handled: a press or re-run of a check with another name (the
    sign-off's own) or another App's does nothing here."""
    pr = open_pull(repo, 75)
    h = await make_harness()
    await label(h, 75, FAIL_FAST)
    sha = pr["head"]["sha"]
    (run,) = runs(repo)
    await h.deliver("workflow_run", repo.workflow_run_payload(REPO, run["id"], "completed", conclusion="failure"))
    base = repo.check_run_payload(REPO, check(repo, sha)["id"], "requested_action", identifier=cb.SWEEP_AGAIN)
    renamed = {**base, "check_run": {**base["check_run"], "name": "signoff"}}
    other_app = {**base, "check_run": {**base["check_run"], "app": {"id": 9, "slug": "other-ci", "name": "other"}}}
    for payload in (renamed, other_app):
        await h.deliver("check_run", payload)
    assert len(runs(repo)) == 1


def test_never_more_buttons_than_github_takes():
    every = [
        c("labels", True, "valid"),
        c("dispatch", None, "queued"),
        c("fork_approval", False, "head_changed"),
        c("reuse_pin", True, "forced"),
        c("cost", None, "awaiting"),
    ]
    assert len(cb.offered(every, open=True, is_fork=True)) == cb.MAX_BUTTONS == 3
