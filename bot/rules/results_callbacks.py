"""Results-service callbacks (`repository_dispatch` client payloads, docs/spec.md, "The results service"),
parsed and validated.

A callback is checked in steps, and a refusal says which one refused it (`Rejected.step`):

    input   the event type is a results callback, and its client_payload an object;
    bounds  the payload is small enough to validate (bot.rules.message_schemas.out_of_bounds);
    schema  it is valid against its JSON Schema, examples/schemas/<event type>.callback.schema.json;
    code    what no schema can say: `source-repository` is the configured results repository, and no id or
            count is a JSON float (17.0 is the integer 17 to JSON Schema; the bot wants an integer as written).

The results link is then kept or dropped, never a reason to refuse: plain https on an allowed host, rebuilt by
bot.rules.links.checked_link. So is an ingest callback's link to its ingest run: a run page of the results
repository on the GitHub host allowed, rebuilt from its parts (owner, name, run id, attempt). The schema decides what is
valid; this module turns the schema's errors into the stable rejection codes below and an English reason for the log.
"""

from __future__ import annotations

import dataclasses
import datetime
import heapq
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

import jsonschema

from bot.rules.links import checked_link, web
from bot.rules.message_schemas import OutOfBounds, out_of_bounds, validator
from bot.rules.value_kinds import kind_in_words

# The `repository_dispatch` event types the results service sends, and the kind of callback each one is.
EVENT_KINDS: Mapping[str, str] = MappingProxyType(
    {
        "stage-results-started": "started",
        "stage-results-completed": "completed",
        "ingest-completed": "ingested",
    }
)

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
INGEST_RUN_URL = "ingest-run-url"  # the results service's run that ingested the results
EXTRA_COUNTS = "extra-counts"  # the counters the ingest reports beyond the table (EXTRA_COUNTERS)

# The fields in the order a refusal reports them (the first problem found is the one reported), and the ids.
FIELD_ORDER = (
    SOURCE,
    PR_NUMBER,
    RUN_ID,
    APP_RUN_ID,
    COMMENT_ID,
    RUN_ATTEMPT,
    RUN_DATE,
    REQUESTED_BY,
    SUCCEEDED,
    RESULTS_URL,
    COUNTS,
    INGEST_RUN_URL,
    EXTRA_COUNTS,
)
ID_FIELDS = (PR_NUMBER, RUN_ID, APP_RUN_ID, COMMENT_ID, RUN_ATTEMPT)

# What each kind must carry: only what the bot uses. The service's workflows echo the `stage-results` request's
# client_payload (pr-number, run-id, run-attempt, run-date, requested-by, comment-id) and add their own fields.
REQUIRED_BY_KIND: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "started": (SOURCE, PR_NUMBER, RUN_ID, APP_RUN_ID),
        "completed": (SOURCE, PR_NUMBER, RUN_ID, APP_RUN_ID, SUCCEEDED),
        "ingested": (SOURCE, PR_NUMBER, RUN_ID, COUNTS),
    }
)
# What each kind may carry, checked when present (JSON null counts as absent).
ECHOED = (COMMENT_ID, RUN_ATTEMPT, RUN_DATE, REQUESTED_BY)
OPTIONAL_BY_KIND: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "started": ECHOED,
        "completed": ECHOED + (RESULTS_URL,),
        "ingested": ECHOED + (APP_RUN_ID, INGEST_RUN_URL, EXTRA_COUNTS),
    }
)
# The ingest's counters beyond the table that the report shows, in this order, named as the results service's
# ingest writes them. `extra-counts` may hold others: they are ignored (not shown, not checked).
EXTRA_COUNTERS: tuple[str, ...] = (
    "benchmarkFiles",
    "rawBenchmarkRows",
    "coveredByPerJobFiles",
    "purgedPoints",
    "failedRunRows",
    "runStatsNew",
    "runStatsDuplicate",
    "evalSamplesNew",
    "gpuMetricSamplesNew",
    "powerPublicationPoints",
    "changelogEntriesWritten",
)
# Every other key is ignored: not refused, reported in Callback.ignored for the log. These three tables say what
# the schemas say (tests/test_message_schemas.py checks): the schemas are what validates.
KEYS_BY_KIND: Mapping[str, frozenset[str]] = MappingProxyType(
    {kind: frozenset(REQUIRED_BY_KIND[kind] + OPTIONAL_BY_KIND[kind]) for kind in EVENT_KINDS.values()}
)

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
TOO_LARGE = "too-large"  # beyond bot.rules.message_schemas' bounds: refused before the schema reads it
INVALID = "invalid"  # a schema error on no field the bot knows (none today: the table of codes is complete)
# Codes of a dropped results link (Callback.dropped): the callback itself is accepted, without the link.
BAD_URL = "bad-url"
LINK_NOT_ALLOWED = "link-not-allowed"

