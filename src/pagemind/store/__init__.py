"""Storage: one SQL store (``sql.SQLStore``, its schema in ``schema``) over a dialect: SQLite (``Store``, the
default) or Postgres (``postgres.PostgresStore``, imported only when a postgresql:// store is opened)."""
from pathlib import Path

from ..hashing import canonical_json
from .rows import (
    LOCAL_USER,
    AgentRow,
    BlockRow,
    BlockVersionRow,
    DocumentRow,
    EventRow,
    LibraryDocumentRow,
    LibraryRow,
    LockHolder,
    MemoryContent,
    MemoryRecord,
    MemorySummary,
    Page,
    PassageRow,
    RunRow,
    StepRow,
    StoredVectors,
    StoreResponseCache,
    StoreTooNew,
    UserRow,
    memory_key,
    memory_scope,
)
from .sql import SQLStore
from .sqlite import Store


def open_store(spec: str | Path | SQLStore) -> SQLStore:
    """The store a setting names: a ``postgresql://`` (or ``postgres://``) URL opens a Postgres store, anything
    else is a SQLite file (``:memory:`` too); a store object is returned as it is."""
    if isinstance(spec, SQLStore):
        return spec
    if str(spec).startswith(("postgresql://", "postgres://")):
        from .postgres import PostgresStore

        return PostgresStore(str(spec))
    return Store(spec)


__all__ = [
    "LOCAL_USER",
    "AgentRow",
    "BlockRow",
    "BlockVersionRow",
    "DocumentRow",
    "EventRow",
    "LibraryDocumentRow",
    "LibraryRow",
    "LockHolder",
    "MemoryContent",
    "MemoryRecord",
    "MemorySummary",
    "Page",
    "PassageRow",
    "RunRow",
    "SQLStore",
    "StepRow",
    "Store",
    "StoreResponseCache",
    "StoreTooNew",
    "StoredVectors",
    "UserRow",
    "canonical_json",
    "memory_key",
    "memory_scope",
    "open_store",
]
