"""A searchable set of fragments: independent scores (BM25 / dense / hybrid / Jaccard) and FragRel on top."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ..errors import ConfigError
from .embed import Embedder, fragment_vectors
from .fragments import Fragment
from .fragrel.relations import SEMANTIC_K, ContextRelation, Relation, SemanticRelation, fragrel_scores
from .scorers import BM25, Jaccard, Norm, cosine_scores, mix, rrf

Scorer = Literal["bm25", "dense", "hybrid", "jaccard"]
SCORERS = ("bm25", "dense", "hybrid", "jaccard")
RELATIONS = ("context", "semantic", "semantic-distance")


@dataclass(frozen=True)
class RetrievalSettings:
    """How fragments are scored. FragRel defaults are the paper's: alpha 0.5, w_rel 0.3 (chat: 0.8)."""

    scorer: Scorer = "bm25"
    fusion: Literal["rrf", "mix"] = "rrf"  # hybrid: reciprocal rank fusion, or a sum of normalised scores
    normalise: Norm = "minmax"  # per-query normalisation before a ``mix``
    pool: Literal["max", "mean"] = "max"  # dense: a fragment's score from its sub-chunks
    fragrel: bool = False
    relation: Literal["context", "semantic", "semantic-distance"] = "context"
    alpha: float = 0.5
    w_rel: float = 0.3
    context_within: Literal["source", "section"] = "source"  # context relation: only within one source / section
    semantic_k: int = SEMANTIC_K  # semantic relation: nearest neighbours per fragment (0: every pair, as the paper)

    def __post_init__(self) -> None:
        if self.scorer not in SCORERS:
            raise ConfigError(f"unknown scorer {self.scorer!r} (have: {', '.join(SCORERS)})")
        if self.relation not in RELATIONS:
            raise ConfigError(f"unknown relation {self.relation!r} (have: {', '.join(RELATIONS)})")
        if not 0.0 <= self.w_rel <= 1.0:
            raise ConfigError(f"w_rel must be in [0, 1] (got {self.w_rel})")
        if self.alpha < 0:
            raise ConfigError(f"alpha must be >= 0 (got {self.alpha})")
        if self.semantic_k < 0:
            raise ConfigError(f"semantic_k must be >= 0 (got {self.semantic_k})")

    @property
    def needs_embedder(self) -> bool:
        return self.scorer in ("dense", "hybrid") or (self.fragrel and self.relation != "context")


@dataclass
class Ranking:
    """Scores of every fragment for one query, and the order they rank in (best first)."""

    s_ind: np.ndarray
    s_rel: np.ndarray | None = None
    order: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def scores(self) -> np.ndarray:
        return self.s_ind if self.s_rel is None else self.s_rel


class FragmentIndex:
    """Fragments plus lazily built scorers; ``rank(query)`` scores them all."""

    def __init__(self, fragments: Sequence[Fragment], settings: RetrievalSettings | None = None,
                 embedder: Embedder | None = None, relation: Relation | None = None):
        self.fragments = list(fragments)
        self.settings = settings or RetrievalSettings()
        self.embedder = embedder
        self._relation = relation
        self._bm25: BM25 | None = None
        self._jaccard: Jaccard | None = None
        self._chunks: tuple[np.ndarray, np.ndarray] | None = None
        self._vectors: np.ndarray | None = None
        if self.settings.needs_embedder and embedder is None:
            raise ConfigError(f"scorer {self.settings.scorer!r} / relation {self.settings.relation!r} "
                              "needs an embedder")

    def __len__(self) -> int:
        return len(self.fragments)

    # --- building blocks, built on first use ----------------------------------------------------------
    def chunk_vectors(self) -> tuple[np.ndarray, np.ndarray]:
        """All fragments' sub-chunk vectors and the fragment each row belongs to."""
        if self._chunks is None:
            assert self.embedder is not None
            mats = self.embedder.embed([f.text for f in self.fragments]) if self.fragments else []
            owners = np.concatenate([np.full(len(m), i) for i, m in enumerate(mats)]) if mats else np.zeros(0, int)
            vectors = np.concatenate(mats) if mats else np.zeros((0, self.embedder.dim), np.float32)
            self._chunks = (vectors, owners.astype(np.int64))
            self._vectors = fragment_vectors(mats) if mats else vectors
        return self._chunks

    def vectors(self) -> np.ndarray:
        """One unit vector per fragment (the mean of its sub-chunks)."""
        self.chunk_vectors()
        assert self._vectors is not None
        return self._vectors

    def relation(self) -> Relation:
        if self._relation is None:
            s = self.settings
            if s.relation == "context":
                within = [f.source + ("\x00" + f.section if s.context_within == "section" else "")
                          for f in self.fragments]  # a section's neighbours across its heading are not its context
                self._relation = ContextRelation([f.position for f in self.fragments], within, s.w_rel)
            else:
                form: Literal["similarity", "distance"] = ("distance" if s.relation == "semantic-distance"
                                                          else "similarity")
                self._relation = SemanticRelation(self.vectors(), form=form, k=s.semantic_k)
        return self._relation

    # --- scoring ----------------------------------------------------------------------------------------
    def bm25(self, query: str) -> np.ndarray:
        if self._bm25 is None:
            self._bm25 = BM25([f.text for f in self.fragments])
        return self._bm25.scores(query)

    def jaccard(self, query: str) -> np.ndarray:
        if self._jaccard is None:
            self._jaccard = Jaccard([f.text for f in self.fragments])
        return self._jaccard.scores(query)

    def dense(self, query: str) -> np.ndarray:
        vectors, owners = self.chunk_vectors()
        assert self.embedder is not None
        # a query is embedded once and thrown away: not through a persistent cache (fragments are)
        q = getattr(self.embedder, "inner", self.embedder).embed([query])[0]
        return cosine_scores(q, vectors, owners, len(self.fragments), self.settings.pool)

    def independent(self, query: str) -> np.ndarray:
        """s_ind for every fragment (Eq. 4)."""
        s = self.settings
        if not self.fragments:
            return np.zeros(0)
        if s.scorer == "bm25":
            return self.bm25(query)
        if s.scorer == "jaccard":
            return self.jaccard(query)
        if s.scorer == "dense":
            return self.dense(query)
        sets = [self.bm25(query), self.dense(query)]
        return rrf(sets) if s.fusion == "rrf" else mix(sets, method=s.normalise)

    def rank(self, query: str, candidates: np.ndarray | None = None) -> Ranking:
        """Independent scores, FragRel scores when enabled, and the order (ties keep document order)."""
        s_ind = self.independent(query)
        s_rel = None
        if self.settings.fragrel and len(s_ind):
            s_rel = fragrel_scores(s_ind, self.relation(), self.settings.alpha, candidates)
        scores = s_ind if s_rel is None else s_rel
        return Ranking(s_ind, s_rel, np.argsort(-scores, kind="stable"))
