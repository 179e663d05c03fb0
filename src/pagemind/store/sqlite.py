"""The SQLite store: one file in the user's directory (the embedded default). Documents, memories (written unit by
unit, so a killed build resumes), the embedding and LLM response caches, and MemGPT agents. Every SQL statement
of pagemind is in this module or in its migrations; values in and out are the plain types of ``base``."""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..hashing import canonical_json
from ..llm.base import LLMResponse, ToolCall
from .base import (
    AgentRow,
    BlockRow,
    DocumentRow,
    EventRow,
    LockHolder,
    MemoryRecord,
    MemorySummary,
    PassageRow,
    RunRow,
    StepRow,
    StoreBackend,
    StoredVectors,
    UserRow,
    memory_scope,
)
from .migrations import migrate

_BATCH = 500  # host parameters per IN (...) list, well under SQLite's limit


class _Rows:
    """A statement's result, read completely while the lock is held: rows, ``rowcount``, ``lastrowid``."""

    def __init__(self, cursor: sqlite3.Cursor) -> None:
        self.rows = cursor.fetchall()
        self.rowcount = cursor.rowcount
        self.lastrowid = cursor.lastrowid

    def fetchone(self) -> Any:
        return self.rows[0] if self.rows else None

    def fetchall(self) -> list[Any]:
        return self.rows

    def __iter__(self) -> Iterator[Any]:
        return iter(self.rows)


