"""`sweepbot init`: a commented `.github/sweepbot.yml` from what a checkout holds, which passes check-config; on
a layout unlike upstream's, on an empty one, and on upstream's own files (tests/data/inferencex)."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from conftest import REAL_DATA

from bot.app import cli, init_config
from bot.core.config import default_policy, parse_repo_config

SWEEP_WORKFLOW = """\
name: bench
on:
  workflow_dispatch:
    inputs:
      pr-number: {required: true, type: string}
      head-sha: {required: true, type: string}
      sweep-label: {required: true, type: string}
      dispatch-id: {required: true, type: string}
jobs:
  full:
    if: inputs.sweep-label == 'bench-full-fail-fast' || "bench-full" == inputs.sweep-label
    runs-on: ubuntu-latest
    steps: [{run: "true"}]
  quick:
    if: ${{ inputs.sweep-label != 'bench-non-canary' }}
    runs-on: ubuntu-latest
    steps: [{run: "true"}]
"""
FORK_WORKFLOW = SWEEP_WORKFLOW.replace(
    "      dispatch-id:", "      merge-sha: {required: true, type: string}\n      dispatch-id:"
)
CHECKLIST = """\
# Review

Fill this in when you approve.

### Sign-off form
```
Reviewed and approved by a code owner:
- [ ] Verified that this PR has passed PR validation (link the run)
- [ ] The numbers look right
```
"""
MASTER = "llama-h100-vllm:\n  runner: h100\n  model: llama\nqwen-b200-trt:\n  runner: b200\n"

# A layout unlike upstream's: the changelog, configs and runners elsewhere and named otherwise, CODEOWNERS at the
# top, the checklist under .github, sweep workflows of other names, an origin on GitHub, `trunk` its default.
OTHER = {
    "README.md": "# gpu-bench\n",
    "CODEOWNERS": "* @acme/perf\n",
    ".github/review-checklist.md": CHECKLIST,
    ".github/workflows/bench.yaml": SWEEP_WORKFLOW,
    ".github/workflows/fork-bench.yaml": FORK_WORKFLOW,
    ".github/workflows/lint.yml": "on: [push]\njobs: {}\n",
    "perf/history/changelog.yml": "- config-keys: [llama-h100-vllm]\n  description: [first]\n",
    "perf/notes/changelog-howto.yaml": "title: not a changelog\n",
    "perf/matrix/h100-master.yml": MASTER,
    "perf/matrix/runners.yml": "labels:\n  h100: [h100_0, h100_1]\n  b200: [b200_0]\n",
    "perf/matrix/defaults.yml": "image: x\n",
    ".git/config": '[core]\n\tbare = false\n[remote "origin"]\n\turl = git@github.com:acme/gpu-bench.git\n',
    ".git/refs/remotes/origin/HEAD": "ref: refs/remotes/origin/trunk\n",
    ".git/changelog.yaml": "- config-keys: [inside-git]\n",
}


def checkout(root: Path, files: dict[str, str]) -> Path:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    return root


def upstream(root: Path) -> Path:
    """Upstream's files where upstream has them (tests/data/inferencex), with the example sweep workflows."""
    places = {
        "perf-changelog.tail.yaml": "inferencex-e2e/perf-changelog.yaml",
        "amd-master.yaml": "inferencex-e2e/configs/amd-master.yaml",
        "nvidia-master.yaml": "inferencex-e2e/configs/nvidia-master.yaml",
        "runners.yaml": "inferencex-e2e/configs/runners.yaml",
        "CODEOWNERS": ".github/CODEOWNERS",
        "PR_REVIEW_CHECKLIST.md": "docs/PR_REVIEW_CHECKLIST.md",
        "PR_REVIEW_CHECKLIST_zh.md": "docs/PR_REVIEW_CHECKLIST_zh.md",
        "README.md": "README.md",
    }
    for source, target in places.items():
        (root / target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REAL_DATA / source, root / target)
    examples = Path(__file__).resolve().parent.parent / "examples" / "workflows"
    (root / ".github" / "workflows").mkdir(parents=True)
    for name in ("run-sweep.yml", "e2e-tests.yml"):
        shutil.copy(examples / name, root / ".github" / "workflows" / name)
    return root


def written(root: Path) -> str:
    return (root / ".github" / "sweepbot.yml").read_text(encoding="utf-8")


DEFAULTS = default_policy()


