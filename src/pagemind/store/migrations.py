"""Append-only schema migrations of the SQLite store, each applied once and recorded by name in
``_pagemind_migrations``.

They are registered in the order of their numbers and applied in that order. Never edit a released migration:
a change of schema (a rename too) is a new migration with the next number. Because each one is recorded by name,
a store that applied them in another order (m004 before m003, as pagemind did before the list was put in order)
opens normally, and the missing ones are applied in list order. A store that records a migration this code does
not know was written by a newer pagemind and is refused.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Callable

from .base import StoreTooNew

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


@migration
def m002_embeddings(db: sqlite3.Connection) -> None:
    db.executescript(
        """
        CREATE TABLE embeddings (
            model TEXT NOT NULL,            -- embedder id, including its window (chunking changes vectors)
            text_hash TEXT NOT NULL,        -- sha256 of the UTF-8 text
            chunks INTEGER NOT NULL,        -- sub-chunks the text was embedded in
            dim INTEGER NOT NULL,
            vectors BLOB NOT NULL,          -- float32, chunks x dim, row-major
            created REAL NOT NULL,
            PRIMARY KEY (model, text_hash)
        );
        """
    )


@migration
def m003_agents(db: sqlite3.Connection) -> None:
    """MemGPT agents: core blocks, the event history (recall; the queue is in_context = 1), archival passages,
    and one lock row per agent serialising turns across processes."""
    db.executescript(
        """
        CREATE TABLE agents (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL UNIQUE,
            settings TEXT NOT NULL,         -- canonical JSON of AgentOptions
            state TEXT NOT NULL,            -- JSON bookkeeping (pressure warning sent, eviction counts)
            created REAL NOT NULL
        );
        CREATE TABLE agent_blocks (
            agent_id INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            label TEXT NOT NULL,
            value TEXT NOT NULL,
            char_limit INTEGER NOT NULL,
            position INTEGER NOT NULL,
            updated REAL NOT NULL,
            PRIMARY KEY (agent_id, label)
        );
        CREATE TABLE agent_messages (
            agent_id INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,           -- order in the agent's history
            kind TEXT NOT NULL,             -- user_message | step | function_result | heartbeat | system_alert | summary
            text TEXT NOT NULL,             -- what recall text search matches
            payload TEXT NOT NULL,          -- JSON
            created TEXT NOT NULL,          -- 'YYYY-MM-DD HH:MM:SS' (agent clock), for date search
            in_context INTEGER NOT NULL,    -- 1 while in the FIFO queue, 0 once evicted (never deleted)
            PRIMARY KEY (agent_id, seq)
        );
        CREATE INDEX agent_messages_queue ON agent_messages(agent_id, in_context, seq);
        CREATE INDEX agent_messages_created ON agent_messages(agent_id, created);
        CREATE TABLE agent_passages (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            agent_id INTEGER NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            text TEXT NOT NULL,
            summary TEXT,                   -- e.g. a ReadAgent gist of a document passage
            source TEXT,                    -- document name, or NULL for the agent's own inserts
            embedding BLOB,                 -- float32 unit vector, NULL without an embedder
            embedder TEXT,
            created TEXT NOT NULL
        );
        CREATE INDEX agent_passages_by_agent ON agent_passages(agent_id, id);
        CREATE TABLE agent_locks (
            agent_id INTEGER PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
            owner TEXT NOT NULL,            -- random token of the holder
            pid INTEGER NOT NULL,
            host TEXT NOT NULL,
            acquired REAL NOT NULL,
            refreshed REAL NOT NULL         -- renewed every step; an old one is stale
        );
        """
    )


@migration
def m004_tool_calls(db: sqlite3.Connection) -> None:
    # native tool calls of a cached reply, as JSON [{"name": ..., "arguments": "..."}]; NULL: none
    db.execute("ALTER TABLE llm_cache ADD COLUMN tool_calls TEXT")


@migration
def m005_memory_build_usage(db: sqlite3.Connection) -> None:
    # what building a memory cost, as JSON {"calls", "prompt_tokens", ..., "attempts", "resumed"}; NULL: not recorded
    db.execute("ALTER TABLE memories ADD COLUMN build_usage TEXT")


@migration
def m006_service(db: sqlite3.Connection) -> None:
    """pagemind serve: users and their hashed API keys, the texts of uploaded documents and who holds them,
    who owns an agent, and recorded runs with their steps."""
    db.executescript(
        """
        CREATE TABLE users (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL UNIQUE,
            created REAL NOT NULL
        );
        CREATE TABLE api_keys (
            hash TEXT PRIMARY KEY,          -- sha256 of the key; the key itself is never stored
            user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            created REAL NOT NULL
        );
        CREATE TABLE document_texts (
            document_id TEXT PRIMARY KEY REFERENCES documents(id),
            text TEXT NOT NULL
        );
        CREATE TABLE user_documents (
            user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            document_id TEXT NOT NULL REFERENCES documents(id),
            name TEXT NOT NULL,             -- the name this user gave it
            created REAL NOT NULL,
            PRIMARY KEY (user_id, document_id)
        );
        CREATE TABLE agent_owners (
            agent_id INTEGER PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
            user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE
        );
        CREATE INDEX agent_owners_by_user ON agent_owners(user_id);
        CREATE TABLE runs (
            id TEXT PRIMARY KEY,            -- 'run_' + random hex
            user_id INTEGER REFERENCES users(id) ON DELETE CASCADE,  -- NULL: the local user
            kind TEXT NOT NULL,             -- index | ask | turn
            method TEXT,
            target TEXT NOT NULL,           -- document id or agent id
            request TEXT NOT NULL,          -- JSON
            status TEXT NOT NULL,           -- queued | running | done | failed | cancelled
            created REAL NOT NULL,
            started REAL,
            finished REAL,
            result TEXT,                    -- JSON
            error TEXT,
            cancel_requested INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX runs_by_user ON runs(user_id, created);
        CREATE INDEX runs_by_target ON runs(target, created);
        CREATE TABLE run_steps (
            run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            kind TEXT NOT NULL,             -- llm | decision | phase | step | note | result | error
            data TEXT NOT NULL,             -- JSON
            created REAL NOT NULL,
            PRIMARY KEY (run_id, seq)
        );
        """
    )


@migration
def m007_leases(db: sqlite3.Connection) -> None:
    """Leases: one holder at a time for a named job (building a memory), across processes and server replicas."""
    db.executescript(
        """
        CREATE TABLE leases (
            name TEXT PRIMARY KEY,          -- e.g. 'build:<memory key>'
            owner TEXT NOT NULL,            -- random token of the holder
            pid INTEGER NOT NULL,
            host TEXT NOT NULL,
            acquired REAL NOT NULL,
            refreshed REAL NOT NULL         -- renewed as the job goes on; an old one is stale
        );
        """
    )


@migration
def m008_memory_scope(db: sqlite3.Connection) -> None:
    """Whose memory: '' the local user's (the CLI's; every memory stored before scopes), u<id> a service user's."""
    db.executescript(
        """
        ALTER TABLE memories ADD COLUMN scope TEXT NOT NULL DEFAULT '';
        CREATE INDEX memories_by_scope ON memories(scope, document_id);
        """
    )


