"""SQLite, the embedded default: one file in the user's directory, one connection shared by the process's threads
(under a lock), WAL so other processes read while one writes. What it does its own way, for the one store
(``sql.SQLStore``): ``BEGIN IMMEDIATE`` transactions (writers in other processes wait, never fail half-way, so no
row lock is needed), ``LIKE`` (case-insensitive for ASCII), ``IS`` for null-safe equality, ids reserved from
``sqlite_sequence`` for bulk loads, and archival search in numpy over vectors kept in memory between searches."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from .sql import Rows, SQLStore


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


class SQLite:
    """The SQLite dialect of the store: its connection and what it does unlike Postgres."""

    name = "sqlite"
    types: ClassVar[dict[str, str]] = {"ID": "INTEGER PRIMARY KEY AUTOINCREMENT", "INT": "INTEGER", "REAL": "REAL",
                                       "BLOB": "BLOB", "VEC": "", "SESSION": "", "SEQ": ""}
    migrations_table = "CREATE TABLE IF NOT EXISTS _pagemind_migrations (name TEXT PRIMARY KEY, applied REAL)"
    records_order = insertion_order = "rowid"
    ilike = "LIKE"
    same = "IS"
    no_limit = "-1"

    def __init__(self, path: str | Path) -> None:
        self.where = str(path)
        if self.where != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.where, check_same_thread=False, timeout=30.0, isolation_level=None)
        self._lock = threading.RLock()
        self.on_commit: Callable[[], None] | None = None  # tests count commits with it
        from .vectors import VectorCache

        self._vectors = VectorCache()
        try:
            self._db.execute("PRAGMA foreign_keys = ON")
            if self.where != ":memory:":
                _retry_locked(lambda: self._db.execute("PRAGMA journal_mode = WAL"))
        except BaseException:
            self._db.close()
            raise

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Rows:
        """Run one statement and read its rows while holding the lock: the connection is shared by threads, so a
        cursor must not be read after the lock is released."""
        with self._lock:
            cur = self._db.execute(sql, tuple(args))
            return Rows(cur.fetchall(), cur.rowcount)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> int:
        with self._lock:
            return max(self._db.executemany(sql, rows).rowcount, 0)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE (other processes wait for it, not fail half-way), holding the lock so other threads wait
        too; nested use joins the outer transaction."""
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
            if self.on_commit is not None:
                self.on_commit()

    def snapshot(self) -> Any:
        """Reads that must agree (a count and a page): the lock keeps this process's writers out between them."""
        return self._lock

    def stream(self, sql: str) -> Iterator[tuple[Any, ...]]:
        cursor = self._db.cursor()
        with self._lock:
            cursor.execute(sql)
        while True:
            with self._lock:
                rows = cursor.fetchmany(1000)
            if not rows:
                return
            yield from rows

    # --- what SQLite needs no statement for -----------------------------------------------------------
    def locking(self, sql: str, strong: bool = False) -> str:
        return sql  # BEGIN IMMEDIATE already serialises writers

    def lock_migrations(self, store: SQLStore) -> None:
        pass

    def ready(self) -> None:
        pass

    def prepare_schema(self, store: SQLStore) -> None:
        pass

    def lock_name(self, store: SQLStore, name: str) -> None:
        pass

    def liveness_key(self) -> int | None:
        return None  # a holder's pid and refresh time tell whether it is gone

    def session_alive(self, store: SQLStore, key: int | None) -> bool:
        return True

    def with_extra(self, table: str, columns: list[str], rows: list[tuple]) -> tuple[list[str], list[tuple]]:
        return columns, rows

    def after_load(self, store: SQLStore, table: str) -> None:
        pass  # AUTOINCREMENT follows explicit ids by itself

    # --- bulk loads and vector search ------------------------------------------------------------------
    def reserve_ids(self, store: SQLStore, table: str, n: int) -> list[int]:
        """``n`` new ids of an AUTOINCREMENT table (inside a write transaction, so nobody else takes them)."""
        last = store.execute(f"SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = ?), 0), "
                             f"COALESCE((SELECT MAX(id) FROM {table}), 0))", (table,)).fetchone()[0]
        return list(range(int(last) + 1, int(last) + 1 + n))

    def load(self, store: SQLStore, table: str, columns: Sequence[str], rows: Sequence[tuple]) -> int:
        marks = ", ".join("?" * len(columns))
        return store.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)

    def nearest(self, store: SQLStore, agent_id: int, embedder: str, query: bytes,
                limit: int | None) -> tuple[int, list[int]]:
        """Ranked in numpy over the agent's vectors, kept in memory between searches (:class:`VectorCache`): a
        search reads only the passages added since the last one."""
        from .vectors import rank_matrix

        def read(after: int, upto: int) -> tuple[int, list[tuple[int, bytes]]]:
            with self._lock:
                added = store.execute("SELECT COUNT(*) FROM agent_passages WHERE agent_id = ? AND id > ? AND "
                                      "id <= ?", (agent_id, after, upto)).fetchone()[0]
                return int(added), store.agent_passage_vectors(agent_id, embedder, after, upto)

        with self._lock:  # the agent's passages now (an index-only count)
            count, last = store.execute("SELECT COUNT(*), COALESCE(MAX(id), 0) FROM agent_passages "
                                        "WHERE agent_id = ?", (agent_id,)).fetchone()
        ids, matrix = self._vectors.matrix((agent_id, embedder), int(count), int(last), read)
        return len(ids), rank_matrix(ids, matrix, query, limit)


class Store(SQLStore):
    """The store in one SQLite file (``:memory:`` too)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        super().__init__(SQLite(path))
