"""Every event resolves to its PR's lane, so one PR's writes never run two at a time."""

from __future__ import annotations

import pytest
from gidgethub import routing
from harness import REPO

from bot.delivery.lanes import head_sha, lane, pr_number, unresolved_sha

SHA = "a" * 40

CASES = [
    # (event, payload, expected PR number)
    ("pull_request", {"pull_request": {"number": 7}}, 7),
    ("issue_comment", {"issue": {"number": 8}}, 8),
    ("pull_request_review", {"pull_request": {"number": 9}, "review": {"id": 1}}, 9),
    ("pull_request_review_comment", {"pull_request": {"number": 10}}, 10),
    ("workflow_run", {"workflow_run": {"head_sha": SHA, "display_title": "Sweep sw-11-0123456789ab"}}, 11),
    ("workflow_run", {"workflow_run": {"head_sha": SHA, "name": "Sweep sw-11-0123456789ab"}}, 11),
    # a sweep run names its PR by its dispatch id only: `pull_requests` lists any open PR sharing its head
    # (a `main -> release` PR for a fork's sweep on main), and a run without an id is nobody's sweep
    ("workflow_run", {"workflow_run": {"head_sha": SHA, "pull_requests": [{"number": 11}]}}, None),
    ("workflow_run", {"workflow_run": {"head_sha": SHA, "pull_requests": []}}, None),
    ("check_suite", {"check_suite": {"head_sha": SHA, "pull_requests": [{"number": 12}]}}, 12),
    ("check_run", {"check_run": {"head_sha": SHA, "pull_requests": [{"number": 13}]}}, 13),
    ("repository_dispatch", {"client_payload": {"pr-number": 14}}, 14),
    ("repository_dispatch", {"client_payload": {"pr-number": "15"}}, 15),
    ("repository_dispatch", {"client_payload": {"pr-number": "15; rm"}}, None),
    ("repository_dispatch", {"client_payload": {"pr-number": -3}}, None),
    ("repository_dispatch", {"client_payload": {"pr-number": True}}, None),
    ("repository_dispatch", {"client_payload": {"pr-number": "9" * 12}}, None),
    ("pull_request", {"pull_request": {"number": "7"}}, 7),
    ("pull_request", {"pull_request": {"number": 2**40}}, None),
    ("push", {"ref": "refs/heads/main"}, None),
]


@pytest.mark.parametrize("event, payload, expected", CASES)
def test_pr_number(event, payload, expected):
    assert pr_number(event, payload) == expected


def test_lanes_and_sha_lanes():
    assert lane("o/r", 3, None, "d") == "o/r#3"
    assert lane("o/r", None, SHA, "d") == f"o/r@{SHA}"
    assert lane("o/r", None, None, "d") == "o/r"
    assert lane(None, None, None, "d") == "delivery:d"
    assert unresolved_sha(f"o/r@{SHA}") == ("o/r", SHA)
    assert unresolved_sha("o/r#3") is None and unresolved_sha("o/r@main") is None
    assert head_sha("check_suite", {"check_suite": {"head_sha": SHA}}) == SHA
    assert head_sha("check_suite", {"check_suite": {"head_sha": "not-a-sha"}}) is None
    assert head_sha("workflow_run", {"workflow_run": {"head_sha": SHA}}) is None, "no PR is looked up for it"


async def test_a_fork_check_suite_naming_no_pr_is_moved_into_its_pr_lane(make_harness):
    """A fork PR's check_suite has an empty pull_requests list; the worker finds the PR by head SHA."""
    router = routing.Router()
    seen = []

    @router.register("check_suite", action="completed")
    async def note(event, ctx):
        seen.append(event.data["check_suite"]["id"])
        return []

    h = await make_harness(router=router)
    pr = h.github.pull(REPO, 1)
    envelope = h.github.pull_request_payload(REPO, 1, "opened")
    payload = {
        "action": "completed",
        "check_suite": {"id": 5, "head_sha": pr["head"]["sha"], "pull_requests": []},
        "repository": envelope["repository"],
        "installation": envelope["installation"],
        "sender": envelope["sender"],
    }
    await h.deliver("check_suite", payload, delivery="suite-1")
    row = await h.journal_row("suite-1")
    assert (row.status, row.number, row.lane) == ("done", 1, f"{REPO}#1")
    assert seen == [5]


async def test_a_sweep_run_goes_to_the_lane_its_dispatch_id_names_not_to_a_pr_sharing_its_head(make_harness):
    """Regression: with a `main -> release` PR open, a fork's sweep run on main was put in that PR's lane (its
    `pull_requests`), and the fork PR never showed its result."""
    router = routing.Router()

    @router.register("workflow_run", action="completed")
    async def note(event, ctx):
        return []

    h = await make_harness(router=router)
    h.github.add_workflow(REPO, "e2e-tests.yml", inputs=["dispatch-id"])
    main = h.github.branch_sha(REPO, "main")
    release = h.github.add_pull(REPO, number=2, head_ref="main", head_sha=main, base_ref="release")
    run = h.github.add_run(
        REPO, "e2e-tests.yml", head_sha=main, event="workflow_dispatch", inputs={"dispatch-id": "sw-1-0123456789ab"}
    )
    payload = h.github.workflow_run_payload(REPO, run["id"])
    assert [p["number"] for p in payload["workflow_run"]["pull_requests"]] == [release["number"]]
    await h.deliver("workflow_run", payload, delivery="run-1")
    row = await h.journal_row("run-1")
    assert (row.status, row.number, row.lane) == ("done", 1, f"{REPO}#1")
