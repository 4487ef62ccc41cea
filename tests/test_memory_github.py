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
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return pem.decode()


def api(token=None, **kwargs) -> gidgethub.httpx.GitHubAPI:
    return gidgethub.httpx.GitHubAPI(httpx.AsyncClient(), "test", oauth_token=token, **kwargs)


async def install_token(private_key: str, installation_id: int = 1) -> dict:
    return await gidgethub.apps.get_installation_access_token(
        api(), installation_id=str(installation_id), app_id="1", private_key=private_key
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
    expires = dt.datetime.strptime(answer["expires_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    assert before + 3600 - 2 <= expires.timestamp() <= time.time() + 3600
    assert github.tokens_issued == 1
    post = github.requests[-1]
    assert (post.method, post.path, post.status) == ("POST", "/app/installations/1/access_tokens", 201)
    assert jwt.decode(post.token, options={"verify_signature": False})["iss"] == "1"

    repo = await api(token).getitem(f"/repos/{REPO}")
    assert repo["full_name"] == REPO and repo["owner"] == {
        "login": "org",
        "id": repo["owner"]["id"],
        "type": "Organization",
    }
    assert github.requests[-1].token == token


async def test_app_endpoint_needs_a_jwt_with_an_issuer(github, private_key):
    app_jwt = gidgethub.apps.get_jwt(app_id="1", private_key=private_key)
    found = await api().getitem("/app", jwt=app_jwt)
    assert {k: found[k] for k in ("id", "slug", "name", "permissions", "events")} == {
        "id": 1,
        "slug": "sweepbot",
        "name": "sweepbot",
        "permissions": {},
        "events": [],
    }

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
        removed = await client.delete(
            f"https://api.github.com/repos/{REPO}/issues/1/labels/needs%20review",
            headers={"authorization": f"token {gh.oauth_token}"},
        )
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
    assert (got["type"], got["encoding"], got["name"], got["size"]) == (
        "file",
        "base64",
        "perf-changelog.yaml",
        len(text),
    )
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
    pr = github.add_pull(
        REPO,
        head_repo="partner/bench",
        head_ref="mi355x",
        head_sha="f" * 40,
        labels=["all-evals"],
        files=[{"filename": "a.yaml", "status": "added", "additions": 3, "patch": "@@ +1,3 @@"}, "b.yaml"],
    )
    assert pr["number"] == 2
    got = await gh.getitem(f"/repos/{REPO}/pulls/2")
    assert got["head"]["repo"]["full_name"] == "partner/bench" and got["head"]["repo"]["fork"] is True
    assert got["base"]["repo"]["full_name"] == REPO and got["base"]["ref"] == "main"
    assert (got["head"]["sha"], got["merge_commit_sha"], got["state"], got["draft"]) == ("f" * 40, None, "open", False)
    assert [label["name"] for label in got["labels"]] == ["all-evals"]
    files = [f async for f in gh.getiter(f"/repos/{REPO}/pulls/2/files")]
    assert [(f["filename"], f["status"], f["additions"]) for f in files] == [
        ("a.yaml", "added", 3),
        ("b.yaml", "modified", 0),
    ]
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
        "POST",
        f"/repos/{REPO}/issues/1/comments",
        {"body": "hi"},
        201,
        gh.oauth_token,
    )
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
    assert (
        "pull_request"
        not in github.issue_comment_payload(REPO, issue["number"], github.add_comment(REPO, 2, "x"))["issue"]
    )

    push = github.push_payload(
        REPO,
        ref="refs/heads/main",
        after="a" * 40,
        commits=[{"id": "a" * 40, "modified": ["x.yaml"], "message": "[skip-sweep] x"}],
    )
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
    token = (
        await gidgethub.apps.get_installation_access_token(
            gidgethub.httpx.GitHubAPI(client, "test", base_url=base),
            installation_id=1,
            app_id="1",
            private_key=private_key,
        )
    )["token"]
    gh = gidgethub.httpx.GitHubAPI(client, "test", oauth_token=token, base_url=base)
    repo = await gh.getitem(f"/repos/{REPO}")
    assert repo["html_url"] == f"https://ghe.example/{REPO}"
    assert fake.requests[-1].path == f"/repos/{REPO}"
    outside = await client.get(f"https://ghe.example/repos/{REPO}", headers={"authorization": f"token {token}"})
    assert outside.status_code == 404


# ---- GitHub's own limits ------------------------------------------------------------------


async def test_label_name_description_and_colour_limits_are_githubs(github, gh):
    """GitHub refuses names over 50 characters, descriptions over 100 and colours that are not 6 hex digits."""
    ok = await gh.post(f"/repos/{REPO}/labels", data={"name": "n" * 50, "color": "C5DEF5", "description": "d" * 100})
    assert ok["name"] == "n" * 50
    refused = [
        (
            {"name": "n" * 51},
            {
                "resource": "Label",
                "code": "custom",
                "field": "name",
                "message": "name is too long (maximum is 50 characters)",
            },
        ),
        (
            {"name": "x", "description": "d" * 101},
            {
                "resource": "Label",
                "code": "custom",
                "field": "description",
                "message": "description is too long (maximum is 100 characters)",
            },
        ),
        ({"name": "x", "color": "#ffffff"}, {"resource": "Label", "code": "invalid", "field": "color"}),
        ({"name": "x", "color": "fff"}, {"resource": "Label", "code": "invalid", "field": "color"}),
        ({"name": "x", "color": "gggggg"}, {"resource": "Label", "code": "invalid", "field": "color"}),
    ]
    for data, error in refused:
        async with httpx.AsyncClient() as client:
            resp = await client.post(
                f"https://api.github.com/repos/{REPO}/labels",
                json=data,
                headers={"authorization": f"token {gh.oauth_token}"},
            )
        assert resp.status_code == 422, data
        assert resp.json() == {
            "message": "Validation Failed",
            "errors": [error],
            "documentation_url": "https://docs.github.com/rest/issues/labels#create-a-label",
        }
    assert sorted(github.repo_labels(REPO)) == ["n" * 50]

    with pytest.raises(gidgethub.InvalidField) as err:  # adding labels creates them: the same name limit
        await gh.post(f"/repos/{REPO}/issues/1/labels", data={"labels": ["fine", "l" * 51]})
    assert err.value.errors == [{"resource": "Label", "code": "invalid", "field": "name", "value": "l" * 51}]
    assert github.issue_labels(REPO, 1) == [] and "fine" not in github.repo_labels(REPO)
    with pytest.raises(gidgethub.InvalidField):
        await gh.post(f"/repos/{REPO}/issues", data={"title": "t", "labels": ["l" * 51]})
    assert len(github.issues(REPO)) == 1

    for bad in ({"color": "#000000"}, {"description": "d" * 101}):
        with pytest.raises(ValueError, match="GitHub would refuse"):
            github.add_label(REPO, "seeded", **bad)
    with pytest.raises(ValueError, match="GitHub would refuse"):
        github.label_issue(REPO, 1, "l" * 51)


async def test_comment_and_issue_bodies_are_at_most_65536_characters(github, gh):
    exact = await gh.post(f"/repos/{REPO}/issues/1/comments", data={"body": "x" * 65536})
    assert len(exact["body"]) == 65536
    error = {
        "resource": "IssueComment",
        "code": "unprocessable",
        "field": "data",
        "message": "Body is too long (maximum is 65536 characters)",
    }
    with pytest.raises(gidgethub.ValidationError) as err:
        await gh.post(f"/repos/{REPO}/issues/1/comments", data={"body": "x" * 65537})
    assert err.value.status_code == 422 and err.value.errors == [error]
    with pytest.raises(gidgethub.ValidationError):
        await gh.patch(f"/repos/{REPO}/issues/comments/{exact['id']}", data={"body": "y" * 65537})
    assert [len(c["body"]) for c in github.comments(REPO, 1)] == [65536]
    assert github.comments(REPO, 1)[0]["body"][0] == "x"

    issue_error = {
        "resource": "Issue",
        "code": "custom",
        "field": "body",
        "message": "body is too long (maximum is 65536 characters)",
    }
    with pytest.raises(gidgethub.ValidationError) as err:
        await gh.post(f"/repos/{REPO}/issues", data={"title": "Config error", "body": "b" * 65537})
    assert err.value.errors == [issue_error]
    with pytest.raises(gidgethub.ValidationError):
        await gh.patch(f"/repos/{REPO}/issues/1", data={"body": "b" * 65537})
    with pytest.raises(gidgethub.InvalidField) as err:
        await gh.patch(f"/repos/{REPO}/issues/1", data={"title": ""})
    assert err.value.errors == [{"resource": "Issue", "code": "missing_field", "field": "title"}]
    assert len(github.issues(REPO)) == 1 and github.pull(REPO, 1)["body"] == ""
    assert (await gh.post(f"/repos/{REPO}/issues", data={"title": "ok", "body": "b" * 65536}))["number"] == 2

    with pytest.raises(ValueError, match="65537 characters"):
        github.add_comment(REPO, 1, "z" * 65537)
    with pytest.raises(ValueError):
        github.add_issue(REPO, title="")


# ---- faults after the commit, revoked tokens, an outage -----------------------------------


async def test_fail_after_commit_creates_the_comment_then_answers_the_error(github, gh):
    github.fail_after_commit("POST", r"/issues/1/comments$", 502)
    with pytest.raises(gidgethub.GitHubBroken):
        await gh.post(f"/repos/{REPO}/issues/1/comments", data={"body": "once"})
    assert [c["body"] for c in github.comments(REPO, 1)] == ["once"]  # GitHub acted; the client saw 502
    failed = github.requests[-1]
    assert (failed.status, failed.route_status, failed.json) == (502, 201, {"body": "once"})

    await gh.post(f"/repos/{REPO}/issues/1/comments", data={"body": "twice"})
    assert github.requests[-1].status == 201 and github.requests[-1].route_status is None
    assert len(github.comments(REPO, 1)) == 2

    github.fail_after_commit(None, r"/issues/\d+/comments$", 504, times=2)
    with pytest.raises(gidgethub.BadRequest):  # a refused request commits nothing and keeps the fault armed
        await gh.post(f"/repos/{REPO}/issues/99/comments", data={"body": "no PR"})
    assert github.requests[-1].status == 404
    for _ in range(2):
        with pytest.raises(gidgethub.GitHubBroken):
            await gh.getitem(f"/repos/{REPO}/issues/1/comments")
    assert [r.route_status for r in github.requests[-2:]] == [200, 200]
    assert len(await gh.getitem(f"/repos/{REPO}/issues/1/comments")) == 2


async def test_raise_after_commit_adds_the_label_then_times_out(github, gh):
    github.raise_after_commit("POST", r"/issues/1/labels$", httpx.ReadTimeout("read timed out"))
    with pytest.raises(httpx.ReadTimeout) as err:
        await gh.post(f"/repos/{REPO}/issues/1/labels", data={"labels": ["all-evals"]})
    assert err.value.request.url.path == f"/repos/{REPO}/issues/1/labels"
    assert github.issue_labels(REPO, 1) == ["all-evals"]
    assert (github.requests[-1].status, github.requests[-1].route_status) == (0, 200)
    await gh.post(f"/repos/{REPO}/issues/1/labels", data={"labels": ["all-evals"]})
    assert github.requests[-1].status == 200 and github.issue_labels(REPO, 1) == ["all-evals"]


async def test_revoke_tokens_ends_every_installation_token_issued_so_far(github, gh, private_key):
    github.add_token("human-token", "maintainer")
    other = (await install_token(private_key))["token"]
    assert github.revoke_tokens() == 2
    for token in (gh.oauth_token, other):
        with pytest.raises(gidgethub.BadRequest, match="Bad credentials") as err:
            await api(token).getitem(f"/repos/{REPO}")
        assert err.value.status_code == 401
    assert (await api("human-token").getitem(f"/repos/{REPO}"))["name"] == "bench"  # a user's token lives on
    fresh = (await install_token(private_key))["token"]
    assert (await api(fresh).getitem(f"/repos/{REPO}"))["name"] == "bench"
    assert [r.status for r in github.requests] == [201, 401, 401, 200, 201, 200]


async def test_while_down_every_request_is_503_and_nothing_changes(github, gh, private_key):
    github.set_down(True)
    with pytest.raises(gidgethub.GitHubBroken) as err:
        await install_token(private_key)
    assert err.value.status_code == 503
    with pytest.raises(gidgethub.GitHubBroken):
        await gh.post(f"/repos/{REPO}/issues/1/comments", data={"body": "lost"})
    assert github.comments(REPO, 1) == [] and github.tokens_issued == 1
    assert [(r.method, r.status) for r in github.requests] == [("POST", 503), ("POST", 503)]
    assert github.requests[1].json == {"body": "lost"}
    github.set_down(False)
    await gh.post(f"/repos/{REPO}/issues/1/comments", data={"body": "back"})
    assert [c["body"] for c in github.comments(REPO, 1)] == ["back"]


# ---- Actions ------------------------------------------------------------------------------


async def test_workflow_dispatch_starts_a_run_on_the_branch_sha(github, gh):
    github.add_workflow(REPO, "run-sweep.yml", inputs=["pr-number", "dispatch-id"])
    github.set_branch(REPO, "sweep-branch", "c" * 40)
    answer = await gh.post(
        f"/repos/{REPO}/actions/workflows/run-sweep.yml/dispatches",
        data={"ref": "sweep-branch", "inputs": {"pr-number": "1", "dispatch-id": "d-42"}},
    )
    assert answer is None and github.requests[-1].status == 204
    [run] = github.runs(REPO)
    assert (run["status"], run["conclusion"], run["event"]) == ("queued", None, "workflow_dispatch")
    assert (run["head_branch"], run["head_sha"]) == ("sweep-branch", "c" * 40)
    assert "d-42" in run["name"] and "d-42" in run["display_title"]
    assert run["inputs"] == {"pr-number": "1", "dispatch-id": "d-42"}
    assert run["actor"]["login"] == "sweepbot[bot]" and run["path"] == ".github/workflows/run-sweep.yml"
    got = await gh.getitem(f"/repos/{REPO}/actions/runs/{run['id']}")
    assert "inputs" not in got and got["id"] == run["id"]

    details = await gh.post(
        f"/repos/{REPO}/actions/workflows/run-sweep.yml/dispatches", data={"ref": "main", "return_run_details": True}
    )
    assert github.requests[-1].status == 200
    second = github.runs(REPO)[-1]
    assert details == {"workflow_run_id": second["id"], "run_url": second["url"], "html_url": second["html_url"]}
    assert details["run_url"] == f"https://api.github.com/repos/{REPO}/actions/runs/{second['id']}"
    assert second["name"] == "run-sweep" and second["run_number"] == 2


async def test_dispatch_on_a_pr_head_branch_runs_the_pr_head_and_forks_are_not_branches(github, gh):
    github.add_workflow(REPO, "run-sweep.yml")
    github.add_pull(REPO, head_ref="mi355x", head_sha="a" * 40)
    github.add_pull(REPO, head_repo="partner/bench", head_ref="fork-branch", head_sha="b" * 40)
    await gh.post(f"/repos/{REPO}/actions/workflows/run-sweep.yml/dispatches", data={"ref": "refs/heads/mi355x"})
    assert github.runs(REPO)[0]["head_sha"] == "a" * 40 and github.runs(REPO)[0]["head_branch"] == "mi355x"
    with pytest.raises(gidgethub.InvalidField, match="No ref found for: fork-branch"):
        await gh.post(f"/repos/{REPO}/actions/workflows/run-sweep.yml/dispatches", data={"ref": "fork-branch"})
    assert len(github.runs(REPO)) == 1


async def test_workflow_dispatch_refusals(github, gh):
    github.add_workflow(
        REPO,
        "run-sweep.yml",
        inputs={"pr-number": {"required": True}, "mode": {"default": "full"}},
        run_name="Sweep PR ${{ inputs.pr-number }} (${{ inputs.mode }})",
    )
    url = f"/repos/{REPO}/actions/workflows/run-sweep.yml/dispatches"
    refusals = [
        (f"/repos/{REPO}/actions/workflows/nope.yml/dispatches", {"ref": "main"}, "Workflow does not exist"),
        (url, {"ref": "main", "inputs": {"pr-number": "1", "typo": "x"}}, 'Unexpected inputs provided: ["typo"]'),
        (url, {"ref": "main"}, "Required input 'pr-number' not provided"),
        (url, {"inputs": {"pr-number": "1"}}, '"ref" wasn\'t supplied'),
        (url, {"ref": "gone", "inputs": {"pr-number": "1"}}, "No ref found for: gone"),
    ]
    for path, data, message in refusals:
        with pytest.raises(gidgethub.InvalidField) as err:
            await gh.post(path, data=data)
        assert err.value.status_code == 422 and message in str(err.value), (data, str(err.value))
    assert github.runs(REPO) == []
    await gh.post(url, data={"ref": "main", "inputs": {"pr-number": 7}})
    [run] = github.runs(REPO)
    assert run["inputs"] == {"pr-number": "7", "mode": "full"} and run["display_title"] == "Sweep PR 7 (full)"


async def test_list_runs_filters_and_paginates(github, gh):
    github.add_workflow(REPO, "run-sweep.yml")
    github.add_workflow(REPO, "e2e-tests.yml")
    github.set_branch(REPO, "b", "b" * 40)
    for _ in range(3):
        await gh.post(f"/repos/{REPO}/actions/workflows/run-sweep.yml/dispatches", data={"ref": "b"})
    pushed = github.add_run(REPO, "run-sweep.yml", head_sha="d" * 40, head_branch="main", conclusion="failure")
    github.add_run(REPO, "e2e-tests.yml", head_sha="b" * 40, head_branch="b")
    first, second, third = (r["id"] for r in github.runs(REPO, "run-sweep.yml")[:3])
    github.complete_run(REPO, second, "success")

    base = f"/repos/{REPO}/actions/workflows/run-sweep.yml/runs"
    everything = await gh.getitem(base)
    assert everything["total_count"] == 4
    assert [r["id"] for r in everything["workflow_runs"]] == [pushed["id"], third, second, first]  # newest first
    by = {
        q: [r["id"] for r in (await gh.getitem(f"{base}?{q}"))["workflow_runs"]]
        for q in (
            "branch=b",
            f"head_sha={'d' * 40}",
            "event=push",
            "status=queued",
            "status=success",
            "status=completed",
            "status=failure",
        )
    }
    assert by == {
        "branch=b": [third, second, first],
        f"head_sha={'d' * 40}": [pushed["id"]],
        "event=push": [pushed["id"]],
        "status=queued": [third, first],
        "status=success": [second],
        "status=completed": [pushed["id"], second],
        "status=failure": [pushed["id"]],
    }
    page = await gh.getitem(f"{base}?per_page=3&page=2")
    assert page["total_count"] == 4 and [r["id"] for r in page["workflow_runs"]] == [first]
    by_id = await gh.getitem(f"/repos/{REPO}/actions/workflows/{github.workflows(REPO)['run-sweep.yml']['id']}/runs")
    assert by_id["total_count"] == 4
    assert (await gh.getitem(f"/repos/{REPO}/actions/runs"))["total_count"] == 5
    with pytest.raises(gidgethub.BadRequest) as err:
        await gh.getitem(f"/repos/{REPO}/actions/workflows/nope.yml/runs")
    assert err.value.status_code == 404


async def test_cancel_a_run_and_409_once_completed(github, gh):
    github.add_workflow(REPO, "run-sweep.yml")
    await gh.post(f"/repos/{REPO}/actions/workflows/run-sweep.yml/dispatches", data={"ref": "main"})
    await gh.post(f"/repos/{REPO}/actions/workflows/run-sweep.yml/dispatches", data={"ref": "main"})
    one, two = (r["id"] for r in github.runs(REPO))
    assert await gh.post(f"/repos/{REPO}/actions/runs/{one}/cancel", data={}) == {}
    assert github.requests[-1].status == 202
    assert (github.runs(REPO)[0]["status"], github.runs(REPO)[0]["conclusion"]) == ("completed", "cancelled")
    github.complete_run(REPO, two, "success")
    for run_id in (one, two):
        with pytest.raises(gidgethub.BadRequest, match="Cannot cancel a workflow run that is completed") as err:
            await gh.post(f"/repos/{REPO}/actions/runs/{run_id}/cancel", data={})
        assert err.value.status_code == 409
    assert github.runs(REPO)[1]["conclusion"] == "success"
    with pytest.raises(gidgethub.BadRequest) as err:
        await gh.getitem(f"/repos/{REPO}/actions/runs/999999")
    assert err.value.status_code == 404
    with pytest.raises(ValueError):
        github.complete_run(REPO, two, "green")


async def test_run_artifacts_paginate_with_expired_flags(github, gh):
    github.add_workflow(REPO, "run-sweep.yml")
    run = github.add_run(REPO, "run-sweep.yml", head_sha="e" * 40)
    for i in range(3):
        github.add_artifact(REPO, run["id"], f"results_bmk_{i}", expired=i == 0)
    github.add_artifact(REPO, run["id"], "eval_results_all")
    url = f"/repos/{REPO}/actions/runs/{run['id']}/artifacts"
    first = await gh.getitem(f"{url}?per_page=2")
    assert first["total_count"] == 4 and len(first["artifacts"]) == 2
    everything = [a async for a in gh.getiter(f"{url}?per_page=2", iterable_key="artifacts")]
    assert [(a["name"], a["expired"]) for a in everything] == [
        ("results_bmk_0", True),
        ("results_bmk_1", False),
        ("results_bmk_2", False),
        ("eval_results_all", False),
    ]
    assert everything[0]["workflow_run"]["id"] == run["id"] and everything[0]["workflow_run"]["head_sha"] == "e" * 40
    named = await gh.getitem(f"{url}?name=eval_results_all")
    assert [a["name"] for a in named["artifacts"]] == ["eval_results_all"] and named["total_count"] == 1


def test_workflow_run_payload_is_the_completed_run(github):
    github.add_repo(REPO, installation_id=3)
    github.add_workflow(REPO, "run-sweep.yml", inputs=["dispatch-id"])
    github.add_pull(REPO, head_ref="feature", head_sha="f" * 40)
    run = github.add_run(
        REPO,
        "run-sweep.yml",
        head_sha="f" * 40,
        head_branch="feature",
        status="in_progress",
        event="workflow_dispatch",
        inputs={"dispatch-id": "x1"},
    )
    with pytest.raises(ValueError, match="complete_run first"):
        github.workflow_run_payload(REPO, run["id"])
    payload = github.workflow_run_payload(REPO, run["id"], conclusion="failure")
    assert payload["action"] == "completed" and payload["installation"] == {"id": 3}
    wr = payload["workflow_run"]
    assert (wr["id"], wr["status"], wr["conclusion"], wr["head_sha"]) == (run["id"], "completed", "failure", "f" * 40)
    assert [p["number"] for p in wr["pull_requests"]] == [1]  # a same-repository PR at the run's head
    assert payload["workflow"]["path"] == ".github/workflows/run-sweep.yml"
    assert payload["sender"]["login"] == "maintainer" and payload["repository"]["full_name"] == REPO


# ---- Checks, PR commits, repository_dispatch ----------------------------------------------


async def test_check_runs_create_update_and_list_for_a_commit(github, gh):
    sha = github.pull(REPO, 1)["head"]["sha"]
    for data, missing in (
        ({"head_sha": sha}, '"name" wasn\'t supplied'),
        ({"name": "sweep"}, '"head_sha" wasn\'t supplied'),
        ({"name": "sweep", "head_sha": sha, "conclusion": "green"}, "is not a member"),
        ({"name": "sweep", "head_sha": sha, "status": "completed"}, '"conclusion" wasn\'t supplied'),
        ({"name": "sweep", "head_sha": sha, "output": {"title": "t", "summary": "s" * 65536}}, "65535"),
    ):
        with pytest.raises(gidgethub.InvalidField) as err:
            await gh.post(f"/repos/{REPO}/check-runs", data=data)
        assert err.value.status_code == 422 and missing in str(err.value), str(err.value)
    assert github.check_runs(REPO) == []

    created = await gh.post(
        f"/repos/{REPO}/check-runs", data={"name": "sweep", "head_sha": sha, "status": "in_progress"}
    )
    assert github.requests[-1].status == 201
    assert (created["status"], created["conclusion"], created["completed_at"]) == ("in_progress", None, None)
    done = await gh.patch(
        f"/repos/{REPO}/check-runs/{created['id']}",
        data={"conclusion": "success", "output": {"title": "Sweep", "summary": "all green"}},
    )
    assert (done["status"], done["conclusion"], done["output"]["summary"]) == ("completed", "success", "all green")
    assert done["completed_at"] is not None
    await gh.post(f"/repos/{REPO}/check-runs", data={"name": "sign-off", "head_sha": sha})
    rerun = await gh.post(f"/repos/{REPO}/check-runs", data={"name": "sweep", "head_sha": sha})
    await gh.post(f"/repos/{REPO}/check-runs", data={"name": "sweep", "head_sha": "0" * 40})

    url = f"/repos/{REPO}/commits/{sha}/check-runs"
    latest = await gh.getitem(url)
    assert latest["total_count"] == 2 and {r["name"] for r in latest["check_runs"]} == {"sweep", "sign-off"}
    assert rerun["id"] in [r["id"] for r in latest["check_runs"]]
    every = await gh.getitem(f"{url}?filter=all&check_name=sweep")
    assert [r["id"] for r in every["check_runs"]] == [rerun["id"], created["id"]]
    by_branch = await gh.getitem(f"/repos/{REPO}/commits/feature/check-runs?check_name=sign-off")
    assert [r["name"] for r in by_branch["check_runs"]] == ["sign-off"]
    paged = await gh.getitem(f"{url}?per_page=1&page=2")
    assert paged["total_count"] == 2 and len(paged["check_runs"]) == 1
    with pytest.raises(gidgethub.BadRequest) as err:
        await gh.patch(f"/repos/{REPO}/check-runs/424242", data={"status": "queued"})
    assert err.value.status_code == 404


async def test_pull_commits_and_the_pulls_of_a_commit(github, gh):
    first_sha = github.pull(REPO, 1)["head"]["sha"]
    pushed = github.push_commit(REPO, 1, sha="9" * 40, message="[skip-sweep] tweak")
    assert github.pull(REPO, 1)["head"]["sha"] == "9" * 40 and pushed["parents"] == [{"sha": first_sha}]
    commits = [c async for c in gh.getiter(f"/repos/{REPO}/pulls/1/commits")]
    assert [(c["sha"], c["commit"]["message"]) for c in commits] == [
        (first_sha, "Add recipe"),
        ("9" * 40, "[skip-sweep] tweak"),
    ]
    github.pull(REPO, 1)["head"]["sha"] = "8" * 40  # moving the live object counts as a push
    assert github.pull_commits(REPO, 1) == [first_sha, "9" * 40, "8" * 40]
    github.add_pull(REPO, head_sha="7" * 40)
    for sha, numbers in ((first_sha, [1]), ("8" * 40, [1]), ("7" * 40, [2]), ("6" * 40, [])):
        assert [p["number"] for p in await gh.getitem(f"/repos/{REPO}/commits/{sha}/pulls")] == numbers
    github.update_pull(REPO, 2, state="closed", merged=True, merge_commit_sha="5" * 40)
    assert [p["number"] for p in await gh.getitem(f"/repos/{REPO}/commits/{'5' * 40}/pulls")] == [2]
    assert (await gh.getitem(f"/repos/{REPO}/pulls/2"))["state"] == "closed"
    with pytest.raises(ValueError):
        github.update_pull(REPO, 2, head={"sha": "x"})


async def test_repository_dispatch_is_recorded(github, gh):
    payload = {"pr_number": 1, "run_id": 42}
    assert (
        await gh.post(f"/repos/{REPO}/dispatches", data={"event_type": "stage-results", "client_payload": payload})
        is None
    )
    assert github.requests[-1].status == 204
    [sent] = github.repository_dispatches(REPO)
    assert (sent["event_type"], sent["client_payload"], sent["sender"]) == ("stage-results", payload, "sweepbot[bot]")
    for data, message in (
        ({"client_payload": {}}, '"event_type" wasn\'t supplied'),
        ({"event_type": "e" * 101}, "maximum is 100"),
        ({"event_type": "x", "client_payload": {str(i): i for i in range(11)}}, "No more than 10 properties"),
    ):
        with pytest.raises(gidgethub.InvalidField) as err:
            await gh.post(f"/repos/{REPO}/dispatches", data=data)
        assert message in str(err.value)
    assert len(github.repository_dispatches(REPO)) == 1


# ---- the App manifest flow --------------------------------------------------------------------------


MANIFEST = {
    "name": "Sweep Bot",
    "url": "https://example.com/home",
    "redirect_url": "http://127.0.0.1:3001/callback",
    "hook_attributes": {"url": "https://bot.example.com/webhook"},
    "default_permissions": {"checks": "write"},
    "default_events": ["pull_request"],
}


async def test_a_manifest_code_converts_once_without_credentials_into_a_working_app(github):
    import json

    code = github.create_app_from_manifest(json.dumps(MANIFEST), "acme")
    app = await api().post(f"/app-manifests/{code}/conversions", data={})  # no token, no JWT
    assert (
        app["slug"] == "sweep-bot"
        and app["name"] == "Sweep Bot"
        and app["html_url"] == "https://github.com/apps/sweep-bot"
    )
    assert app["owner"]["login"] == "acme" and app["owner"]["type"] == "Organization"
    assert app["permissions"] == {"checks": "write"} and app["events"] == ["pull_request"]
    assert app["webhook_secret"] and app["client_id"] and app["client_secret"]
    key = serialization.load_pem_private_key(app["pem"].encode(), password=None)  # a real RSA key
    assert isinstance(key, rsa.RSAPrivateKey) and key.key_size == 2048
    assert github.requests[-1].token is None and github.rate_remaining == 5000  # uncounted, unauthenticated
    with pytest.raises(gidgethub.BadRequest) as err:  # used once: gone
        await api().post(f"/app-manifests/{code}/conversions", data={})
    assert err.value.status_code == 404

    second = await api().post(
        f"/app-manifests/{github.create_app_from_manifest(json.dumps(MANIFEST))}/conversions", data={}
    )
    assert second["slug"] == "sweep-bot-2" and second["owner"]["type"] == "User"  # names are unique
    assert second["pem"] != app["pem"] and second["webhook_secret"] != app["webhook_secret"]


async def test_a_manifest_code_expires_after_an_hour(github):
    import json

    late = github.create_app_from_manifest(json.dumps(MANIFEST))
    fresh = github.create_app_from_manifest(json.dumps(MANIFEST))
    github.age_manifest_codes(3601)
    with pytest.raises(gidgethub.BadRequest) as err:
        await api().post(f"/app-manifests/{late}/conversions", data={})
    assert err.value.status_code == 404
    github.age_manifest_codes(-3601)
    assert (await api().post(f"/app-manifests/{fresh}/conversions", data={}))["id"]


@pytest.mark.parametrize(
    "manifest",
    [
        "not json",
        "[]",
        '{"name": "x"}',
        '{"url": "https://x", "hook_attributes": 1}',
        '{"url": "https://x", "redirect_url": "javascript:alert(1)"}',
    ],
)
def test_an_unusable_manifest_is_422(github, manifest):
    from bot.testing.model import Reply

    with pytest.raises(Reply) as err:
        github.create_app_from_manifest(manifest)
    assert err.value.status == 422


async def test_run_jobs_list_latest_or_all_and_rerun_failed_jobs_queues_the_next_attempt(github, gh):
    """The fake's jobs of a run: seeded by set_jobs with ids and links filled in, listed paginated
    with filter=latest (each job's newest attempt) or all; re-running the failed jobs queues the run as its
    next attempt with the failed and cancelled jobs queued, and is refused while the run is not finished."""
    github.add_workflow(REPO, "run-sweep.yml")
    run = github.add_run(REPO, "run-sweep.yml", head_sha="e" * 40, conclusion="failure")
    made = github.set_jobs(
        REPO,
        run["id"],
        [
            {"name": "build", "conclusion": "success"},
            {"name": "bmk (mi355x)", "conclusion": "failure"},
            {"name": "eval", "conclusion": "cancelled"},
        ],
    )
    assert made[1]["html_url"] == f"{github._repo(REPO).json['html_url']}/actions/runs/{run['id']}/job/{made[1]['id']}"
    url = f"/repos/{REPO}/actions/runs/{run['id']}/jobs"
    listed = [j async for j in gh.getiter(f"{url}?per_page=2&filter=latest", iterable_key="jobs")]
    assert [(j["name"], j["conclusion"], j["run_attempt"]) for j in listed] == [
        ("build", "success", 1),
        ("bmk (mi355x)", "failure", 1),
        ("eval", "cancelled", 1),
    ]
    assert await gh.post(f"/repos/{REPO}/actions/runs/{run['id']}/rerun-failed-jobs", data={}) == {}
    assert github.requests[-1].status == 201
    again = github.runs(REPO)[0]
    assert (again["status"], again["conclusion"], again["run_attempt"]) == ("queued", None, 2)
    latest = (await gh.getitem(f"{url}?filter=latest"))["jobs"]
    assert [(j["name"], j["status"], j["run_attempt"]) for j in latest] == [
        ("build", "completed", 1),
        ("bmk (mi355x)", "queued", 2),
        ("eval", "queued", 2),
    ]
    assert (await gh.getitem(f"{url}?filter=all"))["total_count"] == 5
    with pytest.raises(gidgethub.BadRequest) as err:
        await gh.post(f"/repos/{REPO}/actions/runs/{run['id']}/rerun-failed-jobs", data={})
    assert err.value.status_code == 403
    with pytest.raises(ValueError):
        github.set_jobs(REPO, run["id"], [{"name": "x", "conclusion": "green"}])


# ---- histories, submodules (the stale-branch guard's reads) ----------------------------------------


@pytest.mark.parametrize(
    "base, head, status, ahead_by, behind_by",
    [
        ("c3", "c1", "behind", 0, 2),
        ("c1", "c3", "ahead", 2, 0),
        ("c3", "s2", "diverged", 2, 2),
        ("c2", "c2", "identical", 0, 0),
    ],
)
async def test_compare_walks_a_given_history_as_github_does(github, gh, base, head, status, ahead_by, behind_by):
    github.add_repo("org/sub")
    sha = {name: hashlib.sha1(name.encode()).hexdigest() for name in ("c1", "c2", "c3", "s1", "s2")}
    github.add_history("org/sub", [sha["c1"], sha["c2"], sha["c3"]])
    github.add_history("org/sub", [sha["s1"], sha["s2"]], parent=sha["c1"])
    found = await gh.getitem(f"/repos/org/sub/compare/{sha[base]}...{sha[head]}")
    assert (found["status"], found["ahead_by"], found["behind_by"]) == (status, ahead_by, behind_by)
    with pytest.raises(gidgethub.BadRequest) as raised:  # a commit the repository does not have
        await gh.getitem(f"/repos/org/sub/compare/{sha['c1']}...{'0' * 40}")
    assert raised.value.status_code == 404


async def test_the_history_of_a_path_and_a_gitlink_read_like_githubs(github, gh):
    github.set_path_history(REPO, "recipes/a.sh", [("2" * 40, "tp: 8\n"), ("1" * 40, "tp: 4\n")])
    github.set_submodule(REPO, "utils/srt-slurm", "a" * 40, ref="b" * 40)
    listed = await gh.getitem(f"/repos/{REPO}/commits?path=recipes/a.sh&sha={'b' * 40}&per_page=1")
    assert [c["sha"] for c in listed] == ["2" * 40]
    older = await gh.getitem(f"/repos/{REPO}/contents/recipes/a.sh?ref={'1' * 40}")
    assert base64.b64decode(older["content"]) == b"tp: 4\n"
    link = await gh.getitem(f"/repos/{REPO}/contents/utils/srt-slurm?ref={'b' * 40}")
    assert (link["type"], link["sha"]) == ("submodule", "a" * 40)
    with pytest.raises(gidgethub.BadRequest) as raised:  # not a submodule on another commit
        await gh.getitem(f"/repos/{REPO}/contents/utils/srt-slurm?ref={'c' * 40}")
    assert raised.value.status_code == 404
