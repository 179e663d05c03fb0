"""Ranking a repository's fragments for one query: s_ind (BM25 or RepoCoder's Jaccard), then FragRel with the
code-structure relation (Eq. 8-10) on the top-M candidates.

**Bounding the relation.** Eq. 8 needs Dis(g, h) from every node of a candidate fragment to every node of
every fragment. Paths lighter than ``min_weight`` (default 0.01: e.g. seven syntax edges, 0.5^7 < 0.01)
count as 0, so Dijkstra never looks past them, and the search runs on a **subgraph**: one multi-source
Dijkstra from all candidate nodes at once marks the nodes within ``min_weight`` of some candidate node; every
path of weight >= ``min_weight`` between a candidate node and any node stays inside that set (each node on
such a path is at least that close to the source), so the per-source Dijkstra runs of
:func:`.code_graph.code_relation_rows` on the set, plus one isolated stand-in node that keeps the lengths of
fragment nodes outside it, give exactly the rows the whole graph gives with the same ``min_weight`` (tested).
``min_weight = 0`` is exact Eq. 8 and searches whole connected components.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ...errors import ConfigError
from ..scorers import BM25, Jaccard, code_tokens, words
from .code_graph import CodeGraph, _scipy, code_relation_rows
from .code_repo import CodeRepository, GraphView
from .relations import MatrixRelation, fragrel_scores

CODE_SCORERS = ("bm25", "jaccard")


@dataclass(frozen=True)
class CodeSearchSettings:
    """s_ind scorer and FragRel settings. Paper (code completion): BM25, alpha = 0.5, top 10 retrieved."""

    scorer: Literal["bm25", "jaccard"] = "bm25"
    fragrel: bool = True
    alpha: float = 0.5
    top_m: int = 50  # candidates (best by s_ind) whose code-relation rows are computed and re-scored
    min_weight: float = 0.01  # path weights below this count as no relation (bounds Dijkstra)

    def __post_init__(self) -> None:
        if self.scorer not in CODE_SCORERS:
            raise ConfigError(f"unknown code scorer {self.scorer!r} (have: {', '.join(CODE_SCORERS)})")
        if self.alpha < 0:
            raise ConfigError(f"alpha must be >= 0 (got {self.alpha})")
        if self.top_m < 1:
            raise ConfigError(f"top_m must be at least 1 (got {self.top_m})")
        if not 0.0 <= self.min_weight < 1.0:
            raise ConfigError(f"min_weight must be in [0, 1) (got {self.min_weight})")


@dataclass(frozen=True, eq=False)
class CodeRanking:
    """One query's scores. ``order``: allowed fragments, best first (candidates by s_rel, then the rest by
    s_ind). Excluded fragments (the lines being completed) have s_ind = -inf and are not in ``order``."""

    order: np.ndarray
    s_ind: np.ndarray
    s_rel: np.ndarray | None
    candidates: np.ndarray
    excluded: int
    seconds: dict[str, float] = field(default_factory=dict)
    subgraph_nodes: int = 0

    @property
    def scores(self) -> np.ndarray:
        return self.s_ind if self.s_rel is None else np.where(np.isfinite(self.s_rel), self.s_rel, self.s_ind)


def relation_rows(repo: CodeRepository, rows, view: GraphView | None = None,
                  min_weight: float = 0.01) -> tuple[np.ndarray, int]:
    """Eq. 8 for fragments ``rows`` against every fragment on ``view`` (default: the full graph), with the
    view's excluded fragments as zero columns; and the size of the searched subgraph (module docstring)."""
    view = view or repo.view()
    rows = np.asarray(rows, dtype=np.int64)
    n = len(repo.fragments)
    out = np.zeros((len(rows), n))
    if len(rows) == 0:
        return out, 0
    if view.excluded[rows].any():
        raise ConfigError("an excluded fragment cannot be a relation row")
    _, dijkstra = _scipy()
    lo, hi = repo.span_ptr[rows], repo.span_ptr[rows + 1]
    sources = np.unique(np.concatenate([repo.span_node[a:b] for a, b in zip(lo, hi)]))
    limit = np.inf if min_weight <= 0 else -math.log(min_weight)
    reach = np.isfinite(dijkstra(view.cost, directed=False, indices=sources, limit=limit, min_only=True))
    k = int(reach.sum())
    sub_id = np.full(repo.n_nodes, k, dtype=np.int64)  # node k: the isolated stand-in for all others
    sub_id[reach] = np.arange(k)
    owner = np.repeat(np.arange(n), np.diff(repo.span_ptr))
    touches = np.zeros(n, dtype=bool)
    touches[owner[reach[repo.span_node]]] = True
    relevant = np.flatnonzero(touches & ~view.excluded)
    spans = [list(zip(sub_id[repo.span_node[repo.span_ptr[j]:repo.span_ptr[j + 1]]].tolist(),
                      repo.span_len[repo.span_ptr[j]:repo.span_ptr[j + 1]].tolist())) for j in relevant]
    inside = reach[view.u] & reach[view.v]
    sub = CodeGraph.from_arrays(k + 1, sub_id[view.u[inside]], sub_id[view.v[inside]], view.w[inside])
    position = {int(j): p for p, j in enumerate(relevant)}
    out[:, relevant] = code_relation_rows(sub, spans, rows=[position[int(r)] for r in rows], min_weight=min_weight)
    return out, k


