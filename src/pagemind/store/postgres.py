"""The Postgres store: the same interface as the SQLite store, on a database several processes and machines share
(``--store postgresql://user@host/db``). psycopg 3 with a connection pool; archival passages also carry a pgvector
``vector`` searched by inner product, with an HNSW index per embedding dimension.

Writes that read before they write (the next event number, the next step of a run, a build's summed cost, an agent
turn lock) lock the row they depend on (``FOR NO KEY UPDATE``), which serialises them across processes as SQLite's
``BEGIN IMMEDIATE`` does. An agent's turn lock is a row as in SQLite, plus the holder's liveness: each process holds
a session advisory lock on a connection of its own, and the row names it, so a holder killed on any machine frees
its agents' locks as soon as its connection closes.

Imported only when a postgresql:// store is opened (psycopg, its pool and pgvector are the ``postgres`` extra)."""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from ..errors import ConfigError
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
from .pg_migrations import migrate
from .vectors import rank

# the order rows are read in by ``table_rows``: insertion order where ids are generated, else the primary key
_ORDER = {"documents": "id", "document_texts": "document_id", "llm_cache": "key", "memories": "key",
          "memory_items": "memory_key, kind, idx", "embeddings": "model, text_hash", "agents": "id",
          "agent_blocks": "agent_id, position", "agent_messages": "agent_id, seq", "agent_passages": "id",
          "users": "id", "api_keys": "created, hash", "user_documents": "user_id, document_id",
          "agent_owners": "agent_id", "runs": "n", "run_steps": "run_id, seq"}
_IDENTITY = {"agents": "id", "agent_passages": "id", "users": "id"}  # columns fed by a sequence
_NAME = re.compile(r"^[a-z_]+$")


def redact(url: str) -> str:
    """The URL without its password, for messages."""
    return re.sub(r"(://[^:@/]*):[^@/]*@", r"\1:***@", url)


class _Rows:
    """A statement's result, read completely before its connection goes back to the pool."""

    def __init__(self, cursor: Any) -> None:
        self.rows = cursor.fetchall() if cursor.description is not None else []
        self.rowcount = cursor.rowcount

    def fetchone(self) -> Any:
        return self.rows[0] if self.rows else None

    def fetchall(self) -> list[Any]:
        return self.rows

    def __iter__(self) -> Iterator[Any]:
        return iter(self.rows)


def _check_names(table: str, columns: Sequence[str]) -> None:
    """Table and column names are put into SQL text: only pagemind's tables and plain identifiers pass."""
    if table not in _ORDER:
        raise ValueError(f"not one of pagemind's tables: {table!r}")
    for name in columns:
        if not _NAME.match(name):
            raise ValueError(f"not a column name: {name!r}")


def _like(query: str) -> str:
    escaped = query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


_MEMORY = "SELECT key, document_id, method, settings, model, status, scope FROM memories"


def _memory(row: tuple) -> MemoryRecord:
    return MemoryRecord(row[0], row[1], row[2], json.loads(row[3]), row[4], row[5], row[6])


_EVENT_COLUMNS = "kind, payload, created, seq, in_context, text"


def _event(row: tuple) -> EventRow:
    return EventRow(row[0], json.loads(row[1]), row[2], int(row[3]), bool(row[4]), row[5])


def _passage(row: tuple) -> PassageRow:
    return PassageRow(row[1], row[2], row[3], row[4], id=int(row[0]))


def _agent(row: tuple) -> AgentRow:
    return AgentRow(int(row[0]), row[1], json.loads(row[2]), json.loads(row[3]), float(row[4]))


def _run(row: tuple) -> RunRow:
    return RunRow(row[0], row[1], row[2], row[3], row[4], json.loads(row[5]), row[6], row[7], row[8], row[9],
                  json.loads(row[10]) if row[10] else None, row[11], bool(row[12]))


def _vec(embedding: bytes | None) -> Any:
    """The pgvector value of a float32 vector's bytes (None when they are not a finite float32 vector)."""
    if not embedding or len(embedding) % 4:
        return None
    import numpy as np

    v = np.frombuffer(embedding, dtype=np.float32)
    return v if np.isfinite(v).all() else None


