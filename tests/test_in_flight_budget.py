"""GitHub's limit of 100 requests under way at once: the App's in-flight budget, the setting that sizes
it, and a replica's share of it."""

from __future__ import annotations

import asyncio

import respx
from harness import REPO

from bot.core.config import Settings
from bot.github.client import IN_FLIGHT, GitHubApp, InFlightBudget, RetryPolicy, WritePacer
from bot.telemetry.metrics import Metrics
from bot.testing import InMemoryGitHub
from bot.testing.round_trips import LateGitHub

ISSUE = f"/repos/{REPO}/issues/1/comments"


async def hold(budget: InFlightBudget, seconds: float, log: list[str], name: str) -> None:
    async with budget:
        log.append(name)
        await asyncio.sleep(seconds)


async def test_no_more_than_the_limit_under_way_and_the_first_to_wait_goes_first():
    budget, log = InFlightBudget(3), []
    await asyncio.gather(*(hold(budget, 0.01, log, f"r{i}") for i in range(10)))
    assert budget.most == 3
    assert budget.in_flight == 0 and budget.waited == 7
    assert log == [f"r{i}" for i in range(10)]


async def test_a_waiter_cancelled_before_its_turn_or_at_it_leaves_no_place_taken():
    budget = InFlightBudget(1)
    await budget.__aenter__()  # the one place, held here
    waiting = asyncio.create_task(hold(budget, 0, [], "late"))
    handed = asyncio.create_task(hold(budget, 0, [], "handed"))
    await asyncio.sleep(0)
    waiting.cancel()  # cancelled while it waits
    await asyncio.sleep(0)
    await budget.__aexit__(None, None, None)  # the place goes to `handed`, which has not run yet...
    handed.cancel()  # ...and is cancelled before it does
    await asyncio.gather(waiting, handed, return_exceptions=True)
    assert handed.cancelled() and waiting.cancelled()
    assert budget.in_flight == 0
    log: list[str] = []
    await asyncio.wait_for(hold(budget, 0, log, "after"), 1)
    assert log == ["after"]


async def test_a_larger_share_lets_the_waiting_requests_go_at_once():
    budget, release = InFlightBudget(1), asyncio.Event()

    async def held() -> None:
        async with budget:
            await release.wait()

    tasks = [asyncio.create_task(held()) for _ in range(4)]
    await asyncio.sleep(0.01)
    assert budget.in_flight == 1
    budget.share(3)
    await asyncio.sleep(0)
    assert budget.in_flight == 3
    release.set()
    await asyncio.gather(*tasks)
    assert budget.in_flight == 0 and budget.most == 3


def app(key: str, in_flight: int, sleep=asyncio.sleep) -> GitHubApp:
    return GitHubApp(
        app_id="1",
        private_key=key,
        api_url="https://api.github.com",
        metrics=Metrics(),
        retry=RetryPolicy(sleep=sleep),
        pacer_factory=lambda: WritePacer(limit=0),
        in_flight=in_flight,
    )


def most_at_once(late: LateGitHub) -> int:
    trips = [t for ts in late.trips.values() for t in ts]
    return max(sum(1 for o in trips if o.sent <= t.sent < o.answered) for t in trips)


async def test_the_apps_requests_keep_within_the_budget_as_github_sees_them(app_key):
    github = InMemoryGitHub()  # its own respx router: every request of this test answered 50 ms late
    github.add_repo(REPO, installation_id=1)
    github.add_pull(REPO, number=1, files=["README.md"])
    late = LateGitHub(github.handle, 0.05)
    with respx.mock(assert_all_called=False) as mock:
        mock.route(host="api.github.com").mock(side_effect=late)
        bot = app(app_key, 4)
        gh = await bot.client(1)
        await asyncio.gather(*(gh.getitem(f"{ISSUE}?page={i}") for i in range(20)))
    assert bot.budget.most == 4
    assert most_at_once(late) == 4  # as the fake GitHub saw them: never a fifth
    assert bot.metrics.github_in_flight._value.get() == 0


async def test_a_request_waiting_to_retry_gives_its_place_to_others(github, app_key):
    """A 502's backoff is a sleep, not a request: with a budget of one, another request goes while it sleeps."""
    github.add_repo(REPO, installation_id=1)
    github.add_pull(REPO, number=1, files=["README.md"])
    backoff, other_done = asyncio.Event(), asyncio.Event()

    async def sleep(seconds: float) -> None:
        backoff.set()
        await other_done.wait()

    bot = app(app_key, 1, sleep)
    gh = await bot.client(1)
    github.fail_next("GET", ISSUE, 502)
    retried = asyncio.create_task(gh.getitem(ISSUE))
    await asyncio.wait_for(backoff.wait(), 5)
    assert await asyncio.wait_for(gh.getitem(f"/repos/{REPO}/pulls/1"), 5)  # not held up by the sleeping retry
    other_done.set()
    assert await retried == []
    assert bot.budget.in_flight == 0


def test_the_in_flight_setting_sizes_the_live_apps_budget():
    from bot.app.runtime import live_github

    settings = Settings.from_env({"SWEEPBOT_GITHUB_IN_FLIGHT": "30"}, dotenv=False)
    assert live_github(settings, Metrics()).budget.limit == 30
    assert Settings().github_in_flight == IN_FLIGHT


async def test_a_delivery_past_its_dispatch_waits_behind_a_younger_one_that_is_not(github, app_key):
    """The oldest delivery's requests go first, until it has done what a person waits for (`waited_for`): then a
    younger delivery's requests, still before their dispatch, go ahead of its status comment."""
    github.add_repo(REPO, installation_id=1)
    bot = app(app_key, 1)
    older = await bot.client(1)
    younger = await bot.client(1)
    assert older._priority < younger._priority
    order: list[str] = []

    async def request(client, name: str) -> None:
        await bot.budget.acquire(tuple(client._priority))
        order.append(name)
        bot.budget.release()

    await bot.budget.acquire()  # the one place, held
    tasks = [asyncio.create_task(request(younger, "younger")), asyncio.create_task(request(older, "older"))]
    await asyncio.sleep(0)
    bot.budget.release()
    await asyncio.gather(*tasks)
    assert order == ["older", "younger"]
    older.announcing_writes(lambda: None).waited_for()  # a view of the client: the same standing
    order.clear()
    await bot.budget.acquire()
    tasks = [asyncio.create_task(request(older, "older")), asyncio.create_task(request(younger, "younger"))]
    await asyncio.sleep(0)
    bot.budget.release()
    await asyncio.gather(*tasks)
    assert order == ["younger", "older"]
