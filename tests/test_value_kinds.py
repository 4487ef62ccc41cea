"""A value's kind (bot/rules/value_kinds.py): the one description of a wrong-typed value that the changelog's
errors, the repository config's errors and the results callbacks' refusals use."""

from __future__ import annotations

import datetime

import pytest

from bot.core.config import ConfigError, parse_repo_config
from bot.rules.results_callbacks import Rejected, parse_callback
from bot.rules.value_kinds import KINDS, kind_in_words, kind_of


@pytest.mark.parametrize(
    ("value", "kind", "words"),
    [
        (None, "null", "nothing"),
        (True, "boolean", "a boolean"),  # a bool is an int too: it is named first
        (0, "integer", "a number"),
        (1.5, "number", "a number"),
        ("", "string", "a string"),
        ([], "list", "a list"),
        ({}, "mapping", "a mapping"),
        (b"x", "binary", "bytes"),
        (datetime.date(2026, 1, 1), "date", "date"),
        (datetime.datetime(2026, 1, 1), "datetime", "datetime"),
        ({1}, "set", "set"),
    ],
)
def test_kind_and_words(value, kind, words):
    assert (kind_of(value), kind_in_words(value)) == (kind, words)


def test_the_kinds_are_the_words_kind_of_has_for_json_and_yaml():
    assert KINDS == ("null", "boolean", "integer", "number", "string", "list", "mapping", "binary")


def test_config_and_callbacks_say_the_kind_in_the_same_words():
    with pytest.raises(ConfigError) as raised:
        parse_repo_config("paths: [1]\nlimits:\n  changelog_bytes: null\n")
    assert raised.value.errors == [
        "paths: expected a mapping, got a list (line 1)",
        "limits.changelog_bytes: expected a whole number above 0, got nothing (line 3)",
    ]
    rejected = parse_callback("ingest-completed", [1], results_repository="o/r")
    assert isinstance(rejected, Rejected) and rejected.reason == "client_payload is a list, not an object"
