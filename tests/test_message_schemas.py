"""The results-service messages as JSON Schema (examples/schemas/): the contract a results service implements.

The schemas describe what sweepbot sends (`stage-results`) and accepts (the three callbacks); the example
payloads (examples/payloads/) validate, the bot accepts each example, and over the callback table of
tests/test_results_callbacks.py the schemas and the bot's parser agree on every case but the ones listed in
SCHEMA_CANNOT_SAY, which need facts no schema holds.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from referencing import Registry, Resource

from bot.rules.results_callbacks import EVENT_KINDS, Callback, parse_callback
from handlers.reuse_command import staging_payload
from test_results_callbacks import CASES, HOSTS, RESULTS, payload

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "examples" / "schemas"
PAYLOADS = ROOT / "examples" / "payloads"
EXAMPLE_RESULTS = "SemiAnalysisAI/InferenceX-app"
EXAMPLE_HOSTS = ("inferencex.semianalysis.com",)

# Cases where the parser knows what a schema cannot say: which repository is the results service (configured,
# not in the message), whether a 19-digit decimal string is above 2**63-1, and 17.0 against 17 (the same number
# to JSON Schema; the parser wants an integer as written). Everything else they must judge alike.
SCHEMA_CANNOT_SAY = {"source-other", "id-over-max", "id-float", "counts-float"}


def registry() -> Registry:
    resources = [(p.name, Resource.from_contents(json.loads(p.read_text()))) for p in SCHEMAS.glob("*.json")]
    return Registry().with_resources(resources)


def validator(message: str) -> jsonschema.protocols.Validator:
    schema = json.loads((SCHEMAS / f"{message}.schema.json").read_text())
    return jsonschema.Draft202012Validator(schema, registry=registry(),
                                           format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


@pytest.mark.parametrize("path", sorted(SCHEMAS.glob("*.json")), ids=lambda p: p.name)
def test_every_schema_is_a_valid_json_schema(path):
    jsonschema.Draft202012Validator.check_schema(json.loads(path.read_text()))


@pytest.mark.parametrize("path", sorted(PAYLOADS.glob("*.json")), ids=lambda p: p.name)
def test_every_example_payload_is_valid_against_its_schema(path):
    message = path.name.removesuffix(".json")
    errors = [e.message for e in validator(message).iter_errors(json.loads(path.read_text()))]
    assert errors == []


@pytest.mark.parametrize("event_type", EVENT_KINDS)
def test_the_bot_accepts_each_example_callback(event_type):
    example = json.loads((PAYLOADS / f"{event_type}.callback.json").read_text())
    parsed = parse_callback(event_type, example, results_repository=EXAMPLE_RESULTS, link_hosts=EXAMPLE_HOSTS)
    assert isinstance(parsed, Callback) and parsed.kind == EVENT_KINDS[event_type], parsed
    assert not parsed.dropped and not parsed.ignored


def test_what_the_bot_sends_is_valid_against_the_request_schema():
    run = {"id": 13579246801, "run_attempt": 2, "run_started_at": "2026-11-30T08:00:00Z"}
    sent = staging_payload(1234, run, "maintainer-1", 2233445566)
    assert list(validator("stage-results.request").iter_errors(sent)) == []
    assert list(validator("stage-results.request").iter_errors({**sent, "extra": "x"})) != []


# The table's cases with a known event type (the type chooses the schema; an unknown type has none).
TYPED = [case for case in CASES if case[1] in EVENT_KINDS and isinstance(case[2], dict)]


def test_the_typed_cases_are_nearly_all_of_the_table():
    assert len(CASES) - len(TYPED) == 3, [case[0] for case in CASES if case not in TYPED]


@pytest.mark.parametrize("name, event, changes, expected", TYPED, ids=[case[0] for case in TYPED])
def test_the_schemas_and_the_parser_agree_on_the_callback_table(name, event, changes, expected):
    body = payload(event, changes)
    parsed = parse_callback(event, body, results_repository=RESULTS, link_hosts=HOSTS)
    try:
        schema_ok = validator(f"{event}.callback").is_valid(body)
    except ValueError:
        # jsonschema writes an integer of over 4,300 digits into its error message, and Python refuses to: the
        # validator raises instead of answering. Counted as refused; a bot validating with it must cap first.
        schema_ok = False
    if name in SCHEMA_CANNOT_SAY:  # the schema lets it through and the parser refuses it
        assert schema_ok and not isinstance(parsed, Callback), (name, parsed)
        return
    assert schema_ok == isinstance(parsed, Callback), (name, parsed)
