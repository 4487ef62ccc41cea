"""Policy: defaults from app.yaml, repository overrides deep-merged and validated, environment settings, CLI checks."""

from __future__ import annotations

import json

import pytest

from bot import cli
from bot.config import ConfigError, Settings, default_policy, load_app_yaml, parse_repo_config

SPEC_NAMES = [
    "inferencex-e2e/perf-changelog.yaml", ".github/CODEOWNERS", "docs/PR_REVIEW_CHECKLIST.md", "run-sweep.yml",
    "e2e-tests.yml", "SemiAnalysisAI/InferenceX-app", "https://github.com/SemiAnalysisAI/InferenceX/pull/",
    "full-sweep-fail-fast", "full-sweep-enabled", "non-canary-full-sweep-enabled", "all-evals", "evals-only",
    "agentx-fast", "use", "reuse-sweep-run", "stage-results", "[skip-sweep]",
]


def test_defaults_hold_every_name_from_the_spec():
    text = json.dumps(default_policy())
    missing = [name for name in SPEC_NAMES if json.dumps(name) not in text and name not in text]
    assert missing == []


def test_manifest_asks_only_for_what_the_bot_uses():
    manifest = load_app_yaml()["manifest"]
    assert manifest["default_permissions"] == {"contents": "read", "pull_requests": "write", "issues": "write",
                                               "metadata": "read"}  # contents read: the bot never pushes code
    # every subscribed event has a handler, and every handled event is subscribed
    from handlers import router

    handled = set(router._shallow_routes) | set(router._deep_routes)
    assert set(manifest["default_events"]) == handled


@pytest.mark.parametrize("text, check", [
    ("", lambda p: p == default_policy()),
    ("paths:\n  changelog: perf/changelog.yaml\n",
     lambda p: p["paths"]["changelog"] == "perf/changelog.yaml" and p["paths"]["codeowners"] == ".github/CODEOWNERS"),
    ("labels:\n  modifiers:\n    evals_only: evals\n",
     lambda p: p["labels"]["modifiers"] == {"all_evals": "all-evals", "evals_only": "evals", "agentx_fast": "agentx-fast"}),
    ("autolabels: []\n", lambda p: p["autolabels"] == []),  # lists replace
    ("labels:\n  primary:\n    - {name: sweep, canary: true, fail_fast: true, recommended: true}\n",
     lambda p: [x["name"] for x in p["labels"]["primary"]] == ["sweep"]),
    ("commands:\n  use: pin\n", lambda p: p["commands"]["use"] == "pin" and p["commands"]["help"] == "help"),
], ids=["empty", "one-path", "one-modifier", "list-replaces", "primary-list", "rename-command"])
def test_overrides_merge_over_defaults(text, check):
    assert check(parse_repo_config(text))


@pytest.mark.parametrize("text, error", [
    ("pathz:\n  changelog: x\n", "pathz: unknown key"),
    ("paths:\n  changelgo: x\n", "paths.changelgo: unknown key"),
    ("paths: just-a-string\n", "paths: expected a mapping"),
    ("paths:\n  benchmark: inferencex-e2e/\n", "paths.benchmark: expected a list"),
    ("paths:\n  changelog: ''\n", "paths.changelog: expected a non-empty string"),
    ("paths:\n  changelog: 12\n", "paths.changelog: expected a non-empty string"),
    ("labels:\n  primary:\n    - {name: a, canary: yes-please, fail_fast: true}\n",
     "labels.primary[0].canary: expected true or false"),
    ("labels:\n  primary:\n    - {name: a, fail_fast: true}\n", "labels.primary[0].canary: required"),
    ("labels:\n  primary:\n    - {name: a, canary: true, fail_fast: true, colour: red}\n",
     "labels.primary[0].colour: unknown key"),
    ("labels:\n  primary: []\n", "at least one primary label"),
    ("labels:\n  modifiers:\n    evals_only: full-sweep-enabled\n", "names used twice: full-sweep-enabled"),
    ("commands:\n  use: USE\n", "commands.use: 'USE' is not a command word"),
    ("commands:\n  use: 使用\n", "commands.use: '使用' is not a command word"),
    ("commands:\n  use: help\n", "commands.help: 'help' is also the name of commands.use"),
    ("autolabels:\n  - {label: x, paths: [a], color: red, description: d}\n", "expected six hex digits"),
    ("autolabels:\n  - {label: x, paths: [], color: ffffff, description: d}\n", "at least one pattern"),
    ("- a\n- b\n", "the file: expected a mapping"),
    ("paths: [unclosed\n", "not valid YAML at line"),
    ("a: &x 1\nb: *x\nc: !!python/object:os.system ls\n", "not valid YAML"),  # safe_load refuses python tags
], ids=lambda v: v if len(v) < 30 else None)
def test_invalid_overrides_are_rejected_with_a_clear_error(text, error):
    with pytest.raises(ConfigError) as raised:
        parse_repo_config(text)
    assert any(error in e for e in raised.value.errors), raised.value.errors


