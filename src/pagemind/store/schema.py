"""The schema of every store, SQLite or Postgres: one ordered list of append-only migrations, each applied once,
in its own transaction, and recorded by name in ``_pagemind_migrations``.

A migration is one script for both dialects, its column types written as ``{INT}``, ``{REAL}``, ``{BLOB}``,
``{ID}`` (a generated integer key) and the few columns only Postgres has (``{VEC}``: the pgvector copy of an
archival vector; ``{SESSION}``: a lock holder's liveness key; ``{SEQ}``: runs' insertion order, SQLite's rowid),
filled in by the dialect — or one script per dialect where they must differ. Never edit a released migration: a
change of schema is a new one at the end.

Every migration is recorded by name, so a store that applied them in another order (SQLite m004 before m003, as
pagemind once did) opens normally and gets the missing ones in list order; a store recording a name this code
does not know was written by a newer pagemind and is refused untouched. Postgres stores written before the two
histories became one recorded four migrations of their own; they are renamed to this list's names once
(``LEGACY_POSTGRES``). Processes opening a new store together serialise on the dialect's migration lock and
re-read the record inside it, so each migration is applied once.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .rows import StoreTooNew

if TYPE_CHECKING:
    from .sql import SQLStore


@dataclass(frozen=True)
class Migration:
    name: str
    script: str | Mapping[str, str]  # one script for every dialect, or one per dialect name

    def statements(self, dialect: str, types: Mapping[str, str]) -> list[str]:
        script = self.script if isinstance(self.script, str) else self.script[dialect]
        return [s.strip() for s in script.format(**types).split(";") if s.strip()]


MIGRATIONS: list[Migration] = [
    Migration("m001_initial", """
        CREATE TABLE documents (
            id TEXT PRIMARY KEY,            -- sha256 of the UTF-8 text
            name TEXT NOT NULL,
            words {INT} NOT NULL,
            chars {INT} NOT NULL,
            created {REAL} NOT NULL
        );
        CREATE TABLE llm_cache (
            key TEXT PRIMARY KEY,           -- sha256 of model + canonical request
            model TEXT NOT NULL,
            text TEXT NOT NULL,
            prompt_tokens {INT} NOT NULL,
            completion_tokens {INT} NOT NULL,
            seconds {REAL} NOT NULL,
            finish_reason TEXT NOT NULL,
            created {REAL} NOT NULL
        );
        CREATE TABLE memories (
            key TEXT PRIMARY KEY,           -- sha256 of document + method + settings + model (+ scope)
            document_id TEXT NOT NULL REFERENCES documents(id),
            method TEXT NOT NULL,
            settings TEXT NOT NULL,         -- canonical JSON
            model TEXT NOT NULL,
            status TEXT NOT NULL,           -- building | complete
            created {REAL} NOT NULL,
            updated {REAL} NOT NULL
        );
        CREATE INDEX memories_by_document ON memories(document_id, method);
        CREATE TABLE memory_items (
            memory_key TEXT NOT NULL REFERENCES memories(key) ON DELETE CASCADE,
            kind TEXT NOT NULL,             -- page, gist, node, ...
            idx {INT} NOT NULL,
            payload TEXT NOT NULL,          -- JSON of a frozen dataclass
            PRIMARY KEY (memory_key, kind, idx)
        )"""),
    Migration("m002_embeddings", """
        CREATE TABLE embeddings (
            model TEXT NOT NULL,            -- embedder id, including its window (chunking changes vectors)
            text_hash TEXT NOT NULL,        -- sha256 of the UTF-8 text
            chunks {INT} NOT NULL,          -- sub-chunks the text was embedded in
            dim {INT} NOT NULL,
            vectors {BLOB} NOT NULL,        -- float32, chunks x dim, row-major
            created {REAL} NOT NULL,
            PRIMARY KEY (model, text_hash)
        )"""),
    # MemGPT agents: core blocks, the event history (recall; the queue is in_context = 1), archival passages
    Migration("m003_agents", """
        CREATE TABLE agents (
            id {ID},
            name TEXT NOT NULL UNIQUE,
            settings TEXT NOT NULL,         -- canonical JSON of AgentOptions
            state TEXT NOT NULL,            -- JSON bookkeeping (pressure warning sent, eviction counts)
            created {REAL} NOT NULL
        );
        CREATE TABLE agent_blocks (
            agent_id {INT} NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            label TEXT NOT NULL,
            value TEXT NOT NULL,
            char_limit {INT} NOT NULL,
            position {INT} NOT NULL,
            updated {REAL} NOT NULL,
            PRIMARY KEY (agent_id, label)
        );
        CREATE TABLE agent_messages (
            agent_id {INT} NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            seq {INT} NOT NULL,             -- order in the agent's history
            kind TEXT NOT NULL,             -- user_message | step | function_result | heartbeat | system_alert...
            text TEXT NOT NULL,             -- what recall text search matches
            payload TEXT NOT NULL,          -- JSON
            created TEXT NOT NULL,          -- 'YYYY-MM-DD HH:MM:SS' (agent clock), for date search
            in_context INTEGER NOT NULL,    -- 1 while in the FIFO queue, 0 once evicted (never deleted)
            PRIMARY KEY (agent_id, seq)
        );
        CREATE INDEX agent_messages_queue ON agent_messages(agent_id, in_context, seq);
        CREATE INDEX agent_messages_created ON agent_messages(agent_id, created);
        CREATE TABLE agent_passages (
            id {ID},
            agent_id {INT} NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            text TEXT NOT NULL,
            summary TEXT,                   -- e.g. a ReadAgent gist of a document passage
            source TEXT,                    -- document name, or NULL for the agent's own inserts
            embedding {BLOB},               -- float32 unit vector, NULL without an embedder
            embedder TEXT,
            created TEXT NOT NULL{VEC}
        );
        CREATE INDEX agent_passages_by_agent ON agent_passages(agent_id, embedder, id);
        CREATE TABLE agent_locks (
            agent_id {INT} PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
            owner TEXT NOT NULL,
            pid {INT} NOT NULL,
            host TEXT NOT NULL,
            acquired {REAL} NOT NULL,
            refreshed {REAL} NOT NULL{SESSION}
        )"""),
    # native tool calls of a cached reply, as JSON [{"name": ..., "arguments": "..."}]; NULL: none
    Migration("m004_tool_calls", "ALTER TABLE llm_cache ADD COLUMN tool_calls TEXT"),
    # what building a memory cost, as JSON {"calls", "prompt_tokens", ..., "attempts", "resumed"}; NULL: not recorded
    Migration("m005_memory_build_usage", "ALTER TABLE memories ADD COLUMN build_usage TEXT"),
    # pagemind serve: users and hashed API keys, kept document texts and who holds them, agent owners, runs
    Migration("m006_service", """
        CREATE TABLE users (
            id {ID},
            name TEXT NOT NULL UNIQUE,
            created {REAL} NOT NULL
        );
        CREATE TABLE api_keys (
            hash TEXT PRIMARY KEY,          -- sha256 of the key (the key itself is never stored)
            user_id {INT} NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            created {REAL} NOT NULL
        );
        CREATE TABLE document_texts (
            document_id TEXT PRIMARY KEY REFERENCES documents(id),
            text TEXT NOT NULL
        );
        CREATE TABLE user_documents (
            user_id {INT} NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            document_id TEXT NOT NULL REFERENCES documents(id),
            name TEXT NOT NULL,             -- the name this user gave it
            created {REAL} NOT NULL,
            PRIMARY KEY (user_id, document_id)
        );
        CREATE TABLE agent_owners (
            agent_id {INT} PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
            user_id {INT} NOT NULL REFERENCES users(id) ON DELETE CASCADE
        );
        CREATE INDEX agent_owners_by_user ON agent_owners(user_id);
        CREATE TABLE runs (
            id TEXT PRIMARY KEY,            -- 'run_' + random hex
            user_id {INT} REFERENCES users(id) ON DELETE CASCADE,  -- NULL: the local user
            kind TEXT NOT NULL,             -- index | ask | turn
            method TEXT,
            target TEXT NOT NULL,           -- document id or agent id
            request TEXT NOT NULL,          -- JSON
            status TEXT NOT NULL,           -- queued | running | done | failed | cancelled
            created {REAL} NOT NULL,
            started {REAL},
            finished {REAL},
            result TEXT,                    -- JSON
            error TEXT,
            cancel_requested INTEGER NOT NULL DEFAULT 0{SEQ}
        );
        CREATE INDEX runs_by_user ON runs(user_id, created);
        CREATE INDEX runs_by_target ON runs(target, created);
        CREATE TABLE run_steps (
            run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            seq {INT} NOT NULL,
            kind TEXT NOT NULL,             -- llm | decision | phase | step | note | result | error
            data TEXT NOT NULL,             -- JSON
            created {REAL} NOT NULL,
            PRIMARY KEY (run_id, seq)
        )"""),
    # one holder at a time for a named job (a memory's build, an agent's turn), across processes and replicas
    Migration("m007_leases", """
        CREATE TABLE leases (
            name TEXT PRIMARY KEY,          -- 'build:<memory key>', 'agent:<id>', 'run:<id>'
            owner TEXT NOT NULL,            -- random token of the holder
            pid {INT} NOT NULL,
            host TEXT NOT NULL,
            acquired {REAL} NOT NULL,
            refreshed {REAL} NOT NULL{SESSION}
        )"""),
    # whose memory: '' the local user's (the CLI's; every memory stored before scopes), u<id> a service user's
    Migration("m008_memory_scope", """
        ALTER TABLE memories ADD COLUMN scope TEXT NOT NULL DEFAULT '';
        CREATE INDEX memories_by_scope ON memories(scope, document_id)"""),
    # one lease mechanism: agent turns hold the lease 'agent:<id>' (with the holder's liveness key on both)
    Migration("m009_one_lease", {
        "sqlite": "DROP TABLE agent_locks; ALTER TABLE leases ADD COLUMN session INTEGER",
        "postgres": "DROP TABLE agent_locks"}),
    # libraries: named sets of documents per user (scope as memories'); a member is a name -> a document's text
    Migration("m010_libraries", """
        CREATE TABLE libraries (
            id {ID},
            scope TEXT NOT NULL,            -- whose: '' the local user's, u<id> a service user's
            name TEXT NOT NULL,
            created {REAL} NOT NULL,
            UNIQUE (scope, name)
        );
        CREATE TABLE library_documents (
            library_id {INT} NOT NULL REFERENCES libraries(id) ON DELETE CASCADE,
            name TEXT NOT NULL,             -- the document's name in the library (a path inside an added folder)
            document_id TEXT NOT NULL REFERENCES documents(id),
            origin TEXT,                    -- the file it was read from (NULL: an upload)
            previous_id TEXT REFERENCES documents(id),  -- the text it replaced: its memories are reused
            added {REAL} NOT NULL,
            PRIMARY KEY (library_id, name)
        );
        CREATE INDEX library_documents_by_document ON library_documents(document_id)"""),
    # core memory's history: every write to a block is a version (what it made the block, its cause, its time),
    # the blocks stored before it are their version 1; a block's description (Letta's, shown to clients)
    Migration("m011_block_history", """
        ALTER TABLE agent_blocks ADD COLUMN description TEXT NOT NULL DEFAULT '';
        CREATE TABLE agent_block_versions (
            agent_id {INT} NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            label TEXT NOT NULL,
            version {INT} NOT NULL,         -- 1, 2, ... per (agent, label), in the order the writes committed
            value TEXT NOT NULL,
            char_limit {INT} NOT NULL,
            description TEXT NOT NULL,
            cause TEXT NOT NULL,            -- 'create', 'step 12: core_memory_append', 'api: ann', 'revert to 3'...
            created {REAL} NOT NULL,
            PRIMARY KEY (agent_id, label, version)
        );
        INSERT INTO agent_block_versions (agent_id, label, version, value, char_limit, description, cause, created)
            SELECT agent_id, label, 1, value, char_limit, '', 'stored before history', updated FROM agent_blocks"""),
    # archival facts that supersede others (the earlier one is kept, marked with its successor and when), and the
    # repeats of a passage that were not stored again or were folded into it by an audit (JSON [{time, source}])
    Migration("m012_archival_audit", """
        ALTER TABLE agent_passages ADD COLUMN superseded_by {INT};
        ALTER TABLE agent_passages ADD COLUMN superseded TEXT;
        ALTER TABLE agent_passages ADD COLUMN repeats TEXT"""),
    # a kept document's structure as its file gave it: JSON {"format", "pages": [offsets], "sections": [...]}
    Migration("m013_document_structure", "ALTER TABLE document_texts ADD COLUMN structure TEXT"),
    # the reply tokens' log-probabilities of a cached reply that asked for them (the verifier's label confidence):
    # JSON [[token, logprob, [[token, logprob], ...]], ...]
    Migration("m014_cache_logprobs", "ALTER TABLE llm_cache ADD COLUMN logprobs TEXT"),
    # a file read once: the digest of its bytes with the reading rules (READ_RULES, OCR mode, encoding) finds the
    # text and structure it gave, so a second `pagemind ask report.pdf` reads nothing (the local user's files only)
    Migration("m015_file_reads", """
        CREATE TABLE file_reads (
            digest TEXT PRIMARY KEY,
            document_id TEXT NOT NULL,
            text TEXT NOT NULL,
            structure TEXT NOT NULL,
            created {REAL} NOT NULL
        )"""),
    # the token counts of the prompts a model was asked (by model and prompt): a request answered from the reply
    # cache is fitted again on a repeat ask, and its counts found here open no tokenizer (a cached answer opens
    # nothing); `pagemind cache clear` empties it with the replies
    Migration("m016_token_counts", """
        CREATE TABLE token_counts (
            key TEXT PRIMARY KEY,
            tokens INTEGER NOT NULL
        )"""),
    # archival passages forgotten on purpose (a person, an audit's --drop-junk): the row moved here whole with why
    # and when, so search, listing and ranking never see it and a restore gives it back under its own id
    Migration("m017_forgotten_passages", """
        CREATE TABLE agent_forgotten (
            id {INT} NOT NULL,              -- the passage's own id, given back by a restore
            agent_id {INT} NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
            passage TEXT NOT NULL,          -- JSON: its columns, and the passages it had superseded (replaced)
            embedding {BLOB},
            cause TEXT NOT NULL,            -- 'cli', 'api: ann', 'audit: junk (...)'
            forgotten {REAL} NOT NULL,
            PRIMARY KEY (agent_id, id)
        )"""),
    # a run's totals (calls, tokens, seconds) kept on the run when it ends, so reading a run never sums its steps
    Migration("m018_run_usage", "ALTER TABLE runs ADD COLUMN usage TEXT"),
]

# the names Postgres stores recorded before the two histories were one, and what each of them applied
LEGACY_POSTGRES = {"m001_initial": ("m001_initial", "m002_embeddings", "m003_agents", "m004_tool_calls",
                                    "m005_memory_build_usage"),
                   "m002_service": ("m006_service",), "m003_leases": ("m007_leases",),
                   "m004_memory_scope": ("m008_memory_scope",)}


def recorded(store: SQLStore) -> list[str]:
    """The migrations a store records, in the order they were applied."""
    return [r[0] for r in store.execute(
        f"SELECT name FROM _pagemind_migrations ORDER BY {store.db.records_order}")]


def migrate(store: SQLStore) -> list[str]:
    """Apply the migrations not yet recorded, in list order; return the names applied."""
    db = store.db
    known = [m.name for m in MIGRATIONS]
    with store.transaction():
        db.lock_migrations(store)
        store.execute(db.migrations_table)
        done = recorded(store)
        if db.name == "postgres" and "m001_initial" in done and "m002_embeddings" not in done and \
                store.execute("SELECT to_regclass('agents')").fetchone()[0] is not None:
            done = [new for old in done for new in LEGACY_POSTGRES.get(old, (old,))]
            store.execute("DELETE FROM _pagemind_migrations")
            store.executemany("INSERT INTO _pagemind_migrations (name, applied) VALUES (?, ?)",
                              [(name, time.time()) for name in done])
        unknown = sorted(set(done) - set(known))
        if unknown:
            raise StoreTooNew(f"this store ({db.where}) was written by a newer pagemind (its schema has migration(s) "
                              f"{', '.join(unknown)}, unknown to this version); upgrade pagemind to open it")
        pending = [m for m in MIGRATIONS if m.name not in done]
        if pending:
            db.prepare_schema(store)
    applied = []
    for m in pending:
        with store.transaction():
            db.lock_migrations(store)
            if store.execute("SELECT 1 FROM _pagemind_migrations WHERE name = ?", (m.name,)).fetchone():
                continue  # another process applied it while this one waited
            for statement in m.statements(db.name, db.types):
                store.execute(statement)
            store.execute("INSERT INTO _pagemind_migrations (name, applied) VALUES (?, ?)", (m.name, time.time()))
        applied.append(m.name)
    return applied
