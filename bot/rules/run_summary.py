"""What a sweep run ran, in one line: the tokens the bot writes into a run's name and reads back from it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

from bot.rules.changelog import AppendedEntry

# The convention: `key=value` tokens anywhere in the run's display_title (then its name), e.g. a run-name
# `Sweep sw-12-0123abcd4567 for PR #12 (full-sweep) model=dsr1 scenario=fixed-seq-len precision=fp8
# hardware_framework=mi355x_sglang`. Keys are case-insensitive, in any order, separated from their neighbours
# by whitespace or `,;|()[]·`. A value is 1-64 of `A-Z a-z 0-9 . _ + : / @ -`; `date` is a real YYYY-MM-DD.
# The four keys before `date` are needed; `date` may be left out, and is then the day the run started. A missing
# or malformed key, or a key given twice with different values, means no summary (None), never an error.
SUMMARY_KEYS: tuple[str, ...] = ("model", "scenario", "precision", "hardware_framework", "date")
SUMMARY_SEPARATOR = " · "
_SUMMARY_TOKEN = re.compile(r"(?<![^\s,;|()\[\]·])(" + "|".join(SUMMARY_KEYS) + r")=([^\s,;|()\[\]·]*)", re.IGNORECASE)
_SUMMARY_VALUE = re.compile(r"[A-Za-z0-9._+:/@-]{1,64}")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# Where a run's start day is read when its name carries no `date` (GitHub's ISO 8601 times).
_RUN_TIMES = ("run_started_at", "created_at")

# What the bot writes (the sweep gate's `summary` input): read off the appended changelog entries' config keys,
# which the benchmark repository names `<model>-<precision>-<hardware>-<framework>[-<more>]`, e.g.
# `dsr1-fp4-mi355x-sglang-mtp`. A `dynamo` framework keeps the engine after it (`dynamo-sglang`).
DEFAULT_SCENARIO = "fixed-seq-len"  # an entry without `scenario-type` (docs/spec.md, "When a sweep starts")
_KEY_PART = re.compile(r"[a-z0-9.]{1,64}")
_COMPOSITE_FRAMEWORKS = frozenset({"dynamo"})


@dataclass(frozen=True)
class RunSummary:
    model: str
    scenario: str
    precision: str
    hardware_framework: str
    date: str  # YYYY-MM-DD

    @property
    def text(self) -> str:
        """`model · scenario · precision · hardware_framework · date`, as the reply shows it."""
        return SUMMARY_SEPARATOR.join(getattr(self, key) for key in SUMMARY_KEYS)


def summarize(run: Mapping[str, Any]) -> RunSummary | None:
    """The run's summary from its display_title, else its name (the convention above), or None."""
    started = _day(next((run.get(key) for key in _RUN_TIMES if isinstance(run.get(key), str)), None))
    for title in (run.get("display_title"), run.get("name")):
        summary = _summary_of(title, started)
        if summary is not None:
            return summary
    return None


def summary_tokens(entries: Iterable[AppendedEntry]) -> str:
    """The `key=value` tokens (no `date`: the run's own start day stands for it) of what every config key of
    `entries` names alike, or "" when a key has a wildcard, does not follow the naming, or two keys differ."""
    seen: set[tuple[str, str, str, str]] = set()
    for entry in entries:
        scenario = "+".join(entry.scenario_type) or DEFAULT_SCENARIO
        for key in entry.config_keys:
            named = _named_by(key)
            if named is None:
                return ""
            seen.add((named[0], scenario, named[1], named[2]))
    if len(seen) != 1:
        return ""
    (values,) = seen
    return " ".join(f"{key}={value}" for key, value in zip(SUMMARY_KEYS, values))


def _named_by(config_key: str) -> tuple[str, str, str] | None:
    """(model, precision, hardware_framework) of a config key, or None."""
    parts = config_key.split("-")
    if len(parts) < 4 or not all(_KEY_PART.fullmatch(part) for part in parts):
        return None
    model, precision, hardware, framework = parts[:4]
    if framework in _COMPOSITE_FRAMEWORKS and len(parts) > 4:
        framework = f"{framework}-{parts[4]}"
    return model, precision, f"{hardware}_{framework}"


def _summary_of(title: Any, started: str | None) -> RunSummary | None:
    if not isinstance(title, str):
        return None
    fields: dict[str, str] = {}
    for match in _SUMMARY_TOKEN.finditer(title):
        key, value = match.group(1).lower(), match.group(2)
        if not _SUMMARY_VALUE.fullmatch(value):
            return None
        if fields.setdefault(key, value) != value:
            return None
    if "date" not in fields and started is not None:
        fields["date"] = started
    if len(fields) != len(SUMMARY_KEYS) or not _is_date(fields["date"]):
        return None
    return RunSummary(**fields)


def _day(when: str | None) -> str | None:
    """The YYYY-MM-DD of an ISO 8601 time, or None."""
    return when[:10] if when is not None and _is_date(when[:10]) else None


def _is_date(value: str) -> bool:
    if not _DATE.fullmatch(value):
        return False
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True
