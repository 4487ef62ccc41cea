"""The in-memory GitHub behaves like GitHub where the bot depends on it, seen through gidgethub."""

import base64
import datetime as dt
import hashlib
import time

import gidgethub
import gidgethub.apps
import gidgethub.httpx
import httpx
import jwt
import pytest
import respx
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from bot.testing import InMemoryGitHub, RecordedRequest

REPO = "org/bench"


@pytest.fixture(scope="module")
def private_key() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    return pem.decode()


def api(token=None, **kwargs) -> gidgethub.httpx.GitHubAPI:
    return gidgethub.httpx.GitHubAPI(httpx.AsyncClient(), "test", oauth_token=token, **kwargs)


async def install_token(private_key: str, installation_id: int = 1) -> dict:
    return await gidgethub.apps.get_installation_access_token(
        api(), installation_id=installation_id, app_id="1", private_key=private_key
    )


@pytest.fixture
async def gh(github, private_key):
    """A repo with one PR, and a gidgethub client holding a real installation token."""
    github.add_repo(REPO)
    github.add_pull(REPO, title="Add recipe", files=["inferencex-e2e/perf-changelog.yaml"])
    token = (await install_token(private_key))["token"]
    github.reset_requests()
    return api(token)


# ---- auth ---------------------------------------------------------------------------------


