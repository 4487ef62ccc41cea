"""bot/rules/pull_request.py: each fact of a pull request read one way, the same for every feature that asks."""

from __future__ import annotations

import pytest

from bot.core.config import ConfigError, default_policy, parse_repo_config
from bot.rules.pull_request import carries_primary, is_fork, is_primary, label_key, last_applied, sweep_label_names
from handlers.welcome import welcome_variables

POLICY = default_policy()
REPO = "acme/InferenceX"


def pull(head_repo: str | None) -> dict:
    return {
        "number": 1,
        "user": {"login": "partner"},
        "head": {"repo": None if head_repo is None else {"full_name": head_repo}},
    }


@pytest.mark.parametrize(
    "head_repo, fork",
    [
        ("acme/InferenceX", False),
        ("ACME/inferencex", False),  # GitHub's names ignore case: the same repository
        ("partner/InferenceX", True),
        (None, True),  # the fork was deleted: still not this repository
        ("", True),
    ],
)
def test_is_fork(head_repo, fork):
    assert is_fork(pull(head_repo), REPO) is fork


def test_the_welcome_says_fork_exactly_when_the_gate_does():
    """Regression: the welcome compared repository names with their case, the gate without, so a PR
    whose head repository GitHub spelt `ACME/inferencex` was welcomed as a fork the gate did not treat as one."""
    repository = {"full_name": REPO, "html_url": f"https://github.com/{REPO}", "default_branch": "main"}
    for head_repo in ("acme/InferenceX", "ACME/inferencex", "partner/InferenceX", None):
        shown = welcome_variables(POLICY, repository, pull(head_repo))
        assert shown["is_fork"] is is_fork(pull(head_repo), REPO)


@pytest.mark.parametrize(
    "names, expected",
    [
        ([], False),
        (["amd"], False),
        (["full-sweep-fail-fast"], True),
        (["FULL-SWEEP-ENABLED"], True),
        (["evals-only"], False),  # a modifier, not a primary
        (["amd", "Full-Sweep-Fail-Fast"], True),
    ],
)
def test_carries_primary(names, expected):
    assert carries_primary(names, POLICY) is expected
    assert any(is_primary(name, POLICY) for name in names) is expected


def test_sweep_label_names_are_compared_casefolded():
    primaries, modifiers = sweep_label_names(POLICY)
    assert "full-sweep-fail-fast" in primaries and "evals-only" in modifiers
    assert all(name == label_key(name) for name in primaries | modifiers)


def test_the_config_check_and_the_runtime_compare_label_names_the_same_way():
    """Regression: the config check lower-cased label names while the gate casefolded them, so two
    labels the gate takes for one (`ß` casefolds to `ss`) passed the check as two."""
    assert label_key("Straße") == label_key("STRASSE")
    with pytest.raises(ConfigError) as raised:
        parse_repo_config(
            "labels:\n  modifiers:\n    all_evals: STRASSE\n"
            "  primary:\n    - {name: Straße, canary: true, fail_fast: true, recommended: true}\n"
        )
    assert any("is also the label of labels.primary[0].name" in error for error in raised.value.errors)


def event(kind: str, name: str, actor: str) -> dict:
    return {"event": kind, "label": {"name": name}, "actor": {"login": actor}}


@pytest.mark.parametrize(
    "events, by",
    [
        ([], None),
        ([event("labeled", "amd", "a")], "a"),
        ([event("labeled", "amd", "a"), event("unlabeled", "amd", "b")], None),
        ([event("labeled", "amd", "a"), event("unlabeled", "amd", "b"), event("labeled", "AMD", "c")], "c"),
        ([event("labeled", "amd", "a"), event("labeled", "nvidia", "b")], "a"),
        ([{"event": "labeled", "label": None, "actor": None}], None),
    ],
    ids=["none", "applied", "removed", "re-applied-other-case", "other-label", "malformed"],
)
def test_last_applied(events, by):
    found = last_applied(events, "amd")
    assert (None if found is None else found["actor"]["login"]) == by