MAX_ID = 2**63 - 1  # GitHub ids are signed 64-bit
MAX_LOGIN = 39  # GitHub's limit on a login's length
MAX_URL = 2048
MAX_IGNORED = 20  # how many ignored key names Callback.ignored keeps (ignored_count says how many there were)
SHOWN = 60  # how much of a refused value a log reason quotes, and of an ignored key's name

# Steps (Rejected.step): which check refused.
INPUT, BOUNDS, SCHEMA, CODE = "input", "bounds", "schema", "code"

# For the reason of a refusal only (the schema has decided): a number out of range, and a date's form.
_DIGITS = re.compile(r"0|[1-9][0-9]*")  # ASCII only, no sign, no leading zero, no spaces
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
# A run page of the results repository: /<owner>/<name>/actions/runs/<id>[/attempts/<n>], nothing after it.
_RUN_PAGE = re.compile(
    r"/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)/actions/runs/([1-9][0-9]{0,18})"
    r"(?:/attempts/([1-9][0-9]{0,3}))?/?"
)
# A results link as a results viewer writes one: https, then URL characters that mean nothing to Markdown or
# HTML. `()[]<>*'"` and backquotes, spaces, backslashes and controls are refused before the link is rebuilt
# (bot.rules.links.checked_link), so a link with Markdown in it is dropped, not shown re-encoded.
_URL = re.compile(r"https://[A-Za-z0-9\-._~%/?#&=+,;:@!$]+")


@dataclass(frozen=True)
class Rejected:
    """A refused callback (or a dropped field of an accepted one): a stable `code`, the payload key at fault
    (a dotted path inside `counts`; None when no one key is), an English `reason` for the log (values are
    quoted with repr, cut short), and the `step` that refused: INPUT, BOUNDS, SCHEMA or CODE."""

    code: str
    field: str | None
    reason: str
    step: str = CODE


