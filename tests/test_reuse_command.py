"""Reuse pins: `/use` and `/reuse-sweep-run` through the webhook into the fake GitHub. The
pin is kept in the gate's record, shown in the status comment and honoured by the gate."""

from __future__ import annotations

import datetime as dt

import pytest
from conftest import both_layouts
from harness import REPO, line_with
from test_sweep_gate import (  # noqa: F401  the fixtures this module's tests take
    APART_PATCHES,
    FAIL_FAST,
    english,
    label,
    no_merge_wait,
    open_pull,
    push,  # noqa: F401
    repo,
    runs,
    send,
    status,
    unlabel,
)

from bot.rules.markers import marker
from bot.rules.sweep_record import Pin, RunRecord, SweepRecord
from bot.testing.model import user_json
from handlers import pr_state, registry

FAKE_NOW = dt.datetime(2026, 1, 2, tzinfo=dt.UTC)  # the fake GitHub's clock starts on 2026-01-01


@pytest.fixture(autouse=True)
def fake_clock(monkeypatch):
    monkeypatch.setattr(pr_state, "utcnow", lambda: FAKE_NOW)


@pytest.fixture
def make_harness(make_harness):
    """Every feature, as `sweepbot serve` runs them; the fake clock in the workers' process too (apart)."""

    async def make(**changes):
        patches = {**APART_PATCHES, "handlers.pr_state.utcnow": {"now": FAKE_NOW.isoformat()}}
        return await make_harness(**{"router": registry.router, "patches": patches, **changes})

    return make


def finished_run(
    github,
    number: int,
    *,
    conclusion: str = "success",
    artifact: str | None = "results_bmk_dsr1",
    expired: bool = False,
    sha: str | None = None,
    by_bot: bool = True,
) -> dict:
    """A finished sweep of PR `number`: by default one the bot dispatched for it (its run, as GitHub shows the
    bot's dispatches, and its entry in the record of the bot's status comment), the only kind that can be
    pinned; `by_bot=False` is a run anyone else started, e.g. a maintainer by hand."""
    pr = github.pull(REPO, number)
    fork = pr["head"]["repo"]["full_name"].lower() != REPO.lower()
    workflow = "e2e-tests.yml" if fork else "run-sweep.yml"
    dispatch_id = f"sw-{number}-{len(github.runs(REPO)) + 1:012x}"
    run = github.add_run(
        REPO,
        workflow,
        head_sha=sha or pr["head"]["sha"],
        head_branch="main" if fork else pr["head"]["ref"],
        event="workflow_dispatch",
        conclusion=conclusion,
        inputs={"dispatch-id": dispatch_id},
        actor=github.bot_login if by_bot else "maintainer",
    )
    if by_bot:
        record_run(
            github,
            number,
            RunRecord(
                dispatch_id, run["id"], sha or pr["head"]["sha"], workflow, "completed", conclusion, run["html_url"]
            ),
        )
    if artifact:
        github.add_artifact(REPO, run["id"], artifact, expired=expired)
    return run


def record_run(github, number: int, entry: RunRecord) -> None:
    """Put `entry` in the record of the bot's status comment on PR `number` (written as the bot would)."""
    status = marker("sweep-status")
    mine = [
        c
        for c in github.comments(REPO, number)
        if c["user"]["login"] == github.bot_login and c["body"].startswith(status + "\n")
    ]
    record = SweepRecord.parse(mine[0]["body"] if mine else None).add_run(entry)
    if mine:
        head, _, rest = mine[0]["body"].partition("\n")
        rest = "\n".join(line for line in rest.split("\n") if not line.startswith("<!-- sweepbot-record "))
        mine[0]["body"] = f"{head}\n{record.line()}\n{rest}"
    else:
        github.add_comment(REPO, number, f"{status}\n{record.line()}\n", user=github.bot_login, user_type="Bot")


async def command(h, number: int, body: str, *, user: str = "maintainer", association: str = "MEMBER"):
    comment = h.github.add_comment(REPO, number, body, user=user, author_association=association)
    await h.deliver("issue_comment", h.github.issue_comment_payload(REPO, number, comment))
    return comment


def reactions(github, comment: dict) -> list[str]:
    """The reactions standing on the comment (only the bot reacts in these tests)."""
    return sorted(github.reactions(comment["id"]))


def reply(github, number: int, comment: dict) -> str:
    purpose = marker(f"reply-{comment['id']}")
    (found,) = [c["body"] for c in github.comments(REPO, number) if c["body"].startswith(purpose + "\n")]
    return english(found).split("\n", 1)[1]  # after the marker


def pin(github, number: int):
    return SweepRecord.parse(status(github, number)).pin


