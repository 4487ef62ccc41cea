"""The performance changelog's append-only rules (docs/spec.md, "The performance changelog"), as pure
functions over bytes.

`check_append(base, head, pr_number=..., canonical_prefix=...)` compares the file at a PR's base SHA with the
file at its head SHA. The base must stay a byte-exact prefix of the head; only the appended text is parsed
and judged, so lines of history the PR did not add are never blamed (the real history holds links and
whitespace the rules refuse in new entries). A PR that appends nothing may correct `pr-link` values of
existing entries and nothing else.

Errors are data: a stable `code`, the head-file `line` (1-based) and the `params` its template needs (the
words are in templates/_changelog_error.{en,zh}.j2, nowhere else). A result keeps the first
`ChangelogLimits.max_errors` errors by line and counts the rest (`error_count`); once that many are kept and
the check has passed their lines, it stops at the next error it could not keep, and the count says "at least"
(`error_count_is_lower_bound`).

Cost is bounded by `ChangelogLimits`, whatever the input: a head above `max_bytes` is one error and nothing is
parsed; each appended entry is read on its own (in batches, with libyaml when installed), and only a batch of
entries is in memory at a time; nesting deeper than `max_depth` is found on the YAML events, without recursion,
before anything recursive (PyYAML's composer, the constructor, the representer) sees it; more than `max_values`
YAML values in the appended text stop the check at the line where the limit is passed. A `RecursionError` or
`MemoryError` anywhere inside is one `too-complex` error, never an exception. The history is compared as
bytes and never parsed, except when the head is not an extension of the base (then the base's YAML events are
read once to find its `pr-link` values).

Where each part lives:
  limits.py          ChangelogLimits, the caps on what one check may cost
  fields.py          an entry's fields, their allowed values, the forms of a new entry's `pr-link`
  errors.py          ChangelogError and the building of every error (code and params)
  results.py         ChangelogResult, AppendedEntry, LinkCorrection; the sink that keeps the first errors
  loading.py         the YAML loader (libyaml or pure Python) and the builder of an entry's value
  state.py           the state of one check
  entries.py         the rules of one entry's fields
  reading.py         reading the appended entries one by one, within the depth and value caps
  appended_text.py   the rules of the appended text around the entries
  history.py         the byte-exact history, and the link corrections a PR may make
  append.py          check_append (the PR check) and unfinished_check
  default_branch.py  the merge-time rule: every `pr-link` on the default branch is a PR's link
  default_branch_links.py  which PR should carry each link the merge-time rule refuses
  suggestions.py     the one-click fixes: errors with one obvious fix, as replacement lines
"""

from bot.rules.changelog.append import check_append, unfinished_check
from bot.rules.changelog.default_branch import check_default_branch, validate_default_branch
from bot.rules.changelog.errors import ChangelogError
from bot.rules.changelog.fields import BOOLEAN_FIELDS, FIELDS, PLACEHOLDER, REQUIRED_FIELDS, SCENARIO_TYPES
from bot.rules.changelog.limits import DEFAULT_LIMITS, ChangelogLimits
from bot.rules.changelog.results import AppendedEntry, ChangelogResult, LinkCorrection

__all__ = [
    "AppendedEntry",
    "BOOLEAN_FIELDS",
    "ChangelogError",
    "ChangelogLimits",
    "ChangelogResult",
    "DEFAULT_LIMITS",
    "FIELDS",
    "LinkCorrection",
    "PLACEHOLDER",
    "REQUIRED_FIELDS",
    "SCENARIO_TYPES",
    "check_append",
    "check_default_branch",
    "unfinished_check",
    "validate_default_branch",
]
