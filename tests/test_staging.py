"""The results service's callbacks (docs/spec.md, "The results service"): `stage-results-started`,
`stage-results-completed` and `ingest-completed` through the webhook, updating the bot's own staging reply in
place and writing the ingest report; and bound to what the bot asked for: the sender, the PR, the reply, the
run, the order."""

from __future__ import annotations

import copy
import re
from urllib.parse import urlsplit

from harness import REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_reuse_command import RESULTS, command, fake_clock, pin, reactions, reply_comment_of  # noqa: F401
from test_sweep_gate import FAIL_FAST, english, label, make_harness, no_merge_wait, open_pull, repo, runs  # noqa: F401

from bot.rules.markers import hidden_record, marker, read_hidden_record

VIEWER = "https://inferencex.semianalysis.com"
SENDER = "results-bot"  # the results service's workflows, once policy results.senders names them
PHISHING = "https://inferencex.semianalysis.com/r)**[Sign in again](https://evil.example/login)**"  # as sent
PHISHING_PLAIN = "https://inferencex.semianalysis.com/r)**[Sign-in-again](https://evil.example/login)**"  # no spaces
ALLOWED_HOSTS = {"github.com", "inferencex.semianalysis.com"}
LINK = re.compile(r"https?://[^\s()<>\[\]`\"']+")
COUNTS = {
    row: {col: 0 for col in ("new", "duplicate", "skipped", "unmapped", "failed")}
    for row in ("benchmark", "eval", "trace", "power")
}


def trust_sender(github, login: str = SENDER) -> None:
    """Policy results.senders, in the repository's .github/sweepbot.yml on its default branch."""
    github.set_file(REPO, ".github/sweepbot.yml", f"results:\n  senders: [{login}]\n")


async def staged_pin(h, repo, number: int, *, primary: bool = True):
    """A PR whose sweep the bot dispatched and which finished; `/use` pins it and asks for staging (unless the
    primary label is gone by then). (run, the /use comment, the stage-results request's client_payload)."""
    open_pull(repo, number)
    if not repo.has_repo(RESULTS):
        repo.add_repo(RESULTS, installation_id=1)
    await label(h, number, FAIL_FAST)
    head = repo.pull(REPO, number)["head"]["sha"]
    (run,) = [r for r in runs(repo) if r["head_sha"] == head]
    repo.complete_run(REPO, run["id"], "success")
    repo.add_artifact(REPO, run["id"], "results_bmk_dsr1")
    await h.deliver("workflow_run", repo.workflow_run_payload(REPO, run["id"], "completed", conclusion="success"))
    if not primary:
        repo.unlabel_issue(REPO, number, FAIL_FAST, actor="maintainer")
    c = await command(h, number, f"/use {run['id']}")
    assert reactions(repo, c) == ["+1"], english(reply_comment_of(repo, number, c)["body"])
    request = [d for d in repo.repository_dispatches(RESULTS) if d["client_payload"]["pr-number"] == str(number)]
    return run, c, request[-1]["client_payload"] if request else None


def echoed(request: dict, event_type: str, app_run: int = 777, **extra) -> dict:
    """What the results service's own workflows send: the request's client_payload echoed, plus their fields."""
    payload = {**request, "source-repository": RESULTS, "app-run-id": str(app_run), **extra}
    if event_type == "stage-results-completed":
        payload.setdefault("stage-succeeded", "true")
    return payload


def old_shape(request: dict, event_type: str, app_run: int = 777, **extra) -> dict:
    """A callback as the bot first accepted them (no run-attempt; run-date, requested-by and, when staged,
    a results-url on the viewer): regression tests use it so that only the hole they pin makes them fail."""
    payload = {
        **{k: v for k, v in request.items() if k != "run-attempt"},
        "source-repository": RESULTS,
        "app-run-id": str(app_run),
    }
    if event_type == "stage-results-completed":
        payload.update({"stage-succeeded": "true", "results-url": f"{VIEWER}/staged/{request['run-id']}"})
    return {**payload, **extra}


def old_ingest(number: int, run_id: int, app_run: int = 777, **extra) -> dict:
    return {
        "source-repository": RESULTS,
        "pr-number": str(number),
        "run-id": str(run_id),
        "app-run-id": str(app_run),
        "run-date": "2026-01-01",
        "requested-by": "maintainer",
        "counts": COUNTS,
        **extra,
    }


def dispatch(github, event_type: str, payload: dict, sender: str | None = None) -> dict:
    return github.repository_dispatch_payload(REPO, event_type, payload, sender=sender or github.bot_login)