@both_layouts
async def test_a_member_pins_a_valid_run_and_the_next_push_starts_no_sweep(repo, make_harness):
    open_pull(repo, 40)
    h = await make_harness()
    await label(h, 40, FAIL_FAST)
    (dispatched,) = runs(repo)
    run = finished_run(repo, 40)
    c = await command(h, 40, f"/use {run['id']}")
    assert reactions(repo, c) == ["+1"]
    assert pin(repo, 40).run_id == run["id"]
    assert f"actions/runs/{run['id']}" in reply(repo, 40, c)
    line = line_with(english(status(repo, 40)), "**Reuse pin:**")
    assert str(run["id"]) in line
    push(repo, 40, "4" * 40)
    await send(h, 40, "synchronize", sender="partner")
    assert len(runs(repo)) == 2, "no new dispatch: only the first sweep and the pinned run exist"
    await unlabel(h, 40, FAIL_FAST)
    await label(h, 40, FAIL_FAST)  # removed and added again after the pin: forces a sweep
    assert len(runs(repo)) == 3


async def test_a_contributor_with_write_permission_is_accepted_and_one_without_is_refused(repo, make_harness):
    open_pull(repo, 41)
    repo.set_permission(REPO, "private-member", "write")
    h = await make_harness()
    run = finished_run(repo, 41)
    ok = await command(h, 41, f"/use {run['id']}", user="private-member", association="CONTRIBUTOR")
    assert reactions(repo, ok) == ["+1"] and pin(repo, 41).by == "private-member"
    refused = await command(h, 41, f"/use {run['id']}", user="drive-by", association="CONTRIBUTOR")
    assert reactions(repo, refused) == [], "someone who cannot write gets one write: the reply, no reactions"
    assert "write" in reply(repo, 41, refused)
    assert pin(repo, 41).comment_id == ok["id"], "a refused command changes no pin"


@pytest.mark.parametrize(
    "body",
    [
        "please /use 111 later",
        "> /use 111",
        "```\n/use 111\n```",
        "`/use 111`",
        # regression: rendered as code, or inside the quote (a lazy line), yet obeyed
        "<pre>\n/use 111\n</pre>",
        "<code>\n/use 111\n</code>",
        "> Pin it?\n/use 111",
    ],
)
async def test_a_command_in_prose_quotes_or_code_does_nothing(repo, make_harness, body):
    open_pull(repo, 42)
    h = await make_harness()
    c = await command(h, 42, body)
    assert reactions(repo, c) == [] and [w for w in repo.writes if not w.path.startswith("/app/")] == []


async def test_an_empty_html_comment_closes_at_once_and_hides_nothing(repo, make_harness):
    """Regression: `<!-->` (an empty comment, closed by CommonMark at once) hid the rest of the comment."""
    open_pull(repo, 39)
    h = await make_harness()
    run = finished_run(repo, 39)
    c = await command(h, 39, f"<!-->\n/use {run['id']}")
    assert reactions(repo, c) == ["+1"] and pin(repo, 39).run_id == run["id"]


@both_layouts
async def test_a_newer_bare_reuse_replaces_the_pin_with_the_newest_successful_run(repo, make_harness):
    open_pull(repo, 43)
    h = await make_harness()
    old = finished_run(repo, 43, conclusion="failure")
    await command(h, 43, f"/use {old['id']}")
    assert pin(repo, 43).run_id == old["id"], "a pinned id may have failed"
    newest = finished_run(repo, 43)
    finished_run(repo, 43, conclusion="failure")  # newer, but automatic selection takes successes only
    c = await command(h, 43, "/reuse-sweep-run")
    assert reactions(repo, c) == ["+1"] and pin(repo, 43).run_id == newest["id"]


@pytest.mark.parametrize(
    "case, code_word",
    [
        ("someone-elses", "not a sweep the bot started"),
        ("expired", "artifact"),
        ("evals-only", "evals-only"),
        ("missing", "no run"),
    ],
)
async def test_an_ineligible_run_is_refused_with_its_reason(repo, make_harness, case, code_word):
    open_pull(repo, 44)
    h = await make_harness()
    if case == "someone-elses":
        run = finished_run(repo, 44, by_bot=False)
    elif case == "expired":
        run = finished_run(repo, 44, expired=True)
    else:
        run = finished_run(repo, 44)
    if case == "evals-only":
        repo.label_issue(REPO, 44, "evals-only", actor="maintainer")
    run_id = 987654 if case == "missing" else run["id"]
    c = await command(h, 44, f"/use {run_id}")
    assert reactions(repo, c) == ["-1"]
    assert code_word in reply(repo, 44, c).lower()
    assert "90 days" not in reply(repo, 44, c), "no hard-coded lifetime; GitHub's dates instead"
    assert (
        SweepRecord.parse(
            next((c["body"] for c in repo.comments(REPO, 44) if c["body"].startswith(marker("sweep-status"))), None)
        ).pin
        is None
    )


