"""The tests' five tiers, lightest first, and which one each test is in (tests/conftest.py marks every test).

A test's tier is the heaviest thing it starts: the fixtures it uses (directly or through other fixtures), the
parameters it runs with, and the tables below for tests that start a process without such a fixture. A tier
marker written on a test (or its class or module) wins over all of that; two different ones are an error.
`make test-fast` runs the first two (`-m "rules or handler"`); `make test` runs all five.
"""

from __future__ import annotations

import pytest

TIERS = {
    "rules": "rules, templates and parts alone, in this process: no bot, no fake GitHub",
    "handler": "a handler, the client or a Context against the in-memory fake GitHub, in this process",
    "live": "a live bot: the harness's webhook server and workers, or a `sweepbot` command in a subprocess",
    "process": "processes of their own (a bot SIGKILLed, the fake GitHub or the workers apart, a tool) or PostgreSQL",
    "browser": "chromium driven by Playwright (tests/test_setup_page.py)",
}
ORDER = tuple(TIERS)

# A fixture a test uses (directly or through another fixture) -> the lightest tier that test can be in. A name
# with a file before it is that file's own fixture (a module-scoped fake GitHub process is `fake` in several).
FIXTURES = {
    "github": "handler",  # the in-memory fake GitHub (tests/conftest.py)
    "app_key": "handler",  # the App's key: a GitHub client with its tokens
    "make_harness": "live",
    "harness": "live",
    "postgres_url": "process",  # tests/postgres.py: initdb and pg_ctl
    "postgres_db": "process",
    "test_crash_midwrite.py::fake": "process",  # bot.testing.server.FakeGitHubProcess
    "test_merge_crash.py::fake": "process",
    "test_fake_server.py::fake": "process",
    "test_replicas_process.py::fake": "process",
    "test_worker_process.py::fake": "process",
    "test_packaging.py::wheel": "process",  # pip wheel, a venv, the installed `sweepbot`
    "test_packaging.py::installed": "process",
    "test_sandbox.py::walked": "live",  # `sweepbot serve` in the sandbox, in this process
    "test_setup_page.py::chromium": "browser",
}

# A parameter's value -> the tier it makes: the "apart" layout runs the workers in a process of their own; a
# journal on PostgreSQL asks for a database with request.getfixturevalue, which no fixture list shows.
PARAMS = {
    ("layout", "apart"): "process",
    ("target", "postgresql"): "process",  # tests/test_journal_contract.py
    ("backend", "postgresql"): "process",  # tests/test_cli.py
}

