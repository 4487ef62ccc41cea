"""The example workflows (examples/workflows/: the two sweeps and the sign-off judge) keep the contract sweepbot
relies on, are valid against GitHub's workflow schema and are zizmor-clean."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from test_gate_decision import POLICY, fork_pr, make_pr

from bot.core.config import default_policy
from bot.rules.dispatched_runs import dispatch_id_of
from bot.rules.gate import Changelog, ChangelogOutcome, decide
from bot.rules.message_schemas import validator
from bot.rules.pins import is_result_artifact
from bot.rules.run_summary import summarize
from bot.rules.signoff import Signoff, judge_result
from handlers.signoff import JUDGE_INPUTS, judge_dispatch

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / "examples" / "workflows"
BIN = Path(sys.executable).parent
EXPRESSION = re.compile(r"\$\{\{\s*inputs\.([a-z-]+)\s*\}\}")
CASES = {"run-sweep.yml": make_pr, "e2e-tests.yml": fork_pr}
JUDGE = "signoff-judge.yml"
ANY_EXPRESSION = re.compile(r"\$\{\{\s*([^}]*?)\s*\}\}")


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


# -- the sign-off judge --------------------------------------------------------------------------------------


def judge_start():
    """What the bot dispatches the judge with (handlers/signoff.py), for a review comment's sign-off."""
    ctx = SimpleNamespace(policy=default_policy(), default_branch="main")  # its judge workflow is JUDGE
    posted = Signoff("review-comment", 2233445566, "maintainer-1", "signed off", "https://github.com/o/r/pull/1")
    return judge_dispatch(ctx, 1234, "3f786850e387550fdab836ed7e6dc881de23001b", posted)


def test_the_judge_takes_exactly_the_inputs_the_bot_sends():
    data = workflow(JUDGE)
    assert yaml.safe_load((ROOT / "app.yaml").read_text())["policy"]["signoff"]["judge"]["workflow"] == JUDGE
    assert tuple(data["on"]["workflow_dispatch"]["inputs"]) == JUDGE_INPUTS == tuple(judge_start().inputs)
    assert all(
        i["required"] is True and i["type"] == "string" for i in data["on"]["workflow_dispatch"]["inputs"].values()
    )
    assert set(data["on"]) == {"workflow_dispatch"}  # nothing a fork can trigger


def test_the_judge_run_name_carries_the_dispatch_id_the_bot_finds_the_run_by():
    start = judge_start()
    title = rendered(workflow(JUDGE)["run-name"], dict(start.inputs))
    assert start.dispatch_id in title.split()  # bot/effects/executor.py find_run looks for it in the run's title


def test_the_judge_holds_no_permission_and_no_secret_beyond_what_each_job_needs():
    data = workflow(JUDGE)
    text = (WORKFLOWS / JUDGE).read_text()
    assert data["permissions"] == {} and "secrets." not in text
    assert data["jobs"]["answer"]["permissions"] == {"contents": "write"}  # repository_dispatch, nothing else
    assert set(data["jobs"]["judge"]["permissions"].values()) == {"read"}
    assert not any("uses" in step for step in data["jobs"]["answer"]["steps"])  # the write token meets no action
    steps = [step for job in data["jobs"].values() for step in job["steps"]]
    assert all(not ANY_EXPRESSION.search(step.get("run", "")) for step in steps)  # inputs come through env only
    checkouts = [s for s in steps if s.get("uses", "").startswith("actions/checkout@")]
    assert checkouts and all(s["with"]["persist-credentials"] is False for s in checkouts)


def test_the_judge_answer_is_a_valid_signoff_judged_the_bot_accepts(tmp_path):
    """The answer step run as it is written, with a stand-in `gh` that keeps what it would send: what it sends
    is valid against the schema, and judge_result takes it as the answer to this very dispatch."""
    start = judge_start()
    summary = 'Judged: "ok" $(touch pwned) `id` ' + "x" * 3000
    values = {
        **{f"inputs.{k}": v for k, v in start.inputs.items()},
        "github.token": "token",
        "needs.judge.outputs.verdict": "fail",
        "needs.judge.outputs.summary": summary,
        "github.server_url": "https://github.com",
        "github.repository": "acme/bench",
        "github.run_id": "987",
    }
    (step,) = workflow(JUDGE)["jobs"]["answer"]["steps"]
    env = {key: ANY_EXPRESSION.sub(lambda m: values[m.group(1)], str(value)) for key, value in step["env"].items()}
    gh = tmp_path / "gh"
    gh.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" > {tmp_path}/argv\ncat > {tmp_path}/sent\n')
    gh.chmod(gh.stat().st_mode | stat.S_IEXEC)
    done = subprocess.run(
        ["bash", "-e", "-c", step["run"]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
        env={**env, "GITHUB_REPOSITORY": "acme/bench", "PATH": f"{tmp_path}:{os.environ['PATH']}"},
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "argv").read_text().split() == [
        "api",
        "--method",
        "POST",
        "repos/acme/bench/dispatches",
        "--input",
        "-",
    ]
    sent = json.loads((tmp_path / "sent").read_text())
    assert sent["event_type"] == "signoff-judged" and not (tmp_path / "pwned").exists()
    assert list(validator("signoff-judged.callback").iter_errors(sent["client_payload"])) == []
    answer = judge_result(sent["client_payload"])
    assert answer == {
        "pr": 1234,
        "signoff": "review-comment-2233445566",
        "head_sha": start.inputs["head-sha"],
        "verdict": "fail",
        "summary": summary[:2000],
        "run_id": 987,
        "dispatch_id": start.dispatch_id,
        "ignored": [],
    }


def test_the_tools_check_every_example_workflow():
    assert {p.name for p in WORKFLOWS.glob("*.yml")} >= {*CASES, JUDGE}


def run_tool(*argv: str) -> subprocess.CompletedProcess:
    tool = BIN / argv[0]
    if not tool.exists():
        pytest.fail(f"{argv[0]} is not installed: it is in the test extra (pip install -e '.[test]')")
    return subprocess.run([str(tool), *argv[1:]], capture_output=True, text=True, timeout=120)


def test_the_examples_are_valid_github_workflows():
    done = run_tool(
        "check-jsonschema", "--builtin-schema", "vendor.github-workflows", *map(str, sorted(WORKFLOWS.glob("*.yml")))
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_examples_are_zizmor_clean():
    """Template injection, dangerous triggers, unpinned actions, credentials left in checkouts: none."""
    done = run_tool("zizmor", "--offline", "--no-progress", *map(str, sorted(WORKFLOWS.glob("*.yml"))))
    assert done.returncode == 0, done.stdout + done.stderr