@both_layouts
async def test_an_edit_elsewhere_runs_nothing_again_and_deleting_the_comment_withdraws_the_pin(repo, make_harness):
    open_pull(repo, 45)
    h = await make_harness()
    run = finished_run(repo, 45)
    c = await command(h, 45, f"/use {run['id']}\nthanks")
    writes = len([w for w in repo.writes if not w.path.startswith("/app/")])
    old_body = c["body"]
    c["body"] = f"/use {run['id']}\nthanks!"
    await h.deliver(
        "issue_comment", repo.issue_comment_payload(REPO, 45, c, "edited", changes={"body": {"from": old_body}})
    )
    assert len([w for w in repo.writes if not w.path.startswith("/app/")]) == writes, (
        "a typo fixed elsewhere runs nothing again"
    )
    await h.deliver("issue_comment", repo.issue_comment_payload(REPO, 45, c, "deleted"))
    assert pin(repo, 45) is None


def merge_comment(github, number: int) -> str:
    (found,) = [c["body"] for c in github.comments(REPO, number) if c["body"].startswith(marker("merge-reuse") + "\n")]
    return "\n".join(line for line in english(found).split("\n") if not line.startswith("<!-- sweepbot"))


MERGE_SHA = "3f786850e387550fdab836ed7e6dc881de23001b"


async def merge(h, number: int, *, delivery: str | None = None):
    h.github.update_pull(REPO, number, state="closed", merged=True, merge_commit_sha=MERGE_SHA)
    await send(h, number, "closed", sender="maintainer", delivery=delivery)


def ingest_requests(github) -> list[dict]:
    """The `ingest-results` requests sent to the results service, oldest first."""
    if not github.has_repo(RESULTS):
        return []
    return [d for d in github.repository_dispatches(RESULTS) if d["event_type"] == "ingest-results"]


def merge_notice(github, number: int) -> dict:
    (found,) = [c for c in github.comments(REPO, number) if c["body"].startswith(marker("merge-reuse") + "\n")]
    return found


async def test_at_merge_the_pin_is_checked_again_and_the_reused_run_named(repo, make_harness):
    open_pull(repo, 46)
    h = await make_harness()
    run = finished_run(repo, 46)
    await command(h, 46, f"/use {run['id']}")
    await merge(h, 46)
    text = merge_comment(repo, 46)
    assert text.startswith("### ✅ Merged: [run") and "is reused; no new sweep runs" in text
    assert f"actions/runs/{run['id']}" in text


async def test_at_merge_a_pin_whose_artifacts_expired_since_is_said_loudly(repo, make_harness, monkeypatch):
    open_pull(repo, 47)
    h = await make_harness()
    run = finished_run(repo, 47)
    await command(h, 47, f"/use {run['id']}")
    monkeypatch.setattr(pr_state, "utcnow", lambda: FAKE_NOW + dt.timedelta(days=120))  # past 90 days
    await merge(h, 47)
    text = merge_comment(repo, 47)
    assert text.startswith("### ❌ Merged, but pinned") and "no-result-artifact" in text


async def test_at_merge_with_nothing_pinned_the_pr_is_told(repo, make_harness):
    open_pull(repo, 48)
    h = await make_harness()
    await label(h, 48, FAIL_FAST)
    await merge(h, 48)
    assert merge_comment(repo, 48).startswith("### ❌ Merged with no run pinned")


async def test_a_merged_pr_that_never_asked_for_a_sweep_gets_no_merge_comment(repo, make_harness):
    open_pull(repo, 49, entry=None, files=("README.md",))
    h = await make_harness()
    await merge(h, 49)
    assert not any(c["body"].startswith(marker("merge-reuse")) for c in repo.comments(REPO, 49))


# -- staging and the results service ----------------------------------------------------------------

RESULTS = "SemiAnalysisAI/InferenceX-app"


def reply_comment_of(github, number: int, command_comment: dict) -> dict:
    purpose = marker(f"reply-{command_comment['id']}")
    (found,) = [c for c in github.comments(REPO, number) if c["body"].startswith(purpose + "\n")]
    return found


async def pinned_and_staged(h, repo, number: int):
    open_pull(repo, number)
    if not repo.has_repo(RESULTS):
        repo.add_repo(RESULTS, installation_id=1)
    repo.label_issue(REPO, number, FAIL_FAST, actor="maintainer")
    run = finished_run(repo, number)
    c = await command(h, number, f"/use {run['id']}")
    return run, c


