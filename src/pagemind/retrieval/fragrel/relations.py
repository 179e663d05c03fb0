"""FragRel (Yue, Zhu & Yang 2024): relation-aware fragment scores.

    s_env_i = sum_j w_ij s_ind_j / sum_j w_ij                      (Eq. 9)
    s_rel_i = s_ind_i + alpha * s_env_i                             (Eq. 10)

A relation supplies ``environment(s_ind, rows)`` = s_env for the given rows (all when ``rows`` is None),
so a relation never has to materialise the N x N matrix when it has a cheaper form:

* :class:`ContextRelation`, Eq. 7, w_ij = w_rel^|loc_i - loc_j| within one source: a two-sided first-order
  geometric filter, O(N): a blocked numpy scan by default, scipy's ``lfilter`` with ``use_scipy=True`` (the
  same numbers to 1e-15; lfilter saves about 1 ms per query at 100k fragments, but loading ``scipy.signal``
  takes 0.5-1 s, more than a one-question process gains).
* :class:`SemanticRelation`, Eq. 6. ``form="distance"`` is the formula as printed, w_ij = 1 - cos(e_i, e_j),
  computed exactly in O(N d); ``form="similarity"`` is what the text means (larger = stronger relation),
  w_ij = max(0, cos(e_i, e_j)) over each fragment's ``k`` nearest neighbours: O(N k) memory, found by
  blocked brute force up to ``APPROXIMATE_ABOVE`` fragments and by a faiss HNSW index beyond (the ``ann``
  extra; brute force without it). ``k`` = 0 keeps every pair: the paper's dense formula.
* :class:`MatrixRelation`: any explicit (dense or scipy sparse) W, e.g. rows of the code-structure relation
  (Eq. 8, :mod:`.code_graph`).

The sum runs over all j, the fragment itself included (w_ii = 1 for the context relation): with w_rel = 0
the score is then (1 + alpha) s_ind and the ranking equals the independent one, as the paper states.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal, Protocol

import numpy as np

from ...errors import ConfigError


class Relation(Protocol):
    """A fragment-level relation W, used only through its normalised product with a score vector."""

    name: str

    def environment(self, scores: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray: ...


def fragrel_scores(s_ind: np.ndarray, relation: Relation, alpha: float = 0.5,
                   candidates: np.ndarray | None = None) -> np.ndarray:
    """s_rel (Eq. 10) for every fragment, or only for ``candidates`` (the others get -inf, i.e. rank last)."""
    s = np.asarray(s_ind, dtype=np.float64)
    if candidates is None:
        return s + alpha * relation.environment(s)
    rows = np.asarray(candidates, dtype=np.int64)
    out = np.full(s.shape, -np.inf)
    out[rows] = s[rows] + alpha * relation.environment(s, rows)
    return out


# --- context structure (Eq. 7) -------------------------------------------------------------------------
def _lfilter() -> Any:
    """scipy's ``lfilter``, imported on first use (``scipy.signal`` takes 0.5-1 s to load), or None without scipy."""
    try:
        from scipy.signal import lfilter
    except ImportError:  # pragma: no cover - scipy comes with the ``retrieval`` extra
        return None
    return lfilter


