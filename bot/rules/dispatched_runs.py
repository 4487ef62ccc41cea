"""Which workflow runs are the bot's own sweeps: the one definition the record, the status, pins, sign-offs and
cancels all use.

A run counts only when it is a `workflow_dispatch` run of one of the sweep workflows, on this repository,
started by the App's own bot account, and its dispatch id is one the bot recorded for the PR when it
dispatched it. Everything else about a run is data a fork can set: the name of a fork's own `pull_request`
run comes from the fork's copy of the workflow (`run-name:`), and its branch and `pull_requests` from the fork
too. So a run is matched to its PR by the recorded dispatch id, never by a number read from its name.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

from bot.rules.sweep_record import RunRecord, SweepRecord

# The sweep's run name carries its dispatch id `sw-<PR>-<digest>` (GitHub lists no PR for a dispatched run).
DISPATCH_ID = re.compile(r"\bsw-(\d{1,10})-[0-9a-f]{12}\b")
WORKFLOWS_DIR = ".github/workflows/"
DISPATCH_EVENT = "workflow_dispatch"


def dispatch_id_of(run: Mapping[str, Any]) -> str | None:
    """The dispatch id in the run's display title (its `run-name:`), else in its name."""
    for title in (run.get("display_title"), run.get("name")):
        found = DISPATCH_ID.search(title) if isinstance(title, str) else None
        if found:
            return found.group(0)
    return None


def workflow_file(run: Mapping[str, Any]) -> str | None:
    """`run-sweep.yml` for a run whose `path` is `.github/workflows/run-sweep.yml` (GitHub may append `@ref`)."""
    path = run.get("path")
    if not isinstance(path, str) or not path.startswith(WORKFLOWS_DIR):
        return None
    name = path[len(WORKFLOWS_DIR) :].split("@", 1)[0]
    return name if name and "/" not in name else None


def _login(holder: Any) -> str:
    return ((holder or {}).get("login") or "") if isinstance(holder, Mapping) else ""


def _full_name(holder: Any) -> str:
    return ((holder or {}).get("full_name") or "") if isinstance(holder, Mapping) else ""


def not_the_bots(run: Mapping[str, Any], *, bot_login: str, repository: str, workflows: Collection[str]) -> str | None:
    """Why `run` is not one the bot dispatched (a reason for the log), or None when it is, as far as the run
    itself can say: which PR's dispatch it is, the record decides (`recorded`).

    `actor` is who started the run; `triggering_actor` changes when a person re-runs it, which someone with
    write permission may do to a bot's run: the re-run is still the bot's sweep with the bot's inputs.
    """
    if run.get("event") != DISPATCH_EVENT:
        return f"a {run.get('event')!r} run, not a dispatch"
    if workflow_file(run) not in set(workflows):
        return f"workflow {run.get('path')!r} is not a sweep workflow"
    if _login(run.get("actor")).casefold() != bot_login.casefold():
        return f"started by {_login(run.get('actor'))!r}, not by the bot"
    for key in ("repository", "head_repository"):
        if _full_name(run.get(key)).casefold() != repository.casefold():
            return f"{key} is {_full_name(run.get(key))!r}, not {repository}"
    return None


def recorded(run: Mapping[str, Any], record: SweepRecord) -> RunRecord | None:
    """The record's entry for `run`: the dispatch id in its name is one the bot recorded for this PR, with this
    run id (or with none yet: a dispatch GitHub answered without run details)."""
    dispatch_id, run_id = dispatch_id_of(run), run.get("id")
    if dispatch_id is None or not isinstance(run_id, int) or isinstance(run_id, bool):
        return None
    entry = record.by_dispatch(dispatch_id)
    if entry is None or entry.run_id not in (0, run_id):
        return None
    return entry


def bot_run(
    run: Mapping[str, Any], record: SweepRecord, *, bot_login: str, repository: str, workflows: Collection[str]
) -> RunRecord | None:
    """The record's entry for `run` when it is a sweep the bot dispatched for this PR, else None."""
    if not_the_bots(run, bot_login=bot_login, repository=repository, workflows=workflows) is not None:
        return None
    return recorded(run, record)
