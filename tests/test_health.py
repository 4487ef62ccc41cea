"""/livez, /readyz and /healthz: what an orchestrator, a load balancer and an operator each read.

Regression: /healthz answered 503 for the whole process, until a restart, when one installation's
token fetch failed or one effect could not be reconciled, so an App uninstalled from one organisation took a
bot that served every other one out of rotation.
"""

from __future__ import annotations

import json
import threading

import pytest
from harness import HEALTH_TOKEN, REPO, wait_until
from postgres import postgres_db, postgres_url  # noqa: F401

from bot.app import runtime

OTHER_REPO = "other-org/benchmarks"  # installed through a second installation, 2
TOKEN_2 = r"/app/installations/2/access_tokens$"


async def _get(h, path: str) -> tuple[int, dict]:
    resp = await h.client.get(path)
    return resp.status, await resp.json()


def _with_second_installation(github) -> None:
    github.add_repo(OTHER_REPO, installation_id=2)
    github.add_pull(OTHER_REPO, number=1, user="partner")


async def _authentication_problem(h) -> dict | None:
    health = (await _get(h, "/healthz"))[1]
    return health if health["authentication"] != "ok" else None


async def test_one_installation_failing_to_authenticate_leaves_the_bot_ready_and_is_named(make_harness):
    """Regression: one installation's refused token fetch made /healthz 503 for every installation."""
    h = await make_harness()
    _with_second_installation(h.github)
    await h.deliver("pull_request", h.github.pull_request_payload(REPO, 1, "opened"), delivery="one-1")
    h.github.fail_next("POST", TOKEN_2, 401, times=1000)  # as when the App is uninstalled from that organisation
    await h.post("pull_request", h.github.pull_request_payload(OTHER_REPO, 1, "opened"), delivery="two-1")
    await wait_until(lambda: _authentication_problem(h), "/healthz names the refused installation")

    assert (await _get(h, "/readyz"))[0] == 200
    assert (await _get(h, "/livez"))[0] == 200
    status, health = await _get(h, "/healthz")
    assert status == 200 and health["ok"] is True
    assert list(health["authentication"]) == ["2"] and "installation token for 2" in health["authentication"]["2"]
    one, two = health["installations"]["1"], health["installations"]["2"]
    assert one["authenticated"] is True and one["last_failure"] is None and one["last_success"] is not None
    assert two["authenticated"] is False and "401" in two["last_failure_reason"]
    (warning,) = health["warnings"]
    assert warning["name"] == "installation_cannot_authenticate" and warning["installation"] == 2


async def test_an_installation_whose_token_failed_recovers_on_the_next_fetch_that_works(make_harness):
    """Regression: an installation whose token fetch had failed stayed failing in /healthz until a restart."""
    h = await make_harness()
    _with_second_installation(h.github)
    h.github.set_down(True)  # every token fetch answered 503 until GitHub is back
    await h.post("pull_request", h.github.pull_request_payload(OTHER_REPO, 1, "opened"), delivery="two-1")
    health = await wait_until(lambda: _authentication_problem(h), "/healthz names the installation")
    assert "installation token for 2" in health["authentication"]["2"]

    h.github.set_down(False)  # the delivery's next try fetches a token that works
    await h.idle()
    assert (await h.journal_row("two-1")).status == "done"
    status, health = await _get(h, "/healthz")
    assert status == 200 and health["authentication"] == "ok" and health["warnings"] == []
    two = health["installations"]["2"]
    assert two["authenticated"] is True and two["last_success"] >= two["last_failure"]
    assert "503" in two["last_failure_reason"]  # the last failure stays on record, no longer as a problem


async def test_the_journal_unreachable_makes_the_bot_not_ready_but_still_live(harness):
    assert (await _get(harness, "/readyz"))[0] == 200
    harness.bot.journal.close()
    status, ready = await _get(harness, "/readyz")
    assert status == 503 and ready == {"ok": False}
    assert (await _get(harness, "/livez"))[0] == 200  # a restart would not bring the journal back
    status, health = await _get(harness, "/healthz")
    assert status == 503 and "not writable" in health["journal"]