@dataclass(frozen=True)
class Callback:
    """One accepted callback.

    `app_run_id` is set for "started" and "completed", and for "ingested" when sent. `succeeded` is set for
    "completed" only; `results_url` too, when the service sent a link that `link_hosts` allow, rebuilt by
    bot.rules.links.checked_link (else None, and `dropped` says why). `counts` is set for "ingested" only:
    row -> column -> count, every one of ROWS and COLUMNS present, in that order, read-only. So are
    `ingest_run_url` (a run page of the results repository on one of `run_hosts`, rebuilt; else None, and
    `dropped` says why) and `extra_counts` (the EXTRA_COUNTERS sent, in that order, read-only; empty when none).
    `ignored` names the keys the kind does not use (sorted, at most MAX_IGNORED, each cut to SHOWN characters);
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
    ingest_run_url: str | None = None
    extra_counts: Mapping[str, int] | None = None
    dropped: tuple[Rejected, ...] = ()
    ignored: tuple[str, ...] = ()
    ignored_count: int = 0


# A problem found, and where it ranks: the first in FIELD_ORDER is reported (then, inside `counts`, row by row
# and column by column as ROWS and COLUMNS list them; at one place a wrong type, then a missing name, then an
# unknown one; the schema's finding before the code's).
_Problem = tuple[tuple[Any, ...], Rejected]
_KEYWORD_RANK = {"type": 0, "required": 1, "additionalProperties": 2}


def parse_callback(
    event_type: str,
    client_payload: Any,
    *,
    results_repository: str,
    link_hosts: Iterable[str] = (),
    run_hosts: Iterable[str] = (),
) -> Callback | Rejected:
    """Check one `repository_dispatch` callback; never raises on any payload.

    The steps are the module's (see its docstring): input, bounds, schema, code. The schema of the event type
    requires only the fields the bot uses (REQUIRED_BY_KIND) and checks the optional ones (OPTIONAL_BY_KIND)
    when present; every other key is ignored and reported (`Callback.ignored`): a field the bot sent may come
    back, and the service may add fields. The exceptions to refusing are the links: a `results-url` that is not
    plain https on one of `link_hosts`, and an `ingest-run-url` that is not a run page of `results_repository` on
    one of `run_hosts` (the GitHub web host), are dropped (`Callback.dropped`). The first problem in FIELD_ORDER is the
    one reported, whichever step found it.
    """
    kind = EVENT_KINDS.get(event_type) if isinstance(event_type, str) else None
    if kind is None:
        return Rejected(UNKNOWN_EVENT, None, f"event type {_shown(event_type)} is not a results callback", INPUT)
    if not isinstance(client_payload, Mapping):
        return Rejected(NOT_AN_OBJECT, None, f"client_payload is {kind_in_words(client_payload)}, not an object", INPUT)
    bounds = out_of_bounds(client_payload)
    if bounds is not None:
        return _out_of_bounds(bounds)
    payload = client_payload if isinstance(client_payload, dict) else dict(client_payload)
    problems = schema_problems(event_type, payload)
    problems += _code_problems(payload, results_repository, schema_refused=problems)
    if problems:
        return min(problems, key=lambda problem: problem[0])[1]
    return _callback(kind, payload, tuple(link_hosts), tuple(run_hosts), results_repository)


def schema_problems(event_type: str, payload: Mapping[Any, Any]) -> list[_Problem]:
    """What the callback schema of `event_type` refuses in `payload` (within bounds), as ranked rejections."""
    required = REQUIRED_BY_KIND[EVENT_KINDS[event_type]]
    problems: list[_Problem] = []
    for error in validator(f"{event_type}.callback").iter_errors(payload):
        problems.extend(_from_schema(error, payload, required))
    return problems


# -- bounds ------------------------------------------------------------------------------------------------


def _out_of_bounds(bounds: OutOfBounds) -> Rejected:
    """An integer too long for any id or count keeps the field's own code; anything else is TOO_LARGE."""
    path = bounds.path
    if bounds.what == "integer" and len(path) == 1 and path[0] in ID_FIELDS:
        return Rejected(OUT_OF_RANGE, path[0], f"{path[0]} is an integer of more than 40 digits, not an id", BOUNDS)
    if (
        bounds.what == "integer" and len(path) == 3 and path[0] == COUNTS and path[1] in ROWS and path[2] in COLUMNS
    ) or (bounds.what == "integer" and len(path) == 2 and path[0] == EXTRA_COUNTS and path[1] in EXTRA_COUNTERS):
        where = ".".join(path)
        return Rejected(BAD_COUNTS, where, f"{where} is an integer of more than 40 digits, not a count", BOUNDS)
    return Rejected(
        TOO_LARGE,
        str(path[0])[:SHOWN] if path else None,
        f"{bounds.reason}: no results callback is that big, so it is refused unread",
        BOUNDS,
    )


# -- schema errors as rejection codes ----------------------------------------------------------------------


def _from_schema(
    error: jsonschema.ValidationError, payload: Mapping[Any, Any], required: tuple[str, ...]
) -> list[_Problem]:
    path = tuple(error.absolute_path)
    if not path:  # the payload itself: only `required` can fail here (it is an object, unknown keys are free)
        if error.validator == "required" and isinstance(error.validator_value, list):
            return [
                (_rank(name, (), "required"), Rejected(MISSING_FIELD, name, f"{name} is missing", SCHEMA))
                for name in error.validator_value
                if name not in payload
            ]
        return [(_rank(None, (), _keyword(error)), _invalid(error, None))]
    key = path[0]
    if key == COUNTS:
        return [_counts_problem(error, path)]
    if key == EXTRA_COUNTS:
        return [_extra_counts_problem(error, path)]
    value = payload[key]
    rank = _rank(key, (), _keyword(error))
    if value is None and key in required:
        return [(rank, Rejected(MISSING_FIELD, key, f"{key} is null", SCHEMA))]
    if key == SOURCE:
        return [(rank, Rejected(WRONG_SOURCE, key, f"{key} {_shown(value)} is not an owner/name repository", SCHEMA))]
    if key in ID_FIELDS:
        return [(rank, _bad_id(key, value))]
    if key == RUN_DATE:
        calendar = isinstance(value, str) and _DATE.fullmatch(value)
        return [
            (
                rank,
                Rejected(
                    BAD_DATE,
                    key,
                    f"{key} {_shown(value)} is not " + ("a calendar date" if calendar else "a date written YYYY-MM-DD"),
                    SCHEMA,
                ),
            )
        ]
    if key == REQUESTED_BY:
        return [
            (
                rank,
                Rejected(
                    BAD_LOGIN,
                    key,
                    f"{key} {_shown(value)} is not a GitHub login (ASCII letters, "
                    f"digits, inner dashes; at most {MAX_LOGIN})",
                    SCHEMA,
                ),
            )
        ]
    if key == SUCCEEDED:
        return [(rank, Rejected(BAD_BOOLEAN, key, f'{key} {_shown(value)} is not "true" or "false"', SCHEMA))]
    return [(rank, _invalid(error, str(key)[:SHOWN]))]


