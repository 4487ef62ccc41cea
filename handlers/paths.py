"""Path patterns of the policy (gitignore style, as in CODEOWNERS): which changed files a rule matches."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

import pathspec


@lru_cache(maxsize=256)
def _spec(patterns: tuple[str, ...]) -> pathspec.PathSpec:
    return pathspec.PathSpec.from_lines("gitignore", patterns)


def matching(files: Iterable[str], patterns: Iterable[str]) -> list[str]:
    spec = _spec(tuple(patterns))
    return [f for f in files if spec.match_file(f)]


def any_match(files: Iterable[str], patterns: Iterable[str]) -> bool:
    spec = _spec(tuple(patterns))
    return any(spec.match_file(f) for f in files)
