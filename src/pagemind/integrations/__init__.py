"""Adapters that let frameworks use pagemind (issue 25): each module imports its framework when it is imported, and
only calls pagemind's public Python API (:class:`pagemind.Pagemind`).

* :mod:`pagemind.integrations.llama_index` (``pip install 'pagemind[llama-index]'``): a retriever over any method's
  memory, a query engine answering with a method, a memory block backed by a MemGPT agent;
* :mod:`pagemind.integrations.langchain` (``pip install 'pagemind[langchain]'``): a retriever, and a runnable that
  answers with citations.

A retriever retrieves: :meth:`pagemind.Pagemind.retrieve` ranks a method's memory for the query with no LLM call
(RAG's and OP-RAG's fragments as they rank them, FragRel included; ReadAgent's pages, MemWalker's leaves) and
returns ``k`` passages, each with where it is (document, unit, offsets) and its score. Answering — the method's
look-ups and its answer call, with the passages the answer cites — is the query engine's (LlamaIndex) or the
answering runnable's (LangChain).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..api import Pagemind
    from ..citations import Citation

DEFAULT_K = 4  # passages a retriever returns when not told (LlamaIndex's similarity_top_k default is 2; LangChain's 4)


def cited_passages(pm: Pagemind, source: Any, query: str, method: str,
                   options: dict[str, Any]) -> tuple[Any, list[Citation]]:
    """(the answer, its citations) of ``query`` over ``source`` (a path, a :class:`~pagemind.Document`, a
    :class:`~pagemind.library.Library` or a library's name) with ``method``."""
    answer = pm.ask(source, query, method=method, **options)
    return answer, list(answer.citations)


def metadata(citation: Citation, method: str, run_id: str | None = None) -> dict[str, Any]:
    """A passage as a framework node's metadata: where it is and how it was found (JSON values only)."""
    return {"document_id": citation.document, "document_name": citation.document_name, "unit": citation.unit,
            "index": citation.index, "location": citation.location, "start": citation.start, "end": citation.end,
            "found_by": citation.found_by, "source_page": citation.source_page,
            "section": citation.section, "method": method,
            "run_id": run_id, "score": citation.score}


__all__ = ["DEFAULT_K", "cited_passages", "metadata"]
