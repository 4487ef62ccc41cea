"""The `/merge` command's rules, as pure functions over data: whether a PR may be merged now and who can fix what
stops it (`merge_refusals`), which run the merge reuses (`reused_run`), and the changelog the base branch gets
(`resolve_changelog`). The handler gathers the facts from GitHub, calls these, and turns the answers into
actions; nothing here reads or writes anything.

What the merge does, as upstream's maintainers do it by hand (InferenceX `utils/merge_with_reuse.sh` with
`utils/prepare_perf_changelog_merge.py`), with the rules of docs/spec.md:

- Before it, the decidable checks (`merge_refusals`), each a `Refusal` with a stable code, who can fix it and
  the params its reply needs, in the fixed order of `REFUSAL_CODES`: the PR is open, not a draft, on its
  configured base; exactly one primary label counts and no modifier blocks reuse; a valid pin, or with no pin
  the newest eligible run (`reused_run` says the merge pins it itself); the `signoff` check passed where a
  sign-off is required; the changelog resolves (`resolve_changelog`); no file changed on both sides except the
  changelog. Any refusal means nothing is written to any branch.
- The changelog (`resolve_changelog`): the base branch's bytes unchanged, the PR's appended entries after them,
  one blank line between, every placeholder `pr-link` of the PR's entries rewritten to the PR's URL and nothing
  else touched; an entry already on the base is a duplicate and refused, and so is a PR whose change to the
  file is not a pure append.
- The write (`merge_way`): a PR from this repository's own branches gets its branch updated and GitHub's merge
  API pinned to its head (the policy's `merge.method`); a fork's PR, whose branch the App cannot push to, is merged
  through the Git Data API (a commit whose parents are the base head and the PR head, then a fast-forward-only
  update of the base branch), which GitHub shows as the PR merged.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import yaml
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from bot.rules.changelog import loading
from bot.rules.changelog.append import check_append
from bot.rules.changelog.appended_text import _trailing_blank_lines
from bot.rules.changelog.errors import ChangelogError
from bot.rules.changelog.fields import BOOLEAN_FIELDS, FIELDS, PLACEHOLDER
from bot.rules.changelog.limits import DEFAULT_LIMITS, ChangelogLimits
from bot.rules.changelog.results import AppendedEntry, ChangelogResult
from bot.rules.pins import BLOCKED_BY_LABEL, Selection, Verdict, blocking_labels
from bot.rules.policy import Policy
from bot.rules.pull_request import label_key, primary_names

# -- who can fix a refusal ------------------------------------------------------------------------------------

Fixer = Literal["author", "maintainer", "codeowner"]
AUTHOR: Fixer = "author"  # the PR's author: their branch, their entries
MAINTAINER: Fixer = "maintainer"  # write permission: labels, pins, sweeps, the repository's configuration
CODEOWNER: Fixer = "codeowner"  # a CODEOWNER of the changed files: the sign-off

# -- the refusal codes, in the order merge_refusals reports them ------------------------------------------------

NOT_OPEN = "not-open"  # closed or merged; params: state, merged
DRAFT = "draft"
WRONG_BASE = "wrong-base"  # params: base (the PR's), expected (the configured base)
NO_PRIMARY_LABEL = "no-primary-label"  # no primary sweep label counts; params: primaries (the policy's)
SEVERAL_PRIMARY_LABELS = "several-primary-labels"  # params: labels (those that count, as spelt on the PR)
REUSE_BLOCKED = "reuse-blocked"  # a modifier that blocks reuse counts; params: labels
PIN_NOT_ELIGIBLE = "pin-not-eligible"  # the pinned run fails the pin rules; params: verdict (code, params)
PIN_STALE = "pin-stale"  # a push after the pinned run changed files a sweep depends on; params: files
NO_ELIGIBLE_RUN = "no-eligible-run"  # no pin, and no run of the record is eligible; params: others
SIGNOFF_MISSING = "signoff-missing"  # params: conclusion (the `signoff` check's, None: none on the head)
CHANGELOG_INVALID = "changelog-invalid"  # the PR's appended text breaks the rules; params: errors, error_count...
CHANGELOG_NOT_APPEND = "changelog-not-append"  # the PR edits the history; params: errors or corrections
CHANGELOG_DUPLICATE = "changelog-duplicate"  # params: duplicates ({"line": head line, "base_line": ...} each)
PR_URL_NOT_CANONICAL = "pr-url-not-canonical"  # params: pr_url, prefix
CHANGELOG_BASE_UNREADABLE = "changelog-base-unreadable"  # the base's file is not a YAML list; params: problem
CHANGELOG_RESULT_INVALID = "changelog-result-invalid"  # the resolved file fails the rules; params: errors...
CONFLICT = "conflict"  # files changed on both sides since the merge base; params: files

# Who can fix each refusal, in the order merge_refusals reports them (REFUSAL_CODES).
FIXERS: Mapping[str, Fixer] = {
    NOT_OPEN: AUTHOR,
    DRAFT: AUTHOR,
    WRONG_BASE: AUTHOR,
    NO_PRIMARY_LABEL: MAINTAINER,
    SEVERAL_PRIMARY_LABELS: MAINTAINER,
    REUSE_BLOCKED: MAINTAINER,
    PIN_NOT_ELIGIBLE: MAINTAINER,
    PIN_STALE: MAINTAINER,
    NO_ELIGIBLE_RUN: MAINTAINER,
    SIGNOFF_MISSING: CODEOWNER,
    CHANGELOG_INVALID: AUTHOR,
    CHANGELOG_NOT_APPEND: AUTHOR,
    CHANGELOG_DUPLICATE: AUTHOR,
    PR_URL_NOT_CANONICAL: MAINTAINER,
    CHANGELOG_BASE_UNREADABLE: MAINTAINER,
    CHANGELOG_RESULT_INVALID: MAINTAINER,
    CONFLICT: AUTHOR,
}
REFUSAL_CODES: tuple[str, ...] = tuple(FIXERS)

SIGNOFF_PASSED = "success"  # the `signoff` check's conclusion that lets a PR merge

# -- how the merge is written ---------------------------------------------------------------------------------

MERGE_API = "merge-api"  # update the PR's branch, then PUT pulls/{n}/merge with the head's `sha`
GIT_DATA = "git-data"  # blobs, a tree on the base's tree, a commit of base head + PR head, a fast-forward


@dataclass(frozen=True)
class Refusal:
    """One reason the PR cannot be merged now: `code` (one of REFUSAL_CODES), who can fix it (`fixer`, from
    FIXERS) and what its reply needs (`params`)."""

    code: str
    fixer: Fixer
    params: Mapping[str, Any] = field(default_factory=dict)


def refusal(code: str, **params: Any) -> Refusal:
    """A refusal of `code`, with its fixer from FIXERS."""
    return Refusal(code, FIXERS[code], params)


@dataclass(frozen=True)
class Resolution:
    """The changelog the base branch gets: `content`, the base's bytes followed by the PR's entries. `entries`
    are the PR's entries as they stand in `content` (their `line` is a line of `content`, their `pr_link` the PR's
    URL); `rewritten` the lines of `content` where a placeholder `pr-link` became the PR's URL. A PR that does not
    change the changelog gets the base's bytes and no entries."""

    content: bytes
    entries: tuple[AppendedEntry, ...] = ()
    rewritten: tuple[int, ...] = ()


