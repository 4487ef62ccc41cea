"""The house's import rules (pyproject `[tool.importlinter]`, DEVELOPERS.md "Rooms"), checked by import-linter."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """import-linter over the tree at `root`, in a process of its own: it sets up logging and imports the
    packages it checks, neither of which may leak into the tests that run after this file."""
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from importlinter.cli import lint_imports; "
            "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True, no_logo=True))",
        ],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_every_contract_holds():
    """Rooms import downwards only, rules are pure, no cycles (TYPE_CHECKING imports included), no feature
    imports another: one broken import anywhere turns this red and the output names it."""
    done = lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_type_checking_imports_count():
    """A cycle hidden behind `if TYPE_CHECKING:` is still a cycle."""
    assert (
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["exclude_type_checking_imports"]
        is False
    )


def test_the_layers_contract_names_every_room_and_the_readme_describes_each():
    layers = next(c for c in CONTRACTS if c["type"] == "layers")["layers"]
    rooms = {name.strip() for layer in layers for name in layer.split("|")}
    on_disk = {f"bot.{p.name}" for p in (ROOT / "bot").iterdir() if (p / "__init__.py").is_file()} - {"bot.testing"}
    assert on_disk <= rooms, f"rooms missing from the layers contract: {sorted(on_disk - rooms)}"
    layout = (ROOT / "README.md").read_text().split("## Layout", 1)[1].split("\n## ", 1)[0]
    described = set(re.findall(r"^\| `([a-z_/]+)/` \|", layout, re.M))
    for room in rooms:
        assert room.replace(".", "/") in described, f"README's layout table has no row for {room}"


def test_a_broken_rule_is_caught(tmp_path):
    """The contract can fail: in a copy of the tree where a rule imports the GitHub client, lint-imports (in a
    process of its own, so this test's imports stay this checkout's) names the import and exits non-zero."""
    for name in ("bot", "handlers"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    with (tmp_path / "bot" / "rules" / "markers.py").open("a") as f:
        f.write("\nfrom bot.github.client import get_or_none  # noqa: E402,F401\n")
    done = lint_imports(tmp_path)
    assert done.returncode != 0 and "bot.rules.markers -> bot.github.client" in done.stdout, done.stdout
