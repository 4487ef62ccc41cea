"""The policy in force per repository: read from the default branch, cached, last good kept when a push breaks it."""

from __future__ import annotations

import gidgethub
import pytest
from harness import REPO, github_app
from pydantic import ValidationError

from bot.core.config import REPO_CONFIG_PATH
from bot.core.repo_config import RepoConfigs
from bot.core.templates import Templates


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
    assert policy.paths.changelog == "base.yaml"
    (read,) = [r for r in github.requests if r.path.endswith(REPO_CONFIG_PATH)]
    assert read.query == {"ref": "trunk"}


async def test_cached_until_invalidated(github, gh):
    configs = RepoConfigs()
    github.set_file(REPO, REPO_CONFIG_PATH, "paths:\n  changelog: one.yaml\n", ref="trunk")
    await configs.policy(gh, REPO, "trunk")
    github.set_file(REPO, REPO_CONFIG_PATH, "paths:\n  changelog: two.yaml\n", ref="trunk")
    assert (await configs.policy(gh, REPO, "trunk")).paths.changelog == "one.yaml"
    assert github.count("GET", REPO_CONFIG_PATH) == 1
    configs.invalidate(REPO)
    assert (await configs.policy(gh, REPO, "trunk")).paths.changelog == "two.yaml"


async def test_an_invalid_file_keeps_the_last_good_one_and_records_why(github, gh):
    configs = RepoConfigs()
    github.set_file(REPO, REPO_CONFIG_PATH, "paths:\n  changelog: good.yaml\n", ref="trunk")
    await configs.policy(gh, REPO, "trunk")
    github.set_file(REPO, REPO_CONFIG_PATH, "paths:\n  changelgo: typo.yaml\n", ref="trunk")
    configs.invalidate(REPO)
    policy = await configs.policy(gh, REPO, "trunk")
    assert policy.paths.changelog == "good.yaml"
    problem = configs.problems[REPO]
    assert problem.errors == ("paths.changelgo: unknown key (line 2)",) and problem.last_good is not None
    github.set_file(REPO, REPO_CONFIG_PATH, "paths:\n  changelog: fixed.yaml\n", ref="trunk")
    configs.invalidate(REPO)
    assert (await configs.policy(gh, REPO, "trunk")).paths.changelog == "fixed.yaml"
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
    with pytest.raises(ValidationError):  # pydantic's answer to setting a field of a frozen model
        policy.paths.changelog = "elsewhere.yaml"
    with pytest.raises(AttributeError):
        policy.autolabels.append({})
    assert policy.paths.changelog == "inferencex-e2e/perf-changelog.yaml"


COPIED_POLICY_ROOT = "policy:\n  paths:\n    changelog: perf.yaml\n"


async def test_the_config_invalid_issue_carries_each_line_and_hint(github, gh):
    """Regression: a file copied from app.yaml's `policy:` root told maintainers only "policy: unknown
    key", and a key given twice was taken silently (YAML keeps the last)."""
    github.set_file(
        REPO, REPO_CONFIG_PATH, COPIED_POLICY_ROOT + "paths:\n  changelog: a\n  changelog: b\n", ref="trunk"
    )
    configs = RepoConfigs()
    await configs.policy(gh, REPO, "trunk")
    errors = list(configs.problems[REPO].errors)
    assert errors == ["paths.changelog: duplicate key at line 6 (first at line 5)", "policy: unknown key (line 1)"]
    english, chinese = halves(
        Templates().render(
            "config_invalid",
            path=REPO_CONFIG_PATH,
            commit_sha="0f1e2d3c4b5a",
            commit_url="https://example.invalid/c",
            errors=errors,
            last_good=None,
        )
    )
    assert (
        "\n- policy: unknown key (line 1) Hint: This file holds only what goes under app.yaml's `policy:`: drop"
        " the `policy:` line and move the keys under it one level left.\n"
    ) in english
    assert (
        "\n- paths.changelog: duplicate key at line 6 (first at line 5) Hint: YAML would keep only the last of"
        " them, silently: keep one.\n"
    ) in english
    assert (
        "\n- policy: unknown key (line 1) 提示：这个文件只写 app.yaml 中 `policy:` 之下的内容：删除 `policy:`"
        " 这一行，并把它下面的键向左移一级缩进。\n"
    ) in chinese
    assert (
        "\n- paths.changelog: duplicate key at line 6 (first at line 5) 提示：YAML 只会默默保留其中最后一个" in chinese
    )


def halves(text: str) -> tuple[str, str]:
    before, heading, after = text.partition("\n## 中文\n")
    assert heading
    return before, after