@dataclass(frozen=True, kw_only=True)
class MergeFacts:
    """What `merge_refusals` decides on, as the handler read it from GitHub; every field named, none defaulted
    (a forgotten fact must not pass for a harmless one).

    state, merged, draft, base_ref: the PR's (`pull["state"]`, `pull["merged"]`, `pull["draft"]`,
        `pull["base"]["ref"]`).
    configured_base: the branch the PR must target (the default branch).
    labels: the labels that count on the PR (handlers.pr_state.counted_label_names), as spelt on the PR.
    pin: the verdict on the pinned run (bot.rules.pins.check_run with pinned=True, or the handler's `not-found`),
        None when no pin stands.
    candidates: bot.rules.pins.newest_eligible over the record's runs; only looked at when no pin stands.
    signoff_required: whether the PR needs a passing `signoff` check (branch protection or the policy says so).
    signoff_conclusion: that check's conclusion on the PR's head, None when it has none (or it is not completed).
    changelog: what resolve_changelog answered for the PR.
    conflicts: the files changed both on the PR and on the base branch since the merge base, the changelog left
        out (its tail is resolved): the bot cannot merge a file both sides changed, so each is the author's to
        resolve on their branch.
    stale_pin: the files a sweep depends on that pushes after the pinned run changed (handlers.pr_state
        stale_pin_files; empty when the pin still stands for the PR): the pinned run no longer tested this code.
    """

    state: str
    merged: bool
    draft: bool
    base_ref: str
    configured_base: str
    labels: tuple[str, ...]
    pin: Verdict | None
    candidates: Selection
    signoff_required: bool
    signoff_conclusion: str | None
    changelog: Resolution | Refusal
    conflicts: tuple[str, ...]
    stale_pin: tuple[str, ...]