def callback_payload(github, number: int, run_id: int, event_type: str, reply_id: int | None, **extra):
    payload = {
        "source-repository": RESULTS,
        "pr-number": str(number),
        "run-id": str(run_id),
        "app-run-id": "777",
        "run-date": "2026-01-01",
        "requested-by": "maintainer",
        **extra,
    }
    if reply_id is not None:
        payload["comment-id"] = str(reply_id)
    return dispatch(github, event_type, payload)


def bots_comments(github, number: int) -> list[dict]:
    return [c for c in github.comments(REPO, number) if c["user"]["login"] == github.bot_login]


def every_body(github) -> list[str]:
    return [c["body"] for item in github.issues(REPO) for c in github.comments(REPO, item["number"])]


def staging_text(github, number: int, c: dict) -> str:
    return english(reply_comment_of(github, number, c)["body"]).split("**Staging:**", 1)[1]


def ingest_reports(github, number: int, run_id: int) -> list[dict]:
    return [x for x in github.comments(REPO, number) if x["body"].startswith(marker(f"ingest-{run_id}"))]


# -- what worked before the callbacks were hardened ------------------------------------------------


async def test_started_then_completed_callbacks_update_one_reply_twice(repo, make_harness):
    h = await make_harness()
    run, c, _ = await staged_pin(h, repo, 53)
    reply = copy.deepcopy(reply_comment_of(repo, 53, c))  # the fake edits its comments in place
    started = callback_payload(repo, 53, run["id"], "stage-results-started", reply["id"])
    await h.deliver("repository_dispatch", started)
    after_start = reply_comment_of(repo, 53, c)
    assert after_start["id"] == reply["id"] and after_start["body"] != reply["body"]
    assert f"https://github.com/{RESULTS}/actions/runs/777" in after_start["body"]
    done = callback_payload(
        repo,
        53,
        run["id"],
        "stage-results-completed",
        None,
        **{"stage-succeeded": "true", "results-url": "https://inferencex.semianalysis.com/staged/53"},
    )
    await h.deliver("repository_dispatch", done)  # no comment id: found by the run id
    final = reply_comment_of(repo, 53, c)
    assert final["id"] == reply["id"] and "(https://inferencex.semianalysis.com/staged/53)" in final["body"]
    assert len([x for x in repo.comments(REPO, 53) if x["body"].startswith(marker(f"reply-{c['id']}"))]) == 1


async def test_a_callback_with_a_non_numeric_run_id_or_from_elsewhere_is_rejected(repo, make_harness):
    h = await make_harness()
    run, c, _ = await staged_pin(h, repo, 54)
    before = reply_comment_of(repo, 54, c)["body"]
    bad = callback_payload(repo, 54, run["id"], "stage-results-started", None)
    bad["client_payload"]["run-id"] = "12a"
    elsewhere = callback_payload(
        repo, 54, run["id"], "stage-results-started", None, **{"source-repository": "someone/else"}
    )
    for payload in (bad, elsewhere):
        resp = await h.deliver("repository_dispatch", payload)
        assert resp.status == 202
    assert reply_comment_of(repo, 54, c)["body"] == before


async def test_a_callback_for_an_unknown_reply_is_recorded_and_ignored(repo, make_harness):
    h = await make_harness()
    open_pull(repo, 55)
    await h.deliver(
        "repository_dispatch",
        callback_payload(repo, 55, 424242, "stage-results-started", 999999),
        delivery="unknown-reply",
    )
    assert (await h.journal_row("unknown-reply")).status == "done"
    assert bots_comments(repo, 55) == []


async def test_an_ingest_report_is_a_table_and_a_rerun_updates_the_same_comment(repo, make_harness):
    h = await make_harness()
    run, _, _ = await staged_pin(h, repo, 56)
    counts = copy.deepcopy(COUNTS)
    counts["benchmark"]["new"] = 12
    await h.deliver(
        "repository_dispatch", callback_payload(repo, 56, run["id"], "ingest-completed", None, counts=counts)
    )
    counts["benchmark"]["duplicate"], counts["eval"]["failed"] = 12, 2
    await h.deliver(
        "repository_dispatch", callback_payload(repo, 56, run["id"], "ingest-completed", None, counts=counts)
    )
    (report,) = ingest_reports(repo, 56, run["id"])
    text = english(report["body"])
    assert "| `benchmark` | 12 | 12 | 0 | 0 | 0 |" in text and "| `eval` | 0 | 0 | 0 | 0 | 2 |" in text
    assert "2 failed" in text and f"https://github.com/{RESULTS}/actions/runs/777" in text
    assert "(2026-01-01)" in text