def _retry_locked(fn: Callable[[], Any], seconds: float = 30.0) -> Any:
    """Run ``fn``, retrying while the database is locked: switching a new file to WAL takes an exclusive lock
    and SQLite reports contention at once instead of waiting for the busy timeout."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return fn()
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _like(query: str) -> str:
    escaped = query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _marks(n: int) -> str:
    return ",".join("?" * n)


def _check_names(table: str, columns: Sequence[str]) -> None:
    """Table and column names are put into SQL text: only plain lower-case identifiers pass."""
    for name in (table, *columns):
        if not _NAME.match(name):
            raise ValueError(f"not a table or column name: {name!r}")


_NAME = re.compile(r"^[a-z_]+$")


_MEMORY = "SELECT key, document_id, method, settings, model, status, scope FROM memories"


def _memory(row: tuple) -> MemoryRecord:
    return MemoryRecord(row[0], row[1], row[2], json.loads(row[3]), row[4], row[5], row[6])


_EVENT_COLUMNS = "kind, payload, created, seq, in_context, text"


def _event(row: tuple) -> EventRow:
    return EventRow(row[0], json.loads(row[1]), row[2], int(row[3]), bool(row[4]), row[5])


def _passage(row: tuple) -> PassageRow:
    return PassageRow(row[1], row[2], row[3], row[4], id=int(row[0]))


def _run(row: tuple) -> RunRow:
    return RunRow(row[0], row[1], row[2], row[3], row[4], json.loads(row[5]), row[6], row[7], row[8], row[9],
                  json.loads(row[10]) if row[10] else None, row[11], bool(row[12]))


def _agent(row: tuple) -> AgentRow:
    return AgentRow(int(row[0]), row[1], json.loads(row[2]), json.loads(row[3]), float(row[4]))


class Store(StoreBackend):
    """One SQLite file. Safe to share between threads; several processes may open the same file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=30.0, isolation_level=None)
        self._lock = threading.RLock()
        from .vectors import VectorCache

        self._vectors = VectorCache()
        try:
            self._db.execute("PRAGMA foreign_keys = ON")
            if str(path) != ":memory:":
                _retry_locked(lambda: self._db.execute("PRAGMA journal_mode = WAL"))
            with self._lock:
                migrate(self._db, str(path))
        except BaseException:
            self._db.close()
            raise

    # --- lifecycle ---------------------------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _exec(self, sql: str, args: tuple = ()) -> _Rows:
        """Run one statement and read its rows while holding the lock: the connection is shared by threads, so
        a cursor must not be read after the lock is released."""
        with self._lock:
            return _Rows(self._db.execute(sql, args))

    def _many(self, sql: str, rows: Sequence[tuple]) -> None:
        with self._lock:
            self._db.executemany(sql, rows)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction (BEGIN IMMEDIATE: other processes wait for it, not fail half-way), holding the
        store's lock so other threads wait too; nested use joins the outer transaction."""
        with self._lock:
            if self._db.in_transaction:
                yield
                return
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    def applied_migrations(self) -> list[str]:
        return [r[0] for r in self._exec("SELECT name FROM _pagemind_migrations ORDER BY rowid")]

    # --- documents and memories --------------------------------------------------------------------
    def put_document(self, doc_id: str, name: str, words: int, chars: int) -> None:
        self._exec("INSERT OR IGNORE INTO documents VALUES (?, ?, ?, ?, ?)", (doc_id, name, words, chars, time.time()))

    def open_memory(self, key: str, document_id: str, method: str, settings: dict[str, Any],
                    model: str, scope: str = "") -> MemoryRecord:
        now = time.time()
        self._exec("INSERT OR IGNORE INTO memories (key, document_id, method, settings, model, status, created, "
                   "updated, scope) VALUES (?, ?, ?, ?, ?, 'building', ?, ?, ?)",
                   (key, document_id, method, canonical_json(settings), model, now, now, scope))
        found = self.get_memory(key)
        assert found is not None
        return found

    def get_memory(self, key: str) -> MemoryRecord | None:
        row = self._exec(_MEMORY + " WHERE key = ?", (key,)).fetchone()
        return None if row is None else _memory(row)

    def memories_for(self, document_id: str, method: str | None = None, *,
                     scope: str | None = None) -> list[MemoryRecord]:
        sql, args = _MEMORY + " WHERE document_id = ?", (document_id,)
        if method:
            sql, args = sql + " AND method = ?", args + (method,)
        if scope is not None:
            sql, args = sql + " AND scope = ?", args + (scope,)
        return [_memory(r) for r in self._exec(sql + " ORDER BY updated DESC", args)]

    def memory_items(self, key: str) -> dict[str, list[dict[str, Any]]]:
        found: dict[str, list[dict[str, Any]]] = {}
        for kind, payload in self._exec("SELECT kind, payload FROM memory_items WHERE memory_key = ? "
                                        "ORDER BY kind, idx", (key,)).fetchall():
            found.setdefault(kind, []).append(json.loads(payload))
        return found

    def list_memories(self) -> list[MemorySummary]:
        rows = self._exec(
            "SELECT m.key, m.document_id, COALESCE(d.name, ''), COALESCE(d.words, 0), m.method, m.settings, m.model, "
            "m.status, COUNT(i.idx), COALESCE(SUM(LENGTH(i.payload)), 0), m.build_usage, m.updated, m.scope "
            "FROM memories m LEFT JOIN documents d ON d.id = m.document_id "
            "LEFT JOIN memory_items i ON i.memory_key = m.key GROUP BY m.key ORDER BY m.updated DESC").fetchall()
        return [MemorySummary(r[0], r[1], r[2], r[3], r[4], json.loads(r[5]), r[6], r[7], r[8], r[9],
                              json.loads(r[10]) if r[10] else None, r[11], r[12]) for r in rows]

    def delete_memory(self, key: str) -> bool:
        with self.transaction():
            self._exec("DELETE FROM memory_items WHERE memory_key = ?", (key,))
            return self._exec("DELETE FROM memories WHERE key = ? RETURNING key", (key,)).fetchone() is not None

    def add_build_usage(self, key: str, usage: dict[str, Any], resumed: bool) -> None:
        with self.transaction():
            row = self._exec("SELECT build_usage FROM memories WHERE key = ?", (key,)).fetchone()
            if row is None:
                return
            total: dict[str, Any] = json.loads(row[0]) if row[0] else {"attempts": 0, "resumed": False}
            for name, value in usage.items():
                if isinstance(value, (int, float)):
                    total[name] = round(total.get(name, 0) + value, 3)
            total["attempts"] += 1
            total["resumed"] = total["resumed"] or resumed
            self._exec("UPDATE memories SET build_usage = ? WHERE key = ?", (canonical_json(total), key))

    def clear_responses(self) -> int:
        with self.transaction():
            n = self._exec("SELECT COUNT(*) FROM llm_cache").fetchone()[0]
            self._exec("DELETE FROM llm_cache")
        return int(n)

    def mark_complete(self, key: str) -> None:
        self._exec("UPDATE memories SET status = 'complete', updated = ? WHERE key = ?", (time.time(), key))

    def put_item(self, key: str, kind: str, idx: int, payload: dict[str, Any]) -> None:
        self.put_items(key, kind, [(idx, payload)])

    def put_items(self, key: str, kind: str, items: Sequence[tuple[int, dict[str, Any]]]) -> None:
        rows = [(key, kind, idx, canonical_json(payload)) for idx, payload in items]
        with self.transaction():
            self._many("INSERT OR REPLACE INTO memory_items VALUES (?, ?, ?, ?)", rows)
            self._exec("UPDATE memories SET updated = ? WHERE key = ?", (time.time(), key))

    def items(self, key: str, kind: str) -> list[dict[str, Any]]:
        return [payload for _, payload in self.iter_items(key, kind)]

    def iter_items(self, key: str, kind: str) -> Iterator[tuple[int, dict[str, Any]]]:
        rows = self._exec("SELECT idx, payload FROM memory_items WHERE memory_key = ? AND kind = ? ORDER BY idx",
                          (key, kind)).fetchall()
        for idx, payload in rows:
            yield int(idx), json.loads(payload)

    def delete_items(self, key: str, kind: str, from_idx: int = 0) -> None:
        self._exec("DELETE FROM memory_items WHERE memory_key = ? AND kind = ? AND idx >= ?", (key, kind, from_idx))

    # --- embedding cache ---------------------------------------------------------------------------
    def get_embeddings(self, model: str, text_hashes: Sequence[str]) -> dict[str, StoredVectors]:
        unique = sorted(set(text_hashes))
        found: dict[str, StoredVectors] = {}
        for b in range(0, len(unique), _BATCH):
            part = unique[b:b + _BATCH]
            for h, chunks, dim, blob in self._exec(
                    f"SELECT text_hash, chunks, dim, vectors FROM embeddings WHERE model = ? AND text_hash IN "
                    f"({_marks(len(part))})", (model, *part)):
                found[h] = StoredVectors(int(chunks), int(dim), bytes(blob))
        return found

    def put_embeddings(self, model: str, vectors: Mapping[str, StoredVectors]) -> None:
        now = time.time()
        rows = [(model, h, v.chunks, v.dim, v.data, now) for h, v in vectors.items()]
        with self.transaction():
            self._many("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?, ?, ?)", rows)

    def count_embeddings(self, model: str | None = None) -> int:
        sql, args = ("SELECT COUNT(*) FROM embeddings", ()) if model is None else (
            "SELECT COUNT(*) FROM embeddings WHERE model = ?", (model,))
        return int(self._exec(sql, args).fetchone()[0])

    # --- LLM response cache ------------------------------------------------------------------------
    def get_response(self, key: str) -> LLMResponse | None:
        row = self._exec("SELECT model, text, prompt_tokens, completion_tokens, seconds, finish_reason, tool_calls "
                         "FROM llm_cache WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        calls = tuple(ToolCall(c["name"], c["arguments"]) for c in json.loads(row[6])) if row[6] else ()
        return LLMResponse(text=row[1], prompt_tokens=row[2], completion_tokens=row[3], seconds=row[4], model=row[0],
                           cached=True, finish_reason=row[5], tool_calls=calls)

    def put_response(self, key: str, response: LLMResponse) -> None:
        calls = json.dumps([c.__dict__ for c in response.tool_calls]) if response.tool_calls else None
        self._exec("INSERT OR REPLACE INTO llm_cache (key, model, text, prompt_tokens, completion_tokens, seconds, "
                   "finish_reason, created, tool_calls) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (key, response.model, response.text, response.prompt_tokens, response.completion_tokens,
                    response.seconds, response.finish_reason, time.time(), calls))

    # --- agents ------------------------------------------------------------------------------------
    def create_agent(self, name: str, settings: dict[str, Any], state: dict[str, Any], created: float,
                     blocks: Sequence[BlockRow]) -> int | None:
        with self.transaction():
            cur = self._exec("INSERT INTO agents (name, settings, state, created) VALUES (?, ?, ?, ?) "
                             "ON CONFLICT (name) DO NOTHING",
                             (name, canonical_json(settings), canonical_json(state), created))
            if cur.rowcount == 0:
                return None
            agent_id = int(cur.lastrowid or 0)
            self._many("INSERT INTO agent_blocks VALUES (?, ?, ?, ?, ?, ?)",
                       [(agent_id, b.label, b.value, b.limit, i, created) for i, b in enumerate(blocks)])
        return agent_id

    def get_agent(self, name: str) -> AgentRow | None:
        row = self._exec("SELECT id, name, settings, state, created FROM agents WHERE name = ?", (name,)).fetchone()
        return None if row is None else _agent(row)

    def list_agents(self) -> list[AgentRow]:
        return [_agent(r) for r in self._exec("SELECT id, name, settings, state, created FROM agents ORDER BY name")]

    def delete_agent(self, name: str) -> bool:
        return self._exec("DELETE FROM agents WHERE name = ?", (name,)).rowcount > 0

    def set_agent_state(self, agent_id: int, state: dict[str, Any]) -> None:
        self._exec("UPDATE agents SET state = ? WHERE id = ?", (canonical_json(state), agent_id))

    def set_agent_settings(self, agent_id: int, settings: dict[str, Any]) -> None:
        self._exec("UPDATE agents SET settings = ? WHERE id = ?", (canonical_json(settings), agent_id))

    def agent_blocks(self, agent_id: int) -> list[BlockRow]:
        rows = self._exec("SELECT label, value, char_limit FROM agent_blocks WHERE agent_id = ? ORDER BY position",
                          (agent_id,))
        return [BlockRow(r[0], r[1], int(r[2])) for r in rows]

    def put_agent_block(self, agent_id: int, block: BlockRow) -> None:
        with self.transaction():
            pos = self._exec("SELECT COALESCE(MAX(position) + 1, 0) FROM agent_blocks WHERE agent_id = ?",
                             (agent_id,)).fetchone()[0]
            self._exec("INSERT INTO agent_blocks VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (agent_id, label) DO UPDATE "
                       "SET value = excluded.value, char_limit = excluded.char_limit, updated = excluded.updated",
                       (agent_id, block.label, block.value, block.limit, pos, time.time()))

    def append_agent_events(self, agent_id: int, events: Sequence[EventRow]) -> list[int]:
        with self.transaction():
            last = int(self._exec("SELECT COALESCE(MAX(seq), 0) FROM agent_messages WHERE agent_id = ?",
                                  (agent_id,)).fetchone()[0])
            seqs = list(range(last + 1, last + 1 + len(events)))
            self._many("INSERT INTO agent_messages (agent_id, seq, kind, text, payload, created, in_context) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?)",
                       [(agent_id, seq, e.kind, e.text, json.dumps(e.payload, ensure_ascii=False), e.created,
                         int(e.in_context)) for seq, e in zip(seqs, events)])
        return seqs

    def agent_queue(self, agent_id: int) -> list[EventRow]:
        return [_event(r) for r in self._exec(
            f"SELECT {_EVENT_COLUMNS} FROM agent_messages WHERE agent_id = ? AND in_context = 1 "
            "ORDER BY kind != 'summary', seq", (agent_id,))]

    def evict_agent_events(self, agent_id: int, seqs: Sequence[int]) -> None:
        with self.transaction():
            self._exec("UPDATE agent_messages SET in_context = 0 WHERE agent_id = ? AND kind = 'summary'", (agent_id,))
            self._many("UPDATE agent_messages SET in_context = 0 WHERE agent_id = ? AND seq = ?",
                       [(agent_id, seq) for seq in seqs])

    def count_agent_events(self, agent_id: int, in_context: bool | None = None) -> int:
        sql, args = "SELECT COUNT(*) FROM agent_messages WHERE agent_id = ?", (agent_id,)
        if in_context is not None:
            sql, args = sql + " AND in_context = ?", args + (int(in_context),)
        return int(self._exec(sql, args).fetchone()[0])

    def recent_agent_events(self, agent_id: int, limit: int) -> list[EventRow]:
        rows = self._exec(f"SELECT {_EVENT_COLUMNS} FROM agent_messages WHERE agent_id = ? ORDER BY seq DESC LIMIT ?",
                          (agent_id, limit)).fetchall()
        return [_event(r) for r in reversed(rows)]

    def search_agent_events(self, agent_id: int, kinds: Sequence[str], *, query: str | None = None,
                            start: str | None = None, end: str | None = None, offset: int = 0,
                            limit: int = 5) -> tuple[int, list[EventRow]]:
        where, args = f"agent_id = ? AND kind IN ({_marks(len(kinds))})", (agent_id, *kinds)
        if query is not None:
            where, args = where + " AND text LIKE ? ESCAPE '\\'", args + (_like(query),)
        if start is not None:
            where, args = where + " AND created >= ?", args + (start,)
        if end is not None:
            where, args = where + " AND created < ?", args + (end,)
        with self._lock:
            total = int(self._exec(f"SELECT COUNT(*) FROM agent_messages WHERE {where}", args).fetchone()[0])
            rows = self._exec(f"SELECT {_EVENT_COLUMNS} FROM agent_messages WHERE {where} ORDER BY seq "
                              "LIMIT ? OFFSET ?", args + (limit, offset))
        return total, [_event(r) for r in rows]

    def agent_event_texts(self, agent_id: int, kinds: Sequence[str]) -> list[tuple[int, str]]:
        return [(int(r[0]), r[1]) for r in self._exec(
            f"SELECT seq, text FROM agent_messages WHERE agent_id = ? AND kind IN ({_marks(len(kinds))}) ORDER BY seq",
            (agent_id, *kinds))]

    def _rows_in(self, select: str, column: str, agent_id: int, values: Sequence[int]) -> Iterator[Any]:
        """Rows of ``select ... WHERE agent_id = ? AND column IN (values)``, asked in batches of host parameters."""
        unique = sorted(set(values))
        for b in range(0, len(unique), _BATCH):
            part = unique[b:b + _BATCH]
            yield from self._exec(f"{select} WHERE agent_id = ? AND {column} IN ({_marks(len(part))})",
                                  (agent_id, *part))

    def agent_events(self, agent_id: int, seqs: Sequence[int]) -> list[EventRow]:
        by_seq = {int(r[3]): _event(r) for r in self._rows_in(f"SELECT {_EVENT_COLUMNS} FROM agent_messages",
                                                              "seq", agent_id, seqs)}
        return [by_seq[s] for s in seqs if s in by_seq]

    def insert_agent_passages(self, agent_id: int, passages: Sequence[PassageRow]) -> list[int]:
        ids = []
        with self.transaction():
            for p in passages:
                cur = self._exec("INSERT INTO agent_passages (agent_id, text, summary, source, embedding, embedder, "
                                 "created) VALUES (?, ?, ?, ?, ?, ?, ?)",
                                 (agent_id, p.text, p.summary, p.source, p.embedding, p.embedder, p.created))
                ids.append(int(cur.lastrowid or 0))
        return ids

    def count_agent_passages(self, agent_id: int) -> int:
        return int(self._exec("SELECT COUNT(*) FROM agent_passages WHERE agent_id = ?", (agent_id,)).fetchone()[0])

    def search_agent_passages(self, agent_id: int, query: str, offset: int = 0,
                              limit: int | None = None) -> tuple[int, list[PassageRow]]:
        where = "agent_id = ? AND (text LIKE ? ESCAPE '\\' OR summary LIKE ? ESCAPE '\\')"
        args = (agent_id, _like(query), _like(query))
        with self._lock:
            total = int(self._exec(f"SELECT COUNT(*) FROM agent_passages WHERE {where}", args).fetchone()[0])
            rows = self._exec(f"SELECT id, text, created, summary, source FROM agent_passages WHERE {where} "
                              "ORDER BY id LIMIT ? OFFSET ?", args + (-1 if limit is None else limit, offset))
        return total, [_passage(r) for r in rows]

    def agent_passage_vectors(self, agent_id: int, embedder: str) -> list[tuple[int, bytes]]:
        return [(int(r[0]), bytes(r[1])) for r in self._exec(
            "SELECT id, embedding FROM agent_passages WHERE agent_id = ? AND embedder = ? AND embedding IS NOT NULL "
            "ORDER BY id", (agent_id, embedder))]

    def agent_passage_texts(self, agent_id: int) -> list[tuple[int, str]]:
        return [(int(r[0]), r[1]) for r in self._exec(
            "SELECT id, COALESCE(summary, '') || ' ' || text FROM agent_passages WHERE agent_id = ? ORDER BY id",
            (agent_id,))]

    def agent_passages(self, agent_id: int, ids: Sequence[int]) -> list[PassageRow]:
        by_id = {int(r[0]): _passage(r) for r in self._rows_in(
            "SELECT id, text, created, summary, source FROM agent_passages", "id", agent_id, ids)}
        return [by_id[i] for i in ids if i in by_id]

    def nearest_agent_passages(self, agent_id: int, embedder: str, query: bytes,
                               limit: int | None = None) -> tuple[int, list[int]]:
        """Ranked in numpy over the agent's vectors, kept in memory between searches (:class:`VectorCache`): a
        search reads only the passages added since the last one."""
        from .vectors import rank_matrix

        def read(after: int, upto: int) -> tuple[int, list[tuple[int, bytes]]]:
            span = (agent_id, after, upto)
            with self._lock:
                added = int(self._exec("SELECT COUNT(*) FROM agent_passages WHERE agent_id = ? AND id > ? AND "
                                       "id <= ?", span).fetchone()[0])
                rows = [(int(r[0]), bytes(r[1])) for r in self._exec(
                    "SELECT id, embedding FROM agent_passages WHERE agent_id = ? AND id > ? AND id <= ? AND "
                    "embedder = ? AND embedding IS NOT NULL ORDER BY id", (*span, embedder))]
            return added, rows

        with self._lock:  # the agent's passages now (an index-only count)
            count, last = self._exec("SELECT COUNT(*), COALESCE(MAX(id), 0) FROM agent_passages WHERE agent_id = ?",
                                     (agent_id,)).fetchone()
        ids, matrix = self._vectors.matrix((agent_id, embedder), int(count), int(last), read)
        return len(ids), rank_matrix(ids, matrix, query, limit)

    # --- moving a store ------------------------------------------------------------------------------
    def table_rows(self, table: str, columns: Sequence[str]) -> Iterator[tuple[Any, ...]]:
        _check_names(table, columns)
        last = 0
        while True:  # read in pages by rowid (the order written), not the whole table at once
            rows = self._exec(f"SELECT rowid, {', '.join(columns)} FROM {table} WHERE rowid > ? ORDER BY rowid "
                              "LIMIT 1000", (last,)).fetchall()
            if not rows:
                return
            for row in rows:
                yield tuple(bytes(v) if isinstance(v, memoryview) else v for v in row[1:])
            last = rows[-1][0]

    def add_table_rows(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], *,
                       skip_existing: bool = False) -> int:
        _check_names(table, columns)
        verb = "INSERT OR IGNORE" if skip_existing else "INSERT"
        with self.transaction():
            before = self._db.total_changes
            self._many(f"{verb} INTO {table} ({', '.join(columns)}) VALUES ({_marks(len(columns))})",
                       [tuple(r) for r in rows])
            return self._db.total_changes - before

    def count_rows(self, table: str) -> int:
        _check_names(table, ())
        return int(self._exec(f"SELECT COUNT(*) FROM {table}").fetchone()[0])

    def try_lock_agent(self, agent_id: int, owner: str, pid: int, host: str,
                       stale: Callable[[LockHolder], bool]) -> bool:
        now = time.time()
        with self.transaction():
            holder = self.agent_lock_holder(agent_id)
            if holder is not None and holder.owner != owner and not stale(holder):
                return False
            self._exec("INSERT OR REPLACE INTO agent_locks VALUES (?, ?, ?, ?, ?, ?)",
                       (agent_id, owner, pid, host, now, now))
        return True

    def refresh_agent_lock(self, agent_id: int, owner: str) -> None:
        self._exec("UPDATE agent_locks SET refreshed = ? WHERE agent_id = ? AND owner = ?",
                   (time.time(), agent_id, owner))

    def release_agent_lock(self, agent_id: int, owner: str) -> None:
        self._exec("DELETE FROM agent_locks WHERE agent_id = ? AND owner = ?", (agent_id, owner))

    def agent_lock_holder(self, agent_id: int) -> LockHolder | None:
        row = self._exec("SELECT owner, pid, host, refreshed FROM agent_locks WHERE agent_id = ?",
                         (agent_id,)).fetchone()
        return None if row is None else LockHolder(row[0], int(row[1]), row[2], float(row[3]))

    # --- leases ------------------------------------------------------------------------------------------
    def try_lease(self, name: str, owner: str, pid: int, host: str, stale: Callable[[LockHolder], bool]) -> bool:
        now = time.time()
        with self.transaction():
            holder = self.lease_holder(name)
            if holder is not None and holder.owner != owner and not stale(holder):
                return False
            self._exec("INSERT OR REPLACE INTO leases VALUES (?, ?, ?, ?, ?, ?)", (name, owner, pid, host, now, now))
        return True

    def refresh_lease(self, name: str, owner: str) -> None:
        self._exec("UPDATE leases SET refreshed = ? WHERE name = ? AND owner = ?", (time.time(), name, owner))

    def release_lease(self, name: str, owner: str) -> None:
        self._exec("DELETE FROM leases WHERE name = ? AND owner = ?", (name, owner))

    def lease_holder(self, name: str) -> LockHolder | None:
        row = self._exec("SELECT owner, pid, host, refreshed FROM leases WHERE name = ?", (name,)).fetchone()
        return None if row is None else LockHolder(row[0], int(row[1]), row[2], float(row[3]))

    # --- users, their documents and agents ---------------------------------------------------------------
    def create_user(self, name: str, key_hash: str, created: float) -> int | None:
        with self.transaction():
            cur = self._exec("INSERT INTO users (name, created) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
                             (name, created))
            if cur.rowcount == 0:
                return None
            user_id = int(cur.lastrowid or 0)
            self._exec("INSERT INTO api_keys VALUES (?, ?, ?)", (key_hash, user_id, created))
        return user_id

    def add_user_key(self, user_id: int, key_hash: str, created: float) -> None:
        self._exec("INSERT INTO api_keys VALUES (?, ?, ?)", (key_hash, user_id, created))

    def user_for_key(self, key_hash: str) -> UserRow | None:
        row = self._exec("SELECT u.id, u.name, u.created FROM api_keys k JOIN users u ON u.id = k.user_id "
                         "WHERE k.hash = ?", (key_hash,)).fetchone()
        return None if row is None else UserRow(*row)

    def get_user(self, name: str) -> UserRow | None:
        row = self._exec("SELECT id, name, created FROM users WHERE name = ?", (name,)).fetchone()
        return None if row is None else UserRow(*row)

    def list_users(self) -> list[UserRow]:
        return [UserRow(*r) for r in self._exec("SELECT id, name, created FROM users ORDER BY id")]

    def put_document_text(self, doc_id: str, text: str) -> None:
        self._exec("INSERT OR IGNORE INTO document_texts VALUES (?, ?)", (doc_id, text))

    def document_text(self, doc_id: str) -> str | None:
        row = self._exec("SELECT text FROM document_texts WHERE document_id = ?", (doc_id,)).fetchone()
        return None if row is None else row[0]

    def add_user_document(self, user_id: int, doc_id: str, name: str, created: float) -> None:
        self._exec("INSERT INTO user_documents VALUES (?, ?, ?, ?) "
                   "ON CONFLICT (user_id, document_id) DO UPDATE SET name = excluded.name", (user_id, doc_id, name, created))

    _USER_DOCUMENT = ("SELECT d.id, u.name, d.words, d.chars, u.created FROM user_documents u "
                      "JOIN documents d ON d.id = u.document_id WHERE u.user_id = ?")

    def user_documents(self, user_id: int) -> list[DocumentRow]:
        return [DocumentRow(*r) for r in self._exec(self._USER_DOCUMENT + " ORDER BY u.created DESC, d.id", (user_id,))]

    def user_document(self, user_id: int, doc_id: str) -> DocumentRow | None:
        row = self._exec(self._USER_DOCUMENT + " AND d.id = ?", (user_id, doc_id)).fetchone()
        return None if row is None else DocumentRow(*row)

    def remove_user_document(self, user_id: int, doc_id: str) -> bool:
        with self.transaction():
            gone = self._exec("DELETE FROM user_documents WHERE user_id = ? AND document_id = ?",
                              (user_id, doc_id)).rowcount > 0
            if gone:
                self._forget_scope(memory_scope(self, user_id), doc_id)
                self._forget_unheld([doc_id])
        return gone

    def _forget_scope(self, scope: str, doc_id: str | None = None) -> int:
        """Delete a service user's memories (of one document if given; inside a transaction). The local scope is
        the CLI's too, so nothing of it goes here."""
        if not scope:
            return 0
        sql, args = "SELECT key FROM memories WHERE scope = ?", (scope,)
        if doc_id is not None:
            sql, args = sql + " AND document_id = ?", args + (doc_id,)
        keys = [r[0] for r in self._exec(sql, args)]
        for key in keys:
            self._exec("DELETE FROM memory_items WHERE memory_key = ?", (key,))
            self._exec("DELETE FROM memories WHERE key = ?", (key,))
        return len(keys)

    def _forget_unheld(self, doc_ids: Sequence[str]) -> int:
        """Delete the kept texts and the memories of documents no user holds any more (inside a transaction)."""
        forgotten = 0
        for doc_id in doc_ids:
            if self._exec("SELECT 1 FROM user_documents WHERE document_id = ?", (doc_id,)).fetchone():
                continue
            keys = [r[0] for r in self._exec("SELECT key FROM memories WHERE document_id = ?", (doc_id,))]
            for key in keys:
                self._exec("DELETE FROM memory_items WHERE memory_key = ?", (key,))
                self._exec("DELETE FROM memories WHERE key = ?", (key,))
            forgotten += self._exec("DELETE FROM document_texts WHERE document_id = ?", (doc_id,)).rowcount
            self._exec("DELETE FROM documents WHERE id = ?", (doc_id,))
        return forgotten

    def set_agent_owner(self, agent_id: int, user_id: int) -> None:
        self._exec("INSERT OR REPLACE INTO agent_owners VALUES (?, ?)", (agent_id, user_id))

    def agent_owner(self, agent_id: int) -> int | None:
        row = self._exec("SELECT user_id FROM agent_owners WHERE agent_id = ?", (agent_id,)).fetchone()
        return None if row is None else int(row[0])

    def user_agents(self, user_id: int) -> list[AgentRow]:
        return [_agent(r) for r in self._exec(
            "SELECT a.id, a.name, a.settings, a.state, a.created FROM agents a JOIN agent_owners o ON o.agent_id = a.id "
            "WHERE o.user_id = ? ORDER BY a.id", (user_id,))]

    def get_agent_by_id(self, agent_id: int) -> AgentRow | None:
        row = self._exec("SELECT id, name, settings, state, created FROM agents WHERE id = ?", (agent_id,)).fetchone()
        return None if row is None else _agent(row)

    def erase_user_data(self, user_id: int) -> dict[str, int]:
        with self.transaction():
            docs = [r[0] for r in self._exec("SELECT document_id FROM user_documents WHERE user_id = ?", (user_id,))]
            self._exec("DELETE FROM user_documents WHERE user_id = ?", (user_id,))
            memories = self._forget_scope(memory_scope(self, user_id))
            texts = self._forget_unheld(docs)
            agents = self._exec("DELETE FROM agents WHERE id IN (SELECT agent_id FROM agent_owners WHERE user_id = ?)",
                                (user_id,)).rowcount
            runs = self._exec("DELETE FROM runs WHERE user_id = ?", (user_id,)).rowcount
        return {"documents": len(docs), "document_texts": texts, "memories": memories, "agents": agents, "runs": runs}

    # --- runs ----------------------------------------------------------------------------------------
    _RUN = ("SELECT id, user_id, kind, method, target, request, status, created, started, finished, result, error, "
            "cancel_requested FROM runs")

    def create_run(self, run: RunRow) -> None:
        self._exec("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (run.id, run.user_id, run.kind, run.method, run.target, canonical_json(run.request), run.status,
                    run.created, run.started, run.finished, None if run.result is None else canonical_json(run.result),
                    run.error, int(run.cancel_requested)))

    def get_run(self, run_id: str) -> RunRow | None:
        row = self._exec(self._RUN + " WHERE id = ?", (run_id,)).fetchone()
        return None if row is None else _run(row)

    def list_runs(self, user_id: int | None, *, all_users: bool = False, kind: str | None = None,
                  target: str | None = None, status: str | None = None, prefix: str | None = None,
                  limit: int = 50, offset: int = 0) -> list[RunRow]:
        where, args = [], []
        if not all_users:
            where.append("user_id IS ?")
            args.append(user_id)
        for column, value in (("kind", kind), ("target", target), ("status", status)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        if prefix is not None:
            where.append("substr(id, 1, ?) = ?")
            args.extend((len(prefix), prefix))
        sql = self._RUN + (" WHERE " + " AND ".join(where) if where else "")
        return [_run(r) for r in self._exec(sql + " ORDER BY created DESC, rowid DESC LIMIT ? OFFSET ?",
                                            (*args, limit, offset))]

    def count_runs(self, user_id: int | None) -> int:
        return int(self._exec("SELECT COUNT(*) FROM runs WHERE user_id IS ?", (user_id,)).fetchone()[0])

    _RUN_FIELDS = ("status", "started", "finished", "result", "error")

    def update_run(self, run_id: str, **fields: Any) -> None:
        unknown = set(fields) - set(self._RUN_FIELDS)
        if unknown:
            raise ValueError(f"not a run field: {', '.join(sorted(unknown))}")
        if "result" in fields and fields["result"] is not None:
            fields["result"] = canonical_json(fields["result"])
        sets = ", ".join(f"{name} = ?" for name in fields)
        self._exec(f"UPDATE runs SET {sets} WHERE id = ?", (*fields.values(), run_id))

    def request_cancel(self, run_id: str) -> bool:
        return self._exec("UPDATE runs SET cancel_requested = 1 WHERE id = ? AND status IN ('queued', 'running')",
                          (run_id,)).rowcount > 0

    def append_run_step(self, run_id: str, kind: str, data: dict[str, Any], created: float) -> int:
        with self.transaction():
            row = self._exec("SELECT COALESCE(MAX(seq), -1) + 1 FROM run_steps WHERE run_id = ?", (run_id,)).fetchone()
            self._exec("INSERT INTO run_steps VALUES (?, ?, ?, ?, ?)", (run_id, row[0], kind, canonical_json(data), created))
        return int(row[0])

    def run_steps(self, run_id: str, after: int = -1, limit: int | None = None) -> list[StepRow]:
        rows = self._exec("SELECT run_id, seq, kind, data, created FROM run_steps WHERE run_id = ? AND seq > ? "
                          "ORDER BY seq LIMIT ?", (run_id, after, -1 if limit is None else limit))
        return [StepRow(r[0], r[1], r[2], json.loads(r[3]), r[4]) for r in rows]
