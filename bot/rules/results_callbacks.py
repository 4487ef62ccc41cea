"""Results-service callbacks (`repository_dispatch` client payloads, SPEC.md section 4), parsed and validated."""

from __future__ import annotations

import datetime
import heapq
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from bot.rules.links import checked_link
from bot.rules.value_kinds import kind_in_words

# The `repository_dispatch` event types the results service sends, and the kind of callback each one is.
EVENT_KINDS: Mapping[str, str] = MappingProxyType({
    "stage-results-started": "started",
    "stage-results-completed": "completed",
    "ingest-completed": "ingested",
})

# The ingest report's table, in display order: rows are categories, columns are outcomes.
ROWS = ("benchmark", "eval", "trace", "power")
COLUMNS = ("new", "duplicate", "skipped", "unmapped", "failed")

# Payload keys (kebab-case, as the results service sends them).
SOURCE = "source-repository"
PR_NUMBER = "pr-number"
RUN_ID = "run-id"
APP_RUN_ID = "app-run-id"
COMMENT_ID = "comment-id"
RUN_ATTEMPT = "run-attempt"
RUN_DATE = "run-date"
REQUESTED_BY = "requested-by"
SUCCEEDED = "stage-succeeded"
RESULTS_URL = "results-url"  # our assumption: the issue says only "a results link"
COUNTS = "counts"

# What each kind must carry: only what the bot uses. The service's workflows echo the `stage-results` request's
# client_payload (pr-number, run-id, run-attempt, run-date, requested-by, comment-id) and add their own fields.
REQUIRED_BY_KIND: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "started": (SOURCE, PR_NUMBER, RUN_ID, APP_RUN_ID),
    "completed": (SOURCE, PR_NUMBER, RUN_ID, APP_RUN_ID, SUCCEEDED),
    "ingested": (SOURCE, PR_NUMBER, RUN_ID, COUNTS),
})
# What each kind may carry, checked when present (JSON null counts as absent).
ECHOED = (COMMENT_ID, RUN_ATTEMPT, RUN_DATE, REQUESTED_BY)
OPTIONAL_BY_KIND: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "started": ECHOED,
    "completed": ECHOED + (RESULTS_URL,),
    "ingested": ECHOED + (APP_RUN_ID,),
})
# Every other key is ignored: not refused, reported in Callback.ignored for the log.
KEYS_BY_KIND: Mapping[str, frozenset[str]] = MappingProxyType({
    kind: frozenset(REQUIRED_BY_KIND[kind] + OPTIONAL_BY_KIND[kind]) for kind in EVENT_KINDS.values()})

# Rejection codes: stable, for logs and tests.
UNKNOWN_EVENT = "unknown-event"
NOT_AN_OBJECT = "not-an-object"
WRONG_SOURCE = "wrong-source"
MISSING_FIELD = "missing-field"
NOT_NUMERIC = "not-numeric"
OUT_OF_RANGE = "out-of-range"
BAD_DATE = "bad-date"
BAD_LOGIN = "bad-login"
BAD_BOOLEAN = "bad-boolean"
BAD_COUNTS = "bad-counts"
# Codes of a dropped results link (Callback.dropped): the callback itself is accepted, without the link.
BAD_URL = "bad-url"
LINK_NOT_ALLOWED = "link-not-allowed"

MAX_ID = 2**63 - 1  # GitHub ids are signed 64-bit
MAX_COUNT = 2**63 - 1
MAX_LOGIN = 39  # GitHub's limit on a login's length
MAX_URL = 2048
MAX_IGNORED = 20  # how many ignored key names Callback.ignored keeps (ignored_count says how many there were)
SHOWN = 60  # how much of a refused value a log reason quotes, and of an ignored key's name

_DIGITS = re.compile(r"0|[1-9][0-9]*")  # ASCII only, no sign, no leading zero, no spaces
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_LOGIN = re.compile(r"[A-Za-z0-9-]+")
_REPOSITORY = re.compile(r"[A-Za-z0-9._-]+/[A-Za-z0-9._-]+")
# A results link as a results viewer writes one: https, then URL characters that mean nothing to Markdown or
# HTML. `()[]<>*'"` and backquotes, spaces, backslashes and controls are refused before the link is rebuilt
# (bot.rules.links.checked_link), so a link with Markdown in it is dropped, not shown re-encoded.
_URL = re.compile(r"https://[A-Za-z0-9\-._~%/?#&=+,;:@!$]+")
_BOOLEANS = {"true": True, "false": False}


@dataclass(frozen=True)
class Rejected:
    """A refused callback (or a dropped field of an accepted one): a stable `code`, the payload key at fault
    (a dotted path inside `counts`; None when no one key is), and an English `reason` for the log (values are
    quoted with repr, cut short)."""

    code: str
    field: str | None
    reason: str


@dataclass(frozen=True)
class Callback:
    """One accepted callback.

    `app_run_id` is set for "started" and "completed", and for "ingested" when sent. `succeeded` is set for
    "completed" only; `results_url` too, when the service sent a link that `link_hosts` allow, rebuilt by
    bot.rules.links.checked_link (else None, and `dropped` says why). `counts` is set for "ingested" only:
    row -> column -> count, every one of ROWS and COLUMNS present, in that order, read-only. `ignored` names
    the keys the kind does not use (sorted, at most MAX_IGNORED, each cut to SHOWN characters);
    `ignored_count` is how many there were.
    """

    kind: str  # "started", "completed" or "ingested"
    pr_number: int
    run_id: int
    app_run_id: int | None
    comment_id: int | None  # None: find the bot's reply by the run id
    run_attempt: int | None
    run_date: datetime.date | None
    requested_by: str | None
    succeeded: bool | None = None
    results_url: str | None = None
    counts: Mapping[str, Mapping[str, int]] | None = None
    dropped: tuple[Rejected, ...] = ()
    ignored: tuple[str, ...] = ()
    ignored_count: int = 0


