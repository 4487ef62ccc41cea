"""What only the PostgreSQL journal has: migrations in schema_version, run once even by replicas starting together;
a connection that breaks is opened again (the CLI on PostgreSQL: tests/test_cli.py). And the test server's own rules: it
skips outside CI when PostgreSQL is missing, and fails in CI. The shared behaviour is tests/test_journal_contract.py."""

from __future__ import annotations

import threading

import postgres
import psycopg
import pytest
from postgres import postgres_db, postgres_url  # noqa: F401

from bot.delivery.journal import JournalUnavailable, NewDelivery
from bot.delivery.journal_open import open_journal
from bot.delivery.journal_pg import MIGRATIONS, PgJournal


def new(i: int) -> NewDelivery:
    return NewDelivery(f"d{i}", "pull_request", "opened", "acme/repo", i, 1, b"{}")


def version(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT version FROM schema_version").fetchone()
    assert row is not None, "schema_version has no row"
    return row[0]


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
    monkeypatch.setattr(
        postgres.glob, "glob", lambda pattern: ["/usr/lib/postgresql/9/bin/initdb", "/usr/lib/postgresql/15/bin/initdb"]
    )
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


def test_an_older_sweepbot_refuses_a_database_a_newer_one_migrated(postgres_db):  # noqa: F811
    """A rollback onto a database at a newer schema version stops at start instead of running on rows it does not
    know (migrate used to return quietly when the version was past its own migrations)."""
    open_journal(postgres_db).close()
    with psycopg.connect(postgres_db) as conn:
        conn.execute("UPDATE schema_version SET version=%s", (len(MIGRATIONS) + 1,))
    with pytest.raises(
        JournalUnavailable, match=f"schema version {len(MIGRATIONS) + 1}, newer than this sweepbot's {len(MIGRATIONS)}"
    ):
        open_journal(postgres_db)


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
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'sweepbot'")
        with pytest.raises(psycopg.OperationalError):  # the operation that found it broken hears of it
            await journal.record(new(2))
        assert journal.last_error is not None
        assert await journal.record(new(3)) is not None  # and the next one connects again
        assert journal.last_error is None
        assert await journal.record(new(2)) is not None  # nothing of the failed one was kept
        assert await journal.counts() == {"queued": 3}
    finally:
        journal.close()