def _bad_id(key: str, value: Any) -> Rejected:
    """A refused id: OUT_OF_RANGE when it is a decimal number (a JSON integer, or canonical digits), else
    NOT_NUMERIC; the schema's oneOf (string or integer) does not say which branch came closer, the value does."""
    if isinstance(value, str) and _DIGITS.fullmatch(value):
        if len(value) > len(str(MAX_ID)):
            return Rejected(OUT_OF_RANGE, key, f"{key} has {len(value):,} digits, more than any id", SCHEMA)
        return Rejected(OUT_OF_RANGE, key, f"{key} {_shown(value)} is not between 1 and 2**63-1", SCHEMA)
    if isinstance(value, int) and not isinstance(value, bool):
        return Rejected(OUT_OF_RANGE, key, f"{key} {_shown(value)} is not between 1 and 2**63-1", SCHEMA)
    return Rejected(
        NOT_NUMERIC, key, f"{key} {_shown(value)} is not a decimal id (ASCII digits, no sign, no leading zero)", SCHEMA
    )


def _counts_problem(error: jsonschema.ValidationError, path: tuple[Any, ...]) -> _Problem:
    """BAD_COUNTS at the dotted path of the cell, row or name at fault (MISSING_FIELD for a null table)."""
    where = ".".join(str(part) for part in path)
    instance, keyword = error.instance, _keyword(error)
    names, what = (ROWS, "row") if len(path) == 1 else (COLUMNS, "column")
    if len(path) == 1 and instance is None:
        return _rank(COUNTS, (), keyword), Rejected(MISSING_FIELD, COUNTS, f"{COUNTS} is null", SCHEMA)
    # `required` and `additionalProperties` refuse objects only
    if keyword == "required" and isinstance(instance, Mapping):
        missing = next(name for name in names if name not in instance)
        return (
            _rank(COUNTS, path[1:], keyword, names.index(missing)),
            Rejected(BAD_COUNTS, f"{where}.{missing}", f"{where} has no {what} {missing!r}", SCHEMA),
        )
    if keyword == "additionalProperties" and isinstance(instance, Mapping):
        extra = min(str(key) for key in instance if key not in names)
        return (
            _rank(COUNTS, path[1:], keyword),
            Rejected(
                BAD_COUNTS,
                f"{where}.{extra[:SHOWN]}",
                f"{where} has an unknown {what} {_shown(extra)}; the {what}s are {', '.join(names)}",
                SCHEMA,
            ),
        )
    if len(path) < 3:
        reason = f"{where} is {kind_in_words(instance)}, not an object"
    elif keyword == "type":
        reason = f"{where} {_shown(instance)} is not an integer"
    else:
        reason = f"{where} {_shown(instance)} is not between 0 and 2**63-1"
    return _rank(COUNTS, path[1:], keyword), Rejected(BAD_COUNTS, where, reason, SCHEMA)


def _extra_counts_problem(error: jsonschema.ValidationError, path: tuple[Any, ...]) -> _Problem:
    """BAD_COUNTS at `extra-counts` (not an object) or at the documented counter whose value is not a count."""
    where = ".".join(str(part) for part in path)
    if len(path) == 1:
        return (
            _rank(EXTRA_COUNTS, (), _keyword(error)),
            Rejected(
                BAD_COUNTS, EXTRA_COUNTS, f"{EXTRA_COUNTS} is {kind_in_words(error.instance)}, not an object", SCHEMA
            ),
        )
    name = EXTRA_COUNTERS.index(path[1]) if path[1] in EXTRA_COUNTERS else len(EXTRA_COUNTERS)
    what = "is not an integer" if error.validator == "type" else "is not between 0 and 2**63-1"
    return (
        _rank(EXTRA_COUNTS, (), _keyword(error), name),
        Rejected(BAD_COUNTS, where, f"{where} {_shown(error.instance)} {what}", SCHEMA),
    )


def _keyword(error: jsonschema.ValidationError) -> str:
    """The schema keyword that refused: a validator's errors always name it (the stubs allow it unset)."""
    return error.validator if isinstance(error.validator, str) else ""


