"""Opening the journal: SWEEPBOT_DB picks the backend, and a target that cannot be opened at start is one clear
error that names it without its password (the CLI and `serve` exit 2 with it)."""

from __future__ import annotations

import socket
import sqlite3

import pytest

from bot.app import cli
from bot.core.config import Settings
from bot.delivery.journal import JournalUnavailable, safe_target
from bot.delivery.journal_open import open_journal
from bot.delivery.journal_sqlite import MIGRATIONS as SQLITE_MIGRATIONS
from bot.delivery.journal_sqlite import SqliteJournal

PASSWORD = "s3cr3t-pa55"


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then let go)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def unreachable() -> str:
    return f"postgresql://bot:{PASSWORD}@127.0.0.1:{closed_port()}/sweepbot?connect_timeout=2"


@pytest.mark.parametrize(
    "url, shown",
    [
        ("postgresql://bot:pw@db.internal:5432/sweepbot", "postgresql://bot:***@db.internal:5432/sweepbot"),
        (
            "postgres://bot@db/sweepbot?sslmode=require&password=pw",
            "postgres://bot@db/sweepbot?sslmode=require&password=***",
        ),
        ("postgresql://bot:p%40ss@10.0.0.1/x", "postgresql://bot:***@10.0.0.1/x"),
        ("postgresql:///sweepbot?host=/run/postgresql", "postgresql:///sweepbot?host=/run/postgresql"),
        ("./sweepbot.db", "./sweepbot.db"),
    ],
)
def test_a_target_is_shown_without_its_password(url, shown):
    assert safe_target(url) == shown


async def test_a_path_opens_sqlite(tmp_path):
    journal = open_journal(str(tmp_path / "j.db"))
    try:
        assert isinstance(journal, SqliteJournal) and journal.where == str(tmp_path / "j.db")
        assert await journal.counts() == {}
    finally:
        journal.close()


def test_an_sqlite_file_that_cannot_be_opened_is_a_clear_error(tmp_path):
    target = str(tmp_path / "no-such-dir" / "j.db")
    with pytest.raises(JournalUnavailable, match="cannot open the journal") as caught:
        open_journal(target)
    assert target in str(caught.value)


def test_an_older_sweepbot_refuses_an_sqlite_journal_a_newer_one_migrated(tmp_path):
    """A rollback onto a journal at a newer schema version stops at start, naming both versions and the file
    (migrate used to return quietly when user_version was past its own migrations)."""
    path = tmp_path / "sweepbot.db"
    open_journal(str(path)).close()
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version={len(SQLITE_MIGRATIONS) + 1}")
    with pytest.raises(JournalUnavailable, match=f"{path}.*schema version {len(SQLITE_MIGRATIONS) + 1}, newer"):
        open_journal(str(path))


def test_an_unreachable_postgresql_names_the_url_without_its_password():
    url = unreachable()
    with pytest.raises(JournalUnavailable) as caught:
        open_journal(url)
    message = str(caught.value)
    assert PASSWORD not in message
    assert safe_target(url) in message and "bot:***@127.0.0.1" in message
    assert "refused" in message  # and why


def test_a_malformed_postgresql_url_is_a_clear_error_without_its_password():
    with pytest.raises(JournalUnavailable) as caught:
        open_journal(f"postgresql://bot:{PASSWORD}@127.0.0.1:notaport/sweepbot")
    assert PASSWORD not in str(caught.value) and "cannot open the journal at postgresql://bot:***@" in str(caught.value)


async def test_the_cli_and_serve_exit_2_on_an_unreachable_database(capsys):
    settings = Settings.from_env({"SWEEPBOT_DB": unreachable()}, dotenv=False)
    assert await cli.deliveries(settings, failed_only=False, limit=5) == 2
    assert await cli.redeliver(settings, "abc") == 2
    assert await cli.serve(settings) == 2
    seen = capsys.readouterr()
    assert PASSWORD not in seen.out + seen.err
    assert seen.err.count("sweepbot: cannot open the journal at postgresql://bot:***@127.0.0.1:") == 3