# Tests that start something without a fixture that says so: "file" (every test in it) or "file::test" (each of
# its parameters) -> tier. A test file whose text names one of STARTERS must be named in FIXTURES or here
# (tests/test_tiers.py checks), so a new one is looked at rather than left in "rules".
TESTS = {
    "test_crash.py": "process",  # `sweepbot serve` SIGKILLed and started again
    "test_config.py::test_the_sweepbot_command_lists_every_error_of_a_bad_file": "live",
    "test_config.py::test_the_sweepbot_command_exits_2_on_a_bad_setting": "live",
    "test_sandbox.py::test_a_port_in_use_is_one_clear_line_and_exit_2": "live",
    "test_sandbox.py::test_with_no_workers_nothing_is_walked_and_no_transcript_begun": "live",
    "test_doctor.py::test_live_serve_with_a_wrong_key_is_one_line_and_exit_2": "process",  # serve, the fake apart
    "test_offload.py": "process",  # bot/core/offload.py's worker process
    "test_changelog.py::test_the_worker_process_runs_the_check_by_reference": "process",
    "test_docs.py::test_the_site_builds_strictly_and_offline": "process",  # mkdocs build
    "test_docs.py::test_a_broken_anchor_fails_the_build": "process",
    "test_layers.py::test_every_contract_holds": "process",  # lint-imports
    "test_layers.py::test_a_broken_rule_is_caught": "process",
    "test_example_workflows.py::test_the_judge_answer_is_a_valid_signoff_judged_the_bot_accepts": "process",
    "test_example_workflows.py::test_the_examples_are_valid_github_workflows": "process",  # check-jsonschema
    "test_example_workflows.py::test_the_examples_are_zizmor_clean": "process",
    # a bot started with harness.start_harness (bench/github_requests.py's scenarios) rather than the fixture
    "test_gate_requests.py::test_gate_request_figures": "live",
    "test_gate_requests.py::test_the_gate_figures_say_what_the_scenarios_are_about": "live",
    "test_gate_requests.py::test_round_trips_to_the_dispatch": "live",
    "test_gate_requests.py::test_round_trips_to_the_reply_and_its_reaction": "live",
    "test_shared_reads.py::test_a_cold_process_reads_the_policy_once_for_a_burst": "live",
    "test_shared_reads.py::test_a_label_new_to_the_repository_is_looked_up_and_created_once_for_a_burst": "live",
    "test_shared_reads.py::test_one_writers_labels_on_many_forks_at_once_read_the_permission_once": "live",
    "test_trust.py::test_no_run_but_the_bots_dispatch_reaches_a_record_a_pin_or_a_sign_off": "live",
    "test_welcome.py::test_request_figures": "live",
    "test_welcome.py::test_the_welcomes_key_figures": "live",
    "test_deploy.py::test_the_image_definition_is_hadolint_clean": "process",  # hadolint
    "test_deploy.py::test_the_build_stage_has_what_the_wheel_needs": "process",  # pip wheel
    "test_deploy.py::test_the_unit_passes_systemd_analyze_verify": "process",  # systemd-analyze verify
    "test_references.py": "rules",  # `git ls-files` only: it reads the tracked files
    "test_real_data.py": "rules",
    "test_bench_callbacks.py": "process",  # bench/callbacks.py measures each tree in a subprocess
    "test_bench_connections.py": "process",  # bench/connections.py: GitHub stand-in in a process of its own
    "test_bench_parsers.py::test_quick_run_prints_one_row_per_case_and_the_loop_figure": "process",
    "test_bench_gate_latency.py": "live",  # bench/gate_latency.py starts the bot on this loop
    "test_bench_gate_latency.py::test_live_the_bot_in_its_own_processes_gives_one_dispatch_per_pr_and_the_figures": (
        "process"
    ),
    "test_bench_gate_latency.py::test_live_with_the_prs_opened_first_the_label_reads_no_changelog_again": "process",
}


STARTERS = (
    r"\bsubprocess\b|\bmultiprocessing\b|start_server_process|FakeGitHubProcess|WorkerProcess"
    r"|start_harness\(|load_bench\("
)


def heavier(a: str, b: str) -> str:
    return max(a, b, key=ORDER.index)


def written(item: pytest.Item) -> set[str]:
    """The tier markers written on the test, its class or its module."""
    return {mark.name for mark in item.iter_markers() if mark.name in TIERS}


def found(item: pytest.Item) -> str:
    """The tier of a test with none written: the heaviest of what it uses."""
    tier = "rules"
    file = item.path.name
    for name in getattr(item, "fixturenames", ()):  # every test function has them; pytest.Item does not say so
        for key in (name, f"{file}::{name}"):
            if key in FIXTURES:
                tier = heavier(tier, FIXTURES[key])
    callspec = getattr(item, "callspec", None)
    for (param, value), made in PARAMS.items():
        if callspec is not None and callspec.params.get(param) == value:
            tier = heavier(tier, made)
    name = getattr(item, "originalname", item.name)
    for key in (file, f"{file}::{name}"):
        if key in TESTS:
            tier = heavier(tier, TESTS[key])
    return tier


def assign(items: list[pytest.Item]) -> None:
    """Give each test exactly one tier marker; a test with two different ones written is a usage error."""
    for item in items:
        marks = written(item)
        if len(marks) > 1:
            raise pytest.UsageError(f"{item.nodeid} has more than one tier marker written: {sorted(marks)}")
        if not marks:
            item.add_marker(found(item))
