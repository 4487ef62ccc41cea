"""The GitHub client: retries with backoff, rate limits, token renewal, ETag cache per installation, paced writes."""

from __future__ import annotations

import asyncio
import time

import gidgethub
import httpx
import pytest
from harness import REPO, Sleeps, github_app

from bot.github.client import RetryPolicy, WritePacer, retry_delay

ISSUE = f"/repos/{REPO}/issues/1/comments"


@pytest.fixture
def repo(github):
    github.add_repo(REPO, installation_id=1)
    github.add_repo("other/repo", installation_id=2)
    github.add_pull(REPO, number=1, files=["README.md"])
    return github


async def test_retries_a_502_then_succeeds(repo, app_key):
    sleeps = Sleeps()
    gh = await github_app(app_key, sleeps).client(1)
    repo.fail_next("GET", ISSUE, 502, times=2)
    comments = await gh.getitem(ISSUE)
    assert comments == []
    assert repo.count("GET", ISSUE) == 3
    assert len(sleeps.calls) == 2 and all(0 <= s <= 30 for s in sleeps.calls)


async def test_gives_up_after_the_retry_budget_and_records_the_error(repo, app_key):
    app = github_app(app_key, attempts=3)
    gh = await app.client(1)
    repo.fail_next("GET", ISSUE, 503, times=10)
    with pytest.raises(gidgethub.GitHubBroken):
        await gh.getitem(ISSUE)
    assert repo.count("GET", ISSUE) == 3
    assert app.metrics.last_github_error["path"] == ISSUE
    assert "503" in app.metrics.last_github_error["error"]


async def test_secondary_rate_limit_403_waits_retry_after(repo, app_key):
    sleeps = Sleeps()
    gh = await github_app(app_key, sleeps).client(1)
    repo.fail_next(
        "POST", ISSUE, 403, headers={"retry-after": "7"}, json={"message": "You have exceeded a secondary rate limit."}
    )
    created = await gh.post(ISSUE, data={"body": "hi"})
    assert created["body"] == "hi"
    assert sleeps.calls == [7.0]
    assert len(repo.comments(REPO, 1)) == 1


async def test_secondary_rate_limit_without_headers_waits_a_minute(repo, app_key):
    sleeps = Sleeps()
    gh = await github_app(app_key, sleeps).client(1)
    repo.fail_next("GET", ISSUE, 403, json={"message": "You have exceeded a secondary rate limit"})
    await gh.getitem(ISSUE)
    assert sleeps.calls == [60.0]


async def test_429_with_reset_waits_until_the_reset(repo, app_key):
    sleeps = Sleeps()
    gh = await github_app(app_key, sleeps).client(1)
    reset = int(time.time()) + 30
    repo.fail_next(
        "GET",
        ISSUE,
        429,
        headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset), "x-ratelimit-limit": "5000"},
        json={"message": "rate limited"},
    )
    await gh.getitem(ISSUE)
    assert len(sleeps.calls) == 1 and 25 <= sleeps.calls[0] <= 32


async def test_exhausted_primary_limit_waits_for_reset_before_the_next_request(repo, app_key):
    class UntilReset(Sleeps):
        async def __call__(self, seconds):
            await super().__call__(seconds)
            repo.rate_remaining = 5000  # the wait is over: GitHub has reset the limit

    sleeps = UntilReset()
    gh = await github_app(app_key, sleeps).client(1)
    repo.rate_remaining = 1
    repo.rate_reset = int(time.time()) + 300
    await gh.getitem(ISSUE)  # the answer says 0 left
    assert repo.requests[-1].status == 200
    await gh.getitem(f"/repos/{REPO}")
    assert len(sleeps.calls) == 1 and 295 <= sleeps.calls[0] <= 305
    assert repo.requests[-1].status == 200  # waited, instead of spending a request on a certain 403


async def test_a_reset_beyond_max_wait_fails_fast_instead_of_hanging(repo, app_key):
    sleeps = Sleeps()
    gh = await github_app(app_key, sleeps, max_wait=60).client(1)
    repo.rate_remaining = 1
    repo.rate_reset = int(time.time()) + 3600
    await gh.getitem(ISSUE)
    with pytest.raises(gidgethub.RateLimitExceeded):
        await gh.getitem(ISSUE)
    assert sleeps.calls == []


async def test_a_404_is_not_retried(repo, app_key):
    sleeps = Sleeps()
    gh = await github_app(app_key, sleeps).client(1)
    with pytest.raises(gidgethub.BadRequest):
        await gh.getitem(f"/repos/{REPO}/issues/99/comments/nope")
    assert sleeps.calls == []


async def test_transport_errors_are_retried(repo, app_key):
    sleeps = Sleeps()
    gh = await github_app(app_key, sleeps).client(1)
    repo.raise_next("GET", ISSUE, httpx.ConnectTimeout("slow"), times=2)
    assert await gh.getitem(ISSUE) == []
    assert len(sleeps.calls) == 2