class _Refusal(Exception):
    def __init__(self, code: str, field: str | None, reason: str) -> None:
        super().__init__(reason)
        self.rejected = Rejected(code, field, reason)


def parse_callback(event_type: str, client_payload: Any, *, results_repository: str,
                   link_hosts: Iterable[str] = ()) -> Callback | Rejected:
    """Check one `repository_dispatch` callback; never raises on any payload.

    A kind requires only the fields the bot uses (REQUIRED_BY_KIND); the optional ones (OPTIONAL_BY_KIND) are
    checked when present, and every other key is ignored and reported (`Callback.ignored`): a field the bot
    sent may come back, and the service may add fields. Each field's form is strict: ids are canonical decimal
    strings or JSON integers in 1..2**63-1, dates YYYY-MM-DD, logins GitHub's, `stage-succeeded` "true"/"false"
    (or a JSON boolean), `counts` must hold every row and column. The one exception is `results-url`: a link
    that is not plain https on one of `link_hosts` is dropped (`Callback.dropped`), never a reason to refuse
    the callback. The first problem found is reported, in this order: event type, payload shape, source, then
    each field in the order of Callback's fields.
    """
    kind = EVENT_KINDS.get(event_type) if isinstance(event_type, str) else None
    if kind is None:
        return Rejected(UNKNOWN_EVENT, None, f"event type {_shown(event_type)} is not a results callback")
    if not isinstance(client_payload, Mapping):
        return Rejected(NOT_AN_OBJECT, None, f"client_payload is {kind_in_words(client_payload)}, not an object")
    try:
        return _parse(kind, client_payload, results_repository, tuple(link_hosts))
    except _Refusal as refusal:
        return refusal.rejected


# -- the payload -------------------------------------------------------------------------------------------


def _parse(kind: str, payload: Mapping[Any, Any], results_repository: str, link_hosts: tuple[str, ...]) -> Callback:
    _check_source(payload, results_repository)
    required = REQUIRED_BY_KIND[kind]
    number = lambda key: _number(payload, key) if key in required else _optional_number(payload, key)  # noqa: E731
    common = dict(
        kind=kind,
        pr_number=number(PR_NUMBER),
        run_id=number(RUN_ID),
        app_run_id=number(APP_RUN_ID),
        comment_id=number(COMMENT_ID),
        run_attempt=number(RUN_ATTEMPT),
        run_date=_date(payload, RUN_DATE),
        requested_by=_login(payload, REQUESTED_BY),
    )
    ignored, count = _ignored(kind, payload)
    common.update(ignored=ignored, ignored_count=count)
    if kind == "completed":
        succeeded = _boolean(payload, SUCCEEDED)
        url, dropped = _results_url(payload, link_hosts)
        return Callback(**common, succeeded=succeeded, results_url=url, dropped=dropped)
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


def _ignored(kind: str, payload: Mapping[Any, Any]) -> tuple[tuple[str, ...], int]:
    """The names of the keys `kind` does not use (the first MAX_IGNORED in sorted order, cut short), and how
    many there are: without sorting them all, as a payload may hold very many."""
    known = KEYS_BY_KIND[kind]
    unknown = [key for key in payload if key not in known]
    names = heapq.nsmallest(MAX_IGNORED, (str(key)[:SHOWN] for key in unknown))
    return tuple(names), len(unknown)


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


def _date(payload: Mapping[Any, Any], key: str) -> datetime.date | None:
    value = payload.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not _DATE.fullmatch(value):
        raise _Refusal(BAD_DATE, key, f"{key} {_shown(value)} is not a date written YYYY-MM-DD")
    try:
        return datetime.date.fromisoformat(value)
    except ValueError:
        raise _Refusal(BAD_DATE, key, f"{key} {_shown(value)} is not a calendar date") from None


def _login(payload: Mapping[Any, Any], key: str) -> str | None:
    value = payload.get(key)
    if value is None:
        return None
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


def _results_url(payload: Mapping[Any, Any], link_hosts: tuple[str, ...]) -> tuple[str | None, tuple[Rejected, ...]]:
    """(the results link rebuilt, or None; why it was dropped): never refuses the callback."""
    value = payload.get(RESULTS_URL)
    if value is None:
        return None, ()
    if not isinstance(value, str) or len(value) > MAX_URL or not _URL.fullmatch(value):
        return None, (Rejected(BAD_URL, RESULTS_URL,
                               f"{RESULTS_URL} {_shown(value)} is not an https:// link of plain URL characters "
                               f"(no spaces, Markdown or HTML); dropped"),)
    link = checked_link(value, link_hosts, max_length=MAX_URL)
    if link is None:
        return None, (Rejected(LINK_NOT_ALLOWED, RESULTS_URL,
                               f"{RESULTS_URL} {_shown(value)} is not an https link on "
                               f"{', '.join(link_hosts) or 'any allowed host'} (no port, no user); dropped"),)
    return link, ()


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
        raise _Refusal(BAD_COUNTS, path, f"{path} is {kind_in_words(value)}, not an object")
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
    if isinstance(value, (list, dict)):  # its repr would cost its whole size, or recurse as deep as it nests
        return f"<{kind_in_words(value)} of {len(value)} items>"
    text = repr(value[:SHOWN] if isinstance(value, str) else value)
    return text if len(text) <= SHOWN else text[:SHOWN - 1] + "…"