def _invalid(error: jsonschema.ValidationError, key: str | None) -> Rejected:
    return Rejected(INVALID, key, f"{key or 'client_payload'}: the schema refuses it ({error.validator})", SCHEMA)


def _rank(key: Any, inside: tuple[Any, ...], keyword: str, name: int = 0, step: int = 0) -> tuple[Any, ...]:
    """Where a problem ranks: field, then (inside counts) row and column order, then keyword, then step."""
    field = FIELD_ORDER.index(key) if key in FIELD_ORDER else len(FIELD_ORDER)
    places = tuple(
        (ROWS, COLUMNS)[depth].index(part) if depth < 2 and part in (ROWS, COLUMNS)[depth] else 99
        for depth, part in enumerate(inside)
    )
    return field, places, _KEYWORD_RANK.get(keyword, 3), name, step


# -- what no schema can say --------------------------------------------------------------------------------


def _code_problems(
    payload: Mapping[Any, Any], results_repository: str, *, schema_refused: list[_Problem]
) -> list[_Problem]:
    """The configured results repository (when the schema took the source's form), and JSON floats."""
    problems: list[_Problem] = []
    source = payload.get(SOURCE)
    if isinstance(source, str) and not any(rejected.field == SOURCE for _, rejected in schema_refused):
        if not isinstance(results_repository, str) or source.lower() != results_repository.lower():
            problems.append(
                (
                    _rank(SOURCE, (), "", step=1),
                    Rejected(
                        WRONG_SOURCE,
                        SOURCE,
                        f"{SOURCE} {_shown(source)} is not the configured results repository "
                        f"{_shown(results_repository)}",
                        CODE,
                    ),
                )
            )
    for key in ID_FIELDS:
        if isinstance(payload.get(key), float):
            problems.append(
                (
                    _rank(key, (), "type", step=1),
                    Rejected(
                        NOT_NUMERIC,
                        key,
                        f"{key} {_shown(payload[key])} is not a decimal id: a JSON number written with "
                        "a fraction or an exponent",
                        CODE,
                    ),
                )
            )
    extra = _mapping(payload.get(EXTRA_COUNTS))
    for name in EXTRA_COUNTERS:
        if isinstance(extra.get(name), float):
            where = f"{EXTRA_COUNTS}.{name}"
            problems.append(
                (
                    _rank(EXTRA_COUNTS, (), "type", EXTRA_COUNTERS.index(name), step=1),
                    Rejected(
                        BAD_COUNTS,
                        where,
                        f"{where} {_shown(extra[name])} is not an integer: a JSON number written with a "
                        "fraction or an exponent",
                        CODE,
                    ),
                )
            )
    table = _mapping(payload.get(COUNTS))
    for row in ROWS:
        cells = _mapping(table.get(row))
        for column in COLUMNS:
            if isinstance(cells.get(column), float):
                where = f"{COUNTS}.{row}.{column}"
                problems.append(
                    (
                        _rank(COUNTS, (row, column), "type", step=1),
                        Rejected(
                            BAD_COUNTS,
                            where,
                            f"{where} {_shown(cells[column])} is not an integer: a JSON number "
                            "written with a fraction or an exponent",
                            CODE,
                        ),
                    )
                )
    return problems


# -- the accepted callback ---------------------------------------------------------------------------------


def _callback(
    kind: str,
    payload: Mapping[Any, Any],
    link_hosts: tuple[str, ...],
    run_hosts: tuple[str, ...],
    results_repository: str,
) -> Callback:
    """The Callback of a payload the schema and the code checks took: its values are known to be well formed."""
    date = payload.get(RUN_DATE)
    ignored, count = _ignored(kind, payload)
    common = Callback(
        kind=kind,
        pr_number=int(payload[PR_NUMBER]),
        run_id=int(payload[RUN_ID]),
        app_run_id=_id(payload, APP_RUN_ID),
        comment_id=_id(payload, COMMENT_ID),
        run_attempt=_id(payload, RUN_ATTEMPT),
        run_date=None if date is None else datetime.date.fromisoformat(date),
        requested_by=payload.get(REQUESTED_BY),
        ignored=ignored,
        ignored_count=count,
    )
    if kind == "completed":
        succeeded = payload[SUCCEEDED]
        url, dropped = _results_url(payload, link_hosts)
        return dataclasses.replace(
            common,
            succeeded=succeeded if isinstance(succeeded, bool) else succeeded == "true",
            results_url=url,
            dropped=dropped,
        )
    if kind == "ingested":
        table = payload[COUNTS]
        extra = _mapping(payload.get(EXTRA_COUNTS))
        url, dropped = _ingest_run_url(payload, run_hosts, results_repository)
        return dataclasses.replace(
            common,
            counts=MappingProxyType(
                {row: MappingProxyType({column: table[row][column] for column in COLUMNS}) for row in ROWS}
            ),
            ingest_run_url=url,
            dropped=dropped,
            extra_counts=MappingProxyType({name: extra[name] for name in EXTRA_COUNTERS if name in extra}),
        )
    return common


