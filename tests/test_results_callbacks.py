"""Results-service callbacks (bot/rules/results_callbacks.py; docs/spec.md, "The results service"): a table of
payloads and verdicts.

Each case names an event type, a change to a good payload of that type (a key set to DROP is removed), and
expects either these Callback fields or a rejection with this code and field. The first 131 cases are the table
from before the callbacks were hardened, updated to the hardened rules (a kind requires only what the bot uses;
other keys are ignored and reported; a results link that is not plain https on an allowed host is dropped, not a
reason to refuse); the cases after them pin those rules. `dropped` is compared as (code, field) pairs.
"""

from __future__ import annotations

import datetime
from dataclasses import FrozenInstanceError
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.rules.message_schemas import MAX_KEYS
from bot.rules.results_callbacks import COLUMNS, EXTRA_COUNTERS, MAX_IGNORED, ROWS, Callback, Rejected, parse_callback

RESULTS = "SemiAnalysisAI/InferenceX-results"
STARTED, COMPLETED, INGESTED = "stage-results-started", "stage-results-completed", "ingest-completed"
DROP = object()
URL = "https://results.example.com/runs/24680?pr=17#table"
LINK = "https://results.example.com/runs/24680?pr=17"  # URL rebuilt by bot.rules.links.checked_link: no fragment
HOSTS = ("results.example.com",)  # the results viewer's host
VIEWER = "https://results.example.com"
PHISHING = "https://results.example.com/r)**[Sign in again](https://evil.example/login)**"
RUN_HOSTS = ("github.com",)  # where an ingest run's page may be: this repository's GitHub
INGEST_RUN = f"https://github.com/{RESULTS}/actions/runs/97531"

COMMON = {
    "source-repository": RESULTS,
    "pr-number": "17",
    "run-id": "13579246801",
    "app-run-id": "24680",
    "comment-id": "2233445566",
    "run-date": "2026-03-01",
    "requested-by": "octo-cat42",
}


