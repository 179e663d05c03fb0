"""Storage (SQLite): documents, memories and the LLM response cache."""
from .db import MemoryRecord, SQLiteResponseCache, Store, canonical_json, memory_key

__all__ = ["MemoryRecord", "SQLiteResponseCache", "Store", "canonical_json", "memory_key"]
