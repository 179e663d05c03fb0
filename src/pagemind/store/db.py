"""SQLite storage: documents, memories (written unit by unit, so a killed build resumes) and the
LLM response cache. All SQL lives in this package; values in and out are plain data."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from ..hashing import canonical_json, content_hash
from ..llm.base import LLMResponse, ToolCall
from .migrations import migrate


class Rows:
    """A statement's result, read completely: ``fetchone``/``fetchall``/iteration, ``rowcount``, ``lastrowid``."""

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


def _retry_locked(fn: Any, seconds: float = 30.0) -> Any:
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


def memory_key(document_id: str, method: str, settings: dict[str, Any], model: str) -> str:
    return content_hash({"document": document_id, "method": method, "settings": settings, "model": model})


@dataclass(frozen=True)
class MemoryRecord:
    key: str
    document_id: str
    method: str
    settings: dict[str, Any]
    model: str
    status: str


class Store:
    """One SQLite file. Safe to share between threads; several processes may open the same file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=30.0, isolation_level=None)
        self._db.execute("PRAGMA foreign_keys = ON")
        if str(path) != ":memory:":
            _retry_locked(lambda: self._db.execute("PRAGMA journal_mode = WAL"))
        self._lock = threading.RLock()
        with self._lock:
            migrate(self._db)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _exec(self, sql: str, args: tuple = ()) -> "Rows":
        """Run one statement and read its rows while holding the lock: the connection is shared by threads, so
        a cursor must not be read after the lock is released."""
        with self._lock:
            return Rows(self._db.execute(sql, args))

    # --- documents ---------------------------------------------------------------------------------
    def put_document(self, doc_id: str, name: str, words: int, chars: int) -> None:
        self._exec(
            "INSERT OR IGNORE INTO documents VALUES (?, ?, ?, ?, ?)", (doc_id, name, words, chars, time.time())
        )

    # --- memories ----------------------------------------------------------------------------------
    def open_memory(self, key: str, document_id: str, method: str, settings: dict[str, Any], model: str) -> MemoryRecord:
        now = time.time()
        self._exec(
            "INSERT OR IGNORE INTO memories VALUES (?, ?, ?, ?, ?, 'building', ?, ?)",
            (key, document_id, method, canonical_json(settings), model, now, now),
        )
        found = self.get_memory(key)
        assert found is not None
        return found

    def get_memory(self, key: str) -> MemoryRecord | None:
        row = self._exec(
            "SELECT key, document_id, method, settings, model, status FROM memories WHERE key = ?", (key,)
        ).fetchone()
        if row is None:
            return None
        return MemoryRecord(row[0], row[1], row[2], json.loads(row[3]), row[4], row[5])

    def memories_for(self, document_id: str, method: str | None = None) -> list[MemoryRecord]:
        sql = "SELECT key, document_id, method, settings, model, status FROM memories WHERE document_id = ?"
        args: tuple = (document_id,)
        if method:
            sql += " AND method = ?"
            args += (method,)
        rows = self._exec(sql + " ORDER BY updated DESC", args).fetchall()
        return [MemoryRecord(r[0], r[1], r[2], json.loads(r[3]), r[4], r[5]) for r in rows]

    def mark_complete(self, key: str) -> None:
        self._exec("UPDATE memories SET status = 'complete', updated = ? WHERE key = ?", (time.time(), key))

    def put_item(self, key: str, kind: str, idx: int, payload: dict[str, Any]) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO memory_items VALUES (?, ?, ?, ?)", (key, kind, idx, canonical_json(payload))
            )
            self._db.execute("UPDATE memories SET updated = ? WHERE key = ?", (time.time(), key))

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE: other processes wait for it, not fail half-way), holding the
        store's lock so other threads wait too; nested use joins the outer transaction. Yields the connection."""
        with self._lock:
            if self._db.in_transaction:
                yield self._db
                return
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    def put_items(self, key: str, kind: str, items: list[tuple[int, dict[str, Any]]]) -> None:
        """Many items in one transaction (one commit instead of one per item: a repository's fragments)."""
        with self.transaction() as db:
            db.executemany("INSERT OR REPLACE INTO memory_items VALUES (?, ?, ?, ?)",
                           [(key, kind, idx, canonical_json(payload)) for idx, payload in items])
            db.execute("UPDATE memories SET updated = ? WHERE key = ?", (time.time(), key))

    def items(self, key: str, kind: str) -> list[dict[str, Any]]:
        rows = self._exec(
            "SELECT payload FROM memory_items WHERE memory_key = ? AND kind = ? ORDER BY idx", (key, kind)
        ).fetchall()
        return [json.loads(r[0]) for r in rows]

    def iter_items(self, key: str, kind: str) -> Iterator[tuple[int, dict[str, Any]]]:
        rows = self._exec(
            "SELECT idx, payload FROM memory_items WHERE memory_key = ? AND kind = ? ORDER BY idx", (key, kind)
        ).fetchall()
        for idx, payload in rows:
            yield idx, json.loads(payload)

    def delete_items(self, key: str, kind: str, from_idx: int = 0) -> None:
        self._exec("DELETE FROM memory_items WHERE memory_key = ? AND kind = ? AND idx >= ?", (key, kind, from_idx))


class SQLiteResponseCache:
    """The LLM response cache, content-addressed on model + request (see ``LLMRequest.cache_key``)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, key: str) -> LLMResponse | None:
        row = self.store._exec(
            "SELECT model, text, prompt_tokens, completion_tokens, seconds, finish_reason, tool_calls FROM llm_cache "
            "WHERE key = ?", (key,),
        ).fetchone()
        if row is None:
            return None
        calls = tuple(ToolCall(c["name"], c["arguments"]) for c in json.loads(row[6])) if row[6] else ()
        return LLMResponse(
            text=row[1], prompt_tokens=row[2], completion_tokens=row[3], seconds=row[4], model=row[0],
            cached=True, finish_reason=row[5], tool_calls=calls,
        )

    def put(self, key: str, response: LLMResponse) -> None:
        calls = json.dumps([c.__dict__ for c in response.tool_calls]) if response.tool_calls else None
        self.store._exec(
            "INSERT OR REPLACE INTO llm_cache (key, model, text, prompt_tokens, completion_tokens, seconds, "
            "finish_reason, created, tool_calls) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (key, response.model, response.text, response.prompt_tokens, response.completion_tokens,
             response.seconds, response.finish_reason, time.time(), calls),
        )
