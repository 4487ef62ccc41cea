"""`.github/sweepbot.yml` reloaded on a push to the default branch; an invalid file opens one issue for maintainers,
a valid one closes it (so that the welcome and labels follow the policy in force)."""

from __future__ import annotations

import pytest
from harness import REPO

from bot.core.config import REPO_CONFIG_PATH
from bot.rules.markers import marker
from handlers.config_refresh import touches_config

INVALID = "labels:\n  primary: []\nunknown_key: 1\n"
VALID = "docs_url: https://docs.example.test/v2\n"


@pytest.mark.parametrize(
    "commits, touched",
    [
        ([{"modified": [REPO_CONFIG_PATH]}], True),
        ([{"added": [REPO_CONFIG_PATH]}], True),
        ([{"removed": [REPO_CONFIG_PATH]}], True),
        ([{"modified": ["README.md"]}, {"modified": [REPO_CONFIG_PATH]}], True),
        ([{"modified": ["README.md"]}], False),
        ([{"modified": [".github/sweepbot.yaml", "sub/.github/sweepbot.yml"]}], False),
        ([], False),
        ([{"modified": None}], False),
    ],
)
def test_touches_config(commits, touched):
    assert touches_config(commits) is touched


def open_config_issues(github) -> list[dict]:
    return [
        i
        for i in github.issues(REPO)
        if "pull_request" not in i and i["state"] == "open" and i["body"].startswith(marker("config-invalid"))
    ]


async def push(
    h,
    content: str | None,
    sha: str,
    *,
    ref: str = "refs/heads/main",
    path: str = REPO_CONFIG_PATH,
    delivery: str | None = None,
) -> None:
    if content is None:
        h.github.delete_file(REPO, path)
    else:
        h.github.set_file(REPO, path, content)
    payload = h.github.push_payload(REPO, ref=ref, after=sha, commits=[{"modified": [path]}], sender="maintainer")
    await h.deliver("push", payload, delivery=delivery)


async def welcome_body(h, number: int = 1) -> str:
    await h.deliver("pull_request", h.github.pull_request_payload(REPO, number, "opened", sender="partner"))
    [welcome] = [
        c
        for c in h.github.comments(REPO, number)
        if c["user"]["login"] == h.github.bot_login and c["body"].startswith(marker("welcome"))
    ]
    return welcome["body"]


async def test_invalid_file_opens_one_issue_and_a_valid_push_closes_it(harness):
    github = harness.github
    await push(harness, INVALID, "1" * 40)

    [issue] = open_config_issues(github)
    assert issue["user"]["login"] == github.bot_login
    assert issue["title"].startswith("sweepbot: .github/sweepbot.yml on the default branch is invalid / ")
    assert "`1111111`" in issue["body"] and "/commit/" + "1" * 40 in issue["body"]
    assert "- unknown_key: unknown key" in issue["body"]
    assert "the built-in defaults are in force" in issue["body"]
    assert harness.bot.configs.problems[REPO].errors

    await push(harness, INVALID.replace("1", "2"), "2" * 40)  # still broken: the same issue, updated
    [again] = open_config_issues(github)
    assert again["number"] == issue["number"] and "`2222222`" in again["body"]

    await push(harness, VALID, "3" * 40)
    assert open_config_issues(github) == []
    assert github.issues(REPO)[-1]["state"] == "closed"
    assert REPO not in harness.bot.configs.problems

    github.reset_requests()
    await push(harness, VALID, "4" * 40)  # valid again: nothing to close, nothing written
    assert [r for r in github.writes if not r.path.startswith("/app/")] == []


async def test_an_invalid_file_keeps_the_last_good_policy_in_force(harness):
    await push(harness, VALID, "a" * 40)
    assert "(https://docs.example.test/v2)" in await welcome_body(harness)

    await push(harness, INVALID, "b" * 40)

    [issue] = open_config_issues(harness.github)
    assert "stays in force" in issue["body"]
    assert "(https://docs.example.test/v2)" in await welcome_body(harness)  # not the defaults


async def test_a_valid_push_is_used_by_the_next_event(harness):
    before = await welcome_body(harness)
    assert "docs.example.test" not in before
    await push(harness, VALID, "c" * 40)
    assert "(https://docs.example.test/v2)" in await welcome_body(harness)
    assert open_config_issues(harness.github) == []


async def test_removing_the_file_falls_back_to_the_defaults_and_closes_the_issue(harness):
    await push(harness, INVALID, "d" * 40)
    assert len(open_config_issues(harness.github)) == 1
    await push(harness, None, "e" * 40)
    assert open_config_issues(harness.github) == []


@pytest.mark.parametrize(
    "ref, path",
    [
        ("refs/heads/feature", REPO_CONFIG_PATH),  # not the default branch
        ("refs/tags/v1", REPO_CONFIG_PATH),
        ("refs/heads/main", "README.md"),  # the config file not touched
    ],
)
async def test_other_pushes_do_not_reload(harness, ref, path):
    github = harness.github
    await welcome_body(harness)  # the policy is cached
    github.set_file(REPO, REPO_CONFIG_PATH, INVALID)
    github.reset_requests()

    await push(harness, "x", "f" * 40, ref=ref, path=path)

    assert github.count("GET", r"/contents/") == 0
    assert open_config_issues(github) == []


async def test_a_human_issue_with_the_marker_is_not_the_bots(harness):
    github = harness.github
    fake = github.add_issue(REPO, title="copied", body=marker("config-invalid") + "\nfake", user="mallory")
    await push(harness, INVALID, "9" * 40)

    bots = [i for i in open_config_issues(github) if i["user"]["login"] == github.bot_login]
    assert len(bots) == 1 and bots[0]["number"] != fake["number"]
    await push(harness, VALID, "8" * 40)
    [still] = [i for i in github.issues(REPO) if i["number"] == fake["number"]]
    assert still["state"] == "open"  # a person's issue is left alone
