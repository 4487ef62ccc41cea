"""A throwaway PostgreSQL server for the tests: `initdb` and `pg_ctl` in a temporary directory.

`postgres_url` (session scope) starts one server for the whole run: trust authentication, a free port on
127.0.0.1 only, its unix socket inside the temporary directory, fsync off (nothing here must survive a power
cut), and stops it at the end. `postgres_db` gives a test a database of its own on that server.

Where the binaries cannot be found the tests that ask for a server skip, saying why; when `CI` is set they
fail instead: CI must run them. Import the fixtures into a test module:
`from postgres import postgres_db, postgres_url  # noqa: F401`.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest

SUPERUSER = "sweepbot"
START_TIMEOUT = 60  # seconds pg_ctl waits for the server to accept connections
# initdb and pg_ctl refuse to run as root; as root (CI here) they run as one of these users
UNPRIVILEGED = ("postgres", "nobody")


@dataclass
class Server:
    root: Path
    port: int
    initdb: str
    pg_ctl: str
    user: str | None  # the unprivileged user the server runs as, when the tests run as root

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def url(self) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres"

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        user: int | None = None  # None: subprocess.run's defaults, run as this process's user
        group: int | None = None
        extra_groups: list[int] | None = None
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            user, group, extra_groups = entry.pw_uid, entry.pw_gid, []
        return subprocess.run(
            args,
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT + 30,
            env={**os.environ, "LC_ALL": "C", "TZ": "UTC"},
            user=user,
            group=group,
            extra_groups=extra_groups,
        )

    def start(self) -> None:
        self.run(
            self.initdb,
            "-D",
            str(self.data),
            "-U",
            SUPERUSER,
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
            "--no-instructions",
        ).check_returncode()
        options = self.options()
        (self.root / "sock").mkdir()
        if self.user is not None:
            shutil.chown(self.root / "sock", self.user)
        started = self.run(
            self.pg_ctl,
            "-D",
            str(self.data),
            "-l",
            str(self.root / "server.log"),
            "-w",
            "-t",
            str(START_TIMEOUT),
            "-o",
            options,
            "start",
        )
        if started.returncode != 0:
            log = (self.root / "server.log").read_text(errors="replace") if (self.root / "server.log").exists() else ""
            raise RuntimeError(f"pg_ctl start failed ({started.returncode}): {started.stderr}\n{log[-4000:]}")

    def options(self) -> str:
        return (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories={self.root / 'sock'}"
            " -c fsync=off -c full_page_writes=off -c max_connections=200"
        )

    def restart(self, while_down: Callable[[], None]) -> None:
        """Stop the server as a crash would (immediate), run `while_down`, start it again on the same data."""
        self.run(self.pg_ctl, "-D", str(self.data), "-m", "immediate", "-w", "stop").check_returncode()
        try:
            while_down()
        finally:
            self.run(
                self.pg_ctl,
                "-D",
                str(self.data),
                "-l",
                str(self.root / "server.log"),
                "-w",
                "-t",
                str(START_TIMEOUT),
                "-o",
                self.options(),
                "start",
            ).check_returncode()

    def stop(self) -> None:
        if self.data.exists():
            self.run(self.pg_ctl, "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)


def find_binaries() -> tuple[str, str] | str:
    """(initdb, pg_ctl), or why they cannot be had. PATH first, then Debian's /usr/lib/postgresql/N/bin."""
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb and pg_ctl:
        return initdb, pg_ctl
    versions = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    for found in reversed(versions):
        bindir = Path(found).parent
        if (bindir / "pg_ctl").exists():
            return str(bindir / "initdb"), str(bindir / "pg_ctl")
    return (
        "PostgreSQL's server binaries (initdb, pg_ctl) are not on PATH nor in /usr/lib/postgresql/*/bin;"
        " install them (Debian: apt-get install postgresql) to run the PostgreSQL journal tests"
    )


def unprivileged_user() -> str | None:
    if os.geteuid() != 0:
        return None
    for name in UNPRIVILEGED:
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("running as root, and no unprivileged user (postgres, nobody) to run PostgreSQL as")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def unavailable(reason: str) -> NoReturn:
    """Skip outside CI; in CI (the variable CI is set) a test that needs PostgreSQL must not skip."""
    if os.environ.get("CI"):
        pytest.fail(f"CI is set, so the PostgreSQL tests must run: {reason}", pytrace=False)
    pytest.skip(reason)


_server: Server | None = None  # one per test run, shared by every module that imports the fixture


def _start() -> Server:
    found = find_binaries()
    if isinstance(found, str):
        unavailable(found)
    initdb, pg_ctl = found
    user = unprivileged_user()
    problem = None
    for _ in range(3):  # the free port can be taken between finding it and the server binding it
        root = Path(tempfile.mkdtemp(prefix="sweepbot-pg-"))
        if user is not None:
            shutil.chown(root, user)
        server = Server(root, free_port(), initdb, pg_ctl, user)
        try:
            server.start()
            return server
        except (RuntimeError, subprocess.SubprocessError, OSError) as exc:
            problem = exc
            server.stop()
    raise RuntimeError(f"could not start a test PostgreSQL: {problem}")


def restart_server(while_down: Callable[[], None]) -> None:
    """Restart the test server (started by `postgres_url`), calling `while_down` while it is stopped."""
    assert _server is not None, "postgres_url has not started a server"
    _server.restart(while_down)


@pytest.fixture(scope="session")
def postgres_url():
    """The URL of a throwaway PostgreSQL server (superuser `sweepbot`, database `postgres`)."""
    global _server
    if _server is None:
        _server = _start()
    yield _server.url
    if _server is not None:  # the session is ending: every module that asked is done with it
        _server.stop()
        _server = None


@pytest.fixture
def postgres_db(postgres_url):
    """A fresh, empty database on the test server for one test; its URL. Dropped afterwards."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield postgres_url.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