@both_layouts
async def test_use_asks_the_results_service_to_stage_the_run_with_the_replys_id(repo, make_harness):
    h = await make_harness()
    run, c = await pinned_and_staged(h, repo, 50)
    reply = reply_comment_of(repo, 50, c)
    (sent,) = repo.repository_dispatches(RESULTS)
    assert sent["event_type"] == "stage-results"
    assert sent["client_payload"] == {
        "pr-number": "50",
        "run-id": str(run["id"]),
        "run-attempt": "1",
        "run-date": run["created_at"][:10],
        "requested-by": "maintainer",
        "comment-id": str(reply["id"]),
    }
    # the reply ends with its staging section, in each language: the service asked, and how, and what comes next
    english_half, chinese_half = (
        half.strip().removesuffix("---").rstrip() for half in reply["body"].split("\n## 中文\n")
    )
    assert english_half.endswith(
        f"\n⏳ **Staging:** asked of the results service `{RESULTS}`; this line follows what it reports."
    )
    assert chinese_half.endswith(f"\n⏳ **暂存**：已请求结果服务 `{RESULTS}` 暂存；这一行会随它的回报更新。")


async def test_use_without_a_primary_label_stages_nothing_and_says_so(repo, make_harness):
    open_pull(repo, 51)
    repo.add_repo(RESULTS, installation_id=1)
    h = await make_harness()
    run = finished_run(repo, 51)
    c = await command(h, 51, f"/use {run['id']}")
    assert repo.repository_dispatches(RESULTS) == []
    assert FAIL_FAST in english(reply_comment_of(repo, 51, c)["body"])


async def test_a_failed_staging_request_is_shown_failed_in_the_same_reply(repo, make_harness):
    h = await make_harness()
    repo.fail_next("POST", r"/InferenceX-app/dispatches$", 422, json={"message": "No ref found"})
    run, c = await pinned_and_staged(h, repo, 52)
    body = english(reply_comment_of(repo, 52, c)["body"])
    assert "No ref found" in body
    assert pin(repo, 52).run_id == run["id"], "the pin stands; only staging failed"


# -- the order of a pin's writes: on GitHub before the reply says so ---------------------------------


def pin_row(github, number: int) -> str:
    return next(line for line in english(status(github, number)).splitlines() if "**Reuse pin:**" in line)


async def test_the_reply_is_sent_only_once_the_status_comments_record_holds_the_pin(repo, make_harness):
    """The pin goes into the record of the status comment as `list comments` gave it, the rest of the comment as
    it was, before the reply; the gate renders the status whole, with the pin, after the 👍."""
    h = await make_harness()
    at_reply: list = []

    def on_write(request) -> None:
        if request.method == "POST" and request.path.endswith("/issues/53/comments"):
            at_reply.append((pin(repo, 53), reactions(repo, {"id": command_id[0]}) if command_id else None))

    command_id: list[int] = []
    repo.on_write = on_write
    open_pull(repo, 53)
    repo.add_repo(RESULTS, installation_id=1)
    repo.label_issue(REPO, 53, FAIL_FAST, actor="maintainer")
    run = finished_run(repo, 53)
    c = repo.add_comment(REPO, 53, f"/use {run['id']}", user="maintainer", author_association="MEMBER")
    command_id.append(c["id"])
    await h.deliver("issue_comment", repo.issue_comment_payload(REPO, 53, c))
    ((recorded, standing),) = at_reply  # one reply
    assert recorded is not None and recorded.run_id == run["id"] and recorded.comment_id == c["id"]
    assert standing == ["eyes"], "the 👍 comes after the reply"
    assert reactions(repo, c) == ["+1"]
    assert str(run["id"]) in pin_row(repo, 53), "the status, rendered whole, shows the pin"
    assert len(repo.repository_dispatches(RESULTS)) == 1


async def test_a_502_after_github_made_the_reply_leaves_one_reply_and_the_pin(repo, make_harness):
    h = await make_harness()
    repo.fail_after_commit("POST", r"/issues/54/comments$", 502)
    run, c = await pinned_and_staged(h, repo, 54)
    assert "Staging" in english(reply_comment_of(repo, 54, c)["body"])  # one reply (one found), staged
    assert reactions(repo, c) == ["+1"]
    assert pin(repo, 54).run_id == run["id"] and str(run["id"]) in pin_row(repo, 54)
    (staged,) = repo.repository_dispatches(RESULTS)
    assert staged["client_payload"]["comment-id"] == str(reply_comment_of(repo, 54, c)["id"])


