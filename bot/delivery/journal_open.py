"""Opening the journal that SWEEPBOT_DB names: PostgreSQL for a `postgresql://` URL, else an SQLite file.

The one place that knows both backends, so that neither imports the other.
"""

from __future__ import annotations

from bot.delivery.journal import JournalBackend, is_postgres
from bot.delivery.journal_sqlite import SqliteJournal


def open_journal(target: str, *, intake: bool = False) -> JournalBackend:
    """The journal at `target` (SWEEPBOT_DB): PostgreSQL for a postgresql:// URL, else an SQLite file there.
    Connected and migrated on return; JournalUnavailable, naming the target without its password, otherwise.
    `intake` (SQLite): the webhook intake's, beside a workers' process writing the same file (SqliteJournal)."""
    if is_postgres(target):
        from bot.delivery.journal_pg import PgJournal  # psycopg (~0.2 s to import) only when a URL asks for it

        return PgJournal(target)
    return SqliteJournal(target, intake=intake)
