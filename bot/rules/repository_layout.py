"""What a benchmark repository's files say about the policy it needs: its changelog, master configs and runner
pools, CODEOWNERS, review checklist, and the sweep workflows with the labels they know. `sweepbot init` writes a
`.github/sweepbot.yml` from it (bot/app/init_config.py).

Plain functions over the repository's file paths and a reader of a file's text (None when it cannot be read or is
too large): no file system here. Each path is looked at once and only candidates are read, so the work is linear
in the number of paths, which the caller caps."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

import yaml

from bot.rules import checklist as checklists
from bot.rules import master_config

Reader = Callable[[str], "str | None"]

# Where GitHub looks for CODEOWNERS, in its order: the first found is the one in force.
CODEOWNERS_PLACES = (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS")
YAML_SUFFIXES = (".yaml", ".yml")
WORKFLOWS_DIR = ".github/workflows/"
MAX_LABELS = 20  # labels taken from the sweep workflows
# The inputs that make a workflow one the sweep gate can dispatch (it sends all of DISPATCH_INPUTS; the fork's also
# merge-sha): `sweepbot doctor` checks the rest.
SWEEP_SIGNATURE = frozenset({"pr-number", "sweep-label", "dispatch-id"})
# `inputs.sweep-label == 'name'` (or "name", either side), as a workflow compares the label it was sent.
_LABEL_COMPARISON = re.compile(
    r"""sweep-label\s*[!=]=\s*['"]([A-Za-z0-9][A-Za-z0-9 ._:/-]{0,49})['"]"""
    r"""|['"]([A-Za-z0-9][A-Za-z0-9 ._:/-]{0,49})['"]\s*[!=]=\s*inputs\.sweep-label"""
)


@dataclass(frozen=True)
class Layout:
    """What was found; None or empty where nothing was. `notes` says, per key, what was seen and passed over."""

    changelog: str | None = None
    codeowners: str | None = None
    checklist: str | None = None
    master_configs: tuple[str, ...] = ()
    runners: str | None = None
    sweep_workflow: str | None = None
    fork_workflow: str | None = None
    labels: tuple[str, ...] = ()
    readme: str | None = None
    notes: dict[str, list[str]] = field(default_factory=dict)


