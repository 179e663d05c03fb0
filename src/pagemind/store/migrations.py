"""Append-only schema migrations, each applied once and recorded in ``_pagemind_migrations``."""

from __future__ import annotations

import sqlite3
from typing import Callable

MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = []
migration = MIGRATIONS.append


@migration
def m001_initial(db: sqlite3.Connection) -> None:
    db.executescript(
        """
        CREATE TABLE documents (
            id TEXT PRIMARY KEY,            -- sha256 of the UTF-8 text
            name TEXT NOT NULL,
            words INTEGER NOT NULL,
            chars INTEGER NOT NULL,
            created REAL NOT NULL
        );
        CREATE TABLE llm_cache (
            key TEXT PRIMARY KEY,           -- sha256 of model + canonical request
            model TEXT NOT NULL,
            text TEXT NOT NULL,
            prompt_tokens INTEGER NOT NULL,
            completion_tokens INTEGER NOT NULL,
            seconds REAL NOT NULL,
            finish_reason TEXT NOT NULL,
            created REAL NOT NULL
        );
        CREATE TABLE memories (
            key TEXT PRIMARY KEY,           -- sha256 of document + method + settings + model
            document_id TEXT NOT NULL REFERENCES documents(id),
            method TEXT NOT NULL,
            settings TEXT NOT NULL,         -- canonical JSON
            model TEXT NOT NULL,
            status TEXT NOT NULL,           -- building | complete
            created REAL NOT NULL,
            updated REAL NOT NULL
        );
        CREATE INDEX memories_by_document ON memories(document_id, method);
        CREATE TABLE memory_items (
            memory_key TEXT NOT NULL REFERENCES memories(key) ON DELETE CASCADE,
            kind TEXT NOT NULL,             -- page, gist, node, ...
            idx INTEGER NOT NULL,
            payload TEXT NOT NULL,          -- JSON of a frozen dataclass
            PRIMARY KEY (memory_key, kind, idx)
        );
        """
    )


def migrate(db: sqlite3.Connection) -> list[str]:
    """Apply the migrations not yet recorded; return the names applied."""
    db.execute("CREATE TABLE IF NOT EXISTS _pagemind_migrations (name TEXT PRIMARY KEY, applied REAL)")
    done = {row[0] for row in db.execute("SELECT name FROM _pagemind_migrations")}
    applied = []
    for fn in MIGRATIONS:
        if fn.__name__ in done:
            continue
        with db:
            fn(db)
            db.execute("INSERT INTO _pagemind_migrations VALUES (?, strftime('%s','now'))", (fn.__name__,))
        applied.append(fn.__name__)
    return applied
