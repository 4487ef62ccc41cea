"""`sweepbot init`: write a commented `.github/sweepbot.yml` for a repository from what a checkout of it holds.

The checkout's files are listed (capped, skipping .git and virtual environments), bot.rules.repository_layout
finds the changelog, master configs, runner pools, CODEOWNERS, checklist and sweep workflows among them, and
this module writes the keys it found, with a comment on each saying what it is and where it came from, and a
comment for each it did not find naming the default that applies (upstream's). The file is checked as
`sweepbot check-config` checks it before it is written. The defaults that fit only upstream InferenceX are set
for the repository: its docs link and pull-request link prefix, and `results.mode: none` (upstream's results
service is SemiAnalysisAI/InferenceX-app; a repository with one of its own sets it)."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import TextIO

import yaml

from bot.core.config import REPO_CONFIG_PATH, ConfigError, default_policy, parse_repo_config
from bot.rules import repository_layout
from bot.rules.policy import Policy
from bot.rules.repository_layout import Layout

MAX_FILES = 50_000  # files listed; a larger checkout is listed this far and the output says so
MAX_READ_BYTES = 4 * 1024 * 1024  # a candidate larger than this is not read (bot.rules.master_config's cap)
SKIPPED_DIRS = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache", ".ruff_cache"})
_GITHUB_REMOTE = re.compile(r"github\.com[:/]([A-Za-z0-9-]{1,39})/([A-Za-z0-9._-]{1,100}?)(?:\.git)?/?$")
OWNER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}")


def list_files(root: Path, limit: int = MAX_FILES) -> tuple[list[str], bool]:
    """The checkout's files, relative and `/`-separated, and whether the listing stopped at `limit`."""
    found: list[str] = []
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d not in SKIPPED_DIRS)
        base = Path(directory).relative_to(root)
        for name in sorted(files):
            if len(found) >= limit:
                return found, True
            found.append((base / name).as_posix())
    return found, False


def reader(root: Path) -> repository_layout.Reader:
    def read(path: str) -> str | None:
        file = root / path
        try:
            if file.stat().st_size > MAX_READ_BYTES:
                return None
            return file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    return read


def origin_repository(root: Path) -> str | None:
    """OWNER/NAME of the checkout's `origin` remote on GitHub, from .git/config (None when it is not found)."""
    try:
        config = (root / ".git" / "config").read_text(encoding="utf-8")
    except OSError:
        return None
    section = ""
    for line in config.splitlines()[:2000]:
        stripped = line.strip()
        if stripped.startswith("["):
            section = stripped
        elif section == '[remote "origin"]' and stripped.startswith("url"):
            match = _GITHUB_REMOTE.search(stripped.partition("=")[2].strip())
            if match:
                return f"{match.group(1)}/{match.group(2)}"
    return None