async def test_stage_results_restages_the_pinned_run_and_its_callbacks_update_its_own_reply(repo, make_harness):
    h = await make_harness()
    run, c, _ = await staged_pin(h, repo, 60)
    again = await command(h, 60, "/stage-results")
    assert reactions(repo, again) == ["+1"]
    first, second = [d for d in repo.repository_dispatches(RESULTS) if d["client_payload"]["pr-number"] == "60"]
    stage_reply = reply_comment_of(repo, 60, again)
    assert second["client_payload"]["run-id"] == str(run["id"])
    assert second["client_payload"]["comment-id"] == str(stage_reply["id"]) != first["client_payload"]["comment-id"]
    use_reply = reply_comment_of(repo, 60, c)["body"]
    done = callback_payload(
        repo, 60, run["id"], "stage-results-completed", stage_reply["id"], **{"stage-succeeded": "false"}
    )
    await h.deliver("repository_dispatch", done)
    assert f"https://github.com/{RESULTS}/actions/runs/777" in reply_comment_of(repo, 60, again)["body"]
    assert "failed in the results service" in staging_text(repo, 60, again)
    assert reply_comment_of(repo, 60, c)["body"] == use_reply, "the /use reply is another request's"


# -- the real callbacks are accepted ---------------------------------------------------------------


async def test_real_shaped_callbacks_are_accepted_end_to_end(repo, make_harness):
    """Regression: shaped as the results service's workflows send them (the stage-results request's
    client_payload echoed, plus app-run-id and stage-succeeded), every callback was refused ("run-attempt is not
    a field of a started callback", "run-date is missing"): the reply stayed at "requested", no report."""
    trust_sender(repo)
    h = await make_harness()
    run, c, request = await staged_pin(h, repo, 70)
    assert set(request) == {"pr-number", "run-id", "run-attempt", "run-date", "requested-by", "comment-id"}
    await h.deliver(
        "repository_dispatch",
        dispatch(repo, "stage-results-started", echoed(request, "stage-results-started", 9001), SENDER),
    )
    assert " started" in staging_text(repo, 70, c)
    assert f"(https://github.com/{RESULTS}/actions/runs/9001)" in staging_text(repo, 70, c)
    await h.deliver(
        "repository_dispatch",
        dispatch(repo, "stage-results-completed", echoed(request, "stage-results-completed", 9001), SENDER),
    )
    text = staging_text(repo, 70, c)
    assert "staged this run" in text and f"(https://github.com/{RESULTS}/actions/runs/9001)" in text
    assert "see its results" not in text, "no results-url was sent: no results link"
    ingest = {
        "source-repository": RESULTS,
        "pr-number": "70",
        "run-id": str(run["id"]),
        "app-run-id": "9002",
        "counts": {**COUNTS, "eval": {**COUNTS["eval"], "new": 36}},
        "service-version": "2.1",
    }
    await h.deliver("repository_dispatch", dispatch(repo, "ingest-completed", ingest, SENDER))
    (report,) = ingest_reports(repo, 70, run["id"])
    heading = english(report["body"]).split("\n")[2]
    assert heading == (
        f"### ✅ Results of [run `{run['id']}`](https://github.com/{REPO}/actions/runs/{run['id']}) "
        "ingested into the production database"
    )
    assert "| `eval` | 36 | 0 | 0 | 0 | 0 |" in report["body"]


# -- who may call back -----------------------------------------------------------------------------


async def test_a_callback_from_a_sender_not_configured_changes_nothing(repo, make_harness):
    """Regression: the webhook's sender was never checked, only the payload's source-repository,
    which anyone who can send a repository_dispatch here can write."""
    h = await make_harness()
    run, c, request = await staged_pin(h, repo, 71)
    before = reply_comment_of(repo, 71, c)["body"]
    for event_type in ("stage-results-started", "stage-results-completed"):
        await h.deliver(
            "repository_dispatch",
            dispatch(repo, event_type, old_shape(request, event_type), "mallory"),
            delivery=f"mallory-{event_type}",
        )
        assert (await h.journal_row(f"mallory-{event_type}")).status == "done"
    await h.deliver("repository_dispatch", dispatch(repo, "ingest-completed", old_ingest(71, run["id"]), SENDER))
    assert reply_comment_of(repo, 71, c)["body"] == before
    assert ingest_reports(repo, 71, run["id"]) == [], f"{SENDER} is not in results.senders here"
    await h.deliver(
        "repository_dispatch", dispatch(repo, "stage-results-started", old_shape(request, "stage-results-started"))
    )  # the App itself
    assert " started" in staging_text(repo, 71, c)