async def test_the_database_unreachable_makes_a_replica_not_ready_but_still_live(
    postgres_db,  # noqa: F811
    make_harness,
):
    h = await make_harness(db_path=postgres_db)
    assert (await _get(h, "/readyz"))[0] == 200
    h.bot.journal.close()
    status, ready = await _get(h, "/readyz")
    assert status == 503 and ready == {"ok": False}
    assert (await _get(h, "/livez"))[0] == 200
    status, health = await _get(h, "/healthz")
    assert status == 503 and health["database"]["reachable"] is False and "not writable" in health["journal"]


async def test_workers_that_have_all_ended_make_the_bot_not_ready(harness):
    assert (await _get(harness, "/healthz"))[1]["workers_state"] == "running"
    for task in harness.bot.workers._tasks:
        task.cancel()

    async def not_ready() -> bool:
        return (await _get(harness, "/readyz"))[0] == 503

    await wait_until(not_ready, "/readyz says the workers have ended")
    health = (await _get(harness, "/healthz"))[1]
    assert health["workers_state"] == "stopped: every worker task has ended" and health["journal"] == "writable"


async def test_intake_only_is_ready_without_workers(make_harness):
    h = await make_harness(workers=0)
    assert (await _get(h, "/readyz"))[0] == 200
    assert (await _get(h, "/healthz"))[1]["workers_state"] == "none configured"


async def test_a_stuck_workers_loop_makes_the_bot_not_live(make_harness, monkeypatch):
    monkeypatch.setattr(runtime, "LOOP_ANSWER_TIMEOUT", 0.05)
    h = await make_harness(worker_thread=True)
    assert (await _get(h, "/livez"))[1] == {"ok": True}
    assert (await _get(h, "/healthz"))[1]["live"] == {
        "ok": True,
        "server_loop": "answering",
        "workers_loop": "answering",
    }
    release = threading.Event()
    h.bot._loop.call(release.wait)  # a handler that blocks its loop and never yields
    try:
        assert await _get(h, "/livez") == (503, {"ok": False})
        status, health = await _get(h, "/healthz")
        assert status == 503 and health["live"]["ok"] is False
        assert health["live"]["workers_loop"] == "not answering within 0.05 s"
    finally:
        release.set()
    await wait_until(lambda: _livez_ok(h), "the workers' loop answers again")


async def _livez_ok(h) -> bool:
    return (await _get(h, "/livez"))[0] == 200


# -- what anyone who reaches the port may read ---------------------------------------------------------------


async def _get_as(h, path: str, headers: dict[str, str]) -> tuple[int, dict]:
    resp = await h.client.get(path, headers=headers)
    return resp.status, await resp.json()


@pytest.mark.parametrize(
    "headers",
    [
        {"Authorization": ""},
        {"Authorization": "Bearer guess-the-token-000"},
        {"Authorization": f"Bearer {HEALTH_TOKEN[:-1]}"},
    ],
    ids=["none", "wrong", "a prefix"],
)
async def test_healthz_tells_a_stranger_only_whether_the_bot_is_healthy(make_harness, headers):
    """Regression: /healthz on the webhook's port told anyone the repository names, config errors, installation
    ids and the workers' pid; /livez and /readyz their loops' and journal's states."""
    h = await make_harness()
    await h.deliver("pull_request", h.github.pull_request_payload(REPO, 1, "opened"), delivery="seen-1")
    assert "installations" in (await _get(h, "/healthz"))[1], "the token reads the details"
    status, shown = await _get_as(h, "/healthz", headers)
    assert status == 200 and set(shown) == {"ok", "details"} and shown["ok"] is True
    assert REPO not in json.dumps(shown) and "SWEEPBOT_HEALTH_TOKEN" in shown["details"]
    assert await _get_as(h, "/livez", headers) == (200, {"ok": True})
    assert await _get_as(h, "/readyz", headers) == (200, {"ok": True})


async def test_without_a_health_token_set_nobody_reads_the_details(make_harness):
    h = await make_harness(health_token=None)
    status, shown = await _get(h, "/healthz")  # the harness's client sends a token the bot does not know
    assert status == 200 and set(shown) == {"ok", "details"}