@dataclass(frozen=True)
class Reuse:
    """The run whose results the merge reuses: the pinned one, or (`pinned_by_merge`) the newest eligible run,
    which the merge pins itself and says so."""

    run_id: int
    verdict: Verdict
    pinned_by_merge: bool


# -- the checks before a merge ----------------------------------------------------------------------------------


def merge_refusals(facts: MergeFacts, policy: Policy) -> list[Refusal]:
    """Every reason `facts` gives not to merge, in REFUSAL_CODES order; empty: the PR may be merged now.

    A modifier that blocks reuse is named once: the pin's `blocked-by-label` verdict, or no eligible run where a
    run failed only for that label, is left to REUSE_BLOCKED."""
    found: list[Refusal] = []
    if facts.state != "open" or facts.merged:
        found.append(refusal(NOT_OPEN, state=facts.state, merged=facts.merged))
    if facts.draft:
        found.append(refusal(DRAFT))
    if facts.base_ref != facts.configured_base:
        found.append(refusal(WRONG_BASE, base=facts.base_ref, expected=facts.configured_base))

    primaries = primary_names(policy)
    counted: dict[str, str] = {}  # casefolded -> as spelt: GitHub holds one label per name, whatever its case
    for name in facts.labels:
        if label_key(name) in primaries:
            counted.setdefault(label_key(name), name)
    if not counted:
        found.append(refusal(NO_PRIMARY_LABEL, primaries=tuple(p.name for p in policy.labels.primary)))
    elif len(counted) > 1:
        found.append(refusal(SEVERAL_PRIMARY_LABELS, labels=tuple(counted.values())))
    blocking = blocking_labels(facts.labels, policy)
    if blocking:
        found.append(refusal(REUSE_BLOCKED, labels=blocking))

    if facts.pin is not None:
        if not facts.pin.ok and not (blocking and facts.pin.code == BLOCKED_BY_LABEL):
            found.append(refusal(PIN_NOT_ELIGIBLE, verdict={"code": facts.pin.code, "params": dict(facts.pin.params)}))
        elif facts.stale_pin:
            found.append(refusal(PIN_STALE, files=facts.stale_pin))
    elif facts.candidates.run is None:
        blocked_only = blocking and any(v.code == BLOCKED_BY_LABEL for _, v in facts.candidates.others)
        if not blocked_only:
            others = tuple({"id": run.get("id"), "code": v.code} for run, v in facts.candidates.others)
            found.append(refusal(NO_ELIGIBLE_RUN, others=others))

    if facts.signoff_required and facts.signoff_conclusion != SIGNOFF_PASSED:
        found.append(refusal(SIGNOFF_MISSING, conclusion=facts.signoff_conclusion))
    if isinstance(facts.changelog, Refusal):
        found.append(facts.changelog)
    if facts.conflicts:
        found.append(refusal(CONFLICT, files=tuple(facts.conflicts)))
    return sorted(found, key=lambda r: REFUSAL_CODES.index(r.code))


