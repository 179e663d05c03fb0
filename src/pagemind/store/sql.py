"""The one SQL store: documents, memories (written unit by unit, so a killed build resumes), the embedding and LLM
response caches, MemGPT agents, users, runs and leases, for SQLite and Postgres alike. Every SQL statement of
pagemind is here or in ``schema``; it is written once, with ``?`` placeholders, and what the two databases do
differently is the dialect's (``sqlite.SQLite``, ``postgres.Postgres``): connections and transactions, placeholders,
case-insensitive matching, row locks, bulk loads, liveness of lock holders and vector search. Values in and out
are the plain frozen dataclasses of ``base``."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar, Protocol

from ..hashing import canonical_json
from ..llm.base import LLMResponse, TokenLogprob, ToolCall
from .rows import (
    AgentRow,
    BlockRow,
    BlockVersionRow,
    DocumentRow,
    EventRow,
    LibraryDocumentRow,
    LibraryRow,
    LockHolder,
    MemoryRecord,
    MemorySummary,
    PassageRow,
    RunRow,
    StepRow,
    StoredVectors,
    UserRow,
    memory_scope,
)

_BATCH = 500  # values per IN (...) list, well under SQLite's host parameter limit
_NAME = re.compile(r"^[a-z_]+$")
# pagemind's tables and the order ``table_rows`` reads them in (None: the order rows were written)
TABLE_ORDER = {"documents": "id", "document_texts": "document_id", "llm_cache": "key", "file_reads": "digest",
               "token_counts": "key", "memories": "key",
               "memory_items": "memory_key, kind, idx", "embeddings": "model, text_hash", "agents": "id",
               "agent_blocks": "agent_id, position", "agent_block_versions": "agent_id, label, version",
               "agent_messages": "agent_id, seq", "agent_passages": "id", "agent_forgotten": "agent_id, id",
               "users": "id", "api_keys": "created, hash", "user_documents": "user_id, document_id",
               "agent_owners": "agent_id", "runs": None, "run_steps": "run_id, seq", "leases": "name",
               "libraries": "id", "library_documents": "library_id, name"}
_VERSION_COLUMNS = "label, version, value, char_limit, description, cause, created"
_VERSION_INSERT = ("INSERT INTO agent_block_versions (agent_id, label, version, value, char_limit, description, "
                   "cause, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")


def _version(r: Sequence[Any]) -> BlockVersionRow:
    return BlockVersionRow(r[0], int(r[1]), r[2], int(r[3]), r[4], r[5], float(r[6]))


PASSAGE_COLUMNS = ("id", "agent_id", "text", "summary", "source", "embedding", "embedder", "created")


class Rows:
    """A statement's result, read completely before its connection (or the lock of a shared one) is let go."""

    def __init__(self, rows: list[Any], rowcount: int) -> None:
        self.rows, self.rowcount = rows, rowcount

    def fetchone(self) -> Any:
        return self.rows[0] if self.rows else None

    def fetchall(self) -> list[Any]:
        return self.rows

    def __iter__(self) -> Iterator[Any]:
        return iter(self.rows)


def _check_names(table: str, columns: Sequence[str]) -> None:
    """Table and column names are put into SQL text: only pagemind's tables and plain identifiers pass."""
    if table not in TABLE_ORDER:
        raise ValueError(f"not one of pagemind's tables: {table!r}")
    for name in columns:
        if not _NAME.match(name):
            raise ValueError(f"not a column name: {name!r}")


def _like(query: str) -> str:
    escaped = query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _marks(n: int) -> str:
    return ", ".join("?" * n)


