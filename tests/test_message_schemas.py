"""The messages sweepbot exchanges with workflows, as JSON Schema (examples/schemas/): the contract a results
service and a sign-off judge implement, and what the bot itself validates with.

The schemas describe what sweepbot sends (`stage-results`, the judge's workflow_dispatch inputs) and accepts
(the three results callbacks, `signoff-judged`). The example payloads (examples/payloads/) validate, the bot
accepts each example callback and sends what the request schemas allow, and over the callback table of
tests/test_results_callbacks.py every bad case is refused by the step that should: the schema, except the cases
the bounds refuse before any schema reads them and the ones that need facts no schema holds.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import jsonschema
import pytest
import referencing.exceptions
from hypothesis import given
from hypothesis import strategies as st
from test_results_callbacks import CASES, GOOD, HOSTS, INGESTED, RESULTS, STARTED, payload

from bot.core.config import default_policy
from bot.rules import message_schemas, signoff
from bot.rules.message_schemas import MAX_DEPTH, MAX_KEYS, MAX_SIZE, out_of_bounds, validator
from bot.rules.results_callbacks import (
    EVENT_KINDS,
    EXTRA_COUNTERS,
    KEYS_BY_KIND,
    REQUIRED_BY_KIND,
    Callback,
    Rejected,
    parse_callback,
    schema_problems,
)
from handlers.reuse_command import ingest_payload, staging_payload
from handlers.signoff import JUDGE_INPUTS, judge_dispatch

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "examples" / "schemas"
PAYLOADS = ROOT / "examples" / "payloads"
EXAMPLE_RESULTS = "SemiAnalysisAI/InferenceX-app"
EXAMPLE_HOSTS = ("inferencex.semianalysis.com",)
MESSAGES = sorted(
    p.name.removesuffix(".schema.json") for p in SCHEMAS.glob("*.schema.json") if p.name != "definitions.schema.json"
)

# Cases where the parser knows what a schema cannot say, so the code step refuses them: which repository is the
# results service (configured, not in the message), and 17.0 against 17 (the same number to JSON Schema; the
# parser wants an integer as written). Whether a 19-digit decimal string is above 2**63-1 the schema now says
# (its id pattern compares digit by digit), so "id-over-max" is the schema's.
SCHEMA_CANNOT_SAY = {"source-other", "id-float", "counts-float", "ingest-extras-float"}
# The schema refuses this one's run-id too, but the source is checked first (the order a refusal is reported
# in), and that a well-formed source is not the configured one only the code knows.
SOURCE_FIRST = {"source-before-fields"}
# Refused by the bounds before the schema runs: integers of more than 40 digits (jsonschema would raise on one
# of over 4,300), and a payload beyond GitHub's own size limit.
BOUNDED = {"id-huge-int", "counts-enormous", "unknown-beyond-githubs-size", "ingest-extras-huge"}


def example(message: str) -> dict:
    return json.loads((PAYLOADS / f"{message}.json").read_text())


@pytest.mark.parametrize("path", sorted(SCHEMAS.glob("*.json")), ids=lambda p: p.name)
def test_every_schema_is_a_valid_json_schema(path):
    jsonschema.Draft202012Validator.check_schema(json.loads(path.read_text()))


def test_every_message_has_one_example_payload_and_every_example_a_schema():
    assert MESSAGES == sorted(p.name.removesuffix(".json") for p in PAYLOADS.glob("*.json"))
    assert {
        "signoff-judged.callback",
        "signoff-judge.inputs",
        "stage-results.request",
        "ingest-results.request",
    } <= set(MESSAGES)


@pytest.mark.parametrize("message", MESSAGES)
def test_every_example_payload_is_valid_against_its_schema(message):
    assert [e.message for e in validator(message).iter_errors(example(message))] == []


def test_the_bot_loads_these_very_files_and_nothing_from_elsewhere():
    assert message_schemas.schema_dir() == SCHEMAS.resolve()
    assert message_schemas.message_names() == tuple(MESSAGES)
    assert validator("ingest-completed.callback") is validator("ingest-completed.callback")  # built once
    assert {uri.rsplit("/", 1)[0] for uri in message_schemas.registry()} == {"https://sweepbot.invalid/schemas"}
    elsewhere = jsonschema.Draft202012Validator(
        {"$ref": "https://example.com/schemas/other.schema.json"}, registry=message_schemas.registry()
    )
    with pytest.raises(referencing.exceptions.Unresolvable):  # not downloaded: the registry has no retriever
        elsewhere.is_valid({})
    with pytest.raises(message_schemas.SchemasMissing):
        validator("definitions")


def as_written(message: str) -> jsonschema.Draft202012Validator:
    """A validator of the schema file itself, its `$ref`s looked up on every validation."""
    schema = json.loads((SCHEMAS / f"{message}.schema.json").read_text())
    return jsonschema.Draft202012Validator(
        schema, registry=message_schemas.registry(), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )


def test_the_bots_validators_have_their_refs_inlined_and_judge_as_the_files_do():
    for message in MESSAGES:
        assert '"$ref"' not in json.dumps(validator(message).schema), message
        assert validator(message).is_valid(example(message)) and as_written(message).is_valid(example(message))
    for name, event, changes, _ in TYPED:
        body = payload(event, changes)
        if name not in BOUNDED:
            assert validator(f"{event}.callback").is_valid(body) == as_written(f"{event}.callback").is_valid(body), name


@pytest.mark.parametrize("event_type", EVENT_KINDS)
def test_the_bot_accepts_each_example_callback(event_type):
    parsed = parse_callback(
        event_type,
        example(f"{event_type}.callback"),
        results_repository=EXAMPLE_RESULTS,
        link_hosts=EXAMPLE_HOSTS,
        run_hosts=("github.com",),
    )
    assert isinstance(parsed, Callback) and parsed.kind == EVENT_KINDS[event_type], parsed
    assert not parsed.dropped and not parsed.ignored


def test_the_example_ingest_callback_carries_every_documented_counter_and_a_kept_ingest_run_link():
    sent = example("ingest-completed.callback")
    parsed = parse_callback("ingest-completed", sent, results_repository=EXAMPLE_RESULTS, run_hosts=("github.com",))
    assert tuple(parsed.extra_counts) == EXTRA_COUNTERS and parsed.ingest_run_url == sent["ingest-run-url"]
    assert len(sent) <= 10, "GitHub takes at most 10 top-level keys in a client_payload"
    extra = validator("ingest-completed.callback").schema["properties"]["extra-counts"]
    assert tuple(extra["properties"]) == EXTRA_COUNTERS, "the schema documents the counters the report shows"


def test_the_bot_accepts_the_example_judge_answer():
    sent = example("signoff-judged.callback")
    answer = signoff.judge_result(sent)
    assert isinstance(answer, dict), answer
    assert (answer["pr"], answer["verdict"], answer["run_id"], answer["ignored"]) == (1234, "pass", 13579246899, [])
    assert answer["dispatch_id"] == example("signoff-judge.inputs")["dispatch-id"]


@pytest.mark.parametrize("kind", sorted(KEYS_BY_KIND))
def test_the_parsers_tables_of_fields_say_what_the_schemas_say(kind):
    event = next(event for event, k in EVENT_KINDS.items() if k == kind)
    schema = validator(f"{event}.callback").schema
    echoed = json.loads((SCHEMAS / "definitions.schema.json").read_text())["$defs"]["echoed"]["properties"]
    assert set(schema["required"]) == set(REQUIRED_BY_KIND[kind])
    assert set(schema["properties"]) | set(echoed) == KEYS_BY_KIND[kind]
    judged = validator("signoff-judged.callback").schema
    assert tuple(judged["properties"]) == signoff.JUDGE_KEYS + signoff.JUDGE_OPTIONAL


def test_what_the_bot_sends_the_results_service_is_valid_against_the_request_schema():
    run = {"id": 13579246801, "run_attempt": 2, "run_started_at": "2026-11-30T08:00:00Z"}
    sent = staging_payload(1234, run, "maintainer-1", 2233445566)
    assert list(validator("stage-results.request").iter_errors(sent)) == []
    assert list(validator("stage-results.request").iter_errors({**sent, "extra": "x"})) != []
    undated = staging_payload(1234, {"id": 2**63 - 1, "run_attempt": 1}, "maintainer-1", 7)
    assert list(validator("stage-results.request").iter_errors(undated)) == []


def test_what_the_bot_asks_the_results_service_to_ingest_is_valid_against_the_request_schema():
    run = {"id": 13579246801, "run_attempt": 2, "run_started_at": "2026-11-30T08:00:00Z"}
    sent = ingest_payload(1234, run, "3f786850e387550fdab836ed7e6dc881de23001b", "maintainer-1", 2233445577)
    assert list(validator("ingest-results.request").iter_errors(sent)) == []
    assert set(sent) == set(example("ingest-results.request"))
    assert list(validator("ingest-results.request").iter_errors({**sent, "extra": "x"})) != []
    assert list(validator("ingest-results.request").iter_errors({**sent, "merge-sha": "3f78685"})) != []
    assert list(validator("ingest-results.request").iter_errors({**sent, "pinned-by": "sweepbot[bot]"})) != []
    no_merge_sha = ingest_payload(1234, {"id": 2**63 - 1, "run_attempt": 1}, "", "maintainer-1", 7)
    assert list(validator("ingest-results.request").iter_errors(no_merge_sha)) == []


@pytest.mark.parametrize("source, number", [("comment", 2233445566), ("review", 1), ("review-comment", 2**63 - 1)])
def test_what_the_bot_sends_the_judge_is_valid_against_the_inputs_schema(source, number):
    ctx = SimpleNamespace(policy=default_policy(), default_branch="main")
    posted = signoff.Signoff(source, number, "maintainer-1", "signed off", "https://github.com/o/r/pull/12")
    start = judge_dispatch(ctx, 12, "3f786850e387550fdab836ed7e6dc881de23001b", posted)
    assert tuple(start.inputs) == JUDGE_INPUTS
    assert list(validator("signoff-judge.inputs").iter_errors(dict(start.inputs))) == []
    assert list(validator("signoff-judge.inputs").iter_errors({**start.inputs, "extra": "x"})) != []


# -- the callback table: each case refused by the step that should -------------------------------------------

# The table's cases with a known event type (the type chooses the schema; an unknown type has none).
TYPED = [case for case in CASES if case[1] in EVENT_KINDS and isinstance(case[2], dict)]


def test_the_typed_cases_are_nearly_all_of_the_table():
    assert len(CASES) - len(TYPED) == 3, [case[0] for case in CASES if case not in TYPED]


def test_the_named_cases_are_in_the_table():
    assert SCHEMA_CANNOT_SAY | SOURCE_FIRST | BOUNDED <= {case[0] for case in TYPED}


@pytest.mark.parametrize("name, event, changes, expected", TYPED, ids=[case[0] for case in TYPED])
def test_each_bad_callback_is_refused_by_its_schema(name, event, changes, expected):
    """Every case the bot refuses, the schema refuses too and is the step that refused it; every case it
    accepts, the schema accepts. The exceptions are named above, each with the step that refuses instead."""
    body = payload(event, changes)
    parsed = parse_callback(event, body, results_repository=RESULTS, link_hosts=HOSTS)
    if name in BOUNDED:
        assert isinstance(parsed, Rejected) and parsed.step == "bounds", parsed
        return
    schema_ok = validator(f"{event}.callback").is_valid(body)
    if name in SCHEMA_CANNOT_SAY:
        assert schema_ok and isinstance(parsed, Rejected) and parsed.step == "code", (name, parsed)
    elif isinstance(parsed, Callback):
        assert schema_ok, name
    elif name in SOURCE_FIRST:
        assert not schema_ok and parsed.step == "code", (name, parsed)
    else:
        assert not schema_ok and parsed.step == "schema", (name, parsed)
        # and the reported problem is the first of the schema's own, not one the code found
        assert min(schema_problems(event, body), key=lambda p: p[0])[1] == parsed


# -- the bounds: the worst payloads are refused before any schema reads them ---------------------------------

WORST = {
    "100,000 top-level keys": {**GOOD[STARTED], **{f"k{i}": i for i in range(100_000)}},
    "every known field a 2 MB string": {key: "9" * 2_000_000 for key in GOOD[INGESTED]},
    "counts with 840,000 rows": {**GOOD[INGESTED], "counts": {f"row-{i}": {} for i in range(840_000)}},
    "a list of 10,000,000 items": {**GOOD[INGESTED], "counts": [0] * 10_000_000},
    "an id of 100,000 digits": {**GOOD[STARTED], "run-id": 10**100_000},
    "a count of 5,000 digits": {**GOOD[INGESTED], "counts": {"benchmark": {"new": 10**5000}}},
    "a cell nested 100,000 deep": {**GOOD[INGESTED], "counts": {"eval": {"new": "nest"}}},
}


def nested(depth: int) -> object:
    value: object = 0
    for _ in range(depth):
        value = [value]
    return value


WORST["a cell nested 100,000 deep"]["counts"]["eval"]["new"] = nested(100_000)


@pytest.mark.parametrize("name", WORST)
def test_the_worst_payloads_are_refused_by_the_bounds(name):
    event = INGESTED if "counts" in WORST[name] else STARTED
    parsed = parse_callback(event, WORST[name], results_repository=RESULTS, link_hosts=HOSTS)
    assert isinstance(parsed, Rejected) and parsed.step == "bounds", parsed
    assert parsed.reason and len(parsed.reason) < 400
    assert isinstance(signoff.judge_result(WORST[name]), str)


def test_the_bounds_take_what_github_can_send():
    """GitHub sends at most 10 top-level keys and under 64 KB: a payload at every bound is within them."""
    at_the_bounds = {f"key-{i:02d}": "x" for i in range(MAX_KEYS - 2)}
    at_the_bounds["nest"] = nested(MAX_DEPTH - 2)
    at_the_bounds["text"] = "x" * (MAX_SIZE - 2_000)
    assert out_of_bounds(at_the_bounds) is None
    assert out_of_bounds({**at_the_bounds, "nest": nested(MAX_DEPTH)}).what == "depth"
    assert out_of_bounds({**at_the_bounds, "text": "x" * MAX_SIZE}).what == "size"
    assert out_of_bounds({**at_the_bounds, "a": 1, "b": 2, "c": 3}).what == "keys"
    assert out_of_bounds({"n": 10**40}) is None and out_of_bounds({"n": -(10**40)}) is None
    assert out_of_bounds({"n": 10**41}).what == "integer"


# -- the id pattern: "at most 2**63-1" written digit by digit ----------------------------------------------

REQUEST = validator("stage-results.request").schema
assert not isinstance(REQUEST, bool), REQUEST  # an object schema (a schema may also be true or false)
ID = REQUEST["properties"]["pr-number"]
MAX_ID = 2**63 - 1


@pytest.mark.parametrize(
    "number",
    [
        1,
        9,
        10,
        10**18 - 1,
        10**18,
        MAX_ID - 1,
        MAX_ID,
        MAX_ID + 1,
        10**19 - 1,
        10**19,
        9_300_000_000_000_000_000,
        9_223_372_036_854_775_799,
        9_223_372_036_854_775_810,
        0,
    ],
)
def test_the_id_pattern_takes_exactly_1_to_2_63_minus_1(number):
    assert validator("stage-results.request").evolve(schema=ID).is_valid(str(number)) == (1 <= number <= MAX_ID)


@given(st.integers(min_value=0, max_value=10**20) | st.integers(min_value=MAX_ID - 10**6, max_value=MAX_ID + 10**6))
def test_the_id_pattern_agrees_with_integer_comparison(number):
    assert validator("stage-results.request").evolve(schema=ID).is_valid(str(number)) == (1 <= number <= MAX_ID)


def test_a_ref_beside_constraints_keeps_both_once_inlined():
    resolver = message_schemas.registry().resolver(base_uri="https://sweepbot.invalid/schemas/x.schema.json")
    inlined = message_schemas._without_refs(
        {"$ref": "definitions.schema.json#/$defs/login", "maxLength": 3, "description": "a short login"}, resolver, 0
    )
    check = jsonschema.Draft202012Validator(inlined)
    assert [check.is_valid(login) for login in ("abc", "abcd", "a_b")] == [True, False, False]
