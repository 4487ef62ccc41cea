"""The master configs: one block per config key (the names changelog entries list in `config-keys`), each
naming the runner pool its sweep runs on; and the runner pools with their runners.

Read from the base branch or a PR's head by the caller; parsed here, safely and with a size cap, into plain
data. Shared by every rule that asks which configs a PR touches, which a changelog entry names, and where
their sweeps run."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

import yaml

from bot.rules.changelog import loading

# The upstream files are 53 KB and 324 KB; eight times the larger is room to grow, and still parses in well under
# a second.
MAX_MASTER_CONFIG_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class MasterConfigs:
    """Every config key of the master config files, with its block and the file it came from.

    `problems` says, per file, why it was not read (too large, not YAML, not a mapping); a key defined in two
    files keeps the first file's block and is named in `problems` too."""

    blocks: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)
    problems: tuple[str, ...] = ()

    def keys(self) -> list[str]:
        return list(self.blocks)


def read_master_configs(texts: Mapping[str, str | None], *, max_bytes: int = MAX_MASTER_CONFIG_BYTES) -> MasterConfigs:
    """The config keys of the files `texts` holds (path -> text; None for a file that is not there)."""
    blocks: dict[str, Mapping[str, Any]] = {}
    sources: dict[str, str] = {}
    problems: list[str] = []
    for path, text in texts.items():
        if text is None:
            continue
        document = _mapping_of(path, text, max_bytes, problems)
        for key, block in document.items():
            if not isinstance(key, str) or not isinstance(block, dict):
                continue
            if key in blocks:
                problems.append(f"{path}: `{key}` is also defined in {sources[key]}")
                continue
            blocks[key] = block
            sources[key] = path
    return MasterConfigs(blocks=blocks, sources=sources, problems=tuple(problems))


def read_runner_pools(text: str | None, *, max_bytes: int = MAX_MASTER_CONFIG_BYTES) -> dict[str, int]:
    """Each runner pool under `labels:` with how many runners it has (so how many sweeps of it can run at once)."""
    if text is None:
        return {}
    labels = _mapping_of("runners", text, max_bytes, []).get("labels")
    if not isinstance(labels, dict):
        return {}
    return {str(pool): len(runners) for pool, runners in labels.items() if isinstance(runners, list)}


def _mapping_of(path: str, text: str, max_bytes: int, problems: list[str]) -> dict[Any, Any]:
    if len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        problems.append(f"{path}: larger than {max_bytes} bytes, not read")
        return {}
    try:
        document = yaml.load(text, Loader=loading.Loader)  # noqa: S506  the safe loader, recording duplicates
    except yaml.YAMLError as error:
        problems.append(f"{path}: not YAML ({type(error).__name__})")
        return {}
    if not isinstance(document, dict):
        problems.append(f"{path}: not a mapping of config keys")
        return {}
    return document


def keys_matching(pattern: str, keys: Iterable[str]) -> list[str]:
    """The keys a `config-keys` value names: itself, or every key its `*` and `?` wildcards match (case-sensitive,
    as the sweep generator matches them)."""
    if "*" not in pattern and "?" not in pattern and "[" not in pattern:
        return [key for key in keys if key == pattern]
    return [key for key in keys if fnmatchcase(key, pattern)]


def covered(key: str, patterns: Iterable[str]) -> bool:
    """Whether one of the `config-keys` values names `key`."""
    return any(keys_matching(pattern, (key,)) for pattern in patterns)


def pool_of(block: Mapping[str, Any]) -> str | None:
    """The runner pool a config's sweep runs on (its `runner`), or None when the block names none."""
    runner = block.get("runner")
    return runner if isinstance(runner, str) and runner else None


def changed_keys(base: MasterConfigs, head: MasterConfigs) -> list[str]:
    """The config keys whose block the head adds, removes or changes, in the head's order then the removed ones.

    Blocks are compared as parsed values: a comment, a reordered mapping or a reflowed line is no change."""
    changed = [key for key, block in head.blocks.items() if base.blocks.get(key) != block]
    changed += [key for key in base.blocks if key not in head.blocks]
    return changed


def pools_of(keys: Iterable[str], configs: MasterConfigs) -> dict[str, list[str]]:
    """Runner pool -> the keys (of `keys`, in order) whose sweeps run on it; keys without a pool are left out."""
    pools: dict[str, list[str]] = {}
    for key in keys:
        block = configs.blocks.get(key)
        pool = pool_of(block) if block is not None else None
        if pool is not None:
            pools.setdefault(pool, []).append(key)
    return pools
