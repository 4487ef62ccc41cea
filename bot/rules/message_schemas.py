"""The JSON Schemas of the messages sweepbot exchanges with workflows (examples/schemas/), loaded for validation,
and the bounds a message is held to before any schema reads it.

The schemas stay in examples/schemas/ (the integration kit documents them there) and ship in the wheel as the
data-only package `sweepbot_schemas` (pyproject.toml maps it, as bot/core/resources.py explains for app.yaml
and the templates). They are found the same way: through the package's `__path__`, the entry that really holds
them, which works for editable and normal installs alike. This module sits in bot.rules, the lowest room, so the
rules that parse messages can use it; it reads files and imports nothing of the bot's.

`$ref`s are resolved with `referencing` against these files only: the registry holds every schema under its own
`$id` (https://sweepbot.invalid/schemas/...) and has no retriever, so a reference to anything else is an error,
never a download. Each validator is built once per process.
"""

from __future__ import annotations

import functools
import importlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
from referencing import Registry, Resource

SCHEMAS_PACKAGE = "sweepbot_schemas"
DEFINITIONS = "definitions.schema.json"
SUFFIX = ".schema.json"

# Bounds on a message, checked before the schema runs (jsonschema writes a refused value into its error text
# with repr, which costs the value's whole size, recurses as deep as it nests, and raises for an integer of more
# than 4,300 digits). GitHub refuses a repository_dispatch client_payload of more than 10 top-level properties
# or of 64 KB or more (REST API, "Create a repository dispatch event"), so no real callback comes near them.
MAX_KEYS = 64  # top-level keys: GitHub allows 10; the bot ignores unknown keys, so it takes a few more
MAX_SIZE = 65_536  # characters of every key and string, plus one for each value: at most the JSON's bytes
MAX_DEPTH = 16  # objects and lists inside one another (a results callback's counts are 3 deep)
MAX_INT_BITS = 133  # 40 decimal digits: an id or a count has at most 19


class SchemasMissing(FileNotFoundError):
    """The message schemas are not installed: a broken or partial install."""


def schema_dir() -> Path:
    """The directory of the data package `sweepbot_schemas`: the one of its `__path__` entries holding them."""
    try:
        module = importlib.import_module(SCHEMAS_PACKAGE)
    except ImportError:
        module = None
    for entry in getattr(module, "__path__", ()):
        directory = Path(entry)
        if (directory / DEFINITIONS).is_file():
            return directory.resolve()
    raise SchemasMissing(
        f"{DEFINITIONS} not found: the data package {SCHEMAS_PACKAGE} is not installed or does not hold it."
        " Install sweepbot with `pip install .` (or `pip install -e .` in a checkout)."
    )


def message_names() -> tuple[str, ...]:
    """The messages that have a schema ("stage-results.request", "ingest-completed.callback", ...), sorted."""
    return tuple(sorted(p.name.removesuffix(SUFFIX) for p in schema_dir().glob(f"*{SUFFIX}") if p.name != DEFINITIONS))


@functools.cache
def registry() -> Registry:
    """Every schema of the package under its own `$id`, and nothing else (no retriever: no network)."""
    resources = [
        Resource.from_contents(json.loads(path.read_text(encoding="utf-8")))
        for path in sorted(schema_dir().glob(f"*{SUFFIX}"))
    ]
    return (resources @ Registry()).crawl()


