"""Policy: defaults from app.yaml, repository overrides deep-merged and validated, environment settings, CLI checks."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bot.app import cli
from bot.core.config import (
    DEFAULT_DB,
    ConfigError,
    Settings,
    default_policy,
    load_app_yaml,
    parse_repo_config,
    policy_defaults,
)

SPEC_NAMES = [
    "inferencex-e2e/perf-changelog.yaml",
    ".github/CODEOWNERS",
    "docs/PR_REVIEW_CHECKLIST.md",
    "run-sweep.yml",
    "e2e-tests.yml",
    "SemiAnalysisAI/InferenceX-app",
    "https://github.com/SemiAnalysisAI/InferenceX/pull/",
    "full-sweep-fail-fast",
    "full-sweep-enabled",
    "non-canary-full-sweep-enabled",
    "all-evals",
    "evals-only",
    "agentx-fast",
    "use",
    "reuse-sweep-run",
    "stage-results",
    "[skip-sweep]",
]


def test_defaults_hold_every_name_from_the_spec():
    text = json.dumps(default_policy().to_dict())
    missing = [name for name in SPEC_NAMES if json.dumps(name) not in text and name not in text]
    assert missing == []


def test_manifest_asks_only_for_what_the_bot_uses():
    manifest = load_app_yaml()["manifest"]
    # contents write only because GitHub requires it for a repository_dispatch to the results service; the
    # bot never pushes code (test_no_write_touches_code)
    assert manifest["default_permissions"] == {
        "contents": "write",
        "pull_requests": "write",
        "issues": "write",
        "actions": "write",
        "checks": "write",
        "metadata": "read",
        "members": "read",
    }  # an organization permission: CODEOWNERS teams
    # every subscribed event has a handler, and every handled event is subscribed
    from handlers.registry import router

    handled = set(router._shallow_routes) | set(router._deep_routes)
    assert set(manifest["default_events"]) == handled


def test_no_write_touches_code():
    """contents: write is granted for repository_dispatch only: no write of the bot names a file, ref or blob."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    writes = re.compile(r"\.(post|put|patch|delete)\(\s*f?[\"'][^\"']*(/contents/|/git/)")
    found = [
        f"{path.name}: {m.group(0)}"
        for folder in ("bot", "handlers")
        for path in (root / folder).glob("*.py")
        for m in writes.finditer(path.read_text())
    ]
    assert found == []
    assert writes.search('await gh.put(f"/repos/{repo}/contents/x"') is not None  # the check is not vacuous


@pytest.mark.parametrize(
    "text, check",
    [
        ("", lambda p: p == default_policy()),
        (
            "paths:\n  changelog: perf/changelog.yaml\n",
            lambda p: p.paths.changelog == "perf/changelog.yaml" and p.paths.codeowners == ".github/CODEOWNERS",
        ),
        (
            "labels:\n  modifiers:\n    evals_only: evals\n",
            lambda p: (
                p.labels.modifiers.names()
                == {"all_evals": "all-evals", "evals_only": "evals", "agentx_fast": "agentx-fast"}
            ),
        ),
        ("autolabels: []\n", lambda p: p.autolabels == ()),  # lists replace
        (
            "labels:\n  primary:\n    - {name: sweep, canary: true, fail_fast: true, recommended: true}\n",
            lambda p: [x.name for x in p.labels.primary] == ["sweep"],
        ),
        ("commands:\n  use: pin\n", lambda p: p.commands.use == "pin" and p.commands.help == "help"),
    ],
    ids=["empty", "one-path", "one-modifier", "list-replaces", "primary-list", "rename-command"],
)
def test_overrides_merge_over_defaults(text, check):
    assert check(parse_repo_config(text))


def messages(errors: list[str]) -> list[str]:
    """The errors without their ` (line N)` (the lines have tests of their own: test_errors_name_their_line)."""
    return [re.sub(r" \(line \d+\)$", "", error) for error in errors]


NOT_A_WORD = "is not a command word: a lower-case ASCII letter, then lower-case ASCII letters, digits or dashes"


@pytest.mark.parametrize(
    "text, errors",
    [
        ("pathz:\n  changelog: x\n", ["pathz: unknown key"]),
        ("paths:\n  changelgo: x\n", ["paths.changelgo: unknown key"]),
        ("paths: just-a-string\n", ["paths: expected a mapping, got a string"]),
        ("paths:\n  benchmark: inferencex-e2e/\n", ["paths.benchmark: expected a list, got a string"]),
        (
            "stale_branch:\n  pin_keeps: ['*.md', '!']\n  revert_refused: ['# recipes']\n",
            [
                "stale_branch.revert_refused[0]: '# recipes' is a comment in gitignore syntax and matches no file",
                "stale_branch.pin_keeps[1]: '!' is not a gitignore pattern (Invalid git pattern: '!')",
            ],
        ),
        (
            "stale_branch:\n  reverted_files: block\n",
            ["stale_branch.reverted_files: expected one of 'off', 'warn' or 'refuse', got 'block'"],
        ),
        ("stale_branch:\n  history_depth: 11\n", ["stale_branch.history_depth: expected at most 10, got 11"]),
        ("paths:\n  changelog: ''\n", ["paths.changelog: expected a non-empty string, got a string"]),
        ("paths:\n  changelog: 12\n", ["paths.changelog: expected a non-empty string, got a number"]),
        (
            "labels:\n  primary:\n    - {name: a, canary: yes-please, fail_fast: true, recommended: true}\n",
            ["labels.primary[0].canary: expected true or false, got a string"],
        ),
        (
            "labels:\n  primary:\n    - {name: a, fail_fast: true, recommended: true}\n",
            ["labels.primary[0].canary: required"],
        ),
        (
            "labels:\n  primary:\n    - {name: a, canary: true, fail_fast: true, recommended: true, colour: red}\n",
            ["labels.primary[0].colour: unknown key"],
        ),
        ("labels:\n  primary: []\n", ["labels.primary: at least one primary label is required"]),
        (
            "labels:\n  modifiers:\n    evals_only: full-sweep-enabled\n",
            ["labels.modifiers.evals_only: 'full-sweep-enabled' is also the label of labels.primary[1].name"],
        ),
        ("commands:\n  use: USE\n", [f"commands.use: 'USE' {NOT_A_WORD}"]),
        ("commands:\n  use: help\n", ["commands.help: 'help' is also the name of commands.use"]),
        (
            "autolabels:\n  - {label: x, paths: [a], color: red, description: d}\n",
            ["autolabels[0].color: expected six hex digits, got 'red'"],
        ),
        (
            "autolabels:\n  - {label: x, paths: [], color: ffffff, description: d}\n",
            ["autolabels[0].paths: at least one pattern is required"],
        ),
        ("- a\n- b\n", ["the file: expected a mapping, got a list"]),
        ("paths: [unclosed\n", ["not valid YAML at line 2, column 1: expected ',' or ']', but got '<stream end>'"]),
        (
            "a: &x 1\nb: *x\nc: !!python/object:os.system ls\n",  # safe_load refuses python tags
            [
                "not valid YAML at line 3, column 4: could not determine a constructor for the tag "
                "'tag:yaml.org,2002:python/object:os.system'"
            ],
        ),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 30 else None,
)
def test_invalid_overrides_are_rejected_with_a_clear_error(text, errors):
    """Regression: errors were matched by substring, so a case passed on an error it did not name (the
    primary-label cases also lacked `recommended` and passed with a second, unlisted error)."""
    with pytest.raises(ConfigError) as raised:
        parse_repo_config(text)
    assert messages(raised.value.errors) == errors


@pytest.mark.parametrize(
    "text, errors",
    [
        ("paths:\n  changelog: a\n  changelog: b\n", ["paths.changelog: duplicate key at line 3 (first at line 2)"]),
        ("paths:\n  changelog: a\npaths:\n  codeowners: b\n", ["paths: duplicate key at line 3 (first at line 1)"]),
        (
            "autolabels:\n  - {label: x, label: y, paths: [a], color: ffffff, description: d}\n",
            ["autolabels[0].label: duplicate key at line 2 (first at line 2)"],
        ),
        ("commands:\n  use: pin\n\n  use: pin\n", ["commands.use: duplicate key at line 4 (first at line 2)"]),
    ],
    ids=["scalar", "mapping", "flow-mapping", "same-value"],
)
def test_a_duplicate_key_is_an_error_at_its_line(text, errors):
    """Regression: a key given twice was accepted silently, YAML keeping the last one."""
    with pytest.raises(ConfigError) as raised:
        parse_repo_config(text)
    assert raised.value.errors == errors and [e.hint for e in raised.value.errors] == ["duplicate-key"]


@pytest.mark.parametrize(
    "text, line",
    [
        ("paths:\n  benchmark: [a]\n\n  changelgo: x\n", 4),  # the key itself
        ("autolabels:\n  - label: x\n    paths: []\n    color: ffffff\n    description: d\n", 3),  # a list item's key
        (
            "labels:\n  primary:\n    - {name: a, canary: true, fail_fast: true, recommended: true}\n"
            "    - {name: b, fail_fast: true, recommended: false}\n",
            4,
        ),  # a missing key: the item's line
        ("commands:\n  use: help\n", 1),  # commands.help is the default's: the nearest key the file has
        ("- a\n", None),  # the file itself
    ],
)
def test_errors_name_their_line(text, line):
    with pytest.raises(ConfigError) as raised:
        parse_repo_config(text)
    [error] = raised.value.errors
    assert error.line == line and error.endswith(f" (line {line})" if line else "got a list")


@pytest.mark.parametrize(
    "text, hint, params",
    [
        ("policy:\n  paths:\n    changelog: x\n", "app-yaml-policy", {}),
        ("manifest:\n  name: x\n", "app-yaml-manifest", {}),
        (
            "paths:\n  changelgo: x\n",
            "unknown-key",
            {
                "suggestion": "changelog",
                "allowed": ["changelog", "codeowners", "checklist", "benchmark", "master_configs", "runners"],
            },
        ),
        (
            "limits:\n  comments: 3\n",
            "unknown-key",
            {"suggestion": None, "allowed": ["changelog_bytes", "changelog_errors"]},
        ),
        (
            "signoff:\n  judge:\n    sender: [x]\n",
            "unknown-key",
            {"suggestion": "senders", "allowed": ["enabled", "workflow", "senders"]},
        ),
    ],
    ids=["copied-policy-root", "copied-manifest", "typo", "no-such-key", "nested"],
)
def test_unknown_keys_come_with_a_hint(text, hint, params):
    with pytest.raises(ConfigError) as raised:
        parse_repo_config(text)
    [error] = raised.value.errors
    assert (error.hint, error.hint_params) == (hint, params)


def test_check_config_says_to_drop_a_copied_policy_level(tmp_path, capsys):
    """Regression: a file copied from app.yaml's `policy:` root got only "policy: unknown key"."""
    copied = tmp_path / "sweepbot.yml"
    copied.write_text("policy:\n  paths:\n    changelog: perf.yaml\n")
    assert cli.main(["check-config", str(copied)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{copied}: invalid",
        "  - policy: unknown key (line 1)",
        "    hint: This file holds only what goes under app.yaml's `policy:`: drop the `policy:` line and move the"
        " keys under it one level left.",
    ]


def test_every_problem_is_reported_not_just_the_first():
    with pytest.raises(ConfigError) as raised:
        parse_repo_config("pathz: 1\nworkflows:\n  sweep: ''\n  nightly: x\n")
    assert messages(raised.value.errors) == [
        "pathz: unknown key",
        "workflows.sweep: expected a non-empty string, got a string",
        "workflows.nightly: unknown key",
    ]


# ---- rules across keys: command names, sweep labels, automatic labels, GitHub's label limits -----------------


def autolabels(*rules: str) -> str:
    """An `autolabels:` override from flow mappings that give only what differs from a valid rule."""
    lines = ["autolabels:"]
    for rule in rules:
        fields = {"label": "x", "paths": "[a]", "color": "ffffff", "description": "d"}
        for part in filter(None, (piece.strip() for piece in rule.split(";"))):
            key, _, value = part.partition("=")
            fields[key] = value
        lines.append("  - {" + ", ".join(f"{key}: {value}" for key, value in fields.items()) + "}")
    return "\n".join(lines) + "\n"


SWEEP = "sweeps are approved by maintainers, not by path rules"
ONE_RULE = "one rule per label: put all its paths in one rule"
IGNORES_CASE = "GitHub label names ignore case"
L50, L51 = "a" * 50, "a" * 51
SEMANTIC_CASES = [
    # command names (the registry's check)
    ("commands:\n  use: 使用\n", [f"commands.use: '使用' {NOT_A_WORD}"], "non-ascii-command"),
    (
        "commands:\n  reuse: Use-Run\n  stage: x_y\n",
        [f"commands.reuse: 'Use-Run' {NOT_A_WORD}", f"commands.stage: 'x_y' {NOT_A_WORD}"],
        "two-bad-commands",
    ),
    ("commands:\n  deploy: deploy\n", ["commands.deploy: unknown key"], "unknown-command-kind"),
    ("commands:\n  use: pin-2\n", [], "valid-command-rename"),
    # an automatic label may not be a sweep label, compared without case
    (
        autolabels("label=full-sweep-enabled"),
        [f"autolabels[0].label: 'full-sweep-enabled' is a sweep label (labels.primary[1].name); {SWEEP}"],
        "primary",
    ),
    (
        autolabels("", "label=Evals-Only"),
        [f"autolabels[1].label: 'Evals-Only' is a sweep label (labels.modifiers.evals_only); {SWEEP}"],
        "modifier-other-case",
    ),
    (
        "labels:\n  primary:\n    - {name: sweep, canary: true, fail_fast: true, recommended: true}\n"
        + autolabels("label=SWEEP", "label=full-sweep-enabled"),
        [f"autolabels[0].label: 'SWEEP' is a sweep label (labels.primary[0].name); {SWEEP}"],
        "the-repositorys-own-primaries-count-not-the-defaults",
    ),
    # one label, one rule
    (
        autolabels("label=amd", "label=nvidia", "label=amd;paths=[b]"),
        [f"autolabels[2].label: 'amd' is also given by autolabels[0]; {ONE_RULE}"],
        "label-given-twice",
    ),
    (
        autolabels("label=amd", "label=AMD"),
        [f"autolabels[1].label: 'AMD' is also given by autolabels[0] ('amd': {IGNORES_CASE}); {ONE_RULE}"],
        "label-given-twice-other-case",
    ),
    (
        autolabels("label=amd", "label=amd", "label=amd"),
        [
            f"autolabels[1].label: 'amd' is also given by autolabels[0]; {ONE_RULE}",
            f"autolabels[2].label: 'amd' is also given by autolabels[0]; {ONE_RULE}",
        ],
        "label-given-three-times",
    ),
    # sweep labels are distinct, compared without case
    (
        "labels:\n  modifiers:\n    all_evals: Full-Sweep-Fail-Fast\n",
        [
            "labels.modifiers.all_evals: 'Full-Sweep-Fail-Fast' is also the label of labels.primary[0].name"
            f" ('full-sweep-fail-fast': {IGNORES_CASE})"
        ],
        "modifier-equals-primary-other-case",
    ),
    (
        "labels:\n  primary:\n    - {name: s, canary: true, fail_fast: true, recommended: true}\n"
        "    - {name: s, canary: false, fail_fast: false, recommended: false}\n",
        ["labels.primary[1].name: 's' is also the label of labels.primary[0].name"],
        "two-primaries-one-name",
    ),
    (
        "labels:\n  primary:\n    - {name: s, canary: true, fail_fast: true, recommended: true}\n"
        "    - {name: S, canary: false, fail_fast: false, recommended: true}\n",
        [
            "labels.primary: at most one label can be recommended",
            f"labels.primary[1].name: 'S' is also the label of labels.primary[0].name ('s': {IGNORES_CASE})",
        ],
        "two-recommended-and-one-name",
    ),
    (
        "labels:\n  modifiers:\n    evals_only: full-sweep-enabled\n" + autolabels("label=full-sweep-enabled"),
        [
            "labels.modifiers.evals_only: 'full-sweep-enabled' is also the label of labels.primary[1].name",
            f"autolabels[0].label: 'full-sweep-enabled' is a sweep label (labels.primary[1].name); {SWEEP}",
        ],
        "autolabel-names-a-sweep-label-given-twice",
    ),
    # GitHub's limits: names at most 50 characters, descriptions at most 100
    (autolabels(f"label={L50}"), [], "autolabel-name-50"),
    (autolabels(f"label={L51}"), ["autolabels[0].label: 51 characters; GitHub allows at most 50"], "autolabel-name-51"),
    (autolabels("description=" + "d" * 100), [], "description-100"),
    (
        autolabels("description=" + "d" * 101),
        ["autolabels[0].description: 101 characters; GitHub allows at most 100"],
        "description-101",
    ),
    (
        f"labels:\n  primary:\n    - {{name: {L51}, canary: true, fail_fast: true, recommended: true}}\n",
        ["labels.primary[0].name: 51 characters; GitHub allows at most 50"],
        "primary-name-51",
    ),
    (
        f"labels:\n  primary:\n    - {{name: {L50}, canary: true, fail_fast: true, recommended: true}}\n",
        [],
        "primary-name-50",
    ),
    (
        f"labels:\n  modifiers:\n    agentx_fast: {L51}\n",
        ["labels.modifiers.agentx_fast: 51 characters; GitHub allows at most 50"],
        "modifier-name-51",
    ),
    (f"labels:\n  modifiers:\n    agentx_fast: {L50}\n", [], "modifier-name-50"),
    # colours: exactly six hex digits
    (autolabels("color=ED1C24"), [], "colour-upper-case"),
    (autolabels("color='#ed1c24'"), ["autolabels[0].color: expected six hex digits, got '#ed1c24'"], "colour-hash"),
    (autolabels("color=ed1c2"), ["autolabels[0].color: expected six hex digits, got 'ed1c2'"], "colour-five"),
    (autolabels("color=gggggg"), ["autolabels[0].color: expected six hex digits, got 'gggggg'"], "colour-not-hex"),
    (autolabels("color=ffffff0"), ["autolabels[0].color: expected six hex digits, got 'ffffff0'"], "colour-seven"),
    # the board's label and title, as GitHub limits them
    (f"board:\n  label: {L50}\n  title: {'t' * 256}\n", [], "board-at-the-limits"),
    (
        f"board:\n  label: {L51}\n  title: {'t' * 257}\n",
        [
            f"board.label: '{L51}' is longer than GitHub's 50 characters",
            "board.title: longer than GitHub's 256 characters",
        ],
        "board-past-the-limits",
    ),
]


@pytest.mark.parametrize("text, errors", [pytest.param(t, e, id=i) for t, e, i in SEMANTIC_CASES])
def test_rules_across_keys(text, errors):
    if not errors:
        parse_repo_config(text)
        return
    with pytest.raises(ConfigError) as raised:
        parse_repo_config(text)
    assert messages(raised.value.errors) == errors


BAD_FILE = """\
labels:
  modifiers:
    evals_only: Full-Sweep-Enabled
commands:
  use: 使用
  stage: help
autolabels:
  - {{label: amd, paths: [a], color: ed1c24, description: AMD}}
  - {{label: AMD, paths: [b], color: '#76b900', description: AMD too}}
  - {{label: all-evals, paths: [c], color: 0e8a16, description: {}}}
  - {{label: {}, paths: [], color: 0e8a16, description: d}}
""".format("d" * 101, "l" * 51)
BAD_FILE_ERRORS = [
    f"labels.modifiers.evals_only: 'Full-Sweep-Enabled' is also the label of labels.primary[1].name"
    f" ('full-sweep-enabled': {IGNORES_CASE})",
    f"commands.use: '使用' {NOT_A_WORD}",
    "commands.help: 'help' is also the name of commands.stage",
    f"autolabels[1].label: 'AMD' is also given by autolabels[0] ('amd': {IGNORES_CASE}); {ONE_RULE}",
    "autolabels[1].color: expected six hex digits, got '#76b900'",
    f"autolabels[2].label: 'all-evals' is a sweep label (labels.modifiers.all_evals); {SWEEP}",
    "autolabels[2].description: 101 characters; GitHub allows at most 100",
    "autolabels[3].label: 51 characters; GitHub allows at most 50",
    "autolabels[3].paths: at least one pattern is required",
]


def test_every_rule_across_keys_is_reported_at_once():
    with pytest.raises(ConfigError) as raised:
        parse_repo_config(BAD_FILE)
    assert messages(raised.value.errors) == BAD_FILE_ERRORS


def test_settings_from_env_with_probot_names(tmp_path):
    key = tmp_path / "key.pem"
    key.write_text("-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----\n")
    s = Settings.from_env(
        {
            "APP_ID": "42",
            "PRIVATE_KEY_PATH": str(key),
            "WEBHOOK_SECRET": "old, new",
            "HOST": "0.0.0.0",
            "PORT": "8080",
            "LOG_LEVEL": "debug",
            "GITHUB_API_URL": "https://ghe.example/api/v3/",
            "SWEEPBOT_DB": "/tmp/x.db",
        }
    )
    assert (s.app_id, s.webhook_secrets, s.host, s.port, s.log_level) == (
        "42",
        ("old", "new"),
        "0.0.0.0",
        8080,
        "DEBUG",
    )
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
    assert capsys.readouterr().err == (
        "sweepbot: cannot start live: WEBHOOK_SECRET is not set: refusing to accept unsigned webhooks\n"
    )


def test_check_config_command(tmp_path, capsys):
    good, bad = tmp_path / "good.yml", tmp_path / "bad.yml"
    good.write_text("paths:\n  changelog: perf.yaml\n")
    bad.write_text("paths:\n  changelgo: perf.yaml\n")
    assert cli.main(["check-config", str(good)]) == 0
    assert capsys.readouterr().out == f"{good}: valid\n"
    assert cli.main(["check-config", str(bad)]) == 1
    assert capsys.readouterr().out == (
        f"{bad}: invalid\n  - paths.changelgo: unknown key (line 2)\n"
        "    hint: Did you mean `changelog`? The keys allowed here: `changelog`,"
        " `codeowners`, `checklist`, `benchmark`, `master_configs`, `runners`.\n"
    )


def test_the_sweepbot_command_lists_every_error_of_a_bad_file(tmp_path):
    """`sweepbot check-config FILE`, the installed console script, run as a process."""
    bad = tmp_path / "sweepbot.yml"
    bad.write_text(BAD_FILE, encoding="utf-8")
    script = Path(sys.executable).with_name("sweepbot")
    done = subprocess.run(
        [str(script), "check-config", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )
    assert (done.returncode, done.stderr) == (1, "")
    with pytest.raises(ConfigError) as raised:
        parse_repo_config(BAD_FILE)
    assert messages(raised.value.errors) == BAD_FILE_ERRORS
    assert done.stdout.splitlines() == [f"{bad}: invalid", *(f"  - {error}" for error in raised.value.errors)]


def test_manifest_command_prints_json(capsys):
    assert cli.main(["manifest"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["name"] == "sweepbot" and data["hook_attributes"]["url"].endswith("/webhook")


def test_a_dotenv_file_is_read_and_the_environment_wins(tmp_path, monkeypatch):
    """Regression: `.env` in the working directory was ignored (python-dotenv looked beside bot/core/config.py)."""
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


# ---- settings from the environment: each bad value is one line naming the variable, exit 2, no traceback -----

SECONDS_ABOVE_0 = "a number of seconds above 0 and below 3600"
BAD_SETTINGS = [
    ("PORT", "abc", "a TCP port, a whole number from 1 to 65535"),
    ("PORT", "0", "a TCP port, a whole number from 1 to 65535"),
    ("PORT", "70000", "a TCP port, a whole number from 1 to 65535"),
    ("PORT", "80.5", "a TCP port, a whole number from 1 to 65535"),
    ("SWEEPBOT_WORKERS", "x", "a whole number of workers, 0 or more (0: journal only)"),
    ("SWEEPBOT_WORKERS", "-1", "a whole number of workers, 0 or more (0: journal only)"),
    ("SWEEPBOT_GITHUB_IN_FLIGHT", "0", "a whole number of requests from 1 to 100 (GitHub allows 100 at once)"),
    ("SWEEPBOT_GITHUB_IN_FLIGHT", "101", "a whole number of requests from 1 to 100 (GitHub allows 100 at once)"),
    ("SWEEPBOT_WRITES_PER_MINUTE", "lots", "a whole number of writes, 0 or more (0: unpaced)"),
    ("SWEEPBOT_HTTP_TIMEOUT", "10s", SECONDS_ABOVE_0),
    ("SWEEPBOT_HTTP_TIMEOUT", "0", SECONDS_ABOVE_0),
    ("SWEEPBOT_HTTP_TIMEOUT", "nan", SECONDS_ABOVE_0),
    ("SWEEPBOT_LEASE_SECONDS", "3600", SECONDS_ABOVE_0),
    ("SWEEPBOT_SETTLE_SECONDS", "-1", "a number of seconds 0 or more and below 3600"),
    ("SWEEPBOT_DB", "mysql://u:pw@db/x", "a file path (SQLite) or a postgresql:// or postgres:// URL"),
    ("LOG_LEVEL", "verbose", "one of DEBUG, INFO, WARNING, ERROR (any case)"),
    ("SWEEPBOT_WORKER_PROCESS", "maybe", "1 or 0 (also true/false, yes/no, on/off)"),
    (
        "GITHUB_API_URL",
        "api.github.com",
        "an http:// or https:// URL of GitHub's REST API, e.g."
        " https://api.github.com or https://HOST/api/v3 for GitHub Enterprise Server",
    ),
    (
        "GITHUB_API_URL",
        "ftp://ghe.example/api/v3",
        "an http:// or https:// URL of GitHub's REST API, e.g."
        " https://api.github.com or https://HOST/api/v3 for GitHub Enterprise Server",
    ),
]
SETTINGS_VARIABLES = sorted(
    {variable for variable, _, _ in BAD_SETTINGS}
    | {"APP_ID", "PRIVATE_KEY", "PRIVATE_KEY_PATH", "WEBHOOK_SECRET", "SWEEPBOT_DB", "HOST"}
)


@pytest.fixture
def clean_env(tmp_path, monkeypatch):
    """No .env in the working directory and none of the bot's variables set."""
    monkeypatch.chdir(tmp_path)
    for name in SETTINGS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SWEEPBOT_DB", str(tmp_path / "j.db"))
    return monkeypatch


@pytest.mark.parametrize("variable, raw, accepted", BAD_SETTINGS, ids=[f"{v}={r}" for v, r, _ in BAD_SETTINGS])
def test_serve_refuses_a_bad_setting_in_one_line(variable, raw, accepted, clean_env, capsys):
    """Regression: `PORT=abc` or `SWEEPBOT_WORKERS=x` ended `sweepbot serve` in a ValueError traceback."""
    clean_env.setenv(variable, raw)
    assert cli.main(["serve"]) == 2
    shown = "a mysql:// URL" if variable == "SWEEPBOT_DB" else repr(raw)  # a URL's password is never shown
    assert capsys.readouterr().err == f"sweepbot: {variable} must be {accepted}, got {shown}\n"


def test_every_bad_setting_is_named_at_once(clean_env, capsys):
    clean_env.setenv("PORT", "abc")
    clean_env.setenv("SWEEPBOT_WORKERS", "x")
    assert cli.main(["serve"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "sweepbot: PORT must be a TCP port, a whole number from 1 to 65535, got 'abc'",
        "sweepbot: SWEEPBOT_WORKERS must be a whole number of workers, 0 or more (0: journal only), got 'x'",
    ]


def test_an_unreadable_private_key_path_is_one_line(clean_env, tmp_path, capsys):
    """Regression: a PRIVATE_KEY_PATH that does not exist ended in a FileNotFoundError traceback."""
    clean_env.setenv("APP_ID", "1")
    clean_env.setenv("PRIVATE_KEY_PATH", str(tmp_path / "missing.pem"))
    assert cli.main(["serve"]) == 2
    assert capsys.readouterr().err == (
        f"sweepbot: PRIVATE_KEY_PATH must be a readable PEM file, got"
        f" {str(tmp_path / 'missing.pem')!r} (No such file or directory)\n"
    )


@pytest.mark.parametrize(
    "env, field, expected",
    [
        ({"PORT": " 8080 "}, "port", 8080),
        ({"PORT": ""}, "port", 3000),
        ({"SWEEPBOT_WORKERS": "0"}, "workers", 0),
        ({"SWEEPBOT_HTTP_TIMEOUT": "2.5"}, "http_timeout", 2.5),
        ({"SWEEPBOT_SETTLE_SECONDS": "0"}, "settle_seconds", 0),
        ({"LOG_LEVEL": "warning"}, "log_level", "WARNING"),
        ({}, "log_level", None),
        ({"GITHUB_API_URL": "http://127.0.0.1:9/"}, "api_url", "http://127.0.0.1:9"),
        ({"SWEEPBOT_DB": "postgres://u@db/x"}, "db_path", "postgres://u@db/x"),
        ({"SWEEPBOT_DB": ""}, "db_path", DEFAULT_DB),
        ({}, "worker_process", True),
        ({"SWEEPBOT_WORKER_PROCESS": " Off "}, "worker_process", False),
        ({"SWEEPBOT_WORKER_PROCESS": "yes"}, "worker_process", True),
    ],
    ids=[
        "port-padded",
        "port-blank",
        "no-workers",
        "timeout-fraction",
        "settle-zero",
        "level-any-case",
        "level-unset",
        "api-loopback",
        "postgres-url",
        "db-blank",
        "apart-by-default",
        "apart-off",
        "apart-yes",
    ],
)
def test_good_settings_are_read(env, field, expected):
    assert getattr(Settings.from_env(env, dotenv=False), field) == expected


@pytest.mark.parametrize("env, level", [({}, "WARNING"), ({"APP_ID": "1"}, "INFO"), ({"LOG_LEVEL": "error"}, "ERROR")])
def test_the_log_level_defaults_by_mode(env, level):
    assert Settings.from_env(env, dotenv=False).logging_level() == level


def test_the_sweepbot_command_exits_2_on_a_bad_setting(tmp_path):
    """`sweepbot serve` run as a process: exit 2 and one line on stderr, no traceback."""
    script = Path(sys.executable).with_name("sweepbot")
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS_VARIABLES}
    done = subprocess.run(
        [str(script), "serve"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**env, "PORT": "abc", "SWEEPBOT_DB": str(tmp_path / "j.db")},
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "sweepbot: PORT must be a TCP port, a whole number from 1 to 65535, got 'abc'\n"


# ---- examples/sweepbot.yml: every key a repository may set, with its default ------------------------------

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "sweepbot.yml"


def key_paths(value: object, where: str = "") -> set[str]:
    """The mapping keys of `value`, as dotted paths (lists are values: they replace whole)."""
    if not isinstance(value, dict):
        return set()
    return set().union(*({f"{where}{key}"} | key_paths(sub, f"{where}{key}.") for key, sub in value.items()))


def test_the_example_config_is_accepted_by_check_config(capsys):
    assert cli.main(["check-config", str(EXAMPLE)]) == 0
    assert capsys.readouterr().out == f"{EXAMPLE}: valid\n"


def test_the_example_config_sets_every_key_to_its_default():
    """examples/sweepbot.yml names every key a repository may set, so a new key in app.yaml needs its line there."""
    import yaml

    example = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    assert key_paths(example) == key_paths(policy_defaults())
    assert parse_repo_config(EXAMPLE.read_bytes()) == default_policy()


def test_nested_aliases_are_walked_once():
    """Regression (introduced and fixed with the line numbers): the walk that finds each key's line followed every
    alias, so twelve levels of ten aliases each (a few hundred bytes) meant 10**12 visits."""
    levels = ["a0: &a0 {k: v}"] + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 12)]
    with pytest.raises(ConfigError) as raised:
        parse_repo_config("\n".join(levels) + "\n")
    assert messages(raised.value.errors)[:2] == ["a0: unknown key", "a1: unknown key"]
