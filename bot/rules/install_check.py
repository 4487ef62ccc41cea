"""What `sweepbot doctor` compares, as plain data: the App's permissions and events against the manifest's, a
workflow's dispatch inputs against the inputs the bot sends, the webhook URL GitHub has on record against this
server's, and which of GitHub's recent webhook deliveries failed for good."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import yaml

# A permission's levels, lowest first: a grant covers what it equals or exceeds.
LEVELS = {"none": 0, "read": 1, "write": 2, "admin": 3}
WORKFLOW_MAX_BYTES = 512 * 1024  # the largest workflow file read: GitHub refuses bigger ones too
# The gate's inputs by the values the bot sends: "true"/"false", a PR number, or any text. Which declared types
# take each kind of value (a `choice` or `environment` input takes only its options).
FLAG_INPUTS = frozenset({"canary", "fail-fast", "all-evals", "evals-only", "agentx-fast"})
NUMBER_INPUTS = frozenset({"pr-number"})
ACCEPTING = {"text": frozenset({"string"}), "flag": frozenset({"string", "boolean"})}
ACCEPTING["number"] = frozenset({"string", "number"})


def value_kind(name: str) -> str:
    """What the bot sends in the input `name`: "flag", "number" or "text"."""
    if name in FLAG_INPUTS:
        return "flag"
    return "number" if name in NUMBER_INPUTS else "text"


def missing_permissions(wanted: Mapping[str, str], granted: Mapping[str, str]) -> dict[str, str]:
    """Each permission of `wanted` that `granted` does not cover -> the level granted ("none" when absent)."""
    return {
        name: granted.get(name, "none")
        for name, level in sorted(wanted.items())
        if LEVELS.get(granted.get(name, "none"), 0) < LEVELS.get(level, 0)
    }


def missing_events(wanted: Iterable[str], granted: Iterable[str]) -> list[str]:
    have = set(granted)
    return [event for event in wanted if event not in have]


@dataclass(frozen=True)
class InputProblem:
    """One reason GitHub would refuse the bot's dispatch of a workflow. `code`: too_big, not_yaml (detail: the
    parser's words), no_inputs (the workflow has no `on.workflow_dispatch`), undeclared (an input the bot sends
    is not declared), not_sent (a required input the bot does not send), wrong_type (detail: the declared type)."""

    code: str
    name: str | None = None
    detail: str | None = None


def dispatch_inputs(text: str) -> dict[str, dict[str, Any]] | InputProblem:
    """`on.workflow_dispatch.inputs` of a workflow file (name -> spec), or why it cannot be read."""
    if len(text.encode()) > WORKFLOW_MAX_BYTES:
        return InputProblem("too_big", detail=str(WORKFLOW_MAX_BYTES))
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark else ""
        return InputProblem("not_yaml", detail=f"{where}{getattr(exc, 'problem', None) or exc}")
    if not isinstance(document, dict):
        return InputProblem("not_yaml", detail="not a mapping")
    on = document.get("on", document.get(True))  # YAML 1.1 reads a bare `on` as true
    if on == "workflow_dispatch" or (isinstance(on, list) and "workflow_dispatch" in on):
        return {}
    dispatch = on.get("workflow_dispatch", False) if isinstance(on, dict) else False
    if dispatch is False:
        return InputProblem("no_inputs")
    inputs = (dispatch or {}).get("inputs") if isinstance(dispatch, dict) or dispatch is None else None
    if not isinstance(inputs, dict):
        return {}
    return {str(name): spec if isinstance(spec, dict) else {} for name, spec in inputs.items()}


def input_problems(text: str, sent: Sequence[str]) -> list[InputProblem]:
    """Why GitHub would refuse a dispatch of the workflow in `text` with the inputs `sent`: an input it does not
    declare, a required one not sent, a declared type that cannot take the value the bot sends."""
    declared = dispatch_inputs(text)
    if isinstance(declared, InputProblem):
        return [declared]
    problems = [InputProblem("undeclared", name) for name in sent if name not in declared]
    for name in sent:
        kind = str(declared.get(name, {}).get("type", "string"))
        if name in declared and kind not in ACCEPTING[value_kind(name)]:
            problems.append(InputProblem("wrong_type", name, kind))
    problems += [
        InputProblem("not_sent", name)
        for name, spec in declared.items()
        if spec.get("required") is True and "default" not in spec and name not in sent
    ]
    return problems


def expected_webhook(url: str) -> str:
    """The webhook URL of a server given by its address: `https://bot.example.com` means its /webhook."""
    parts = urlsplit(url.strip())
    path = parts.path.rstrip("/") or "/webhook"
    return f"{parts.scheme.lower()}://{(parts.netloc or '').lower()}{path}"


def same_webhook(recorded: str | None, expected: str) -> bool:
    """Whether GitHub's webhook URL on record is this server's (`expected`: its webhook URL or its address)."""
    if not recorded:
        return False
    return expected_webhook(recorded) == expected_webhook(expected)


def failed_deliveries(deliveries: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The deliveries of GitHub's webhook log (newest first) that failed and were not delivered since: a status
    code outside 2xx (0: no answer in time), with no later success of the same guid. Newest first, one per guid."""
    succeeded: set[str] = set()
    failed: dict[str, Mapping[str, Any]] = {}
    for delivery in deliveries:
        guid = str(delivery.get("guid"))
        code = delivery.get("status_code")
        if isinstance(code, int) and 200 <= code < 300:
            succeeded.add(guid)
        elif guid not in succeeded and guid not in failed:
            failed[guid] = delivery
    return list(failed.values())