def _scorer(repo: CodeRepository, scorer: str, allowed: np.ndarray):
    """A BM25 / Jaccard index over the allowed fragments (the full one is cached on the repository; fragment
    tokens are kept, so an index without some fragments costs only the indexing)."""
    full = bool(allowed.all())
    cache = repo.__dict__.setdefault("_scorers", {})
    if full and scorer in cache:
        return cache[scorer]
    base = words if scorer == "bm25" else code_tokens
    memo = repo.__dict__.setdefault(f"_tokens_{scorer}", {})

    def tokenize(text: str) -> list[str]:
        found = memo.get(text)
        return base(text) if found is None else found

    texts = [repo.fragments[i].text for i in np.flatnonzero(allowed)]
    for text in texts:
        if text not in memo:
            memo[text] = [sys.intern(t) for t in base(text)]  # one string per distinct token, not per occurrence
    index = BM25(texts, tokenize) if scorer == "bm25" else Jaccard(texts, tokenize)
    if full:
        cache[scorer] = index
    return index


def rank_code(repo: CodeRepository, query: str, settings: CodeSearchSettings | None = None,
              hole: tuple[str, int] | None = None) -> CodeRanking:
    """Score every fragment for ``query``; ``hole = (path, 0-based line)`` hides the lines being completed
    (:meth:`.code_repo.CodeRepository.view`): they are neither scored, nor candidates, nor counted in any
    environment score, and the scorer's statistics (BM25's idf) are computed without them."""
    settings = settings or CodeSearchSettings()
    t0 = time.perf_counter()
    view = repo.view(hole)
    tv = time.perf_counter()
    allowed = ~view.excluded
    s_ind = np.full(len(repo.fragments), -np.inf)
    if allowed.any():
        s_ind[allowed] = _scorer(repo, settings.scorer, allowed).scores(query)
    t1 = time.perf_counter()
    by_ind = np.array([i for i in np.argsort(-s_ind, kind="stable") if allowed[i]], dtype=np.int64)
    seconds = {"view": tv - t0, "score": t1 - tv}
    if not settings.fragrel or len(by_ind) == 0:
        return CodeRanking(by_ind, s_ind, None, np.zeros(0, dtype=np.int64), int(view.excluded.sum()), seconds)
    candidates = by_ind[: settings.top_m]
    W, k = relation_rows(repo, candidates, view, settings.min_weight)
    s = np.where(allowed, s_ind, 0.0)  # excluded columns of W are 0; no -inf in the product
    s_rel = fragrel_scores(s, MatrixRelation(W, name="code", row_ids=candidates.tolist()), settings.alpha,
                           candidates=candidates)
    t2 = time.perf_counter()
    seconds["relation"] = t2 - t1
    best = candidates[np.argsort(-s_rel[candidates], kind="stable")]
    order = np.concatenate([best, by_ind[settings.top_m:]])
    return CodeRanking(order, s_ind, s_rel, candidates, int(view.excluded.sum()), seconds, k)