def _yaml(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return None


def _is_changelog(text: str | None) -> bool:
    """A performance changelog: a YAML list whose entries are mappings naming `config-keys` (an empty list too)."""
    document = _yaml(text)
    if not isinstance(document, list):
        return False
    return all(isinstance(entry, dict) and "config-keys" in entry for entry in document)


def _is_master_config(path: str, text: str | None) -> bool:
    """A master config: a mapping of config keys, at least one block naming its runner pool."""
    if text is None:
        return False
    configs = master_config.read_master_configs({path: text})
    return any(master_config.pool_of(block) for block in configs.blocks.values())


def _workflow_inputs(text: str | None) -> set[str]:
    document = _yaml(text)
    if not isinstance(document, dict):
        return set()
    # YAML 1.1 reads the key `on` as True
    triggers = document.get("on", document.get(True))
    if not isinstance(triggers, dict) or not isinstance(triggers.get("workflow_dispatch"), dict):
        return set()
    inputs = triggers["workflow_dispatch"].get("inputs")
    return {str(name) for name in inputs} if isinstance(inputs, dict) else set()


def _depth_then_name(path: str) -> tuple[int, str]:
    return path.count("/"), path


def find_layout(paths: Iterable[str], read: Reader) -> Layout:
    """The layout of a repository whose files are `paths` (relative, `/`-separated), read through `read`."""
    paths = sorted(set(paths), key=_depth_then_name)
    notes: dict[str, list[str]] = {}
    names = {path: PurePosixPath(path).name.lower() for path in paths}
    yamls = [path for path in paths if names[path].endswith(YAML_SUFFIXES) and not path.startswith(".github/")]

    changelogs = [path for path in yamls if "changelog" in names[path]]
    changelog = next((path for path in changelogs if _is_changelog(read(path))), None)
    notes["changelog"] = [path for path in changelogs if path != changelog]

    codeowners = next((place for place in CODEOWNERS_PLACES if place in names), None)

    checklists = [path for path in paths if "checklist" in names[path] and names[path].endswith(".md")]
    # a translation beside it (PR_REVIEW_CHECKLIST_zh.md) is not the one the sign-off completes
    checklist = next((p for p in checklists if not re.search(r"[_.-](zh|cn|ja|ko)(_\w+)?\.md$", names[p])), None)
    notes["checklist"] = [path for path in checklists if path != checklist]

    master_configs = tuple(
        path for path in yamls if "master" in names[path] and _is_master_config(path, read(path))
    ) or tuple(path for path in yamls if path not in changelogs and _is_master_config(path, read(path)))
    runners = next(
        (
            path
            for path in yamls
            if PurePosixPath(path).stem.lower() == "runners" and master_config.read_runner_pools(read(path))
        ),
        None,
    )

    sweep_workflow = fork_workflow = None
    labels: list[str] = []
    for path in paths:
        if not (path.startswith(WORKFLOWS_DIR) and path.count("/") == 2 and names[path].endswith(YAML_SUFFIXES)):
            continue
        text = read(path)
        inputs = _workflow_inputs(text)
        if not SWEEP_SIGNATURE <= inputs:
            continue
        if "merge-sha" in inputs:
            fork_workflow = fork_workflow or PurePosixPath(path).name
        else:
            sweep_workflow = sweep_workflow or PurePosixPath(path).name
        for match in _LABEL_COMPARISON.finditer(text or ""):
            label = match.group(1) or match.group(2)
            if label not in labels and len(labels) < MAX_LABELS:
                labels.append(label)

    readme = next((path for path in paths if "/" not in path and names[path] in ("readme.md", "readme")), None)
    return Layout(
        changelog=changelog,
        codeowners=codeowners,
        checklist=checklist,
        master_configs=master_configs,
        runners=runners,
        sweep_workflow=sweep_workflow,
        fork_workflow=fork_workflow,
        labels=tuple(labels),
        readme=readme,
        notes={key: value for key, value in notes.items() if value},
    )


MAX_HEADINGS = 50  # headings of the checklist tried as the template's (each try reads the file once)
MAX_PHRASE = 200
_HEADING = re.compile(r"#{1,6}[ \t]+\S[^\n]{0,200}")


@dataclass(frozen=True)
class ChecklistFit:
    """How the review checklist fits the sign-off's settings: the heading its template is under (None: none found
    with checklist items in a fenced block), the template's sign-off phrase when it lacks the one given, and which
    of the given verified-item phrases its items hold."""

    heading: str | None
    items: int = 0
    phrase: str | None = None
    verified_found: tuple[str, ...] = ()


def checklist_fit(text: str, heading: str, phrase: str, verified: Iterable[str]) -> ChecklistFit:
    """The checklist `text` against the policy's `heading`, sign-off `phrase` and verified-item phrases."""
    template = checklists.template_items(text, heading)
    if isinstance(template, checklists.TemplateProblem):
        headings = [line.strip() for line in text.splitlines() if _HEADING.fullmatch(line.strip())][:MAX_HEADINGS]
        for other in headings:
            template = checklists.template_items(text, other)
            if not isinstance(template, checklists.TemplateProblem):
                heading = other
                break
        else:
            return ChecklistFit(heading=None)
    assert not isinstance(template, checklists.TemplateProblem)
    fields = [field.rstrip(":").strip() for field in template.fields]
    own = None
    if not any(phrase.casefold() in field.casefold() for field in fields):
        own = next((field for field in fields if field and len(field) <= MAX_PHRASE), None)
    # as the sign-off matches them (bot.rules.signoff): both normalised, ignoring case
    found = tuple(
        contains
        for contains in verified
        if any(checklists.normalise(contains).casefold() in item.normalised.casefold() for item in template.items)
    )
    return ChecklistFit(heading=heading, items=len(template.items), phrase=own, verified_found=found)


def benchmark_patterns(layout: Layout) -> list[str]:
    """The gitignore-style patterns of a benchmark PR's files: the top folder of the changelog and master configs
    (`/bench/`), or the files themselves when they sit at the top."""
    patterns: list[str] = []
    for path in [*([layout.changelog] if layout.changelog else []), *layout.master_configs]:
        top = path.split("/", 1)[0]
        pattern = f"/{top}/" if "/" in path else f"/{path}"
        if pattern not in patterns:
            patterns.append(pattern)
    return patterns
