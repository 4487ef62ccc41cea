"""Results-service callbacks (`repository_dispatch` client payloads, SPEC.md section 4), parsed and validated."""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

# The `repository_dispatch` event types the results service sends, and the kind of callback each one is.
EVENT_KINDS: Mapping[str, str] = MappingProxyType({
    "stage-results-started": "started",
    "stage-results-completed": "completed",
    "ingest-completed": "ingested",
})

# The ingest report's table, in display order: rows are categories, columns are outcomes.
ROWS = ("benchmark", "eval", "trace", "power")
COLUMNS = ("new", "duplicate", "skipped", "unmapped", "failed")

# Payload keys (kebab-case, as the results service sends them). Every key a kind does not list is refused.
SOURCE = "source-repository"
PR_NUMBER = "pr-number"
RUN_ID = "run-id"
APP_RUN_ID = "app-run-id"
COMMENT_ID = "comment-id"
RUN_DATE = "run-date"
REQUESTED_BY = "requested-by"
SUCCEEDED = "stage-succeeded"
RESULTS_URL = "results-url"  # our assumption: the issue says only "a results link"
COUNTS = "counts"
COMMON_KEYS = (SOURCE, PR_NUMBER, RUN_ID, APP_RUN_ID, COMMENT_ID, RUN_DATE, REQUESTED_BY)
KEYS_BY_KIND: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "started": COMMON_KEYS,
    "completed": COMMON_KEYS + (SUCCEEDED, RESULTS_URL),
    "ingested": COMMON_KEYS + (COUNTS,),
})

# Rejection codes: stable, for logs and tests.
UNKNOWN_EVENT = "unknown-event"
NOT_AN_OBJECT = "not-an-object"
WRONG_SOURCE = "wrong-source"
UNKNOWN_FIELD = "unknown-field"
MISSING_FIELD = "missing-field"
NOT_NUMERIC = "not-numeric"
OUT_OF_RANGE = "out-of-range"
BAD_DATE = "bad-date"
BAD_LOGIN = "bad-login"
BAD_BOOLEAN = "bad-boolean"
BAD_URL = "bad-url"
BAD_COUNTS = "bad-counts"

MAX_ID = 2**63 - 1  # GitHub ids are signed 64-bit
MAX_COUNT = 2**63 - 1
MAX_LOGIN = 39  # GitHub's limit on a login's length
MAX_URL = 2048
SHOWN = 60  # how much of a refused value a log reason quotes

_DIGITS = re.compile(r"0|[1-9][0-9]*")  # ASCII only, no sign, no leading zero, no spaces
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_LOGIN = re.compile(r"[A-Za-z0-9-]+")
_REPOSITORY = re.compile(r"[A-Za-z0-9._-]+/[A-Za-z0-9._-]+")
# RFC 3986 characters (unreserved, reserved, percent): ASCII, no whitespace, no control characters.
_URL = re.compile(r"https://[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+")
_BOOLEANS = {"true": True, "false": False}


@dataclass(frozen=True)
class Callback:
    """One accepted callback. `succeeded` and `results_url` are set for "completed" only (`results_url` may be
    None when the stage failed), `counts` for "ingested" only: row -> column -> count, every one of ROWS and
    COLUMNS present, in that order, read-only."""

    kind: str  # "started", "completed" or "ingested"
    pr_number: int
    run_id: int
    app_run_id: int
    comment_id: int | None  # None: find the bot's reply by the run id
    run_date: datetime.date
    requested_by: str
    succeeded: bool | None = None
    results_url: str | None = None
    counts: Mapping[str, Mapping[str, int]] | None = None


@dataclass(frozen=True)
class Rejected:
    """A refused callback: a stable `code`, the payload key at fault (a dotted path inside `counts`; None when
    no one key is), and an English `reason` for the log (values are quoted with repr, cut short)."""

    code: str
    field: str | None
    reason: str


class _Refusal(Exception):
    def __init__(self, code: str, field: str | None, reason: str) -> None:
        super().__init__(reason)
        self.rejected = Rejected(code, field, reason)


