"""The policy as handlers see it: a frozen, read-only view of app.yaml's defaults merged with a repository's file."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Iterator


def freeze(value: Any) -> Any:
    """Mappings become read-only, lists become tuples, all the way down."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value


class Policy(Mapping):
    """Read-only: a handler cannot change the policy another delivery will see.

    Indexing works as on the merged mapping (`policy["paths"]["changelog"]`).
    """

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any]):
        object.__setattr__(self, "_data", freeze(data))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("the policy is read-only")

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"Policy({dict(self._data)!r})"

    def to_dict(self) -> dict[str, Any]:
        """A plain, mutable copy (for printing and comparing)."""
        return thaw(self._data)
