"""Exact nearest-neighbour ranking of float32 unit vectors, shared by every backend so that they rank alike.

Scores are inner products summed in float64 row by row (a float32 product is exact in float64 and each row's sum
depends on that row alone, not on how many rows are ranked with it), best first, ties broken by id. A backend
that finds candidates another way (pgvector's ``<#>``, an HNSW index) re-ranks them here, so its order is the
SQLite store's order."""

from __future__ import annotations

from collections.abc import Sequence

_BLOCK = 4096  # rows scored at once (bounds the float64 copy)


def rank(rows: Sequence[tuple[int, bytes]], query: bytes, limit: int | None = None) -> list[int]:
    """The ids of ``rows`` (id, float32 vector bytes) by inner product with ``query``, best first."""
    if not rows:
        return []
    import numpy as np

    q = np.frombuffer(query, dtype=np.float32).astype(np.float64)
    ids = np.array([i for i, _ in rows], dtype=np.int64)
    scores = np.empty(len(rows), dtype=np.float64)
    for b in range(0, len(rows), _BLOCK):
        block = np.stack([np.frombuffer(blob, dtype=np.float32) for _, blob in rows[b:b + _BLOCK]])
        scores[b:b + len(block)] = (block.astype(np.float64) * q).sum(axis=1)
    order = np.lexsort((ids, -scores))
    return [int(ids[i]) for i in order[:limit]]