def default_branch(root: Path) -> str:
    """The branch origin's HEAD names in the checkout, else main."""
    try:
        head = (root / ".git" / "refs" / "remotes" / "origin" / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return "main"
    return head.removeprefix("ref: refs/remotes/origin/") if head.startswith("ref: refs/remotes/origin/") else "main"


def scalar(value: str | bool) -> str:
    """`value` as a YAML scalar: plain when YAML reads it back as the same string, else double-quoted."""
    if isinstance(value, bool):
        return "true" if value else "false"
    plain = bool(re.fullmatch(r"[A-Za-z0-9_./][A-Za-z0-9_./:@ -]*[A-Za-z0-9_./]|[A-Za-z0-9_.]", value))
    plain = plain and ": " not in value and " #" not in value
    if plain:
        try:
            plain = yaml.safe_load(value) == value
        except yaml.YAMLError:
            plain = False
    return value if plain else json.dumps(value, ensure_ascii=False)


def checklist_lines(layout: Layout, read: repository_layout.Reader | None, defaults: Policy) -> list[str]:
    """The sign-off's settings that the checklist's template decides: its heading, its phrase, the verified items."""
    text = read(layout.checklist) if read is not None and layout.checklist else None
    if text is None:
        return []
    verified = [item.contains for item in defaults.signoff.verified_items]
    fit = repository_layout.checklist_fit(text, defaults.checklist_heading, defaults.signoff_phrase, verified)
    lines = [""]
    if fit.heading is None:
        return lines + [
            f"# {layout.checklist} has no heading with a fenced block of checklist items under it: a sign-off is",
            f"# checked against that template. Add one (upstream's is under {defaults.checklist_heading!r}), or set",
            "# checklist_heading to the heading yours is under.",
        ]
    lines.append(f"# the heading of the checklist's template: {fit.items} checklist items in a fenced block under it")
    if fit.heading == defaults.checklist_heading:
        lines.append(f"# checklist_heading: {scalar(fit.heading)}  (the default)")
    else:
        lines.append(f"checklist_heading: {scalar(fit.heading)}")
    if fit.phrase is not None:
        lines.append("# the words that make a comment a sign-off: the template's first line, not the default's")
        lines.append(f"signoff_phrase: {scalar(fit.phrase)}")
    if list(fit.verified_found) != verified:
        lines.append("signoff:")
        lines.append("  # the checklist items a check of the bot stands for, found by a phrase of the item; the")
        lines.append("  # default phrases this checklist's items do not hold are left out")
        kept = [item for item in defaults.signoff.verified_items if item.contains in fit.verified_found]
        if not kept:
            lines.append("  verified_items: []")
        else:
            lines.append("  verified_items:")
            for item in kept:
                lines.append(f"    - check: {scalar(item.check)}")
                lines.append(f"      contains: {scalar(item.contains)}")
    return lines


def render(
    layout: Layout,
    repository: str | None,
    branch: str,
    *,
    truncated: bool = False,
    reader_of: repository_layout.Reader | None = None,
) -> str:
    """The commented `.github/sweepbot.yml` for `layout` (of `repository` on GitHub, when known)."""
    defaults = default_policy()
    lines = [
        f"# sweepbot's policy for {repository or 'this repository'}, written by `sweepbot init` from a checkout.",
        "# Every key is optional: a key left out keeps sweepbot's default (app.yaml's `policy:`), and some defaults",
        "# fit only upstream InferenceX. Check this file with `sweepbot check-config .github/sweepbot.yml`;",
        "# examples/sweepbot.yml in sweepbot's repository explains every key.",
    ]
    if truncated:
        lines.append(f"# The checkout has more than {MAX_FILES} files: only the first {MAX_FILES} were looked at.")
    lines.append("")
    paths_at = len(lines)  # `paths:`, commented out when nothing under it was found
    lines.append("paths:")

    def path_key(key: str, value: str | None, what: str, found: str, missing: str) -> None:
        lines.append(f"  # {what}")
        if value is not None:
            lines.append(f"  # found: {found}")
            lines.append(f"  {key}: {scalar(value)}")
        else:
            lines.append(f"  # not found ({missing}); the default, upstream's, applies:")
            lines.append(f"  # {key}: {scalar(getattr(defaults.paths, key))}")
        for other in layout.notes.get(key, []):
            lines.append(f"  # also seen, not taken: {other}")

    path_key(
        "changelog",
        layout.changelog,
        "the performance changelog each benchmark PR appends to",
        "a YAML list of entries with config-keys",
        'no YAML file named "*changelog*" holds a list of entries with config-keys',
    )
    path_key(
        "codeowners",
        layout.codeowners,
        "the CODEOWNERS file that says who may sign off",
        "where GitHub looks for it first",
        "none of " + ", ".join(repository_layout.CODEOWNERS_PLACES),
    )
    path_key(
        "checklist",
        layout.checklist,
        "the review checklist a sign-off completes",
        'a Markdown file named "*checklist*"',
        'no Markdown file named "*checklist*"',
    )
    lines.append("  # the master config files: one block per config key, each naming its runner pool (`runner`)")
    if layout.master_configs:
        lines.append("  master_configs:")
        lines += [f"    - {scalar(path)}" for path in layout.master_configs]
    else:
        lines.append("  # not found (no YAML mapping whose blocks name a `runner`); the default, upstream's, applies:")
        lines.append("  # master_configs: " + ", ".join(defaults.paths.master_configs))
    path_key(
        "runners",
        layout.runners,
        "the runner pools file (`labels:` pool -> runners)",
        "runners.yaml with pools under `labels:`",
        "no runners.yaml or runners.yml with pools under `labels:`",
    )
    patterns = repository_layout.benchmark_patterns(layout)
    lines.append("  # gitignore-style patterns of a benchmark PR's files (the welcome comment's): the folders above")
    if patterns:
        lines.append("  benchmark:")
        lines += [f"    - {scalar(pattern)}" for pattern in patterns]
    else:
        lines.append("  # benchmark: " + ", ".join(defaults.paths.benchmark))

    if all(line.lstrip().startswith("#") for line in lines[paths_at + 1 :]):
        lines[paths_at] = "# paths:"
    lines += checklist_lines(layout, reader_of, defaults)
    lines.append("")
    lines.append(
        "# where the welcome comment links for the benchmark's own documentation (upstream's README by default)"
    )
    if repository and layout.readme:
        lines.append(f"docs_url: {scalar(f'https://github.com/{repository}/blob/{branch}/{layout.readme}')}")
    else:
        lines.append(f"# docs_url: {defaults.docs_url}")
    lines.append("# the prefix of a changelog entry's pr-link (upstream's pull requests by default)")
    if repository:
        lines.append(f"pr_link_prefix: {scalar(f'https://github.com/{repository}/pull/')}")
    else:
        lines.append(f"# pr_link_prefix: {defaults.pr_link_prefix}  (no GitHub origin found: give --repo OWNER/NAME)")

    lines.append("")
    if layout.labels:
        lines.append("labels:")
        lines.append("  # the labels the sweep workflows compare their `sweep-label` input with; check canary and")
        lines.append("  # fail_fast for each, and which one the welcome comment recommends (at most one)")
        lines.append("  primary:")
        recommended = next((label for label in layout.labels if "fail-fast" in label), layout.labels[0])
        for label in layout.labels:
            lines.append(f"    - name: {scalar(label)}")
            lines.append(f"      canary: {scalar('non-canary' not in label)}")
            lines.append(f"      fail_fast: {scalar('fail-fast' in label)}")
            lines.append(f"      recommended: {scalar(label == recommended)}")
    else:
        names = ", ".join(label.name for label in defaults.labels.primary)
        lines.append("# labels: the sweep workflows compare `sweep-label` with no label this could read, so the")
        lines.append(f"# default primary labels apply: {names}.")
        lines.append("# The bot creates them in the repository.")

    lines.append("")
    lines.append("# the workflows the sweep gate dispatches (inputs pr-number, sweep-label, dispatch-id, ...)")
    lines.append("workflows:" if layout.sweep_workflow or layout.fork_workflow else "# workflows:")
    for key, value, which in (
        ("sweep", layout.sweep_workflow, "a PR from this repository's branches"),
        ("fork_sweep", layout.fork_workflow, "a fork's PR (it also takes merge-sha)"),
    ):
        if value is not None:
            lines.append(f"  # for {which}")
            lines.append(f"  {key}: {scalar(value)}")
        else:
            default = getattr(defaults.workflows, key)
            lines.append(f"  # {key}: not found in .github/workflows for {which}; the default applies: {default}")
            lines.append(f"  # (examples/workflows/{default} in sweepbot's repository is one to start from)")

    lines += [
        "",
        "results:",
        "  # No results service: `/use` pins and reports, and nothing is sent to stage or ingest results. With a",
        "  # service of your own, set mode: service and its repository, viewer and senders (the defaults name",
        f"  # upstream's {defaults.results.repository} and {defaults.results.viewer}).",
        "  mode: none",
        "",
    ]
    return "\n".join(lines)


def init_command(
    checkout: str,
    *,
    repository: str | None = None,
    to_stdout: bool = False,
    force: bool = False,
    out: TextIO | None = None,
) -> int:
    """Write `checkout`/.github/sweepbot.yml (or print it): 0 written, 1 refused (it exists, or the result does not
    pass the config check), 2 the checkout or --repo is unusable."""
    out = out or sys.stdout
    root = Path(checkout)
    if not root.is_dir():
        print(f"sweepbot init: {checkout}: not a directory", file=sys.stderr)
        return 2
    if repository is not None and not OWNER_NAME.fullmatch(repository):
        print(f"sweepbot init: --repo {repository!r}: expected OWNER/NAME", file=sys.stderr)
        return 2
    target = root / REPO_CONFIG_PATH
    if not to_stdout and target.exists() and not force:
        print(f"sweepbot init: {target} exists; --force replaces it, --print prints the new one", file=sys.stderr)
        return 1
    files, truncated = list_files(root)
    layout = repository_layout.find_layout(files, reader(root))
    text = render(
        layout, repository or origin_repository(root), default_branch(root), truncated=truncated, reader_of=reader(root)
    )
    try:
        parse_repo_config(text)
    except ConfigError as exc:  # a bug of this command, never the operator's: say so, write nothing
        print("sweepbot init: the file it made does not pass the config check:", file=sys.stderr)
        for error in exc.errors:
            print(f"  - {error}", file=sys.stderr)
        return 1
    if to_stdout:
        out.write(text)
        return 0
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target} (it passes `sweepbot check-config {target}`); read its comments, then commit it", file=out)
    return 0
