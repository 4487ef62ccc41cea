"""The messages between the intake and the workers' process: each arrives in the shape it left, or is refused."""

from __future__ import annotations

import json

import pytest

from bot.app.worker_messages import Answer, Ask, BadMessage, Ready, Start, Stop, Submit, decode_message
from bot.core.config import Settings
from bot.delivery import lanes
from bot.delivery.journal import Queued


def over_the_wire(message):
    """What the other process decodes from one JSON line."""
    return decode_message(json.loads(json.dumps(message.encode())))


@pytest.mark.parametrize(
    "message",
    [
        Start(Settings(app_id="7", private_key="pem", webhook_secrets=("a", "b"), workers=3, settle_seconds=0.5)),
        Ready(resumed=4),
        Submit(Queued(12, "acme/x#3", None, ("pull_request", "labeled"))),
        Submit(Queued(13, "acme/x#3", 1_700_000_000.5, ("check_run", None))),
        Submit(Queued(14, "sha:" + "a" * 40)),
        Ask(3, "health", 2.0),
        Ask(4, "idle", None),
        Answer(3, value={"ok": True, "counts": [1, 2]}),
        Answer(4, error="TimeoutError: "),
        Stop(20.0),
        Stop(None),
    ],
    ids=lambda m: type(m).__name__,
)
def test_every_message_arrives_as_it_left(message):
    assert over_the_wire(message) == message


def test_a_lanes_waiting_kinds_arrive_as_tuples_the_settle_can_look_up():
    """Regression: a label burst never dispatched in the workers' process (`TypeError: unhashable type: 'list'`
    in `Context.superseded`): the submitted delivery's (event, action) arrived as a JSON list."""
    queued = over_the_wire(Submit(Queued(1, "acme/x#1", None, lanes.kind("pull_request", "labeled")))).queued
    assert isinstance(queued.kind, tuple)
    assert queued.kind in lanes.SETTLING
    assert queued.kind is lanes.kind("pull_request", "labeled"), "one shared tuple per kind, as the intake holds"


def test_a_float_setting_sent_as_a_whole_number_is_a_float_again():
    start = over_the_wire(Start(Settings(settle_seconds=3)))
    assert type(start.settings.settle_seconds) is float


@pytest.mark.parametrize(
    "line, names",
    [
        ({}, "op"),
        ({"op": "dance"}, "dance"),
        ({"op": "submit", "queued": {"seq": "12", "lane": "acme/x#1"}}, "submit.queued.seq"),
        ({"op": "submit", "queued": {"seq": 12}}, "lane"),
        ({"op": "submit", "queued": {"seq": 12, "lane": "l", "kind": ["pull_request"]}}, "submit.queued.kind"),
        ({"op": "submit", "queued": {"seq": 12, "lane": "l", "extra": 1}}, "extra"),
        ({"op": "ask", "id": True, "what": "health"}, "ask.id"),
        ({"op": "ready", "resumed": 1.5}, "ready.resumed"),
        ({"op": "settings", "settings": {"workers": "8"}}, "settings.settings.workers"),
        ({"op": "settings", "settings": {"webhook_secrets": "a,b"}}, "settings.settings.webhook_secrets"),
    ],
    ids=lambda v: json.dumps(v)[:40] if isinstance(v, dict) else v,
)
def test_a_message_of_another_shape_is_refused_naming_the_field(line, names):
    with pytest.raises(BadMessage, match=names.replace(".", r"\.")):
        decode_message(line)
