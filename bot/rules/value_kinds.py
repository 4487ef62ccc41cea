"""What kind of value a YAML or JSON reader gave, for an error that says a value has the wrong type.

`kind_of` names the kind in one word (the changelog's `wrong-type` errors carry it, and their templates word
it); `kind_in_words` says it as a message does ("expected a mapping, got a list"), for the repository
config's errors and the results callbacks' refusals.
"""

from __future__ import annotations

from typing import Any

# Most specific first: a boolean is an int too.
_TYPES = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "list"),
    (dict, "mapping"),
    (bytes, "binary"),
)

# Every word `kind_of` has for a value JSON or YAML's safe loader builds, but for YAML's dates, timestamps and
# sets (those are named by their type: date, datetime, set).
KINDS = ("null",) + tuple(name for _, name in _TYPES)

# A number is "a number", integer or not: a setting takes 2 and 2.0 alike.
_WORDS = {
    "null": "nothing",
    "boolean": "a boolean",
    "integer": "a number",
    "number": "a number",
    "string": "a string",
    "list": "a list",
    "mapping": "a mapping",
}


def kind_of(value: Any) -> str:
    """`value`'s kind in one word: null, boolean, integer, number, string, list, mapping or binary; any other
    value its type's name (date, datetime, set)."""
    if value is None:
        return "null"
    for kind, name in _TYPES:
        if isinstance(value, kind):
            return name
    return type(value).__name__


def kind_in_words(value: Any) -> str:
    """`value`'s kind as a message says it: "nothing" (null), "a boolean", "a number", "a string", "a list",
    "a mapping"; any other value its type's name (bytes, date)."""
    return _WORDS.get(kind_of(value)) or type(value).__name__
