"""The typed policy (bot/rules/policy.py): frozen, strict models, and the JSON Schema editors check the file with."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from pydantic import ValidationError

from bot.core.config import default_policy, parse_repo_config, policy_defaults
from bot.rules.policy import Policy, key_path, repository_file_schema

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SCHEMA = EXAMPLES / "schemas" / "sweepbot.yml.json"
REGENERATE = (
    "python -c 'import json; from bot.rules.policy import repository_file_schema as s; "
    "print(json.dumps(s(), indent=2, ensure_ascii=False))' > examples/schemas/sweepbot.yml.json"
)


def file_validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text(encoding="utf-8")))


def test_the_published_schema_is_the_models():
    assert json.loads(SCHEMA.read_text(encoding="utf-8")) == repository_file_schema(), (
        f"examples/schemas/sweepbot.yml.json is out of date with bot/rules/policy.py; regenerate it: {REGENERATE}"
    )


def test_the_example_points_editors_at_the_schema_and_passes_it():
    text = (EXAMPLES / "sweepbot.yml").read_text(encoding="utf-8")
    assert text.splitlines()[0] == "# yaml-language-server: $schema=schemas/sweepbot.yml.json"
    assert (EXAMPLES / "sweepbot.yml").parent.joinpath("schemas/sweepbot.yml.json").is_file()
    assert list(file_validator().iter_errors(yaml.safe_load(text))) == []


# (a repository file, whether the bot accepts it): the editor's schema agrees with the bot on each
AGREEMENT = [
    ("paths:\n  changelog: perf.yaml\n", True),  # any one key alone: the rest are defaults
    ("signoff:\n  judge:\n    enabled: true\n", True),  # nested mappings merge too
    ("pathz:\n  changelog: x\n", False),
    ("paths:\n  changelgo: x\n", False),
    ("paths:\n  changelog: ''\n", False),
    ("paths:\n  changelog: 12\n", False),
    ("paths:\n  benchmark: inferencex-e2e/\n", False),
    ("labels:\n  primary:\n    - {name: a, canary: 'yes', fail_fast: true, recommended: true}\n", False),
    ("labels:\n  primary:\n    - {name: a, fail_fast: true, recommended: true}\n", False),  # an item is whole
    ("limits:\n  changelog_bytes: 0\n", False),
    ("limits:\n  changelog_bytes: true\n", False),
    ("sweeps:\n  triage_may_start: 1\n", False),
    ("stale_branch:\n  submodules: warn\n", True),
    ("stale_branch:\n  submodules: block\n", False),
    ("stale_branch:\n  history_depth: 11\n", False),
    # the size limit in benchmark points: a positive whole number, or null (never asked)
    ("sweeps:\n  confirm_over: 400\n", True),
    ("sweeps:\n  confirm_over: null\n", True),
    ("sweeps:\n  confirm_over: 0\n", False),
    ("sweeps:\n  confirm_over: '400'\n", False),
    ("sweeps:\n  confirm_over: 1.5\n", False),
]


@pytest.mark.parametrize("text, accepted", AGREEMENT, ids=[str(i) for i in range(len(AGREEMENT))])
def test_the_schema_and_the_bot_agree(text, accepted):
    schema_says = file_validator().is_valid(yaml.safe_load(text))
    try:
        parse_repo_config(text)
        bot_says = True
    except ValueError:
        bot_says = False
    assert (schema_says, bot_says) == (accepted, accepted)


def test_the_policy_is_frozen_all_the_way_down() -> None:  # annotated so mypy checks, and refuses, the write too
    policy = default_policy()
    with pytest.raises(ValidationError):
        policy.labels.primary[0].canary = False  # type: ignore[misc]
    assert isinstance(policy.labels.primary, tuple) and isinstance(policy.paths.benchmark, tuple)


def test_values_are_not_converted():
    """Strict: YAML's "yes" in quotes stays a string, so it is an error where a boolean is due, never true."""
    data = policy_defaults()
    data["signoff"]["require_reuse"] = "yes"
    with pytest.raises(ValidationError):
        Policy.model_validate(data)


def test_every_model_refuses_keys_it_does_not_name():
    """A typo in a key is an error at parse time, at every level (the models forbid extra keys)."""
    for section in ("paths", "signoff", "labels", "limits", "commands"):
        data = policy_defaults()
        data[section]["typo"] = 1
        with pytest.raises(ValidationError) as raised:
            Policy.model_validate(data)
        assert [error["type"] for error in raised.value.errors()] == ["extra_forbidden"], section


@pytest.mark.parametrize(
    "location, path",
    [
        ((), ""),
        (("paths",), "paths"),
        (("labels", "primary", 0, "canary"), "labels.primary[0].canary"),
        (("autolabels", 2), "autolabels[2]"),
    ],
)
def test_key_paths_are_written_as_the_messages_write_them(location, path):
    assert key_path(location) == path
