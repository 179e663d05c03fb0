"""A LangChain retriever over any pagemind method (``pip install 'pagemind[langchain]'``):

    from pagemind import Pagemind
    from pagemind.integrations.langchain import PagemindRetriever

    retriever = PagemindRetriever(pm=Pagemind(), source="reports", method="rag")
    docs = retriever.invoke("Which quarter had the highest churn?")   # Documents with their places as metadata
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from . import cited_passages, metadata


class PagemindRetriever(BaseRetriever):
    """The passages a pagemind method's answer to the query cites, as Documents (``page_content``: the quote;
    ``metadata``: ``document_name``, ``unit``, ``index``, ``location``, ``start``/``end``, ``found_by``,
    ``run_id``, ``score``)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    pm: Any
    source: Any
    method: str = "rag"
    options: dict[str, Any] = Field(default_factory=dict)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        answer, citations = cited_passages(self.pm, self.source, query, self.method, self.options)
        return [Document(page_content=c.quote, metadata={**metadata(c, answer), "score": c.score})
                for c in citations]


__all__ = ["PagemindRetriever"]
