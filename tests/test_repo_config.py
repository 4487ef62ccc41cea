"""The policy in force per repository: read from the default branch, cached, last good kept when a push breaks it."""

from __future__ import annotations

import gidgethub
import pytest

from bot.core.config import REPO_CONFIG_PATH
from bot.core.repo_config import RepoConfigs
from harness import REPO, github_app


@pytest.fixture
async def gh(github, app_key):
    github.add_repo(REPO, default_branch="trunk", installation_id=1)
    return await github_app(app_key).client(1)


async def test_no_file_means_the_defaults(github, gh):
    configs = RepoConfigs()
    policy = await configs.policy(gh, REPO, "trunk")
    assert policy.to_dict() == configs.defaults and REPO not in configs.problems


async def test_the_file_is_read_from_the_default_branch_only(github, gh):
    github.set_file(REPO, REPO_CONFIG_PATH, "paths:\n  changelog: base.yaml\n", ref="trunk")
    github.set_file(REPO, REPO_CONFIG_PATH, "paths:\n  changelog: from-a-pr-head.yaml\n", ref="feature")
    policy = await RepoConfigs().policy(gh, REPO, "trunk")
    assert policy["paths"]["changelog"] == "base.yaml"
    (read,) = [r for r in github.requests if r.path.endswith(REPO_CONFIG_PATH)]
    assert read.query == {"ref": "trunk"}


async def test_cached_until_invalidated(github, gh):
    configs = RepoConfigs()
    github.set_file(REPO, REPO_CONFIG_PATH, "paths:\n  changelog: one.yaml\n", ref="trunk")
    await configs.policy(gh, REPO, "trunk")
    github.set_file(REPO, REPO_CONFIG_PATH, "paths:\n  changelog: two.yaml\n", ref="trunk")
    assert (await configs.policy(gh, REPO, "trunk"))["paths"]["changelog"] == "one.yaml"
    assert github.count("GET", REPO_CONFIG_PATH) == 1
    configs.invalidate(REPO)
    assert (await configs.policy(gh, REPO, "trunk"))["paths"]["changelog"] == "two.yaml"


async def test_an_invalid_file_keeps_the_last_good_one_and_records_why(github, gh):
    configs = RepoConfigs()
    github.set_file(REPO, REPO_CONFIG_PATH, "paths:\n  changelog: good.yaml\n", ref="trunk")
    await configs.policy(gh, REPO, "trunk")
    github.set_file(REPO, REPO_CONFIG_PATH, "paths:\n  changelgo: typo.yaml\n", ref="trunk")
    configs.invalidate(REPO)
    policy = await configs.policy(gh, REPO, "trunk")
    assert policy["paths"]["changelog"] == "good.yaml"
    problem = configs.problems[REPO]
    assert problem.errors == ("paths.changelgo: unknown key",) and problem.last_good is not None
    github.set_file(REPO, REPO_CONFIG_PATH, "paths:\n  changelog: fixed.yaml\n", ref="trunk")
    configs.invalidate(REPO)
    assert (await configs.policy(gh, REPO, "trunk"))["paths"]["changelog"] == "fixed.yaml"
    assert REPO not in configs.problems


async def test_an_invalid_first_file_means_defaults_in_force(github, gh):
    configs = RepoConfigs()
    github.set_file(REPO, REPO_CONFIG_PATH, ": : :\n", ref="trunk")
    assert (await configs.policy(gh, REPO, "trunk")).to_dict() == configs.defaults
    assert configs.problems[REPO].last_good is None


async def test_a_github_failure_is_raised_not_mistaken_for_no_file(github, gh):
    """A 5xx while reading the config must not silently switch a repository to the defaults."""
    github.fail_next("GET", REPO_CONFIG_PATH, 500, times=10)
    with pytest.raises(gidgethub.GitHubBroken):
        await RepoConfigs().policy(gh, REPO, "trunk")


async def test_the_policy_handed_out_is_read_only(github, gh):
    """Regression: handlers got the cached policy dict itself, so one delivery could change what the next saw."""
    policy = await RepoConfigs().policy(gh, REPO, "trunk")
    with pytest.raises(TypeError):
        policy["paths"]["changelog"] = "elsewhere.yaml"
    with pytest.raises(AttributeError):
        policy["autolabels"].append({})
    assert policy["paths"]["changelog"] == "inferencex-e2e/perf-changelog.yaml"
