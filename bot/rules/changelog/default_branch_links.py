"""Which PR should carry each non-canonical `pr-link` found on the default branch (docs/spec.md, "The
performance changelog").

A line the push brought (past what the file held before it) belongs to the push's PR; a line that was already
there keeps the PR an earlier push named (remembered in the bot's issue), else the PR its own link names (the
canonical link with something after it, such as `/changes`), else it is unknown."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bot.rules.changelog.errors import ChangelogError

LINK_CODE = "default-branch-link"
PUSH_COMMITS_CAP = 20  # a push payload lists at most this many commits
PUSH_FILES_CAP = 3000  # and at most this many files in all


@dataclass(frozen=True)
class BadLink:
    """A `pr-link` on `line` whose value is not the canonical prefix + digits, and the PR that should carry it."""

    line: int
    value: str
    pr_number: int | None
    expected: str | None  # the canonical link of that PR, when it is known


def push_may_change(commits: Any, path: str) -> bool:
    """Whether a push payload's commits may change `path`: it is listed as added or modified, or the payload is
    capped (20 commits, 3000 files) and cannot tell. A removal is no change to check."""
    commits = commits if isinstance(commits, list) else []
    if len(commits) >= PUSH_COMMITS_CAP:
        return True
    files = 0
    for commit in commits:
        for key in ("added", "modified", "removed"):
            names = commit.get(key) if isinstance(commit, dict) else None
            names = names if isinstance(names, list) else []
            files += len(names)
            if key != "removed" and path in names:
                return True
    return files >= PUSH_FILES_CAP


def first_new_line(before: bytes | None, after: bytes) -> int:
    """The first line of `after` that `before` did not hold (as a byte-exact prefix): line 1 without `before`,
    one past its last line when `after` only extends it, else the line where the two first differ."""
    if not before:
        return 1
    if after.startswith(before):
        same = len(before)
    else:  # the longest common prefix, by halving (each compare is one C-level slice comparison)
        low, high = 0, min(len(before), len(after))
        while low < high:
            middle = (low + high + 1) // 2
            if after[:middle] == before[:middle]:
                low = middle
            else:
                high = middle - 1
        same = low
    return after.count(b"\n", 0, same) + 1


def pushed_pr(pulls: Iterable[Mapping[str, Any]], sha: str) -> int | None:
    """The PR a pushed commit came from (`GET /commits/{sha}/pulls`): the merged one whose merge commit it is,
    else a merged one, else none."""
    merged = [p for p in pulls if p.get("merged_at") or p.get("merged")]
    for pull in merged:
        if pull.get("merge_commit_sha") == sha:
            return int(pull["number"])
    return int(merged[0]["number"]) if merged else None


def bad_links(
    errors: Iterable[ChangelogError],
    *,
    first_new: int,
    pr_number: int | None,
    remembered: Mapping[tuple[int, str], int],
    canonical_prefix: str,
) -> list[BadLink]:
    """Each `default-branch-link` error as a BadLink: the push's PR for a line from `first_new` on, else the PR
    `remembered` for that (line, value), else the PR the value's own canonical link names, else None."""
    found = []
    named = re.compile(re.escape(canonical_prefix) + r"([1-9][0-9]{0,8})(?![0-9])")
    for error in errors:
        if error.code != LINK_CODE:
            continue
        value = str(error.params.get("value"))
        number = pr_number if error.line >= first_new else remembered.get((error.line, value))
        if number is None and (match := named.match(value)):
            number = int(match.group(1))  # `<prefix>2305/changes`: PR 2305's link with a page after it
        found.append(BadLink(error.line, value, number, f"{canonical_prefix}{number}" if number is not None else None))
    return found


def remembered_links(record: Any) -> dict[tuple[int, str], int]:
    """The (line, value) -> PR pairs kept in the bot's issue (`links_record`); bad data is ignored."""
    found: dict[tuple[int, str], int] = {}
    for item in (record or {}).get("links", []) if isinstance(record, dict) else []:
        if (
            isinstance(item, list)
            and len(item) == 3
            and isinstance(item[0], int)
            and isinstance(item[1], str)
            and isinstance(item[2], int)
            and not isinstance(item[2], bool)
        ):
            found[(item[0], item[1])] = item[2]
    return found


def links_record(links: Iterable[BadLink]) -> dict[str, Any]:
    """What the issue keeps for the next push: the PR of each bad link that has one."""
    return {"links": [[link.line, link.value, link.pr_number] for link in links if link.pr_number is not None]}