@pytest.mark.parametrize("journal", ["kept", "lost"])
async def test_dying_between_recording_the_pin_and_replying_leaves_one_reply_and_the_pin(repo, make_harness, journal):
    """The attempt ends after the pin is on GitHub and before the reply is (GitHub never saw it): the retry, or
    the delivery sent again under a new id when the journal is lost, finds the pin recorded (nothing to edit),
    replies once and stages once."""
    h = await make_harness()
    open_pull(repo, 55)
    repo.add_repo(RESULTS, installation_id=1)
    repo.label_issue(REPO, 55, FAIL_FAST, actor="maintainer")
    run = finished_run(repo, 55)
    c = repo.add_comment(REPO, 55, f"/use {run['id']}", user="maintainer", author_association="MEMBER")
    payload = repo.issue_comment_payload(REPO, 55, c)
    if journal == "kept":  # the attempt fails at the reply; the journal retries it
        repo.raise_next("POST", r"/issues/55/comments$", RuntimeError("the process died"))
        await h.deliver("issue_comment", payload, delivery="use-1")
        assert (await h.journal_row("use-1")).attempts == 2
    else:  # as the process left it, GitHub holding the pin and no reply; a new process, no journal of it
        written = repo.comments(REPO, 55)[0]
        head, _, rest = written["body"].partition("\n")
        rest = "\n".join(line for line in rest.split("\n") if not line.startswith("<!-- sweepbot-record "))
        left = SweepRecord.parse(written["body"]).pinned(Pin(run["id"], c["id"], "maintainer", c["created_at"]))
        written["body"] = f"{head}\n{left.line()}\n{rest}"
        assert pin(repo, 55) == left.pin
        repo.reset_requests()
        await h.deliver("issue_comment", payload, delivery="use-2")
        # the pin needed no edit; the one edit of the status comment is the gate's render of it
        assert repo.count("PATCH", rf"/issues/comments/{written['id']}$") == 1
    reply_comment_of(repo, 55, c)  # exactly one
    assert reactions(repo, c) == ["+1"]
    assert pin(repo, 55).run_id == run["id"] and str(run["id"]) in pin_row(repo, 55)
    assert len(repo.repository_dispatches(RESULTS)) == 1


async def test_a_first_primary_added_after_the_pin_stages_it_without_forcing_a_sweep(repo, make_harness):
    """Regression: applying a primary for the first time after a pin read as "re-added" and forced a sweep."""
    open_pull(repo, 57)
    h = await make_harness()
    run = finished_run(repo, 57)
    await command(h, 57, f"/use {run['id']}")
    await label(h, 57, FAIL_FAST)
    assert len(runs(repo)) == 1, "only the pinned run: the pin holds"


async def test_evals_only_added_after_a_pin_shows_the_pin_blocked(repo, make_harness):
    open_pull(repo, 58)
    h = await make_harness()
    await label(h, 58, FAIL_FAST)
    run = finished_run(repo, 58)
    await command(h, 58, f"/use {run['id']}")
    await label(h, 58, "evals-only")
    line = line_with(english(status(repo, 58)), "**Reuse pin:**")
    assert "blocks reuse" in line and "`evals-only`" in line and str(run["id"]) in line
    assert pin(repo, 58).run_id == run["id"], "the pin is kept; it counts again once the label is gone"


@pytest.mark.parametrize("body", ["/use", "/use abc"])
async def test_use_without_a_numeric_run_id_gets_the_usage_reply_and_pins_nothing(repo, make_harness, body):
    open_pull(repo, 59)
    h = await make_harness()
    c = await command(h, 59, body)
    text = reply(repo, 59, c)
    assert "this line was not run" in text and f"`{body}`" in text
    assert reactions(repo, c) == [] and not any(
        x["body"].startswith(marker("sweep-status")) for x in repo.comments(REPO, 59)
    )


@pytest.mark.parametrize(
    "body, user, association, word",
    [
        ("/stage-results", "maintainer", "MEMBER", "nothing to stage"),
        ("/stage-results 5", "drive-by", "CONTRIBUTOR", "write, maintain or admin"),
    ],
)
async def test_stage_results_refusals(repo, make_harness, body, user, association, word):
    open_pull(repo, 61)
    repo.add_repo(RESULTS, installation_id=1)
    h = await make_harness()
    c = await command(h, 61, body, user=user, association=association)
    # a maintainer's refused command gets 👎; someone who cannot write gets only the reply (one write)
    assert reactions(repo, c) == (["-1"] if user == "maintainer" else []) and repo.repository_dispatches(RESULTS) == []
    assert word in english(reply_comment_of(repo, 61, c)["body"])


# -- merge and ingest -------------------------------------------------------------------------------


def results_service(github) -> None:
    if not github.has_repo(RESULTS):
        github.add_repo(RESULTS, installation_id=1)


