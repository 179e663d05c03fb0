"""The graph math of FragRel's code-structure relation (Eq. 8, Appendix A), independent of any parser.

A repository graph has syntax-tree edges (0.5), directory-tree edges (0.3), file node <-> syntax root edges
(1.0) and call -> definition edges (0.8), all undirected with weights in (0, 1]. A path's weight is the
product of its edge weights; Dis(g, h) is the weight of the best path (1 for g = h, 0 when unreachable),
found by Dijkstra on the costs -log(w). A fragment covers graph nodes with text lengths len_k, and

    w_ij = sum_k sum_l len_k^i len_l^j Dis(g_k^i, g_l^j) / sum_k sum_l len_k^i len_l^j        (Eq. 8)

Building the graph from tree-sitter trees and the directory listing is part 5 (code); this module takes
the nodes and edges as plain numbers so it can be tested on a hand-built graph.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ...errors import ConfigError
from .relations import MatrixRelation

EDGE_WEIGHTS = {"syntax": 0.5, "directory": 0.3, "file": 1.0, "call": 0.8}  # Appendix A

_BLOCK_ENTRIES = 1 << 22  # Dijkstra sources per block x graph nodes (float64: 32 MB)
NodeSpans = Sequence[tuple[int, float]]  # (graph node, text length of that node inside the fragment)


def _scipy():
    try:
        import scipy.sparse as sp
        from scipy.sparse.csgraph import dijkstra
    except ImportError:
        raise ConfigError("the code-structure relation needs scipy: pip install 'pagemind[retrieval]'") from None
    return sp, dijkstra


@dataclass(frozen=True)
class CodeGraph:
    """Nodes ``0 .. n_nodes-1`` and undirected weighted edges ``(u, v, w)``; a repeated edge keeps its best w."""

    n_nodes: int
    edges: tuple[tuple[int, int, float], ...]

    @classmethod
    def build(cls, n_nodes: int, typed_edges: Iterable[tuple[int, int, str | float]]) -> CodeGraph:
        """From edges whose third item is a weight or an edge type of :data:`EDGE_WEIGHTS`."""
        edges = []
        for u, v, kind in typed_edges:
            w = EDGE_WEIGHTS[kind] if isinstance(kind, str) else float(kind)
            edges.append((int(u), int(v), w))
        return cls(n_nodes, tuple(edges))

    @classmethod
    def from_arrays(cls, n_nodes: int, u: np.ndarray, v: np.ndarray, w: np.ndarray) -> CodeGraph:
        """From parallel edge arrays (the cost matrix is built from them directly)."""
        graph = cls(n_nodes, tuple(zip(np.asarray(u).tolist(), np.asarray(v).tolist(), np.asarray(w).tolist())))
        object.__setattr__(graph, "_cost", cost_matrix(n_nodes, u, v, w))
        return graph

    def cost_matrix(self):
        """Symmetric sparse matrix of -log(w), built once per graph and cached (see :func:`cost_matrix`)."""
        cached = self.__dict__.get("_cost")
        if cached is None:
            e = np.asarray(self.edges, dtype=np.float64).reshape(-1, 3)
            cached = cost_matrix(self.n_nodes, e[:, 0].astype(np.int64), e[:, 1].astype(np.int64), e[:, 2])
            object.__setattr__(self, "_cost", cached)  # frozen dataclass: a cache, not a field
        return cached


def cost_matrix(n_nodes: int, u: np.ndarray, v: np.ndarray, w: np.ndarray):
    """Symmetric sparse -log(w) of undirected edges ``(u, v, w)``: a repeated edge keeps its best weight, self
    loops are dropped, weight-1 edges are explicit zeros (which scipy's Dijkstra keeps as edges)."""
    sp, _ = _scipy()
    u, v, w = np.asarray(u, dtype=np.int64), np.asarray(v, dtype=np.int64), np.asarray(w, dtype=np.float64)
    bad_w = ~((w > 0.0) & (w <= 1.0))
    if bad_w.any():
        raise ConfigError(f"edge weight {w[bad_w][0]} outside (0, 1]")
    bad_n = (u < 0) | (u >= n_nodes) | (v < 0) | (v >= n_nodes)
    if bad_n.any():
        i = int(np.flatnonzero(bad_n)[0])
        raise ConfigError(f"edge ({u[i]}, {v[i]}) names a node outside 0..{n_nodes - 1}")
    a, b = np.minimum(u, v), np.maximum(u, v)
    loop = a == b
    a, b, w = a[~loop], b[~loop], w[~loop]
    order = np.lexsort((-w, b, a))  # per node pair, the best weight first
    a, b, w = a[order], b[order], w[order]
    first = np.ones(len(a), dtype=bool)
    first[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    a, b, cost = a[first], b[first], -np.log(w[first])
    return sp.csr_matrix((np.concatenate([cost, cost]), (np.concatenate([a, b]), np.concatenate([b, a]))),
                         shape=(n_nodes, n_nodes))


def max_product_paths(graph: CodeGraph, sources: Sequence[int], min_weight: float = 0.0) -> np.ndarray:
    """Dis(source, node) for every node: the largest product of edge weights over a path (Dijkstra on -log w).

    Shape ``(len(sources), n_nodes)``; 1 on the source itself, 0 when unreachable or below ``min_weight``.
    """
    _, dijkstra = _scipy()
    if len(sources) == 0:
        return np.zeros((0, graph.n_nodes))
    limit = np.inf if min_weight <= 0 else -math.log(min_weight)
    dist = dijkstra(graph.cost_matrix(), directed=False, indices=np.asarray(sources, dtype=np.int64), limit=limit)
    return np.exp(-np.atleast_2d(dist))  # exp(-inf) = 0 for the unreachable


def _membership(fragment_nodes: Sequence[NodeSpans], n_nodes: int):
    """Sparse M[j, g] = summed text length of node g inside fragment j."""
    sp, _ = _scipy()
    rows = [j for j, spans in enumerate(fragment_nodes) for _ in spans]
    cols = [g for spans in fragment_nodes for g, _ in spans]
    vals = [float(length) for spans in fragment_nodes for _, length in spans]
    return sp.csr_matrix((vals, (rows, cols)), shape=(len(fragment_nodes), n_nodes))  # repeats are summed


def code_relation_rows(graph: CodeGraph, fragment_nodes: Sequence[NodeSpans], rows: Sequence[int] | None = None,
                       min_weight: float = 0.0) -> np.ndarray:
    """Eq. 8 for the fragment ``rows`` (all when None) against every fragment: shape ``(len(rows), N)``.

    Runs Dijkstra only from the nodes of the requested rows, so a retriever can compute the rows of its
    top candidates by s_ind alone (the denominator of Eq. 9 still sums each of those rows in full).
    """
    rows = list(range(len(fragment_nodes))) if rows is None else [int(r) for r in rows]
    M = _membership(fragment_nodes, graph.n_nodes)
    L = np.asarray(M.sum(axis=1)).reshape(-1)
    if np.any(L[rows] <= 0):
        raise ConfigError("every fragment needs at least one graph node with a positive length")
    sources = sorted({g for r in rows for g, _ in fragment_nodes[r]})
    A = M[rows][:, sources]  # lengths of each requested fragment's nodes, by source order
    weighted = np.zeros((len(rows), graph.n_nodes))  # sum_k len_k Dis(g_k, .), Dijkstra in blocks of sources
    block = max(1, min(256, _BLOCK_ENTRIES // max(1, graph.n_nodes)))  # a block's dense rows stay ~32 MB
    for b in range(0, len(sources), block):
        D = max_product_paths(graph, sources[b:b + block], min_weight)
        weighted += np.asarray(A[:, b:b + block] @ D)
    W = np.asarray((M @ weighted.T).T)  # (R, N): sum_k sum_l len_k len_l Dis(g_k, g_l)
    W = W / (L[rows][:, None] * np.where(L > 0, L, 1)[None, :])
    W[:, L <= 0] = 0.0
    return W


def code_relation(graph: CodeGraph, fragment_nodes: Sequence[NodeSpans], rows: Sequence[int] | None = None,
                  min_weight: float = 0.0) -> MatrixRelation:
    """The code-structure relation as a FragRel :class:`~.relations.Relation` (rows as in ``code_relation_rows``)."""
    W = code_relation_rows(graph, fragment_nodes, rows, min_weight)
    return MatrixRelation(W, name="code", row_ids=None if rows is None else list(rows))