class PostgresStore(StoreBackend):
    """One Postgres database shared by any number of processes.

    Args:
        url: ``postgresql://user:password@host:port/database`` (any libpq connection string).
        pool_size: connections at most in this process's pool.
        exact_up_to: an agent with at most this many embedded passages is searched exactly (the SQLite store's
            order, always); beyond it the HNSW index finds the candidates, which are then ranked exactly (an
            approximate search: a passage the index misses is not returned).
        ef_search: candidates the HNSW search keeps (pgvector's ``hnsw.ef_search``; more: better recall, slower).
    """

    def __init__(self, url: str, *, pool_size: int = 8, exact_up_to: int = 20_000, ef_search: int = 200) -> None:
        try:
            import psycopg
            from pgvector.psycopg import register_vector
            from psycopg_pool import ConnectionPool
        except ImportError as err:
            raise ConfigError(f"a postgresql:// store needs the postgres extra: pip install 'pagemind[postgres]' "
                              f"({err})") from None
        self.url = url
        self.where = redact(url)
        self.exact_up_to = exact_up_to
        self.ef_search = ef_search
        self._local = threading.local()
        self._on_commit: Callable[[], None] | None = None  # tests count commits with it
        self._indexed: set[int] = set()
        self._session: Any = None
        self._session_key = 0
        self._session_guard = threading.Lock()
        try:
            with psycopg.connect(url, autocommit=True) as conn:
                migrate(conn, self.where)
        except psycopg.OperationalError as err:
            raise ConfigError(f"cannot open the Postgres store {self.where}: {str(err).strip()}") from None
        self._pool = ConnectionPool(url, min_size=1, max_size=pool_size, kwargs={"autocommit": True},
                                    configure=register_vector, open=True, name="pagemind")

    # --- lifecycle ---------------------------------------------------------------------------------
    def close(self) -> None:
        self._pool.close()
        with self._session_guard:
            if self._session is not None:
                self._session.close()
                self._session = None

    @contextmanager
    def _conn(self) -> Iterator[Any]:
        """This thread's transaction connection, or one from the pool for one statement."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            yield conn
            return
        with self._pool.connection() as conn:
            yield conn

    def _exec(self, sql: str, args: Sequence[Any] = ()) -> _Rows:
        with self._conn() as conn:
            return _Rows(conn.execute(sql, args))

    def _many(self, sql: str, rows: Sequence[Sequence[Any]]) -> int:
        if not rows:
            return 0
        with self._conn() as conn, conn.cursor() as cur:
            cur.executemany(sql, rows)
            return max(cur.rowcount, 0)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One transaction on one pooled connection for every store call of this thread inside it; nested use
        joins the outer one."""
        if getattr(self._local, "conn", None) is not None:
            yield
            return
        with self._pool.connection() as conn:
            self._local.conn = conn
            try:
                with conn.transaction():
                    yield
            finally:
                self._local.conn = None
        if self._on_commit is not None:
            self._on_commit()

    def applied_migrations(self) -> list[str]:
        return [r[0] for r in self._exec("SELECT name FROM _pagemind_migrations ORDER BY position")]

    # --- documents and memories --------------------------------------------------------------------
    def put_document(self, doc_id: str, name: str, words: int, chars: int) -> None:
        self._exec("INSERT INTO documents VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                   (doc_id, name, words, chars, time.time()))

    def open_memory(self, key: str, document_id: str, method: str, settings: dict[str, Any],
                    model: str, scope: str = "") -> MemoryRecord:
        now = time.time()
        self._exec("INSERT INTO memories (key, document_id, method, settings, model, status, created, updated, scope) "
                   "VALUES (%s, %s, %s, %s, %s, 'building', %s, %s, %s) ON CONFLICT DO NOTHING",
                   (key, document_id, method, canonical_json(settings), model, now, now, scope))
        found = self.get_memory(key)
        assert found is not None
        return found

    def get_memory(self, key: str) -> MemoryRecord | None:
        row = self._exec(_MEMORY + " WHERE key = %s", (key,)).fetchone()
        return None if row is None else _memory(row)

    def memories_for(self, document_id: str, method: str | None = None, *,
                     scope: str | None = None) -> list[MemoryRecord]:
        sql, args = _MEMORY + " WHERE document_id = %s", (document_id,)
        if method:
            sql, args = sql + " AND method = %s", args + (method,)
        if scope is not None:
            sql, args = sql + " AND scope = %s", args + (scope,)
        return [_memory(r) for r in self._exec(sql + " ORDER BY updated DESC", args)]

    def memory_items(self, key: str) -> dict[str, list[dict[str, Any]]]:
        found: dict[str, list[dict[str, Any]]] = {}
        for kind, payload in self._exec("SELECT kind, payload FROM memory_items WHERE memory_key = %s "
                                        "ORDER BY kind, idx", (key,)).fetchall():
            found.setdefault(kind, []).append(json.loads(payload))
        return found

    def list_memories(self) -> list[MemorySummary]:
        rows = self._exec(
            "SELECT m.key, m.document_id, COALESCE(d.name, ''), COALESCE(d.words, 0), m.method, m.settings, m.model, "
            "m.status, COUNT(i.idx), COALESCE(SUM(LENGTH(i.payload)), 0), m.build_usage, m.updated, m.scope "
            "FROM memories m LEFT JOIN documents d ON d.id = m.document_id "
            "LEFT JOIN memory_items i ON i.memory_key = m.key GROUP BY m.key, d.name, d.words "
            "ORDER BY m.updated DESC").fetchall()
        return [MemorySummary(r[0], r[1], r[2], int(r[3]), r[4], json.loads(r[5]), r[6], r[7], int(r[8]), int(r[9]),
                              json.loads(r[10]) if r[10] else None, r[11], r[12]) for r in rows]

    def delete_memory(self, key: str) -> bool:
        with self.transaction():
            self._exec("DELETE FROM memory_items WHERE memory_key = %s", (key,))
            return self._exec("DELETE FROM memories WHERE key = %s RETURNING key", (key,)).fetchone() is not None

    def add_build_usage(self, key: str, usage: dict[str, Any], resumed: bool) -> None:
        with self.transaction():
            row = self._exec("SELECT build_usage FROM memories WHERE key = %s FOR NO KEY UPDATE", (key,)).fetchone()
            if row is None:
                return
            total: dict[str, Any] = json.loads(row[0]) if row[0] else {"attempts": 0, "resumed": False}
            for name, value in usage.items():
                if isinstance(value, (int, float)):
                    total[name] = round(total.get(name, 0) + value, 3)
            total["attempts"] += 1
            total["resumed"] = total["resumed"] or resumed
            self._exec("UPDATE memories SET build_usage = %s WHERE key = %s", (canonical_json(total), key))

    def clear_responses(self) -> int:
        return self._exec("DELETE FROM llm_cache").rowcount

    def mark_complete(self, key: str) -> None:
        self._exec("UPDATE memories SET status = 'complete', updated = %s WHERE key = %s", (time.time(), key))

    def put_item(self, key: str, kind: str, idx: int, payload: dict[str, Any]) -> None:
        self.put_items(key, kind, [(idx, payload)])

    def put_items(self, key: str, kind: str, items: Sequence[tuple[int, dict[str, Any]]]) -> None:
        rows = [(key, kind, idx, canonical_json(payload)) for idx, payload in items]
        with self.transaction():
            self._many("INSERT INTO memory_items VALUES (%s, %s, %s, %s) ON CONFLICT (memory_key, kind, idx) "
                       "DO UPDATE SET payload = excluded.payload", rows)
            self._exec("UPDATE memories SET updated = %s WHERE key = %s", (time.time(), key))

    def items(self, key: str, kind: str) -> list[dict[str, Any]]:
        return [payload for _, payload in self.iter_items(key, kind)]

    def iter_items(self, key: str, kind: str) -> Iterator[tuple[int, dict[str, Any]]]:
        rows = self._exec("SELECT idx, payload FROM memory_items WHERE memory_key = %s AND kind = %s ORDER BY idx",
                          (key, kind)).fetchall()
        for idx, payload in rows:
            yield int(idx), json.loads(payload)

    def delete_items(self, key: str, kind: str, from_idx: int = 0) -> None:
        self._exec("DELETE FROM memory_items WHERE memory_key = %s AND kind = %s AND idx >= %s", (key, kind, from_idx))

    # --- embedding cache ---------------------------------------------------------------------------
    def get_embeddings(self, model: str, text_hashes: Sequence[str]) -> dict[str, StoredVectors]:
        rows = self._exec("SELECT text_hash, chunks, dim, vectors FROM embeddings WHERE model = %s AND "
                          "text_hash = ANY(%s)", (model, sorted(set(text_hashes))))
        return {h: StoredVectors(int(chunks), int(dim), bytes(blob)) for h, chunks, dim, blob in rows}

    def put_embeddings(self, model: str, vectors: Mapping[str, StoredVectors]) -> None:
        now = time.time()
        rows = [(model, h, v.chunks, v.dim, v.data, now) for h, v in vectors.items()]
        with self.transaction():
            self._many("INSERT INTO embeddings VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (model, text_hash) DO "
                       "UPDATE SET chunks = excluded.chunks, dim = excluded.dim, vectors = excluded.vectors, "
                       "created = excluded.created", rows)

    def count_embeddings(self, model: str | None = None) -> int:
        sql, args = ("SELECT COUNT(*) FROM embeddings", ()) if model is None else (
            "SELECT COUNT(*) FROM embeddings WHERE model = %s", (model,))
        return int(self._exec(sql, args).fetchone()[0])

    # --- LLM response cache ------------------------------------------------------------------------
    def get_response(self, key: str) -> LLMResponse | None:
        row = self._exec("SELECT model, text, prompt_tokens, completion_tokens, seconds, finish_reason, tool_calls "
                         "FROM llm_cache WHERE key = %s", (key,)).fetchone()
        if row is None:
            return None
        calls = tuple(ToolCall(c["name"], c["arguments"]) for c in json.loads(row[6])) if row[6] else ()
        return LLMResponse(text=row[1], prompt_tokens=row[2], completion_tokens=row[3], seconds=row[4], model=row[0],
                           cached=True, finish_reason=row[5], tool_calls=calls)

    def put_response(self, key: str, response: LLMResponse) -> None:
        calls = json.dumps([c.__dict__ for c in response.tool_calls]) if response.tool_calls else None
        self._exec("INSERT INTO llm_cache (key, model, text, prompt_tokens, completion_tokens, seconds, "
                   "finish_reason, created, tool_calls) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) "
                   "ON CONFLICT (key) DO UPDATE SET model = excluded.model, text = excluded.text, "
                   "prompt_tokens = excluded.prompt_tokens, completion_tokens = excluded.completion_tokens, "
                   "seconds = excluded.seconds, finish_reason = excluded.finish_reason, created = excluded.created, "
                   "tool_calls = excluded.tool_calls",
                   (key, response.model, response.text, response.prompt_tokens, response.completion_tokens,
                    response.seconds, response.finish_reason, time.time(), calls))

    # --- agents ------------------------------------------------------------------------------------
    def _lock_agent_row(self, agent_id: int) -> None:
        """Inside a transaction: serialise with every other writer that reads this agent's rows before writing."""
        self._exec("SELECT 1 FROM agents WHERE id = %s FOR NO KEY UPDATE", (agent_id,))

    def create_agent(self, name: str, settings: dict[str, Any], state: dict[str, Any], created: float,
                     blocks: Sequence[BlockRow]) -> int | None:
        with self.transaction():
            row = self._exec("INSERT INTO agents (name, settings, state, created) VALUES (%s, %s, %s, %s) "
                             "ON CONFLICT (name) DO NOTHING RETURNING id",
                             (name, canonical_json(settings), canonical_json(state), created)).fetchone()
            if row is None:
                return None
            agent_id = int(row[0])
            self._many("INSERT INTO agent_blocks VALUES (%s, %s, %s, %s, %s, %s)",
                       [(agent_id, b.label, b.value, b.limit, i, created) for i, b in enumerate(blocks)])
        return agent_id

    def get_agent(self, name: str) -> AgentRow | None:
        row = self._exec("SELECT id, name, settings, state, created FROM agents WHERE name = %s", (name,)).fetchone()
        return None if row is None else _agent(row)

    def list_agents(self) -> list[AgentRow]:
        return [_agent(r) for r in self._exec("SELECT id, name, settings, state, created FROM agents ORDER BY name")]

    def delete_agent(self, name: str) -> bool:
        return self._exec("DELETE FROM agents WHERE name = %s", (name,)).rowcount > 0

    def set_agent_state(self, agent_id: int, state: dict[str, Any]) -> None:
        self._exec("UPDATE agents SET state = %s WHERE id = %s", (canonical_json(state), agent_id))

    def set_agent_settings(self, agent_id: int, settings: dict[str, Any]) -> None:
        self._exec("UPDATE agents SET settings = %s WHERE id = %s", (canonical_json(settings), agent_id))

    def agent_blocks(self, agent_id: int) -> list[BlockRow]:
        rows = self._exec("SELECT label, value, char_limit FROM agent_blocks WHERE agent_id = %s ORDER BY position",
                          (agent_id,))
        return [BlockRow(r[0], r[1], int(r[2])) for r in rows]

    def put_agent_block(self, agent_id: int, block: BlockRow) -> None:
        with self.transaction():
            self._lock_agent_row(agent_id)
            pos = self._exec("SELECT COALESCE(MAX(position) + 1, 0) FROM agent_blocks WHERE agent_id = %s",
                             (agent_id,)).fetchone()[0]
            self._exec("INSERT INTO agent_blocks VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (agent_id, label) DO "
                       "UPDATE SET value = excluded.value, char_limit = excluded.char_limit, updated = excluded.updated",
                       (agent_id, block.label, block.value, block.limit, pos, time.time()))

    def append_agent_events(self, agent_id: int, events: Sequence[EventRow]) -> list[int]:
        with self.transaction():
            self._lock_agent_row(agent_id)
            last = int(self._exec("SELECT COALESCE(MAX(seq), 0) FROM agent_messages WHERE agent_id = %s",
                                  (agent_id,)).fetchone()[0])
            seqs = list(range(last + 1, last + 1 + len(events)))
            self._many("INSERT INTO agent_messages (agent_id, seq, kind, text, payload, created, in_context) "
                       "VALUES (%s, %s, %s, %s, %s, %s, %s)",
                       [(agent_id, seq, e.kind, e.text, json.dumps(e.payload, ensure_ascii=False), e.created,
                         int(e.in_context)) for seq, e in zip(seqs, events)])
        return seqs

    def agent_queue(self, agent_id: int) -> list[EventRow]:
        return [_event(r) for r in self._exec(
            f"SELECT {_EVENT_COLUMNS} FROM agent_messages WHERE agent_id = %s AND in_context = 1 "
            "ORDER BY kind != 'summary', seq", (agent_id,))]

    def evict_agent_events(self, agent_id: int, seqs: Sequence[int]) -> None:
        with self.transaction():
            self._exec("UPDATE agent_messages SET in_context = 0 WHERE agent_id = %s AND kind = 'summary'",
                       (agent_id,))
            self._exec("UPDATE agent_messages SET in_context = 0 WHERE agent_id = %s AND seq = ANY(%s)",
                       (agent_id, list(seqs)))

    def count_agent_events(self, agent_id: int, in_context: bool | None = None) -> int:
        sql, args = "SELECT COUNT(*) FROM agent_messages WHERE agent_id = %s", (agent_id,)
        if in_context is not None:
            sql, args = sql + " AND in_context = %s", args + (int(in_context),)
        return int(self._exec(sql, args).fetchone()[0])

    def recent_agent_events(self, agent_id: int, limit: int) -> list[EventRow]:
        rows = self._exec(f"SELECT {_EVENT_COLUMNS} FROM agent_messages WHERE agent_id = %s ORDER BY seq DESC "
                          "LIMIT %s", (agent_id, limit)).fetchall()
        return [_event(r) for r in reversed(rows)]

    def search_agent_events(self, agent_id: int, kinds: Sequence[str], *, query: str | None = None,
                            start: str | None = None, end: str | None = None, offset: int = 0,
                            limit: int = 5) -> tuple[int, list[EventRow]]:
        where, args = "agent_id = %s AND kind = ANY(%s)", (agent_id, list(kinds))
        if query is not None:
            where, args = where + " AND text ILIKE %s ESCAPE '\\'", args + (_like(query),)
        if start is not None:
            where, args = where + " AND created >= %s", args + (start,)
        if end is not None:
            where, args = where + " AND created < %s", args + (end,)
        with self.transaction():  # the count and the page from one snapshot of concurrent writers
            total = int(self._exec(f"SELECT COUNT(*) FROM agent_messages WHERE {where}", args).fetchone()[0])
            rows = self._exec(f"SELECT {_EVENT_COLUMNS} FROM agent_messages WHERE {where} ORDER BY seq "
                              "LIMIT %s OFFSET %s", args + (limit, offset))
        return total, [_event(r) for r in rows]

    def agent_event_texts(self, agent_id: int, kinds: Sequence[str]) -> list[tuple[int, str]]:
        return [(int(r[0]), r[1]) for r in self._exec(
            "SELECT seq, text FROM agent_messages WHERE agent_id = %s AND kind = ANY(%s) ORDER BY seq",
            (agent_id, list(kinds)))]

    def agent_events(self, agent_id: int, seqs: Sequence[int]) -> list[EventRow]:
        by_seq = {int(r[3]): _event(r) for r in self._exec(
            f"SELECT {_EVENT_COLUMNS} FROM agent_messages WHERE agent_id = %s AND seq = ANY(%s)",
            (agent_id, sorted(set(seqs))))}
        return [by_seq[s] for s in seqs if s in by_seq]

    def _ensure_vector_index(self, dim: int) -> None:
        """An HNSW index (inner product) over the passages of this dimension, made once per dimension."""
        if dim in self._indexed:
            return
        name = f"agent_passages_hnsw_{dim}"
        with self.transaction():
            self._exec("SELECT pg_advisory_xact_lock(%s, %s)", (0x70676D32, dim))
            self._exec(f"CREATE INDEX IF NOT EXISTS {name} ON agent_passages USING hnsw ((vec::vector({dim})) "
                       f"vector_ip_ops) WHERE vector_dims(vec) = {dim}")
        self._indexed.add(dim)

    def _index_dims(self, vectors: Sequence[Any]) -> None:
        for dim in sorted({len(v) for v in vectors if v is not None}):
            self._ensure_vector_index(dim)

    def insert_agent_passages(self, agent_id: int, passages: Sequence[PassageRow]) -> list[int]:
        if not passages:
            return []
        vecs = [_vec(p.embedding) for p in passages]
        self._index_dims(vecs)
        rows = [(agent_id, p.text, p.summary, p.source, p.embedding, p.embedder, p.created, v)
                for p, v in zip(passages, vecs)]
        ids: list[int] = []
        with self.transaction(), self._conn() as conn, conn.cursor() as cur:
            cur.executemany("INSERT INTO agent_passages (agent_id, text, summary, source, embedding, embedder, created, "
                            "vec) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) RETURNING id", rows, returning=True)
            while True:
                ids.append(int(cur.fetchone()[0]))
                if not cur.nextset():
                    break
        return ids

    def count_agent_passages(self, agent_id: int) -> int:
        return int(self._exec("SELECT COUNT(*) FROM agent_passages WHERE agent_id = %s", (agent_id,)).fetchone()[0])

    def search_agent_passages(self, agent_id: int, query: str, offset: int = 0,
                              limit: int | None = None) -> tuple[int, list[PassageRow]]:
        where = "agent_id = %s AND (text ILIKE %s ESCAPE '\\' OR summary ILIKE %s ESCAPE '\\')"
        args = (agent_id, _like(query), _like(query))
        with self.transaction():
            total = int(self._exec(f"SELECT COUNT(*) FROM agent_passages WHERE {where}", args).fetchone()[0])
            rows = self._exec(f"SELECT id, text, created, summary, source FROM agent_passages WHERE {where} "
                              "ORDER BY id LIMIT %s OFFSET %s", args + (limit, offset))
        return total, [_passage(r) for r in rows]

    def agent_passage_vectors(self, agent_id: int, embedder: str) -> list[tuple[int, bytes]]:
        return [(int(r[0]), bytes(r[1])) for r in self._exec(
            "SELECT id, embedding FROM agent_passages WHERE agent_id = %s AND embedder = %s AND embedding IS NOT NULL "
            "ORDER BY id", (agent_id, embedder))]

    def agent_passage_texts(self, agent_id: int) -> list[tuple[int, str]]:
        return [(int(r[0]), r[1]) for r in self._exec(
            "SELECT id, COALESCE(summary, '') || ' ' || text FROM agent_passages WHERE agent_id = %s ORDER BY id",
            (agent_id,))]

    def agent_passages(self, agent_id: int, ids: Sequence[int]) -> list[PassageRow]:
        by_id = {int(r[0]): _passage(r) for r in self._exec(
            "SELECT id, text, created, summary, source FROM agent_passages WHERE agent_id = %s AND id = ANY(%s)",
            (agent_id, sorted(set(ids))))}
        return [by_id[i] for i in ids if i in by_id]

    def nearest_agent_passages(self, agent_id: int, embedder: str, query: bytes,
                               limit: int | None = None) -> tuple[int, list[int]]:
        where = "agent_id = %s AND embedder = %s AND embedding IS NOT NULL"
        total = int(self._exec(f"SELECT COUNT(*) FROM agent_passages WHERE {where}", (agent_id, embedder))
                    .fetchone()[0])
        q = _vec(query)
        if total == 0 or limit is None or q is None or 2 * limit >= total:
            return total, rank(self.agent_passage_vectors(agent_id, embedder), query, limit)
        # candidates from pgvector (a margin beyond the limit, for rounding at the boundary), ranked exactly
        want = min(total, 2 * limit + 16)
        candidates: list[int] = []
        if total > self.exact_up_to:
            candidates = self._hnsw_candidates(agent_id, embedder, q, want)
        if len(candidates) < want:  # exact search (also when the index, which filters late, found too few)
            candidates = [int(r[0]) for r in self._exec(
                f"SELECT id FROM agent_passages WHERE {where} AND vec IS NOT NULL ORDER BY vec <#> %s, id LIMIT %s",
                (agent_id, embedder, q, want))]
        rows = [(int(r[0]), bytes(r[1])) for r in self._exec(
            "SELECT id, embedding FROM agent_passages WHERE id = ANY(%s) ORDER BY id", (candidates,))]
        return total, rank(rows, query, limit)

    def _hnsw_candidates(self, agent_id: int, embedder: str, q: Any, want: int) -> list[int]:
        dim = len(q)
        with self.transaction():
            self._exec(f"SET LOCAL hnsw.ef_search = {min(1000, max(int(self.ef_search), want))}")
            return [int(r[0]) for r in self._exec(
                f"SELECT id FROM agent_passages WHERE agent_id = %s AND embedder = %s AND vector_dims(vec) = {dim} "
                f"ORDER BY vec::vector({dim}) <#> %s::vector({dim}) LIMIT %s", (agent_id, embedder, q, want))]

    # --- turn locks --------------------------------------------------------------------------------
    def _liveness_key(self) -> int:
        """The advisory lock this process holds while it lives (on a connection of its own, outside the pool)."""
        with self._session_guard:
            if self._session is None or self._session.closed:
                import psycopg

                conn = psycopg.connect(self.url, autocommit=True)
                key = secrets.randbits(62)
                conn.execute("SELECT pg_advisory_lock(%s)", (key,))
                self._session, self._session_key = conn, key
            return self._session_key

    def _session_alive(self, key: int | None) -> bool:
        if key is None:
            return True  # a holder without a liveness lock: only ``stale`` can tell
        return bool(self._exec(
            "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 AND "
            "database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND "
            "((classid::bigint << 32) | objid::bigint) = %s)", (key,)).fetchone()[0])

    def try_lock_agent(self, agent_id: int, owner: str, pid: int, host: str,
                       stale: Callable[[LockHolder], bool]) -> bool:
        session = self._liveness_key()
        now = time.time()
        with self.transaction():
            self._lock_agent_row(agent_id)
            row = self._exec("SELECT owner, pid, host, refreshed, session FROM agent_locks WHERE agent_id = %s",
                             (agent_id,)).fetchone()
            if row is not None and row[0] != owner:
                holder = LockHolder(row[0], int(row[1]), row[2], float(row[3]))
                if self._session_alive(row[4]) and not stale(holder):
                    return False
            self._exec("INSERT INTO agent_locks VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (agent_id) DO UPDATE "
                       "SET owner = excluded.owner, pid = excluded.pid, host = excluded.host, "
                       "acquired = excluded.acquired, refreshed = excluded.refreshed, session = excluded.session",
                       (agent_id, owner, pid, host, now, now, session))
        return True

    def refresh_agent_lock(self, agent_id: int, owner: str) -> None:
        self._exec("UPDATE agent_locks SET refreshed = %s WHERE agent_id = %s AND owner = %s",
                   (time.time(), agent_id, owner))

    def release_agent_lock(self, agent_id: int, owner: str) -> None:
        self._exec("DELETE FROM agent_locks WHERE agent_id = %s AND owner = %s", (agent_id, owner))

    def agent_lock_holder(self, agent_id: int) -> LockHolder | None:
        row = self._exec("SELECT owner, pid, host, refreshed FROM agent_locks WHERE agent_id = %s",
                         (agent_id,)).fetchone()
        return None if row is None else LockHolder(row[0], int(row[1]), row[2], float(row[3]))

    # --- leases ------------------------------------------------------------------------------------------
    def try_lease(self, name: str, owner: str, pid: int, host: str, stale: Callable[[LockHolder], bool]) -> bool:
        session = self._liveness_key()
        now = time.time()
        with self.transaction():
            # the row may not exist yet: serialise on the name itself
            self._exec("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (0x70676D33, name))
            row = self._exec("SELECT owner, pid, host, refreshed, session FROM leases WHERE name = %s",
                             (name,)).fetchone()
            if row is not None and row[0] != owner:
                holder = LockHolder(row[0], int(row[1]), row[2], float(row[3]))
                if self._session_alive(row[4]) and not stale(holder):
                    return False
            self._exec("INSERT INTO leases VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (name) DO UPDATE "
                       "SET owner = excluded.owner, pid = excluded.pid, host = excluded.host, "
                       "acquired = excluded.acquired, refreshed = excluded.refreshed, session = excluded.session",
                       (name, owner, pid, host, now, now, session))
        return True

    def refresh_lease(self, name: str, owner: str) -> None:
        self._exec("UPDATE leases SET refreshed = %s WHERE name = %s AND owner = %s", (time.time(), name, owner))

    def release_lease(self, name: str, owner: str) -> None:
        self._exec("DELETE FROM leases WHERE name = %s AND owner = %s", (name, owner))

    def lease_holder(self, name: str) -> LockHolder | None:
        row = self._exec("SELECT owner, pid, host, refreshed FROM leases WHERE name = %s", (name,)).fetchone()
        return None if row is None else LockHolder(row[0], int(row[1]), row[2], float(row[3]))

    # --- moving a store ------------------------------------------------------------------------------
    def table_rows(self, table: str, columns: Sequence[str]) -> Iterator[tuple[Any, ...]]:
        _check_names(table, columns)
        with self._pool.connection() as conn, conn.transaction(), conn.cursor(name="pagemind_table_rows") as cur:
            cur.itersize = 1000
            cur.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {_ORDER[table]}")
            for row in cur:
                yield tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)

    def add_table_rows(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], *,
                       skip_existing: bool = False) -> int:
        _check_names(table, columns)
        columns, rows = list(columns), [tuple(r) for r in rows]
        if table == "agent_passages" and "embedding" in columns:  # the searchable copy of each vector
            at = columns.index("embedding")
            vecs = [_vec(r[at]) for r in rows]
            self._index_dims(vecs)
            columns, rows = columns + ["vec"], [r + (v,) for r, v in zip(rows, vecs)]
        conflict = " ON CONFLICT DO NOTHING" if skip_existing else ""
        with self.transaction():
            n = self._many(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(['%s'] * len(columns))})"
                           + conflict, rows)
            if table in _IDENTITY:  # the next generated id follows the copied ones
                column = _IDENTITY[table]
                self._exec(f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
                           f"GREATEST((SELECT MAX({column}) FROM {table}), 1))")
        return n

    def count_rows(self, table: str) -> int:
        _check_names(table, ())
        return int(self._exec(f"SELECT COUNT(*) FROM {table}").fetchone()[0])

    # --- users, their documents and agents ---------------------------------------------------------
    def create_user(self, name: str, key_hash: str, created: float) -> int | None:
        with self.transaction():
            row = self._exec("INSERT INTO users (name, created) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING "
                             "RETURNING id", (name, created)).fetchone()
            if row is None:
                return None
            user_id = int(row[0])
            self._exec("INSERT INTO api_keys VALUES (%s, %s, %s)", (key_hash, user_id, created))
        return user_id

    def add_user_key(self, user_id: int, key_hash: str, created: float) -> None:
        self._exec("INSERT INTO api_keys VALUES (%s, %s, %s)", (key_hash, user_id, created))

    def user_for_key(self, key_hash: str) -> UserRow | None:
        row = self._exec("SELECT u.id, u.name, u.created FROM api_keys k JOIN users u ON u.id = k.user_id "
                         "WHERE k.hash = %s", (key_hash,)).fetchone()
        return None if row is None else UserRow(*row)

    def get_user(self, name: str) -> UserRow | None:
        row = self._exec("SELECT id, name, created FROM users WHERE name = %s", (name,)).fetchone()
        return None if row is None else UserRow(*row)

    def list_users(self) -> list[UserRow]:
        return [UserRow(*r) for r in self._exec("SELECT id, name, created FROM users ORDER BY id")]

    def put_document_text(self, doc_id: str, text: str) -> None:
        self._exec("INSERT INTO document_texts VALUES (%s, %s) ON CONFLICT DO NOTHING", (doc_id, text))

    def document_text(self, doc_id: str) -> str | None:
        row = self._exec("SELECT text FROM document_texts WHERE document_id = %s", (doc_id,)).fetchone()
        return None if row is None else row[0]

    def add_user_document(self, user_id: int, doc_id: str, name: str, created: float) -> None:
        self._exec("INSERT INTO user_documents VALUES (%s, %s, %s, %s) "
                   "ON CONFLICT (user_id, document_id) DO UPDATE SET name = excluded.name",
                   (user_id, doc_id, name, created))

    _USER_DOCUMENT = ("SELECT d.id, u.name, d.words, d.chars, u.created FROM user_documents u "
                      "JOIN documents d ON d.id = u.document_id WHERE u.user_id = %s")

    def user_documents(self, user_id: int) -> list[DocumentRow]:
        return [DocumentRow(*r) for r in self._exec(self._USER_DOCUMENT + " ORDER BY u.created DESC, d.id",
                                                    (user_id,))]

    def user_document(self, user_id: int, doc_id: str) -> DocumentRow | None:
        row = self._exec(self._USER_DOCUMENT + " AND d.id = %s", (user_id, doc_id)).fetchone()
        return None if row is None else DocumentRow(*row)

    def remove_user_document(self, user_id: int, doc_id: str) -> bool:
        with self.transaction():
            gone = self._exec("DELETE FROM user_documents WHERE user_id = %s AND document_id = %s",
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
        where, args = "scope = %s", (scope,)
        if doc_id is not None:
            where, args = where + " AND document_id = %s", args + (doc_id,)
        self._exec(f"DELETE FROM memory_items WHERE memory_key IN (SELECT key FROM memories WHERE {where})", args)
        return self._exec(f"DELETE FROM memories WHERE {where}", args).rowcount

    def _forget_unheld(self, doc_ids: Sequence[str]) -> int:
        """Delete the kept texts and the memories of documents no user holds any more (inside a transaction)."""
        forgotten = 0
        for doc_id in doc_ids:
            self._exec("SELECT 1 FROM documents WHERE id = %s FOR UPDATE", (doc_id,))
            if self._exec("SELECT 1 FROM user_documents WHERE document_id = %s", (doc_id,)).fetchone():
                continue
            self._exec("DELETE FROM memory_items WHERE memory_key IN (SELECT key FROM memories WHERE document_id = %s)",
                       (doc_id,))
            self._exec("DELETE FROM memories WHERE document_id = %s", (doc_id,))
            forgotten += self._exec("DELETE FROM document_texts WHERE document_id = %s", (doc_id,)).rowcount
            self._exec("DELETE FROM documents WHERE id = %s", (doc_id,))
        return forgotten

    def set_agent_owner(self, agent_id: int, user_id: int) -> None:
        self._exec("INSERT INTO agent_owners VALUES (%s, %s) ON CONFLICT (agent_id) DO UPDATE "
                   "SET user_id = excluded.user_id", (agent_id, user_id))

    def agent_owner(self, agent_id: int) -> int | None:
        row = self._exec("SELECT user_id FROM agent_owners WHERE agent_id = %s", (agent_id,)).fetchone()
        return None if row is None else int(row[0])

    def user_agents(self, user_id: int) -> list[AgentRow]:
        return [_agent(r) for r in self._exec(
            "SELECT a.id, a.name, a.settings, a.state, a.created FROM agents a JOIN agent_owners o ON o.agent_id = a.id "
            "WHERE o.user_id = %s ORDER BY a.id", (user_id,))]

    def get_agent_by_id(self, agent_id: int) -> AgentRow | None:
        row = self._exec("SELECT id, name, settings, state, created FROM agents WHERE id = %s", (agent_id,)).fetchone()
        return None if row is None else _agent(row)

    def erase_user_data(self, user_id: int) -> dict[str, int]:
        with self.transaction():
            docs = [r[0] for r in self._exec("SELECT document_id FROM user_documents WHERE user_id = %s ORDER BY "
                                             "document_id", (user_id,))]
            self._exec("DELETE FROM user_documents WHERE user_id = %s", (user_id,))
            memories = self._forget_scope(memory_scope(self, user_id))
            texts = self._forget_unheld(docs)
            agents = self._exec("DELETE FROM agents WHERE id IN (SELECT agent_id FROM agent_owners WHERE "
                                "user_id = %s)", (user_id,)).rowcount
            runs = self._exec("DELETE FROM runs WHERE user_id = %s", (user_id,)).rowcount
        return {"documents": len(docs), "document_texts": texts, "memories": memories, "agents": agents, "runs": runs}

    # --- runs ----------------------------------------------------------------------------------------
    _RUN = ("SELECT id, user_id, kind, method, target, request, status, created, started, finished, result, error, "
            "cancel_requested FROM runs")

    def create_run(self, run: RunRow) -> None:
        self._exec("INSERT INTO runs (id, user_id, kind, method, target, request, status, created, started, finished, "
                   "result, error, cancel_requested) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                   (run.id, run.user_id, run.kind, run.method, run.target, canonical_json(run.request), run.status,
                    run.created, run.started, run.finished, None if run.result is None else canonical_json(run.result),
                    run.error, int(run.cancel_requested)))

    def get_run(self, run_id: str) -> RunRow | None:
        row = self._exec(self._RUN + " WHERE id = %s", (run_id,)).fetchone()
        return None if row is None else _run(row)

    def list_runs(self, user_id: int | None, *, all_users: bool = False, kind: str | None = None,
                  target: str | None = None, status: str | None = None, prefix: str | None = None,
                  limit: int = 50, offset: int = 0) -> list[RunRow]:
        where: list[str] = []
        args: list[Any] = []
        if not all_users:
            where.append("user_id IS NOT DISTINCT FROM %s")
            args.append(user_id)
        for column, value in (("kind", kind), ("target", target), ("status", status)):
            if value is not None:
                where.append(f"{column} = %s")
                args.append(value)
        if prefix is not None:
            where.append("left(id, %s) = %s")
            args.extend((len(prefix), prefix))
        sql = self._RUN + (" WHERE " + " AND ".join(where) if where else "")
        return [_run(r) for r in self._exec(sql + " ORDER BY created DESC, n DESC LIMIT %s OFFSET %s",
                                            (*args, limit, offset))]

    def count_runs(self, user_id: int | None) -> int:
        return int(self._exec("SELECT COUNT(*) FROM runs WHERE user_id IS NOT DISTINCT FROM %s",
                              (user_id,)).fetchone()[0])

    _RUN_FIELDS = ("status", "started", "finished", "result", "error")

    def update_run(self, run_id: str, **fields: Any) -> None:
        unknown = set(fields) - set(self._RUN_FIELDS)
        if unknown:
            raise ValueError(f"not a run field: {', '.join(sorted(unknown))}")
        if not fields:
            return
        if "result" in fields and fields["result"] is not None:
            fields["result"] = canonical_json(fields["result"])
        sets = ", ".join(f"{name} = %s" for name in fields)
        self._exec(f"UPDATE runs SET {sets} WHERE id = %s", (*fields.values(), run_id))

    def request_cancel(self, run_id: str) -> bool:
        return self._exec("UPDATE runs SET cancel_requested = 1 WHERE id = %s AND status IN ('queued', 'running')",
                          (run_id,)).rowcount > 0

    def append_run_step(self, run_id: str, kind: str, data: dict[str, Any], created: float) -> int:
        with self.transaction():
            self._exec("SELECT 1 FROM runs WHERE id = %s FOR NO KEY UPDATE", (run_id,))
            seq = int(self._exec("SELECT COALESCE(MAX(seq), -1) + 1 FROM run_steps WHERE run_id = %s",
                                 (run_id,)).fetchone()[0])
            self._exec("INSERT INTO run_steps VALUES (%s, %s, %s, %s, %s)",
                       (run_id, seq, kind, canonical_json(data), created))
        return seq

    def run_steps(self, run_id: str, after: int = -1, limit: int | None = None) -> list[StepRow]:
        rows = self._exec("SELECT run_id, seq, kind, data, created FROM run_steps WHERE run_id = %s AND seq > %s "
                          "ORDER BY seq LIMIT %s", (run_id, after, limit))
        return [StepRow(r[0], int(r[1]), r[2], json.loads(r[3]), r[4]) for r in rows]