# -- what a callback may name ----------------------------------------------------------------------


async def test_a_pr_number_that_is_not_the_replys_writes_nothing_anywhere(repo, make_harness):
    """Regression: `pr-number: 82` with the comment id of PR 81's reply posted a copy of the reply
    on PR 82."""
    h = await make_harness()
    run, c, request = await staged_pin(h, repo, 81)
    open_pull(repo, 82)
    before_81 = reply_comment_of(repo, 81, c)["body"]
    before_82 = copy.deepcopy(repo.comments(REPO, 82))
    for event_type in ("stage-results-started", "stage-results-completed"):
        await h.deliver(
            "repository_dispatch", dispatch(repo, event_type, old_shape({**request, "pr-number": "82"}, event_type))
        )
    assert repo.comments(REPO, 82) == before_82
    assert reply_comment_of(repo, 81, c)["body"] == before_81


async def test_a_callback_naming_a_refused_use_reply_leaves_it_and_the_delivery_is_done(repo, make_harness):
    """Regression: a callback naming the reply of a refused `/use` re-rendered it with a staging
    section, which the template refuses (UndefinedError): the delivery failed, again on every retry."""
    h = await make_harness()
    run, _, _ = await staged_pin(h, repo, 72)
    other = repo.add_run(
        REPO, "run-sweep.yml", head_sha=repo.pull(REPO, 72)["head"]["sha"], event="workflow_dispatch"
    )  # nobody's dispatch for this PR: refused
    refused = await command(h, 72, f"/use {other['id']}")
    assert reactions(repo, refused) == ["-1"]
    reply = reply_comment_of(repo, 72, refused)
    before = reply["body"]
    request = {
        "pr-number": "72",
        "run-id": str(other["id"]),
        "comment-id": str(reply["id"]),
        "run-date": "2026-01-01",
        "requested-by": "maintainer",
    }
    for i, event_type in enumerate(("stage-results-started", "stage-results-completed")):
        await h.deliver(
            "repository_dispatch", dispatch(repo, event_type, old_shape(request, event_type)), delivery=f"refused-{i}"
        )
        assert (await h.journal_row(f"refused-{i}")).status == "done"
    assert reply_comment_of(repo, 72, refused)["body"] == before


async def test_a_callback_naming_a_comment_that_is_no_staging_reply_changes_nothing(repo, make_harness):
    """A help reply, the status comment, someone's own comment that copies a reply: none is a staging reply."""
    h = await make_harness()
    run, c, request = await staged_pin(h, repo, 73)
    help_command = await command(h, 73, "/use")
    forged = repo.add_comment(REPO, 73, reply_comment_of(repo, 73, c)["body"], user="mallory")
    status = next(x for x in repo.comments(REPO, 73) if x["body"].startswith(marker("sweep-status")))
    targets = [reply_comment_of(repo, 73, help_command), forged, status]
    before = copy.deepcopy(repo.comments(REPO, 73))
    for target in targets:
        await h.deliver(
            "repository_dispatch",
            dispatch(
                repo,
                "stage-results-started",
                old_shape({**request, "comment-id": str(target["id"])}, "stage-results-started"),
            ),
        )
    assert repo.comments(REPO, 73) == before


async def test_a_callback_naming_a_reply_that_sent_no_request_changes_nothing(repo, make_harness):
    """A `/use` reply that says staging needs a primary label sent nothing: no callback can answer it."""
    h = await make_harness()
    run, c, request = await staged_pin(h, repo, 88, primary=False)
    reply = reply_comment_of(repo, 88, c)
    before = reply["body"]
    echo = {
        "pr-number": "88",
        "run-id": str(run["id"]),
        "comment-id": str(reply["id"]),
        "run-date": "2026-01-01",
        "requested-by": "maintainer",
    }
    await h.deliver(
        "repository_dispatch", dispatch(repo, "stage-results-started", old_shape(echo, "stage-results-started"))
    )
    assert reply_comment_of(repo, 88, c)["body"] == before


