"""Adapters that let frameworks use pagemind (issue 25): each module imports its framework when it is imported, and
only calls pagemind's public Python API (:class:`pagemind.Pagemind`).

* :mod:`pagemind.integrations.llama_index` (``pip install 'pagemind[llama-index]'``): a retriever over any method,
  a query engine answering with a method, a memory block backed by a MemGPT agent;
* :mod:`pagemind.integrations.langchain` (``pip install 'pagemind[langchain]'``): a retriever over any method.

What a retriever returns: the passages a method's answer cites (:mod:`pagemind.citations`), each with where it is
(document, unit, offsets) and how the method came to it — the method reads as it does for ``pagemind ask`` (its
look-ups and its answer call), so ``rag`` is the cheap choice when only passages are wanted.
"""

from __future__ import annotations

from typing import Any


def cited_passages(pm: Any, source: Any, query: str, method: str, options: dict[str, Any]) -> tuple[Any, list[Any]]:
    """(the answer, its citations) of ``query`` over ``source`` (a path, a :class:`~pagemind.Document`, a
    :class:`~pagemind.library.Library` or a library's name) with ``method``."""
    answer = pm.ask(source, query, method=method, **options)
    return answer, list(answer.citations)


def metadata(citation: Any, answer: Any) -> dict[str, Any]:
    """A citation as a framework node's metadata: where it is and how it was found (JSON values only)."""
    return {"document_id": citation.document, "document_name": citation.document_name, "unit": citation.unit,
            "index": citation.index, "location": citation.location, "start": citation.start, "end": citation.end,
            "found_by": citation.found_by, "source_page": citation.source_page, "method": answer.method,
            "run_id": answer.run_id}


__all__ = ["cited_passages", "metadata"]
