"""What an entry of the changelog holds (docs/spec.md, "The performance changelog"): its fields, their allowed
values, and the forms a new entry's `pr-link` may take."""

from __future__ import annotations

FIELDS = (
    "config-keys",
    "description",
    "pr-link",
    "scenario-type",
    "evals-only",
    "all-evals",
    "append-only",
    "eval-min-prefill-ep",
)
REQUIRED_FIELDS = ("config-keys", "description", "pr-link")
SCENARIO_TYPES = ("fixed-seq-len", "agentic-coding")
BOOLEAN_FIELDS = ("evals-only", "all-evals", "append-only")
PLACEHOLDER = "XXX"


def _link_forms(prefix: str, pr_number: int) -> list[str]:
    """The `pr-link` values a new entry of PR `pr_number` may have: the placeholder, alone or after the prefix,
    or this PR's link."""
    return [PLACEHOLDER, prefix + PLACEHOLDER, f"{prefix}{pr_number}"]
