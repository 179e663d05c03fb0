"""Embedding caches: content-addressed on (embedder id, sha256 of the text), in the store or in memory.

The store table is created by migration ``m002_embeddings``. Its SQL stays in this one small class.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any, Mapping, Sequence

import numpy as np


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """Sub-chunk vectors per text in the pagemind :class:`~pagemind.store.Store` (table ``embeddings``)."""

    def __init__(self, store: Any):
        self.store = store

    def get_many(self, model: str, texts: Sequence[str]) -> list[np.ndarray | None]:
        hashes = [text_hash(t) for t in texts]
        found: dict[str, np.ndarray] = {}
        unique = sorted(set(hashes))
        for b in range(0, len(unique), 500):
            part = unique[b:b + 500]
            rows = self.store._exec(
                f"SELECT text_hash, chunks, dim, vectors FROM embeddings WHERE model = ? AND text_hash IN "
                f"({','.join('?' * len(part))})", (model, *part),
            ).fetchall()
            for h, chunks, dim, blob in rows:
                found[h] = np.frombuffer(blob, dtype=np.float32).reshape(chunks, dim).copy()
        return [found.get(h) for h in hashes]

    def put_many(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        now = time.time()
        rows = [(model, text_hash(t), int(m.shape[0]), int(m.shape[1]), np.ascontiguousarray(m, np.float32).tobytes(),
                 now) for t, m in vectors.items()]
        with self.store.transaction() as db:
            db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?, ?, ?)", rows)

    def count(self, model: str | None = None) -> int:
        sql, args = ("SELECT COUNT(*) FROM embeddings", ()) if model is None else (
            "SELECT COUNT(*) FROM embeddings WHERE model = ?", (model,))
        return int(self.store._exec(sql, args).fetchone()[0])


class MemoryCache:
    """The same interface in a dict (a chat session without a store)."""

    def __init__(self) -> None:
        self.data: dict[tuple[str, str], np.ndarray] = {}

    def get_many(self, model: str, texts: Sequence[str]) -> list[np.ndarray | None]:
        return [self.data.get((model, text_hash(t))) for t in texts]

    def put_many(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        for t, m in vectors.items():
            self.data[(model, text_hash(t))] = m

    def count(self, model: str | None = None) -> int:
        return sum(1 for m, _ in self.data if model is None or m == model)