def reused_run(facts: MergeFacts) -> Reuse | None:
    """The run the merge reuses: the pinned run when its verdict is eligible; with no pin, the newest eligible
    run of the record (`pinned_by_merge`: the merge pins it and says so); None when neither (merge_refusals
    names why). An invalid pin is never replaced by another run: a maintainer chose it."""
    if facts.pin is not None:
        return _reuse(facts.pin, pinned_by_merge=False) if facts.pin.ok else None
    verdict = facts.candidates.verdict
    if facts.candidates.run is None or verdict is None or not verdict.ok:
        return None
    return _reuse(verdict, pinned_by_merge=True)


def _reuse(verdict: Verdict, *, pinned_by_merge: bool) -> Reuse | None:
    run_id = verdict.params.get("run_id")
    if not isinstance(run_id, int) or isinstance(run_id, bool):
        return None
    return Reuse(run_id, verdict, pinned_by_merge)


def merge_way(*, fork: bool) -> str:
    """How the merge is written: GIT_DATA for a fork's PR (the App cannot push to its branch), else MERGE_API."""
    return GIT_DATA if fork else MERGE_API


# -- the changelog ----------------------------------------------------------------------------------------------

# Errors of the PR check that mean the PR changed the file's history rather than appending to it.
_NOT_APPEND_ERRORS = frozenset({"history-changed", "correction-with-append", "link-correction-not-accepted"})
_PR_NUMBER = r"([1-9][0-9]{0,17})"  # a PR number as links carry it (below 10**18)