async def test_a_refused_commands_reply_never_counts_whatever_its_record_says(repo, make_harness, caplog):
    """The outcome decides, before anything is rendered: a reply of a refused command whose record (damaged, or
    from another version) carries a staging section in a state a request went out in is still not staged."""
    h = await make_harness()
    run, c, request = await staged_pin(h, repo, 89)
    reply = reply_comment_of(repo, 89, c)
    record = {**read_hidden_record("reply", reply["body"]), "outcome": "refused"}
    body = reply["body"].split("\n", 1)[0] + "\n" + hidden_record("reply", record) + "\nrefused\n"
    crafted = repo.add_comment(REPO, 89, body, user=repo.bot_login, user_type="Bot")
    with caplog.at_level("WARNING", logger="sweepbot"):
        await h.deliver(
            "repository_dispatch",
            dispatch(
                repo,
                "stage-results-started",
                old_shape({**request, "comment-id": str(crafted["id"])}, "stage-results-started"),
            ),
        )
    assert repo.comments(REPO, 89)[-1]["body"] == body
    (ignored,) = [r for r in caplog.records if r.getMessage().startswith("results callback ignored")]
    assert "outcome 'refused'" in ignored.fields["reason"]


async def test_a_results_link_on_another_host_is_not_shown(repo, make_harness):
    """Regression: any host was accepted for `results-url`."""
    h = await make_harness()
    run, c, request = await staged_pin(h, repo, 74)
    await h.deliver(
        "repository_dispatch",
        dispatch(
            repo,
            "stage-results-completed",
            old_shape(request, "stage-results-completed", **{"results-url": "https://evil.example/results/74"}),
        ),
    )
    text = staging_text(repo, 74, c)
    assert "staged this run" in text and "see its results" not in text
    assert not any("evil.example" in body for body in every_body(repo))


async def test_the_phishing_results_url_is_not_rendered_as_a_link(repo, make_harness):
    """Regression: `results-url` `https://inferencex.semianalysis.com/r)**[Sign in again](https://
    evil.example/login)**` was pasted into the reply, which then showed a bold "Sign in again" phishing link (the
    old check let every character of it through but the spaces: PHISHING_PLAIN is the form it rendered)."""
    h = await make_harness()
    run, c, request = await staged_pin(h, repo, 75)
    for i, url in enumerate((PHISHING_PLAIN, PHISHING)):
        await h.deliver(
            "repository_dispatch",
            dispatch(
                repo,
                "stage-results-completed",
                old_shape(request, "stage-results-completed", 700 + i, **{"results-url": url}),
            ),
        )
        text = staging_text(repo, 75, c)
        assert "staged this run" in text and "Sign" not in text and "see its results" not in text
        assert f"actions/runs/{700 + i})" in text, "the callback itself counted: only its link was dropped"
        assert not any("evil.example" in body for body in every_body(repo))


async def test_a_results_link_on_the_viewer_is_shown_percent_encoded(repo, make_harness):
    h = await make_harness()
    run, c, request = await staged_pin(h, repo, 76)
    await h.deliver(
        "repository_dispatch",
        dispatch(
            repo,
            "stage-results-completed",
            echoed(
                request, "stage-results-completed", **{"results-url": f"{VIEWER}/inference?unofficialRun=7&q=a%20b#top"}
            ),
        ),
    )
    assert f"[see its results]({VIEWER}/inference?unofficialRun=7&q=a%20b)" in staging_text(repo, 76, c)


# -- ingest reports only for runs of the PR --------------------------------------------------------


async def test_an_ingest_report_for_a_plain_issue_or_an_unpinned_unstaged_run_writes_nothing(repo, make_harness):
    """Regression: `ingest-completed` posted reports on a plain issue, for runs nobody pinned."""
    h = await make_harness()
    run, _, _ = await staged_pin(h, repo, 77)
    open_pull(repo, 78)
    issue = repo.add_issue(REPO, title="A question")
    for number, run_id in ((issue["number"], run["id"]), (77, run["id"] + 1000), (78, run["id"])):
        await h.deliver("repository_dispatch", dispatch(repo, "ingest-completed", old_ingest(number, run_id)))
        assert ingest_reports(repo, number, run_id) == []
    assert bots_comments(repo, issue["number"]) == [] and bots_comments(repo, 78) == []


async def test_an_ingest_report_for_a_run_staged_but_no_longer_pinned_is_written(repo, make_harness):
    """The PR asked for the run to be staged (its staging reply says so): its report counts without the pin."""
    h = await make_harness()
    run, c, _ = await staged_pin(h, repo, 79)
    await h.deliver("issue_comment", repo.issue_comment_payload(REPO, 79, c, "deleted"))  # withdraws the pin
    assert pin(repo, 79) is None
    await h.deliver(
        "repository_dispatch",
        dispatch(
            repo,
            "ingest-completed",
            {"source-repository": RESULTS, "pr-number": "79", "run-id": str(run["id"]), "counts": COUNTS},
        ),
    )
    assert len(ingest_reports(repo, 79, run["id"])) == 1