@both_layouts
async def test_a_merge_with_a_valid_pin_asks_the_results_service_to_ingest_it_once(repo, make_harness):
    """Pins: at merge the bot sends `ingest-results` (PR, run, attempt, date, merge SHA, who pinned, the notice's
    id) and the notice says so; a redelivered `closed` (the same delivery, then a new id as after a lost
    journal) finds the request in the notice's record and sends nothing again."""
    open_pull(repo, 70)
    results_service(repo)
    h = await make_harness()
    run = finished_run(repo, 70)
    await command(h, 70, f"/use {run['id']}")
    await merge(h, 70, delivery="merge-70")
    notice = merge_notice(repo, 70)
    (sent,) = ingest_requests(repo)
    assert sent["client_payload"] == {
        "pr-number": "70",
        "run-id": str(run["id"]),
        "run-attempt": "1",
        "run-date": run["created_at"][:10],
        "merge-sha": MERGE_SHA,
        "pinned-by": "maintainer",
        "comment-id": str(notice["id"]),
    }
    text = english(notice["body"])
    assert "is reused; no new sweep runs" in text and "Ingest:** asked of the results service" in text
    await merge(h, 70, delivery="merge-70")
    await merge(h, 70, delivery="merge-70-again")  # the journal lost: only the notice's record remembers
    assert len(ingest_requests(repo)) == 1
    assert merge_notice(repo, 70)["body"] == notice["body"]


async def test_a_merge_with_nothing_pinned_says_nothing_is_ingested_and_a_use_after_it_asks_for_ingest(
    repo, make_harness
):
    """Pins: a merge with no pin sends nothing and says that a maintainer's `/use` now will get the run
    ingested; a `/use` after the merge pins the run, asks for the ingest, and the notice and the reply say so."""
    open_pull(repo, 71)
    results_service(repo)
    h = await make_harness()
    await label(h, 71, FAIL_FAST)
    (run,) = runs(repo)
    repo.complete_run(REPO, run["id"], "success")
    repo.add_artifact(REPO, run["id"], "results_bmk_dsr1")
    await merge(h, 71)
    text = merge_comment(repo, 71)
    assert text.startswith("### ❌ Merged with no run pinned, so nothing is ingested")
    assert "`/use <run_id>`" in text and ingest_requests(repo) == []
    c = await command(h, 71, f"/use {run['id']}")
    assert reactions(repo, c) == ["+1"] and pin(repo, 71).run_id == run["id"]
    (sent,) = ingest_requests(repo)
    notice = merge_notice(repo, 71)
    assert sent["client_payload"]["run-id"] == str(run["id"]) and sent["client_payload"]["merge-sha"] == MERGE_SHA
    assert sent["client_payload"]["comment-id"] == str(notice["id"])
    assert merge_comment(repo, 71).startswith("### ✅ Merged, then pinned: [run")
    assert "The PR is merged already: the results service" in reply(repo, 71, c)
    again = await command(h, 71, f"/use {run['id']}")  # the same run again: asked already
    assert reactions(repo, again) == ["+1"] and len(ingest_requests(repo)) == 1


async def test_a_merge_whose_pin_no_longer_qualifies_asks_for_no_ingest(repo, make_harness, monkeypatch):
    """Pins: a pin that fails the check at merge (its artifacts expired since) sends no ingest request."""
    open_pull(repo, 72)
    results_service(repo)
    h = await make_harness()
    run = finished_run(repo, 72)
    await command(h, 72, f"/use {run['id']}")
    monkeypatch.setattr(pr_state, "utcnow", lambda: FAKE_NOW + dt.timedelta(days=120))
    await merge(h, 72)
    assert ingest_requests(repo) == []
    assert "no longer qualifies" in merge_comment(repo, 72) and "nothing is ingested" in merge_comment(repo, 72)


async def test_an_ingest_request_github_refuses_is_shown_and_a_use_sends_it_again(repo, make_harness):
    """Pins: a refused `ingest-results` dispatch is shown in the notice (the record says it did not go out),
    and a maintainer's `/use` of the same run then sends it."""
    open_pull(repo, 73)
    results_service(repo)
    h = await make_harness()
    run = finished_run(repo, 73)
    await command(h, 73, f"/use {run['id']}")
    repo.fail_next("POST", r"/InferenceX-app/dispatches$", 422, json={"message": "No ref found"})
    await merge(h, 73)
    assert ingest_requests(repo) == [] and "No ref found" in english(merge_notice(repo, 73)["body"])
    await command(h, 73, f"/use {run['id']}")
    (sent,) = ingest_requests(repo)
    assert sent["client_payload"]["comment-id"] == str(merge_notice(repo, 73)["id"])
    assert "No ref found" not in english(merge_notice(repo, 73)["body"])