def resolve_changelog(
    base: bytes,
    head: bytes,
    merge_base: bytes,
    pr_url: str,
    canonical_prefix: str,
    *,
    limits: ChangelogLimits = DEFAULT_LIMITS,
) -> Resolution | Refusal:
    """The changelog the base branch gets when the PR is merged, resolved as upstream's merge helper does.

    `base` is the file on the base branch now, `head` on the PR's head, `merge_base` at their merge base (b""
    where the file does not exist). The PR's change is judged as the PR check judges it (check_append from the
    merge base, so a PR branched before others merged is judged on what it appended), and must be a pure
    append: an edit of the history, or a PR that only corrects `pr-link` values, is refused
    (CHANGELOG_NOT_APPEND); any other error of the check is CHANGELOG_INVALID.

    The result is `base`'s bytes unchanged, then the PR's appended text from its first non-blank line (its
    entries with any comment among them, as written), after exactly one blank line (none when the base already
    ends with a blank line or holds nothing; a base without a final newline gets one first). In the PR's
    entries, each `pr-link` that is a placeholder (`XXX`, or the canonical prefix followed by `XXX`, which is
    upstream's `https://github.com/OWNER/REPO/pull/XXX` for the repository the prefix names) becomes `pr_url`,
    its quotes kept; nothing else changes, and the history's own placeholders stay as they are. `pr_url` must be
    the canonical prefix followed by the PR's number (PR_URL_NOT_CANONICAL): the default branch takes no other
    link.

    An entry of the PR whose fields (`pr-link` aside, a false flag the same as none) equal an entry already on
    the base is a duplicate (CHANGELOG_DUPLICATE, each with its head line and the base's line; upstream's helper
    drops such an entry silently and refuses only when none is left, here the author is told). The result is
    checked again against `base` with the PR rules (CHANGELOG_RESULT_INVALID if it fails: a base over the size
    limit, a base whose end swallows the entries). A PR that does not change the file gets `base` as it is.

    Cost: the PR check's, twice, within `limits`; and the base composed once as YAML for the duplicates (at most
    `limits.max_bytes`, as the result is checked first): a big file belongs in bot.core.offload.
    """
    if head == merge_base:
        return Resolution(base)
    number = _pr_number(pr_url, canonical_prefix)
    if number is None:
        return refusal(PR_URL_NOT_CANONICAL, pr_url=pr_url, prefix=canonical_prefix)
    check = check_append(merge_base, head, pr_number=number, canonical_prefix=canonical_prefix, limits=limits)
    problem = _pr_change_problem(check)
    if problem is not None:
        return problem

    appended = head[len(merge_base) :]
    if merge_base and not merge_base.endswith(b"\n"):
        appended = appended[1:]  # the newline that ended the history's last line (check_append required it)
    contribution = _from_first_content_line(appended.decode("utf-8"))
    rewritten_text, rewritten_rows = _rewrite_placeholders(contribution, pr_url, canonical_prefix)
    if rewritten_text is None:
        return refusal(
            CHANGELOG_INVALID, errors=(), error_count=0, error_count_is_lower_bound=False, reason="unreadable"
        )

    separator = _separator(base)
    content = base + separator + rewritten_text.encode("utf-8")
    first_row = (base + separator).count(b"\n") + 1  # the line of `content` where the PR's text begins
    final = check_append(base, content, pr_number=number, canonical_prefix=canonical_prefix, limits=limits)
    if not final.ok or len(final.entries) != len(check.entries) or any(e.pr_link != pr_url for e in final.entries):
        return refusal(CHANGELOG_RESULT_INVALID, **_error_params(final))

    duplicates = _duplicates(base, check.entries)
    if isinstance(duplicates, Refusal):
        return duplicates
    if duplicates:
        return refusal(CHANGELOG_DUPLICATE, duplicates=duplicates)
    return Resolution(content, final.entries, tuple(first_row + row for row in rewritten_rows))


def _pr_number(pr_url: str, prefix: str) -> int | None:
    match = re.fullmatch(re.escape(prefix) + _PR_NUMBER, pr_url)
    return int(match.group(1)) if match else None


def _pr_change_problem(check: ChangelogResult) -> Refusal | None:
    """The refusal the PR check's result calls for, or None when the PR appends valid entries and nothing else."""
    if any(error.code in _NOT_APPEND_ERRORS for error in check.errors):
        return refusal(CHANGELOG_NOT_APPEND, corrections=(), **_error_params(check))
    if not check.ok:
        return refusal(CHANGELOG_INVALID, reason="errors", **_error_params(check))
    if check.link_corrections:
        corrections = tuple({"line": c.line, "old": c.old, "new": c.new} for c in check.link_corrections)
        return refusal(
            CHANGELOG_NOT_APPEND, corrections=corrections, errors=(), error_count=0, error_count_is_lower_bound=False
        )
    if not check.entries:
        return refusal(CHANGELOG_INVALID, reason="no-entry", errors=(), error_count=0, error_count_is_lower_bound=False)
    return None


def _error_params(check: ChangelogResult) -> dict[str, Any]:
    errors: tuple[ChangelogError, ...] = check.errors
    return {
        "errors": errors,
        "error_count": check.error_count,
        "error_count_is_lower_bound": check.error_count_is_lower_bound,
    }


def _from_first_content_line(text: str) -> str:
    """`text` from its first line that holds more than whitespace: the blank lines that parted the PR's entries
    from the history it branched from go; the new separator is the base's."""
    start = 0
    while True:
        newline = text.find("\n", start)
        if newline == -1 or text[start:newline].strip():
            return text[start:]
        start = newline + 1


