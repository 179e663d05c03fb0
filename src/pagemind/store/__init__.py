"""Storage: the interface every backend implements (``base``) and the SQLite store (``Store``, the default)."""
from ..hashing import canonical_json
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
    StoreResponseCache,
    StoreTooNew,
    UserRow,
    memory_key,
)
from .sqlite import Store

SQLiteResponseCache = StoreResponseCache  # the name before the store had an interface

__all__ = ["AgentRow", "BlockRow", "DocumentRow", "EventRow", "RunRow", "StepRow", "UserRow", "LockHolder", "MemoryRecord", "MemorySummary", "PassageRow", "SQLiteResponseCache",
           "Store", "StoreBackend", "StoreResponseCache", "StoreTooNew", "StoredVectors", "canonical_json",
           "memory_key"]