async def test_the_use_reply_lists_the_result_artifacts_with_their_expiry_from_the_api(repo, make_harness):
    """Pins: the reply names each unexpired result artifact with the day GitHub's `expires_at` gives (the
    fake's artifacts expire 90 days after they are made), and not the ones that hold no results."""
    open_pull(repo, 74)
    h = await make_harness()
    run = finished_run(repo, 74, artifact=None)
    made = [
        repo.add_artifact(REPO, run["id"], name) for name in ("results_bmk_dsr1", "server_logs", "eval_results_all")
    ]
    days = {a["name"]: a["expires_at"][:10] for a in made}
    assert days["results_bmk_dsr1"].startswith("2026-0")  # the fake's clock: 90 days after early 2026
    c = await command(h, 74, f"/use {run['id']}")
    text = reply(repo, 74, c)
    assert f"- `results_bmk_dsr1`: until {days['results_bmk_dsr1']}" in text
    assert f"- `eval_results_all`: until {days['eval_results_all']}" in text
    assert "server_logs" not in text


async def test_a_refusal_for_expired_artifacts_names_the_day_each_expired(repo, make_harness, monkeypatch):
    """The refusal says when each result artifact expired, from GitHub's `expires_at`, where it
    said "Artifacts expire after 90 days"."""
    open_pull(repo, 75)
    h = await make_harness()
    run = finished_run(repo, 75, artifact=None)
    made = repo.add_artifact(REPO, run["id"], "results_bmk_dsr1")
    monkeypatch.setattr(pr_state, "utcnow", lambda: FAKE_NOW + dt.timedelta(days=120))
    c = await command(h, 75, f"/use {run['id']}")
    assert reactions(repo, c) == ["-1"]
    assert f"`results_bmk_dsr1` (on {made['expires_at'][:10]}) has expired" in reply(repo, 75, c)


# -- a pin follows the comment that holds it -------------------------------------------------------------


async def edit(h, number: int, comment: dict, body: str, *, by: str | None = None) -> None:
    """The comment's body changed to `body` by its author, or by `by` (someone else), as GitHub sends it: the
    body before in `changes`, the editor as the sender, `updated_at` the time of the edit (the fake's clock)."""
    before = comment["body"]
    comment.update(body=body, updated_at=h.github._stamp())
    payload = h.github.issue_comment_payload(REPO, number, comment, "edited", changes={"body": {"from": before}})
    if by is not None:
        payload["sender"] = user_json(by)
    await h.deliver("issue_comment", payload)


def withdrawal_note(github, number: int) -> tuple[str, str]:
    """The status comment's Reuse pin row, (English, Chinese): the gate's reason, then what the status says of a
    withdrawn pin."""
    body = status(github, number)
    english_half, chinese_half = english(body), body.split("\n## 中文\n")[1]
    rows = [
        next(line for line in half.splitlines() if marker_word in line)
        for half, marker_word in ((english_half, "**Reuse pin:**"), (chinese_half, "**复用固定"))
    ]
    assert "**Sweep run:**" not in rows[0] and "**Sweep 运行" not in rows[1], "one row per condition"
    return rows[0], rows[1]


@both_layouts
async def test_a_pin_edited_into_a_refused_command_is_withdrawn_and_the_next_push_sweeps(repo, make_harness):
    """Regression: a pin edited to a refused run stayed pinned. A maintainer pinned a run, then edited
    the comment to `/use 987654` (no such run): the bot answered 👎 "refused, so it pins nothing", but the record
    still held the old pin, the status said "Sweeps are paused", and the next push started no sweep. The pin a
    comment holds follows its latest text: refused, it is withdrawn, and the status says so and why."""
    open_pull(repo, 80)
    h = await make_harness()
    await label(h, 80, FAIL_FAST)
    run = finished_run(repo, 80)
    c = await command(h, 80, f"/use {run['id']}")
    assert pin(repo, 80).run_id == run["id"] and "is pinned, so pushes start no sweep" in pin_row(repo, 80)
    await edit(h, 80, c, "/use 987654")
    assert reactions(repo, c) == ["-1"] and "was refused, so it pins nothing" in reply(repo, 80, c)
    assert pin(repo, 80) is None
    row, row_zh = withdrawal_note(repo, 80)
    assert f"The pin of run `{run['id']}` was withdrawn" in row and "refused" in row, row
    assert f"`{run['id']}`" in row_zh and "撤销" in row_zh, row_zh
    assert "is pinned, so pushes start no sweep" not in row
    before = len(runs(repo))
    push(repo, 80, "5" * 40)
    await send(h, 80, "synchronize", sender="partner")
    assert len(runs(repo)) == before + 1, "nothing pinned: the push starts a sweep"