@pytest.mark.parametrize(
    "status, headers, message, expected",
    [
        (502, {}, "", "backoff"),
        (500, {}, "", "backoff"),
        (429, {"retry-after": "3"}, "", 3.0),
        (403, {"retry-after": "2"}, "", 2.0),
        (403, {}, "secondary rate limit", 60.0),
        (403, {}, "Resource not accessible by integration", None),
        (404, {}, "Not Found", None),
        (422, {}, "Validation Failed", None),
    ],
    ids=["502", "500", "429-retry-after", "403-retry-after", "403-secondary", "403-permission", "404", "422"],
)
def test_retry_decision_table(status, headers, message, expected):
    exc = (
        gidgethub.BadRequest(__import__("http").HTTPStatus(status), message, headers=headers)
        if status < 500
        else gidgethub.GitHubBroken(__import__("http").HTTPStatus(status), headers=headers)
    )
    policy = RetryPolicy(base_delay=1.0, max_delay=4.0)
    delay = retry_delay(exc, 1, policy)
    if expected == "backoff":
        assert delay is not None and 0 <= delay <= 1.0
    else:
        assert delay == expected


async def test_concurrent_callers_share_one_token_renewal(repo, app_key):
    app = github_app(app_key)
    tokens = await asyncio.gather(*(app.token(1) for _ in range(25)))
    assert len(set(tokens)) == 1
    assert repo.tokens_issued == 1


async def test_token_is_renewed_before_it_expires(repo, app_key):
    """A token with less than 60 s left is not used: the next caller gets a fresh one."""
    repo.token_ttl = 50
    app = github_app(app_key)
    first = await app.token(1)
    second = await app.token(1)
    assert first != second
    assert repo.tokens_issued == 2
    repo.token_ttl = 3600
    third = await app.token(1)
    assert await app.token(1) == third
    assert repo.tokens_issued == 3


async def test_tokens_are_per_installation(repo, app_key):
    app = github_app(app_key)
    assert await app.token(1) != await app.token(2)
    assert repo.tokens_issued == 2


async def test_etag_cache_answers_304_and_is_kept_apart_per_installation(repo, app_key):
    app = github_app(app_key)
    one = await app.client(1)
    url = f"/repos/{REPO}/pulls/1"
    await one.getitem(url)
    again = await (await app.client(1)).getitem(url)
    assert again["number"] == 1
    statuses = [r.status for r in repo.requests if r.path == url]
    assert statuses == [200, 304]
    # installation 2 has its own cache: it sends no If-None-Match from installation 1's entry, so gets a 200
    await (await app.client(2)).getitem(url)
    assert [r.status for r in repo.requests if r.path == url] == [200, 304, 200]


async def test_a_full_last_page_cached_with_its_etag_does_not_hide_the_page_added_after_it(repo, app_key):
    """Regression (found by the sandbox): a PR with exactly 100 comments was listed in one full page
    with no next link; after the 101st, the page still answered 304 (its items had not changed) and gidgethub
    took its cached, next-less Link, so the bot never saw the new comment (there: its own status comment)."""
    for i in range(100):
        repo.add_comment(REPO, 1, f"comment {i}", user="someone")
    app = github_app(app_key)
    url = f"/repos/{REPO}/issues/1/comments?per_page=100"
    assert len([c async for c in (await app.client(1)).getiter(url)]) == 100
    repo.add_comment(REPO, 1, "comment 100", user="someone")
    bodies = [c["body"] async for c in (await app.client(1)).getiter(url)]
    assert len(bodies) == 101 and bodies[-1] == "comment 100"


async def test_a_page_with_room_left_is_still_answered_from_the_etag_cache(repo, app_key):
    """The full-page rule costs nothing elsewhere: a list page that is not full is asked with its ETag (304)."""
    repo.add_comment(REPO, 1, "one", user="someone")
    app = github_app(app_key)
    url = f"/repos/{REPO}/issues/1/comments?per_page=100"
    for _ in range(2):
        assert len([c async for c in (await app.client(1)).getiter(url)]) == 1
    assert [r.status for r in repo.requests if r.path == f"/repos/{REPO}/issues/1/comments"] == [200, 304]


async def test_writes_are_paced_per_installation():
    sleeps = Sleeps()
    pacer = WritePacer(limit=3, window=60.0, sleep=sleeps)
    for _ in range(3):
        await pacer.acquire()
    assert sleeps.calls == []
    await pacer.acquire()
    assert len(sleeps.calls) == 1 and 59 <= sleeps.calls[0] <= 60


async def test_github_api_url_is_honoured(github, app_key):
    """GitHub Enterprise: every request goes to GITHUB_API_URL, none to api.github.com."""
    from bot.github.client import GitHubApp
    from bot.telemetry.metrics import Metrics
    from bot.testing import InMemoryGitHub

    ghe = InMemoryGitHub(base_url="https://ghe.example/api/v3")
    ghe.add_repo("corp/bench", installation_id=5)
    http = httpx.AsyncClient(transport=httpx.MockTransport(ghe.handle))
    app = GitHubApp(app_id="1", private_key=app_key, api_url="https://ghe.example/api/v3", metrics=Metrics(), http=http)
    data = await (await app.client(5)).getitem("/repos/corp/bench")
    assert data["full_name"] == "corp/bench"
    assert ghe.tokens_issued == 1 and github.requests == []