def test_every_problem_is_reported_not_just_the_first():
    with pytest.raises(ConfigError) as raised:
        parse_repo_config("pathz: 1\nworkflows:\n  sweep: ''\n  nightly: x\n")
    assert len(raised.value.errors) == 3


def test_settings_from_env_with_probot_names(tmp_path):
    key = tmp_path / "key.pem"
    key.write_text("-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----\n")
    s = Settings.from_env({"APP_ID": "42", "PRIVATE_KEY_PATH": str(key), "WEBHOOK_SECRET": "old, new",
                           "HOST": "0.0.0.0", "PORT": "8080", "LOG_LEVEL": "debug",
                           "GITHUB_API_URL": "https://ghe.example/api/v3/", "SWEEPBOT_DB": "/tmp/x.db"})
    assert (s.app_id, s.webhook_secrets, s.host, s.port, s.log_level) == ("42", ("old", "new"), "0.0.0.0", 8080,
                                                                         "DEBUG")
    assert s.api_url == "https://ghe.example/api/v3" and s.db_path == "/tmp/x.db" and s.live
    assert "abc" in s.private_key and "abc" not in repr(s) and "new" not in repr(s)


def test_one_line_private_key_gets_its_newlines_back():
    s = Settings.from_env({"APP_ID": "1", "PRIVATE_KEY": "-----BEGIN KEY-----\\nabc\\n-----END KEY-----"})
    assert s.private_key.splitlines() == ["-----BEGIN KEY-----", "abc", "-----END KEY-----"]


def test_no_credentials_means_sandbox():
    s = Settings.from_env({})
    assert not s.live and s.api_url == "https://api.github.com" and s.db_path == "./sweepbot.db"


async def test_live_mode_refuses_to_start_without_a_secret(capsys):
    s = Settings.from_env({"APP_ID": "1", "PRIVATE_KEY": "k"})
    assert await cli.serve(s) == 2
    assert "WEBHOOK_SECRET is not set" in capsys.readouterr().err


def test_check_config_command(tmp_path, capsys):
    good, bad = tmp_path / "good.yml", tmp_path / "bad.yml"
    good.write_text("paths:\n  changelog: perf.yaml\n")
    bad.write_text("paths:\n  changelgo: perf.yaml\n")
    assert cli.main(["check-config", str(good)]) == 0
    assert cli.main(["check-config", str(bad)]) == 1
    out = capsys.readouterr().out
    assert f"{good}: valid" in out and "paths.changelgo: unknown key" in out


def test_manifest_command_prints_json(capsys):
    assert cli.main(["manifest"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["name"] == "sweepbot" and data["hook_attributes"]["url"].endswith("/webhook")


def test_a_dotenv_file_is_read_and_the_environment_wins(tmp_path, monkeypatch):
    """Regression: `.env` in the working directory was ignored (python-dotenv looked beside bot/config.py)."""
    (tmp_path / ".env").write_text("PORT=4567\nSWEEPBOT_DB=from-dotenv.db\n")
    monkeypatch.chdir(tmp_path)
    for name in ("PORT", "SWEEPBOT_DB", "APP_ID", "PRIVATE_KEY", "PRIVATE_KEY_PATH", "WEBHOOK_SECRET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SWEEPBOT_DB", "from-env.db")
    s = Settings.from_env()
    assert (s.port, s.db_path) == (4567, "from-env.db")


def test_manifest_takes_the_webhook_url(capsys):
    assert cli.main(["manifest", "--webhook-url", "https://bot.example.com/webhook"]) == 0
    assert json.loads(capsys.readouterr().out)["hook_attributes"]["url"] == "https://bot.example.com/webhook"
