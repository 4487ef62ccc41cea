"""One-click fixes through the webhook: one `COMMENT` review on the PR's head with a `suggestion` on
each changelog line that has one obvious fix (at most 20), retired when the next head comes (its body marked
outdated, its suggestions deleted); the fake GitHub applies the suggestions as the author's click would."""

from __future__ import annotations

import pytest
from harness import REPO
from test_sweep_gate import CHANGELOG, FORK, HISTORY, PREFIX

from bot.rules.changelog import check_append
from bot.rules.markers import marker
from handlers.registry import router_of

BODY = b'- config-keys:\n    - dsr1-fp8-mi355x-sglang\n  description:\n    - "New MI355X recipe"\n'
# no separator line before the entry (line 6), spaces after the colon (line 10), two blank lines at the end
FIXABLE = HISTORY + BODY + b"  pr-link:   XXX\n\n\n"
PURPOSE = marker("changelog-suggestions")


@pytest.fixture
def make_harness(make_harness):
    async def make(**changes):
        return await make_harness(**{"router": router_of("changelog_suggestions", "sweep_gate"), **changes})

    return make


def open_pull(github, number: int, head: bytes, *, fork: bool = False) -> dict:
    pr = github.add_pull(
        REPO,
        number=number,
        user="partner",
        head_ref=f"recipe-{number}",
        head_repo=FORK if fork else None,
        files=[CHANGELOG],
    )
    github.set_file(REPO, CHANGELOG, HISTORY, ref=pr["base"]["sha"])
    github.set_file(REPO, CHANGELOG, head, ref=pr["head"]["sha"])
    return pr


async def send(h, number: int, action: str):
    await h.deliver("pull_request", h.github.pull_request_payload(REPO, number, action, sender="partner"))


def bot_reviews(github, number: int, purpose: str = PURPOSE) -> list[dict]:
    return [
        r
        for r in github.reviews(REPO, number)
        if r["user"]["login"] == github.bot_login and r["body"].startswith(purpose + "\n")
    ]


def gate_conclusion(github, sha: str) -> str:
    [check] = [c for c in github.check_runs(REPO, sha) if c["name"] == "sweep-gate"]
    return check["conclusion"]


def file_at(github, sha: str) -> bytes:
    return github._repo(REPO).files[sha][CHANGELOG]


async def test_suggestions_applied_by_the_fake_produce_a_valid_changelog(harness):
    """What the one-click fixes must do: the review's suggestions, committed as the author's click would, give a
    head the bot's own check passes; the review on the old head is then marked outdated and its suggestions
    removed."""
    github = harness.github
    pr = open_pull(github, 7, FIXABLE)
    await send(harness, 7, "opened")
    assert gate_conclusion(github, pr["head"]["sha"]) == "failure"

    [review] = bot_reviews(github, 7)
    assert review["state"] == "commented" and review["commit_id"] == pr["head"]["sha"]
    assert "3 problems in `inferencex-e2e/perf-changelog.yaml`" in review["body"] and "## 中文" in review["body"]
    comments = github.review_comments(REPO, review["id"])
    assert [(c["path"], c.get("start_line"), c["line"], c["side"]) for c in comments] == [
        (CHANGELOG, None, 6, "RIGHT"),
        (CHANGELOG, None, 10, "RIGHT"),
        (CHANGELOG, 11, 12, "RIGHT"),
    ]
    assert comments[1]["body"].startswith(f"```suggestion\n  pr-link: {PREFIX}7\n```\n")
    assert comments[2]["body"].startswith("```suggestion\n```\n")  # the two blank lines deleted

    new_head = github.apply_suggestions(REPO, 7, review["id"])
    fixed = file_at(github, new_head)
    assert check_append(HISTORY, fixed, pr_number=7, canonical_prefix=PREFIX).ok
    assert fixed == HISTORY + b"\n" + BODY + f"  pr-link: {PREFIX}7\n".encode()
    await send(harness, 7, "synchronize")

    assert gate_conclusion(github, new_head) != "failure"  # the gate's own check of the new head passes
    assert bot_reviews(github, 7) == []  # nothing left to suggest: no new review
    [old] = bot_reviews(github, 7, marker("changelog-suggestions-outdated"))
    assert old["id"] == review["id"] and f"a newer commit (`{new_head[:7]}`)" in old["body"]
    assert github.review_comments(REPO, review["id"]) == []


