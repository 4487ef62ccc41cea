"""The deployment files in deploy/: the container image (hadolint-clean, multi-stage, the wheel only, not root, a
HEALTHCHECK on /livez), the systemd unit (`systemd-analyze verify` where systemd is), and the compose file (it
parses, and every variable it gives the bot is one the bot reads, its database URL the database it starts)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from bot.app import cli
from bot.core.config import Settings
from bot.delivery.journal import is_postgres

TOP = Path(__file__).resolve().parent.parent
DEPLOY = TOP / "deploy"
BIN = Path(sys.executable).parent
READ = set(cli.ENV_LINES)  # every variable `sweepbot serve` reads (tests/test_cli.py keeps the list exact)


def run_tool(*argv: str) -> subprocess.CompletedProcess:
    tool = BIN / argv[0]
    if not tool.exists():
        pytest.fail(f"{argv[0]} is not installed: it is in the test extra (pip install -e '.[test]')")
    return subprocess.run([str(tool), *argv[1:]], capture_output=True, text=True, timeout=120)


# -- the container image -----------------------------------------------------------------------------------


def instructions(text: str) -> list[tuple[str, str]]:
    """The Dockerfile's instructions, (KEYWORD, arguments), continuation lines joined and comments left out."""
    joined = re.sub(r"\\\n", " ", "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")))
    found = []
    for line in joined.splitlines():
        if line.strip():
            keyword, _, rest = line.strip().partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def stages(text: str) -> list[list[tuple[str, str]]]:
    split: list[list[tuple[str, str]]] = []
    for keyword, rest in instructions(text):
        if keyword == "FROM":
            split.append([])
        split[-1].append((keyword, rest))
    return split


DOCKERFILE = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "change, clean",
    [
        ((), True),
        (("USER 10001:10001", "USER root"), False),  # DL3002: the last USER is root
        (("FROM python:3.11-slim-bookworm AS build", "FROM python AS build"), False),  # DL3006: an untagged image
    ],
)
def test_the_image_definition_is_hadolint_clean(tmp_path, change, clean):
    text = DOCKERFILE.replace(*change) if change else DOCKERFILE
    assert text != DOCKERFILE or not change
    (tmp_path / "Dockerfile").write_text(text, encoding="utf-8")
    done = run_tool("hadolint", "--no-color", "--failure-threshold", "info", str(tmp_path / "Dockerfile"))
    assert (done.returncode == 0) is clean, done.stdout + done.stderr


def test_the_image_is_built_in_two_stages_and_runs_the_wheel_only_not_as_root():
    build, image = stages(DOCKERFILE)
    assert build[0] == ("FROM", "python:3.11-slim-bookworm AS build")
    assert any(k == "RUN" and "pip wheel" in rest for k, rest in build)
    # the image takes nothing from the context: only what the build stage made, and installs the wheel from it
    copies = [rest for k, rest in image if k in ("COPY", "ADD")]
    assert copies == ["--from=build /dist/ /tmp/dist/"]
    assert any(k == "RUN" and "pip install --no-cache-dir /tmp/dist/*.whl" in rest for k, rest in image)
    (user,) = [rest for k, rest in image if k == "USER"]
    assert re.fullmatch(r"[1-9]\d*:[1-9]\d*", user), "numeric and not 0: a runtime can tell it is not root"
    (health,) = [rest for k, rest in image if k == "HEALTHCHECK"]
    assert "/livez" in health and "PORT" in health
    assert ("ENTRYPOINT", '["sweepbot"]') in image and ("CMD", '["serve"]') in image
    names = {item.split("=", 1)[0] for k, rest in image if k == "ENV" for item in shlex.split(rest)}
    assert names - {"PYTHONUNBUFFERED"} <= READ and {"HOST", "PORT", "SWEEPBOT_DB"} <= names


