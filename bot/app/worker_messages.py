"""What the intake and the workers' process say to each other: one typed message per operation.

Each message is a frozen dataclass with its own `encode` (a JSON object) and `decode` (that object back, every
field checked for its type). JSON has lists where Python had tuples, and numbers where a float was meant, so a
value decoded without its type would arrive in another shape than it left (a lane's waiting kinds once arrived
as lists, which the label settle could not hash). `decode_message` refuses anything not of a known shape with
`BadMessage`, naming the field.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar

from bot.core.config import Settings
from bot.delivery import lanes
from bot.delivery.journal import Queued


class BadMessage(ValueError):
    """A message that is not one of the shapes below; the text names the operation and the field."""


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _shaped(value: Any, hint: Any, where: str) -> Any:
    """`value` as the type `hint` declares it (a list where a tuple is declared becomes that tuple); BadMessage
    when it is not of that type. Handles the field types these messages use, nothing more."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        for option in typing.get_args(hint):
            try:
                return _shaped(value, option, where)
            except BadMessage:
                continue
        raise BadMessage(f"{where}: {value!r} is none of {hint}")
    if hint is type(None):
        if value is None:
            return None
        raise BadMessage(f"{where}: expected null, got {type(value).__name__}")
    if hint is Any:
        return value
    if origin is tuple:
        args = typing.get_args(hint)
        if not isinstance(value, (list, tuple)):
            raise BadMessage(f"{where}: expected a list, got {type(value).__name__}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_shaped(item, args[0], f"{where}[{i}]") for i, item in enumerate(value))
        if len(value) != len(args):
            raise BadMessage(f"{where}: expected {len(args)} items, got {len(value)}")
        return tuple(_shaped(item, arg, f"{where}[{i}]") for i, (item, arg) in enumerate(zip(value, args)))
    if origin is dict or hint is dict:
        if not isinstance(value, dict):
            raise BadMessage(f"{where}: expected an object, got {type(value).__name__}")
        return value
    if hint is bool:
        if type(value) is not bool:
            raise BadMessage(f"{where}: expected a boolean, got {type(value).__name__}")
        return value
    if hint is int:
        if type(value) is not int:
            raise BadMessage(f"{where}: expected an integer, got {type(value).__name__}")
        return value
    if hint is float:
        if type(value) not in (int, float):
            raise BadMessage(f"{where}: expected a number, got {type(value).__name__}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise BadMessage(f"{where}: expected a string, got {type(value).__name__}")
        return value
    raise TypeError(f"{where}: no decoding for the type {hint}")  # a message declared a type not handled here


def decode_fields(cls: type, values: Any, where: str, *, known_only: bool = False) -> Any:
    """An instance of the dataclass `cls` from a JSON object, each field as its annotation says. A field this
    side does not know is ignored when `known_only` (settings from a newer intake), refused otherwise."""
    if not isinstance(values, dict):
        raise BadMessage(f"{where}: expected an object, got {type(values).__name__}")
    hints = _hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = set(values) - set(fields)
    if unknown and not known_only:
        raise BadMessage(f"{where}: unknown fields {sorted(unknown)}")
    missing = [
        name
        for name, f in fields.items()
        if name not in values and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise BadMessage(f"{where}: missing fields {missing}")
    return cls(**{name: _shaped(values[name], hints[name], f"{where}.{name}") for name in fields if name in values})


def encode_fields(instance: Any) -> dict[str, Any]:
    """A dataclass as a JSON object (tuples become lists; `decode_fields` makes them tuples again)."""
    return dataclasses.asdict(instance)


# -- the messages ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Message:
    op: ClassVar[str]

    def encode(self) -> dict[str, Any]:
        return {"op": self.op, **encode_fields(self)}

    @classmethod
    def decode(cls, values: dict[str, Any]) -> Message:
        body = {k: v for k, v in values.items() if k != "op"}
        return decode_fields(cls, body, cls.op)


@dataclass(frozen=True)
class Start(Message):
    """Intake → workers, first: the settings to run with."""

    op: ClassVar[str] = "settings"
    settings: Settings

    def encode(self) -> dict[str, Any]:
        return {"op": self.op, "settings": encode_fields(self.settings)}

    @classmethod
    def decode(cls, values: dict[str, Any]) -> Start:
        return cls(decode_fields(Settings, values.get("settings"), "settings.settings", known_only=True))


@dataclass(frozen=True)
class Ready(Message):
    """Workers → intake: the backlog is resumed, the workers run."""

    op: ClassVar[str] = "ready"
    resumed: int = 0


@dataclass(frozen=True)
class Submit(Message):
    """Intake → workers: a delivery is in the journal; run it in its lane."""

    op: ClassVar[str] = "submit"
    queued: Queued

    def encode(self) -> dict[str, Any]:
        return {"op": self.op, "queued": encode_fields(self.queued)}

    @classmethod
    def decode(cls, values: dict[str, Any]) -> Submit:
        queued = decode_fields(Queued, values.get("queued"), "submit.queued")
        if queued.kind is not None:  # the one shared tuple per (event, action), as the intake's own side holds
            queued = dataclasses.replace(queued, kind=lanes.kind(*queued.kind))
        return cls(queued)


@dataclass(frozen=True)
class Ask(Message):
    """Intake → workers: a question (bot/app/worker_process.py ASKS), answered under the same id."""

    op: ClassVar[str] = "ask"
    id: int
    what: str
    timeout: float | None = None


@dataclass(frozen=True)
class Answer(Message):
    """Workers → intake: the answer to the ask with this id, or the error that stopped it."""

    op: ClassVar[str] = "answer"
    id: int
    value: Any = None
    error: str | None = None


@dataclass(frozen=True)
class Stop(Message):
    """Intake → workers: finish what is under way (at most `timeout` seconds) and end."""

    op: ClassVar[str] = "stop"
    timeout: float | None = None


MESSAGES: dict[str, type[Message]] = {cls.op: cls for cls in (Start, Ready, Submit, Ask, Answer, Stop)}


def decode_message(values: Any) -> Message:
    """The message a JSON object is, of its declared `op`; BadMessage for any other shape."""
    if not isinstance(values, dict) or not isinstance(values.get("op"), str):
        raise BadMessage("expected an object with an `op`")
    cls = MESSAGES.get(values["op"])
    if cls is None:
        raise BadMessage(f"unknown op {values['op']!r}")
    return cls.decode(values)
