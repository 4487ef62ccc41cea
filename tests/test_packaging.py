"""Packaging: a wheel built from this tree carries app.yaml, every template and every message schema, and the
installed copy runs.

Regression: `pip install .` (not editable) used to give a `sweepbot` that failed from any other directory,
because app.yaml and templates/ sit at the repository's top level and were found beside the source tree
(`Path(__file__).parent.parent`), which an installed copy does not have.

The wheel is built from a copy of the working tree without build isolation (no download), installed with
`--no-deps --no-index` into a fresh venv that borrows its dependencies from this interpreter's
site-packages, and run from an empty directory.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest
from harness import CREDENTIALS, free_port

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "pull_request.opened.json"
NOT_SOURCE = shutil.ignore_patterns(
    ".git",
    ".venv",
    "venv",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".pytest_cache",
    "*.db",
    "*.db-wal",
    "*.db-shm",
    ".env",
)


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180, **kw)
    assert done.returncode == 0, f"{' '.join(map(str, cmd))} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


def clean_env(**extra: str) -> dict[str, str]:
    """The environment minus anything that could make the installed copy find this checkout or go live."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in CREDENTIALS
        and k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")
        and not k.startswith("SWEEPBOT_")
    }
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("build")
    source = work / "src"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCE)
    dist = work / "dist"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-build-isolation",
            "--no-deps",
            "--no-index",
            "--quiet",
            "-w",
            str(dist),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, (
        "building the wheel failed (the test environment needs setuptools>=70.1: pip install -e '.[test]'):\n"
        + done.stdout
        + done.stderr
    )
    (built,) = dist.glob("sweepbot-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh venv with the wheel installed (not editable); its dependencies come from this interpreter's."""
    venv = tmp_path_factory.mktemp("venv") / "v"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    purelib = Path(
        run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], env=clean_env()
        ).stdout.strip()
    )
    # A plain path line: the directory is put on sys.path but its own .pth files (this checkout's editable
    # finder among them) are not run, so `bot` can only come from the wheel.
    deps = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    (purelib / "zz_sweepbot_test_deps.pth").write_text("".join(f"{d}\n" for d in deps))
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "--no-index",
            "--quiet",
            str(wheel),
        ],
        env=clean_env(),
    )
    return venv


def test_wheel_holds_app_yaml_and_every_template(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    templates = sorted(p.name for p in (ROOT / "templates").iterdir() if p.is_file())
    assert templates, "no templates in the repository"
    for name in templates:
        assert f"sweepbot_templates/{name}" in names, f"templates/{name} is missing from the wheel"
    assert {n for n in names if n.startswith("sweepbot_templates/")} == {f"sweepbot_templates/{t}" for t in templates}
    # the repository's top level is mapped onto sweepbot_app: app.yaml must be all it contributes
    assert {n for n in names if n.startswith("sweepbot_app/")} == {"sweepbot_app/app.yaml"}
    with zipfile.ZipFile(wheel) as zf:
        assert zf.read("sweepbot_app/app.yaml") == (ROOT / "app.yaml").read_bytes()
        assert zf.read("sweepbot_templates/layout.md.j2") == (ROOT / "templates" / "layout.md.j2").read_bytes()


def test_wheel_holds_every_message_schema(wheel):
    """The bot validates callbacks with examples/schemas/ at run time: the wheel carries them, and nothing else
    of examples/ (payloads and workflows are documentation)."""
    names = set(zipfile.ZipFile(wheel).namelist())
    schemas = sorted(p.name for p in (ROOT / "examples" / "schemas").glob("*.schema.json"))
    assert "definitions.schema.json" in schemas and "signoff-judged.callback.schema.json" in schemas
    assert {n for n in names if n.startswith("sweepbot_schemas/")} == {f"sweepbot_schemas/{s}" for s in schemas}
    with zipfile.ZipFile(wheel) as zf:
        for name in schemas:
            assert zf.read(f"sweepbot_schemas/{name}") == (ROOT / "examples" / "schemas" / name).read_bytes()


def test_wheel_holds_every_module_of_every_package(wheel):
    """pyproject.toml lists the packages one by one (the data packages rule out automatic discovery), so a new
    subpackage is easy to leave out of the wheel; the editable install would not show it."""
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = sorted(
        m.relative_to(ROOT).as_posix() for package in ("bot", "handlers") for m in (ROOT / package).glob("**/*.py")
    )
    assert "bot/app/cli.py" in modules
    missing = [m for m in modules if m not in names]
    assert not missing, f"not in the wheel (add the package to [tool.setuptools] packages): {missing}"


def test_installed_copy_uses_its_own_files_not_the_checkout(installed, tmp_path):
    probe = (
        "import json, bot, bot.core.config, bot.core.templates, bot.rules.message_schemas as m;"
        "m.validator('ingest-completed.callback');"
        "print(json.dumps([bot.__file__, str(bot.core.config.APP_YAML), str(bot.core.templates.DEFAULT_DIRECTORY),"
        " str(m.schema_dir())]))"
    )
    found = json.loads(run([str(installed / "bin" / "python"), "-c", probe], cwd=tmp_path, env=clean_env()).stdout)
    for path in found:
        assert Path(path).resolve().is_relative_to(installed.resolve()), path
    assert Path(found[1]).name == "app.yaml" and Path(found[1]).is_file()
    assert Path(found[2]).name == "sweepbot_templates" and (Path(found[2]) / "layout.md.j2").is_file()
    assert Path(found[3]).name == "sweepbot_schemas" and (Path(found[3]) / "definitions.schema.json").is_file()


def test_installed_receive_dry_run_prints_the_welcome_from_an_empty_directory(installed, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    done = run(
        [str(installed / "bin" / "sweepbot"), "receive", "-e", "pull_request", "-p", str(EXAMPLE), "--dry-run"],
        cwd=empty,
        env=clean_env(),
    )
    assert "would comment[welcome] on #1" in done.stdout
    assert "    | ## 中文" in done.stdout  # the rendered bilingual body, from the installed templates
    assert "action(s) planned, none made" in done.stdout
    assert list(empty.iterdir()) == []  # a dry run leaves nothing behind


def test_installed_serve_starts_the_sandbox_from_an_empty_directory(installed, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    port = free_port()
    log = tmp_path / "serve.out"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [str(installed / "bin" / "sweepbot"), "serve"],
            cwd=empty,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=clean_env(HOST="127.0.0.1", PORT=str(port), TMPDIR=str(tmp_path)),
        )  # its transcript
    try:
        report, deadline = None, time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as resp:
                    report = json.loads(resp.read())
                if "GitHub write: POST /repos/demo-org/InferenceX/issues/1/comments -> 201" in log.read_text():
                    break
            except OSError:
                pass
            time.sleep(0.2)
        text = log.read_text()
        assert proc.poll() is None, f"sweepbot serve exited {proc.returncode}:\n{text}"
        assert report is not None and report["ok"] is True, text
        assert "sweepbot sandbox" in text
        # the demo delivery went through the installed handlers and templates to the in-memory GitHub
        assert "GitHub write: POST /repos/demo-org/InferenceX/issues/1/comments -> 201" in text, text
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
    assert code == 0, log.read_text()
