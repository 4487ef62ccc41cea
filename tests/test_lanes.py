"""Every event resolves to its PR's lane, so one PR's writes never run two at a time."""

from __future__ import annotations

import pytest
from gidgethub import routing

from bot.lanes import head_sha, lane, pr_number, unresolved_sha
from harness import REPO

SHA = "a" * 40

CASES = [
    # (event, payload, expected PR number)
    ("pull_request", {"pull_request": {"number": 7}}, 7),
    ("issue_comment", {"issue": {"number": 8}}, 8),
    ("pull_request_review", {"pull_request": {"number": 9}, "review": {"id": 1}}, 9),
    ("pull_request_review_comment", {"pull_request": {"number": 10}}, 10),
    ("workflow_run", {"workflow_run": {"head_sha": SHA, "pull_requests": [{"number": 11}]}}, 11),
    ("workflow_run", {"workflow_run": {"head_sha": SHA, "pull_requests": []}}, None),  # a fork's run
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
    assert head_sha("workflow_run", {"workflow_run": {"head_sha": SHA}}) == SHA
    assert head_sha("workflow_run", {"workflow_run": {"head_sha": "not-a-sha"}}) is None


async def test_a_fork_run_naming_no_pr_is_moved_into_its_pr_lane(make_harness):
    """A fork PR's workflow_run has an empty pull_requests list; the worker finds the PR by head SHA."""
    router = routing.Router()
    seen = []

    @router.register("workflow_run", action="completed")
    async def note(event, ctx):
        seen.append(event.data["workflow_run"]["id"])
        return []

    h = await make_harness(router=router)
    h.github.add_workflow(REPO, "e2e-tests.yml")
    pr = h.github.pull(REPO, 1)
    run = h.github.add_run(REPO, "e2e-tests.yml", head_sha=pr["head"]["sha"], event="workflow_dispatch")
    payload = h.github.workflow_run_payload(REPO, run["id"])
    payload["workflow_run"]["pull_requests"] = []  # as GitHub sends it for a fork
    await h.deliver("workflow_run", payload, delivery="run-1")
    row = await h.journal_row("run-1")
    assert (row.status, row.number, row.lane) == ("done", 1, f"{REPO}#1")
    assert seen == [run["id"]]