@functools.cache
def validator(message: str) -> jsonschema.Draft202012Validator:
    """The Draft 2020-12 validator of `message` (e.g. "ingest-completed.callback"), formats checked, built once.

    Its schema is the message's with every `$ref` replaced by what it refers to (resolved once, here, by the
    registry): the same constraints, without a lookup on every validation."""
    path = schema_dir() / f"{message}{SUFFIX}"
    if message == DEFINITIONS.removesuffix(SUFFIX) or not path.is_file():
        raise SchemasMissing(f"no schema for the message {message!r} in {schema_dir()}")
    schema = json.loads(path.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    inlined = _without_refs(schema, registry().resolver(base_uri=schema["$id"]), 0)
    return jsonschema.Draft202012Validator(
        inlined, registry=registry(), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )


# Keywords whose values are data, not schemas: a "$ref" inside them is not a reference.
_DATA_KEYWORDS = frozenset({"const", "enum", "examples", "default"})
_MAX_REFS_DEEP = 32  # the schemas refer at most 3 deep; a loop of references is an error, not a hang


def _without_refs(schema: Any, resolver: Any, depth: int) -> Any:
    """`schema` with each `$ref` replaced by its target (itself without refs). A `$ref` with only annotations
    beside it (description, title) becomes its target; with constraints beside it, allOf [target, the rest]."""
    if isinstance(schema, list):
        return [_without_refs(item, resolver, depth) for item in schema]
    if not isinstance(schema, dict):
        return schema
    rest = {
        key: value if key in _DATA_KEYWORDS else _without_refs(value, resolver, depth)
        for key, value in schema.items()
        if key != "$ref"
    }
    if "$ref" not in schema:
        return rest
    if depth >= _MAX_REFS_DEEP:
        raise ValueError(f"$ref {schema['$ref']!r}: references nest more than {_MAX_REFS_DEEP} deep")
    resolved = resolver.lookup(schema["$ref"])
    target = _without_refs(resolved.contents, resolved.resolver, depth + 1)
    if set(rest) <= {"description", "title", "$comment"}:
        return target
    return {**{k: v for k, v in rest.items() if k != "allOf"}, "allOf": [target, *rest.get("allOf", [])]}


@dataclass(frozen=True)
class OutOfBounds:
    """Why a message is too big to validate: `what` is "keys", "size", "depth" or "integer"; `path` the keys
    (and list indexes) down to the value at fault, () for the message as a whole; `reason` in English."""

    what: str
    path: tuple[Any, ...]
    reason: str


def out_of_bounds(message: Mapping[Any, Any]) -> OutOfBounds | None:
    """The first bound `message` breaks (MAX_KEYS, MAX_SIZE, MAX_DEPTH, MAX_INT_BITS), or None.

    The walk costs at most about MAX_SIZE steps whatever the message holds: a container's length is charged
    before its items are looked at, and the walk stops once the budget is spent."""
    if len(message) > MAX_KEYS:
        return OutOfBounds("keys", (), f"client_payload has {len(message):,} keys, more than {MAX_KEYS}")
    budget = MAX_SIZE
    stack: list[tuple[Any, tuple[Any, ...]]] = [(message, ())]
    while stack:
        value, path = stack.pop()
        budget -= 1
        if isinstance(value, str):
            budget -= len(value)
        elif isinstance(value, int) and not isinstance(value, bool):
            if value.bit_length() > MAX_INT_BITS:
                return OutOfBounds("integer", path, f"{_dotted(path)} is an integer of more than 40 digits")
        elif isinstance(value, (Mapping, list, tuple)):
            if len(path) >= MAX_DEPTH:
                return OutOfBounds("depth", path, f"{_dotted(path)} nests more than {MAX_DEPTH} levels deep")
            budget -= len(value)
            if budget < 0:
                break
            if isinstance(value, Mapping):
                items = [(item, path + (key,)) for key, item in value.items()]
                budget -= sum(len(key) for key in value if isinstance(key, str))
            else:
                items = [(item, path + (index,)) for index, item in enumerate(value)]
            stack.extend(reversed(items))  # popped in the message's order: the first problem is the one named
        if budget < 0:
            break
    if budget < 0:
        return OutOfBounds("size", (), f"client_payload holds more than {MAX_SIZE:,} characters or values")
    return None


def _dotted(path: tuple[Any, ...]) -> str:
    """A path for a log line: its first keys, dotted, each cut short (list indexes in brackets)."""
    shown = "".join(f"[{part}]" if isinstance(part, int) else f".{str(part)[:60]}" for part in path[:6])
    return (shown.lstrip(".") or "client_payload") + ("…" if len(path) > 6 else "")
