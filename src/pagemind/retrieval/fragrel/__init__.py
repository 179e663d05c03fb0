"""FragRel (Yue, Zhu & Yang 2024: "Exploiting Fragment-level Relations in the External Memory of LLMs").

One module per part of the paper:

* :mod:`.relations`: §3.2 fragment relations (semantic Eq. 6, context structure Eq. 7, any explicit matrix) and
  §3.3.1 the relation-aware score (Eq. 9-10).
* Repository-level code generation (§4.2, Appendix A and B.2), the code-structure relation (Eq. 8):
  :mod:`.code_files` (the repository's source files), :mod:`.code_parse` (tree-sitter syntax nodes, Appendix A
  step 1), :mod:`.code_graph` (edge weights, max-product paths, Eq. 8), :mod:`.code_repo` (the repository graph
  and its RepoCoder windows, Appendix A), :mod:`.code_rank` (BM25 / Jaccard then FragRel, §3.3 on code) and
  :mod:`.repocoder` (RepoCoder's prompt, the paper's Prompt 2, and reading a completion out of a reply).

The relations need only numpy and the code modules scipy and tree-sitter; every name exported here loads its
module when first used, so importing this package stays light (no numpy).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

RELATION_NAMES = {name: "relations" for name in ("ContextRelation", "MatrixRelation", "Relation",
                                                  "SemanticRelation", "dense_environment", "fragrel_scores")}
CODE_NAMES = {
    "SourceFile": "code_files", "SourceTree": "code_files", "walk_source_tree": "code_files",
    "CodeRepository": "code_repo", "CodeRanking": "code_rank", "CodeSearchSettings": "code_rank",
    "rank_code": "code_rank",
}


def __getattr__(name: str) -> Any:
    """The relations (numpy) and code-retrieval names, imported on first use."""
    if name in RELATION_NAMES:
        return getattr(import_module(f".{RELATION_NAMES[name]}", __name__), name)
    if name in CODE_NAMES:
        return getattr(import_module(f".{CODE_NAMES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ContextRelation", "MatrixRelation", "Relation", "SemanticRelation", "dense_environment",
           "fragrel_scores", *CODE_NAMES]