@pytest.mark.parametrize(
    "layout, repo, expected",
    [
        (
            "other",
            None,
            {
                "paths.changelog": "perf/history/changelog.yml",
                "paths.codeowners": "CODEOWNERS",
                "paths.checklist": ".github/review-checklist.md",
                "paths.master_configs": ["perf/matrix/h100-master.yml"],
                "paths.runners": "perf/matrix/runners.yml",
                "paths.benchmark": ["/perf/"],
                "docs_url": "https://github.com/acme/gpu-bench/blob/trunk/README.md",
                "pr_link_prefix": "https://github.com/acme/gpu-bench/pull/",
                "workflows.sweep": "bench.yaml",
                "workflows.fork_sweep": "fork-bench.yaml",
                "labels.primary": [
                    {"name": "bench-full-fail-fast", "canary": True, "fail_fast": True, "recommended": True},
                    {"name": "bench-full", "canary": True, "fail_fast": False, "recommended": False},
                    {"name": "bench-non-canary", "canary": False, "fail_fast": False, "recommended": False},
                ],
                "results.mode": "none",
                # the template under its own heading, its own phrase, and only the verified item it holds
                "checklist_heading": "### Sign-off form",
                "signoff_phrase": "Reviewed and approved by a code owner",
                "signoff.verified_items": [{"check": "sweep", "contains": "this PR has passed PR validation"}],
            },
        ),
        # --repo wins over the origin remote
        ("other", "acme/bench-fork", {"pr_link_prefix": "https://github.com/acme/bench-fork/pull/"}),
        # nothing to find: every default applies but the results service and the links, which need --repo
        (
            "empty",
            None,
            {
                "paths": DEFAULTS.to_dict()["paths"],
                "docs_url": DEFAULTS.docs_url,
                "pr_link_prefix": DEFAULTS.pr_link_prefix,
                "labels": DEFAULTS.to_dict()["labels"],
                "workflows": DEFAULTS.to_dict()["workflows"],
                "results.mode": "none",
            },
        ),
        # upstream's own files give upstream's defaults back, each found
        (
            "upstream",
            "SemiAnalysisAI/InferenceX",
            {
                "paths": DEFAULTS.to_dict()["paths"],
                "docs_url": DEFAULTS.docs_url,
                "pr_link_prefix": DEFAULTS.pr_link_prefix,
                "workflows": DEFAULTS.to_dict()["workflows"],
                "checklist_heading": DEFAULTS.checklist_heading,
                "signoff_phrase": DEFAULTS.signoff_phrase,
                "signoff": DEFAULTS.to_dict()["signoff"],
            },
        ),
    ],
)
def test_init_writes_what_it_finds_and_the_file_passes_check_config(tmp_path, layout, repo, expected):
    root = {
        "other": lambda: checkout(tmp_path, OTHER),
        "empty": lambda: tmp_path,
        "upstream": lambda: upstream(tmp_path),
    }[layout]()
    out = io.StringIO()
    assert init_config.init_command(str(root), repository=repo, out=out) == 0
    assert "wrote" in out.getvalue()
    check = io.StringIO()
    assert cli.check_config(str(root / ".github" / "sweepbot.yml"), out=check) == 0, check.getvalue()
    policy = parse_repo_config(written(root)).to_dict()
    for key, value in expected.items():
        found = policy
        for step in key.split("."):
            found = found[step]
        assert found == value, key


def test_what_is_not_found_is_named_with_the_default_that_applies(tmp_path):
    init_config.init_command(str(tmp_path))
    text = written(tmp_path)
    assert '# not found (no YAML file named "*changelog*" holds a list of entries with config-keys)' in text
    assert f"  # changelog: {DEFAULTS.paths.changelog}" in text
    assert "no GitHub origin found: give --repo OWNER/NAME" in text
    assert "run-sweep.yml in sweepbot's repository is one to start from" in text


def test_a_file_passed_over_is_named(tmp_path):
    checkout(tmp_path, OTHER)
    init_config.init_command(str(tmp_path))
    assert "# also seen, not taken: perf/notes/changelog-howto.yaml" in written(tmp_path)


def test_an_existing_file_is_kept_unless_forced_and_print_writes_nothing(tmp_path, capsys):
    checkout(tmp_path, {**OTHER, ".github/sweepbot.yml": "# mine\n"})
    assert cli.main(["init", str(tmp_path)]) == 1
    assert written(tmp_path) == "# mine\n" and "exists" in capsys.readouterr().err
    assert cli.main(["init", str(tmp_path), "--print"]) == 0
    assert written(tmp_path) == "# mine\n" and "changelog: perf/history/changelog.yml" in capsys.readouterr().out
    assert cli.main(["init", str(tmp_path), "--force", "--repo", "acme/gpu-bench"]) == 0
    assert "changelog: perf/history/changelog.yml" in written(tmp_path)


@pytest.mark.parametrize("args", [["no-such-dir"], [".", "--repo", "not a repo"]])
def test_an_unusable_checkout_or_repo_is_exit_2(tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["init", *args]) == 2
    assert not (tmp_path / ".github").exists()


@pytest.mark.parametrize(
    "value, expected",
    [
        ("docs/checklist.md", "docs/checklist.md"),
        ("on", '"on"'),
        ("yes", '"yes"'),
        ("12", '"12"'),
        ("a: b", '"a: b"'),
        ("x #y", '"x #y"'),
        ("-lead", '"-lead"'),
        ("https://github.com/a/b/pull/", "https://github.com/a/b/pull/"),
        (True, "true"),
    ],
)
def test_a_value_is_written_as_yaml_reads_it_back(value, expected):
    assert init_config.scalar(value) == expected


def test_the_listing_stops_at_its_cap_and_the_file_says_so(tmp_path, monkeypatch):
    checkout(tmp_path, {f"f{i}.txt": "" for i in range(5)})
    files, truncated = init_config.list_files(tmp_path, limit=3)
    assert len(files) == 3 and truncated
    monkeypatch.setattr(init_config, "MAX_FILES", 3)
    monkeypatch.setattr(init_config, "list_files", lambda root: (files, True))
    init_config.init_command(str(tmp_path))
    assert "more than 3 files" in written(tmp_path)


def test_a_checklist_without_a_template_is_said_and_the_defaults_kept(tmp_path):
    checkout(tmp_path, {"docs/checklist.md": "## Template\n- [ ] not in a fenced block\n"})
    init_config.init_command(str(tmp_path))
    text = written(tmp_path)
    assert "# docs/checklist.md has no heading with a fenced block of checklist items under it" in text
    policy = parse_repo_config(text)
    assert policy.checklist_heading == DEFAULTS.checklist_heading and policy.signoff == DEFAULTS.signoff
