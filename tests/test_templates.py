"""Tests for the bilingual comment templates in templates/ and their loader, bot.core.templates."""

from __future__ import annotations

import copy
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import jinja2
import pytest

from bot.core.templates import DEFAULT_DIRECTORY, KindNotFound, Templates, code_span
from bot.rules.commands import USAGE_PROBLEMS, find_commands
from handlers.help_command import help_entries

TEMPLATES = Templates()
KINDS = TEMPLATES.kinds()
HEADING = "## 中文"
COMMAND_NAMES = ("use", "reuse-sweep-run", "stage-results", "help")
CJK = re.compile(r"[\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")
URL = re.compile(r"https?://[^\s()<>\[\]`]+")

DEFAULT_LABELS = [
    {"name": "full-sweep-fail-fast", "canary": True, "fail_fast": True, "recommended": True},
    {"name": "full-sweep-enabled", "canary": True, "fail_fast": False, "recommended": False},
    {"name": "non-canary-full-sweep-enabled", "canary": False, "fail_fast": False, "recommended": False},
]
DEFAULT_MODIFIERS = {"all_evals": "all-evals", "evals_only": "evals-only", "agentx_fast": "agentx-fast"}
DEFAULT_COMMANDS = {
    "use": "use",
    "reuse": "reuse-sweep-run",
    "stage": "stage-results",
    "merge": "merge",
    "help": "help",
}
BLOB = "https://github.com/SemiAnalysisAI/InferenceX/blob/main"

WELCOME = {
    "author": "gpu-vendor-dev",
    "is_fork": False,
    "changelog_in_pr": False,
    "codeowners_url": f"{BLOB}/.github/CODEOWNERS",
    "checklist_url": f"{BLOB}/docs/PR_REVIEW_CHECKLIST.md",
    "changelog_path": "inferencex-e2e/perf-changelog.yaml",
    "changelog_url": f"{BLOB}/inferencex-e2e/perf-changelog.yaml",
    "signoff_phrase": "As a PR reviewer and CODEOWNER, I have reviewed this and have",
    "primary_labels": DEFAULT_LABELS,
    "modifiers": DEFAULT_MODIFIERS,
    "use_command": "/use",
    "reuse_command": "/reuse-sweep-run",
    "docs_url": f"{BLOB}/README.md",
    "rerun_docs_url": "https://docs.github.com/en/actions/managing-workflow-runs/re-running-workflows-and-jobs",
}
# A repository that renamed everything in .github/sweepbot.yml: nothing of the defaults may show.
RENAMED_WELCOME = {
    **WELCOME,
    "is_fork": True,
    "codeowners_url": "https://github.com/acme/bench/blob/trunk/OWNERS",
    "checklist_url": "https://github.com/acme/bench/blob/trunk/REVIEW.md",
    "changelog_path": "perf/log.yaml",
    "changelog_url": "https://github.com/acme/bench/blob/trunk/perf/log.yaml",
    "signoff_phrase": "Signed off as owner",
    "primary_labels": [
        {"name": "sweep-strict", "canary": False, "fail_fast": True, "recommended": False},
        {"name": "sweep-gentle", "canary": True, "fail_fast": False, "recommended": True},
        {"name": "sweep-raw", "canary": False, "fail_fast": False, "recommended": False},
        {"name": "sweep-odd`tick", "canary": True, "fail_fast": True, "recommended": False},
    ],
    "modifiers": {"all_evals": "evals-everywhere", "evals_only": "evals-alone", "agentx_fast": "agent-quick"},
    "use_command": "/pin",
    "reuse_command": "/reuse",
    "docs_url": "https://acme.example/docs",
}
HELP = {
    "requester": "maintainer-one",
    "commands": help_entries(DEFAULT_COMMANDS),
    "docs_url": f"{BLOB}/README.md",
    "problem": None,
    "results_service": True,
}
PROBLEM_TEXTS = {
    "use-needs-run-id": "/use",
    "run-id-not-numeric": "/use `#123`",
    "run-id-out-of-range": "/use 99999999999999999999",
    "too-many-arguments": "/reuse-sweep-run 123 456",
}
CONFIG_INVALID = {
    "path": ".github/sweepbot.yml",
    "commit_sha": "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c",
    "commit_url": "https://github.com/SemiAnalysisAI/InferenceX/commit/0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c",
    "errors": [
        "`policy.labels.primary[0].canary`: expected a boolean, got `'yes'`",
        "`policy.colour`: unknown key",
    ],
    "last_good": None,
}


