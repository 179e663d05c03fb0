"""Retrieval: fragments, independent scores (BM25, dense, Jaccard, fusion), selection, and FragRel on top.

FragRel (relations, and the code-repository retrieval with its RepoCoder prompt) is the :mod:`.fragrel`
package. numpy and bm25s are enough for BM25 + the context relation; dense embeddings need the ``retrieval``
extra (onnxruntime + the MiniLM weights package), the code-structure relation scipy and code parsing
tree-sitter. Importing this package loads none of them, nor numpy: every name re-exported here loads its
module on first access.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from . import fragrel

# Every public name, by the module that defines it: loaded on first access (``from pagemind.retrieval import
# Fragment`` loads only the fragments module), so importing this package imports no numpy.
_NAMES = {
    "CachedEmbedder": "embed", "Embedder": "embed", "HashingEmbedder": "embed", "MiniLM": "embed",
    "load_embedder": "embed",
    "Fragment": "fragments", "split_lines": "fragments", "split_pages": "fragments",
    "split_repository": "fragments", "split_turns": "fragments", "split_words": "fragments",
    "FragmentIndex": "index", "Ranking": "index", "RetrievalSettings": "index",
    "BM25": "scorers", "Jaccard": "scorers", "mix": "scorers", "normalise": "scorers", "rrf": "scorers",
    "Selection": "select", "fit": "select",
}


def __getattr__(name: str) -> Any:
    """A public name, its module imported on first use (FragRel's names come from :mod:`.fragrel`)."""
    if name in _NAMES:
        return getattr(import_module(f".{_NAMES[name]}", __name__), name)
    if name in fragrel.__all__:
        return getattr(fragrel, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BM25", "CachedEmbedder", "ContextRelation", "Embedder", "Fragment", "FragmentIndex", "HashingEmbedder",
    "Jaccard", "MatrixRelation", "MiniLM", "Ranking", "Relation", "RetrievalSettings", "Selection",
    "SemanticRelation", "dense_environment", "fit", "fragrel_scores", "load_embedder", "mix", "normalise", "rrf",
    "split_lines", "split_pages", "split_repository", "split_turns", "split_words", *fragrel.CODE_NAMES,
]