def migrate(db: sqlite3.Connection, path: str = ":memory:") -> list[str]:
    """Apply the migrations not yet recorded, in list order; return the names applied."""
    db.execute("CREATE TABLE IF NOT EXISTS _pagemind_migrations (name TEXT PRIMARY KEY, applied REAL)")
    done = {row[0] for row in db.execute("SELECT name FROM _pagemind_migrations")}
    unknown = sorted(done - {fn.__name__ for fn in MIGRATIONS})
    if unknown:
        raise StoreTooNew(f"this store ({path}) was written by a newer pagemind (its schema has migration(s) "
                          f"{', '.join(unknown)}, unknown to this version); upgrade pagemind to open it")
    applied = []
    for fn in MIGRATIONS:
        if fn.__name__ in done:
            continue
        try:
            with db:
                fn(db)
                db.execute("INSERT INTO _pagemind_migrations VALUES (?, strftime('%s','now'))", (fn.__name__,))
        except sqlite3.OperationalError:
            # Another process opening the same store may be applying this migration right now ("table ... already
            # exists", "database is locked"): wait for its record rather than fail.
            if not _applied_by_another(db, fn.__name__):
                raise
            continue
        applied.append(fn.__name__)
    return applied


def _applied_by_another(db: sqlite3.Connection, name: str, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if db.execute("SELECT 1 FROM _pagemind_migrations WHERE name = ?", (name,)).fetchone():
                return True
        except sqlite3.OperationalError:
            pass
        time.sleep(0.1)
    return False
