"""The example sweep workflows (examples/workflows/) keep the contract sweepbot relies on, are valid against
GitHub's workflow schema and are zizmor-clean."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bot.rules.dispatched_runs import dispatch_id_of
from bot.rules.gate import Changelog, ChangelogOutcome, decide
from bot.rules.pins import is_result_artifact
from bot.rules.run_summary import summarize
from test_gate_decision import POLICY, fork_pr, make_pr

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / "examples" / "workflows"
BIN = Path(sys.executable).parent
EXPRESSION = re.compile(r"\$\{\{\s*inputs\.([a-z-]+)\s*\}\}")
CASES = {"run-sweep.yml": make_pr, "e2e-tests.yml": fork_pr}


def workflow(name: str) -> dict:
    # PyYAML reads the key `on` as True (YAML 1.1); GitHub reads it as the string
    data = yaml.safe_load((WORKFLOWS / name).read_text())
    data["on"] = data.pop(True)
    return data


def rendered(text: str, inputs: dict[str, str]) -> str:
    return EXPRESSION.sub(lambda m: inputs[m.group(1)], text)


@pytest.mark.parametrize("name", CASES)
def test_the_inputs_are_exactly_what_the_gate_sends(name):
    start = decide(CASES[name](), POLICY).start
    assert start.workflow == name
    assert set(workflow(name)["on"]["workflow_dispatch"]["inputs"]) == set(start.inputs)
    assert set(workflow(name)["on"]) == {"workflow_dispatch"}  # nothing a fork can trigger


@pytest.mark.parametrize("name", CASES)
def test_the_run_name_carries_the_dispatch_id_the_bot_finds_the_run_by(name):
    start = decide(CASES[name](), POLICY).start
    title = rendered(workflow(name)["run-name"], dict(start.inputs))
    assert dispatch_id_of({"display_title": title, "name": workflow(name)["name"]}) == start.dispatch_id


@pytest.mark.parametrize("name", CASES)
def test_the_run_name_carries_the_summary_tokens_the_reply_shows(name):
    tokens = "model=dsr1 scenario=fixed-seq-len precision=fp4 hardware_framework=mi355x_sglang"
    start = decide(CASES[name](changelog=ChangelogOutcome(Changelog.VALID, summary=tokens)), POLICY).start
    title = rendered(workflow(name)["run-name"], dict(start.inputs))
    summary = summarize({"display_title": title, "run_started_at": "2026-12-01T10:00:00Z"})
    assert summary is not None and summary.text == "dsr1 · fixed-seq-len · fp4 · mi355x_sglang · 2026-12-01"


@pytest.mark.parametrize("name", CASES)
def test_one_run_per_pull_request_and_results_named_for_reuse(name):
    data = workflow(name)
    assert EXPRESSION.findall(data["concurrency"]["group"]) == ["pr-number"]
    assert data["concurrency"]["cancel-in-progress"] is True
    steps = [step for job in data["jobs"].values() for step in job["steps"]]
    uploads = [s["with"]["name"] for s in steps if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert uploads and all(is_result_artifact(n) for n in uploads), uploads


def test_the_fork_workflow_checks_out_only_the_approved_merge_commit():
    steps = [step for job in workflow("e2e-tests.yml")["jobs"].values() for step in job["steps"]]
    checkouts = [s for s in steps if s.get("uses", "").startswith("actions/checkout@")]
    assert checkouts and all(s["with"]["ref"] == "${{ inputs.merge-sha }}" for s in checkouts)
    assert all(s["with"].get("persist-credentials") is False for s in checkouts)


def run_tool(*argv: str) -> subprocess.CompletedProcess:
    tool = BIN / argv[0]
    if not tool.exists():
        pytest.fail(f"{argv[0]} is not installed: it is in the test extra (pip install -e '.[test]')")
    return subprocess.run([str(tool), *argv[1:]], capture_output=True, text=True, timeout=120)


def test_the_examples_are_valid_github_workflows():
    done = run_tool("check-jsonschema", "--builtin-schema", "vendor.github-workflows",
                    *map(str, sorted(WORKFLOWS.glob("*.yml"))))
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_examples_are_zizmor_clean():
    """Template injection, dangerous triggers, unpinned actions, credentials left in checkouts: none."""
    done = run_tool("zizmor", "--offline", "--no-progress", *map(str, sorted(WORKFLOWS.glob("*.yml"))))
    assert done.returncode == 0, done.stdout + done.stderr
