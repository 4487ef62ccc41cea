"""The workers' process as the tests start it for the production layout (conftest's `layout` "apart").

    python tests/apart_worker.py CONFIG_JSON FD PID

CONFIG_JSON is a JSON object: `leave_out`, the features the harness's router leaves out (handlers/registry.py
`router_without`); `patches`, module attributes the test set in its own process with monkeypatch, which this
process must see too: `{"handlers.sweep_gate.MERGE_SHA_WAIT": 0.0}` sets a value, `{"...utcnow": {"now": ISO}}`
a function returning that time. Then it is `bot.app.worker_process` with FD and PID.
"""

from __future__ import annotations

import datetime as dt
import importlib
import json
import sys
from typing import Any


def patched_value(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"now"}:
        moment = dt.datetime.fromisoformat(value["now"])
        return lambda: moment
    return value


def apply(config: dict[str, Any]) -> None:
    for target, value in config.get("patches", {}).items():
        module_name, _, attribute = target.rpartition(".")
        module = importlib.import_module(module_name)
        if not hasattr(module, attribute):
            raise SystemExit(f"apart_worker: {module_name} has no {attribute}")
        setattr(module, attribute, patched_value(value))
    leave_out = config.get("leave_out")
    if leave_out is not None:
        from bot.app import runtime
        from handlers.registry import router_without

        chosen = router_without(*leave_out)
        runtime.default_router = lambda: chosen


def main(argv: list[str]) -> int:
    apply(json.loads(argv[0]))
    from bot.app import worker_process

    return worker_process.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
