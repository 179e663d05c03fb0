"""LangChain adapters over pagemind (``pip install 'pagemind[langchain]'``):

    from pagemind import Pagemind
    from pagemind.integrations.langchain import PagemindRetriever, answering

    pm = Pagemind()
    retriever = PagemindRetriever(pm=pm, source="reports", method="rag", search_kwargs={"k": 2})
    docs = retriever.invoke("Which quarter had the highest churn?")   # 2 passages, no LLM call
    answer = answering(pm, "reports", method="readagent-p").invoke("Which quarter had the highest churn?")
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from pydantic import ConfigDict, Field

from . import DEFAULT_K, cited_passages, metadata


class PagemindRetriever(BaseRetriever):
    """The ``k`` passages of ``source`` that best match the query in ``method``'s memory, as Documents
    (``page_content``: the passage; ``metadata``: ``document_name``, ``unit``, ``index``, ``location``,
    ``start``/``end``, ``found_by``, ``score``), found with no LLM call. ``k`` as LangChain's retrievers take it:
    ``k=`` or ``search_kwargs={"k": ...}`` (the latter wins, as in ``as_retriever``)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    pm: Any
    source: Any
    method: str = "rag"
    k: int = DEFAULT_K
    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    options: dict[str, Any] = Field(default_factory=dict)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        k = int(self.search_kwargs.get("k", self.k))
        return [Document(page_content=c.quote, metadata=metadata(c, self.method))
                for c in self.pm.retrieve(self.source, query, k, self.method, **self.options)]


def answering(pm: Any, source: Any, method: str = "auto", **options: Any) -> RunnableLambda[str, dict[str, Any]]:
    """A runnable that answers a question with ``method`` (its look-ups and answer call): ``{"answer", "method",
    "run_id", "citations": [Document...]}``, the citations being the passages the answer rests on."""

    def answer(question: str) -> dict[str, Any]:
        result, citations = cited_passages(pm, source, question, method, options)
        return {"answer": result.text, "method": result.method, "run_id": result.run_id,
                "citations": [Document(page_content=c.quote, metadata=metadata(c, result.method, result.run_id))
                              for c in citations]}

    return RunnableLambda(answer, name="pagemind")


__all__ = ["PagemindRetriever", "answering"]
