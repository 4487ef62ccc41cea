"""The check of a PR's change to the changelog: `check_append`, and the result that stands for it when it did
not finish."""

from __future__ import annotations

from bot.rules.changelog.appended_text import _check_appended
from bot.rules.changelog.errors import _err, _file_too_large, _history_error, _too_complex
from bot.rules.changelog.history import _check_history
from bot.rules.changelog.limits import DEFAULT_LIMITS, ChangelogLimits
from bot.rules.changelog.results import ChangelogResult
from bot.rules.changelog.state import _Check


def check_append(
    base: bytes | None, head: bytes, *, pr_number: int, canonical_prefix: str, limits: ChangelogLimits = DEFAULT_LIMITS
) -> ChangelogResult:
    """Judge a PR's change to the changelog: `base` is the file at the base SHA (None: new on this PR),
    `head` the file at the head SHA. Every rule of docs/spec.md, "The performance changelog", that applies to a
    PR, within `limits`. Never raises for what the file holds: a RecursionError or MemoryError is a
    `too-complex` error."""
    check = _Check(pr_number, canonical_prefix, limits)
    try:
        return _check_append(base, head, check)
    except (RecursionError, MemoryError) as exc:
        return ChangelogResult(errors=(_too_complex(check.line, exc),), error_count=1, error_count_is_lower_bound=True)


def _check_append(base: bytes | None, head: bytes, check: _Check) -> ChangelogResult:
    limit = check.limits.max_bytes
    if len(head) > limit:
        return ChangelogResult(errors=(_file_too_large(len(head), limit, head.count(b"\n", 0, limit) + 1),))
    history = b"" if base is None else base
    if not head.startswith(history):
        return _check_history(history, head, check)
    appended = head[len(history) :]
    first_line = history.count(b"\n") + 1
    if history and not history.endswith(b"\n") and appended:
        if not appended.startswith(b"\n"):
            line = first_line
            return ChangelogResult(errors=(_history_error(line, line, "extended", None, None),))
        appended = appended[1:]
        first_line += 1
    if not appended:
        return ChangelogResult()
    entries = _check_appended(appended, first_line, history, check)
    return check.sink.result(entries=tuple(entries))


def unfinished_check(size: int) -> ChangelogResult:
    """The result when the check itself did not finish (its worker process died, or ran out of time: see
    bot/core/offload.py): one `too-complex` error on line 1, cause `unfinished`."""
    return ChangelogResult(errors=(_err(1, "too-complex", cause="unfinished"),))
