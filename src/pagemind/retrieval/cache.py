"""Embedding caches: content-addressed on (embedder id, sha256 of the text), in the store or in memory.

The store keeps the vectors (table from migration ``m002_embeddings``); this class converts them to arrays.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..store import SQLStore


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """Sub-chunk vectors per text in a pagemind store (any :class:`~pagemind.store.SQLStore`)."""

    def __init__(self, store: SQLStore):
        self.store = store

    def get_many(self, model: str, texts: Sequence[str]) -> list[np.ndarray | None]:
        hashes = [text_hash(t) for t in texts]
        found = self.store.get_embeddings(model, hashes)
        out: list[np.ndarray | None] = []
        for h in hashes:
            v = found.get(h)
            out.append(None if v is None else np.frombuffer(v.data, dtype=np.float32).reshape(v.chunks, v.dim).copy())
        return out

    def put_many(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        """Store every text's vectors in one transaction."""
        from ..store import StoredVectors

        self.store.put_embeddings(model, {
            text_hash(t): StoredVectors(int(m.shape[0]), int(m.shape[1]),
                                        np.ascontiguousarray(m, np.float32).tobytes())
            for t, m in vectors.items()})

    def count(self, model: str | None = None) -> int:
        return self.store.count_embeddings(model)


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