async def test_an_ingest_report_for_a_run_pinned_but_never_staged_is_written(repo, make_harness):
    """Pinned while the PR had no primary label: nothing was asked of the results service (the reply says so),
    yet the pin alone makes the run's ingest report count."""
    h = await make_harness()
    run, c, request = await staged_pin(h, repo, 85, primary=False)
    assert request is None and pin(repo, 85).run_id == run["id"]
    assert "needs a primary sweep label" in staging_text(repo, 85, c)
    await h.deliver(
        "repository_dispatch",
        dispatch(
            repo,
            "ingest-completed",
            {"source-repository": RESULTS, "pr-number": "85", "run-id": str(run["id"]), "counts": COUNTS},
        ),
    )
    assert len(ingest_reports(repo, 85, run["id"])) == 1


async def test_a_reply_record_that_cannot_be_rendered_is_left_and_the_delivery_is_done(repo, make_harness):
    """A bot reply whose record looks like a staging reply but lacks what its template needs (an older or
    damaged record) is logged and left as it is; the delivery does not fail."""
    h = await make_harness()
    run, c, request = await staged_pin(h, repo, 87)
    reply = reply_comment_of(repo, 87, c)
    record = read_hidden_record("reply", reply["body"])
    del record["verdict"]
    body = reply["body"].split("\n", 1)[0] + "\n" + hidden_record("reply", record) + "\nbroken\n"
    broken = repo.add_comment(REPO, 87, body, user=repo.bot_login, user_type="Bot")
    await h.deliver(
        "repository_dispatch",
        dispatch(
            repo,
            "stage-results-started",
            old_shape({**request, "comment-id": str(broken["id"])}, "stage-results-started"),
        ),
        delivery="broken-record",
    )
    assert (await h.journal_row("broken-record")).status == "done"
    assert repo.comments(REPO, 87)[-1]["body"] == body


async def test_an_older_ingest_report_does_not_replace_a_newer_one(repo, make_harness):
    h = await make_harness()
    run, _, _ = await staged_pin(h, repo, 80)
    for app_run, new in ((5002, 20), (5001, 10)):  # the rerun's report arrives first
        counts = {**COUNTS, "benchmark": {**COUNTS["benchmark"], "new": new, "failed": 1}}
        await h.deliver(
            "repository_dispatch", dispatch(repo, "ingest-completed", old_ingest(80, run["id"], app_run, counts=counts))
        )
    (report,) = ingest_reports(repo, 80, run["id"])
    assert "| `benchmark` | 20 | 0 | 0 | 0 | 1 |" in report["body"] and "actions/runs/5002" in report["body"]


# -- only forward ----------------------------------------------------------------------------------


async def test_a_started_after_completed_keeps_the_reply_staged(repo, make_harness):
    """Regression: a late `stage-results-started` after `stage-results-completed` turned the reply
    back to "started"."""
    h = await make_harness()
    run, c, request = await staged_pin(h, repo, 83)
    await h.deliver(
        "repository_dispatch",
        dispatch(repo, "stage-results-completed", old_shape(request, "stage-results-completed", 600)),
    )
    staged = reply_comment_of(repo, 83, c)["body"]
    assert "staged this run" in staging_text(repo, 83, c)
    await h.deliver(
        "repository_dispatch", dispatch(repo, "stage-results-started", old_shape(request, "stage-results-started", 600))
    )
    assert reply_comment_of(repo, 83, c)["body"] == staged
    await h.deliver(
        "repository_dispatch",
        dispatch(
            repo,
            "stage-results-completed",
            old_shape(request, "stage-results-completed", 599, **{"stage-succeeded": "false"}),
        ),
    )  # an older app run
    assert reply_comment_of(repo, 83, c)["body"] == staged


async def test_a_rerun_of_the_staging_workflow_moves_the_reply_on(repo, make_harness):
    h = await make_harness()
    run, c, request = await staged_pin(h, repo, 84)
    await h.deliver(
        "repository_dispatch",
        dispatch(
            repo,
            "stage-results-completed",
            echoed(request, "stage-results-completed", 600, **{"stage-succeeded": "false"}),
        ),
    )
    assert "failed in the results service" in staging_text(repo, 84, c)
    await h.deliver(
        "repository_dispatch", dispatch(repo, "stage-results-started", echoed(request, "stage-results-started", 601))
    )
    assert " started" in staging_text(repo, 84, c) and "runs/601" in staging_text(repo, 84, c)
    await h.deliver(
        "repository_dispatch",
        dispatch(repo, "stage-results-completed", echoed(request, "stage-results-completed", 601)),
    )
    assert "staged this run" in staging_text(repo, 84, c)


