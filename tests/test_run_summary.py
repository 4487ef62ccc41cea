"""The run summary convention (bot/rules/run_summary.py): the tokens the gate writes, and the reply reads back."""

from __future__ import annotations

import pytest

from bot.rules.changelog import AppendedEntry
from bot.rules.run_summary import RunSummary, summarize, summary_tokens

# --- reading: summarize ---------------------------------------------------------------------------

FULL = "model=DeepSeek-R1 scenario=1k1k precision=fp8 hardware_framework=mi355x_sglang date=2025-06-30"
SUMMARY = RunSummary("DeepSeek-R1", "1k1k", "fp8", "mi355x_sglang", "2025-06-30")

SUMMARY_CASES = [
    ("after-dispatch-id", {"display_title": f"Sweep sw-7-0123456789ab {FULL}"}, SUMMARY),
    (
        "any-order",
        {
            "display_title": "date=2025-06-30 precision=fp8 model=DeepSeek-R1 hardware_framework=mi355x_sglang "
            "scenario=1k1k"
        },
        SUMMARY,
    ),
    ("keys-any-case", {"display_title": FULL.replace("model=", "Model=").replace("date=", "DATE=")}, SUMMARY),
    (
        "punctuated",
        {
            "display_title": "Sweep (model=DeepSeek-R1, scenario=1k1k; precision=fp8 | "
            "hardware_framework=mi355x_sglang · date=2025-06-30)"
        },
        SUMMARY,
    ),
    ("name-fallback", {"display_title": "Sweep sw-7-0123456789ab", "name": FULL}, SUMMARY),
    ("title-garbled-name-ok", {"display_title": FULL.replace("fp8", "fp<8"), "name": FULL}, SUMMARY),
    (
        "slash-and-dots",
        {"display_title": FULL.replace("DeepSeek-R1", "deepseek-ai/DeepSeek-R1-0528.v2")},
        RunSummary("deepseek-ai/DeepSeek-R1-0528.v2", "1k1k", "fp8", "mi355x_sglang", "2025-06-30"),
    ),
    ("same-key-twice-same-value", {"display_title": FULL + " precision=fp8"}, SUMMARY),
    ("absent", {"display_title": "Sweep sw-7-0123456789ab", "name": "Run Sweep"}, None),
    ("no-titles", {}, None),
    ("not-strings", {"display_title": 5, "name": ["model=x"]}, None),
    ("one-key-missing", {"display_title": FULL.replace(" date=2025-06-30", "")}, None),
    ("empty-value", {"display_title": FULL.replace("model=DeepSeek-R1", "model=")}, None),
    ("bad-characters", {"display_title": FULL.replace("DeepSeek-R1", "<b>DeepSeek</b>")}, None),
    ("backtick", {"display_title": FULL.replace("fp8", "`fp8`")}, None),
    ("non-ascii-value", {"display_title": FULL.replace("fp8", "fp８")}, None),
    ("too-long", {"display_title": FULL.replace("DeepSeek-R1", "x" * 65)}, None),
    ("conflicting-key", {"display_title": FULL + " precision=fp4"}, None),
    ("impossible-date", {"display_title": FULL.replace("2025-06-30", "2025-02-30")}, None),
    ("date-wrong-shape", {"display_title": FULL.replace("2025-06-30", "30/06/2025")}, None),
    ("key-inside-word", {"display_title": FULL.replace("model=", "xmodel=")}, None),
    (
        "stray-word-after-value",
        {"display_title": FULL.replace("fp8", "fp 8")},
        RunSummary("DeepSeek-R1", "1k1k", "fp", "mi355x_sglang", "2025-06-30"),
    ),
    ("spaced-equals", {"display_title": FULL.replace("model=", "model = ")}, None),
]


@pytest.mark.parametrize("r, expected", [pytest.param(r, e, id=i) for i, r, e in SUMMARY_CASES])
def test_summarize(r, expected):
    assert summarize(r) == expected


def test_summary_text():
    assert SUMMARY.text == "DeepSeek-R1 · 1k1k · fp8 · mi355x_sglang · 2025-06-30"


DATELESS = FULL.replace(" date=2025-06-30", "")

