"""Retrieval: fragments, independent scores (BM25, dense, Jaccard, fusion), selection, and FragRel on top.

FragRel (relations, and the code-repository retrieval with its RepoCoder prompt) is the :mod:`.fragrel`
package. numpy and bm25s are enough for BM25 + the context relation; dense embeddings need the ``retrieval``
extra (onnxruntime + the MiniLM weights package), the code-structure relation scipy and code parsing
tree-sitter. Importing this package loads none of them: they are imported when used, and the code names
re-exported here (``rank_code``, ``CodeRepository``...) load their modules on first access.
"""

from __future__ import annotations

from typing import Any

from . import fragrel
from .embed import CachedEmbedder, Embedder, HashingEmbedder, MiniLM, load_embedder
from .fragments import Fragment, split_lines, split_pages, split_repository, split_turns, split_words
from .fragrel import (ContextRelation, MatrixRelation, Relation, SemanticRelation, dense_environment,
                      fragrel_scores)
from .index import FragmentIndex, Ranking, RetrievalSettings
from .scorers import BM25, Jaccard, mix, normalise, rrf
from .select import Selection, fit


def __getattr__(name: str) -> Any:
    """The code-retrieval names of :mod:`.fragrel`, imported on first use."""
    if name in fragrel.CODE_NAMES:
        return getattr(fragrel, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BM25", "CachedEmbedder", "ContextRelation", "Embedder", "Fragment", "FragmentIndex", "HashingEmbedder",
    "Jaccard", "MatrixRelation", "MiniLM", "Ranking", "Relation", "RetrievalSettings", "Selection",
    "SemanticRelation", "dense_environment", "fit", "fragrel_scores", "load_embedder", "mix", "normalise", "rrf",
    "split_lines", "split_pages", "split_repository", "split_turns", "split_words", *fragrel.CODE_NAMES,
]