# -- property: no callback field reaches a comment as written --------------------------------------

MARKUP = (
    "](https://evil.example/x)",
    "<img src=https://evil.example/i.png>",
    "**[Sign in](https://evil.example)**",
    "<a href='https://evil.example'>",
    "\n/use 1 evil.example\n",
    "`evil.example`",
    "| evil.example |",
    "<!-- evil.example -->",
    "[x](javascript:alert('evil.example'))",
)
HOSTILE = st.tuples(st.text(max_size=12), st.sampled_from(MARKUP), st.text(max_size=12)).map("".join)
CELLS = [f"counts.{row}.{col}" for row in COUNTS for col in COUNTS[row]]
KEYS = {
    "stage-results-started": [
        "source-repository",
        "pr-number",
        "run-id",
        "run-attempt",
        "run-date",
        "requested-by",
        "comment-id",
        "app-run-id",
        "<extra key>",
        "<extra value>",
    ]
}
KEYS["stage-results-completed"] = KEYS["stage-results-started"] + [
    "stage-succeeded",
    "results-url",
    "results-url on the viewer",
]
KEYS["ingest-completed"] = KEYS["stage-results-started"] + [
    "counts",
    *CELLS,
    "ingest-run-url",
    "ingest-run-url on GitHub",
    "extra-counts.benchmarkFiles",
    "<extra counter>",
]
_setup: dict[int, dict] = {}


def with_hostile(payload: dict, key: str, value: str) -> dict:
    payload = copy.deepcopy(payload)
    if key == "<extra key>":
        payload[value] = "1"
    elif key == "<extra value>":
        payload["summary"] = value
    elif key == "results-url on the viewer":
        payload["results-url"] = f"{VIEWER}/{value}"
    elif key == "ingest-run-url on GitHub":
        payload["ingest-run-url"] = f"https://github.com/{RESULTS}/actions/runs/1/{value}"
    elif key == "<extra counter>":
        payload["extra-counts"] = {"benchmarkFiles": 1, value: value}
    elif key.startswith("extra-counts."):
        payload["extra-counts"] = {key.split(".", 1)[1]: value}
    elif key.startswith("counts."):
        _, row, col = key.split(".")
        payload["counts"][row][col] = value
    else:
        payload[key] = value
    return payload


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
async def test_no_callback_field_reaches_a_comment_unescaped(repo, make_harness, data):
    """Property: random text around Markdown and HTML, put into each field of an otherwise valid callback of
    each kind (real-shaped), never shows up in a comment the bot writes, and every link in every comment is on
    an allowed host (GitHub, the results viewer)."""
    state = _setup.get(id(repo))
    if state is None:
        h = await make_harness()
        run, c, request = await staged_pin(h, repo, 90)
        state = _setup[id(repo)] = {"h": h, "run": run, "request": request, "app_run": 1000}
    state["app_run"] += 1  # every valid callback is newer than the last: each one is rendered
    event_type = data.draw(st.sampled_from(sorted(KEYS)))
    key, value = data.draw(st.sampled_from(KEYS[event_type])), data.draw(HOSTILE)
    if event_type == "ingest-completed":
        base = {
            "source-repository": RESULTS,
            "pr-number": "90",
            "run-id": str(state["run"]["id"]),
            "app-run-id": str(state["app_run"]),
            "counts": copy.deepcopy(COUNTS),
        }
    else:
        base = echoed(state["request"], event_type, state["app_run"])
    await state["h"].deliver("repository_dispatch", dispatch(repo, event_type, with_hostile(base, key, value)))
    if key in (
        "<extra key>",
        "<extra value>",
        "results-url",
        "results-url on the viewer",
        "ingest-run-url",
        "ingest-run-url on GitHub",
        "<extra counter>",
    ):  # ignored, dropped
        shown = [
            body
            for body in every_body(repo)
            if f"runs/{state['app_run']})" in body or f'"app_run_id":{state["app_run"]}' in body
        ]
        assert shown, "a callback valid but for the fields the bot ignores or drops is rendered"
    for body in every_body(repo):
        assert value not in body and "evil.example" not in body, (key, value)
        for link in LINK.findall(body):
            assert urlsplit(link).hostname in ALLOWED_HOSTS, link