DATE_CASES = [
    ("started-at", {"display_title": DATELESS, "run_started_at": "2025-06-30T08:00:00Z"}, SUMMARY),
    ("created-at", {"display_title": DATELESS, "created_at": "2025-06-30T23:59:59Z"}, SUMMARY),
    ("title-date-wins", {"display_title": FULL, "run_started_at": "2024-01-01T00:00:00Z"}, SUMMARY),
    (
        "started-before-created",
        {"display_title": DATELESS, "run_started_at": "2025-06-30T00:00:00Z", "created_at": "2025-06-29T00:00:00Z"},
        SUMMARY,
    ),
    ("time-not-a-date", {"display_title": DATELESS, "run_started_at": "yesterday"}, None),
    ("time-not-a-string", {"display_title": DATELESS, "run_started_at": 1751270400}, None),
]


@pytest.mark.parametrize("r, expected", [pytest.param(r, e, id=i) for i, r, e in DATE_CASES])
def test_the_run_start_day_stands_for_a_missing_date(r, expected):
    assert summarize(r) == expected


# --- writing: summary_tokens ----------------------------------------------------------------------------


def entry(*keys: str, scenario: tuple[str, ...] = ()) -> AppendedEntry:
    return AppendedEntry(line=1, config_keys=keys, description=("d",), pr_link="XXX", scenario_type=scenario)


DSR1 = "model=dsr1 scenario=fixed-seq-len precision=fp4 hardware_framework=mi355x_sglang"

TOKEN_CASES = [
    ("one-key", [entry("dsr1-fp4-mi355x-sglang")], DSR1),
    ("suffixes-dropped", [entry("dsr1-fp4-mi355x-sglang-mtp", "dsr1-fp4-mi355x-sglang")], DSR1),
    ("two-entries-alike", [entry("dsr1-fp4-mi355x-sglang"), entry("dsr1-fp4-mi355x-sglang-disagg-8k1k-mtp")], DSR1),
    (
        "scenario-type",
        [entry("dsv4-fp4-b200-vllm-agentic-mtp", scenario=("agentic-coding",))],
        "model=dsv4 scenario=agentic-coding precision=fp4 hardware_framework=b200_vllm",
    ),
    (
        "two-scenarios",
        [entry("dsv4-fp4-b200-vllm", scenario=("fixed-seq-len", "agentic-coding"))],
        "model=dsv4 scenario=fixed-seq-len+agentic-coding precision=fp4 hardware_framework=b200_vllm",
    ),
    (
        "dynamo-keeps-its-engine",
        [entry("dsv4-fp4-gb200-dynamo-vllm-agentic-mtp-agg")],
        "model=dsv4 scenario=fixed-seq-len precision=fp4 hardware_framework=gb200_dynamo-vllm",
    ),
    ("two-hardwares", [entry("dsr1-fp4-mi355x-sglang", "dsr1-fp4-b200-sglang")], ""),
    (
        "two-scenarios-across-entries",
        [entry("dsr1-fp4-b200-sglang"), entry("dsr1-fp4-b200-sglang", scenario=("agentic-coding",))],
        "",
    ),
    ("wildcard", [entry("dsr1-fp4-*-sglang")], ""),
    ("too-few-parts", [entry("dsr1-fp4-b200")], ""),
    ("upper-case", [entry("DSR1-fp4-b200-sglang")], ""),
    ("markdown-in-key", [entry("dsr1-fp4-b200-<b>sglang</b>")], ""),
    ("empty-part", [entry("dsr1--b200-sglang")], ""),
    ("no-entries", [], ""),
]


@pytest.mark.parametrize("entries, expected", [pytest.param(e, x, id=i) for i, e, x in TOKEN_CASES])
def test_summary_tokens(entries, expected):
    assert summary_tokens(entries) == expected


@pytest.mark.parametrize("entries", [pytest.param(e, id=i) for i, e, x in TOKEN_CASES if x])
def test_what_the_gate_writes_the_reply_reads_back(entries):
    """The run-name of the example workflows: the bot's own tokens after its dispatch id give a summary dated
    by the run's start."""
    run = {
        "display_title": f"Sweep sw-7-0123456789ab for PR #7 (full-sweep) {summary_tokens(entries)}",
        "run_started_at": "2026-12-01T10:00:00Z",
    }
    summary = summarize(run)
    assert summary is not None and summary.date == "2026-12-01"
    assert f"model={summary.model} " in summary_tokens(entries)
