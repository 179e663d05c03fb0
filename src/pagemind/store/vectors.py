"""Exact nearest-neighbour ranking of float32 unit vectors, shared by every backend so that they rank alike.

Scores are inner products summed in float64 row by row (a float32 product is exact in float64 and each row's sum
depends on that row alone, not on how many rows are ranked with it), best first, ties broken by id. A backend
that finds candidates another way (pgvector's ``<#>``, an HNSW index) re-ranks them here, so its order is the
SQLite store's order."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

_BLOCK = 4096  # rows scored at once (bounds the float64 copy)


def rank(rows: Sequence[tuple[int, bytes]], query: bytes, limit: int | None = None) -> list[int]:
    """The ids of ``rows`` (id, float32 vector bytes) by inner product with ``query``, best first."""
    if not rows:
        return []
    ids, matrix = as_matrix(rows)
    return rank_matrix(ids, matrix, query, limit)


def as_matrix(rows: Sequence[tuple[int, bytes]]) -> tuple[Any, Any]:
    """(ids as int64, vectors as one float32 matrix) of ``rows``."""
    import numpy as np

    if not rows:
        return np.empty(0, np.int64), np.empty((0, 0), np.float32)
    ids = np.fromiter((i for i, _ in rows), dtype=np.int64, count=len(rows))
    matrix = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.float32).reshape(len(rows), -1)
    return ids, matrix


def rank_matrix(ids: Any, matrix: Any, query: bytes, limit: int | None = None) -> list[int]:
    """:func:`rank` over ids and their float32 matrix (row ``i`` is ``ids[i]``'s vector)."""
    if len(ids) == 0:
        return []
    import numpy as np

    q = np.frombuffer(query, dtype=np.float32).astype(np.float64)
    scores = np.empty(len(ids), dtype=np.float64)
    for b in range(0, len(ids), _BLOCK):
        scores[b:b + _BLOCK] = (matrix[b:b + _BLOCK].astype(np.float64) * q).sum(axis=1)
    order = np.lexsort((ids, -scores))
    return [int(ids[i]) for i in order[:limit]]


@dataclass(frozen=True)
class _Entry:
    count: int  # the agent's passages (any embedder) when the entry was read
    last: int  # their largest id
    ids: Any
    matrix: Any

    def extended(self, count: int, last: int, rows: Sequence[tuple[int, bytes]]) -> _Entry:
        """This entry with ``rows`` (the vectors of the passages added since) appended."""
        import numpy as np

        ids, matrix = as_matrix(rows)
        if len(self.ids) and len(ids):
            ids, matrix = np.concatenate([self.ids, ids]), np.concatenate([self.matrix, matrix])
        elif not len(ids):
            ids, matrix = self.ids, self.matrix
        return _Entry(count, last, ids, matrix)


class VectorCache:
    """An agent's passage vectors for one embedder, read from the store once and then only extended: passages are
    only ever appended (an agent's go only with the agent, whose id is not used again), so the agent's passage
    count and largest id tell whether the cache is current, and the rows past its largest id are all that is new.
    Least recently used entries go once the cache holds more than ``budget`` bytes of vectors."""

    def __init__(self, budget: int = 512 << 20) -> None:
        self.budget = budget
        self._entries: OrderedDict[tuple[int, str], _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def matrix(self, key: tuple[int, str], count: int, last: int,
               read: Callable[[int, int], tuple[int, Sequence[tuple[int, bytes]]]]) -> tuple[Any, Any]:
        """(ids, matrix) of ``key``, given the agent's passage count and largest id now; ``read(after, upto)``
        gives (how many passages the agent has with ids in ``(after, upto]``, the vector rows of this embedder among
        them). Bounded by ``upto``, a read sees exactly the passages that ``count`` and ``last`` describe, even
        when another writer adds more meanwhile."""
        with self._lock:
            entry = self._entries.get(key)
        if entry is not None and (entry.count, entry.last) != (count, last):
            added, rows = read(entry.last, last)
            entry = entry.extended(count, last, rows) if entry.count + added == count else None
        if entry is None:
            _, rows = read(0, last)
            entry = _Entry(count, last, *as_matrix(rows))
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > 1 and sum(e.matrix.nbytes for e in self._entries.values()) > self.budget:
                self._entries.popitem(last=False)
            if entry.matrix.nbytes > self.budget:
                del self._entries[key]
        return entry.ids, entry.matrix