async def test_staged_without_a_results_link_links_the_results_viewers_page_of_the_run(repo, make_harness):
    """A `stage-results-completed` with no `results-url` still reads "staged", with the results
    viewer's page of the run (as the status comment links it) and the service's run."""
    h = await make_harness()
    run, c, request = await staged_pin(h, repo, 90)
    await h.deliver(
        "repository_dispatch", dispatch(repo, "stage-results-completed", echoed(request, "stage-results-completed"))
    )
    text = staging_text(repo, 90, c)
    assert "staged this run" in text
    assert f"({VIEWER}/inference?unofficialRun={run['id']})" in text
    assert f"https://github.com/{RESULTS}/actions/runs/777" in text


async def test_the_ingest_report_has_the_headline_the_ingest_runs_link_the_extra_counters_and_the_rerun_note(
    repo, make_harness
):
    """The report says the results went into the production database, links the ingest run
    (the `ingest-run-url` sent, rebuilt) and the sweep run, shows the documented counters beyond the table in
    their order and no unknown one, and says that a rerun updates it; in both languages."""
    h = await make_harness()
    run, _, _ = await staged_pin(h, repo, 91)
    ingest_run = f"https://github.com/{RESULTS}/actions/runs/4242/attempts/2"
    await h.deliver(
        "repository_dispatch",
        callback_payload(
            repo,
            91,
            run["id"],
            "ingest-completed",
            None,
            counts=COUNTS,
            **{"ingest-run-url": ingest_run},
            **{"extra-counts": {"gpuMetricSamplesNew": 386092, "secretCounter": 5, "benchmarkFiles": 11}},
        ),
    )
    (report,) = ingest_reports(repo, 91, run["id"])
    english_half, chinese_half = report["body"].split("\n## 中文\n")
    assert "ingested into the production database" in english_half and "已导入 production 数据库" in chinese_half
    for half in (english_half, chinese_half):
        assert f"]({ingest_run})" in half and f"](https://github.com/{REPO}/actions/runs/{run['id']})" in half
        assert "`benchmarkFiles` 11" in half and "`gpuMetricSamplesNew` 386092" in half
        assert half.index("benchmarkFiles") < half.index("gpuMetricSamplesNew")
        assert "secretCounter" not in half
    assert "this comment is updated in place" in english_half and "这条评论会原地更新" in chinese_half


async def test_an_ingest_run_link_outside_the_results_repository_is_not_shown(repo, make_harness):
    """An `ingest-run-url` that is not a run page of the results repository on GitHub is
    dropped; the report links the run that sent the callback instead."""
    h = await make_harness()
    run, _, _ = await staged_pin(h, repo, 92)
    await h.deliver(
        "repository_dispatch",
        callback_payload(
            repo,
            92,
            run["id"],
            "ingest-completed",
            None,
            counts=COUNTS,
            **{"ingest-run-url": "https://github.com/evil/phish/actions/runs/1"},
        ),
    )
    (report,) = ingest_reports(repo, 92, run["id"])
    assert "evil" not in report["body"]
    assert f"[The ingest run](https://github.com/{RESULTS}/actions/runs/777)" in english(report["body"])


async def test_merge_then_ingest_completed_writes_the_report_on_the_merged_pr(repo, make_harness):
    """The lifecycle's end: merge sends `ingest-results`, and the service's `ingest-completed`,
    echoing the request's fields (the merge notice's id as comment-id), adds the counts to the merge notice (one
    comment, one notification, for the merge and its ingest)."""
    from test_reuse_command import ingest_requests, merge

    h = await make_harness()
    run, _, _ = await staged_pin(h, repo, 93)
    await merge(h, 93)
    (sent,) = ingest_requests(repo)
    echoed_back = {
        k: v
        for k, v in sent["client_payload"].items()
        if k in ("pr-number", "run-id", "run-attempt", "run-date", "comment-id")
    }
    await h.deliver(
        "repository_dispatch",
        dispatch(
            repo,
            "ingest-completed",
            {**echoed_back, "source-repository": RESULTS, "app-run-id": "888", "counts": COUNTS},
        ),
    )
    assert ingest_reports(repo, 93, run["id"]) == [], "the counts join the merge notice: no comment of their own"
    from test_reuse_command import merge_comment

    text = merge_comment(repo, 93)
    assert text.startswith("### ✅ Merged: [run") and "✅ **Ingested" in text
    assert "| `benchmark` |" in text, "the counts by row, in the notice's collapsed section"
