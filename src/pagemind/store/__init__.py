"""Storage: the interface every backend implements (``base``) and the SQLite store (``Store``, the default)."""
from ..hashing import canonical_json
from .base import (
    AgentRow,
    BlockRow,
    EventRow,
    LockHolder,
    MemoryRecord,
    MemorySummary,
    PassageRow,
    StoreBackend,
    StoredVectors,
    StoreResponseCache,
    StoreTooNew,
    memory_key,
)
from .sqlite import Store

SQLiteResponseCache = StoreResponseCache  # the name before the store had an interface

__all__ = ["AgentRow", "BlockRow", "EventRow", "LockHolder", "MemoryRecord", "MemorySummary", "PassageRow", "SQLiteResponseCache",
           "Store", "StoreBackend", "StoreResponseCache", "StoreTooNew", "StoredVectors", "canonical_json",
           "memory_key"]