def _id(payload: Mapping[Any, Any], key: str) -> int | None:
    value = payload.get(key)
    return None if value is None else int(value)


def _mapping(value: object) -> Mapping[Any, Any]:
    """`value` if it is a JSON object, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def _ignored(kind: str, payload: Mapping[Any, Any]) -> tuple[tuple[str, ...], int]:
    """The names of the keys `kind` does not use (the first MAX_IGNORED in sorted order, cut short), and how
    many there are."""
    known = KEYS_BY_KIND[kind]
    unknown = [key for key in payload if key not in known]
    names = heapq.nsmallest(MAX_IGNORED, (str(key)[:SHOWN] for key in unknown))
    return tuple(names), len(unknown)


def _results_url(payload: Mapping[Any, Any], link_hosts: tuple[str, ...]) -> tuple[str | None, tuple[Rejected, ...]]:
    """(the results link rebuilt, or None; why it was dropped): never refuses the callback."""
    value, dropped = _plain_link(payload, RESULTS_URL)
    if value is None:
        return None, dropped
    link = checked_link(value, link_hosts, max_length=MAX_URL)
    if link is None:
        return None, (
            Rejected(
                LINK_NOT_ALLOWED,
                RESULTS_URL,
                f"{RESULTS_URL} {_shown(value)} is not an https link on "
                f"{', '.join(link_hosts) or 'any allowed host'} (no port, no user); dropped",
            ),
        )
    return link, ()


def _ingest_run_url(
    payload: Mapping[Any, Any], run_hosts: tuple[str, ...], results_repository: str
) -> tuple[str | None, tuple[Rejected, ...]]:
    """(the ingest run's page rebuilt from its parts, or None; why it was dropped): never refuses the callback.
    Kept only when it is a run page (optionally of one attempt) of the results repository on one of
    `run_hosts`."""
    value, dropped = _plain_link(payload, INGEST_RUN_URL)
    if value is None:
        return None, dropped
    checked = checked_link(value, run_hosts, max_length=MAX_URL)
    parts = urlsplit(checked) if checked is not None else None
    page = _RUN_PAGE.fullmatch(parts.path) if parts is not None and not parts.query else None
    if (
        parts is None
        or page is None
        or f"{page.group(1)}/{page.group(2)}".casefold() != str(results_repository).casefold()
    ):
        return None, (
            Rejected(
                LINK_NOT_ALLOWED,
                INGEST_RUN_URL,
                f"{INGEST_RUN_URL} {_shown(value)} is not a run page of {results_repository} on "
                f"{', '.join(run_hosts) or 'any allowed host'}; dropped",
            ),
        )
    owner, name, run_id, attempt = page.groups()
    steps = ("attempts", int(attempt)) if attempt else ()
    return web(f"https://{parts.hostname}", owner, name, "actions", "runs", int(run_id), *steps), ()


def _plain_link(payload: Mapping[Any, Any], key: str) -> tuple[str | None, tuple[Rejected, ...]]:
    """(the link under `key` if it is an https:// link of plain URL characters, else None; why it was dropped,
    when it was sent)."""
    value = payload.get(key)
    if value is None:
        return None, ()
    if not isinstance(value, str) or len(value) > MAX_URL or not _URL.fullmatch(value):
        return None, (
            Rejected(
                BAD_URL,
                key,
                f"{key} {_shown(value)} is not an https:// link of plain URL characters "
                f"(no spaces, Markdown or HTML); dropped",
            ),
        )
    return value, ()


def _shown(value: Any) -> str:
    """`value` for a log line: repr (so newlines and control characters stay escaped), cut to SHOWN chars."""
    if isinstance(value, int) and value.bit_length() > 4 * SHOWN:  # repr would be long, or refuse (4300 digits)
        return f"<an integer of {value.bit_length()} bits>"
    if isinstance(value, (list, dict)):  # its repr would cost its whole size, or recurse as deep as it nests
        return f"<{kind_in_words(value)} of {len(value)} items>"
    text = repr(value[:SHOWN] if isinstance(value, str) else value)
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"