def _separator(base: bytes) -> bytes:
    """What goes between the base's bytes and the PR's text so that exactly one blank line parts them, as the
    PR check counts it: none after a base that holds nothing or already ends with a blank line; a newline first
    for a base whose last line has none."""
    ending = b"" if not base or base.endswith(b"\n") else b"\n"
    if not base.strip() or _trailing_blank_lines(base):
        return ending
    return ending + b"\n"


def _rewrite_placeholders(text: str, pr_url: str, prefix: str) -> tuple[str | None, tuple[int, ...]]:
    """`text` (the PR's entries, checked) with each entry's placeholder `pr-link` value replaced by `pr_url`, and
    the 0-based rows where that happened; (None, ()) when the text cannot be read again as the check read it.

    The value is found on the YAML nodes, not by a pattern on lines, so a description holding `pr-link: XXX` is
    never touched; a quoted value keeps its quotes."""
    placeholders = (PLACEHOLDER, prefix + PLACEHOLDER)
    loader = loading.Loader(text)
    spans: list[tuple[int, int, str, int]] = []  # (start, end, replacement, row)
    try:
        root = loader.get_single_node()
        if root is None:
            return text, ()
        if not isinstance(root, SequenceNode):
            return None, ()
        for item in root.value:
            if not isinstance(item, MappingNode):
                return None, ()
            for key, value in item.value:
                if not (isinstance(key, ScalarNode) and key.value == "pr-link" and isinstance(value, ScalarNode)):
                    continue
                if value.value not in placeholders:
                    continue
                start, end = value.start_mark.index, value.end_mark.index
                quote = value.style if value.style in ("'", '"') else ""
                if text[start:end] != f"{quote}{value.value}{quote}":
                    return None, ()  # the marks do not point at the value as written: change nothing
                spans.append((start, end, f"{quote}{pr_url}{quote}", value.start_mark.line))
    except (yaml.YAMLError, RecursionError):
        return None, ()
    finally:
        loader.dispose()
    out = text
    for start, end, replacement, _ in sorted(spans, reverse=True):
        out = out[:start] + replacement + out[end:]
    return out, tuple(row for _, _, _, row in sorted(spans))


# An entry's meaning for duplicates: its fields but `pr-link`, each as AppendedEntry holds it.
_Meaning = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], bool, bool, bool, int | None]


def _entry_meaning(entry: AppendedEntry) -> _Meaning:
    return (
        entry.config_keys,
        entry.description,
        entry.scenario_type,
        entry.evals_only,
        entry.all_evals,
        entry.append_only,
        entry.eval_min_prefill_ep,
    )


def _value_meaning(value: object) -> _Meaning | None:
    """The meaning of an entry of the base as YAML built it; None for one no valid entry can equal (a field the
    rules do not know, a value of the wrong kind): the base's history is never judged, only compared."""
    if not isinstance(value, dict) or any(not isinstance(k, str) or k not in FIELDS for k in value):
        return None
    config_keys, description = _strings(value.get("config-keys")), _strings(value.get("description"))
    scenario = _strings(value.get("scenario-type", []))
    flags = [value.get(name, False) for name in BOOLEAN_FIELDS]
    prefill = value.get("eval-min-prefill-ep")
    if config_keys is None or description is None or scenario is None or not all(isinstance(f, bool) for f in flags):
        return None
    if prefill is not None and (isinstance(prefill, bool) or not isinstance(prefill, int)):
        return None
    evals_only, all_evals, append_only = (bool(f) for f in flags)
    return config_keys, description, scenario, evals_only, all_evals, append_only, prefill


def _strings(value: object) -> tuple[str, ...] | None:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return None
    return tuple(value)


