"""What only the PostgreSQL journal has: migrations in schema_version, run once even by replicas starting together;
a connection that breaks is opened again; the CLI against PostgreSQL. And the test server's own rules: it skips
outside CI when PostgreSQL is missing, and fails in CI. The shared behaviour is tests/test_journal_contract.py."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import psycopg
import pytest

import postgres
from bot import cli
from bot.config import Settings
from bot.journal import FAILED, JournalUnavailable, NewDelivery, open_journal
from bot.journal_pg import MIGRATIONS, PgJournal
from postgres import postgres_db, postgres_url  # noqa: F401

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "pull_request.opened.json"


def new(i: int) -> NewDelivery:
    return NewDelivery(f"d{i}", "pull_request", "opened", "acme/repo", i, 1, b"{}")


def version(url: str) -> int:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT version FROM schema_version").fetchone()[0]


# -- the test server ---------------------------------------------------------------------------


def test_missing_postgresql_skips_outside_ci_and_fails_in_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no server here"):
        postgres.unavailable("no server here")
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match="CI is set, so the PostgreSQL tests must run: no server here"):
        postgres.unavailable("no server here")


def test_the_binaries_are_looked_for_on_path_then_in_debians_directory(monkeypatch):
    monkeypatch.setattr(postgres.shutil, "which", lambda name: None)
    monkeypatch.setattr(postgres.glob, "glob", lambda pattern: [])
    assert "not on PATH nor in /usr/lib/postgresql/*/bin" in postgres.find_binaries()
    monkeypatch.setattr(postgres.glob, "glob", lambda pattern: ["/usr/lib/postgresql/9/bin/initdb",
                                                                "/usr/lib/postgresql/15/bin/initdb"])
    monkeypatch.setattr(postgres.Path, "exists", lambda self: True)
    assert postgres.find_binaries() == ("/usr/lib/postgresql/15/bin/initdb", "/usr/lib/postgresql/15/bin/pg_ctl")


def test_the_server_listens_on_loopback_without_fsync(postgres_url):  # noqa: F811
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SHOW listen_addresses").fetchone()[0] == "127.0.0.1"
        assert conn.execute("SHOW fsync").fetchone()[0] == "off"


# -- migrations ----------------------------------------------------------------------------------


async def test_migrations_run_at_start_once(postgres_db):  # noqa: F811
    journal = open_journal(postgres_db)
    try:
        assert isinstance(journal, PgJournal) and journal.schema_version == len(MIGRATIONS)
        await journal.record(new(1))
    finally:
        journal.close()
    assert version(postgres_db) == len(MIGRATIONS)
    again = open_journal(postgres_db)  # nothing to apply: the rows are kept
    try:
        assert (await again.get("d1")).status == "queued"
    finally:
        again.close()
    assert version(postgres_db) == len(MIGRATIONS)


def test_replicas_starting_together_migrate_once(postgres_db):  # noqa: F811
    opened, errors = [], []

    def start() -> None:
        try:
            opened.append(PgJournal(postgres_db))
        except Exception as exc:  # pragma: no cover - the failure the test looks for
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for journal in opened:
        journal.close()
    assert errors == [] and len(opened) == 4
    assert version(postgres_db) == len(MIGRATIONS)


def test_a_database_that_does_not_exist_is_named_without_the_password(postgres_url):  # noqa: F811
    url = postgres_url.replace("sweepbot@", "sweepbot:hunter2-pw@").rsplit("/", 1)[0] + "/no_such_db"
    with pytest.raises(JournalUnavailable) as caught:
        open_journal(url)
    message = str(caught.value)
    assert "hunter2-pw" not in message and "sweepbot:***@127.0.0.1" in message
    assert 'database "no_such_db" does not exist' in message


# -- the connection breaks --------------------------------------------------------------------------


async def test_a_broken_connection_is_opened_again_by_the_next_operation(postgres_db):  # noqa: F811
    journal = open_journal(postgres_db)
    try:
        await journal.record(new(1))
        with psycopg.connect(postgres_db, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                          " WHERE application_name = 'sweepbot'")
        with pytest.raises(psycopg.OperationalError):  # the operation that found it broken hears of it
            await journal.record(new(2))
        assert journal.last_error is not None
        assert await journal.record(new(3)) is not None  # and the next one connects again
        assert journal.last_error is None
        assert await journal.record(new(2)) is not None  # nothing of the failed one was kept
        assert await journal.counts() == {"queued": 3}
    finally:
        journal.close()


# -- the CLI against PostgreSQL ---------------------------------------------------------------------


async def test_deliveries_and_redeliver_work_against_postgresql(postgres_db, capsys):  # noqa: F811
    settings = Settings.from_env({"SWEEPBOT_DB": postgres_db}, dotenv=False)
    journal = open_journal(settings.db_path)
    payload = json.loads(EXAMPLE.read_text())
    seq = await journal.record(NewDelivery("abc-1", "pull_request", "opened", "demo-org/InferenceX", 1, 1,
                                           json.dumps(payload).encode()))
    await journal.begin(seq)
    await journal.finish(seq, FAILED, "GitHubBroken: 502")
    journal.close()

    assert await cli.deliveries(settings, failed_only=True, limit=10) == 0
    listing = capsys.readouterr().out
    assert "abc-1" in listing and "error: GitHubBroken: 502" in listing and "failed 1" in listing

    assert await cli.redeliver(settings, "abc-1") == 0
    assert "delivery abc-1 done (attempt 2)" in capsys.readouterr().out
    journal = open_journal(settings.db_path)
    row = await journal.get("abc-1")
    journal.close()
    assert (row.status, row.attempts, row.error) == ("done", 2, None)

    assert await cli.redeliver(settings, "nope") == 2
    assert f"no delivery 'nope' in {postgres_db}" in capsys.readouterr().err