def upsert(table: str, columns: Sequence[str], key: Sequence[str], keep: Sequence[str] = ()) -> str:
    """INSERT of every column that updates the other columns (but ``keep``) of a row whose ``key`` is taken."""
    sets = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in key and c not in keep)
    return (f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({_marks(len(columns))}) "
            f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET {sets}")


_MEMORY = "SELECT key, document_id, method, settings, model, status, scope FROM memories"
_EVENT_COLUMNS = "kind, payload, created, seq, in_context, text"
_EVENT = f"SELECT {_EVENT_COLUMNS} FROM agent_messages"
_PASSAGE_COLUMNS = "id, text, created, summary, source, superseded_by, superseded, repeats"
_PASSAGE = f"SELECT {_PASSAGE_COLUMNS} FROM agent_passages"
_AGENT = "SELECT a.id, a.name, a.settings, a.state, a.created FROM agents a"
_RUN_COLUMNS = ("id, user_id, kind, method, target, request, status, created, started, finished, result, error, "
                "cancel_requested, usage")
_RUN = f"SELECT {_RUN_COLUMNS} FROM runs"
_RUN_FIELDS = ("status", "started", "finished", "result", "error", "usage")
_LIBRARY = ("SELECT l.id, l.name, l.created, COUNT(m.document_id), COALESCE(SUM(d.words), 0) FROM libraries l "
            "LEFT JOIN library_documents m ON m.library_id = l.id LEFT JOIN documents d ON d.id = m.document_id")
_USER_DOCUMENT = ("SELECT d.id, u.name, d.words, d.chars, u.created FROM user_documents u "
                  "JOIN documents d ON d.id = u.document_id WHERE u.user_id = ?")
_LLM_CACHE = ("key", "model", "text", "prompt_tokens", "completion_tokens", "seconds", "finish_reason", "created",
              "tool_calls", "logprobs")
_LEASE = ("name", "owner", "pid", "host", "acquired", "refreshed", "session")


def _memory(row: tuple) -> MemoryRecord:
    return MemoryRecord(row[0], row[1], row[2], json.loads(row[3]), row[4], row[5], row[6])


def _event(row: tuple) -> EventRow:
    return EventRow(row[0], json.loads(row[1]), row[2], int(row[3]), bool(row[4]), row[5])


def _passage(row: tuple) -> PassageRow:
    repeats = tuple((str(r[0]), r[1]) for r in json.loads(row[7])) if row[7] else ()
    return PassageRow(row[1], row[2], row[3], row[4], id=int(row[0]),
                      superseded_by=None if row[5] is None else int(row[5]), superseded=row[6], repeats=repeats)


def _agent(row: tuple) -> AgentRow:
    return AgentRow(int(row[0]), row[1], json.loads(row[2]), json.loads(row[3]), float(row[4]))


def _run(row: tuple) -> RunRow:
    return RunRow(row[0], row[1], row[2], row[3], row[4], json.loads(row[5]), row[6], row[7], row[8], row[9],
                  json.loads(row[10]) if row[10] else None, row[11], bool(row[12]),
                  json.loads(row[13]) if row[13] else None)


def _holder(row: tuple | None) -> LockHolder | None:
    return None if row is None else LockHolder(row[0], int(row[1]), row[2], float(row[3]))


def _one(rows: Any) -> Any:
    row = rows.fetchone()
    return None if row is None else row[0]


def _id_page(sql: str, args: tuple[Any, ...], column: str, after: int | None, before: int | None,
             limit: int | None, descending: bool = False) -> tuple[str, tuple[Any, ...]]:
    """``sql`` (ending in a WHERE clause) narrowed to one page by id cursor: ``column`` above ``after`` and below
    ``before``, in id order (``descending``: newest first), at most ``limit`` rows (None: all)."""
    if after is not None:
        sql, args = sql + f" AND {column} > ?", args + (after,)
    if before is not None:
        sql, args = sql + f" AND {column} < ?", args + (before,)
    sql += f" ORDER BY {column} {'DESC' if descending else 'ASC'}"
    return (sql + " LIMIT ?", args + (limit,)) if limit is not None else (sql, args)


class Dialect(Protocol):
    """What a database does differently, declared once (``sqlite.SQLite``, ``postgres.Postgres``): the store's SQL
    is written once against these names, placeholders ``?`` and the column types of :mod:`.schema`."""

    name: str  # "sqlite" | "postgres": which scripts of a migration run
    types: ClassVar[dict[str, str]]  # ``{ID}``, ``{INT}``, ``{REAL}``, ``{BLOB}``, ``{VEC}``... in migrations
    migrations_table: str  # the DDL of the table that records applied migrations
    records_order: str  # the column that orders rows by insertion ("rowid", "id")
    insertion_order: str
    ilike: str  # case-insensitive LIKE
    same: str  # null-safe equality ("IS", "IS NOT DISTINCT FROM")
    no_limit: str  # LIMIT that means "every row"
    where: str  # the database as messages name it (a path, or a URL without its password)

    def ready(self) -> None: ...
    def close(self) -> None: ...
    def execute(self, sql: str, args: Sequence[Any] = ()) -> Rows: ...
    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> int: ...
    def transaction(self) -> AbstractContextManager[None]: ...
    def snapshot(self) -> Any: ...  # a context manager: one consistent view for several reads
    def stream(self, sql: str) -> Iterator[tuple[Any, ...]]: ...
    def locking(self, sql: str, strong: bool = False) -> str: ...
    def lock_migrations(self, store: SQLStore) -> None: ...
    def prepare_schema(self, store: SQLStore) -> None: ...
    def lock_name(self, store: SQLStore, name: str) -> None: ...
    def liveness_key(self) -> int | None: ...
    def session_alive(self, store: SQLStore, key: int | None) -> bool: ...
    def with_extra(self, table: str, columns: list[str], rows: list[tuple]) -> tuple[list[str], list[tuple]]: ...
    def after_load(self, store: SQLStore, table: str) -> None: ...
    def reserve_ids(self, store: SQLStore, table: str, n: int) -> list[int]: ...
    def load(self, store: SQLStore, table: str, columns: Sequence[str], rows: Sequence[tuple]) -> int: ...
    def nearest(self, store: SQLStore, agent_id: int, embedder: str, query: bytes,
                limit: int | None) -> tuple[int, list[int]]: ...


class SQLStore:
    """Documents, memories, embeddings, the LLM response cache, agents, users, runs and leases in one database,
    over a dialect (``sqlite.Store(path)`` and ``postgres.PostgresStore(url)`` make one). Safe to share between
    threads; any number of processes may open the same database."""

    def __init__(self, dialect: Dialect) -> None:
        from .schema import migrate

        self.db: Dialect = dialect
        try:
            migrate(self)
            dialect.ready()
        except BaseException:
            dialect.close()
            raise

    # --- lifecycle ---------------------------------------------------------------------------------
    def close(self) -> None:
        """Release the connection(s)."""
        self.db.close()

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Any:
        """One statement (``?`` placeholders); its rows are read before it returns (``fetchone``, ``fetchall``,
        iteration, ``rowcount``)."""
        return self.db.execute(sql, args)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> int:
        return self.db.executemany(sql, rows) if rows else 0

    def transaction(self) -> AbstractContextManager[None]:
        """One write transaction: every store call inside it (this thread) commits or rolls back together; nested
        use joins the outer one."""
        return self.db.transaction()

    def applied_migrations(self) -> list[str]:
        """Names of the schema migrations recorded in this store, in the order they were applied."""
        from .schema import recorded

        return recorded(self)

    def _in(self, select: str, column: str, values: Sequence[Any], *args: Any) -> Iterator[Any]:
        """Rows of ``select ... AND column IN (values)`` (``select`` ends in a WHERE clause taking ``args``), asked
        in batches of host parameters."""
        unique = sorted(set(values))
        for b in range(0, len(unique), _BATCH):
            part = unique[b:b + _BATCH]
            yield from self.execute(f"{select} AND {column} IN ({_marks(len(part))})", (*args, *part))

    # --- documents and memories --------------------------------------------------------------------
    def put_document(self, doc_id: str, name: str, words: int, chars: int) -> None:
        self.execute("INSERT INTO documents VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                     (doc_id, name, words, chars, time.time()))

    def open_memory(self, key: str, document_id: str, method: str, settings: dict[str, Any],
                    model: str, scope: str = "") -> MemoryRecord:
        """The memory with this key, made ('building') if it does not exist yet."""
        now = time.time()
        self.execute("INSERT INTO memories (key, document_id, method, settings, model, status, created, updated, "
                     "scope) VALUES (?, ?, ?, ?, ?, 'building', ?, ?, ?) ON CONFLICT DO NOTHING",
                     (key, document_id, method, canonical_json(settings), model, now, now, scope))
        found = self.get_memory(key)
        assert found is not None
        return found

    def get_memory(self, key: str) -> MemoryRecord | None:
        row = self.execute(_MEMORY + " WHERE key = ?", (key,)).fetchone()
        return None if row is None else _memory(row)

    def memories_for(self, document_id: str, method: str | None = None, *,
                     scope: str | None = None) -> list[MemoryRecord]:
        sql, args = _MEMORY + " WHERE document_id = ?", (document_id,)  # type: tuple[str, tuple[Any, ...]]
        if method:
            sql, args = sql + " AND method = ?", args + (method,)
        if scope is not None:
            sql, args = sql + " AND scope = ?", args + (scope,)
        return [_memory(r) for r in self.execute(sql + " ORDER BY updated DESC", args)]

    def memory_items(self, key: str) -> dict[str, list[dict[str, Any]]]:
        """Every stored unit of a memory by kind, each kind in index order."""
        found: dict[str, list[dict[str, Any]]] = {}
        for kind, payload in self.execute("SELECT kind, payload FROM memory_items WHERE memory_key = ? "
                                          "ORDER BY kind, idx", (key,)):
            found.setdefault(kind, []).append(json.loads(payload))
        return found

    def list_memories(self) -> list[MemorySummary]:
        """Every memory with its document, size and build cost, most recently updated first."""
        rows = self.execute(
            "SELECT m.key, m.document_id, COALESCE(d.name, ''), COALESCE(d.words, 0), m.method, m.settings, m.model, "
            "m.status, COUNT(i.idx), COALESCE(SUM(LENGTH(i.payload)), 0), m.build_usage, m.updated, m.scope "
            "FROM memories m LEFT JOIN documents d ON d.id = m.document_id "
            "LEFT JOIN memory_items i ON i.memory_key = m.key GROUP BY m.key, d.name, d.words "
            "ORDER BY m.updated DESC")
        return [MemorySummary(r[0], r[1], r[2], int(r[3]), r[4], json.loads(r[5]), r[6], r[7], int(r[8]), int(r[9]),
                              json.loads(r[10]) if r[10] else None, r[11], r[12]) for r in rows]

    def delete_memory(self, key: str) -> bool:
        with self.transaction():
            self.execute("DELETE FROM memory_items WHERE memory_key = ?", (key,))
            return self.execute("DELETE FROM memories WHERE key = ? RETURNING key", (key,)).fetchone() is not None

    def add_build_usage(self, key: str, usage: dict[str, Any], resumed: bool) -> None:
        """Add one build attempt's cost to the memory's summed cost."""
        with self.transaction():
            row = self.execute(self.db.locking("SELECT build_usage FROM memories WHERE key = ?"), (key,)).fetchone()
            if row is None:
                return
            total: dict[str, Any] = json.loads(row[0]) if row[0] else {"attempts": 0, "resumed": False}
            for name, value in usage.items():
                if isinstance(value, (int, float)):
                    total[name] = round(total.get(name, 0) + value, 3)
            total["attempts"] += 1
            total["resumed"] = total["resumed"] or resumed
            self.execute("UPDATE memories SET build_usage = ? WHERE key = ?", (canonical_json(total), key))

    def mark_complete(self, key: str) -> None:
        self.execute("UPDATE memories SET status = 'complete', updated = ? WHERE key = ?", (time.time(), key))

    def put_item(self, key: str, kind: str, idx: int, payload: dict[str, Any]) -> None:
        self.put_items(key, kind, [(idx, payload)])

    def put_items(self, key: str, kind: str, items: Sequence[tuple[int, dict[str, Any]]]) -> None:
        """Store units of a memory in one commit (replacing any with the same index)."""
        rows = [(key, kind, idx, canonical_json(payload)) for idx, payload in items]
        with self.transaction():
            self.executemany(upsert("memory_items", ("memory_key", "kind", "idx", "payload"),
                                    ("memory_key", "kind", "idx")), rows)
            self.execute("UPDATE memories SET updated = ? WHERE key = ?", (time.time(), key))

    def items(self, key: str, kind: str) -> list[dict[str, Any]]:
        return [payload for _, payload in self.iter_items(key, kind)]

    def iter_items(self, key: str, kind: str) -> Iterator[tuple[int, dict[str, Any]]]:
        for idx, payload in self.execute("SELECT idx, payload FROM memory_items WHERE memory_key = ? AND kind = ? "
                                         "ORDER BY idx", (key, kind)):
            yield int(idx), json.loads(payload)

    def delete_items(self, key: str, kind: str, from_idx: int = 0) -> None:
        self.execute("DELETE FROM memory_items WHERE memory_key = ? AND kind = ? AND idx >= ?", (key, kind, from_idx))

    # --- embedding cache ---------------------------------------------------------------------------
    def get_embeddings(self, model: str, text_hashes: Sequence[str]) -> dict[str, StoredVectors]:
        rows = self._in("SELECT text_hash, chunks, dim, vectors FROM embeddings WHERE model = ?", "text_hash",
                        text_hashes, model)
        return {h: StoredVectors(int(chunks), int(dim), bytes(blob)) for h, chunks, dim, blob in rows}

    def put_embeddings(self, model: str, vectors: Mapping[str, StoredVectors]) -> None:
        now = time.time()
        columns = ("model", "text_hash", "chunks", "dim", "vectors", "created")
        with self.transaction():
            self.executemany(upsert("embeddings", columns, ("model", "text_hash")),
                             [(model, h, v.chunks, v.dim, v.data, now) for h, v in vectors.items()])

    def count_embeddings(self, model: str | None = None) -> int:
        if model is None:
            return int(_one(self.execute("SELECT COUNT(*) FROM embeddings")))
        return int(_one(self.execute("SELECT COUNT(*) FROM embeddings WHERE model = ?", (model,))))

    # --- LLM response cache ------------------------------------------------------------------------
    def get_response(self, key: str) -> LLMResponse | None:
        """The cached reply of a request (by :meth:`LLMRequest.cache_key`), with its tool calls and log-probabilities
        as they were stored, or None."""
        row = self.execute("SELECT model, text, prompt_tokens, completion_tokens, seconds, finish_reason, tool_calls, "
                           "logprobs FROM llm_cache WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        calls = tuple(ToolCall(c["name"], c["arguments"]) for c in json.loads(row[6])) if row[6] else ()
        logprobs = tuple(TokenLogprob(t, p, tuple((a, b) for a, b in top)) for t, p, top in json.loads(row[7])) \
            if row[7] else ()
        return LLMResponse(text=row[1], prompt_tokens=row[2], completion_tokens=row[3], seconds=row[4], model=row[0],
                           cached=True, finish_reason=row[5], tool_calls=calls, logprobs=logprobs)

    def put_response(self, key: str, response: LLMResponse) -> None:
        calls = json.dumps([c.__dict__ for c in response.tool_calls]) if response.tool_calls else None
        logprobs = json.dumps([[t.token, t.logprob, [list(a) for a in t.top]] for t in response.logprobs]) \
            if response.logprobs else None
        self.execute(upsert("llm_cache", _LLM_CACHE, ("key",)),
                     (key, response.model, response.text, response.prompt_tokens, response.completion_tokens,
                      response.seconds, response.finish_reason, time.time(), calls, logprobs))

    def clear_responses(self) -> int:
        return int(self.execute("DELETE FROM llm_cache").rowcount)

    # --- agents ------------------------------------------------------------------------------------
    def _lock_agent_row(self, agent_id: int) -> None:
        """Inside a transaction: serialise with every other writer that reads this agent's rows before writing."""
        self.execute(self.db.locking("SELECT 1 FROM agents WHERE id = ?"), (agent_id,))

    def create_agent(self, name: str, settings: dict[str, Any], state: dict[str, Any], created: float,
                     blocks: Sequence[BlockRow], cause: str = "create",
                     history: Sequence[BlockVersionRow] = ()) -> int | None:
        """A new agent with its blocks, each a version caused by ``cause`` after its ``history`` (an imported
        agent's earlier versions, kept with their numbers; a block whose last one already holds its value adds
        none); None (and nothing written) when the name is taken."""
        with self.transaction():
            agent_id = _one(self.execute("INSERT INTO agents (name, settings, state, created) VALUES (?, ?, ?, ?) "
                                         "ON CONFLICT (name) DO NOTHING RETURNING id",
                                         (name, canonical_json(settings), canonical_json(state), created)))
            if agent_id is None:
                return None
            self.executemany("INSERT INTO agent_blocks (agent_id, label, value, char_limit, position, updated, "
                             "description) VALUES (?, ?, ?, ?, ?, ?, ?)",
                             [(agent_id, b.label, b.value, b.limit, i, created, b.description)
                              for i, b in enumerate(blocks)])
            last: dict[str, BlockVersionRow] = {}
            for v in history:
                last[v.label] = v
            self.executemany(_VERSION_INSERT, [(agent_id, v.label, v.version, v.value, v.limit, v.description,
                                                v.cause, v.created) for v in history])
            self.executemany(_VERSION_INSERT, [
                (agent_id, b.label, last[b.label].version + 1 if b.label in last else 1, b.value, b.limit,
                 b.description, cause, created) for b in blocks
                if b.label not in last or (last[b.label].value, last[b.label].limit, last[b.label].description)
                != (b.value, b.limit, b.description)])
        return int(agent_id)

    def get_agent(self, name: str) -> AgentRow | None:
        row = self.execute(_AGENT + " WHERE a.name = ?", (name,)).fetchone()
        return None if row is None else _agent(row)

    def get_agent_by_id(self, agent_id: int) -> AgentRow | None:
        row = self.execute(_AGENT + " WHERE a.id = ?", (agent_id,)).fetchone()
        return None if row is None else _agent(row)

    def list_agents(self) -> list[AgentRow]:
        return [_agent(r) for r in self.execute(_AGENT + " ORDER BY a.name")]

    def agents_by_id(self, after: int | None = None, limit: int | None = None) -> list[AgentRow]:
        """Every user's agents by id, one page by id cursor when asked (ids above ``after``)."""
        sql, args = _id_page(_AGENT + " WHERE 1 = 1", (), "a.id", after, None, limit)
        return [_agent(r) for r in self.execute(sql, args)]

    def delete_agent(self, name: str) -> bool:
        return self.execute("DELETE FROM agents WHERE name = ?", (name,)).rowcount > 0

    def set_agent_state(self, agent_id: int, state: dict[str, Any]) -> None:
        self.execute("UPDATE agents SET state = ? WHERE id = ?", (canonical_json(state), agent_id))

    def set_agent_settings(self, agent_id: int, settings: dict[str, Any]) -> None:
        self.execute("UPDATE agents SET settings = ? WHERE id = ?", (canonical_json(settings), agent_id))

    def agent_blocks(self, agent_id: int) -> list[BlockRow]:
        rows = self.execute("SELECT label, value, char_limit, description FROM agent_blocks WHERE agent_id = ? "
                            "ORDER BY position", (agent_id,))
        return [BlockRow(r[0], r[1], int(r[2]), r[3]) for r in rows]

    def put_agent_block(self, agent_id: int, block: BlockRow, cause: str) -> int:
        """Set a block's value, limit and description (a new label goes last) and record it as the label's next
        version, caused by ``cause``, in one transaction under the agent's row lock (two writers at once: both
        versions kept, in commit order); the version's number. A write that changes nothing writes nothing (the
        block's latest version's number)."""
        with self.transaction():
            self._lock_agent_row(agent_id)
            now = time.time()
            same = self.execute("SELECT 1 FROM agent_blocks WHERE agent_id = ? AND label = ? AND value = ? AND "
                                "char_limit = ? AND description = ?", (agent_id, block.label, block.value,
                                                                        block.limit, block.description)).fetchone()
            latest = _one(self.execute("SELECT MAX(version) FROM agent_block_versions WHERE agent_id = ? AND "
                                       "label = ?", (agent_id, block.label)))
            if same is not None and latest is not None:
                return int(latest)
            pos = _one(self.execute("SELECT COALESCE(MAX(position) + 1, 0) FROM agent_blocks WHERE agent_id = ?",
                                    (agent_id,)))
            self.execute(upsert("agent_blocks", ("agent_id", "label", "value", "char_limit", "position", "updated",
                                                 "description"), ("agent_id", "label"), keep=("position",)),
                         (agent_id, block.label, block.value, block.limit, pos, now, block.description))
            version = int(latest or 0) + 1
            self.execute(_VERSION_INSERT, (agent_id, block.label, version, block.value, block.limit,
                                           block.description, cause, now))
        return version

    def agent_block_versions(self, agent_id: int, label: str | None = None, *, before: int | None = None,
                             limit: int = 50) -> list[BlockVersionRow]:
        """A block's versions (every block's, ``label`` None), newest first; ``before``: only those older than
        that version (paging back through one label's history)."""
        where, args = "agent_id = ?", list[Any]([agent_id])
        if label is not None:
            where, args = where + " AND label = ?", [*args, label]
        if before is not None:
            where, args = where + " AND version < ?", [*args, before]
        order = "version DESC" if label is not None else "created DESC, label, version DESC"
        rows = self.execute(f"SELECT {_VERSION_COLUMNS} FROM agent_block_versions WHERE {where} ORDER BY {order} "
                            "LIMIT ?", (*args, limit))
        return [_version(r) for r in rows]

    def agent_block_version(self, agent_id: int, label: str, version: int) -> BlockVersionRow | None:
        row = self.execute(f"SELECT {_VERSION_COLUMNS} FROM agent_block_versions WHERE agent_id = ? AND label = ? "
                           "AND version = ?", (agent_id, label, version)).fetchone()
        return None if row is None else _version(row)

    def append_agent_events(self, agent_id: int, events: Sequence[EventRow]) -> list[int]:
        """Add events to the end of the agent's history; their sequence numbers."""
        with self.transaction():
            self._lock_agent_row(agent_id)
            last = int(_one(self.execute("SELECT COALESCE(MAX(seq), 0) FROM agent_messages WHERE agent_id = ?",
                                         (agent_id,))))
            seqs = list(range(last + 1, last + 1 + len(events)))
            self.executemany("INSERT INTO agent_messages (agent_id, seq, kind, text, payload, created, in_context) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?)",
                             [(agent_id, seq, e.kind, e.text, json.dumps(e.payload, ensure_ascii=False), e.created,
                               int(e.in_context)) for seq, e in zip(seqs, events)])
        return seqs

    def agent_queue(self, agent_id: int) -> list[EventRow]:
        """The events in context: the recursive summary first, then the queue in order."""
        return [_event(r) for r in self.execute(_EVENT + " WHERE agent_id = ? AND in_context = 1 "
                                                "ORDER BY kind != 'summary', seq", (agent_id,))]

    def evict_agent_events(self, agent_id: int, seqs: Sequence[int]) -> None:
        """Take these events (and the old summary) out of context; they stay in recall."""
        with self.transaction():
            self.execute("UPDATE agent_messages SET in_context = 0 WHERE agent_id = ? AND kind = 'summary'",
                         (agent_id,))
            self.executemany("UPDATE agent_messages SET in_context = 0 WHERE agent_id = ? AND seq = ?",
                             [(agent_id, seq) for seq in seqs])

    def count_agent_events(self, agent_id: int, in_context: bool | None = None) -> int:
        sql, args = "SELECT COUNT(*) FROM agent_messages WHERE agent_id = ?", (agent_id,)  # type: tuple[str, tuple]
        if in_context is not None:
            sql, args = sql + " AND in_context = ?", args + (int(in_context),)
        return int(_one(self.execute(sql, args)))

    def recent_agent_events(self, agent_id: int, limit: int) -> list[EventRow]:
        rows = self.execute(_EVENT + " WHERE agent_id = ? ORDER BY seq DESC LIMIT ?", (agent_id, limit)).fetchall()
        return [_event(r) for r in reversed(rows)]

    def _page(self, table: str, columns: str, where: str, args: tuple, order: str, offset: int,
              limit: int | None) -> tuple[int, list[Any]]:
        """How many rows match, and one page of them, from one snapshot of concurrent writers."""
        page = f" ORDER BY {order}" + (" LIMIT ?" if limit is not None else f" LIMIT {self.db.no_limit}") + " OFFSET ?"
        with self.db.snapshot():
            total = int(_one(self.execute(f"SELECT COUNT(*) FROM {table} WHERE {where}", args)))
            rows = self.execute(f"SELECT {columns} FROM {table} WHERE {where}{page}",
                                args + ((limit, offset) if limit is not None else (offset,))).fetchall()
        return total, rows

    def search_agent_events(self, agent_id: int, kinds: Sequence[str], *, query: str | None = None,
                            start: str | None = None, end: str | None = None, offset: int = 0,
                            limit: int = 5, after: int | None = None) -> tuple[int, list[EventRow]]:
        """Recall search: events of these kinds whose text contains ``query`` (any case) and whose date is in
        [start, end) (``after``: only those after that seq, a page's cursor); the number matching and one page of
        them in order."""
        where, args = f"agent_id = ? AND kind IN ({_marks(len(kinds))})", (agent_id, *kinds)
        if after is not None:
            where, args = where + " AND seq > ?", args + (after,)
        if query is not None:
            where, args = where + f" AND text {self.db.ilike} ? ESCAPE '\\'", args + (_like(query),)
        if start is not None:
            where, args = where + " AND created >= ?", args + (start,)
        if end is not None:
            where, args = where + " AND created < ?", args + (end,)
        total, rows = self._page("agent_messages", _EVENT_COLUMNS, where, args, "seq", offset, limit)
        return total, [_event(r) for r in rows]

    def agent_event_texts(self, agent_id: int, kinds: Sequence[str]) -> list[tuple[int, str, str]]:
        """(seq, search text, time) of the agent's events of ``kinds``, oldest first."""
        return [(int(r[0]), r[1], r[2]) for r in self.execute(
            f"SELECT seq, text, created FROM agent_messages WHERE agent_id = ? AND kind IN ({_marks(len(kinds))}) "
            "ORDER BY seq", (agent_id, *kinds))]

    def agent_events(self, agent_id: int, seqs: Sequence[int]) -> list[EventRow]:
        by_seq = {int(r[3]): _event(r) for r in self._in(_EVENT + " WHERE agent_id = ?", "seq", seqs, agent_id)}
        return [by_seq[s] for s in seqs if s in by_seq]

    # --- archival passages -------------------------------------------------------------------------
    def insert_agent_passages(self, agent_id: int, passages: Sequence[PassageRow]) -> list[int]:
        """Add passages to the agent's archive in one bulk load; their ids, in order."""
        if not passages:
            return []
        with self.transaction():
            ids = self.db.reserve_ids(self, "agent_passages", len(passages))
            self.db.load(self, "agent_passages", PASSAGE_COLUMNS,
                         [(i, agent_id, p.text, p.summary, p.source, p.embedding, p.embedder, p.created)
                          for i, p in zip(ids, passages)])
        return ids

    def count_agent_passages(self, agent_id: int) -> int:
        return int(_one(self.execute("SELECT COUNT(*) FROM agent_passages WHERE agent_id = ?", (agent_id,))))

    def search_agent_passages(self, agent_id: int, query: str, offset: int = 0,
                              limit: int | None = None) -> tuple[int, list[PassageRow]]:
        """Passages whose text or summary contains ``query`` (any case): how many, and one page of them."""
        like = self.db.ilike
        where = f"agent_id = ? AND (text {like} ? ESCAPE '\\' OR summary {like} ? ESCAPE '\\')"
        args = (agent_id, _like(query), _like(query))
        total, rows = self._page("agent_passages", _PASSAGE_COLUMNS, where, args, "id", offset, limit)
        return total, [_passage(r) for r in rows]

    def agent_passages_after(self, agent_id: int, after: int | None = None, before: int | None = None,
                             limit: int = 50, descending: bool = False) -> list[PassageRow]:
        """One page of the agent's passages by id cursor: ids above ``after`` and below ``before``, at most
        ``limit``, in id order (``descending``: newest first)."""
        sql, args = _id_page(f"SELECT {_PASSAGE_COLUMNS} FROM agent_passages WHERE agent_id = ?", (agent_id,), "id",
                             after, before, limit, descending)
        return [_passage(r) for r in self.execute(sql, args).fetchall()]

    def agent_passage_vectors(self, agent_id: int, embedder: str, after: int = 0,
                              upto: int | None = None) -> list[tuple[int, bytes]]:
        """(id, float32 vector) of the agent's passages embedded by ``embedder`` (ids in (after, upto])."""
        sql = "SELECT id, embedding FROM agent_passages WHERE agent_id = ? AND embedder = ? AND embedding IS NOT NULL"
        args: tuple[Any, ...] = (agent_id, embedder)
        if after:
            sql, args = sql + " AND id > ?", args + (after,)
        if upto is not None:
            sql, args = sql + " AND id <= ?", args + (upto,)
        return [(int(r[0]), bytes(r[1])) for r in self.execute(sql + " ORDER BY id", args)]

    def agent_passage_texts(self, agent_id: int) -> list[tuple[int, str]]:
        return [(int(r[0]), r[1]) for r in self.execute(
            "SELECT id, COALESCE(summary, '') || ' ' || text FROM agent_passages WHERE agent_id = ? ORDER BY id",
            (agent_id,))]

    def agent_passages_with_text(self, agent_id: int, text: str) -> list[PassageRow]:
        """The agent's passages whose text is exactly ``text``, oldest first."""
        return [_passage(r) for r in self.execute(_PASSAGE + " WHERE agent_id = ? AND text = ? ORDER BY id",
                                                  (agent_id, text))]

    def note_agent_passage_repeats(self, agent_id: int, passage_id: int,
                                   repeats: Sequence[tuple[str, str | None]]) -> None:
        """Record repeats (time, source) of passage ``passage_id`` that were not stored as passages of their own."""
        with self.transaction():
            self._lock_agent_row(agent_id)
            row = self.execute("SELECT repeats FROM agent_passages WHERE agent_id = ? AND id = ?",
                               (agent_id, passage_id)).fetchone()
            if row is None:
                return
            kept = json.loads(row[0]) if row[0] else []
            self.execute("UPDATE agent_passages SET repeats = ? WHERE agent_id = ? AND id = ?",
                         (json.dumps(kept + [list(r) for r in repeats]), agent_id, passage_id))

    def fold_agent_passages(self, agent_id: int, keep: int, fold: Sequence[int]) -> int:
        """Fold passages ``fold`` into ``keep`` (their times, sources and repeats become ``keep``'s repeats; they are
        deleted; a passage they superseded points at ``keep``); how many were folded."""
        with self.transaction():
            self._lock_agent_row(agent_id)
            folded = [p for p in self.agent_passages(agent_id, fold) if p.id != keep]
            if not folded:
                return 0
            self.note_agent_passage_repeats(agent_id, keep, [r for p in folded for r in ((p.created, p.source),
                                                                                         *p.repeats)])
            ids = [p.id for p in folded]
            for pid in ids:
                self.execute("UPDATE agent_passages SET superseded_by = ? WHERE agent_id = ? AND superseded_by = ?",
                             (keep, agent_id, pid))
                self.execute("DELETE FROM agent_passages WHERE agent_id = ? AND id = ?", (agent_id, pid))
        return len(folded)

    def forget_agent_passage(self, agent_id: int, passage_id: int, cause: str, when: float) -> PassageRow | None:
        """Move passage ``passage_id`` out of the agent's archive into its forgotten passages, whole, with ``cause``
        and ``when``; a passage it had superseded holds again (and is superseded again on a restore). The passage,
        or None when the agent has no such passage."""
        with self.transaction():
            self._lock_agent_row(agent_id)
            found = self.agent_passages(agent_id, [passage_id])
            if not found:
                return None
            (passage,) = found
            replaced = [[int(r[0]), r[1]] for r in self.execute(
                "SELECT id, superseded FROM agent_passages WHERE agent_id = ? AND superseded_by = ?",
                (agent_id, passage_id))]
            vector = self.execute("SELECT embedding, embedder FROM agent_passages WHERE agent_id = ? AND id = ?",
                                  (agent_id, passage_id)).fetchone()
            kept = {"text": passage.text, "summary": passage.summary, "source": passage.source,
                    "embedder": vector[1], "created": passage.created, "superseded_by": passage.superseded_by,
                    "superseded": passage.superseded, "repeats": [list(r) for r in passage.repeats],
                    "replaced": replaced}
            self.execute("INSERT INTO agent_forgotten (id, agent_id, passage, embedding, cause, forgotten) "
                         "VALUES (?, ?, ?, ?, ?, ?)", (passage_id, agent_id, json.dumps(kept), vector[0], cause, when))
            self.execute("UPDATE agent_passages SET superseded_by = NULL, superseded = NULL WHERE agent_id = ? AND "
                         "superseded_by = ?", (agent_id, passage_id))
            self.execute("DELETE FROM agent_passages WHERE agent_id = ? AND id = ?", (agent_id, passage_id))
        return passage

    def restore_agent_passage(self, agent_id: int, passage_id: int) -> PassageRow | None:
        """Give a forgotten passage back to the archive under its own id (the passages it had superseded superseded
        again); the passage, or None when the agent forgot no such passage."""
        with self.transaction():
            self._lock_agent_row(agent_id)
            row = self.execute("SELECT passage, embedding FROM agent_forgotten WHERE agent_id = ? AND id = ?",
                               (agent_id, passage_id)).fetchone()
            if row is None:
                return None
            kept = json.loads(row[0])
            self.db.load(self, "agent_passages", PASSAGE_COLUMNS,
                         [(passage_id, agent_id, kept["text"], kept["summary"], kept["source"], row[1],
                           kept["embedder"], kept["created"])])
            self.execute("UPDATE agent_passages SET superseded_by = ?, superseded = ?, repeats = ? WHERE agent_id = ? "
                         "AND id = ?", (kept["superseded_by"], kept["superseded"],
                                        json.dumps(kept["repeats"]) if kept["repeats"] else None, agent_id,
                                        passage_id))
            for old, when in kept["replaced"]:
                self.execute("UPDATE agent_passages SET superseded_by = ?, superseded = ? WHERE agent_id = ? AND "
                             "id = ? AND superseded_by IS NULL", (passage_id, when, agent_id, old))
            self.execute("DELETE FROM agent_forgotten WHERE agent_id = ? AND id = ?", (agent_id, passage_id))
        return self.agent_passages(agent_id, [passage_id])[0]

    def forgotten_agent_passages(self, agent_id: int, limit: int = 50) -> list[tuple[int, str, str, float]]:
        """The agent's forgotten passages, the latest first: (id, text, cause, when)."""
        return [(int(r[0]), str(json.loads(r[1])["text"]), str(r[2]), float(r[3])) for r in self.execute(
            "SELECT id, passage, cause, forgotten FROM agent_forgotten WHERE agent_id = ? ORDER BY forgotten DESC, "
            "id DESC LIMIT ?", (agent_id, limit))]

    def agent_superseded(self, agent_id: int) -> dict[int, int]:
        """Every superseded passage of the agent: its id -> the id of the passage that replaced it."""
        return {int(r[0]): int(r[1]) for r in self.execute(
            "SELECT id, superseded_by FROM agent_passages WHERE agent_id = ? AND superseded_by IS NOT NULL",
            (agent_id,))}

    def supersede_agent_passage(self, agent_id: int, old: int, new: int, when: str) -> bool:
        """Mark passage ``old`` superseded by ``new`` at ``when`` (nothing is deleted); False if either is not
        the agent's."""
        with self.transaction():
            found = self.agent_passages(agent_id, [old, new])
            if len(found) < 2 or old == new:
                return False
            self.execute("UPDATE agent_passages SET superseded_by = ?, superseded = ? WHERE agent_id = ? AND id = ?",
                         (new, when, agent_id, old))
        return True

    def agent_passages(self, agent_id: int, ids: Sequence[int]) -> list[PassageRow]:
        by_id = {int(r[0]): _passage(r) for r in self._in(_PASSAGE + " WHERE agent_id = ?", "id", ids, agent_id)}
        return [by_id[i] for i in ids if i in by_id]

    def nearest_agent_passages(self, agent_id: int, embedder: str, query: bytes,
                               limit: int | None = None) -> tuple[int, list[int]]:
        """(how many passages ``embedder`` embedded, the ids of the ``limit`` nearest to ``query``, best first),
        ranked exactly as ``vectors.rank`` does on every dialect."""
        return self.db.nearest(self, agent_id, embedder, query, limit)

    # --- leases ------------------------------------------------------------------------------------
    def try_lease(self, name: str, owner: str, pid: int, host: str, stale: Callable[[LockHolder], bool]) -> bool:
        """Take the lease ``name`` if it is free, held by ``owner``, or its holder is gone (its process ended —
        which Postgres knows at once from the holder's liveness lock — or ``stale(holder)`` says so)."""
        session = self.db.liveness_key()
        now = time.time()
        with self.transaction():
            self.db.lock_name(self, name)  # the row may not exist yet: serialise on the name itself
            row = self.execute("SELECT owner, pid, host, refreshed, session FROM leases WHERE name = ?",
                               (name,)).fetchone()
            if row is not None and row[0] != owner and self.db.session_alive(self, row[4]) and \
                    not stale(LockHolder(row[0], int(row[1]), row[2], float(row[3]))):
                return False
            self.execute(upsert("leases", _LEASE, ("name",)), (name, owner, pid, host, now, now, session))
        return True

    def refresh_lease(self, name: str, owner: str) -> None:
        self.execute("UPDATE leases SET refreshed = ? WHERE name = ? AND owner = ?", (time.time(), name, owner))

    def release_lease(self, name: str, owner: str) -> None:
        self.execute("DELETE FROM leases WHERE name = ? AND owner = ?", (name, owner))

    def lease_holder(self, name: str) -> LockHolder | None:
        return _holder(self.execute("SELECT owner, pid, host, refreshed FROM leases WHERE name = ?",
                                    (name,)).fetchone())

    # --- users, their documents and agents ---------------------------------------------------------
    def create_user(self, name: str, key_hash: str, created: float) -> int | None:
        """A new user with one API key (stored hashed); None when the name is taken."""
        with self.transaction():
            user_id = _one(self.execute("INSERT INTO users (name, created) VALUES (?, ?) ON CONFLICT (name) DO "
                                        "NOTHING RETURNING id", (name, created)))
            if user_id is None:
                return None
            self.add_user_key(int(user_id), key_hash, created)
        return int(user_id)

    def add_user_key(self, user_id: int, key_hash: str, created: float) -> None:
        self.execute("INSERT INTO api_keys VALUES (?, ?, ?)", (key_hash, user_id, created))

    def user_for_key(self, key_hash: str) -> UserRow | None:
        row = self.execute("SELECT u.id, u.name, u.created FROM api_keys k JOIN users u ON u.id = k.user_id "
                           "WHERE k.hash = ?", (key_hash,)).fetchone()
        return None if row is None else UserRow(*row)

    def get_user(self, name: str) -> UserRow | None:
        row = self.execute("SELECT id, name, created FROM users WHERE name = ?", (name,)).fetchone()
        return None if row is None else UserRow(*row)

    def list_users(self) -> list[UserRow]:
        return [UserRow(*r) for r in self.execute("SELECT id, name, created FROM users ORDER BY id")]

    def put_document_text(self, doc_id: str, text: str, structure: dict[str, Any] | None = None) -> None:
        """Keep a document's text, and its structure (format, pages, sections) when given: the latest file read
        with this text says it."""
        self.execute("INSERT INTO document_texts (document_id, text, structure) VALUES (?, ?, ?) "
                     "ON CONFLICT (document_id) DO UPDATE SET structure = excluded.structure "
                     "WHERE excluded.structure IS NOT NULL",
                     (doc_id, text, None if structure is None else json.dumps(structure, ensure_ascii=False)))

    def file_read(self, digest: str) -> tuple[str, dict[str, Any]] | None:
        """The text and structure a file with this digest gave when it was read (:meth:`put_file_read`)."""
        row = self.execute("SELECT text, structure FROM file_reads WHERE digest = ?", (digest,)).fetchone()
        return None if row is None else (str(row[0]), dict(json.loads(row[1])))

    def put_file_read(self, digest: str, doc_id: str, text: str, structure: dict[str, Any]) -> None:
        self.execute("INSERT INTO file_reads (digest, document_id, text, structure, created) VALUES (?, ?, ?, ?, ?) "
                     "ON CONFLICT (digest) DO NOTHING",
                     (digest, doc_id, text, json.dumps(structure, ensure_ascii=False), time.time()))

    def forget_file_reads(self) -> int:
        return int(self.execute("DELETE FROM file_reads").rowcount)

    def token_count(self, key: str) -> int | None:
        """A prompt's token count under a model, as :meth:`put_token_count` kept it (``key``: their digest)."""
        row = self.execute("SELECT tokens FROM token_counts WHERE key = ?", (key,)).fetchone()
        return None if row is None else int(row[0])

    def put_token_count(self, key: str, tokens: int) -> None:
        self.execute("INSERT INTO token_counts (key, tokens) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
                     (key, tokens))

    def forget_token_counts(self) -> int:
        return int(self.execute("DELETE FROM token_counts").rowcount)

    def document_text(self, doc_id: str) -> str | None:
        return _one(self.execute("SELECT text FROM document_texts WHERE document_id = ?", (doc_id,)))

    def document_structure(self, doc_id: str) -> dict[str, Any] | None:
        raw = _one(self.execute("SELECT structure FROM document_texts WHERE document_id = ?", (doc_id,)))
        return None if raw is None else dict(json.loads(raw))

    def add_user_document(self, user_id: int, doc_id: str, name: str, created: float) -> None:
        """The user holds the document under ``name`` (renamed if they held it already)."""
        self.execute("INSERT INTO user_documents VALUES (?, ?, ?, ?) "
                     "ON CONFLICT (user_id, document_id) DO UPDATE SET name = excluded.name",
                     (user_id, doc_id, name, created))

    def user_documents(self, user_id: int, after: str | None = None, limit: int | None = None) -> list[DocumentRow]:
        """A user's documents newest first; one page by cursor when asked: those after the user's document
        ``after`` in that order, at most ``limit``."""
        sql, args = _USER_DOCUMENT, list[Any]([user_id])
        if after is not None:
            sql += (" AND (u.created, d.id) < (SELECT created, document_id FROM user_documents WHERE user_id = ? "
                    "AND document_id = ?)")
            args += [user_id, after]
        sql += " ORDER BY u.created DESC, d.id DESC"
        if limit is not None:
            sql, args = sql + " LIMIT ?", args + [limit]
        return [DocumentRow(*r) for r in self.execute(sql, tuple(args))]

    def count_user_documents(self, user_id: int) -> int:
        return int(_one(self.execute("SELECT COUNT(*) FROM user_documents WHERE user_id = ?", (user_id,))))

    def user_document(self, user_id: int, doc_id: str) -> DocumentRow | None:
        row = self.execute(_USER_DOCUMENT + " AND d.id = ?", (user_id, doc_id)).fetchone()
        return None if row is None else DocumentRow(*row)

    def remove_user_document(self, user_id: int, doc_id: str) -> bool:
        """The user no longer holds the document: their memories of it go, and its text and every memory of it
        when nobody holds it any more."""
        with self.transaction():
            gone = self.execute("DELETE FROM user_documents WHERE user_id = ? AND document_id = ?",
                                (user_id, doc_id)).rowcount > 0
            if gone:
                self._forget_scope(memory_scope(self, user_id), doc_id)
                self._forget_unheld([doc_id])
        return gone

    def _forget_scope(self, scope: str, doc_id: str | None = None) -> int:
        """Delete a service user's memories (of one document if given; inside a transaction). The local scope ('')
        is the CLI's too: a service user's erasure never reaches it."""
        if not scope:
            return 0
        if doc_id is None:
            return self._forget_memories("scope = ?", (scope,))
        return self._forget_memories("scope = ? AND document_id = ?", (scope, doc_id))

    def _forget_memories(self, where: str, args: tuple) -> int:
        """Delete the memories matching ``where`` and their items (inside a transaction)."""
        self.execute(f"DELETE FROM memory_items WHERE memory_key IN (SELECT key FROM memories WHERE {where})", args)
        return int(self.execute(f"DELETE FROM memories WHERE {where}", args).rowcount)

    def _forget_unheld(self, doc_ids: Sequence[str]) -> int:
        """Delete the kept texts and the memories of documents no user holds any more (inside a transaction)."""
        forgotten = 0
        for doc_id in doc_ids:
            self.execute(self.db.locking("SELECT 1 FROM documents WHERE id = ?", strong=True), (doc_id,))
            if self.execute("SELECT 1 FROM user_documents WHERE document_id = ? UNION ALL SELECT 1 FROM "
                            "library_documents WHERE document_id = ? OR previous_id = ?",
                            (doc_id, doc_id, doc_id)).fetchone():
                continue
            self._forget_memories("document_id = ?", (doc_id,))
            forgotten += self.execute("DELETE FROM document_texts WHERE document_id = ?", (doc_id,)).rowcount
            self.execute("DELETE FROM documents WHERE id = ?", (doc_id,))
        return forgotten

    def forget_unheld(self, doc_ids: Sequence[str]) -> int:
        """Delete the kept texts and every memory of those of ``doc_ids`` no user and no library holds any more."""
        with self.transaction():
            return self._forget_unheld(doc_ids)

    # --- libraries -----------------------------------------------------------------------------------
    def create_library(self, scope: str, name: str, created: float) -> LibraryRow:
        """The library ``name`` of ``scope``, made if it does not exist yet."""
        self.execute("INSERT INTO libraries (scope, name, created) VALUES (?, ?, ?) ON CONFLICT (scope, name) "
                     "DO NOTHING", (scope, name, created))
        found = self.library(scope, name)
        assert found is not None
        return found

    def library(self, scope: str, name: str) -> LibraryRow | None:
        row = self.execute(_LIBRARY + " WHERE l.scope = ? AND l.name = ? GROUP BY l.id, l.name, l.created",
                           (scope, name)).fetchone()
        return None if row is None else LibraryRow(*row)

    def libraries(self, scope: str, after: str | None = None, limit: int | None = None) -> list[LibraryRow]:
        """A scope's libraries by name; one page by cursor when asked: names after ``after``, at most ``limit``."""
        sql, args = _LIBRARY + " WHERE l.scope = ?", list[Any]([scope])
        if after is not None:
            sql, args = sql + " AND l.name > ?", args + [after]
        sql += " GROUP BY l.id, l.name, l.created ORDER BY l.name"
        if limit is not None:
            sql, args = sql + " LIMIT ?", args + [limit]
        return [LibraryRow(*r) for r in self.execute(sql, tuple(args))]

    def library_documents(self, library_id: int) -> list[LibraryDocumentRow]:
        return [LibraryDocumentRow(*r) for r in self.execute(
            "SELECT m.name, m.document_id, d.words, d.chars, m.origin, m.added, m.previous_id FROM library_documents m "
            "JOIN documents d ON d.id = m.document_id WHERE m.library_id = ? ORDER BY m.name", (library_id,))]

    def library_member_name(self, scope: str, doc_id: str) -> str | None:
        """The name a library of ``scope`` holds ``doc_id`` under (the first by library and name), or None."""
        return _one(self.execute("SELECT m.name FROM library_documents m JOIN libraries l ON l.id = m.library_id "
                                 "WHERE l.scope = ? AND m.document_id = ? ORDER BY l.name, m.name LIMIT 1",
                                 (scope, doc_id)))

    def put_library_document(self, library_id: int, name: str, doc_id: str, origin: str | None,
                             added: float, previous_id: str | None = None) -> None:
        """The library holds ``doc_id`` under ``name`` (replacing the text it held under that name, kept as
        ``previous_id``)."""
        self.execute(upsert("library_documents", ("library_id", "name", "document_id", "origin", "added",
                                                  "previous_id"), ("library_id", "name")),
                     (library_id, name, doc_id, origin, added, previous_id))

    def remove_library_document(self, library_id: int, name: str) -> bool:
        return self.execute("DELETE FROM library_documents WHERE library_id = ? AND name = ?",
                            (library_id, name)).rowcount > 0

    def delete_library(self, library_id: int) -> None:
        with self.transaction():
            self.execute("DELETE FROM library_documents WHERE library_id = ?", (library_id,))
            self.execute("DELETE FROM libraries WHERE id = ?", (library_id,))

    def set_agent_owner(self, agent_id: int, user_id: int) -> None:
        self.execute(upsert("agent_owners", ("agent_id", "user_id"), ("agent_id",)), (agent_id, user_id))

    def agent_owner(self, agent_id: int) -> int | None:
        owner = _one(self.execute("SELECT user_id FROM agent_owners WHERE agent_id = ?", (agent_id,)))
        return None if owner is None else int(owner)

    def user_agents(self, user_id: int, after: int | None = None, before: int | None = None,
                    limit: int | None = None) -> list[AgentRow]:
        """A user's agents by id, one page by id cursor when asked (ids above ``after``, below ``before``)."""
        sql, args = _id_page(_AGENT + " JOIN agent_owners o ON o.agent_id = a.id WHERE o.user_id = ?", (user_id,),
                             "a.id", after, before, limit)
        return [_agent(r) for r in self.execute(sql, args)]

    def erase_user_data(self, user_id: int) -> dict[str, int]:
        """Everything of one user but the account: documents held, libraries, their memories, agents, runs."""
        with self.transaction():
            docs = [r[0] for r in self.execute("SELECT document_id FROM user_documents WHERE user_id = ? "
                                               "ORDER BY document_id", (user_id,))]
            self.execute("DELETE FROM user_documents WHERE user_id = ?", (user_id,))
            scope = memory_scope(self, user_id)
            libraries = self.libraries(scope) if scope else []  # the local user's are the CLI's too: kept
            for library in libraries:
                docs += [i for m in self.library_documents(library.id) for i in (m.document_id, m.previous_id) if i]
                self.delete_library(library.id)
            docs = sorted(set(docs))
            memories = self._forget_scope(scope)
            texts = self._forget_unheld(docs)
            agents = self.execute("DELETE FROM agents WHERE id IN (SELECT agent_id FROM agent_owners WHERE "
                                  "user_id = ?)", (user_id,)).rowcount
            runs = self.execute("DELETE FROM runs WHERE user_id = ?", (user_id,)).rowcount
        return {"documents": len(docs), "document_texts": texts, "memories": memories, "agents": agents, "runs": runs}

    # --- runs ----------------------------------------------------------------------------------------
    def create_run(self, run: RunRow) -> None:
        self.execute(f"INSERT INTO runs ({_RUN_COLUMNS}) VALUES ({_marks(14)})",
                     (run.id, run.user_id, run.kind, run.method, run.target, canonical_json(run.request), run.status,
                      run.created, run.started, run.finished,
                      None if run.result is None else canonical_json(run.result), run.error,
                      int(run.cancel_requested), None if run.usage is None else canonical_json(run.usage)))

    def get_run(self, run_id: str) -> RunRow | None:
        row = self.execute(_RUN + " WHERE id = ?", (run_id,)).fetchone()
        return None if row is None else _run(row)

    def list_runs(self, user_id: int | None, *, all_users: bool = False, kind: str | None = None,
                  target: str | None = None, status: str | None = None, prefix: str | None = None,
                  limit: int = 50, offset: int = 0, after: str | None = None) -> list[RunRow]:
        """A user's runs (``user_id`` None: the local user's; ``all_users``: everyone's), newest first; ``after``:
        only those after that run in this order (a page's cursor)."""
        where: list[str] = []
        args: list[Any] = []
        if not all_users:
            where.append(f"user_id {self.db.same} ?")
            args.append(user_id)
        for column, value in (("kind", kind), ("target", target), ("status", status)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        if prefix is not None:
            where.append("substr(id, 1, ?) = ?")
            args.extend((len(prefix), prefix))
        inserted = self.db.insertion_order
        if after is not None:
            where.append(f"(created, {inserted}) < (SELECT created, {inserted} FROM runs WHERE id = ?)")
            args.append(after)
        sql = _RUN + (" WHERE " + " AND ".join(where) if where else "")
        order = f" ORDER BY created DESC, {inserted} DESC LIMIT ? OFFSET ?"
        return [_run(r) for r in self.execute(sql + order, (*args, limit, offset))]

    def count_runs(self, user_id: int | None) -> int:
        return int(_one(self.execute(f"SELECT COUNT(*) FROM runs WHERE user_id {self.db.same} ?", (user_id,))))

    def update_run(self, run_id: str, **fields: Any) -> None:
        """Set some of a run's status, started, finished, result, error and usage (its totals, when it ended)."""
        unknown = set(fields) - set(_RUN_FIELDS)
        if unknown:
            raise ValueError(f"not a run field: {', '.join(sorted(unknown))}")
        if not fields:
            return
        for name in ("result", "usage"):
            if fields.get(name) is not None:
                fields[name] = canonical_json(fields[name])
        sets = ", ".join(f"{name} = ?" for name in fields)
        self.execute(f"UPDATE runs SET {sets} WHERE id = ?", (*fields.values(), run_id))

    def request_cancel(self, run_id: str) -> bool:
        return self.execute("UPDATE runs SET cancel_requested = 1 WHERE id = ? AND status IN ('queued', 'running')",
                            (run_id,)).rowcount > 0

    def append_run_step(self, run_id: str, kind: str, data: dict[str, Any], created: float) -> int:
        """Add a step at the end of a run; its number."""
        with self.transaction():
            self.execute(self.db.locking("SELECT 1 FROM runs WHERE id = ?"), (run_id,))
            seq = int(_one(self.execute("SELECT COALESCE(MAX(seq), -1) + 1 FROM run_steps WHERE run_id = ?",
                                        (run_id,))))
            self.execute("INSERT INTO run_steps VALUES (?, ?, ?, ?, ?)", (run_id, seq, kind, canonical_json(data),
                                                                          created))
        return seq

    def run_steps(self, run_id: str, after: int = -1, limit: int | None = None) -> list[StepRow]:
        sql = "SELECT run_id, seq, kind, data, created FROM run_steps WHERE run_id = ? AND seq > ? ORDER BY seq"
        args: tuple = (run_id, after)
        if limit is not None:
            sql, args = sql + " LIMIT ?", args + (limit,)
        return [StepRow(r[0], int(r[1]), r[2], json.loads(r[3]), r[4]) for r in self.execute(sql, args)]

    # --- moving a store ------------------------------------------------------------------------------
    def table_rows(self, table: str, columns: Sequence[str]) -> Iterator[tuple[Any, ...]]:
        """Every row of a table (these columns), read in pages, in a stable order."""
        _check_names(table, columns)
        order = TABLE_ORDER[table] or self.db.insertion_order
        for row in self.db.stream(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {order}"):
            yield tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)

    def add_table_rows(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], *,
                       skip_existing: bool = False) -> int:
        """Insert rows as they are (ids included); with ``skip_existing``, rows whose key is taken are left out.
        The number inserted."""
        _check_names(table, columns)
        with self.transaction():
            if skip_existing:
                columns, rows = self.db.with_extra(table, list(columns), [tuple(r) for r in rows])
                n = self.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({_marks(len(columns))}) "
                                     "ON CONFLICT DO NOTHING", rows)
            else:
                n = self.db.load(self, table, columns, [tuple(r) for r in rows])
            self.db.after_load(self, table)
        return n

    def count_rows(self, table: str) -> int:
        _check_names(table, ())
        return int(_one(self.execute(f"SELECT COUNT(*) FROM {table}")))
