"""Independent scores s_ind (FragRel Eq. 4): BM25, dense cosine, RepoCoder's Jaccard; normalisation and fusion.

Every scorer returns the score of *every* fragment (FragRel's environment score needs them all).
BM25 and cosine live on different scales: :func:`normalise` puts them on one per query before they are
mixed (:func:`mix`), and :func:`rrf` fuses by rank instead.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from typing import Literal, cast

import numpy as np

from ..errors import ConfigError

_WORD = re.compile(r"\w+")
_CODE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+|[^\sA-Za-z0-9_]")
Norm = Literal["minmax", "zscore", "none"]


_PERIOD = re.compile(r"^(fy|cy|q|h)?([a-z]*?)((?:19|20)\d\d|\d{1,2})$")  # FY2023, Q2, H1, FY23, 2023a


def words(text: str) -> list[str]:
    """Lowercased word tokens (letters, digits, underscore; one-character tokens kept), a plural's "s" off
    ("acquisitions" finds "acquisition"); a period written as one token also gives its year or number ("FY2023"
    is "fy2023" and "2023", as a filing prints "fiscal 2023"; "Q2" is "q2" and "2")."""
    out: list[str] = []
    for token in _WORD.findall(text.lower()):
        out.append(_singular(token))
        period = _PERIOD.match(token) if not token.isdigit() else None
        if period is not None and (period.group(1) or len(period.group(3)) == 4) and not period.group(2):
            out.append(period.group(3))
    return out


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 4 and word.endswith("s") and not word.endswith(("ss", "us", "is")) else word


def code_tokens(text: str) -> list[str]:
    """Identifiers, numbers and single punctuation characters (case kept), for code."""
    return _CODE.findall(text)


class BM25:
    """Okapi BM25 over fragment texts with bm25s (``method``: lucene, robertson, atire, bm25l, bm25+)."""

    def __init__(self, texts: Sequence[str], tokenize: Callable[[str], list[str]] = words,
                 k1: float = 1.5, b: float = 0.75, method: str = "lucene"):
        try:
            import bm25s
        except ImportError:
            raise ConfigError("BM25 needs bm25s: pip install bm25s") from None
        # bm25s sets its own logger to DEBUG: once anything configures logging (the evaluation's scorers do), every
        # index printed "DEBUG:bm25s:Building index from tokens"; its warnings still pass
        logging.getLogger("bm25s").setLevel(logging.WARNING)
        self.tokenize = tokenize
        self.n = len(texts)
        self.index = bm25s.BM25(k1=k1, b=b, method=method)
        tokens = [tokenize(t) or [""] for t in texts]
        if self.n:
            self.index.index(tokens, show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        if self.n == 0:
            return np.zeros(0)
        q = [t for t in self.tokenize(query) if t]
        if not q:
            return np.zeros(self.n)
        return np.asarray(self.index.get_scores(q), dtype=np.float64)


class Jaccard:
    """RepoCoder's sparse retriever: Jaccard index of the token *sets* of query and fragment.

    RepoCoder tokenises with tiktoken ``p50k_base`` (downloaded at run time, so unusable offline); any
    tokenizer can be passed, :func:`code_tokens` by default. Kept as the code baseline.
    """

    def __init__(self, texts: Sequence[str], tokenize: Callable[[str], list[str]] = code_tokens):
        self.tokenize = tokenize
        self.sets = [frozenset(tokenize(t)) for t in texts]

    def scores(self, query: str) -> np.ndarray:
        q = frozenset(self.tokenize(query))
        out = np.zeros(len(self.sets))
        for i, s in enumerate(self.sets):
            union = len(q | s)
            out[i] = len(q & s) / union if union else 0.0
        return out


def cosine_scores(query_chunks: np.ndarray, chunk_vectors: np.ndarray, owners: np.ndarray, n: int,
                  pool: Literal["max", "mean"] = "max") -> np.ndarray:
    """Cosine of the query with every fragment whose sub-chunks are ``chunk_vectors`` (row r belongs to
    fragment ``owners[r]``): the best sub-chunk (``max``) or the mean over sub-chunks (``mean``).
    Unit vectors in, so a dot product is the cosine; a multi-chunk query uses its mean vector."""
    q = query_chunks.mean(axis=0)
    q = q / (np.linalg.norm(q) or 1.0)
    sims = chunk_vectors.astype(np.float64) @ q.astype(np.float64)
    out = np.full(n, -np.inf if pool == "max" else 0.0)
    if pool == "max":
        np.maximum.at(out, owners, sims)
        out[np.isneginf(out)] = 0.0
    else:
        counts = np.bincount(owners, minlength=n)
        np.add.at(out, owners, sims)
        out = out / np.maximum(counts, 1)
    return out


def normalise(scores: np.ndarray, method: Norm = "minmax") -> np.ndarray:
    """Per-query normalisation: min-max to [0, 1] (all-equal -> zeros) or z-score (constant -> zeros)."""
    s = np.asarray(scores, dtype=np.float64)
    if method == "none" or s.size == 0:
        return s
    if method == "minmax":
        lo, hi = s.min(), s.max()
        return (s - lo) / (hi - lo) if hi > lo else np.zeros_like(s)
    if method == "zscore":
        sd = s.std()
        return (s - s.mean()) / sd if sd > 0 else np.zeros_like(s)
    raise ConfigError(f"unknown normalisation {method!r} (have: minmax, zscore, none)")


def mix(score_sets: Sequence[np.ndarray], weights: Sequence[float] | None = None,
        method: Norm = "minmax") -> np.ndarray:
    """Weighted sum of per-query normalised score vectors."""
    weights = weights or [1.0 / len(score_sets)] * len(score_sets)
    return cast(np.ndarray, sum(w * normalise(s, method) for w, s in zip(weights, score_sets)))  # 0 only for none


def ranks(scores: np.ndarray) -> np.ndarray:
    """1-based rank of every fragment (best = 1; ties broken by index, as a stable sort does)."""
    order = np.argsort(-np.asarray(scores), kind="stable")
    r = np.empty(len(order), dtype=np.int64)
    r[order] = np.arange(1, len(order) + 1)
    return r


def rrf(score_sets: Sequence[np.ndarray], k: int = 60) -> np.ndarray:
    """Reciprocal rank fusion (Cormack et al. 2009): sum over scorers of 1 / (k + rank)."""
    return cast(np.ndarray, sum(1.0 / (k + ranks(s)) for s in score_sets))  # 0 only for no score sets