def test_the_build_stage_has_what_the_wheel_needs(tmp_path):
    """The files the build stage copies, and only those, build a wheel with the code and its data (app.yaml, the
    templates, the message schemas): what `docker build` would make, without Docker."""
    (build, _) = stages(DOCKERFILE)
    source = tmp_path / "src"
    source.mkdir()
    for keyword, rest in build:
        if keyword != "COPY":
            continue
        *paths, target = rest.split()
        for path in paths:
            origin, destination = TOP / path, source / (path if target != "./" else Path(path).name)
            if origin.is_dir():
                shutil.copytree(origin, destination, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy(origin, destination)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), "."],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = tmp_path.glob("sweepbot-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "sweepbot_app/app.yaml" in names and "bot/app/cli.py" in names and "handlers/registry.py" in names
    assert any(n.startswith("sweepbot_templates/") for n in names)
    assert any(n.startswith("sweepbot_schemas/") for n in names)


def test_the_build_context_lets_through_what_the_build_stage_copies():
    ignore = (TOP / ".dockerignore").read_text(encoding="utf-8").splitlines()
    allowed = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    (build, _) = stages(DOCKERFILE)
    copied = {path.rstrip("/") for k, rest in build if k == "COPY" for path in rest.split()[:-1]}
    assert copied == allowed and "**" in ignore


# -- the systemd unit --------------------------------------------------------------------------------------

UNIT = (DEPLOY / "sweepbot.service").read_text(encoding="utf-8")
INSTALLED = "/opt/sweepbot/bin/sweepbot"


@pytest.mark.parametrize(
    "change, clean",
    [
        ((), True),
        (("Restart=on-failure", "Restart=sometimes"), False),
        (("Type=exec", "Tipe=exec"), False),
    ],
)
def test_the_unit_passes_systemd_analyze_verify(tmp_path, change, clean):
    tool = shutil.which("systemd-analyze")
    if tool is None:
        reason = "systemd-analyze is not installed here (no systemd): the unit is verified where it is"
        if os.environ.get("CI"):  # .ci/run installs it where it can: CI must verify the unit
            pytest.fail(f"CI is set, so the unit must be verified: {reason}", pytrace=False)
        pytest.skip(reason)
    # the one change: ExecStart names the sweepbot this test runs with, since verify checks that it exists
    text = UNIT.replace(INSTALLED, str(BIN / "sweepbot"))
    text = text.replace(*change) if change else text
    assert str(BIN / "sweepbot") in text and (not change or change[1] in text)
    unit = tmp_path / "sweepbot.service"
    unit.write_text(text, encoding="utf-8")
    done = subprocess.run([tool, "verify", str(unit)], capture_output=True, text=True, timeout=120)
    # verify exits 0 on an unknown key or a bad value and only says so: any output is a finding
    assert (done.returncode == 0 and not (done.stdout + done.stderr).strip()) is clean, done.stdout + done.stderr


def unit_values(key: str) -> list[str]:
    return [line.split("=", 1)[1] for line in UNIT.splitlines() if line.startswith(f"{key}=")]


def test_the_unit_serves_and_stays_down_on_a_bad_setting():
    assert unit_values("ExecStart") == [f"{INSTALLED} serve"]
    # `sweepbot serve` exits 2 on a bad setting or credential: restarting it would only repeat that
    assert unit_values("RestartPreventExitStatus") == ["2"]
    assert {value.split("=", 1)[0] for value in unit_values("Environment")} <= READ
    assert unit_values("User") == ["sweepbot"] and unit_values("NoNewPrivileges") == ["yes"]


# -- the compose file --------------------------------------------------------------------------------------

COMPOSE = yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))


def interpolated(value: str, env: dict[str, str]) -> str:
    """Compose's `${NAME}`, `${NAME:?message}` and `${NAME:-default}` with `env`."""
    return re.sub(r"\$\{([A-Z_]+)(?::[?-]([^}]*))?\}", lambda m: env.get(m.group(1), m.group(2) or ""), value)


def test_compose_gives_the_bot_only_variables_it_reads():
    bot = COMPOSE["services"]["bot"]
    assert set(bot["environment"]) <= READ
    assert (DEPLOY / bot["build"]["context"] / bot["build"]["dockerfile"]).resolve() == DEPLOY / "Dockerfile"


def test_compose_points_the_bot_at_the_database_it_starts():
    services = COMPOSE["services"]
    bot, db = services["bot"], services["db"]
    env = {"POSTGRES_PASSWORD": "s3cret"}
    given = {name: interpolated(str(value), env) for name, value in bot["environment"].items()}
    settings = Settings.from_env(given, dotenv=False)
    assert is_postgres(settings.db_path) and settings.host == "0.0.0.0"
    url = urlsplit(settings.db_path)
    database = {name: interpolated(str(value), env) for name, value in db["environment"].items()}
    assert (url.hostname, url.username, url.password, url.path.lstrip("/")) == (
        "db",
        database["POSTGRES_USER"],
        database["POSTGRES_PASSWORD"],
        database["POSTGRES_DB"],
    )
    assert bot["depends_on"]["db"]["condition"] == "service_healthy" and "pg_isready" in str(db["healthcheck"])
    (published,) = bot["ports"]
    assert published.rsplit(":", 1)[1] == str(settings.port) and published.startswith("127.0.0.1:")
