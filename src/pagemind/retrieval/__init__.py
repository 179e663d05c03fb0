"""Retrieval: fragments, independent scores (BM25, dense, Jaccard, fusion), FragRel relations, chat retrieval.

numpy and bm25s are enough for BM25 + the context relation; dense embeddings need the ``retrieval`` extra
(onnxruntime + the MiniLM weights package), the code-structure relation needs scipy and code parsing
tree-sitter (both imported only when used).
"""

from .chat import CHAT_SETTINGS, ChatContext, ChatRetriever, Turn
from .fragrel.code_files import SourceFile, SourceTree, walk_source_tree
from .fragrel.code_rank import CodeRanking, CodeSearchSettings, rank_code
from .fragrel.code_repo import CodeRepository
from .embed import CachedEmbedder, Embedder, HashingEmbedder, MiniLM, load_embedder
from .fragments import Fragment, split_lines, split_pages, split_repository, split_turns, split_words
from .fragrel.relations import (ContextRelation, MatrixRelation, Relation, SemanticRelation,
                                dense_environment, fragrel_scores)
from .index import FragmentIndex, Ranking, RetrievalSettings
from .scorers import BM25, Jaccard, mix, normalise, rrf
from .select import Selection, fit

__all__ = [
    "BM25", "CHAT_SETTINGS", "CachedEmbedder", "ChatContext", "ChatRetriever", "CodeRanking", "CodeRepository",
    "CodeSearchSettings", "ContextRelation", "Embedder",
    "Fragment", "FragmentIndex", "HashingEmbedder", "Jaccard", "MatrixRelation", "MiniLM",
    "Ranking", "Relation", "RetrievalSettings", "Selection", "SemanticRelation", "Turn", "dense_environment",
    "fit", "fragrel_scores", "load_embedder", "mix", "normalise", "rrf", "split_lines", "split_pages",
    "rank_code", "SourceFile", "SourceTree", "split_repository", "split_turns", "split_words", "walk_source_tree",
]