async def test_a_new_head_replaces_the_review_and_a_redelivery_writes_nothing(harness):
    github = harness.github
    open_pull(github, 8, HISTORY + b"\n" + BODY + b"  pr-link: TBD\n")
    await send(harness, 8, "opened")
    [first] = bot_reviews(github, 8)

    github.reset_requests()
    await send(harness, 8, "opened")  # the same head again
    assert [r for r in github.writes if not r.path.startswith("/app/") and "/reviews" in r.path] == []

    sha = "c" * 40
    github.push_commit(REPO, 8, sha=sha)
    github.set_file(REPO, CHANGELOG, HISTORY + b"\n" + BODY + b"  pr-link: XXX   \n", ref=sha)
    await send(harness, 8, "synchronize")
    [second] = bot_reviews(github, 8)
    assert second["id"] != first["id"] and second["commit_id"] == sha
    assert [c["line"] for c in github.review_comments(REPO, second["id"])] == [11]
    assert github.review_comments(REPO, first["id"]) == []
    assert len(bot_reviews(github, 8, marker("changelog-suggestions-outdated"))) == 1


async def test_a_fork_pr_gets_the_same_review(harness):
    """A suggestion on a fork's PR is committed by its author the same way: the bot posts it there too."""
    github = harness.github
    open_pull(github, 9, HISTORY + b"\n" + BODY + b"  pr-link: TBD\n", fork=True)
    await send(harness, 9, "opened")
    [review] = bot_reviews(github, 9)
    [comment] = github.review_comments(REPO, review["id"])
    assert comment["body"].startswith(f"```suggestion\n  pr-link: {PREFIX}9\n```")


async def test_at_most_twenty_suggestions_and_the_rest_counted(harness):
    github = harness.github
    entries = b"".join(b"\n" + BODY.replace(b"mi355x", f"k{i}".encode()) + b"  pr-link: TBD\n" for i in range(23))
    open_pull(github, 10, HISTORY + entries)
    await send(harness, 10, "opened")
    [review] = bot_reviews(github, 10)
    assert len(github.review_comments(REPO, review["id"])) == 20
    assert "3 more problems have a fix of the same kind" in review["body"]


async def test_no_fixable_error_no_review(harness):
    """A valid entry, or an error without one obvious fix (a missing field), gets no review at all."""
    github = harness.github
    open_pull(github, 11, HISTORY + b"\n" + BODY + b"  pr-link: XXX\n")
    open_pull(github, 12, HISTORY + b"\n- config-keys:\n    - a\n  pr-link: XXX\n")
    await send(harness, 11, "opened")
    await send(harness, 12, "opened")
    assert github.reviews(REPO, 11) == [] and github.reviews(REPO, 12) == []
    assert github.count("POST", r"/reviews$") == 0


async def test_a_lost_answer_to_the_review_is_found_again_not_posted_twice(harness):
    """GitHub made the review and its answer was lost (a 502 after the write): the bot finds it by its commit and
    body (the send looks before it posts) instead of posting a second one."""
    github = harness.github
    open_pull(github, 13, HISTORY + b"\n" + BODY + b"  pr-link: TBD\n")
    github.fail_after_commit("POST", r"/pulls/13/reviews$", 502)
    await send(harness, 13, "opened")
    assert github.count("POST", r"/pulls/13/reviews$") == 1
    [review] = bot_reviews(github, 13)
    assert len(github.review_comments(REPO, review["id"])) == 1


async def test_the_fake_refuses_a_review_comment_it_cannot_place(github):
    """The fake's reviews API answers 422 as GitHub does for a line the head file does not have, a range that runs
    backwards, or an unknown event; it keeps a valid review with its comments."""
    import gidgethub
    import gidgethub.httpx
    import httpx

    github.add_repo(REPO)
    pr = open_pull(github, 5, HISTORY)  # 5 lines
    github.add_token("t", "reviewer")
    gh = gidgethub.httpx.GitHubAPI(httpx.AsyncClient(), "test", oauth_token="t")
    url = f"/repos/{REPO}/pulls/5/reviews"
    good = {"path": CHANGELOG, "line": 5, "side": "RIGHT", "body": "```suggestion\nx\n```"}
    for comment, event in (
        ({**good, "line": 6}, "COMMENT"),
        ({**good, "start_line": 5}, "COMMENT"),
        (good, "MAYBE"),
        ({"line": 1, "body": "x"}, "COMMENT"),
    ):
        with pytest.raises(gidgethub.BadRequest) as refused:
            await gh.post(
                url, data={"commit_id": pr["head"]["sha"], "event": event, "body": "b", "comments": [comment]}
            )
        assert refused.value.status_code == 422
    made = await gh.post(
        url,
        data={"commit_id": pr["head"]["sha"], "event": "COMMENT", "body": "b", "comments": [{**good, "start_line": 4}]},
    )
    [kept] = github.review_comments(REPO, made["id"])
    assert (kept["start_line"], kept["line"], kept["user"]["login"]) == (4, 5, "reviewer")
    new_head = github.apply_suggestions(REPO, 5, made["id"])
    assert file_at(github, new_head) == HISTORY.rsplit(b"\n", 3)[0] + b"\nx\n"
