"""What a pull request says, each fact read one way: whether it comes from a fork, which of its labels are the
policy's sweep labels (docs/spec.md, "Sweep labels"), which label event put a label on it, and whether a check run
on it is this App's.

GitHub treats `AMD` and `amd` as one label and `Acme/InferenceX` and `acme/inferencex` as one repository, so
every comparison here casefolds; the config check, the gate, the pins and the autolabels all ask here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from bot.rules.policy import Policy


def label_key(name: str) -> str:
    """The form in which label names are compared: GitHub ignores their case."""
    return name.casefold()


def primary_names(policy: Policy) -> frozenset[str]:
    """The policy's primary sweep labels (`labels.primary`), compared as label_key."""
    return frozenset(label_key(p.name) for p in policy.labels.primary)


def modifier_names(policy: Policy) -> frozenset[str]:
    """The policy's modifier labels (`labels.modifiers`), compared as label_key."""
    return frozenset(label_key(name) for name in policy.labels.modifiers.names().values())


def sweep_label_names(policy: Policy) -> tuple[frozenset[str], frozenset[str]]:
    """(primary names, modifier names), compared as label_key."""
    return primary_names(policy), modifier_names(policy)


def is_primary(name: str, policy: Policy) -> bool:
    return label_key(name) in primary_names(policy)


def carries_primary(names: Iterable[str], policy: Policy) -> bool:
    """Whether one of `names` (the labels on a PR) is a primary sweep label."""
    primaries = primary_names(policy)
    return any(label_key(name) in primaries for name in names)


def label_names(pull: Mapping[str, Any]) -> list[str]:
    """The names of the labels on a PR as its payload (or GitHub's answer) lists them."""
    return [label["name"] for label in pull.get("labels") or []]


def is_fork(pull: Mapping[str, Any], repo: str) -> bool:
    """Whether the PR's head is in another repository than `repo` (owner/name). A head repository that was
    deleted (GitHub sends None) is still not this one."""
    head_repo = (pull.get("head") or {}).get("repo") or {}
    return (head_repo.get("full_name") or "").casefold() != repo.casefold()


def last_applied(events: Iterable[Mapping[str, Any]], label: str) -> Mapping[str, Any] | None:
    """The `labeled` event that put `label` on as it is now (`events` oldest first); None when it is off."""
    found = None
    wanted = label_key(label)
    for event in events:
        if label_key((event.get("label") or {}).get("name") or "") == wanted:
            found = event if event.get("event") == "labeled" else None
    return found


def own_check_run(check: Any, name: str, bot_login: str) -> bool:
    """Whether a `check_run` payload's run is this App's check run `name` (its app's slug is the bot's login
    without `[bot]`): a re-run asked of another app's check, or of another check, is not this one's."""
    if not isinstance(check, Mapping) or check.get("name") != name:
        return False
    slug = (check.get("app") or {}).get("slug") if isinstance(check.get("app"), Mapping) else None
    return isinstance(slug, str) and bool(slug) and f"{slug}[bot]".casefold() == bot_login.casefold()


def label_of(event: Mapping[str, Any]) -> str:
    """The casefolded name of the label a `labeled`/`unlabeled` event is about ("" when it names none)."""
    return label_key((event.get("label") or {}).get("name") or "")


def actor_of(event: Mapping[str, Any]) -> str:
    return (event.get("actor") or {}).get("login") or ""


def label_generation(
    events: Iterable[Mapping[str, Any]], sweep_labels: set[str] | frozenset[str], trusted: set[str]
) -> int | None:
    """The id of the newest event that added or removed a sweep label, by someone in `trusted` (casefolded
    logins): a labeller whose labels do not count, or the bot taking their label off, changes nothing."""
    ids = [
        e["id"]
        for e in events
        if isinstance(e.get("id"), int)
        and e.get("event") in ("labeled", "unlabeled")
        and label_of(e) in sweep_labels
        and actor_of(e).casefold() in trusted
    ]
    return max(ids) if ids else None


def trusted_labels(
    events: Iterable[Mapping[str, Any]], sweep_labels: set[str] | frozenset[str], trusted: set[str]
) -> dict[str, Mapping[str, Any]]:
    """The sweep labels as the label events of `trusted` people (casefolded logins) left them, oldest event
    first: casefolded name -> the `labeled` event that applied it. A label added or taken off by anyone else
    changes nothing (a triager removing a modifier does not restart a sweep, nor adding one start it)."""
    held: dict[str, Mapping[str, Any]] = {}
    for e in events:
        name = label_of(e)
        if name not in sweep_labels or actor_of(e).casefold() not in trusted:
            continue
        if e.get("event") == "labeled":
            held[name] = e
        elif e.get("event") == "unlabeled":
            held.pop(name, None)
    return held


def last_removed(events: Iterable[Mapping[str, Any]], label: str) -> Mapping[str, Any] | None:
    """The newest `unlabeled` event of `label` (casefolded), or None."""
    found = None
    for e in events:
        if e.get("event") == "unlabeled" and label_of(e) == label_key(label):
            found = e
    return found