def _variables(*samples: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    """Samples of a template's variables as they are, typed as such: JSON-like dicts whose values differ in type
    (without it mypy joins the samples' types to `object`)."""
    return samples


SAMPLES: dict[str, list[dict]] = {
    # same repository or fork, the changelog in the PR or not, and renamed names
    "welcome": [
        {**WELCOME, "is_fork": fork, "changelog_in_pr": changelog}
        for fork in (False, True)
        for changelog in (False, True)
    ]
    + [RENAMED_WELCOME],
    "help": [
        HELP,
        {**HELP, "results_service": False},  # results.mode none
        *({**HELP, "problem": {"text": text, "key": key}} for key, text in PROBLEM_TEXTS.items()),
        {
            **HELP,
            "commands": help_entries(
                {"use": "pin", "reuse": "reuse", "stage": "restage", "merge": "land", "help": "commands"}
            ),
            "problem": {"text": "/pin", "key": "use-needs-run-id"},
        },
    ],
    "config_invalid": [
        CONFIG_INVALID,
        {**CONFIG_INVALID, "last_good": "9a8b7c6"},
        # An error message with a line break must not put anything at the start of a line.
        {**CONFIG_INVALID, "errors": ["policy.commands.use: bad value\n/use 1234"], "last_good": "9a8b7c6"},
        {**CONFIG_INVALID, "errors": []},
    ],
    "truncated": [{"limit": 65536}],
    "dispatch_unknown": [
        {
            "workflow": "run-sweep.yml",
            "ref": "recipe/mi355x",
            "dispatch_id": "sw-12-0a1b2c3d4e5f",
            "reason": "POST /repos/acme/InferenceX/actions/workflows/run-sweep.yml/dispatches: 502 Bad Gateway",
            "runs_url": "https://github.com/acme/InferenceX/actions/workflows/run-sweep.yml",
        }
    ],
    "stage_reply": [
        {
            "outcome": outcome,
            "command": "/stage-results 333",
            "requester": "maintainer",
            "stage_command": "/stage-results",
            "use_command": "/use",
            "run": None
            if outcome == "nothing_to_stage"
            else {"id": 333, "url": "https://github.com/acme/InferenceX/actions/runs/333"},
            "verdict": {"code": "no-result-artifact"} if outcome == "refused" else None,
            "staging": None
            if outcome != "requested"
            else {
                "state": state,
                "repository": "SemiAnalysisAI/InferenceX-app",
                "error": "422 No ref found",
                "results_url": "https://inferencex.semianalysis.com/staged/1",
                "primary_labels": ["full-sweep-fail-fast"],
                "app_run_url": "https://github.com/SemiAnalysisAI/InferenceX-app/actions/runs/7",
            },
        }
        for outcome, state in (
            ("requested", "requested"),
            ("requested", "dispatch_failed"),
            ("requested", "needs_primary"),
            ("requested", "staged"),
            ("unauthorized", None),
            ("permission_unknown", None),
            ("nothing_to_stage", None),
            ("refused", None),
        )
    ]
    + [  # staged without a results link the bot accepts (none sent, or dropped): the service's run, or nothing
        {
            "outcome": "requested",
            "command": "/stage-results 333",
            "requester": "maintainer",
            "stage_command": "/stage-results",
            "use_command": "/use",
            "run": {"id": 333, "url": "https://github.com/acme/InferenceX/actions/runs/333"},
            "verdict": None,
            "staging": {
                "state": "staged",
                "repository": "SemiAnalysisAI/InferenceX-app",
                "error": None,
                "results_url": None,
                "primary_labels": ["full-sweep-fail-fast"],
                "app_run_url": app_run_url,
                "app_run_id": 7 if app_run_url else None,
            },
        }
        for app_run_url in ("https://github.com/SemiAnalysisAI/InferenceX-app/actions/runs/7", None)
    ],
    "merge_reuse": [
        {
            "outcome": "reused",
            "use_command": "/use",
            "verdict": {"code": "eligible", "params": {}},
            "pin": {
                "run_id": 333,
                "by": "maintainer",
                "url": "https://github.com/acme/InferenceX/actions/runs/333",
                "head_sha": "d55207c21fee12d6cceeeaeba9f9f91a90d71c86",
                "summary": "DeepSeek-R1 · 1k1k · fp8",
            },
            "after_merge": after_merge,
            "ingest": ingest,
            "report": None,
        }
        for after_merge in (False, True)
        for ingest in (
            {"state": "requested", "repository": "SemiAnalysisAI/InferenceX-app", "error": None},
            {
                "state": "dispatch_failed",
                "repository": "SemiAnalysisAI/InferenceX-app",
                "error": "422 No ref found\n/use 1",
            },
            {"state": "dispatch_failed", "repository": "SemiAnalysisAI/InferenceX-app", "error": None},
        )
    ]
    + [
        {
            "outcome": "invalid",
            "use_command": "/pin",
            "verdict": {"code": "no-result-artifact", "params": {}},
            "pin": {
                "run_id": 333,
                "by": "maintainer",
                "url": "https://github.com/acme/InferenceX/actions/runs/333",
                "head_sha": "",
                "summary": None,
            },
            "after_merge": after_merge,
            "ingest": None,
            "report": None,
        }
        for after_merge in (False, True)
    ]
    + [
        {
            "outcome": "none",
            "use_command": "/use",
            "verdict": None,
            "pin": None,
            "after_merge": False,
            "ingest": None,
            "report": None,
        },
    ],
    "run_comment": [],  # filled below from real jobs summaries
    # the `sweep` check on the commit a sweep tested: queued, running, and each conclusion
    "sweep_run_check": [
        {
            "run_id": 1006,
            "url": "https://github.com/acme/InferenceX/actions/runs/1006",
            "head_sha": "d" * 40,
            "status": status,
            "conclusion": conclusion,
        }
        for status, conclusion in (
            ("queued", ""),
            ("in_progress", ""),
            ("completed", "success"),
            ("completed", "failure"),
            ("completed", "cancelled"),
            ("completed", "timed_out"),
            ("completed", "neutral"),
        )
    ],
    "sweep_status": [],  # filled below from real gate decisions
    "changelog_annotation": [],  # filled below from real changelog errors
    "fork_label_removed": [
        {"labels": ["full-sweep-fail-fast"], "by": ["drive-by"], "repo": "acme/InferenceX"},
        {"labels": ["full-sweep-enabled", "full-sweep-fail-fast"], "by": ["a", "b`c"], "repo": "acme/InferenceX"},
    ],
    # The reply to a pin command: every outcome and every verdict code, params as bot.rules.pins.check_run builds them.
    "reuse_reply": [
        {
            "command": f"/use {run['id']}",
            "requester": "maintainer-one",
            "run": run,
            "verdict": None,
            "others": [],
            "workflow": "run-sweep.yml",
            "use_command": "/use",
            "reuse_command": "/reuse-sweep-run",
            "stage_command": "/stage-results",
            "staging": None,
            "ingest": None,
            **case,
        }
        for run in (
            {
                "id": 15551234567,
                "url": "https://github.com/acme/InferenceX/actions/runs/15551234567",
                "head_sha": "9f3c2a17d4e8b6051c2a9e7f3d1b8c6a4e2f0d9b",
                "conclusion": "success",
                "summary": "DeepSeek-R1 · 1k1k · fp8 · mi355x_sglang · 2025-06-30",
            },
        )
        for base in ({"run_id": run["id"], "head_sha": run["head_sha"], "run_attempt": 1},)
        for patterns in (("results_bmk*", "eval_results_all", "bmk_agentic_*"),)
        for accepted in (
            {
                "outcome": "accepted",
                "verdict": {
                    "code": "eligible",
                    "params": {
                        **base,
                        "conclusion": "success",
                        "artifacts": ("results_bmk_mi355x", "eval_results_all"),
                    },
                },
            },
        )
        for staging in (
            {
                "repository": "SemiAnalysisAI/InferenceX-app",
                "results_url": None,
                "app_run_url": None,
                "error": None,
                "primary_labels": [label["name"] for label in DEFAULT_LABELS],
            },
        )
        for app_run in ("https://github.com/SemiAnalysisAI/InferenceX-app/actions/runs/9876543210",)
        for case in _variables(
            {
                "outcome": "accepted",
                "verdict": {
                    "code": "eligible",
                    "params": {
                        **base,
                        "conclusion": "success",
                        "artifacts": ("results_bmk_mi355x", "eval_results_all"),
                    },
                },
            },
            # the result artifacts with the day each expires (bot.rules.pins.expiry), more than are listed
            {
                "outcome": "accepted",
                "verdict": {
                    "code": "eligible",
                    "params": {
                        **base,
                        "conclusion": "success",
                        "artifacts": tuple(f"results_bmk_{i}" for i in range(12)),
                        "expiry": tuple(
                            {"name": f"results_bmk_{i}", "date": None if i == 3 else "2027-01-30"} for i in range(12)
                        ),
                    },
                },
            },
            # a `/use` after the merge: the ingest is asked for now
            *(
                {
                    "outcome": "accepted",
                    "ingest": {"state": state, "repository": "SemiAnalysisAI/InferenceX-app", "error": error},
                    "verdict": {
                        "code": "eligible",
                        "params": {
                            **base,
                            "conclusion": "success",
                            "artifacts": ("eval_results_all",),
                            "expiry": ({"name": "eval_results_all", "date": "2027-01-30"},),
                        },
                    },
                }
                for state, error in (
                    ("requested", None),
                    ("dispatch_failed", "502 Bad Gateway"),
                    ("dispatch_failed", None),
                )
            ),
            {
                "outcome": "accepted",
                "command": "/reuse-sweep-run",
                "run": {**run, "summary": None},
                "verdict": {
                    "code": "eligible",
                    "params": {**base, "conclusion": "success", "artifacts": ("results_bmk_mi355x",)},
                },
                "others": [{"id": 15559999999, "code": "not-completed"}, {"id": 15550000001, "code": "eligible"}],
            },
            {
                "outcome": "accepted",
                "command": f"/reuse-sweep-run {run['id']}",
                "run": {**run, "conclusion": "failure"},
                "verdict": {
                    "code": "eligible",
                    "params": {**base, "conclusion": "failure", "artifacts": ("results_bmk_mi355x",)},
                },
            },
            {
                "outcome": "refused",
                "command": "/use 999",
                "run": None,
                "verdict": {"code": "not-found", "params": {"run_id": 999}},
            },
            {
                "outcome": "refused",
                "verdict": {
                    "code": "wrong-workflow",
                    "params": {
                        **base,
                        "path": ".github/workflows/pr-lint.yml",
                        "workflow": ".github/workflows/run-sweep.yml",
                    },
                },
            },
            {
                "outcome": "refused",
                "run": {**run, "summary": None},
                "verdict": {
                    "code": "wrong-workflow",
                    "params": {**base, "path": None, "workflow": ".github/workflows/run-sweep.yml"},
                },
            },
            {
                "outcome": "refused",
                "run": {**run, "conclusion": None},
                "verdict": {"code": "not-completed", "params": {**base, "status": "in_progress"}},
            },
            {
                "outcome": "refused",
                "run": {**run, "conclusion": "timed_out"},
                "verdict": {
                    "code": "conclusion-not-allowed",
                    "params": {**base, "conclusion": "timed_out", "allowed": ("success", "failure", "cancelled")},
                },
            },
            {"outcome": "refused", "verdict": {"code": "not-dispatched", "params": base}},
            {
                "outcome": "refused",
                "verdict": {
                    "code": "no-result-artifact",
                    "params": {
                        **base,
                        "patterns": patterns,
                        "artifacts": (*(f"results_bmk_{i}" for i in range(7)), "server_logs"),
                        "expired": tuple(f"results_bmk_{i}" for i in range(7)),
                    },
                },
            },
            {
                "outcome": "refused",
                "verdict": {
                    "code": "no-result-artifact",
                    "params": {
                        **base,
                        "patterns": patterns,
                        "artifacts": ("results_bmk_a", "eval_results_all"),
                        "expired": ("results_bmk_a", "eval_results_all"),
                        "expiry": (
                            {"name": "results_bmk_a", "date": "2026-10-01"},
                            {"name": "eval_results_all", "date": None},
                        ),
                    },
                },
            },
            {
                "outcome": "refused",
                "verdict": {
                    "code": "no-result-artifact",
                    "params": {
                        **base,
                        "patterns": patterns,
                        "artifacts": ("results_bmk_a",),
                        "expired": ("results_bmk_a",),
                        "expiry": ({"name": "results_bmk_a", "date": "2026-10-01"},),
                    },
                },
            },
            {
                "outcome": "refused",
                "run": {**run, "conclusion": "failure"},
                "verdict": {
                    "code": "no-result-artifact",
                    "params": {**base, "patterns": patterns, "artifacts": ("server_logs", "logs`raw"), "expired": ()},
                },
            },
            {
                "outcome": "refused",
                "run": {**run, "conclusion": "cancelled"},
                "verdict": {
                    "code": "no-result-artifact",
                    "params": {**base, "patterns": patterns, "artifacts": (), "expired": ()},
                },
            },
            {
                "outcome": "refused",
                "verdict": {"code": "blocked-by-label", "params": {**base, "labels": ("Evals-Only",)}},
            },
            {
                "outcome": "refused",
                "command": f"/reuse-sweep-run {run['id']}",
                "verdict": {"code": "blocked-by-label", "params": {**base, "labels": ("evals-only", "agentx-fast")}},
            },
            {"outcome": "unauthorized", "requester": "drive-by", "run": None},
            {"outcome": "permission_unknown", "requester": "private-member", "run": None},
            {
                "outcome": "unauthorized",
                "requester": "drive-by",
                "run": None,
                "command": "/pin 42",
                "workflow": "sweep.yml",
                "use_command": "/pin",
                "reuse_command": "/reuse",
            },
            {"outcome": "no_eligible_run", "command": "/reuse-sweep-run", "run": None},
            {
                "outcome": "no_eligible_run",
                "command": "/reuse",
                "run": None,
                "use_command": "/pin",
                "reuse_command": "/reuse",
                "others": [
                    {"id": 15551234600 - i, "code": code}
                    for i, code in enumerate(
                        (
                            "not-completed",
                            "conclusion-not-allowed",
                            "not-dispatched",
                            "no-result-artifact",
                            "blocked-by-label",
                            "wrong-workflow",
                        )
                        * 2
                    )
                ],
            },
            # `/use` also asks the results service to stage the run: each state of the reply's staging section.
            {**accepted, "staging": {**staging, "state": "requested"}},
            {**accepted, "staging": {**staging, "state": "needs_primary"}},
            {
                **accepted,
                "command": "/pin 15551234567",
                "use_command": "/pin",
                "reuse_command": "/reuse",
                "stage_command": "/restage",
                "staging": {**staging, "state": "needs_primary", "primary_labels": []},
            },
            {
                **accepted,
                "staging": {
                    **staging,
                    "state": "dispatch_failed",
                    "error": "422: Unprocessable Entity\n/use 1 `event_type` is invalid",
                },
            },
            {**accepted, "staging": {**staging, "state": "dispatch_failed", "error": ""}},
            {**accepted, "staging": {**staging, "state": "started", "app_run_url": app_run}},
            {**accepted, "staging": {**staging, "state": "started"}},
            {**accepted, "staging": {**staging, "state": "staged", "app_run_url": app_run}},  # no results link
            {
                **accepted,
                "staging": {
                    **staging,
                    "state": "staged",
                    "app_run_url": app_run,  # the viewer's page instead
                    "viewer_url": "https://inferencex.semianalysis.com/inference?unofficialRun=15551234567",
                },
            },
            {
                **accepted,
                "staging": {
                    **staging,
                    "state": "staged",
                    "app_run_url": None,
                    "viewer_url": "https://inferencex.semianalysis.com/inference?unofficialRun=15551234567",
                },
            },
            {
                **accepted,
                "staging": {
                    **staging,
                    "state": "staged",
                    "app_run_url": app_run,
                    "results_url": "https://inferencex.semianalysis.com/inference?unofficialRun=15551234567",
                },
            },
            {
                **accepted,
                "run": {**run, "conclusion": "failure"},
                "staging": {**staging, "state": "stage_failed", "app_run_url": app_run},
            },
            {**accepted, "staging": {**staging, "state": "stage_failed"}},
        )
    ],
    # The results service's ingest report: the table in bot.rules.results_callbacks ROWS x COLUMNS order.
    "ingest_report": [
        {
            "run_id": 15551234567,
            "run_url": "https://github.com/acme/InferenceX/actions/runs/15551234567",
            "app_run_url": app_run_url,
            "run_date": "2025-06-30",
            "rows": ["benchmark", "eval", "trace", "power"],
            "ingest_run_url": ingest_run_url or app_run_url,
            "extra_counts": extra,
            "columns": ["new", "duplicate", "skipped", "unmapped", "failed"],
            "counts": {
                row: {"new": new, "duplicate": 3, "skipped": 0, "unmapped": 1, "failed": failed.get(row, 0)}
                for row, new in (("benchmark", 1024), ("eval", 36), ("trace", 0), ("power", 12))
            },
        }
        for ingest_run_url, extra in (
            (None, []),
            (
                "https://github.com/SemiAnalysisAI/InferenceX-app/actions/runs/9876543211/attempts/2",
                [["benchmarkFiles", 11], ["evalSamplesNew", 6595], ["gpuMetricSamplesNew", 386092]],
            ),
        )
        for app_run_url, failed in (
            ("https://github.com/SemiAnalysisAI/InferenceX-app/actions/runs/9876543210", {"eval": 2, "power": 1}),
            (None, {"trace": 5}),
            ("https://github.com/SemiAnalysisAI/InferenceX-app/actions/runs/9876543210", {}),
            (None, {}),
        )
    ]
    + [  # an ingest callback need not carry the run's date
        {
            "run_id": 15551234567,
            "run_url": "https://github.com/acme/InferenceX/actions/runs/15551234567",
            "app_run_url": None,
            "ingest_run_url": None,
            "extra_counts": [["changelogEntriesWritten", 1]],
            "run_date": None,
            "rows": ["benchmark", "eval", "trace", "power"],
            "columns": ["new", "duplicate", "skipped", "unmapped", "failed"],
            "counts": {
                row: {"new": 1, "duplicate": 0, "skipped": 0, "unmapped": 0, "failed": 0}
                for row in ("benchmark", "eval", "trace", "power")
            },
        },
    ],
}


def _status_samples() -> list[dict]:
    """Status comment variables as the sweep gate builds them (handlers.sweep_gate.status_view over real gate
    decisions): every headline, a blocked fork with changelog problems, each failed dispatch, each pin
    withdrawal, and the check run's shorter form."""
    from bot.core.config import default_policy, parse_repo_config
    from bot.rules.changelog import check_append
    from bot.rules.gate import AppliedLabel, Changelog, ChangelogOutcome, Condition, Dispatched, GateInput, decide
    from bot.rules.links import viewer_links
    from bot.rules.pins import WITHDRAWALS
    from handlers.sweep_gate import status_view

    policy = default_policy()
    sha = "d55207c21fee12d6cceeeaeba9f9f91a90d71c86"
    g = {
        "primary_labels": [p.name for p in policy.labels.primary],
        "recommended": "full-sweep-fail-fast",
        "modifiers": policy.labels.modifiers.names(),
        "changelog_path": "inferencex-e2e/perf-changelog.yaml",
        "changelog_url": f"https://github.com/acme/InferenceX/blob/{sha}/inferencex-e2e/perf-changelog.yaml",
        "skip_marker": "[skip-sweep]",
        "use_command": "/use",
        "runs_url": "https://github.com/acme/InferenceX/actions",
        "is_open": True,
    }
    # GateInput's keyword arguments
    base: dict[str, Any] = dict(
        number=12, head_sha=sha, base_sha="b" * 40, head_ref="recipe", base_ref="main", default_branch="main"
    )
    labelled: dict[str, Any] = dict(base, labels=(AppliedLabel("full-sweep-fail-fast", "maintainer", True, sha),))
    valid = ChangelogOutcome(Changelog.VALID)
    key = decide(GateInput(**labelled, changelog=valid), policy).dispatch_id
    run = {
        "run_id": 1006,
        "dispatch_id": key,
        "status": "in_progress",
        "conclusion": None,
        "url": "https://github.com/acme/InferenceX/actions/runs/1006",
        "head_sha": sha,
        "perf_url": None,
        "eval_url": None,
    }
    done = {**run, "status": "completed", "conclusion": "success", **viewer_links("https://x.example", 1006)}

    def view(pr: dict, shown_run: dict | None = None, *, fork: bool = False, **extra) -> dict:
        return status_view(
            decide(GateInput(**pr), policy),
            shown_run,
            head_sha=sha,
            author="partner",
            is_fork=fork,
            g=extra.pop("g", g),
            **extra,
        )

    def ran(status: str, conclusion: str | None) -> dict:
        return dict(labelled, changelog=valid, dispatched=(Dispatched(key, 1006, status, conclusion),))

    bad = check_append(
        b"",
        b"- config-keys:\n    - a\n  description:\n    - b\n  pr-link: TBD\n",
        pr_number=12,
        canonical_prefix=policy.pr_link_prefix,
    )
    blocked_fork = dict(
        base,
        changelog=ChangelogOutcome(Changelog.INVALID),
        is_fork=True,
        labels=(
            AppliedLabel("full-sweep-fail-fast", "drive-by", False),
            AppliedLabel("evals-only", "maintainer", True, sha),
        ),
    )
    out = [
        view(blocked_fork, fork=True, errors=list(bad.errors)),
        # more found than the result keeps (policy limits.changelog_errors): counted, exactly or as "at least"
        *(
            view(blocked_fork, fork=True, errors=list(bad.errors) * 12, unlisted=unlisted, unlisted_at_least=at_least)
            for unlisted, at_least in ((1, False), (1_234, False), (1, True))
        ),
        view(ran("in_progress", None), run),
        view(ran("completed", "success"), done),
        view(ran("completed", "failure"), {**run, "status": "completed", "conclusion": "failure"}),
        view(ran("completed", "cancelled"), {**run, "status": "completed", "conclusion": "cancelled"}),
        view(dict(labelled, changelog=valid)),  # starting
        view(dict(base, changelog=valid)),  # idle, same repository
        view(dict(base, changelog=valid, is_fork=True, merge_commit_sha=None), fork=True),  # idle, fork
        view(dict(labelled, changelog=valid, is_fork=True, merge_commit_sha=None), fork=True),  # waiting
        view(dict(labelled, changelog=valid, is_fork=True, mergeable=False), fork=True),  # blocked: conflicts
        view(dict(labelled, changelog=valid, pin=1006)),  # paused
        view(dict(labelled, changelog=valid, open=False, merged=True, pin=1006), g={**g, "is_open": False}),
        view(dict(labelled, changelog=valid, open=False, merged=True), g={**g, "is_open": False}),
        view(dict(labelled, changelog=valid, open=False), g={**g, "is_open": False}),  # closed
        view(dict(labelled, changelog=valid, draft=True)),
        view(dict(labelled, changelog=ChangelogOutcome(Changelog.LINKS_CORRECTED))),
        view(dict(labelled, changelog=valid, head_commit_message="x [skip-sweep]")),
        view(dict(labelled, changelog=valid), for_check=True),
        view(blocked_fork, fork=True, errors=list(bad.errors), for_check=True),
    ]
    starting = decide(GateInput(**labelled, changelog=valid), policy)
    for code in ("failed", "retrying", "unknown"):  # set by the handler when GitHub refuses or keeps failing
        failed = Condition(
            "dispatch",
            False if code != "retrying" else None,
            code,
            {"dispatch_id": key, "error": "422: Unexpected inputs provided", "retry_in": 4},
        )
        decision = replace(starting, conditions=starting.conditions[:-1] + (failed,))
        out.append(status_view(decision, None, head_sha=sha, author="partner", is_fork=False, g=g))
    # queued on a full runner pool (set by the handler): behind others, and next in line; the check's summary too
    for ahead, running, limit, for_check in (([12, 15], [9], 1, False), ([], [9, 11], 2, False), ([3], [], 1, True)):
        queued = Condition(
            "dispatch",
            False,
            "queued",
            {
                "dispatch_id": key,
                "pool": "mi355x",
                "position": len(ahead) + 1,
                "ahead": ahead,
                "running": running,
                "limit": limit,
            },
        )
        decision = replace(starting, start=None, conditions=starting.conditions[:-1] + (queued,))
        out.append(status_view(decision, None, head_sha=sha, author="partner", is_fork=False, g=g, for_check=for_check))
    # a pin withdrawn, for each reason (bot.rules.pins.WITHDRAWALS), with and without who did it
    out.extend(
        view(
            dict(labelled, changelog=valid),
            pin_withdrawn={"run_id": 10260, "comment_id": 5, "reason": reason, "by": by},
        )
        for reason in WITHDRAWALS
        for by in ("maintainer", "")
    )
    # what the sweep runs per runner pool (handlers.sweep_gate.shown_cost), with and without history, one point;
    # then a sweep over the policy's limit (sweeps.confirm_over) waiting for a maintainer's confirmation
    mi355x = {"pool": "mi355x", "points": 18, "config_keys": ["dsr1-fp4-mi355x-sglang", "dsr1-fp4-mi355x-atom"]}
    multinode = {"pool": "b200-multinode", "points": 21, "config_keys": ["dsr1-fp4-b200-dynamo-trt"], "max_nodes": 9}
    cost = {
        "pools": [
            {**mi355x, "max_nodes": 0, "node_hours": None, "lower_bound": False},
            {**multinode, "node_hours": 37.5, "lower_bound": True},
        ],
        "more_pools": 0,
        "more_points": 0,
        "unmatched": ["dsr2-*", "no-such-key"],
        "more_unmatched": 0,
        "no_pool": ["dsr1-fp4-h100-vllm"],
        "more_no_pool": 0,
    }
    one = {
        "pools": [{**multinode, "points": 1, "node_hours": None, "lower_bound": False}],
        "more_pools": 3,  # past the 20 pools given a line each (handlers.sweep_gate.SHOWN_POOLS)
        "more_points": 140,
        "unmatched": [f"dsr{n}-*" for n in range(10)],  # the first 10 of 15 (handlers.sweep_gate.SHOWN_KEYS)
        "more_unmatched": 5,
        "no_pool": [f"dsr1-fp4-h100-v{n}" for n in range(10)],
        "more_no_pool": 1,
    }
    out += [view(dict(labelled, changelog=valid), cost=cost), view(dict(labelled, changelog=valid), cost=one)]
    limited = parse_repo_config("sweeps:\n  confirm_over: 20\n")
    over = decide(GateInput(**labelled, changelog=valid, points=39), limited)
    out.append(status_view(over, None, head_sha=sha, author="partner", is_fork=False, g=g, cost=cost))
    return out


def _annotation_samples() -> list[dict]:
    from bot.rules.changelog import check_append
    from handlers.sweep_gate import _error

    base = b"- config-keys:\n    - a\n  description:\n    - b\n  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/1\n"
    errors = [
        e
        for text in (b"    - \td\n  pr-link: XXX\n", b"    - d\n  pr-link: TBD\n")
        for e in check_append(
            base,
            base + b"\n- config-keys:\n    - c\n  description:\n" + text,
            pr_number=12,
            canonical_prefix="https://github.com/SemiAnalysisAI/InferenceX/pull/",
        ).errors
    ]
    assert [e.code for e in errors] == ["tab", "pr-link-not-accepted"]
    return [{"e": _error(e)} for e in errors]


def _signoff_samples() -> list[dict]:
    """Verdicts covering every check code, state, outcome, first line and judge state, built by
    bot/rules/signoff.py's own rules."""
    from bot.rules import signoff as rules
    from bot.rules.checklist import ChecklistResult, Item, Template, TemplateProblem
    from bot.rules.codeowners import parse

    sha, now = "d55207c21fee12d6cceeeaeba9f9f91a90d71c86", "e" * 40
    owners = parse("* @core\nconfigs/ @amd-owner @acme/amd\n")
    files = ["configs/a.yaml", "README.md"]
    item = Item(2, 0, "Verified that the **evals** pass, see [the doc](https://x)", "")
    template = Template((item,), ())
    run = rules.SweepRun(333, sha, "completed", "success", "https://github.com/acme/InferenceX/actions/runs/333")
    failed = rules.SweepRun(334, sha, "completed", "failure", "https://github.com/acme/InferenceX/actions/runs/334")
    wrong = ChecklistResult(False, [item], [item], [(item, "Verified the evals")], "someone-else", False)
    unsigned = ChecklistResult(False, [], [], [], None, False)
    groups = rules.group_rows(rules.owner_groups(owners, files + [f"configs/b{i}.yaml" for i in range(4)]))
    many = [
        {"key": f"@o{i}", "owners": [f"@o{i}"], "lines": [i + 3, i + 9], "files": [f"f{i}.yaml"], "more": 0}
        for i in range(rules.SHOWN_GROUPS + 2)
    ]
    checks = [
        rules.codeowner_check(owners, files, "amd-owner", ()),
        rules.codeowner_check(owners, files, "amd-owner", (), authored=True),
        rules.codeowner_check(owners, files, "core", (), sufficient="@core"),
        rules.groups_check(groups, {rules.group_key(["@amd-owner", "@acme/amd"]): ["amd-owner", "nv-owner"]}),
        rules.groups_check(groups, {g["key"]: ["amd-owner"] for g in groups}),
        rules.groups_check(many, {"@o1": ["o1"]}),
        rules.groups_check([], {}),
        rules.groups_check(None, {}),
        rules.codeowner_check(owners, files, "drive-by", ()),
        rules.codeowner_check(owners, files, "drive-by", (), ["acme/amd"]),
        rules.codeowner_check(None, files, "drive-by", (), path=".github/CODEOWNERS"),
        rules.codeowner_check(owners, [], "drive-by", ()),
        rules.sweep_check([], [sha], pinned=run, asked=True),
        rules.sweep_check([run], [sha], pinned=None, asked=True),
        rules.sweep_check([failed], [sha], pinned=None, asked=True),
        rules.sweep_check(
            [rules.SweepRun(335, sha, "queued", None, "https://github.com/acme/InferenceX/actions/runs/335")],
            [sha],
            pinned=None,
            asked=True,
        ),
        rules.sweep_check([], [sha], pinned=None, asked=True),
        rules.sweep_check([], [sha], pinned=None, asked=False),
        rules.reuse_check(333, "maintainer", "eligible", required=True, asked=True),
        rules.reuse_check(333, "maintainer", "no-result-artifact", required=True, asked=True),
        rules.reuse_check(None, None, None, required=True, asked=True),
        rules.reuse_check(None, None, None, required=False, asked=True),
        rules.reuse_check(None, None, None, required=True, asked=False),
        rules.checklist_check(
            template,
            ChecklistResult(True, signed_by="amd-owner", signed_ok=True),
            "amd-owner",
            path="docs/PR_REVIEW_CHECKLIST.md",
        ),
        rules.checklist_check(template, wrong, "amd-owner", path="docs/PR_REVIEW_CHECKLIST.md"),
        rules.checklist_check(template, unsigned, "amd-owner", path="docs/PR_REVIEW_CHECKLIST.md"),
        rules.checklist_check(None, None, "amd-owner", path="docs/PR_REVIEW_CHECKLIST.md"),
        rules.checklist_check(
            TemplateProblem("heading '## Template' not found"), None, "amd-owner", path="docs/PR_REVIEW_CHECKLIST.md"
        ),
    ]
    base: dict[str, Any] = {
        "source": "comment",
        "signer": "amd-owner",
        "url": "https://github.com/acme/InferenceX/pull/12#issuecomment-12",
        "head_sha": sha,
        "current_sha": sha,
        "state": "fresh",
        "outcome": "fail",
        "covered": [{"item": "Verified the sweep", "check": "sweep"}],
        "not_verified": ["Verified that the evals pass, see the doc", "Verified `no patches` <PR_NUMBER>.md"],
        "judge": None,
        "codeowners_url": "https://github.com/acme/InferenceX/blob/main/.github/CODEOWNERS",
        "checklist_url": "https://github.com/acme/InferenceX/blob/main/docs/PR_REVIEW_CHECKLIST.md",
        "use_command": "/use",
    }
    judge = {
        "workflow": "signoff-judge.yml",
        "dispatch_id": "so-12-0a1b2c3d4e5f",
        "url": "",
        "error": "",
        "summary": "",
    }
    plain = lambda checks: rules.shown(rules.check_rows(checks))  # noqa: E731
    out = [
        {**base, "checks": plain(checks)},
        {
            **base,
            "checks": plain([checks[0], checks[4], checks[12], checks[18], checks[23]]),
            "outcome": "pass",
            "source": "review",
            "covered": [],
            "not_verified": [],
        },
        {**base, "checks": plain(checks[:1]), "state": "stale", "current_sha": now, "source": "review-comment"},
        {**base, "checks": plain(checks[:1]), "state": "stale", "current_sha": now, "head_sha": ""},  # unnamed
        {**base, "checks": plain(checks[:1]), "state": "withdrawn"},
        {
            **base,
            "checks": plain([checks[0], checks[13], checks[18], checks[23]]),
            "outcome": "pass",
            "not_verified": ["Verified that this PR passes evals."],
        },
    ]  # a PASS, one item collapsed
    for state, extra in (
        ("requested", {"url": "https://github.com/acme/InferenceX/actions/runs/9"}),
        ("dispatch_failed", {"error": "422 Workflow does not have 'workflow_dispatch' trigger"}),
        ("pass", {}),
        ("fail", {"summary": "The recipe sets --hf-overrides."}),
        ("error", {}),
    ):
        out.append({**base, "checks": plain(checks[:1]), "judge": {**judge, "state": state, **extra}})
    # waiting, for each thing a verdict waits for: a sweep running and a pin, with another owner group;
    # a failed sweep and a pin; a pin no longer eligible and many groups; no sweep yet; a sweep running; a pin
    waits = ([3, 15, 20], [4, 14, 20], [5, 13, 19], [4, 16, 21], [4, 15, 21], [4, 13, 20])
    out += [{**base, "checks": plain([checks[0], checks[23]] + [checks[i] for i in more])} for more in waits]
    # failing, for each check of the sign-off's own that fails it, while its sweep still runs
    fails = ([1], [8], [9], [10], [11], [0, 24], [0, 25], [0, 26], [0, 27], [0, 7])
    out += [
        {
            **base,
            "checks": plain(
                [checks[i] for i in own] + [checks[4], checks[15], checks[20], checks[23]]
                if len(own) == 1
                else [checks[own[0]], checks[own[1]], checks[15], checks[20]]
            ),
        }
        for own in fails
    ]
    for sample in out:  # each verdict's outcome as the rules give it
        sample["outcome"] = rules.outcome(
            rules.Check(c["name"], c["ok"], c["code"], c["params"]) for c in sample["checks"]
        )
    return out


def _run_comment_samples() -> list[dict]:
    """Run comments as the sweep gate builds them: a success with its viewer links, a failure naming more
    failed jobs than are shown, a rerun attempt with one hostile job name, and a run cancelled by hand."""
    from bot.rules.links import viewer_links
    from bot.rules.run_report import next_step, summarize_jobs

    def jobs(listed):
        s = summarize_jobs({"id": 500 + i, "name": name, "conclusion": c} for i, (name, c) in enumerate(listed))
        return {
            "succeeded": s.succeeded,
            "failed": s.failed,
            "cancelled": s.cancelled,
            "skipped": s.skipped,
            "other": s.other,
            "more_failed": s.more_failed,
            "failed_jobs": [
                {"name": j.name, "url": f"https://github.com/acme/InferenceX/actions/runs/1006/job/{j.job_id}"}
                for j in s.failed_jobs
            ],
        }

    base = {
        "run_id": 1006,
        "attempt": 1,
        "head_sha": "d55207c21fee12d6cceeeaeba9f9f91a90d71c86",
        "dispatch_id": "sw-12-0a1b2c3d4e5f",
        "url": "https://github.com/acme/InferenceX/actions/runs/1006",
        "results": None,
        "author": "partner",
        "use_command": "/use",
    }
    many = [(f"bmk (mi355x, {i})", "failure") for i in range(23)] + [("build", "success"), ("evals", "skipped")]
    return [
        {
            **base,
            "conclusion": "success",
            "next": next_step("success"),
            "jobs": jobs([("build", "success"), ("bmk", "success"), ("evals", "skipped")]),
            "results": viewer_links("https://inferencex.semianalysis.com", 1006),
        },
        {**base, "conclusion": "failure", "next": next_step("failure"), "jobs": jobs(many)},
        {
            **base,
            "conclusion": "failure",
            "attempt": 2,
            "next": next_step("failure"),
            "jobs": jobs(
                [
                    ("bmk `x` [click](https://evil.example)\n/use 1", "failure"),
                    ("build", "cancelled"),
                    ("odd", "action_required"),
                ]
            ),
        },
        {**base, "conclusion": "cancelled", "next": next_step("cancelled"), "jobs": jobs([("bmk", "cancelled")])},
    ]


# the merge notice once the results service has ingested its run: the counts of each ingest report sample
SAMPLES["merge_reuse"] += [
    {**SAMPLES["merge_reuse"][0], "report": {k: v for k, v in report.items() if k not in ("run_id", "run_url")}}
    for report in SAMPLES["ingest_report"]
]
MERGE_REFUSALS = [  # one of each refusal code (bot/rules/merge.py), with the params the handler keeps
    {"code": "not-open", "fixer": "author", "params": {"state": "closed", "merged": False}},
    {"code": "draft", "fixer": "author", "params": {}},
    {"code": "wrong-base", "fixer": "author", "params": {"base": "release", "expected": "main"}},
    {"code": "no-primary-label", "fixer": "maintainer", "params": {"primaries": ["full-sweep-fail-fast"]}},
    {"code": "several-primary-labels", "fixer": "maintainer", "params": {"labels": ["a", "b"]}},
    {"code": "reuse-blocked", "fixer": "maintainer", "params": {"labels": ["evals-only"]}},
    {"code": "pin-not-eligible", "fixer": "maintainer", "params": {"verdict": {"code": "no-result-artifact"}}},
    {"code": "pin-stale", "fixer": "maintainer", "params": {"files": ["benchmarks/a.sh"]}},
    {"code": "no-eligible-run", "fixer": "maintainer", "params": {"others": []}},
    {"code": "signoff-missing", "fixer": "codeowner", "params": {"conclusion": None}},
    {
        "code": "changelog-invalid",
        "fixer": "author",
        "params": {"reason": "errors", "error_count": 3, "error_count_is_lower_bound": False},
    },
    {
        "code": "changelog-invalid",
        "fixer": "author",
        "params": {"reason": "no-entry", "error_count": 0, "error_count_is_lower_bound": False},
    },
    {"code": "changelog-not-append", "fixer": "author", "params": {}},
    {"code": "changelog-duplicate", "fixer": "author", "params": {"duplicates": [{"line": 12, "base_line": 3}]}},
    {"code": "pr-url-not-canonical", "fixer": "maintainer", "params": {"pr_url": "https://x/pull/1", "prefix": "p"}},
    {"code": "changelog-base-unreadable", "fixer": "maintainer", "params": {"problem": "not a YAML list"}},
    {"code": "changelog-result-invalid", "fixer": "maintainer", "params": {}},
    {"code": "conflict", "fixer": "author", "params": {"files": ["benchmarks/a.sh", "configs/b.yaml"]}},
]
MERGE_REPLY: dict[str, Any] = {
    "requester": "maintainer",
    "refusals": [],
    "run": None,
    "sha": "",
    "error": "",
    "use_command": "/use",
    "merge_command": "/merge",
}
SAMPLES["merge_reply"] = [
    {**MERGE_REPLY, "outcome": "refused", "refusals": MERGE_REFUSALS},
    {**MERGE_REPLY, "outcome": "refused", "refusals": MERGE_REFUSALS[1:2]},
    {**MERGE_REPLY, "outcome": "merged", "run": {"id": 333, "url": "https://x/runs/333"}, "sha": "a" * 40},
    {**MERGE_REPLY, "outcome": "github_refused", "error": "405: Required status check is expected"},
    {**MERGE_REPLY, "outcome": "unauthorized"},
    {**MERGE_REPLY, "outcome": "permission_unknown"},
]
# no results service (policy results.mode none): the merge notice for each outcome, a pin's staging and a merged
# PR's ingest sections, and /stage-results refused
_OFF = {"state": "off", "repository": "SemiAnalysisAI/InferenceX-app", "error": None}
SAMPLES["merge_reuse"] += [
    {**sample, "ingest": _OFF, "report": None}
    for sample in SAMPLES["merge_reuse"]
    if sample["report"] is None and not sample["after_merge"]
]
SAMPLES["reuse_reply"] += [
    {
        **sample,
        "staging": {**sample["staging"], "state": "off"},
        "ingest": ingest,
    }
    for sample in [next(s for s in SAMPLES["reuse_reply"] if s["staging"] is not None)]
    for ingest in (None, _OFF)
]
SAMPLES["stage_reply"] += [{**SAMPLES["stage_reply"][0], "outcome": "no_results_service", "staging": None}]
SAMPLES["run_comment"] = _run_comment_samples()


def _board_samples() -> list[dict]:
    """The board with a PR in every group and every sweep and sign-off state, the queues, and cut rows."""
    from bot.rules import board as rules
    from handlers.board import _shown

    url = "https://github.com/acme/InferenceX/actions/runs/"
    rows = [
        rules.Row(1, "MI355X | recipe `x`", "partner", unknown=("sw-1-0a1b2c3d4e5f",)),
        rules.Row(2, "Fork recipe", "vendor", fork=True, approved=False, asks=True),
        rules.Row(
            3,
            "Ready",
            "partner",
            sweep=rules.PASSED,
            run_id=1003,
            run_url=url + "1003",
            pin=1003,
            expires="2026-03-01T00:00:00Z",
            signoff=rules.SIGNED,
            signers=("amd-owner", "core"),
        ),
        rules.Row(
            4,
            "Green",
            "partner",
            fork=True,
            approved=True,
            asks=True,
            sweep=rules.PASSED,
            run_id=1004,
            run_url=url + "1004",
        ),
        rules.Row(
            5,
            "Pinned",
            "partner",
            sweep=rules.PASSED,
            run_id=1005,
            run_url=url + "1005",
            pin=1005,
            signoff=rules.SIGNOFF_WAITS,
        ),
        rules.Row(6, "No label yet", "partner"),
        rules.Row(
            7,
            "Failed",
            "partner",
            asks=True,
            sweep=rules.FAILED,
            run_id=1007,
            run_url=url + "1007",
            signoff=rules.SIGNOFF_FAILED,
        ),
        rules.Row(
            8,
            "Running",
            "partner",
            asks=True,
            sweep=rules.RUNNING,
            run_id=1008,
            run_url=url + "1008",
            since="2026-01-01T10:00:00Z",
        ),
        rules.Row(9, "Queued", "partner", asks=True, sweep=rules.QUEUED, pool="mi355x", position=1),
        rules.Row(10, "Cancelled", "partner", asks=True, sweep=rules.CANCELLED, run_id=1010, run_url=None),
    ]
    queues = [
        {"pool": "mi355x", "limit": 1, "running": [8], "waiting": [9]},
        {"pool": "gb200", "limit": 2, "running": [], "waiting": []},
    ]

    def board(shown, left_out, queues):
        groups = [{"group": g, "rows": [_shown(r) for r in rs]} for g, rs in rules.sections(shown)]
        return {"groups": groups, "left_out": left_out, "queues": queues, "tracked": len(rows), "interval": 60}

    return [board(rows, 0, queues), board(rows[:3], 7, []), board(rows[:1], 1, queues)]


SAMPLES["board"] = _board_samples()

SAMPLES["sweep_status"] = _status_samples()
SAMPLES["changelog_annotation"] = _annotation_samples()
SAMPLES["signoff_verdict"] = _signoff_samples()


def _stale_branch_samples() -> list[dict]:
    """One note per kind of the stale-branch guard's findings, built by its rules (bot/rules/stale_branch.py)."""
    from bot.core.config import default_policy
    from bot.rules import stale_branch as sb

    policy = default_policy()
    on_base, in_pr = "ae3d6877" + "1" * 32, "545233a0" + "2" * 32
    found = [
        sb.submodule_finding(
            "utils/srt-slurm",
            on_base,
            in_pr,
            "acme/srt-slurm",
            sb.Compared("behind", 0, 8),
            policy,
            sb.LastMove("b" * 40, 1380),
        ),
        sb.submodule_finding(
            "utils/srt-slurm", on_base, in_pr, "acme/srt-slurm", sb.Compared("diverged", 1, 2), policy
        ),
        sb.submodule_finding("utils/srt-slurm", in_pr, on_base, "acme/srt-slurm", sb.Compared("ahead", 1, 0), policy),
        sb.submodule_finding("utils/aiperf", on_base, in_pr, None, None, policy),
        sb.reverted_finding("inferencex-e2e/recipes/a.sh", "c" * 40, policy, 1402),
        sb.Finding(
            sb.UNCOVERED_KEY, sb.REFUSE, "inferencex-e2e/configs/amd-master.yaml", {"key": "dsr1-fp4", "line": 1}
        ),
        sb.Finding(sb.UNCHANGED_KEY, sb.INFO, policy.paths.changelog, {"key": "gptoss-*", "line": 12}),
    ]
    return [{"f": f.plain()} for f in found if f is not None]


SAMPLES["stale_branch_annotation"] = _stale_branch_samples()


def _suggestion_samples() -> list[dict]:
    """A line comment per kind of one-click fix, from real errors (handlers/changelog_suggestions.py)."""
    from bot.rules.changelog import check_append
    from bot.rules.changelog.suggestions import suggestions

    prefix = "https://github.com/SemiAnalysisAI/InferenceX/pull/"
    base = b"- config-keys:\n    - a\n  description:\n    - b\n  pr-link: " + prefix.encode() + b"1\n"
    entry = b"- config-keys:\n    - c\n  description:\n    - d\n"
    head = base + entry + b"  pr-link: TBD\n\n\n" + entry + b"  pr-link:   XXX\n\n\n"
    errors = check_append(base, head, pr_number=12, canonical_prefix=prefix).errors
    fixes = suggestions(errors, head, pr_number=12, canonical_prefix=prefix)
    assert [f.code for f in fixes] == [
        "separator",
        "pr-link-not-accepted",
        "separator",
        "pr-link-format",
        "trailing-newline",
    ]
    by_line = {e.line: e for e in errors}
    return [
        {
            "e": {"line": f.error_line, "code": f.code, "params": dict(by_line[f.error_line].params)},
            "deleted": 0 if f.lines else f.line - f.start_line + 1,
        }
        for f in fixes
    ]


DEFAULT_BRANCH = {
    "path": "inferencex-e2e/perf-changelog.yaml",
    "prefix": "https://github.com/SemiAnalysisAI/InferenceX/pull/",
    "commit_sha": "d55207c21fee12d6cceeeaeba9f9f91a90d71c86",
    "commit_url": "https://github.com/acme/InferenceX/commit/d55207c21fee12d6cceeeaeba9f9f91a90d71c86",
    "links": [],
    "others": [],
    "unlisted": 0,
}
BLAME = "https://github.com/acme/InferenceX/blob/d55207c21fee12d6cceeeaeba9f9f91a90d71c86/inferencex-e2e/perf-changelog.yaml"
SAMPLES["default_branch_changelog"] = [
    DEFAULT_BRANCH,
    {
        **DEFAULT_BRANCH,
        "links": [
            {
                "line": 11,
                "value": "XXX",
                "pr_number": 42,
                "pr_url": "https://github.com/acme/InferenceX/pull/42",
                "expected": "https://github.com/SemiAnalysisAI/InferenceX/pull/42",
                "line_url": BLAME + "#L11",
            },
            # a value with a table's `|`, a backtick and a command: one cell, one line
            {
                "line": 17,
                "value": "T|B`D\n/use 1",
                "pr_number": None,
                "pr_url": None,
                "expected": None,
                "line_url": BLAME + "#L17",
            },
        ],
    },
    {
        **DEFAULT_BRANCH,
        "others": [{"line": 1, "code": "too-complex", "params": {"cause": "unfinished"}}],
        "unlisted": 3,
    },
]
SAMPLES["changelog_suggestion"] = _suggestion_samples()
SAMPLES["changelog_suggestions"] = [
    {
        "count": 1,
        "more": 0,
        "path": "inferencex-e2e/perf-changelog.yaml",
        "head_sha": "d55207c21fee12d6cceeeaeba9f9f91a90d71c86",
    },
    {
        "count": 20,
        "more": 3,
        "path": "inferencex-e2e/perf-changelog.yaml",
        "head_sha": "d55207c21fee12d6cceeeaeba9f9f91a90d71c86",
    },
]
SAMPLES["changelog_suggestions_outdated"] = [{"head_sha": "d55207c21fee12d6cceeeaeba9f9f91a90d71c86"}]
SAMPLES["signoff_summary"] = [
    {
        "head_sha": "d55207c21fee12d6cceeeaeba9f9f91a90d71c86",
        "verdicts": [
            {
                "signer": signer,
                "outcome": outcome,
                "state": state,
                "head_sha": "d55207c21fee12d6cceeeaeba9f9f91a90d71c86",
                "url": "https://github.com/acme/InferenceX/pull/12#issuecomment-12",
            }
            for signer, outcome, state in (
                ("amd-owner", "pass", "fresh"),
                ("nv-owner", "wait", "fresh"),
                ("drive-by", "fail", "fresh"),
                ("nv-owner", "pass", "stale"),
                ("old-owner", "pass", "withdrawn"),
            )
        ]
        + [
            {
                "signer": "rebased-owner",
                "outcome": "pass",
                "state": "stale",
                "head_sha": "",  # a head a force push replaced
                "url": "https://github.com/acme/InferenceX/pull/12#issuecomment-13",
            }
        ],
    }
]


def samples(kind: str) -> list[dict]:
    found = SAMPLES.get(kind)
    assert found, f"kind {kind!r} has no SAMPLES entry: add at least one variable dict for it"
    return [copy.deepcopy(sample) for sample in found]


def halves(text: str) -> tuple[str, str]:
    """(English, Chinese), split at the 中文 heading line."""
    before, heading, after = text.partition(f"\n{HEADING}\n")
    assert heading, "no 中文 heading line"
    return before, after


def code_spans(text: str) -> list[str]:
    """The contents of the inline code spans in `text`, as CommonMark reads them (one level)."""
    spans, pos = [], 0
    while (opening := re.compile(r"`+").search(text, pos)) is not None:
        fence = opening.group()
        closing = re.compile(rf"(?<!`){fence}(?!`)").search(text, opening.end())
        if closing is None:
            pos = opening.end()
            continue
        content = text[opening.end() : closing.start()].replace("\n", " ")
        if content[:1] == content[-1:] == " " and content.strip():
            content = content[1:-1]
        spans.append(content)
        pos = closing.end()
    return spans


def command_names(sample: dict) -> set[str]:
    names = set(COMMAND_NAMES)
    names.update(entry["name"] for entry in sample.get("commands", []))
    names.update(sample[key].removeprefix("/") for key in ("use_command", "reuse_command") if key in sample)
    return names


# --- every kind ---------------------------------------------------------------------------------


def test_every_kind_has_samples_and_every_sample_a_kind():
    assert KINDS, "no templates found"
    assert set(SAMPLES) == set(KINDS)


def test_no_template_file_lacks_its_other_language():
    for path in DEFAULT_DIRECTORY.iterdir():
        if path.name in ("layout.md.j2", "GLOSSARY.md"):  # the layout; the terms both languages use
            continue
        kind, _, rest = path.name.partition(".")
        if kind.startswith("_") and rest in ("en.j2", "zh.j2"):  # partials: macros a kind imports, per language
            other = "zh" if rest.startswith("en") else "en"
            assert (path.parent / f"{kind}.{other}.j2").is_file(), f"{path.name} lacks its {other} twin"
            continue
        if rest in ("en.html.j2", "zh.html.j2"):  # web pages (autoescaped): `sweepbot setup`'s, per language
            other = "zh" if rest.startswith("en") else "en"
            assert (path.parent / f"{kind}.{other}.html.j2").is_file(), f"{path.name} lacks its {other} twin"
            continue
        if rest in ("en.txt.j2", "zh.txt.j2"):  # one-line titles: `<kind>_title.<lang>.txt.j2`
            other = "zh" if rest.startswith("en") else "en"
            assert (path.parent / f"{kind}.{other}.txt.j2").is_file(), f"{path.name} lacks its {other} twin"
            continue
        assert rest in ("en.md.j2", "zh.md.j2"), f"unexpected file in templates/: {path.name}"
        assert kind in KINDS, f"{path.name} has no counterpart in the other language"


@pytest.mark.parametrize("kind", KINDS)
def test_both_languages_render(kind):
    for sample in samples(kind):
        english, chinese = halves(TEMPLATES.render(kind, **sample))
        assert english.strip() and chinese.strip()
        assert not CJK.search(english), f"CJK text in the English half: {CJK.search(english).group()!r}"
        assert len(CJK.findall(chinese)) >= 10, "the Chinese half has (almost) no Chinese text"


@pytest.mark.parametrize("kind", KINDS)
def test_layout_shape(kind):
    for sample in samples(kind):
        text = TEMPLATES.render(kind, **sample)
        assert text.endswith("\n") and not text.endswith("\n\n")
        assert text == text.lstrip()
        assert text.count(f"\n{HEADING}\n") == 1
        english, _ = halves(text)
        assert english.endswith("\n\n---\n"), "English, a blank line, then the --- rule"
        assert "<!--" not in text, "the layout and templates add no marker or HTML comment"
        assert "\n\n\n" not in text, "no double blank lines"
        assert all(line == line.rstrip() for line in text.splitlines()), "trailing whitespace on a line"


@pytest.mark.parametrize("kind", KINDS)
def test_both_languages_use_the_same_variables(kind):
    declared = TEMPLATES.variables(kind)
    assert set(declared) == {"en", "zh"}
    assert declared["en"] == declared["zh"]
    assert declared["en"], "a template without variables"


@pytest.mark.parametrize("kind", KINDS)
def test_each_sample_supplies_exactly_the_declared_variables(kind):
    declared = TEMPLATES.variables(kind)["en"]
    for sample in samples(kind):
        assert set(sample) == declared


@pytest.mark.parametrize("kind", KINDS)
def test_a_missing_variable_raises(kind):
    for sample in samples(kind):
        for name in sample:
            partial = {key: value for key, value in sample.items() if key != name}
            with pytest.raises(jinja2.UndefinedError):
                TEMPLATES.render(kind, **partial)


@pytest.mark.parametrize("kind", KINDS)
def test_no_rendered_line_is_a_command(kind):
    for sample in samples(kind):
        text = TEMPLATES.render(kind, **sample)
        assert find_commands(text, command_names(sample)) == []


def test_the_command_check_is_not_vacuous():
    names = command_names(SAMPLES["welcome"][2]) | command_names(SAMPLES["help"][-1])
    for line in ("/use 1234567890", "  /reuse-sweep-run", "/stage-results", "/help", "/pin 1", "/commands"):
        assert find_commands(f"text\n{line}\nmore", names), line


@pytest.mark.parametrize("kind", KINDS)
def test_both_languages_carry_the_same_code_and_links(kind):
    for sample in samples(kind):
        english, chinese = halves(TEMPLATES.render(kind, **sample))
        assert sorted(set(code_spans(english))) == sorted(set(code_spans(chinese)))
        assert sorted(set(URL.findall(english))) == sorted(set(URL.findall(chinese)))


# --- welcome ------------------------------------------------------------------------------------


WELCOME_IDS = ["same-repo", "same-repo-changelog", "fork", "fork-changelog", "renamed"]
# What only a maintainer does (label the PR, pin a run), in words and in this repository's names: no step the
# welcome numbers as its reader's may name one of them.
MAINTAINER_ONLY = (re.compile(r"\blabel|\bpin", re.I), re.compile("标签|固定"))


def welcome_parts(sample: dict) -> list[tuple[str, list[str], list[str]]]:
    """Per language: (the opening line, the numbered steps, the other visible paragraphs), as Markdown lines of
    the part outside the collapsed `<details>`."""
    parts = []
    for half in halves(TEMPLATES.render("welcome", **sample)):
        shown = half.split("<details>")[0]
        lines = [line for line in shown.splitlines() if line.strip()]
        steps = [line for line in lines if re.match(r"\d+\. ", line)]
        parts.append((lines[0], steps, [line for line in lines[1:] if line not in steps]))
    return parts


@pytest.mark.parametrize("sample", SAMPLES["welcome"], ids=WELCOME_IDS)
def test_welcome_lists_every_label_and_modifier(sample):
    text = TEMPLATES.render("welcome", **sample)
    for half, recommended in zip(halves(text), ("(recommended)", "（推荐）")):
        spans = code_spans(half)
        lines = half.splitlines()
        for label in sample["primary_labels"]:
            assert label["name"] in spans
            [line] = [line for line in lines if line.startswith("- ") and code_spans(line)[:1] == [label["name"]]]
            assert (recommended in line) == label["recommended"], line
        assert sum(recommended in line for line in lines) == 1
        for name in sample["modifiers"].values():
            assert name in spans
            assert any(line.startswith("- ") and code_spans(line)[:1] == [name] for line in lines), name
        for key in ("changelog_path", "signoff_phrase"):
            assert sample[key] in spans
        assert f"{sample['use_command']} <run_id>" in spans
        assert f"{sample['reuse_command']} <run_id>" in spans
        assert sample["reuse_command"] in spans
        assert f"@{sample['author']}" in half


def test_welcome_uses_the_names_it_is_given():
    text = TEMPLATES.render("welcome", **RENAMED_WELCOME)
    defaults = [label["name"] for label in DEFAULT_LABELS] + list(DEFAULT_MODIFIERS.values())
    defaults += [WELCOME["changelog_path"], WELCOME["signoff_phrase"], WELCOME["use_command"], "SemiAnalysisAI"]
    for name in defaults:
        assert name not in text, name
    assert "``sweep-odd`tick``" in text


def test_welcome_describes_each_primary_label():
    english, chinese = halves(TEMPLATES.render("welcome", **WELCOME))
    assert "- `full-sweep-fail-fast` (recommended): runs a canary first; each matrix stops at its first" in english
    assert "- `non-canary-full-sweep-enabled`: no canary run; every matrix runs to the end." in english
    assert "- `full-sweep-fail-fast`（推荐）：先运行 canary；每个 matrix 遇到第一个失败即停止。" in chinese


@pytest.mark.parametrize("sample", SAMPLES["welcome"], ids=WELCOME_IDS)
def test_a_welcomes_numbered_steps_are_its_readers_own(sample):
    """Regression: the welcome numbered five steps for its reader, a fork's author among them, two of
    which only a maintainer can do (add the primary label, pin a run with `/use`). The steps now name no
    maintainer's action or command; one line after them says what maintainers do."""
    names = [label["name"] for label in sample["primary_labels"]] + list(sample["modifiers"].values())
    names += [sample["use_command"], sample["reuse_command"]]
    for (opening, steps, others), words, (label, pin, merge) in zip(
        welcome_parts(sample), MAINTAINER_ONLY, (("label", "pin", "merge"), ("标签", "固定", "合并"))
    ):
        assert steps, "no steps"
        for step in steps:
            assert not words.search(step), step
            assert not any(name in step for name in names), step
        assert not words.search(opening) and "@" + sample["author"] in opening
        [maintainers] = [line for line in others if words.search(line)]
        assert label in maintainers and pin in maintainers and merge in maintainers
        assert not any(name in maintainers for name in names), "commands and labels stay in the details"


def test_same_repository_and_fork_welcomes_have_the_same_shape():
    """A same-repository PR's author sees the steps a fork's author sees; only the maintainers' line
    adds, for a fork, that a label must be added again after each push."""
    same, fork = (welcome_parts({**WELCOME, "is_fork": is_fork}) for is_fork in (False, True))
    for (opening, steps, others), (fork_opening, fork_steps, fork_others), clause in zip(
        same, fork, (" (again after each push: it comes from a fork)", "（它来自 fork：每次推送后都要重新添加）")
    ):
        assert (opening, steps) == (fork_opening, fork_steps)
        assert len(others) == len(fork_others)
        assert [line.replace(clause, "") for line in fork_others] == others
        assert clause in fork_others[0] and clause not in others[0]


@pytest.mark.parametrize("is_fork", [False, True], ids=["same-repo", "fork"])
def test_a_pr_that_changes_the_changelog_is_not_told_to_append_an_entry(is_fork):
    """Regression: the welcome told every author to "append at least one entry" to the changelog, also
    when their PR already held a valid one. A PR that changes the changelog is now told that the sweep status
    comment says whether the entry is valid; one that does not is told to append one."""
    for changelog_in_pr in (False, True):
        english, chinese = halves(
            TEMPLATES.render("welcome", **{**WELCOME, "is_fork": is_fork, "changelog_in_pr": changelog_in_pr})
        )
        english, chinese = english.split("<details>")[0], chinese.split("<details>")[0]
        assert ("append" in english.lower()) is (not changelog_in_pr)
        assert ("追加" in chinese) is (not changelog_in_pr)
        assert ("sweep status comment says if your [changelog]" in english) is changelog_in_pr
        assert ("sweep 状态评论会说明你的 [changelog]" in chinese) is changelog_in_pr
        assert f"]({WELCOME['changelog_url']})" in english and f"]({WELCOME['changelog_url']})" in chinese


def test_welcome_keeps_the_fork_rule_in_the_details():
    for is_fork in (False, True):
        english, chinese = halves(TEMPLATES.render("welcome", **{**WELCOME, "is_fork": is_fork}))
        details = [half.split("<details>")[1] for half in (english, chinese)]
        assert "On a PR from a fork, only a label added by a maintainer" in details[0]
        assert "removes the label and adds it again" in details[0]
        assert "对于来自 fork 的 PR，只有维护者" in details[1] and "移除该标签并重新添加" in details[1]


# --- ingest report ------------------------------------------------------------------------------


def test_the_ingest_reports_closing_line_says_rows_in_both_languages():
    """Regression: with no failure, the English said "All rows were ingested" and the Chinese
    所有类别均已导入 ("all categories"): one fact, two words. Both now say rows: 行, as templates/GLOSSARY.md has."""
    sample = next(s for s in SAMPLES["ingest_report"] if not any(c["failed"] for c in s["counts"].values()))
    english, chinese = halves(TEMPLATES.render("ingest_report", **sample))
    assert "All rows were ingested without failures." in english
    assert "表中所有行均已导入，没有任何失败。" in chinese


# --- help ---------------------------------------------------------------------------------------


def test_help_samples_cover_every_usage_problem():
    keys = {sample["problem"]["key"] for sample in SAMPLES["help"] if sample["problem"]}
    assert keys == set(USAGE_PROBLEMS) and None in [sample["problem"] for sample in SAMPLES["help"]]


def test_help_opens_with_the_problem_and_a_sentence_for_its_key():
    openings = set()
    for key, text in PROBLEM_TEXTS.items():
        rendered = TEMPLATES.render("help", **{**HELP, "problem": {"text": text, "key": key}})
        for half in halves(rendered):
            before_list = half.split("###")[0]
            assert text in code_spans(before_list)
            assert "`/use 1234567890`" in before_list
            openings.add(before_list)
    assert len(openings) == 2 * len(PROBLEM_TEXTS), "each key needs its own sentence"
    plain = halves(TEMPLATES.render("help", **HELP))
    assert all("`/use 1234567890`" not in half.split("###")[0] for half in plain)


def test_help_lists_every_command_with_who_and_an_example():
    english, chinese = halves(TEMPLATES.render("help", **HELP))
    rows = [line for line in english.splitlines() if line.startswith("| `/")]
    assert [code_spans(row)[0].split()[0] for row in rows] == [f"/{name}" for name in DEFAULT_COMMANDS.values()]
    for row in rows[:4]:
        assert "write, maintain or admin" in row
    assert "Anyone" in rows[4]
    assert [row.split("|")[-2].strip() for row in rows] == [
        "`/use 1234567890`",
        "`/reuse-sweep-run 1234567890` or `/reuse-sweep-run`",
        "`/stage-results 1234567890`",
        "`/merge`",
        "`/help`",
    ]
    zh_rows = [line for line in chinese.splitlines() if line.startswith("| `/")]
    assert len(zh_rows) == 5 and "任何人" in zh_rows[4]
    assert all("write、maintain 或 admin" in row for row in zh_rows[:4])


def test_help_refuses_an_unknown_problem_key():
    with pytest.raises(jinja2.UndefinedError, match="no text for problem key"):
        TEMPLATES.render("help", **{**HELP, "problem": {"text": "/use x", "key": "no-such-key"}})


# --- config_invalid and truncated ---------------------------------------------------------------


def test_config_invalid_names_the_file_commit_errors_and_fallback():
    english, chinese = halves(TEMPLATES.render("config_invalid", **CONFIG_INVALID))
    for half in (english, chinese):
        assert f"[`0f1e2d3`]({CONFIG_INVALID['commit_url']})" in half
        assert "`.github/sweepbot.yml`" in half
        for error in CONFIG_INVALID["errors"]:
            assert f"\n- {error}\n" in half
    assert "built-in defaults are in force" in english and "内置的默认配置" in chinese
    assert "closes this issue itself" in english and "自动关闭这个 issue" in chinese

    english, chinese = halves(TEMPLATES.render("config_invalid", **{**CONFIG_INVALID, "last_good": "9a8b7c6"}))
    assert "configuration from commit `9a8b7c6` stays in force" in english
    assert "commit `9a8b7c6` 中的配置" in chinese
    assert "built-in defaults" not in english and "默认配置" not in chinese


def test_config_invalid_keeps_each_error_on_one_line():
    english, _ = halves(TEMPLATES.render("config_invalid", **SAMPLES["config_invalid"][2]))
    assert "\n- policy.commands.use: bad value /use 1234\n" in english


def test_truncated_states_the_limit_and_where_to_look():
    english, chinese = halves(TEMPLATES.render("truncated", limit=65536))
    assert "65536 characters" in english and "65536 个字符" in chinese
    assert "workflow run" in english and "bot's logs" in english
    assert "workflow run 的日志" in chinese and "bot 的日志" in chinese


# --- the loader ---------------------------------------------------------------------------------


def test_default_directory_is_the_repositorys_templates():
    assert TEMPLATES.directory == Path(__file__).resolve().parent.parent / "templates"


def test_a_kind_missing_a_language_is_refused(tmp_path):
    (tmp_path / "layout.md.j2").write_text((DEFAULT_DIRECTORY / "layout.md.j2").read_text())
    (tmp_path / "half.en.md.j2").write_text("Only English.\n")
    (tmp_path / "whole.en.md.j2").write_text("Hello {{ name }}.\n")
    (tmp_path / "whole.zh.md.j2").write_text("你好，{{ name }}。\n")
    templates = Templates(tmp_path)
    assert templates.kinds() == ["whole"]
    assert templates.render("whole", name="x") == "Hello x.\n\n---\n\n## 中文\n\n你好，x。\n"
    with pytest.raises(KindNotFound, match=r"half\.zh\.md\.j2"):
        templates.render("half")
    with pytest.raises(KindNotFound, match=r"half\.zh\.md\.j2"):
        templates.variables("half")
    with pytest.raises(KindNotFound, match=r"nothing\.en\.md\.j2, nothing\.zh\.md\.j2"):
        templates.render("nothing")
    assert issubclass(KindNotFound, jinja2.TemplateNotFound)


def test_a_missing_key_inside_a_mapping_raises():
    modifiers = {key: value for key, value in DEFAULT_MODIFIERS.items() if key != "agentx_fast"}
    with pytest.raises(jinja2.UndefinedError):
        TEMPLATES.render("welcome", **{**WELCOME, "modifiers": modifiers})
    with pytest.raises(jinja2.UndefinedError):
        TEMPLATES.render("welcome", **{**WELCOME, "primary_labels": [{"name": "x", "canary": True}]})


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("plain", "`plain`"),
        ("a`b", "``a`b``"),
        ("`x`", "`` `x` ``"),
        ("a``b`", "``` a``b` ```"),
        (" lead", "`  lead `"),
        ("one\ntwo\r\nthree", "`one two three`"),
        ("", "` `"),
        (12, "`12`"),
    ],
)
def test_code_span(value, expected):
    assert code_span(value) == expected
    assert code_spans(f"x {expected} y") == [" " if value == "" else str(value).replace("\r\n", " ").replace("\n", " ")]


def test_issue_title_is_one_line_in_both_languages():
    title = Templates().title("config_invalid")
    english, chinese = title.split(" / ")
    assert "\n" not in title
    assert ".github/sweepbot.yml" in english and ".github/sweepbot.yml" in chinese
    assert not CJK.search(english) and CJK.search(chinese)


def test_sweep_gate_button_words_are_one_line_in_both_languages_and_fit_github():
    """The `sweep-gate` check's buttons: label at most 20 characters, description at most 40."""
    for button in ("sweep-again", "approve-head", "merge"):
        for part, limit in (("label", 20), ("description", 40)):
            text = Templates().title("sweep_button", button=button, part=part)
            english, chinese = text.split(" / ")
            assert english and chinese and "\n" not in text and len(text) <= limit
    with pytest.raises(jinja2.UndefinedError):
        Templates().title("sweep_button", button="deploy", part="label")
