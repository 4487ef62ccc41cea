"""Results-service callbacks (bot/results_callbacks.py, SPEC.md section 4): a table of payloads and verdicts.

Each case names an event type, a change to a good payload of that type (a key set to DROP is removed), and
expects either these Callback fields or a rejection with this code and field.
"""

from __future__ import annotations

import datetime
from dataclasses import FrozenInstanceError
from typing import Any

import pytest

from bot.results_callbacks import COLUMNS, ROWS, Callback, Rejected, parse_callback

RESULTS = "SemiAnalysisAI/InferenceX-results"
STARTED, COMPLETED, INGESTED = "stage-results-started", "stage-results-completed", "ingest-completed"
DROP = object()
URL = "https://results.example.com/runs/24680?pr=17#table"

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


GOOD = {
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


CASES = [
    # -- each event type, accepted -----------------------------------------------------------------------
    ("started", STARTED, {}, ok(kind="started", pr_number=17, run_id=13579246801, app_run_id=24680,
                                comment_id=2233445566, run_date=datetime.date(2026, 3, 1),
                                requested_by="octo-cat42", succeeded=None, results_url=None, counts=None)),
    ("completed", COMPLETED, {}, ok(kind="completed", succeeded=True, results_url=URL, counts=None)),
    ("completed-failed", COMPLETED, {"stage-succeeded": "false"}, ok(succeeded=False, results_url=URL)),
    ("completed-failed-no-url", COMPLETED, {"stage-succeeded": "false", "results-url": DROP},
     ok(succeeded=False, results_url=None)),
    ("completed-failed-null-url", COMPLETED, {"stage-succeeded": "false", "results-url": None},
     ok(succeeded=False, results_url=None)),
    ("ingested", INGESTED, {}, ok(kind="ingested", succeeded=None, results_url=None,
                                  counts=table(benchmark={"new": 12, "duplicate": 3}, power={"failed": 1}))),
    ("ingested-huge-count", INGESTED, {"counts": table(2**63 - 1)}, ok(counts=table(2**63 - 1))),
    # -- event type and payload shape ----------------------------------------------------------------------
    ("unknown-event", "stage-results", {}, no("unknown-event", None)),
    ("event-case", "Stage-Results-Started", {}, no("unknown-event", None)),
    ("event-not-str", None, {}, no("unknown-event", None)),
    # -- source repository ---------------------------------------------------------------------------------
    ("source-case", STARTED, {"source-repository": RESULTS.upper()}, ok(kind="started")),
    ("source-other", STARTED, {"source-repository": "someone/InferenceX-results"}, no("wrong-source",
                                                                                       "source-repository")),
    ("source-name-only", STARTED, {"source-repository": "InferenceX-results"}, no("wrong-source",
                                                                                 "source-repository")),
    ("source-url", STARTED, {"source-repository": f"https://github.com/{RESULTS}"}, no("wrong-source",
                                                                                       "source-repository")),
    ("source-space", STARTED, {"source-repository": RESULTS + " "}, no("wrong-source", "source-repository")),
    ("source-not-str", STARTED, {"source-repository": ["SemiAnalysisAI", "InferenceX-results"]},
     no("wrong-source", "source-repository")),
    ("source-missing", STARTED, {"source-repository": DROP}, no("missing-field", "source-repository")),
    ("source-before-fields", STARTED, {"source-repository": "x/y", "run-id": "abc"}, no("wrong-source",
                                                                                        "source-repository")),
    ("fields-in-order", COMPLETED, {"stage-succeeded": "maybe", "run-date": "2026-02-30", "pr-number": "x"},
     no("not-numeric", "pr-number")),
    ("unknown-before-fields", STARTED, {"extra": 1, "pr-number": "x"}, no("unknown-field", "extra")),
    # -- unknown keys --------------------------------------------------------------------------------------
    ("extra-key", STARTED, {"run-attempt": "1"}, no("unknown-field", "run-attempt")),
    ("snake-case-key", STARTED, {"pr_number": "17"}, no("unknown-field", "pr_number")),
    ("url-on-started", STARTED, {"results-url": URL}, no("unknown-field", "results-url")),
    ("counts-on-completed", COMPLETED, {"counts": table()}, no("unknown-field", "counts")),
    ("succeeded-on-ingested", INGESTED, {"stage-succeeded": "true"}, no("unknown-field", "stage-succeeded")),
    ("link-key-guess", COMPLETED, {"results-link": URL}, no("unknown-field", "results-link")),
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
    ("date-missing", INGESTED, {"run-date": DROP}, no("missing-field", "run-date")),
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
    ("login-missing", COMPLETED, {"requested-by": DROP}, no("missing-field", "requested-by")),
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
    # -- results url ---------------------------------------------------------------------------------------
    ("url-missing-on-success", COMPLETED, {"results-url": DROP}, no("missing-field", "results-url")),
    ("url-http", COMPLETED, {"results-url": "http://results.example.com/x"}, no("bad-url", "results-url")),
    ("url-upper-scheme", COMPLETED, {"results-url": "HTTPS://results.example.com/x"}, no("bad-url",
                                                                                         "results-url")),
    ("url-javascript", COMPLETED, {"results-url": "javascript:alert(1)"}, no("bad-url", "results-url")),
    ("url-space", COMPLETED, {"results-url": "https://results.example.com/a b"}, no("bad-url", "results-url")),
    ("url-trailing-newline", COMPLETED, {"results-url": URL + "\n"}, no("bad-url", "results-url")),
    ("url-tab", COMPLETED, {"results-url": "https://results.example.com/\tx"}, no("bad-url", "results-url")),
    ("url-nbsp", COMPLETED, {"results-url": "https://results.example.com/\u00a0x"}, no("bad-url",
                                                                                       "results-url")),
    ("url-no-host", COMPLETED, {"results-url": "https:///path"}, no("bad-url", "results-url")),
    ("url-scheme-only", COMPLETED, {"results-url": "https://"}, no("bad-url", "results-url")),
    ("url-bad-ipv6", COMPLETED, {"results-url": "https://[::1/x"}, no("bad-url", "results-url")),
    ("url-markdown-break", COMPLETED, {"results-url": "https://a.example/<b>"}, no("bad-url", "results-url")),
    ("url-too-long", COMPLETED, {"results-url": "https://a.example/" + "x" * 2048}, no("bad-url", "results-url")),
    ("url-empty-on-failure", COMPLETED, {"stage-succeeded": "false", "results-url": ""}, no("bad-url",
                                                                                            "results-url")),
    ("url-not-str", COMPLETED, {"results-url": {"href": URL}}, no("bad-url", "results-url")),
    ("url-percent-query", COMPLETED, {"results-url": "https://a.example:8443/r?q=a%20b&x=(1)"},
     ok(results_url="https://a.example:8443/r?q=a%20b&x=(1)")),
    # -- counts --------------------------------------------------------------------------------------------
    ("counts-missing", INGESTED, {"counts": DROP}, no("missing-field", "counts")),
    ("counts-null", INGESTED, {"counts": None}, no("missing-field", "counts")),
    ("counts-list", INGESTED, {"counts": [0] * 20}, no("bad-counts", "counts")),
    ("counts-string", INGESTED, {"counts": '{"benchmark": {}}'}, no("bad-counts", "counts")),
    ("counts-missing-row", INGESTED, {"counts": without(table(), "trace")}, no("bad-counts", "counts.trace")),
    ("counts-empty", INGESTED, {"counts": {}}, no("bad-counts", "counts.benchmark")),
    ("counts-extra-row", INGESTED, {"counts": {**table(), "agentic": table()["eval"]}},
     no("bad-counts", "counts.agentic")),
    ("counts-row-case", INGESTED, {"counts": {**without(table(), "eval"), "Eval": table()["eval"]}},
     no("bad-counts", "counts.eval")),
    ("counts-row-not-object", INGESTED, {"counts": {**table(), "power": [0, 0, 0, 0, 0]}},
     no("bad-counts", "counts.power")),
    ("counts-missing-column", INGESTED, {"counts": {**table(), "eval": without(table()["eval"], "unmapped")}},
     no("bad-counts", "counts.eval.unmapped")),
    ("counts-extra-column", INGESTED, {"counts": table(power={"retried": 0})},
     no("bad-counts", "counts.power.retried")),
    ("counts-negative", INGESTED, {"counts": table(benchmark={"skipped": -1})},
     no("bad-counts", "counts.benchmark.skipped")),
    ("counts-float", INGESTED, {"counts": table(eval={"new": 1.0})}, no("bad-counts", "counts.eval.new")),
    ("counts-bool", INGESTED, {"counts": table(trace={"failed": True})}, no("bad-counts", "counts.trace.failed")),
    ("counts-bool-false", INGESTED, {"counts": table(trace={"new": False})}, no("bad-counts", "counts.trace.new")),
    ("counts-string-digits", INGESTED, {"counts": table(power={"duplicate": "3"})},
     no("bad-counts", "counts.power.duplicate")),
    ("counts-null-cell", INGESTED, {"counts": table(power={"new": None})}, no("bad-counts", "counts.power.new")),
    ("counts-huge", INGESTED, {"counts": table(eval={"new": 2**63})}, no("bad-counts", "counts.eval.new")),
    ("counts-enormous", INGESTED, {"counts": table(eval={"new": 10**5000})}, no("bad-counts", "counts.eval.new")),
]


@pytest.mark.parametrize("event, changes, expected", [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_callback(event, changes, expected):
    result = parse_callback(event, payload(event, changes) if event in GOOD else GOOD[STARTED],
                            results_repository=RESULTS)
    if isinstance(expected, tuple):
        assert isinstance(result, Rejected), result
        assert (result.code, result.field) == expected, result.reason
        assert result.reason and len(result.reason) < 400
    else:
        assert isinstance(result, Callback), result
        assert {name: getattr(result, name) for name in expected} == expected


def test_case_ids_are_unique():
    assert len({case[0] for case in CASES}) == len(CASES)


@pytest.mark.parametrize("client_payload", [None, [], ["pr-number", "17"], "{}", 17, True],
                         ids=["null", "list", "pairs", "json-text", "int", "bool"])
def test_a_payload_that_is_not_an_object(client_payload):
    result = parse_callback(STARTED, client_payload, results_repository=RESULTS)
    assert (result.code, result.field) == ("not-an-object", None)


@pytest.mark.parametrize("configured", ["", "SemiAnalysisAI", None],
                         ids=["empty", "owner-only", "none"])
def test_no_usable_configured_repository_accepts_nothing(configured):
    result = parse_callback(STARTED, dict(COMMON), results_repository=configured)
    assert (result.code, result.field) == ("wrong-source", "source-repository")


def test_the_configured_repository_is_matched_ignoring_case():
    result = parse_callback(STARTED, dict(COMMON), results_repository=RESULTS.lower())
    assert isinstance(result, Callback)


def test_a_lookalike_letter_is_not_matched_by_case_folding():
    assert "\u212a".lower() == "k"  # KELVIN SIGN
    result = parse_callback(STARTED, {**COMMON, "source-repository": "\u212aernels/results"},
                            results_repository="kernels/results")
    assert (result.code, result.field) == ("wrong-source", "source-repository")


def test_counts_keep_table_order_and_are_read_only():
    scrambled = {row: dict(reversed(list(cells.items()))) for row, cells in reversed(list(table(5).items()))}
    result = parse_callback(INGESTED, {**COMMON, "counts": scrambled}, results_repository=RESULTS)
    assert tuple(result.counts) == ROWS == ("benchmark", "eval", "trace", "power")
    assert all(tuple(row) == COLUMNS == ("new", "duplicate", "skipped", "unmapped", "failed")
               for row in result.counts.values())
    with pytest.raises(TypeError):
        result.counts["eval"]["new"] = 1
    with pytest.raises(FrozenInstanceError):
        result.kind = "started"


def test_the_reason_quotes_a_refused_value_escaped_and_short():
    result = parse_callback(STARTED, {**COMMON, "requested-by": "evil\nINFO forged log line" + "x" * 500},
                            results_repository=RESULTS)
    assert "\n" not in result.reason and "\\n" in result.reason and len(result.reason) < 200


def test_the_payload_is_not_changed():
    sent = payload(INGESTED, {})
    before = repr(sent)
    parse_callback(INGESTED, sent, results_repository=RESULTS)
    assert repr(sent) == before