def parse_callback(event_type: str, client_payload: Any, *, results_repository: str) -> Callback | Rejected:
    """Check one `repository_dispatch` callback; never raises on any payload.

    Strict on purpose (the results service sends exactly these today): a key the event type does not define is
    refused (`unknown-field`), JSON null counts as absent, ids are canonical decimal strings or JSON integers
    in 1..2**63-1, `stage-succeeded` is "true"/"false" (or a JSON boolean), `results-url` is required when the
    stage succeeded and optional when it failed, and `counts` must hold every row and column. The first problem
    found is reported, in this order: event type, payload shape, source, unknown keys, then each field in the
    order of Callback's fields.
    """
    kind = EVENT_KINDS.get(event_type) if isinstance(event_type, str) else None
    if kind is None:
        return Rejected(UNKNOWN_EVENT, None, f"event type {_shown(event_type)} is not a results callback")
    if not isinstance(client_payload, Mapping):
        return Rejected(NOT_AN_OBJECT, None, f"client_payload is {type(client_payload).__name__}, not an object")
    try:
        return _parse(kind, client_payload, results_repository)
    except _Refusal as refusal:
        return refusal.rejected


# -- the payload -------------------------------------------------------------------------------------------


def _parse(kind: str, payload: Mapping[Any, Any], results_repository: str) -> Callback:
    _check_source(payload, results_repository)
    _check_keys(kind, payload)
    common = dict(
        kind=kind,
        pr_number=_number(payload, PR_NUMBER),
        run_id=_number(payload, RUN_ID),
        app_run_id=_number(payload, APP_RUN_ID),
        comment_id=_optional_number(payload, COMMENT_ID),
        run_date=_date(payload, RUN_DATE),
        requested_by=_login(payload, REQUESTED_BY),
    )
    if kind == "completed":
        succeeded = _boolean(payload, SUCCEEDED)
        return Callback(**common, succeeded=succeeded, results_url=_results_url(payload, required=succeeded))
    if kind == "ingested":
        return Callback(**common, counts=_counts(payload))
    return Callback(**common)


def _check_source(payload: Mapping[Any, Any], results_repository: str) -> None:
    value = _required(payload, SOURCE)
    if not isinstance(value, str) or not _REPOSITORY.fullmatch(value):
        raise _Refusal(WRONG_SOURCE, SOURCE, f"{SOURCE} {_shown(value)} is not an owner/name repository")
    if not isinstance(results_repository, str) or value.lower() != results_repository.lower():
        raise _Refusal(WRONG_SOURCE, SOURCE,
                       f"{SOURCE} {_shown(value)} is not the configured results repository "
                       f"{_shown(results_repository)}")


def _check_keys(kind: str, payload: Mapping[Any, Any]) -> None:
    allowed = KEYS_BY_KIND[kind]
    unknown = sorted(str(key) for key in payload if key not in allowed)
    if unknown:
        raise _Refusal(UNKNOWN_FIELD, unknown[0],
                       f"{_shown(unknown[0])} is not a field of a {kind} callback; its fields are "
                       f"{', '.join(allowed)}")


def _required(payload: Mapping[Any, Any], key: str) -> Any:
    value = payload.get(key)
    if value is None:
        raise _Refusal(MISSING_FIELD, key, f"{key} is missing" if key not in payload else f"{key} is null")
    return value


# -- one field ---------------------------------------------------------------------------------------------


def _number(payload: Mapping[Any, Any], key: str) -> int:
    return _id_value(_required(payload, key), key)


def _optional_number(payload: Mapping[Any, Any], key: str) -> int | None:
    value = payload.get(key)
    return None if value is None else _id_value(value, key)