@both_layouts
async def test_a_pin_edited_into_another_accepted_run_moves_straight_to_it(repo, make_harness):
    """An edit of `/use A` into an accepted `/use B` pins B with no moment between without a pin (a
    withdrawn pin would let a delivery in between start a sweep): every write the bot makes while handling the
    edit leaves the status comment's record pinned, first to A, then to B, and no sweep starts."""
    open_pull(repo, 81)
    h = await make_harness()
    await label(h, 81, FAIL_FAST)
    a, b = finished_run(repo, 81), finished_run(repo, 81, conclusion="failure")
    c = await command(h, 81, f"/use {a['id']}")
    seen: list = []
    repo.on_write = lambda request: seen.append(pin(repo, 81))
    dispatched = len(runs(repo))
    await edit(h, 81, c, f"/use {b['id']}")
    repo.on_write = None
    assert seen and None not in seen, "the pin was withdrawn before the new one was recorded"
    ids = [p.run_id for p in seen]
    assert ids == [a["id"]] * ids.count(a["id"]) + [b["id"]] * ids.count(b["id"]) and ids[-1] == b["id"], ids
    assert pin(repo, 81).run_id == b["id"] and pin(repo, 81).comment_id == c["id"]
    assert reactions(repo, c) == ["+1"] and str(b["id"]) in pin_row(repo, 81)
    assert "withdrawn" not in withdrawal_note(repo, 81)[0]
    assert len(runs(repo)) == dispatched, "no sweep started"


@pytest.mark.parametrize("outcome", ["unauthorized", "permission_unknown"])
async def test_a_pin_edited_by_an_author_the_dispatcher_refuses_is_withdrawn(repo, make_harness, outcome):
    """The dispatcher's refusal: the author of a pin lost write permission (or GitHub would not
    confirm it) and edits the comment into another pin command. The command is not run, and the pin the comment
    held is withdrawn: its latest text is a command its author may not run. The status says so and why."""
    open_pull(repo, 82)
    repo.set_permission(REPO, "lapsing", "write")
    h = await make_harness()
    await label(h, 82, FAIL_FAST)
    a, b = finished_run(repo, 82), finished_run(repo, 82)
    c = await command(h, 82, f"/use {a['id']}", user="lapsing", association="CONTRIBUTOR")
    assert pin(repo, 82).run_id == a["id"]
    if outcome == "unauthorized":
        repo.set_permission(REPO, "lapsing", "read")
    else:
        repo.fail_next("GET", r"/collaborators/lapsing/permission$", 403, json={"message": "Resource not accessible"})
    h.bot.processor.permissions.cache.clear()  # as once the permission cache's few minutes have passed
    await edit(h, 82, c, f"/use {b['id']}")
    # the 👍 of the pin goes; someone who cannot write gets no 👎 (the reply says why)
    assert reactions(repo, c) == ([] if outcome == "unauthorized" else ["-1"])
    assert pin(repo, 82) is None
    row, row_zh = withdrawal_note(repo, 82)
    assert f"The pin of run `{a['id']}` was withdrawn" in row and "`lapsing`" in row, row
    assert ("no longer has write" if outcome == "unauthorized" else "did not confirm") in row, row
    assert f"`{a['id']}`" in row_zh and "撤销" in row_zh, row_zh
    before = len(runs(repo))
    push(repo, 82, "6" * 40)
    await send(h, 82, "synchronize", sender="partner")
    assert len(runs(repo)) == before + 1


@pytest.mark.parametrize("change", ["deleted", "edited-away", "edited-by-someone-else"])
async def test_a_pin_whose_comment_is_deleted_or_edited_away_is_withdrawn_and_the_status_says_why(
    repo, make_harness, change
):
    """A pin withdrawn by its comment's deletion, an edit that leaves no pin command, or an edit by
    someone other than its author (who changed the command: a command edited in by someone else is never run)
    leaves no pin, and the status says which run was unpinned and why, in both languages."""
    open_pull(repo, 83)
    h = await make_harness()
    a, b = finished_run(repo, 83), finished_run(repo, 83)
    c = await command(h, 83, f"/use {a['id']}")
    if change == "deleted":
        await h.deliver("issue_comment", repo.issue_comment_payload(REPO, 83, c, "deleted"))
        word = "deleted"
    elif change == "edited-away":
        await edit(h, 83, c, "Not this one after all.")
        word = "no longer holds a pin command"
    else:
        await edit(h, 83, c, f"/use {b['id']}", by="admin")
        word = "`admin`"
    assert pin(repo, 83) is None
    row, row_zh = withdrawal_note(repo, 83)
    assert f"The pin of run `{a['id']}` was withdrawn" in row and word in row, row
    assert f"`{a['id']}`" in row_zh and "撤销" in row_zh, row_zh
