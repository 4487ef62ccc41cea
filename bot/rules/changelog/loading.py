"""YAML for the changelog: a safe loader (libyaml's when installed, else PyYAML's own) that records duplicate
keys instead of silently keeping the last one, and the builder of an entry's value from its nodes.

The other modules call `loading.Loader` through this module, so that a test can swap in PyYAML's own."""

from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG, _SEQ_TAG, _MAP_TAG = "tag:yaml.org,2002:str", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"
_VALUE_TAG = "tag:yaml.org,2002:value"  # `=`: SafeConstructor reads it as the string "="


def _loader_class(base: type) -> type:
    class DuplicateKeyLoader(base):  # type: ignore[misc]  # libyaml's loader or PyYAML's: mypy takes no such base
        """SafeLoader (libyaml's when available) that records every duplicate mapping key with its lines."""

        def __init__(self, stream: str):
            super().__init__(stream)
            self.duplicates: list[tuple[Any, int, int]] = []  # (key, first line, duplicate line), 0-based

        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE_TAG:
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    if key in seen:
                        self.duplicates.append((key, seen[key], key_node.start_mark.line))
                    else:
                        seen[key] = key_node.start_mark.line
                except TypeError:  # an unhashable key: the safe constructor refuses it below, with its mark
                    continue
            mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
            return mapping

    return DuplicateKeyLoader


Loader = _loader_class(getattr(yaml, "CSafeLoader", yaml.SafeLoader))


class _Builder:
    """An entry's Python value from its node, as SafeConstructor builds it, faster and without exploding.

    Strings, lists and mappings are built here (each node once, so a billion-laughs entry costs its nodes);
    any other tag (numbers, booleans, null, dates, binary, sets, omap...) goes to the loader. A merge key `<<`
    inside a value is kept as the key "<<", not merged: a mapping inside a field is wrong there whatever it
    holds (the entry's own merge keys are taken out before). Mapping keys that repeat are recorded in
    `duplicates`. Recursion is bounded: nothing deeper than `max_depth` is ever built."""

    def __init__(self, loader: Any):
        self.loader = loader
        loader.constructed_objects = {}
        loader.recursive_objects = {}
        loader.duplicates = []
        self.duplicates: list[tuple[Any, int, int]] = loader.duplicates
        self.built: dict[Node, Any] = {}
        self.building: set[int] = set()

    def build(self, node: Node) -> Any:
        if node in self.built:
            return self.built[node]
        tag = node.tag
        if type(node) is ScalarNode and (tag == _STR_TAG or tag == _VALUE_TAG or tag == _MERGE_TAG):
            value: Any = node.value
        elif type(node) is SequenceNode and tag == _SEQ_TAG:
            self.enter(node)
            value = [self.build(item) for item in node.value]
            self.building.discard(id(node))
        elif type(node) is MappingNode and tag == _MAP_TAG:
            self.enter(node)
            value = {}
            seen: dict[Any, int] = {}
            for key_node, value_node in node.value:
                key = self.build(key_node)
                try:
                    if key in seen:
                        if key_node.tag != _MERGE_TAG:
                            self.duplicates.append((key, seen[key], key_node.start_mark.line))
                    else:
                        seen[key] = key_node.start_mark.line
                except TypeError:
                    raise ConstructorError(
                        "while constructing a mapping", node.start_mark, "found unhashable key", key_node.start_mark
                    ) from None
                value[key] = self.build(value_node)
            self.building.discard(id(node))
        else:
            value = self.loader.construct_object(node, deep=True)
        self.built[node] = value
        return value

    def enter(self, node: Node) -> None:
        if id(node) in self.building:  # `&a [*a]`: SafeConstructor refuses it the same way when deep
            raise ConstructorError(None, None, "found unconstructable recursive node", node.start_mark)
        self.building.add(id(node))
