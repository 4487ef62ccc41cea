"""The stale-branch guard (docs/spec.md, "Stale branches"): what a PR built on an old base would undo, and the
reviewer's checks a machine can decide, as plain functions over what GitHub says.

- A submodule pointer the PR moves back (`behind`) or aside (`diverged`) from the base's: refused. Moved forward
  (`ahead`): information. The submodule's repository not readable: "could not verify", a warning unless the
  policy refuses it.
- A changed file whose content at the PR's head is what the base had before a later base commit replaced it: a
  warning, or a refusal where the policy lists the path.
- A changed master-config key that no appended changelog entry's `config-keys` covers: refused, naming it; an
  entry naming a key the PR did not change: information.
- A push after the pin that changes a file a sweep depends on: the pin is stale (`pin_is_stale`).

The caller reads GitHub (bounded: see HISTORY_DEPTH_MAX, FILES_CHECKED, SUBMODULES_CHECKED) and passes plain data
in; nothing here reads or writes anything.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import Any

import pathspec

from bot.rules.master_config import MasterConfigs, changed_keys, covered, keys_matching
from bot.rules.policy import Policy

# What a finding asks of the gate.
REFUSE, WARN, INFO = "refuse", "warn", "info"

# The kinds of finding, each with its sentence in templates/_stale_branch.*.j2.
SUBMODULE_BEHIND = "submodule_behind"  # the PR's pointer is an ancestor of the base's: a rollback
SUBMODULE_DIVERGED = "submodule_diverged"
SUBMODULE_AHEAD = "submodule_ahead"
SUBMODULE_UNVERIFIED = "submodule_unverified"  # the submodule's repository could not be read, or is not named
REVERTED_FILE = "reverted_file"
UNCOVERED_KEY = "uncovered_key"
UNCHANGED_KEY = "unchanged_key"
KINDS = (
    SUBMODULE_BEHIND,
    SUBMODULE_DIVERGED,
    SUBMODULE_AHEAD,
    SUBMODULE_UNVERIFIED,
    REVERTED_FILE,
    UNCOVERED_KEY,
    UNCHANGED_KEY,
)

# Bounds on what one gate evaluation reads (docs/spec.md): submodules compared, files whose base history is read,
# commits of history read per file, and findings shown.
SUBMODULES_CHECKED = 4
FILES_CHECKED = 4
HISTORY_DEPTH_MAX = 10
FINDINGS_SHOWN = 20

# A gitlink's patch in GitHub's PR file listing; anything longer is not one.
_PATCH_MAX = 400
_SUBPROJECT = re.compile(r"Subproject commit ([0-9a-f]{40})")
_GITMODULES_MAX = 64 * 1024
_SECTION = re.compile(r'\[submodule\s+"([^"\n]{1,300})"\]')
_SETTING = re.compile(r"(path|url)\s*=\s*(\S{1,500})")
_GITHUB_URL = re.compile(
    r"(?:https://github\.com/|git@github\.com:|ssh://git@github\.com/)([A-Za-z0-9_.-]{1,100})/([A-Za-z0-9_.-]{1,100})"
)


@dataclass(frozen=True)
class Finding:
    kind: str
    severity: str  # REFUSE, WARN or INFO
    path: str
    params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def plain(self) -> dict[str, Any]:
        """As the templates take it: {kind, severity, path, params}, tuples as lists."""
        params = {k: list(v) if isinstance(v, tuple) else v for k, v in self.params.items()}
        return {"kind": self.kind, "severity": self.severity, "path": self.path, "params": params}


def _finding(kind: str, severity: str, path: str, **params: Any) -> Finding:
    return Finding(kind, severity, path, MappingProxyType(params))


# -- submodules ------------------------------------------------------------------------------------


def submodule_move(patch: str | None) -> tuple[str, str] | None:
    """(old, new) commit of a gitlink's patch as GitHub lists it (`-Subproject commit OLD` / `+Subproject commit
    NEW`), or None when the patch is not one (a file's, none, or too long to be one)."""
    if not patch or len(patch) > _PATCH_MAX:
        return None
    old = new = None
    for line in patch.splitlines():
        found = _SUBPROJECT.fullmatch(line[1:]) if line[:1] in "-+" else None
        if found and line[0] == "-":
            old = found.group(1)
        elif found:
            new = found.group(1)
    return (old, new) if old and new else None


def gitmodules_repos(text: str | None, host_repo: str) -> dict[str, str | None]:
    """Submodule path -> the GitHub repository (`owner/name`) `.gitmodules` names for it; None where its url is
    not a GitHub repository. A relative url (`../name.git`) is resolved against `host_repo`."""
    if not text:
        return {}
    found: dict[str, str | None] = {}
    path = url = None

    def close() -> None:
        if path:
            found[path] = github_repo(url, host_repo) if url else None

    for line in text[:_GITMODULES_MAX].splitlines():
        line = line.strip()
        if _SECTION.fullmatch(line):
            close()
            path = url = None
            continue
        setting = _SETTING.fullmatch(line)
        if setting and setting.group(1) == "path":
            path = setting.group(2).strip("/")
        elif setting:
            url = setting.group(2)
    close()
    return found


def github_repo(url: str, host_repo: str) -> str | None:
    """`owner/name` of a submodule url on github.com (https, ssh, or relative to `host_repo`), else None."""
    if url.startswith("../"):
        owner = host_repo.split("/")[0]
        name = url[3:]
        if "/" in name:
            owner, _, name = name.rpartition("/")
            if "/" in owner or owner in ("", ".", ".."):
                return None
        return f"{owner}/{name.removesuffix('.git')}" if name.removesuffix(".git") else None
    found = _GITHUB_URL.match(url)
    if not found:
        return None
    return f"{found.group(1)}/{found.group(2).removesuffix('.git')}"


@dataclass(frozen=True)
class Compared:
    """GitHub's comparison of the base's pointer (base) with the PR's (head) in the submodule's repository."""

    status: str  # ahead, behind, diverged, identical
    ahead_by: int = 0
    behind_by: int = 0


@dataclass(frozen=True)
class LastMove:
    """The base commit that last moved the pointer (GitHub's history of the path on the base), and its PR."""

    sha: str
    pr: int | None = None


def submodule_finding(
    path: str,
    base: str,
    head: str,
    repo: str | None,
    compared: Compared | None,
    policy: Policy,
    last_move: LastMove | None = None,
) -> Finding | None:
    """What the gate says of a submodule the PR moves from the base's pointer `base` to `head`: None when it does
    not move it or the guard is off; `compared` None when the submodule's repository could not be read."""
    guard = policy.stale_branch
    if base == head or guard.submodules == "off":
        return None
    facts: dict[str, Any] = {
        "base": base,
        "head": head,
        "repo": repo,
        "moved_by": last_move.sha if last_move else None,
        "moved_in": last_move.pr if last_move else None,
    }
    if compared is None or repo is None:
        severity = REFUSE if guard.unverified_submodules == "refuse" else WARN
        return _finding(SUBMODULE_UNVERIFIED, severity, path, **facts)
    if compared.status == "identical":
        return None
    if compared.status == "ahead":
        return _finding(SUBMODULE_AHEAD, INFO, path, **facts, ahead_by=compared.ahead_by)
    severity = REFUSE if guard.submodules == "refuse" else WARN
    if compared.status == "behind":
        return _finding(SUBMODULE_BEHIND, severity, path, **facts, behind_by=compared.behind_by)
    return _finding(
        SUBMODULE_DIVERGED, severity, path, **facts, ahead_by=compared.ahead_by, behind_by=compared.behind_by
    )


# -- files taken back --------------------------------------------------------------------------------


def replaced_version(head_blob: str, history: Sequence[tuple[str, str | None]]) -> str | None:
    """The base commit that replaced the content the PR's head has, or None.

    `history` is the base's history of the path, newest first: (commit, the file's blob SHA at that commit, None
    where it was deleted). The head takes the file back when its blob is the one of an older commit of the
    history: the commit just newer than that one replaced it. The newest commit's blob is the base's own content,
    which is no revert."""
    for newer, (_, blob) in zip(history, history[1:], strict=False):
        if blob is not None and blob == head_blob and history[0][1] != head_blob:
            return newer[0]
    return None


def files_to_check(files: Iterable[str], policy: Policy) -> list[str]:
    """The changed files whose base history is read, at most FILES_CHECKED: the policy's listed paths first (a
    revert there refuses), then the benchmark paths but the changelog; none when the guard is off."""
    guard = policy.stale_branch
    if guard.reverted_files == "off":
        return []
    files = [f for f in files if f != policy.paths.changelog]  # append-only, and judged by its own check
    listed = [f for f in files if _matches(f, guard.revert_refused)]
    bench = [f for f in files if f not in listed and _matches(f, policy.paths.benchmark)]
    return (listed + bench)[:FILES_CHECKED]


def reverted_finding(
    path: str, replaced_by: str | None, policy: Policy, replaced_in: int | None = None
) -> Finding | None:
    if replaced_by is None or policy.stale_branch.reverted_files == "off":
        return None
    guard = policy.stale_branch
    severity = REFUSE if guard.reverted_files == "refuse" or _matches(path, guard.revert_refused) else WARN
    return _finding(REVERTED_FILE, severity, path, replaced_by=replaced_by, replaced_in=replaced_in)


# -- the changelog covers the change --------------------------------------------------------------------


def key_lines(text: str | None) -> dict[str, int]:
    """The line of each top-level key of a YAML mapping (`key:` at the start of a line), counted from 1: where
    the check run marks a config key. Unquoted plain keys only; a key not found gets no line."""
    found: dict[str, int] = {}
    for number, line in enumerate((text or "").splitlines(), 1):
        if line[:1].isalnum():
            key, colon, _ = line.partition(":")
            if colon and key == key.strip():
                found.setdefault(key, number)
    return found


@dataclass(frozen=True)
class ChangedKey:
    """A master-config key whose block the PR adds or changes: its file, and its line there at the head."""

    key: str
    path: str
    line: int | None = None


def changed_config_keys(
    base: MasterConfigs, head: MasterConfigs, lines: Mapping[str, int] | None = None
) -> tuple[ChangedKey, ...]:
    """The keys the head adds or changes (a removed key has no sweep), in the head's order; `lines`: each key's
    line in its file at the head (`key_lines`)."""
    return tuple(
        ChangedKey(key, head.sources.get(key, ""), (lines or {}).get(key))
        for key in changed_keys(base, head)
        if key in head.blocks
    )


def coverage_findings(
    changed: Sequence[ChangedKey], entries: Iterable[tuple[int, Sequence[str]]], policy: Policy
) -> list[Finding]:
    """Each changed master-config key that no appended entry's `config-keys` covers, and each `config-keys`
    value that names no changed key. `entries`: (line, config-keys) of each appended entry."""
    guard = policy.stale_branch
    if guard.changelog_coverage == "off":
        return []
    entries = list(entries)
    patterns = [pattern for _, keys in entries for pattern in keys]
    severity = REFUSE if guard.changelog_coverage == "refuse" else WARN
    found = [
        _finding(UNCOVERED_KEY, severity, item.path, key=item.key, line=item.line)
        for item in changed
        if not covered(item.key, patterns)
    ]
    changed_names = [item.key for item in changed]
    for line, keys in entries:
        for pattern in keys:
            if not keys_matching(pattern, changed_names):
                found.append(_finding(UNCHANGED_KEY, INFO, policy.paths.changelog, key=pattern, line=line))
    return found


def annotation(finding: Finding) -> tuple[str, int, str] | None:
    """(path, line, level) of the check run's note on a finding: a config key on its line, a changelog entry on
    its first line, a submodule or a file on its first line; None for a finding with no file in the PR."""
    if not finding.path:
        return None
    level = {REFUSE: "failure", WARN: "warning", INFO: "notice"}[finding.severity]
    line = finding.params.get("line")
    return finding.path, line if isinstance(line, int) and line > 0 else 1, level


def touches_master_configs(files: Iterable[str], policy: Policy) -> bool:
    """Whether the PR changes a master config file (else no key changed, and nothing is read)."""
    configs = set(policy.paths.master_configs)
    return any(f in configs for f in files)


# -- the pin ---------------------------------------------------------------------------------------


def stale_pin_files(files_since_pin: Iterable[str], policy: Policy) -> tuple[str, ...]:
    """The files changed since the pinned run's commit that a sweep depends on (the policy's benchmark paths),
    leaving out the changelog and the paths `stale_branch.pin_keeps` lists (docs): a pin whose run tested other
    code than the PR's. Empty: the pin still stands for the PR."""
    guard = policy.stale_branch
    if not guard.stale_pin:
        return ()
    return tuple(
        f
        for f in files_since_pin
        if f != policy.paths.changelog and _matches(f, policy.paths.benchmark) and not _matches(f, guard.pin_keeps)
    )


# The verdict code of a pin `pin_is_stale` finds stale (the sign-off's reuse check says `pin_invalid` with it).
STALE_PIN = "stale"


def pin_is_stale(files_since_pin: Iterable[str], policy: Policy) -> bool:
    """A push after the pin changed a file a sweep depends on: the pinned run no longer stands for the PR (the
    status, the sign-off's pin check and a merge refuse it). `files_since_pin`: the files changed between the
    pinned run's head commit and the PR's head (GitHub's comparison of the two)."""
    return bool(stale_pin_files(files_since_pin, policy))


# -- the gate's line -----------------------------------------------------------------------------------


CODES = ("not_checked", "clear", "warnings", "found")


def verdict(findings: Sequence[Finding] | None) -> tuple[bool | None, str, dict[str, Any]]:
    """(ok, reason code, params) of the gate's `stale_branch` condition: `not_checked` (None: no sweep asked for,
    or the guard off), `found` (False: a finding refuses), `warnings` (True, with what it warns of), `clear`
    (True, possibly with information)."""
    if findings is None:
        return None, "not_checked", {}
    order = {REFUSE: 0, WARN: 1, INFO: 2}
    ranked = sorted(findings, key=lambda f: order[f.severity])
    shown = tuple(f.plain() for f in ranked[:FINDINGS_SHOWN])
    params = {"findings": shown, "more": max(0, len(ranked) - FINDINGS_SHOWN)}
    if any(f.severity == REFUSE for f in findings):
        return False, "found", params
    if any(f.severity == WARN for f in findings):
        return True, "warnings", params
    return True, "clear", params


def pattern_errors(policy: Policy) -> list[str]:
    """The configuration check's errors for the guard's path patterns: each must be a gitignore pattern that can
    match a file (not invalid, not a comment)."""
    errors = []
    for key in ("revert_refused", "pin_keeps"):
        for i, pattern in enumerate(getattr(policy.stale_branch, key)):
            where = f"stale_branch.{key}[{i}]"
            if pattern.lstrip().startswith("#"):
                errors.append(f"{where}: {pattern!r} is a comment in gitignore syntax and matches no file")
                continue
            try:
                _spec((pattern,))
            except ValueError as error:  # pathspec's pattern errors are ValueErrors
                errors.append(f"{where}: {pattern!r} is not a gitignore pattern ({error})")
    return errors


@lru_cache(maxsize=256)
def _spec(patterns: tuple[str, ...]) -> pathspec.PathSpec[Any]:
    return pathspec.PathSpec.from_lines("gitignore", patterns)


def _matches(path: str, patterns: Iterable[str]) -> bool:
    patterns = tuple(patterns)
    return bool(patterns) and _spec(patterns).match_file(path)