def table(value: int = 0, **rows: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A counts table with every cell `value`, then the given rows merged over it."""
    base = {row: {column: value for column in COLUMNS} for row in ROWS}
    for row, cells in rows.items():
        base[row] = {**base.get(row, {}), **cells}
    return base


def without(mapping: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in mapping.items() if k != key}


GOOD: dict[str, dict[str, Any]] = {  # event -> an accepted callback of it (JSON)
    STARTED: COMMON,
    COMPLETED: {**COMMON, "stage-succeeded": "true", "results-url": URL},
    INGESTED: {**COMMON, "counts": table(benchmark={"new": 12, "duplicate": 3}, power={"failed": 1})},
}


def payload(event: str, changes: dict[str, Any]) -> dict[str, Any]:
    merged = {**GOOD[event], **changes}
    return {k: v for k, v in merged.items() if v is not DROP}


def ok(**fields: Any) -> dict[str, Any]:
    return fields


def no(code: str, field: str | None) -> tuple[str, str | None]:
    return code, field


def dropped(code: str) -> list[tuple[str, str]]:
    """A results link dropped with `code` (the callback is accepted without it)."""
    return [(code, "results-url")]


BAD_LINK = ok(results_url=None, dropped=dropped("bad-url"))


CASES = [
    # -- each event type, accepted -----------------------------------------------------------------------
    (
        "started",
        STARTED,
        {},
        ok(
            kind="started",
            pr_number=17,
            run_id=13579246801,
            app_run_id=24680,
            comment_id=2233445566,
            run_date=datetime.date(2026, 3, 1),
            requested_by="octo-cat42",
            succeeded=None,
            results_url=None,
            counts=None,
        ),
    ),
    ("completed", COMPLETED, {}, ok(kind="completed", succeeded=True, results_url=LINK, counts=None, dropped=[])),
    ("completed-failed", COMPLETED, {"stage-succeeded": "false"}, ok(succeeded=False, results_url=LINK)),
    (
        "completed-failed-no-url",
        COMPLETED,
        {"stage-succeeded": "false", "results-url": DROP},
        ok(succeeded=False, results_url=None),
    ),
    (
        "completed-failed-null-url",
        COMPLETED,
        {"stage-succeeded": "false", "results-url": None},
        ok(succeeded=False, results_url=None),
    ),
    (
        "ingested",
        INGESTED,
        {},
        ok(
            kind="ingested",
            succeeded=None,
            results_url=None,
            counts=table(benchmark={"new": 12, "duplicate": 3}, power={"failed": 1}),
        ),
    ),
    ("ingested-huge-count", INGESTED, {"counts": table(2**63 - 1)}, ok(counts=table(2**63 - 1))),
    # -- event type and payload shape ----------------------------------------------------------------------
    ("unknown-event", "stage-results", {}, no("unknown-event", None)),
    ("event-case", "Stage-Results-Started", {}, no("unknown-event", None)),
    ("event-not-str", None, {}, no("unknown-event", None)),
    # -- source repository ---------------------------------------------------------------------------------
    ("source-case", STARTED, {"source-repository": RESULTS.upper()}, ok(kind="started")),
    (
        "source-other",
        STARTED,
        {"source-repository": "someone/InferenceX-results"},
        no("wrong-source", "source-repository"),
    ),
    ("source-name-only", STARTED, {"source-repository": "InferenceX-results"}, no("wrong-source", "source-repository")),
    (
        "source-url",
        STARTED,
        {"source-repository": f"https://github.com/{RESULTS}"},
        no("wrong-source", "source-repository"),
    ),
    ("source-space", STARTED, {"source-repository": RESULTS + " "}, no("wrong-source", "source-repository")),
    (
        "source-not-str",
        STARTED,
        {"source-repository": ["SemiAnalysisAI", "InferenceX-results"]},
        no("wrong-source", "source-repository"),
    ),
    ("source-missing", STARTED, {"source-repository": DROP}, no("missing-field", "source-repository")),
    (
        "source-before-fields",
        STARTED,
        {"source-repository": "x/y", "run-id": "abc"},
        no("wrong-source", "source-repository"),
    ),
    (
        "fields-in-order",
        COMPLETED,
        {"stage-succeeded": "maybe", "run-date": "2026-02-30", "pr-number": "x"},
        no("not-numeric", "pr-number"),
    ),
    ("unknown-before-fields", STARTED, {"extra": 1, "pr-number": "x"}, no("not-numeric", "pr-number")),
    # -- keys a kind does not use: ignored, and named for the log ------------------------------------------
    ("extra-key", STARTED, {"run-attempt": "1"}, ok(run_attempt=1, ignored=(), ignored_count=0)),  # bot sent it
    ("snake-case-key", STARTED, {"pr_number": "17"}, ok(pr_number=17, ignored=("pr_number",), ignored_count=1)),
    ("url-on-started", STARTED, {"results-url": URL}, ok(results_url=None, ignored=("results-url",))),
    ("counts-on-completed", COMPLETED, {"counts": table()}, ok(counts=None, ignored=("counts",))),
    ("succeeded-on-ingested", INGESTED, {"stage-succeeded": "true"}, ok(succeeded=None, ignored=("stage-succeeded",))),
    ("link-key-guess", COMPLETED, {"results-link": URL}, ok(results_url=LINK, ignored=("results-link",))),
    # -- numeric ids ---------------------------------------------------------------------------------------
    ("id-json-int", STARTED, {"run-id": 13579246801, "pr-number": 17}, ok(run_id=13579246801, pr_number=17)),
    ("id-max", STARTED, {"run-id": str(2**63 - 1)}, ok(run_id=2**63 - 1)),
    ("id-max-int", STARTED, {"app-run-id": 2**63 - 1}, ok(app_run_id=2**63 - 1)),
    ("id-over-max", STARTED, {"run-id": str(2**63)}, no("out-of-range", "run-id")),
    ("id-over-max-int", STARTED, {"run-id": 2**63}, no("out-of-range", "run-id")),
    ("id-huge-string", STARTED, {"run-id": "9" * 5000}, no("out-of-range", "run-id")),
    ("id-huge-int", STARTED, {"run-id": 10**5000}, no("out-of-range", "run-id")),
    ("id-zero", STARTED, {"pr-number": "0"}, no("out-of-range", "pr-number")),
    ("id-zero-int", STARTED, {"pr-number": 0}, no("out-of-range", "pr-number")),
    ("id-negative-int", STARTED, {"pr-number": -17}, no("out-of-range", "pr-number")),
    ("id-negative", STARTED, {"pr-number": "-17"}, no("not-numeric", "pr-number")),
    ("id-plus", STARTED, {"pr-number": "+17"}, no("not-numeric", "pr-number")),
    ("id-leading-zero", STARTED, {"pr-number": "017"}, no("not-numeric", "pr-number")),
    ("id-space", STARTED, {"run-id": " 13579246801"}, no("not-numeric", "run-id")),
    ("id-newline", STARTED, {"run-id": "13579246801\n"}, no("not-numeric", "run-id")),
    ("id-underscore", STARTED, {"run-id": "13_579"}, no("not-numeric", "run-id")),
    ("id-arabic-indic", STARTED, {"app-run-id": "\u0662\u0664\u0666"}, no("not-numeric", "app-run-id")),
    ("id-fullwidth", STARTED, {"app-run-id": "\uff12\uff14"}, no("not-numeric", "app-run-id")),
    ("id-superscript", STARTED, {"app-run-id": "2\u00b2"}, no("not-numeric", "app-run-id")),
    ("id-bool-true", STARTED, {"pr-number": True}, no("not-numeric", "pr-number")),
    ("id-bool-false", STARTED, {"run-id": False}, no("not-numeric", "run-id")),
    ("id-float", STARTED, {"run-id": 17.0}, no("not-numeric", "run-id")),
    ("id-empty", STARTED, {"app-run-id": ""}, no("not-numeric", "app-run-id")),
    ("id-hex", STARTED, {"app-run-id": "0x1f"}, no("not-numeric", "app-run-id")),
    ("id-missing", STARTED, {"app-run-id": DROP}, no("missing-field", "app-run-id")),
    ("id-null", STARTED, {"run-id": None}, no("missing-field", "run-id")),
    ("pr-missing", COMPLETED, {"pr-number": DROP}, no("missing-field", "pr-number")),
    # -- comment id (optional) -----------------------------------------------------------------------------
    ("comment-absent", STARTED, {"comment-id": DROP}, ok(comment_id=None)),
    ("comment-null", STARTED, {"comment-id": None}, ok(comment_id=None)),
    ("comment-int", INGESTED, {"comment-id": 2233445566}, ok(comment_id=2233445566)),
    ("comment-empty", STARTED, {"comment-id": ""}, no("not-numeric", "comment-id")),
    ("comment-bool", STARTED, {"comment-id": True}, no("not-numeric", "comment-id")),
    ("comment-zero", STARTED, {"comment-id": "0"}, no("out-of-range", "comment-id")),
    ("comment-url", STARTED, {"comment-id": "issuecomment-2233445566"}, no("not-numeric", "comment-id")),
    # -- run date ------------------------------------------------------------------------------------------
    ("date-leap", STARTED, {"run-date": "2028-02-29"}, ok(run_date=datetime.date(2028, 2, 29))),
    ("date-not-leap", STARTED, {"run-date": "2026-02-29"}, no("bad-date", "run-date")),
    ("date-feb-30", STARTED, {"run-date": "2026-02-30"}, no("bad-date", "run-date")),
    ("date-month-13", STARTED, {"run-date": "2026-13-01"}, no("bad-date", "run-date")),
    ("date-year-zero", STARTED, {"run-date": "0000-01-01"}, no("bad-date", "run-date")),
    ("date-short", STARTED, {"run-date": "2026-1-5"}, no("bad-date", "run-date")),
    ("date-compact", STARTED, {"run-date": "20260105"}, no("bad-date", "run-date")),  # fromisoformat takes it
    ("date-week", STARTED, {"run-date": "2026-W01-1"}, no("bad-date", "run-date")),  # so does this
    ("date-time", STARTED, {"run-date": "2026-03-01T00:00:00Z"}, no("bad-date", "run-date")),
    ("date-slashes", STARTED, {"run-date": "2026/03/01"}, no("bad-date", "run-date")),
    ("date-space", STARTED, {"run-date": "2026-03-01 "}, no("bad-date", "run-date")),
    ("date-newline", STARTED, {"run-date": "2026-03-01\n"}, no("bad-date", "run-date")),
    ("date-unicode-digits", STARTED, {"run-date": "\u0662\u0660\u0662\u0666-03-01"}, no("bad-date", "run-date")),
    ("date-int", STARTED, {"run-date": 20260301}, no("bad-date", "run-date")),
    ("date-missing", INGESTED, {"run-date": DROP}, ok(run_date=None)),  # an ingest report does not carry it
    # -- requested by --------------------------------------------------------------------------------------
    ("login-upper-digits", STARTED, {"requested-by": "Octo-Cat-1"}, ok(requested_by="Octo-Cat-1")),
    ("login-39", STARTED, {"requested-by": "a" * 39}, ok(requested_by="a" * 39)),
    ("login-40", STARTED, {"requested-by": "a" * 40}, no("bad-login", "requested-by")),
    ("login-bot", STARTED, {"requested-by": "sweepbot[bot]"}, no("bad-login", "requested-by")),
    ("login-at", STARTED, {"requested-by": "@octocat"}, no("bad-login", "requested-by")),
    ("login-space", STARTED, {"requested-by": "octo cat"}, no("bad-login", "requested-by")),
    ("login-newline", STARTED, {"requested-by": "octocat\n"}, no("bad-login", "requested-by")),
    ("login-underscore", STARTED, {"requested-by": "octo_cat"}, no("bad-login", "requested-by")),
    ("login-unicode", STARTED, {"requested-by": "oct\u00f6cat"}, no("bad-login", "requested-by")),
    ("login-empty", STARTED, {"requested-by": ""}, no("bad-login", "requested-by")),
    ("login-int", STARTED, {"requested-by": 42}, no("bad-login", "requested-by")),
    ("login-missing", COMPLETED, {"requested-by": DROP}, ok(requested_by=None)),
    # -- stage succeeded -----------------------------------------------------------------------------------
    ("succeeded-json-true", COMPLETED, {"stage-succeeded": True}, ok(succeeded=True)),
    ("succeeded-json-false", COMPLETED, {"stage-succeeded": False}, ok(succeeded=False)),
    ("succeeded-capital", COMPLETED, {"stage-succeeded": "True"}, no("bad-boolean", "stage-succeeded")),
    ("succeeded-yes", COMPLETED, {"stage-succeeded": "yes"}, no("bad-boolean", "stage-succeeded")),
    ("succeeded-one", COMPLETED, {"stage-succeeded": "1"}, no("bad-boolean", "stage-succeeded")),
    ("succeeded-int", COMPLETED, {"stage-succeeded": 1}, no("bad-boolean", "stage-succeeded")),
    ("succeeded-space", COMPLETED, {"stage-succeeded": "true "}, no("bad-boolean", "stage-succeeded")),
    ("succeeded-empty", COMPLETED, {"stage-succeeded": ""}, no("bad-boolean", "stage-succeeded")),
    ("succeeded-missing", COMPLETED, {"stage-succeeded": DROP}, no("missing-field", "stage-succeeded")),
    # -- results url: optional; kept only as plain https on an allowed host, rebuilt; else dropped -------
    ("url-missing-on-success", COMPLETED, {"results-url": DROP}, ok(succeeded=True, results_url=None, dropped=[])),
    ("url-http", COMPLETED, {"results-url": "http://results.example.com/x"}, BAD_LINK),
    ("url-upper-scheme", COMPLETED, {"results-url": "HTTPS://results.example.com/x"}, BAD_LINK),
    ("url-javascript", COMPLETED, {"results-url": "javascript:alert(1)"}, BAD_LINK),
    ("url-space", COMPLETED, {"results-url": "https://results.example.com/a b"}, BAD_LINK),
    ("url-trailing-newline", COMPLETED, {"results-url": URL + "\n"}, BAD_LINK),
    ("url-tab", COMPLETED, {"results-url": "https://results.example.com/\tx"}, BAD_LINK),
    ("url-nbsp", COMPLETED, {"results-url": "https://results.example.com/\u00a0x"}, BAD_LINK),
    (
        "url-no-host",
        COMPLETED,
        {"results-url": "https:///path"},
        ok(results_url=None, dropped=dropped("link-not-allowed")),
    ),
    ("url-scheme-only", COMPLETED, {"results-url": "https://"}, BAD_LINK),
    ("url-bad-ipv6", COMPLETED, {"results-url": "https://[::1/x"}, BAD_LINK),
    ("url-markdown-break", COMPLETED, {"results-url": "https://a.example/<b>"}, BAD_LINK),
    ("url-too-long", COMPLETED, {"results-url": "https://a.example/" + "x" * 2048}, BAD_LINK),
    (
        "url-empty-on-failure",
        COMPLETED,
        {"stage-succeeded": "false", "results-url": ""},
        ok(succeeded=False, results_url=None, dropped=dropped("bad-url")),
    ),
    ("url-not-str", COMPLETED, {"results-url": {"href": URL}}, BAD_LINK),
    ("url-percent-query", COMPLETED, {"results-url": "https://a.example:8443/r?q=a%20b&x=(1)"}, BAD_LINK),
    # -- counts --------------------------------------------------------------------------------------------
    ("counts-missing", INGESTED, {"counts": DROP}, no("missing-field", "counts")),
    ("counts-null", INGESTED, {"counts": None}, no("missing-field", "counts")),
    ("counts-list", INGESTED, {"counts": [0] * 20}, no("bad-counts", "counts")),
    ("counts-string", INGESTED, {"counts": '{"benchmark": {}}'}, no("bad-counts", "counts")),
    ("counts-missing-row", INGESTED, {"counts": without(table(), "trace")}, no("bad-counts", "counts.trace")),
    ("counts-empty", INGESTED, {"counts": {}}, no("bad-counts", "counts.benchmark")),
    (
        "counts-extra-row",
        INGESTED,
        {"counts": {**table(), "agentic": table()["eval"]}},
        no("bad-counts", "counts.agentic"),
    ),
    (
        "counts-row-case",
        INGESTED,
        {"counts": {**without(table(), "eval"), "Eval": table()["eval"]}},
        no("bad-counts", "counts.eval"),
    ),
    (
        "counts-row-not-object",
        INGESTED,
        {"counts": {**table(), "power": [0, 0, 0, 0, 0]}},
        no("bad-counts", "counts.power"),
    ),
    (
        "counts-missing-column",
        INGESTED,
        {"counts": {**table(), "eval": without(table()["eval"], "unmapped")}},
        no("bad-counts", "counts.eval.unmapped"),
    ),
    (
        "counts-extra-column",
        INGESTED,
        {"counts": table(power={"retried": 0})},
        no("bad-counts", "counts.power.retried"),
    ),
    (
        "counts-negative",
        INGESTED,
        {"counts": table(benchmark={"skipped": -1})},
        no("bad-counts", "counts.benchmark.skipped"),
    ),
    ("counts-float", INGESTED, {"counts": table(eval={"new": 1.0})}, no("bad-counts", "counts.eval.new")),
    ("counts-bool", INGESTED, {"counts": table(trace={"failed": True})}, no("bad-counts", "counts.trace.failed")),
    ("counts-bool-false", INGESTED, {"counts": table(trace={"new": False})}, no("bad-counts", "counts.trace.new")),
    (
        "counts-string-digits",
        INGESTED,
        {"counts": table(power={"duplicate": "3"})},
        no("bad-counts", "counts.power.duplicate"),
    ),
    ("counts-null-cell", INGESTED, {"counts": table(power={"new": None})}, no("bad-counts", "counts.power.new")),
    ("counts-huge", INGESTED, {"counts": table(eval={"new": 2**63})}, no("bad-counts", "counts.eval.new")),
    ("counts-enormous", INGESTED, {"counts": table(eval={"new": 10**5000})}, no("bad-counts", "counts.eval.new")),
    # == what the results service's own workflows send, and the rules for it ==============================
    # -- real-shaped callbacks: the stage-results request's client_payload echoed, plus the service's fields -
    (
        "real-started",
        STARTED,
        {"run-attempt": "1", "source-repository": RESULTS, "app-run-id": "24680"},
        ok(kind="started", run_attempt=1, comment_id=2233445566, ignored=(), ignored_count=0),
    ),
    (
        "real-completed",
        COMPLETED,
        {"run-attempt": "2", "results-url": DROP},
        ok(kind="completed", succeeded=True, run_attempt=2, results_url=None, dropped=[], ignored=()),
    ),
    (
        "real-ingested",
        INGESTED,
        {"run-date": DROP, "comment-id": DROP, "requested-by": DROP, "app-run-id": DROP},
        ok(kind="ingested", run_date=None, comment_id=None, requested_by=None, app_run_id=None, run_attempt=None),
    ),
    ("real-ingested-with-app-run", INGESTED, {"run-date": DROP, "app-run-id": 98765}, ok(app_run_id=98765)),
    # -- required per kind: only what the bot uses ----------------------------------------------------------
    (
        "started-minimal",
        STARTED,
        {"comment-id": DROP, "run-date": DROP, "requested-by": DROP},
        ok(kind="started", comment_id=None, run_date=None, requested_by=None, run_attempt=None),
    ),
    (
        "completed-minimal",
        COMPLETED,
        {"comment-id": DROP, "run-date": DROP, "requested-by": DROP, "results-url": DROP},
        ok(kind="completed", succeeded=True, results_url=None),
    ),
    ("completed-no-app-run", COMPLETED, {"app-run-id": DROP}, no("missing-field", "app-run-id")),
    ("completed-no-run", COMPLETED, {"run-id": DROP}, no("missing-field", "run-id")),
    ("started-no-source", STARTED, {"source-repository": None}, no("missing-field", "source-repository")),
    ("ingested-no-pr", INGESTED, {"pr-number": DROP}, no("missing-field", "pr-number")),
    ("ingested-no-run", INGESTED, {"run-id": None}, no("missing-field", "run-id")),
    # -- optional fields are still checked when present ------------------------------------------------------
    ("attempt-int", STARTED, {"run-attempt": 3}, ok(run_attempt=3)),
    ("attempt-null", STARTED, {"run-attempt": None}, ok(run_attempt=None)),
    ("attempt-zero", STARTED, {"run-attempt": "0"}, no("out-of-range", "run-attempt")),
    ("attempt-word", COMPLETED, {"run-attempt": "first"}, no("not-numeric", "run-attempt")),
    ("ingest-app-run-bad", INGESTED, {"app-run-id": "24680a"}, no("not-numeric", "app-run-id")),
    ("ingest-date-bad", INGESTED, {"run-date": "2026-02-30"}, no("bad-date", "run-date")),
    ("ingest-login-bad", INGESTED, {"requested-by": "a b"}, no("bad-login", "requested-by")),
    ("attempt-before-date", STARTED, {"run-attempt": "x", "run-date": "x"}, no("not-numeric", "run-attempt")),
    # -- unknown keys: ignored whatever their value, named (sorted) for the log -------------------------------
    (
        "unknown-several",
        STARTED,
        {"zeta": None, "app-version": "1.2", "Comment-ID": "x", "nested": {"a": [1]}},
        ok(ignored=("Comment-ID", "app-version", "nested", "zeta"), ignored_count=4),
    ),
    (
        "unknown-markup-value",
        COMPLETED,
        {"summary": "**[Sign in](https://evil.example)**"},
        ok(ignored=("summary",), results_url=LINK),
    ),
    ("unknown-huge-value", INGESTED, {"log": "x" * 60_000}, ok(ignored=("log",))),
    # beyond GitHub's own limit (a client_payload under 64 KB), refused before the schema reads it
    ("unknown-beyond-githubs-size", INGESTED, {"log": "x" * 100_000}, no("too-large", None)),
    ("unknown-long-name", STARTED, {"k" * 500: 1}, ok(ignored=("k" * 60,), ignored_count=1)),
    (
        "counts-row-still-strict",
        INGESTED,
        {"extra": 1, "counts": table(eval={"new": -1})},
        no("bad-counts", "counts.eval.new"),
    ),
    # -- the results link ------------------------------------------------------------------------------------
    ("url-phishing", COMPLETED, {"results-url": PHISHING}, BAD_LINK),  # was once rendered as a link
    (
        "url-other-host",
        COMPLETED,
        {"results-url": "https://evil.example/runs/1"},
        ok(succeeded=True, results_url=None, dropped=dropped("link-not-allowed")),
    ),
    (
        "url-lookalike-host",
        COMPLETED,
        {"results-url": "https://results.example.com.evil.example/x"},
        ok(results_url=None, dropped=dropped("link-not-allowed")),
    ),
    (
        "url-user-info",
        COMPLETED,
        {"results-url": "https://evil.example@results.example.com/x"},
        ok(results_url=None, dropped=dropped("link-not-allowed")),
    ),
    (
        "url-port",
        COMPLETED,
        {"results-url": "https://results.example.com:8443/x"},
        ok(results_url=None, dropped=dropped("link-not-allowed")),
    ),
    (
        "url-host-case",
        COMPLETED,
        {"results-url": "https://Results.Example.COM/a%2fb?x=1&y=%7e"},
        ok(results_url="https://results.example.com/a%2Fb?x=1&y=%7E", dropped=[]),
    ),
    (
        "url-root",
        COMPLETED,
        {"results-url": "https://results.example.com"},
        ok(results_url="https://results.example.com/"),
    ),
    (
        "url-failed-stage-kept",
        COMPLETED,
        {"stage-succeeded": False, "results-url": VIEWER + "/logs/9"},
        ok(succeeded=False, results_url=VIEWER + "/logs/9"),
    ),
    ("url-html", COMPLETED, {"results-url": VIEWER + '/x"<script>'}, BAD_LINK),
    ("url-backquote", COMPLETED, {"results-url": VIEWER + "/`x`"}, BAD_LINK),
    ("url-control", COMPLETED, {"results-url": VIEWER + "/\x00"}, BAD_LINK),
    ("url-int", COMPLETED, {"results-url": 17}, BAD_LINK),
    # -- the ingest run's link and the counters beyond the table --------------------------------------------
    (
        "ingest-extras",
        INGESTED,
        {
            "ingest-run-url": INGEST_RUN,
            "extra-counts": {
                "evalSamplesNew": 6595,
                "someNewCounter": "x",
                "benchmarkFiles": 11,
                "changelogEntriesWritten": 0,
            },
        },
        ok(
            ingest_run_url=INGEST_RUN,
            dropped=[],
            extra_counts={"benchmarkFiles": 11, "evalSamplesNew": 6595, "changelogEntriesWritten": 0},
        ),
    ),
    ("ingest-extras-absent", INGESTED, {}, ok(ingest_run_url=None, extra_counts={})),
    (
        "ingest-extras-null",
        INGESTED,
        {"extra-counts": None, "ingest-run-url": None},
        ok(ingest_run_url=None, extra_counts={}, dropped=[]),
    ),
    (
        "ingest-extras-unknown-only",
        INGESTED,
        {"extra-counts": {"rowsTouched": [1, 2], "note": None}},
        ok(extra_counts={}, ignored=()),
    ),
    (
        "ingest-extras-negative",
        INGESTED,
        {"extra-counts": {"benchmarkFiles": -1}},
        no("bad-counts", "extra-counts.benchmarkFiles"),
    ),
    (
        "ingest-extras-string",
        INGESTED,
        {"extra-counts": {"purgedPoints": "11"}},
        no("bad-counts", "extra-counts.purgedPoints"),
    ),
    (
        "ingest-extras-float",
        INGESTED,
        {"extra-counts": {"runStatsNew": 11.0}},
        no("bad-counts", "extra-counts.runStatsNew"),
    ),
    (
        "ingest-extras-huge",
        INGESTED,
        {"extra-counts": {"runStatsNew": 10**50}},
        no("bad-counts", "extra-counts.runStatsNew"),
    ),
    (
        "ingest-extras-order",
        INGESTED,
        {"extra-counts": {"failedRunRows": "x", "benchmarkFiles": "y"}},
        no("bad-counts", "extra-counts.benchmarkFiles"),
    ),
    ("ingest-extras-not-an-object", INGESTED, {"extra-counts": [1, 2]}, no("bad-counts", "extra-counts")),
    (
        "ingest-extras-after-counts",
        INGESTED,
        {"extra-counts": 5, "counts": table(eval={"new": -1})},
        no("bad-counts", "counts.eval.new"),
    ),
    (
        "ingest-run-attempt",
        INGESTED,
        {"ingest-run-url": INGEST_RUN + "/attempts/2"},
        ok(ingest_run_url=INGEST_RUN + "/attempts/2", dropped=[]),
    ),
    (
        "ingest-run-case-and-slash",
        INGESTED,
        {"ingest-run-url": "https://GitHub.com/semianalysisai/inferencex-results/actions/runs/5/"},
        ok(ingest_run_url="https://github.com/semianalysisai/inferencex-results/actions/runs/5"),
    ),
    (
        "ingest-run-other-repository",
        INGESTED,
        {"ingest-run-url": "https://github.com/evil/repo/actions/runs/5"},
        ok(ingest_run_url=None, dropped=[("link-not-allowed", "ingest-run-url")]),
    ),
    (
        "ingest-run-other-host",
        INGESTED,
        {"ingest-run-url": "https://evil.example/SemiAnalysisAI/InferenceX-results/actions/runs/5"},
        ok(ingest_run_url=None, dropped=[("link-not-allowed", "ingest-run-url")]),
    ),
    (
        "ingest-run-viewer-host",
        INGESTED,
        {"ingest-run-url": VIEWER + "/SemiAnalysisAI/InferenceX-results/actions/runs/5"},
        ok(ingest_run_url=None, dropped=[("link-not-allowed", "ingest-run-url")]),
    ),
    (
        "ingest-run-not-a-run",
        INGESTED,
        {"ingest-run-url": "https://github.com/SemiAnalysisAI/InferenceX-results/actions/runs/5/job/7"},
        ok(ingest_run_url=None, dropped=[("link-not-allowed", "ingest-run-url")]),
    ),
    (
        "ingest-run-query",
        INGESTED,
        {"ingest-run-url": INGEST_RUN + "?check_suite_focus=true"},
        ok(ingest_run_url=None, dropped=[("link-not-allowed", "ingest-run-url")]),
    ),
    (
        "ingest-run-markup",
        INGESTED,
        {"ingest-run-url": INGEST_RUN + ")**[Sign in](https://evil.example)**"},
        ok(ingest_run_url=None, dropped=[("bad-url", "ingest-run-url")]),
    ),
    (
        "ingest-run-int",
        INGESTED,
        {"ingest-run-url": 5},
        ok(ingest_run_url=None, dropped=[("bad-url", "ingest-run-url")]),
    ),
    (
        "ingest-fields-on-a-stage-callback",
        COMPLETED,
        {"ingest-run-url": INGEST_RUN, "extra-counts": {"x": 1}},
        ok(ignored=("extra-counts", "ingest-run-url"), ingest_run_url=None, extra_counts=None),
    ),
]


@pytest.mark.parametrize("event, changes, expected", [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_callback(event, changes, expected):
    result = parse_callback(
        event,
        payload(event, changes) if event in GOOD else GOOD[STARTED],
        results_repository=RESULTS,
        link_hosts=HOSTS,
        run_hosts=RUN_HOSTS,
    )
    if isinstance(expected, tuple):
        assert isinstance(result, Rejected), result
        assert (result.code, result.field) == expected, result.reason
        assert result.reason and len(result.reason) < 400
    else:
        assert isinstance(result, Callback), result
        assert {name: shown(result, name) for name in expected} == expected
        assert all(d.reason and len(d.reason) < 400 and "\n" not in d.reason for d in result.dropped)


def shown(result: Callback, name: str) -> Any:
    if name == "dropped":
        return [(d.code, d.field) for d in result.dropped]
    return getattr(result, name)


def test_case_ids_are_unique():
    assert len({case[0] for case in CASES}) == len(CASES)


def test_the_table_keeps_the_131_cases_it_started_from():
    """The checks became a JSON Schema, and the table keeps, first, the 131 cases it had before."""
    first = [case[0] for case in CASES]
    assert first.index("real-started") == 131 and first[:2] == ["started", "completed"]
    assert first[130] == "counts-enormous"


@pytest.mark.parametrize(
    "client_payload",
    [None, [], ["pr-number", "17"], "{}", 17, True],
    ids=["null", "list", "pairs", "json-text", "int", "bool"],
)
def test_a_payload_that_is_not_an_object(client_payload):
    result = parse_callback(STARTED, client_payload, results_repository=RESULTS)
    assert (result.code, result.field) == ("not-an-object", None)


@pytest.mark.parametrize("configured", ["", "SemiAnalysisAI", None], ids=["empty", "owner-only", "none"])
def test_no_usable_configured_repository_accepts_nothing(configured):
    result = parse_callback(STARTED, dict(COMMON), results_repository=configured)
    assert (result.code, result.field) == ("wrong-source", "source-repository")


def test_the_configured_repository_is_matched_ignoring_case():
    result = parse_callback(STARTED, dict(COMMON), results_repository=RESULTS.lower())
    assert isinstance(result, Callback)


def test_a_lookalike_letter_is_not_matched_by_case_folding():
    assert "\u212a".lower() == "k"  # KELVIN SIGN
    result = parse_callback(
        STARTED, {**COMMON, "source-repository": "\u212aernels/results"}, results_repository="kernels/results"
    )
    assert (result.code, result.field) == ("wrong-source", "source-repository")


def test_counts_keep_table_order_and_are_read_only():
    scrambled = {row: dict(reversed(list(cells.items()))) for row, cells in reversed(list(table(5).items()))}
    result = parse_callback(INGESTED, {**COMMON, "counts": scrambled}, results_repository=RESULTS)
    assert tuple(result.counts) == ROWS == ("benchmark", "eval", "trace", "power")
    assert all(
        tuple(row) == COLUMNS == ("new", "duplicate", "skipped", "unmapped", "failed") for row in result.counts.values()
    )
    with pytest.raises(TypeError):
        result.counts["eval"]["new"] = 1
    with pytest.raises(FrozenInstanceError):
        result.kind = "started"


def test_the_reason_quotes_a_refused_value_escaped_and_short():
    result = parse_callback(
        STARTED, {**COMMON, "requested-by": "evil\nINFO forged log line" + "x" * 500}, results_repository=RESULTS
    )
    assert "\n" not in result.reason and "\\n" in result.reason and len(result.reason) < 200


def test_the_payload_is_not_changed():
    sent = payload(INGESTED, {})
    before = repr(sent)
    parse_callback(INGESTED, sent, results_repository=RESULTS)
    assert repr(sent) == before


def test_ignored_keys_are_capped_and_counted():
    many = {**COMMON, **{f"extra-{i:06d}": i for i in range(MAX_KEYS - len(COMMON))}}
    result = parse_callback(STARTED, many, results_repository=RESULTS)
    assert result.ignored == tuple(f"extra-{i:06d}" for i in range(MAX_IGNORED))
    assert result.ignored_count == MAX_KEYS - len(COMMON) > MAX_IGNORED


def test_more_keys_than_any_callback_has_are_refused_before_the_schema():
    """GitHub sends at most 10 top-level keys; the bot takes up to MAX_KEYS (it ignores unknown ones) and
    refuses more, without validating or sorting them."""
    one_more = {**COMMON, **{f"extra-{i:06d}": i for i in range(MAX_KEYS - len(COMMON) + 1)}}
    result = parse_callback(STARTED, one_more, results_repository=RESULTS)
    assert (result.code, result.field, result.step) == ("too-large", None, "bounds")
    huge = {**COMMON, **{f"extra-{i:06d}": i for i in range(100_000)}}
    assert parse_callback(STARTED, huge, results_repository=RESULTS).step == "bounds"


def test_without_allowed_hosts_no_results_link_is_kept():
    result = parse_callback(COMPLETED, GOOD[COMPLETED], results_repository=RESULTS)
    assert result.results_url is None and [(d.code, d.field) for d in result.dropped] == [
        ("link-not-allowed", "results-url")
    ]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
FIELDS = st.sampled_from(
    sorted({key for good in GOOD.values() for key in good} | {"run-attempt", "extra", "ingest-run-url", "extra-counts"})
)


@settings(max_examples=300)
@given(st.sampled_from([STARTED, COMPLETED, INGESTED]), st.dictionaries(FIELDS, JSON | st.text(), max_size=6))
def test_no_payload_makes_the_parser_raise_or_keep_an_unchecked_link(event, changes):
    """Property: any value in any field is an answer (a Callback or a Rejected), never an exception, and a kept
    results link is on the allowed host with no character Markdown or HTML reads; a kept ingest run link is a run
    page of the results repository; every extra counter kept is a documented one, and a count."""
    result = parse_callback(
        event, {**GOOD[event], **changes}, results_repository=RESULTS, link_hosts=HOSTS, run_hosts=RUN_HOSTS
    )
    assert isinstance(result, (Callback, Rejected))
    if isinstance(result, Callback) and result.results_url is not None:
        assert result.results_url.startswith("https://results.example.com/")
        assert not set("()[]<>*`!|\\\"' \n") & set(result.results_url)
    if isinstance(result, Callback) and result.ingest_run_url is not None:
        assert result.ingest_run_url.lower().startswith(f"https://github.com/{RESULTS.lower()}/actions/runs/")
        assert not set("()[]<>*`!|\\\"' \n?#") & set(result.ingest_run_url)
    if isinstance(result, Callback) and result.extra_counts:
        assert set(result.extra_counts) <= set(EXTRA_COUNTERS)
        assert all(type(value) is int and value >= 0 for value in result.extra_counts.values())


def test_a_value_nested_as_deep_as_python_allows_is_refused_not_raised():
    """Regression: a count nested 100,000 levels deep made the refusal's log text (its repr) raise
    RecursionError out of parse_callback, which promises never to raise."""
    deep: object = 0
    for _ in range(100_000):
        deep = [deep]
    counts = {row: {column: deep for column in COLUMNS} for row in ROWS}
    payload = {"source-repository": RESULTS, "pr-number": "1", "run-id": "2", "counts": counts}
    found = parse_callback("ingest-completed", payload, results_repository=RESULTS)
    assert isinstance(found, Rejected) and (found.code, found.field, found.step) == ("too-large", "counts", "bounds")
    assert found.reason.startswith("counts.benchmark.new[0][0][0]… nests more than 16 levels deep")