def _id_value(value: Any, key: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return _in_range(value, key)
    if not isinstance(value, str) or not _DIGITS.fullmatch(value):
        raise _Refusal(NOT_NUMERIC, key,
                       f"{key} {_shown(value)} is not a decimal id (ASCII digits, no sign, no leading zero)")
    if len(value) > len(str(MAX_ID)):  # before int(): a long enough string would raise in int() itself
        raise _Refusal(OUT_OF_RANGE, key, f"{key} has {len(value)} digits, more than any id")
    return _in_range(int(value), key)


def _in_range(number: int, key: str) -> int:
    if not 1 <= number <= MAX_ID:
        raise _Refusal(OUT_OF_RANGE, key, f"{key} {_shown(number)} is not between 1 and 2**63-1")
    return number


def _date(payload: Mapping[Any, Any], key: str) -> datetime.date:
    value = _required(payload, key)
    if not isinstance(value, str) or not _DATE.fullmatch(value):
        raise _Refusal(BAD_DATE, key, f"{key} {_shown(value)} is not a date written YYYY-MM-DD")
    try:
        return datetime.date.fromisoformat(value)
    except ValueError:
        raise _Refusal(BAD_DATE, key, f"{key} {_shown(value)} is not a calendar date") from None


def _login(payload: Mapping[Any, Any], key: str) -> str:
    value = _required(payload, key)
    if not isinstance(value, str) or len(value) > MAX_LOGIN or not _LOGIN.fullmatch(value):
        raise _Refusal(BAD_LOGIN, key,
                       f"{key} {_shown(value)} is not a GitHub login (ASCII letters, digits, dashes; at most "
                       f"{MAX_LOGIN})")
    return value


def _boolean(payload: Mapping[Any, Any], key: str) -> bool:
    value = _required(payload, key)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in _BOOLEANS:
        return _BOOLEANS[value]
    raise _Refusal(BAD_BOOLEAN, key, f"{key} {_shown(value)} is not \"true\" or \"false\"")


def _results_url(payload: Mapping[Any, Any], *, required: bool) -> str | None:
    value = _required(payload, RESULTS_URL) if required else payload.get(RESULTS_URL)
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > MAX_URL or not _URL.fullmatch(value) or not _has_host(value):
        raise _Refusal(BAD_URL, RESULTS_URL,
                       f"{RESULTS_URL} {_shown(value)} is not an https:// URL with a host and without whitespace")
    return value


def _has_host(url: str) -> bool:
    try:
        return bool(urlsplit(url).hostname)
    except ValueError:  # e.g. an unclosed IPv6 bracket
        return False


# -- counts ------------------------------------------------------------------------------------------------


def _counts(payload: Mapping[Any, Any]) -> Mapping[str, Mapping[str, int]]:
    table = _required(payload, COUNTS)
    _check_table(table, COUNTS, ROWS, "row")
    return MappingProxyType({row: _counts_row(table[row], f"{COUNTS}.{row}") for row in ROWS})


def _counts_row(row: Any, path: str) -> Mapping[str, int]:
    _check_table(row, path, COLUMNS, "column")
    return MappingProxyType({column: _count(row[column], f"{path}.{column}") for column in COLUMNS})


def _check_table(value: Any, path: str, names: tuple[str, ...], what: str) -> None:
    """`value` is an object with exactly the keys `names`: strict, a missing key is refused like an extra one."""
    if not isinstance(value, Mapping):
        raise _Refusal(BAD_COUNTS, path, f"{path} is {type(value).__name__}, not an object")
    missing = [name for name in names if name not in value]
    if missing:
        raise _Refusal(BAD_COUNTS, f"{path}.{missing[0]}", f"{path} has no {what} {missing[0]!r}")
    extra = sorted(str(key) for key in value if key not in names)
    if extra:
        raise _Refusal(BAD_COUNTS, f"{path}.{extra[0]}",
                       f"{path} has an unknown {what} {_shown(extra[0])}; the {what}s are {', '.join(names)}")


def _count(value: Any, path: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _Refusal(BAD_COUNTS, path, f"{path} {_shown(value)} is not an integer")
    if not 0 <= value <= MAX_COUNT:
        raise _Refusal(BAD_COUNTS, path, f"{path} {_shown(value)} is not between 0 and 2**63-1")
    return value


def _shown(value: Any) -> str:
    """`value` for a log line: repr (so newlines and control characters stay escaped), cut to SHOWN chars."""
    if isinstance(value, int) and value.bit_length() > 4 * SHOWN:  # repr would be long, or refuse (4300 digits)
        return f"<an integer of {value.bit_length()} bits>"
    text = repr(value[:SHOWN] if isinstance(value, str) else value)
    return text if len(text) <= SHOWN else text[:SHOWN - 1] + "…"