def causal_geometric(x: np.ndarray, w: float, use_scipy: bool = False) -> np.ndarray:
    """y_i = sum_{j <= i} w^(i - j) x_j in O(N)."""
    x = np.asarray(x, dtype=np.float64)
    if w == 0.0 or x.size == 0:
        return x.copy()
    if use_scipy and (lfilter := _lfilter()) is not None:
        return lfilter([1.0], [1.0, -w], x)
    if w == 1.0:
        return np.cumsum(x)
    block = max(1, min(x.size, int(50.0 / -math.log10(w))))  # w^-block <= 1e50: no overflow, little rounding
    n_blocks = -(-x.size // block)
    padded = np.zeros(n_blocks * block)
    padded[: x.size] = x
    t = np.arange(block)
    local = np.cumsum(padded.reshape(n_blocks, block) * w ** (-t), axis=1) * w**t
    carry, decay = 0.0, w ** (t + 1)
    for b in range(n_blocks):  # n/block steps: add what the previous blocks carry in
        if carry:
            local[b] += carry * decay
        carry = local[b, -1]
    return local.reshape(-1)[: x.size]


def two_sided_geometric(x: np.ndarray, w: float, use_scipy: bool = False) -> np.ndarray:
    """y_i = sum_j w^|i - j| x_j (the forward pass plus the backward pass, minus x counted twice)."""
    forward = causal_geometric(x, w, use_scipy)
    backward = causal_geometric(x[::-1], w, use_scipy)[::-1]
    return forward + backward - np.asarray(x, dtype=np.float64)


class ContextRelation:
    """w_ij = w_rel^|loc_i - loc_j| for fragments of the same source, 0 across sources; O(N) per query.

    All sources share one grid (slot = group offset + position - the group's first position; gaps hold
    zeros), filtered in one forward and one backward pass. What a pass carries over a group boundary is
    exactly ``y[first - 1] * w^(t - first + 1)``, so it is subtracted instead of filtering group by group.
    """

    name = "context"

    def __init__(self, positions: Sequence[int], sources: Sequence[str] | None = None, w_rel: float = 0.3,
                 use_scipy: bool = False):
        if not 0.0 <= w_rel <= 1.0:
            raise ConfigError(f"w_rel must be in [0, 1] (got {w_rel})")
        self.w_rel = w_rel
        self.use_scipy = use_scipy
        pos = np.asarray(positions, dtype=np.int64)
        self.n = pos.size
        if self.n == 0:
            pos, sources = np.zeros(1, dtype=np.int64), None  # a dummy grid of one slot; nothing is read
        if sources is None:
            group = np.zeros(pos.size, dtype=np.int64)
        else:
            _, group = np.unique(np.asarray(list(sources), dtype=object).astype(str), return_inverse=True)
        n_groups = int(group.max()) + 1
        lo = np.full(n_groups, np.iinfo(np.int64).max)
        hi = np.full(n_groups, np.iinfo(np.int64).min)
        np.minimum.at(lo, group, pos)
        np.maximum.at(hi, group, pos)
        span = hi - lo + 1
        offset = np.concatenate([[0], np.cumsum(span)[:-1]]).astype(np.int64)
        self.slots = offset[group] + pos - lo[group]
        if len(np.unique(self.slots)) != len(self.slots):
            raise ConfigError("two fragments of one source share a position")
        self.slots = self.slots[: self.n]
        self.length = int(span.sum())
        first = np.repeat(offset, span)  # each slot's group start and end (inclusive)
        last = np.repeat(offset + span - 1, span)
        t = np.arange(self.length)
        # slots after their group's first / before its last one: where the other pass leaks in
        self._fwd_at = np.flatnonzero(first > 0)
        self._fwd_from = first[self._fwd_at] - 1
        self._fwd_decay = w_rel ** (t - first + 1)[self._fwd_at].astype(np.float64)
        self._bwd_at = np.flatnonzero(last < self.length - 1)
        self._bwd_from = last[self._bwd_at] + 1
        self._bwd_decay = w_rel ** (last - t + 1)[self._bwd_at].astype(np.float64)
        self._group = first[self.slots]  # the first slot of a fragment's group names the group
        self._denominator = self._apply(np.ones(self.n))

    def _apply(self, values: np.ndarray) -> np.ndarray:
        grid = np.zeros(self.length)
        grid[self.slots] = values
        fwd = causal_geometric(grid, self.w_rel, self.use_scipy)
        bwd = causal_geometric(grid[::-1], self.w_rel, self.use_scipy)[::-1]
        if self._fwd_at.size:
            fwd[self._fwd_at] -= fwd[self._fwd_from] * self._fwd_decay
        if self._bwd_at.size:
            bwd[self._bwd_at] -= bwd[self._bwd_from] * self._bwd_decay
        return (fwd + bwd - grid)[self.slots]

    def environment(self, scores: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        env = self._apply(np.asarray(scores, dtype=np.float64)) / self._denominator
        return env if rows is None else env[rows]

    def dense(self) -> np.ndarray:
        """The full W (tests and small inputs only)."""
        gap = np.abs(self.slots[:, None] - self.slots[None, :]).astype(np.float64)
        return np.where(self._group[:, None] == self._group[None, :], self.w_rel**gap, 0.0)


# --- semantic (Eq. 6) ----------------------------------------------------------------------------------
SEMANTIC_K = 64  # neighbours per fragment; 0 (or >= N - 1) keeps every pair, the paper's dense formula
APPROXIMATE_ABOVE = 20_000  # fragments beyond which the neighbours come from an ANN index (when faiss is there)
DENSE_LIMIT = 4096  # the all-pairs form keeps W in memory up to here (128 MB), else recomputes rows per query
Search = Literal["auto", "dense", "exact", "approximate"]
ANN_HINT = "pip install 'pagemind[ann]'  (faiss-cpu)"


def _faiss() -> Any:
    """faiss (the ``ann`` extra), imported on first use, or None when it is not installed."""
    try:
        import faiss
    except ImportError:
        return None
    return faiss


def has_ann() -> bool:
    """Whether the approximate nearest-neighbour index (faiss) is installed."""
    return _faiss() is not None


def _rows_per_block(row_bytes: int, memory_mb: float) -> int:
    return max(1, int(memory_mb * 2**20) // max(1, row_bytes))


def _sorted_best_first(idx: np.ndarray, sims: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(-sims, axis=1, kind="stable")
    return np.take_along_axis(idx, order, axis=1), np.take_along_axis(sims, order, axis=1)


def pair_cosines(E: np.ndarray, idx: np.ndarray, memory_mb: float = 64.0) -> np.ndarray:
    """cos(e_i, e_idx[i, m]) in float64 (as the dense formula computes it), for unit rows ``E``, in row blocks."""
    n, k = idx.shape
    out = np.empty((n, k))
    block = _rows_per_block(k * E.shape[1] * 12, memory_mb)  # the gathered float32 rows and einsum's float64 cast
    for b in range(0, n, block):  # float32 values multiplied and summed in float64: exact products
        out[b:b + block] = np.einsum("rkd,rd->rk", E[idx[b:b + block]], E[b:b + block], dtype=np.float64)
    return out


def unit_rows(vectors: np.ndarray, block: int = 8192) -> np.ndarray:
    """Rows scaled to unit length in float64, stored as float32 (zero rows stay zero), without a float64 copy."""
    V = np.asarray(vectors)
    out = np.empty(V.shape, dtype=np.float32)
    for b in range(0, len(V), block):
        rows = V[b:b + block].astype(np.float64)
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        out[b:b + block] = rows / np.where(norms == 0, 1, norms)
    return out


def exact_neighbours(E: np.ndarray, k: int, memory_mb: float = 64.0) -> tuple[np.ndarray, np.ndarray]:
    """Each row's ``k`` most cosine-similar other rows of the unit rows ``E``, by brute force.

    Row blocks of about ``memory_mb`` (float32 products, then ``argpartition``), so memory is the result
    (N x k) plus one block, whatever N. Returns indices and float64 cosines, best first.
    """
    n = len(E)
    k = min(k, n - 1)
    idx = np.empty((n, max(k, 0)), dtype=np.int32 if n < 2**31 else np.int64)
    if k <= 0:
        return idx, np.empty((n, 0))
    block = _rows_per_block(n * 16, memory_mb)  # products (4 B) + argpartition's copy (4 B) and indices (8 B)
    for b in range(0, n, block):
        sims = E[b:b + block] @ E.T
        r = np.arange(sims.shape[0])
        sims[r, b + r] = -np.inf  # never its own neighbour: w_ii is added apart
        idx[b:b + block] = np.argpartition(sims, n - 1 - k, axis=1)[:, n - k:]
    return _sorted_best_first(idx, pair_cosines(E, idx, memory_mb))


def approximate_neighbours(E: np.ndarray, k: int, m: int = 16, ef_construction: int = 40,
                           ef_search: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """About the ``k`` most cosine-similar other rows of the unit rows ``E``, from a faiss HNSW graph.

    Build and search are O(N log N) in time and O(N (m + k)) in memory; ``ef_search`` defaults to
    max(48, k + 16) (recall 0.94-0.95 on MiniLM embeddings of QMSum, k = 32-64). Cosines are the index's
    float32 inner products; a neighbour the search could not reach (index -1) gets weight 0. Needs the
    ``ann`` extra.
    """
    faiss = _faiss()
    if faiss is None:
        raise ConfigError(f"the approximate neighbour index needs faiss: {ANN_HINT}")
    n, d = E.shape
    k = min(k, n - 1)
    index = faiss.IndexHNSWFlat(d, m, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = ef_construction
    index.add(np.ascontiguousarray(E, dtype=np.float32))
    index.hnsw.efSearch = max(ef_search or max(48, k + 16), k + 1)
    sims, idx = index.search(np.ascontiguousarray(E, dtype=np.float32), k + 1)  # best first
    del index  # its copy of the vectors, before the results are reshaped
    keep = idx != np.arange(n)[:, None]  # drop each row's own entry, or the last one when it was not found
    keep[keep.all(axis=1), -1] = False
    idx, sims = idx[keep].reshape(n, k), sims[keep].reshape(n, k).astype(np.float64)
    missing = idx < 0
    idx[missing], sims[missing] = 0, 0.0
    return idx.astype(np.int32 if n < 2**31 else np.int64), sims


class SemanticRelation:
    """Eq. 6 on unit embeddings: ``distance`` = 1 - cos as printed, ``similarity`` = max(0, cos) as meant.

    ``similarity`` relates each fragment to its ``k`` most similar fragments (w_ij = max(0, cos), 0 for the
    rest; w_ii = 1), an O(N k) sparse relation, found by ``search``:

    * ``dense``: every pair, the paper's formula (what ``k`` = 0 or ``k`` >= N - 1 selects under ``auto``);
      W is kept up to ``dense_limit`` fragments, beyond that its rows are recomputed per query (O(N^2 d)).
    * ``exact``: blocked brute force, O(N^2 d) time once, O(N k) memory.
    * ``approximate``: a faiss HNSW index (the ``ann`` extra), O(N log N).
    * ``auto``: dense, else exact up to ``approximate_above`` fragments (or when faiss is missing), else
      approximate.

    With every neighbour kept (``k`` = N - 1, ``exact``) the result equals the dense formula to float64 precision.
    ``distance`` needs no neighbours: Σ_j (1 - e_i.e_j) s_j = Σ s - e_i.(E^T s) is exact in O(N d) per query.
    """

    def __init__(self, vectors: np.ndarray, form: Literal["similarity", "distance"] = "similarity",
                 k: int = SEMANTIC_K, search: Search = "auto", include_self: bool = True,
                 approximate_above: int = APPROXIMATE_ABOVE, dense_limit: int = DENSE_LIMIT,
                 memory_mb: float = 64.0):
        if k < 0:
            raise ConfigError(f"semantic k must be >= 0 (got {k})")
        if search not in ("auto", "dense", "exact", "approximate"):
            raise ConfigError(f"unknown neighbour search {search!r} (have: auto, dense, exact, approximate)")
        self.E = unit_rows(vectors)  # float32: half the memory traffic
        self.n = len(self.E)
        self.form = form
        self.name = "semantic-distance" if form == "distance" else "semantic"
        self.include_self = include_self
        self.memory_mb = memory_mb
        self.W: np.ndarray | None = None
        self._E64: np.ndarray | None = None
        self.nbr_idx: np.ndarray | None = None
        self.nbr_w: np.ndarray | None = None
        self.k = 0  # neighbours per fragment (0: every pair)
        self.search = "dense"
        if form == "distance":
            total = np.zeros(self.E.shape[1])
            for b in range(0, self.n, 8192):  # in blocks: a float64 sum of the whole E would copy it
                total += self.E[b:b + 8192].sum(axis=0, dtype=np.float64)
            self._sum_e = total.astype(np.float32)
            return
        if form != "similarity":
            raise ConfigError(f"unknown semantic form {form!r} (have: similarity, distance)")
        if search == "auto":
            if k == 0 or k >= self.n - 1:
                search = "dense"
            else:
                search = "approximate" if self.n > approximate_above and has_ann() else "exact"
        self.search = search
        if search == "dense":
            self._E64 = self.E.astype(np.float64)
            if self.n <= dense_limit:
                self.W = self._dense_rows(np.arange(self.n))
                self._row_sums = self.W.sum(axis=1)
            else:
                self._row_sums = self._blocked(np.arange(self.n), np.ones(self.n))
            return
        self.k = min(k or self.n - 1, max(self.n - 1, 0))
        idx, sims = (exact_neighbours(self.E, self.k, memory_mb) if search == "exact"
                     else approximate_neighbours(self.E, self.k))
        self.nbr_idx, self.nbr_w = idx, np.clip(sims, 0.0, None)
        self._row_sums = self.nbr_w.sum(axis=1) + self._self_weight

    @property
    def _self_weight(self) -> float:
        return 1.0 if self.include_self else 0.0

    def _dense_rows(self, rows: np.ndarray) -> np.ndarray:
        assert self._E64 is not None
        W = np.clip(self._E64[rows] @ self._E64.T, 0.0, None)
        W[np.arange(len(rows)), rows] = self._self_weight
        return W

    def _blocked(self, rows: np.ndarray, s: np.ndarray) -> np.ndarray:
        """W[rows] @ s without holding W: rows recomputed in blocks of about ``memory_mb``."""
        out = np.empty(len(rows))
        block = _rows_per_block(self.n * 8, self.memory_mb)
        for b in range(0, len(rows), block):
            out[b:b + block] = self._dense_rows(rows[b:b + block]) @ s
        return out

    @property
    def nnz(self) -> int:
        """Stored relation weights: N·(k + 1) for neighbours (self included), N² for the dense form, 0 otherwise."""
        if self.nbr_idx is not None:
            return int(self.nbr_idx.size + self.n)
        return self.n * self.n if self.form == "similarity" else 0

    @property
    def nbytes(self) -> int:
        """Bytes held by the relation (embeddings, weights and neighbour lists)."""
        held = (self.E, self.W, self._E64, self.nbr_idx, self.nbr_w)
        return int(sum(a.nbytes for a in held if a is not None))

    def environment(self, scores: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        s = np.asarray(scores, dtype=np.float64)
        every = rows is None
        sel = slice(None) if every else np.asarray(rows)  # a slice: no copy of E or W for all rows
        if self.form == "distance":  # sum_j (1 - e_i.e_j) s_j = sum(s) - e_i.(E^T s); w_ii = 0 exactly in theory
            E = self.E[sel]  # float32 products (an upcast would copy E): relative error ~1e-7
            num = s.sum() - (E @ (self.E.T @ s.astype(np.float32))).astype(np.float64)
            den = self.n - (E @ self._sum_e).astype(np.float64)
        elif self.nbr_idx is not None:
            assert self.nbr_w is not None
            num = (self.nbr_w[sel] * s[self.nbr_idx[sel]]).sum(axis=1) + self._self_weight * s[sel]
            den = self._row_sums[sel]
        elif self.W is not None:
            num = self.W @ s if every else self.W[sel] @ s
            den = self._row_sums[sel]
        else:
            num = self._blocked(np.arange(self.n) if every else np.asarray(rows), s)
            den = self._row_sums[sel]
        safe = den > 1e-9
        return np.where(safe, num / np.where(safe, den, 1.0), s[sel])  # no related mass: the score itself

    def matrix(self) -> Any:
        """W as a scipy CSR matrix (neighbour form, self included) or the dense array (imports scipy)."""
        if self.nbr_idx is None:
            return self.dense()
        from scipy.sparse import csr_matrix

        assert self.nbr_w is not None
        cols = np.concatenate([self.nbr_idx, np.arange(self.n)[:, None]], axis=1)
        vals = np.concatenate([self.nbr_w, np.full((self.n, 1), self._self_weight)], axis=1)
        indptr = np.arange(0, cols.size + 1, cols.shape[1])
        return csr_matrix((vals.ravel(), cols.ravel(), indptr), shape=(self.n, self.n))

    def dense(self) -> np.ndarray:
        """The full W actually used (tests and small inputs only)."""
        E64 = self.E.astype(np.float64)
        cos = E64 @ E64.T
        if self.form == "distance":
            return 1.0 - cos
        if self.nbr_idx is not None:
            return np.asarray(self.matrix().toarray())
        W = np.clip(cos, 0.0, None)
        np.fill_diagonal(W, self._self_weight)
        return W


# --- any explicit matrix ---------------------------------------------------------------------------------
class MatrixRelation:
    """An explicit relation matrix (numpy or scipy sparse), full or given for some ``row_ids`` only."""

    def __init__(self, W: Any, name: str = "matrix", row_ids: Sequence[int] | None = None):
        self.W = W
        self.name = name
        self.row_of = None if row_ids is None else {int(r): k for k, r in enumerate(row_ids)}

    def environment(self, scores: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        s = np.asarray(scores, dtype=np.float64)
        if self.row_of is None:
            sub = self.W if rows is None else self.W[np.asarray(rows)]
        else:
            if rows is None:
                raise ConfigError("this relation holds some rows only: pass the candidate rows")
            missing = [int(r) for r in rows if int(r) not in self.row_of]
            if missing:
                raise ConfigError(f"relation rows not computed for fragments {missing[:5]}")
            sub = self.W[[self.row_of[int(r)] for r in rows]]
        num = np.asarray(sub @ s).reshape(-1)
        den = np.asarray(sub.sum(axis=1)).reshape(-1)
        sel = np.arange(len(s)) if rows is None else np.asarray(rows)
        safe = den > 1e-12
        return np.where(safe, num / np.where(safe, den, 1.0), s[sel])


def dense_environment(W: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Eq. 9 straight from a dense W (the reference the fast forms are tested against)."""
    W = np.asarray(W, dtype=np.float64)
    return (W @ scores) / W.sum(axis=1)