async def test_installation_token_is_issued_and_accepted(github, private_key):
    github.add_repo(REPO)
    before = time.time()
    answer = await install_token(private_key)
    token = answer["token"]
    assert token.startswith("ghs_") and len(token) == 40
    expires = dt.datetime.strptime(answer["expires_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)
    assert before + 3600 - 2 <= expires.timestamp() <= time.time() + 3600
    assert github.tokens_issued == 1
    post = github.requests[-1]
    assert (post.method, post.path, post.status) == ("POST", "/app/installations/1/access_tokens", 201)
    assert jwt.decode(post.token, options={"verify_signature": False})["iss"] == "1"

    repo = await api(token).getitem(f"/repos/{REPO}")
    assert repo["full_name"] == REPO and repo["owner"] == {"login": "org", "id": repo["owner"]["id"],
                                                            "type": "Organization"}
    assert github.requests[-1].token == token


async def test_app_endpoint_needs_a_jwt_with_an_issuer(github, private_key):
    app_jwt = gidgethub.apps.get_jwt(app_id="1", private_key=private_key)
    assert await api().getitem("/app", jwt=app_jwt) == {"id": 1, "slug": "sweepbot", "name": "sweepbot"}

    no_iss = jwt.encode({"iat": int(time.time())}, "k" * 32, algorithm="HS256")
    for credentials in ({"jwt": no_iss}, {"jwt": "not-a-jwt"}, {"oauth_token": app_jwt}):
        with pytest.raises(gidgethub.BadRequest) as err:
            await api().getitem("/app", **credentials)
        assert err.value.status_code == 401
    assert github.bot_login == "sweepbot[bot]"


async def test_unknown_installation_is_404(github, private_key):
    github.add_repo(REPO, installation_id=7)
    assert (await install_token(private_key, 7))["token"]
    with pytest.raises(gidgethub.BadRequest) as err:
        await install_token(private_key, 8)
    assert err.value.status_code == 404
    assert github.tokens_issued == 1


async def test_missing_or_unknown_credentials_are_401(github):
    github.add_repo(REPO)
    with pytest.raises(gidgethub.BadRequest, match="Requires authentication") as err:
        await api().getitem(f"/repos/{REPO}")
    assert err.value.status_code == 401
    with pytest.raises(gidgethub.BadRequest, match="Bad credentials"):
        await api("ghs_made_up").getitem(f"/repos/{REPO}")
    assert [r.status for r in github.requests] == [401, 401]


async def test_token_expires(github, private_key, monkeypatch):
    github.add_repo(REPO)
    token = (await install_token(private_key))["token"]
    assert (await api(token).getitem(f"/repos/{REPO}"))["name"] == "bench"
    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now + 3601)
    with pytest.raises(gidgethub.BadRequest, match="Bad credentials") as err:
        await api(token).getitem(f"/repos/{REPO}")
    assert err.value.status_code == 401
    fresh = (await install_token(private_key))["token"]  # a new token works again
    assert (await api(fresh).getitem(f"/repos/{REPO}"))["name"] == "bench"


async def test_human_token_acts_as_that_user(github, gh):
    github.add_token("human-token", "maintainer")
    github.set_permission(REPO, "maintainer", "write")
    by_human = await api("human-token").post(f"/repos/{REPO}/issues/1/comments", data={"body": "/use 42"})
    by_bot = await gh.post(f"/repos/{REPO}/issues/1/comments", data={"body": "ok"})
    assert by_human["user"]["login"] == "maintainer" and by_human["user"]["type"] == "User"
    assert by_human["author_association"] == "COLLABORATOR"
    assert by_bot["user"]["login"] == "sweepbot[bot]" and by_bot["user"]["type"] == "Bot"


# ---- pagination and ETags -----------------------------------------------------------------


async def test_getiter_follows_link_headers_through_150_comments(github, gh):
    for i in range(150):
        github.add_comment(REPO, 1, f"comment {i}")
    bodies = [c["body"] async for c in gh.getiter(f"/repos/{REPO}/issues/1/comments?per_page=100")]
    assert bodies == [f"comment {i}" for i in range(150)]
    assert github.count("GET", r"/issues/1/comments$") == 2
    assert [r.query for r in github.requests] == [{"per_page": "100"}, {"per_page": "100", "page": "2"}]


async def test_link_header_has_next_and_last_in_github_format(github, gh):
    for i in range(65):
        github.add_comment(REPO, 1, f"c{i}")
    async with httpx.AsyncClient() as client:
        headers = {"authorization": f"token {gh.oauth_token}"}
        first = await client.get(f"https://api.github.com/repos/{REPO}/issues/1/comments", headers=headers)
        assert len(first.json()) == 30
        assert first.links["next"]["url"].endswith("per_page=30&page=2")
        assert first.links["last"]["url"].endswith("page=3")
        last = await client.get(first.links["last"]["url"], headers=headers)
    assert [c["body"] for c in last.json()] == ["c60", "c61", "c62", "c63", "c64"]
    assert "next" not in last.links and last.links["first"]["url"].endswith("page=1")


async def test_etag_gives_304_through_gidgethub_cache_and_spares_the_rate_limit(github, gh):
    cached = api(gh.oauth_token, cache={})
    first = await cached.getitem(f"/repos/{REPO}/pulls/1")
    remaining = github.rate_remaining
    second = await cached.getitem(f"/repos/{REPO}/pulls/1")
    assert second == first
    assert [r.status for r in github.requests] == [200, 304]
    assert github.rate_remaining == remaining

    await gh.patch(f"/repos/{REPO}/issues/1", data={"title": "Renamed"})
    third = await cached.getitem(f"/repos/{REPO}/pulls/1")
    assert third["title"] == "Renamed" and github.requests[-1].status == 200


async def test_rate_limit_headers_count_down_and_run_out(github, gh):
    await gh.getitem(f"/repos/{REPO}")
    assert gh.rate_limit.limit == 5000 and gh.rate_limit.remaining == 4999
    assert gh.rate_limit.reset_datetime.timestamp() > time.time() + 3500
    with pytest.raises(gidgethub.BadRequest):
        await api("nope").getitem(f"/repos/{REPO}")  # unauthenticated: not counted
    assert github.rate_remaining == 4999
    github.rate_remaining = 0
    with pytest.raises(gidgethub.RateLimitExceeded):
        await gh.getitem(f"/repos/{REPO}")


# ---- labels and events --------------------------------------------------------------------


async def test_label_events_record_who_applied_and_removed(github, gh):
    github.add_label(REPO, "full-sweep-fail-fast", color="0e8a16")
    github.label_issue(REPO, 1, "full-sweep-fail-fast", actor="maintainer")
    labels = await gh.post(f"/repos/{REPO}/issues/1/labels", data={"labels": ["needs review"]})
    assert [label["name"] for label in labels] == ["full-sweep-fail-fast", "needs review"]
    assert github.repo_labels(REPO)["needs review"]["color"] == "ededed"  # created like GitHub does

    async with httpx.AsyncClient() as client:  # gidgethub's delete() drops the body; check it here
        removed = await client.delete(f"https://api.github.com/repos/{REPO}/issues/1/labels/needs%20review",
                                      headers={"authorization": f"token {gh.oauth_token}"})
    assert removed.status_code == 200
    assert [label["name"] for label in removed.json()] == ["full-sweep-fail-fast"]
    assert github.requests[-1].path == f"/repos/{REPO}/issues/1/labels/needs review"
    with pytest.raises(gidgethub.BadRequest, match="Label does not exist") as err:
        await gh.delete(f"/repos/{REPO}/issues/1/labels/needs%20review")
    assert err.value.status_code == 404

    events = [e async for e in gh.getiter(f"/repos/{REPO}/issues/1/events")]
    assert [(e["event"], e["label"]["name"], e["actor"]["login"], e["actor"]["type"]) for e in events] == [
        ("labeled", "full-sweep-fail-fast", "maintainer", "User"),
        ("labeled", "needs review", "sweepbot[bot]", "Bot"),
        ("unlabeled", "needs review", "sweepbot[bot]", "Bot"),
    ]
    assert events[0]["label"]["color"] == "0e8a16"
    assert events[0]["created_at"] < events[1]["created_at"] < events[2]["created_at"]
    assert github.issue_labels(REPO, 1) == ["full-sweep-fail-fast"]


async def test_repo_labels_get_create_and_422(github, gh):
    created = await gh.post(f"/repos/{REPO}/labels", data={"name": "all-evals", "color": "c5def5"})
    assert created["name"] == "all-evals"
    assert (await gh.getitem(f"/repos/{REPO}/labels/all-evals"))["color"] == "c5def5"
    assert github.requests[0].status == 201

    with pytest.raises(gidgethub.InvalidField) as err:
        await gh.post(f"/repos/{REPO}/labels", data={"name": "all-evals"})
    assert err.value.status_code == 422
    assert err.value.errors == [{"resource": "Label", "code": "already_exists", "field": "name"}]
    with pytest.raises(gidgethub.InvalidField) as err:
        await gh.post(f"/repos/{REPO}/labels", data={"color": "ffffff"})
    assert err.value.errors[0]["code"] == "missing_field"
    with pytest.raises(gidgethub.BadRequest) as err:
        await gh.getitem(f"/repos/{REPO}/labels/nope")
    assert err.value.status_code == 404


# ---- comments and reactions ---------------------------------------------------------------


async def test_comment_lifecycle(github, gh):
    posted = await gh.post(f"/repos/{REPO}/issues/1/comments", data={"body": "hello"})
    assert github.requests[-1].status == 201
    assert posted["html_url"].endswith(f"/{REPO}/pull/1#issuecomment-{posted['id']}")
    edited = await gh.patch(f"/repos/{REPO}/issues/comments/{posted['id']}", data={"body": "hello again"})
    assert edited["body"] == "hello again" and edited["updated_at"] > edited["created_at"]
    assert (await gh.getitem(f"/repos/{REPO}/issues/comments/{posted['id']}"))["body"] == "hello again"
    assert [c["body"] for c in github.comments(REPO, 1)] == ["hello again"]

    await gh.delete(f"/repos/{REPO}/issues/comments/{posted['id']}")
    assert github.requests[-1].status == 204 and github.comments(REPO, 1) == []
    with pytest.raises(gidgethub.BadRequest) as err:
        await gh.getitem(f"/repos/{REPO}/issues/comments/{posted['id']}")
    assert err.value.status_code == 404
    with pytest.raises(gidgethub.InvalidField) as err:
        await gh.post(f"/repos/{REPO}/issues/1/comments", data={})
    assert err.value.errors == [{"resource": "IssueComment", "code": "missing_field", "field": "body"}]


async def test_add_comment_is_newest_last_with_increasing_timestamps(github, gh):
    a = github.add_comment(REPO, 1, "/use 1", user="maintainer")
    b = github.add_comment(REPO, 1, "/use 2", user="maintainer", author_association="MEMBER")
    listed = await gh.getitem(f"/repos/{REPO}/issues/1/comments")
    assert [c["id"] for c in listed] == [a["id"], b["id"]] and a["id"] < b["id"]
    assert a["created_at"] < b["created_at"]
    assert (a["author_association"], b["author_association"]) == ("CONTRIBUTOR", "MEMBER")
    pinned = github.add_comment(REPO, 1, "old", created_at="2025-01-01T00:00:00Z")
    assert pinned["created_at"] == "2025-01-01T00:00:00Z"


async def test_reactions(github, gh):
    comment = github.add_comment(REPO, 1, "/use 42", user="maintainer")
    url = f"/repos/{REPO}/issues/comments/{comment['id']}/reactions"
    eyes = await gh.post(url, data={"content": "eyes"})
    assert github.requests[-1].status == 201 and eyes["user"]["login"] == "sweepbot[bot]"
    again = await gh.post(url, data={"content": "eyes"})
    assert github.requests[-1].status == 200 and again["id"] == eyes["id"]
    await gh.post(url, data={"content": "+1"})
    await gh.delete(f"{url}/{eyes['id']}")
    assert github.requests[-1].status == 204
    assert github.reactions(comment["id"]) == ["+1"]
    assert [r["content"] async for r in gh.getiter(url)] == ["+1"]
    with pytest.raises(gidgethub.InvalidField):
        await gh.post(url, data={"content": "thumbsup"})
    with pytest.raises(gidgethub.BadRequest) as err:
        await gh.delete(f"{url}/{eyes['id']}")
    assert err.value.status_code == 404


# ---- repository data ----------------------------------------------------------------------


async def test_contents_are_base64_wrapped_at_60_with_git_blob_sha(github, gh):
    text = "- config-keys:\n    - dsr1-*\n" * 10
    github.set_file(REPO, "inferencex-e2e/perf-changelog.yaml", text)
    github.set_file(REPO, "inferencex-e2e/perf-changelog.yaml", "head version\n", ref="abc123")
    got = await gh.getitem(f"/repos/{REPO}/contents/inferencex-e2e/perf-changelog.yaml")
    assert (got["type"], got["encoding"], got["name"], got["size"]) == ("file", "base64", "perf-changelog.yaml",
                                                                         len(text))
    lines = got["content"].split("\n")
    assert lines[-1] == "" and all(len(line) == 60 for line in lines[:-2]) and 0 < len(lines[-2]) <= 60
    assert base64.b64decode(got["content"]).decode() == text
    data = text.encode()
    assert got["sha"] == hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()

    at_ref = await gh.getitem(f"/repos/{REPO}/contents/inferencex-e2e/perf-changelog.yaml?ref=abc123")
    assert base64.b64decode(at_ref["content"]) == b"head version\n"
    github.delete_file(REPO, "inferencex-e2e/perf-changelog.yaml")
    with pytest.raises(gidgethub.BadRequest) as err:
        await gh.getitem(f"/repos/{REPO}/contents/inferencex-e2e/perf-changelog.yaml")
    assert err.value.status_code == 404


async def test_not_found_shapes(github, gh):
    for url in (f"/repos/{REPO}/pulls/99", "/repos/org/missing", f"/repos/{REPO}/no/such/route"):
        with pytest.raises(gidgethub.BadRequest, match="Not Found") as err:
            await gh.getitem(url)
        assert err.value.status_code == 404
    assert [r.status for r in github.requests] == [404, 404, 404]


async def test_pull_and_files_shapes(github, gh):
    pr = github.add_pull(REPO, head_repo="partner/bench", head_ref="mi355x", head_sha="f" * 40, labels=["all-evals"],
                         files=[{"filename": "a.yaml", "status": "added", "additions": 3, "patch": "@@ +1,3 @@"},
                                "b.yaml"])
    assert pr["number"] == 2
    got = await gh.getitem(f"/repos/{REPO}/pulls/2")
    assert got["head"]["repo"]["full_name"] == "partner/bench" and got["head"]["repo"]["fork"] is True
    assert got["base"]["repo"]["full_name"] == REPO and got["base"]["ref"] == "main"
    assert (got["head"]["sha"], got["merge_commit_sha"], got["state"], got["draft"]) == ("f" * 40, None, "open", False)
    assert [label["name"] for label in got["labels"]] == ["all-evals"]
    files = [f async for f in gh.getiter(f"/repos/{REPO}/pulls/2/files")]
    assert [(f["filename"], f["status"], f["additions"]) for f in files] == [("a.yaml", "added", 3),
                                                                              ("b.yaml", "modified", 0)]
    assert files[0]["patch"] == "@@ +1,3 @@"
    github.pull(REPO, 2)["merge_commit_sha"] = "m" * 40  # the live object moves the PR on
    assert (await gh.getitem(f"/repos/{REPO}/pulls/2"))["merge_commit_sha"] == "m" * 40


async def test_issues_share_numbers_with_pulls_and_list_by_state(github, gh):
    issue = github.add_issue(REPO, title="Bug")
    assert issue["number"] == 2
    created = await gh.post(f"/repos/{REPO}/issues", data={"title": "Tracking", "labels": ["ingest"]})
    assert created["number"] == 3 and [label["name"] for label in created["labels"]] == ["ingest"]
    assert created["user"]["login"] == "sweepbot[bot]"
    await gh.patch(f"/repos/{REPO}/issues/2", data={"state": "closed"})

    open_ = [i async for i in gh.getiter(f"/repos/{REPO}/issues")]
    assert [i["number"] for i in open_] == [3, 1]  # newest first, like GitHub
    assert "pull_request" in open_[1] and "pull_request" not in open_[0]
    closed = await gh.getitem(f"/repos/{REPO}/issues?state=closed")
    assert [(i["number"], i["state"]) for i in closed] == [(2, "closed")] and closed[0]["closed_at"]
    assert len(await gh.getitem(f"/repos/{REPO}/issues?state=all")) == 3
    with pytest.raises(gidgethub.InvalidField):
        await gh.post(f"/repos/{REPO}/issues", data={"body": "no title"})


async def test_collaborator_permission(github, gh):
    github.set_permission(REPO, "lead", "maintain")
    github.set_permission(REPO, "helper", "triage")
    github.add_comment(REPO, 1, "hi", user="passerby")
    answers = {
        user: await gh.getitem(f"/repos/{REPO}/collaborators/{user}/permission")
        for user in ("lead", "helper", "passerby", "ghost")
    }
    # GitHub's legacy `permission` maps maintain -> write and triage -> read; `role_name` is exact.
    assert {u: (a["permission"], a["role_name"]) for u, a in answers.items()} == {
        "lead": ("write", "maintain"),
        "helper": ("read", "triage"),
        "passerby": ("read", "read"),
        "ghost": ("none", "none"),
    }
    assert answers["lead"]["user"]["login"] == "lead"


# ---- failure injection --------------------------------------------------------------------


async def test_fail_next_injects_statuses_then_recovers(github, gh):
    github.fail_next("POST", r"/issues/1/comments$", 502)
    with pytest.raises(gidgethub.GitHubBroken):
        await gh.post(f"/repos/{REPO}/issues/1/comments", data={"body": "x"})
    await gh.post(f"/repos/{REPO}/issues/1/comments", data={"body": "x"})
    assert [r.status for r in github.requests] == [502, 201]
    assert len(github.comments(REPO, 1)) == 1  # the failed attempt changed nothing

    message = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
    github.fail_next("GET", r"/pulls/1$", 403, times=2, headers={"retry-after": "1"}, json={"message": message})
    for _ in range(2):
        with pytest.raises(gidgethub.BadRequest, match="secondary rate limit") as err:
            await gh.getitem(f"/repos/{REPO}/pulls/1")
        assert err.value.status_code == 403 and err.value.headers["retry-after"] == "1"
    assert (await gh.getitem(f"/repos/{REPO}/pulls/1"))["number"] == 1

    github.fail_next(None, r"/pulls/1$", 429)
    with pytest.raises(gidgethub.BadRequest) as err:
        await gh.getitem(f"/repos/{REPO}/pulls/1")
    assert err.value.status_code == 429


async def test_raise_next_raises_transport_errors(github, gh):
    github.raise_next("GET", r"/pulls/1$", httpx.ConnectTimeout("boom"))
    with pytest.raises(httpx.ConnectTimeout, match="boom") as err:
        await gh.getitem(f"/repos/{REPO}/pulls/1")
    assert err.value.request.url.path == f"/repos/{REPO}/pulls/1"
    assert (await gh.getitem(f"/repos/{REPO}/pulls/1"))["number"] == 1
    assert [r.status for r in github.requests] == [0, 200]


# ---- recording ----------------------------------------------------------------------------


async def test_recording_writes_and_on_write(github, gh):
    seen: list[RecordedRequest] = []
    github.on_write = seen.append
    await gh.getitem(f"/repos/{REPO}/pulls/1")
    await gh.post(f"/repos/{REPO}/issues/1/comments", data={"body": "hi"})
    assert seen == github.writes and len(seen) == 1
    write = seen[0]
    assert (write.method, write.path, write.json, write.status, write.token) == (
        "POST", f"/repos/{REPO}/issues/1/comments", {"body": "hi"}, 201, gh.oauth_token)
    assert github.count() == 2 and github.count("get") == 1 and github.count(path_regex=r"/comments$") == 1
    with pytest.raises(AttributeError):
        write.status = 500
    github.reset_requests()
    assert github.requests == [] and github.count() == 0


# ---- webhook payloads ---------------------------------------------------------------------


def test_payload_builders_match_state(github):
    github.add_repo(REPO, installation_id=5)
    github.add_label(REPO, "full-sweep-enabled", color="123456")
    github.add_pull(REPO, head_repo="vendor/bench")
    labeled = github.pull_request_payload(REPO, 1, "labeled", sender="maintainer", label="full-sweep-enabled")
    assert labeled["label"]["color"] == "123456" and labeled["installation"] == {"id": 5}
    assert labeled["pull_request"]["head"]["repo"]["fork"] is True and labeled["number"] == 1
    assert labeled["sender"]["login"] == "maintainer" and labeled["repository"]["full_name"] == REPO
    assert github.has_repo("ORG/Bench") and not github.has_repo("org/other")
    assert sorted(github.repos) == [REPO, "vendor/bench"] and github.repos["vendor/bench"]["fork"] is True

    comment = github.add_comment(REPO, 1, "/use 7", user="maintainer")
    edited = github.issue_comment_payload(REPO, 1, comment, "edited", changes={"body": {"from": "/use 6"}})
    assert edited["issue"]["pull_request"]["html_url"].endswith("/pull/1")
    assert edited["comment"]["id"] == comment["id"] and edited["changes"]["body"]["from"] == "/use 6"
    assert edited["sender"]["login"] == "maintainer"
    issue = github.add_issue(REPO, title="not a PR")
    assert "pull_request" not in github.issue_comment_payload(REPO, issue["number"],
                                                              github.add_comment(REPO, 2, "x"))["issue"]

    push = github.push_payload(REPO, ref="refs/heads/main", after="a" * 40,
                               commits=[{"id": "a" * 40, "modified": ["x.yaml"], "message": "[skip-sweep] x"}])
    assert push["head_commit"]["id"] == "a" * 40 and push["commits"][0]["added"] == []
    assert push["head_commit"]["message"] == "[skip-sweep] x" and push["repository"]["default_branch"] == "main"


# ---- transports ---------------------------------------------------------------------------


async def test_other_hosts_never_reach_the_network(github):
    async with httpx.AsyncClient() as client:
        with pytest.raises(respx.models.AllMockedAssertionError):
            await client.get("https://example.com/")
    assert github.requests == []


async def test_mock_transport_with_enterprise_base_url(private_key):
    fake = InMemoryGitHub("https://ghe.example/api/v3")
    fake.add_repo(REPO)
    client = httpx.AsyncClient(transport=httpx.MockTransport(fake.handle))
    base = "https://ghe.example/api/v3"
    token = (await gidgethub.apps.get_installation_access_token(
        gidgethub.httpx.GitHubAPI(client, "test", base_url=base), installation_id=1, app_id="1",
        private_key=private_key))["token"]
    gh = gidgethub.httpx.GitHubAPI(client, "test", oauth_token=token, base_url=base)
    repo = await gh.getitem(f"/repos/{REPO}")
    assert repo["html_url"] == f"https://ghe.example/{REPO}"
    assert fake.requests[-1].path == f"/repos/{REPO}"
    outside = await client.get(f"https://ghe.example/repos/{REPO}", headers={"authorization": f"token {token}"})
    assert outside.status_code == 404