def _duplicates(base: bytes, entries: Sequence[AppendedEntry]) -> list[dict[str, int]] | Refusal:
    """The PR's entries (head lines) that an entry of the base already holds: [{"line", "base_line"}], in the
    PR's order; a refusal when the base cannot be read as a YAML list."""
    if not base.strip():
        return []
    try:
        text = base.decode("utf-8")
    except UnicodeDecodeError:
        return refusal(CHANGELOG_BASE_UNREADABLE, problem="not-utf8")
    loader = loading.Loader(text)
    on_base: dict[_Meaning, int] = {}
    try:
        root = loader.get_single_node()
        if root is None:
            return []
        if not isinstance(root, SequenceNode):
            return refusal(CHANGELOG_BASE_UNREADABLE, problem="not-a-list")
        builder = loading._Builder(loader)
        for item in root.value:
            meaning = _value_meaning(builder.build(item)) if isinstance(item, MappingNode) else None
            if meaning is not None:
                on_base.setdefault(meaning, item.start_mark.line + 1)
    except (yaml.YAMLError, RecursionError, MemoryError):
        return refusal(CHANGELOG_BASE_UNREADABLE, problem="yaml")
    finally:
        loader.dispose()
    found = []
    for entry in entries:
        line = on_base.get(_entry_meaning(entry))
        if line is not None:
            found.append({"line": entry.line, "base_line": line})
    return found


# -- the bot's own commit on a PR's branch ------------------------------------------------------------------------

MERGE_OF_TRAILER = "Sweepbot-Merge-Of"  # its last line names the head the merge was checked on
_TRAILER = re.compile(r"^" + MERGE_OF_TRAILER + r": ([0-9a-f]{40})\s*\Z", re.MULTILINE)


def prepared_for(commit: Mapping[str, Any], bot_login: str) -> str | None:
    """The head a commit of the bot's on a PR's branch was made to merge (its trailer), or None for any other
    commit. A merge that lost its answer after moving the PR's branch is resumed from it: the checks stay those
    of the head it names. Only a commit the bot authored (git's author name) whose first parent leads back to
    that head counts; on a PR from the repository's own branches only writers can push anyway."""
    if ((commit.get("author") or {}).get("name") or "") != bot_login:
        return None
    match = _TRAILER.search(str(commit.get("message") or "")[-200:])
    parents = [p.get("sha") for p in commit.get("parents") or () if isinstance(p, Mapping)]
    if match is None or len(parents) != 2:
        return None
    return match.group(1)


def tree_changes(
    files: Sequence[Mapping[str, Any]], modes: Mapping[str, str], changelog_path: str, changelog: str | None
) -> list[dict[str, Any]]:
    """What the merge writes over the base's tree: each file the PR changes as it is at the PR's head (GitHub's
    `pulls/{n}/files` list gives each file's blob), a renamed file's old path deleted, and the changelog as
    resolved (`changelog`, None: the PR leaves it alone). `modes`: the head tree's mode of each path (a script
    stays executable, a submodule a submodule), 100644 where it is not known."""
    changes: dict[str, dict[str, Any]] = {}
    for entry in files:
        path = str(entry.get("filename") or "")
        if not path:
            continue
        previous = entry.get("previous_filename")
        if entry.get("status") == "renamed" and isinstance(previous, str) and previous:
            changes[previous] = {"path": previous, "mode": modes.get(previous, "100644"), "sha": None}
        if entry.get("status") == "removed":
            changes[path] = {"path": path, "mode": modes.get(path, "100644"), "sha": None}
        else:
            changes[path] = {"path": path, "mode": modes.get(path, "100644"), "sha": entry.get("sha")}
    if changelog is not None:
        changes[changelog_path] = {"path": changelog_path, "mode": "100644", "content": changelog}
    return list(changes.values())


def conflicting_files(changed_on_pr: Sequence[str], changed_on_base: Sequence[str], changelog_path: str) -> list[str]:
    """Files changed both by the PR and on the base branch since the merge base, the changelog left out (its tail
    is resolved): each needs the author's merge."""
    on_base = set(changed_on_base)
    return [path for path in changed_on_pr if path in on_base and path != changelog_path]
