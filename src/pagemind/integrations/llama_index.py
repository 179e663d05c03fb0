"""LlamaIndex adapters (``pip install 'pagemind[llama-index]'``): pagemind's methods as a retriever and a query
engine, and a MemGPT agent as a memory block of LlamaIndex's ``Memory``.

    from pagemind import Pagemind
    from pagemind.integrations.llama_index import PagemindQueryEngine, PagemindRetriever, AgentMemoryBlock

    pm = Pagemind()
    nodes = PagemindRetriever(pm=pm, source="book.txt", similarity_top_k=2).retrieve("Who finds the map?")  # no LLM
    response = PagemindQueryEngine(pm=pm, source="reports", method="readagent-p").query("Which quarter…?")
    memory = Memory.from_defaults(memory_blocks=[AgentMemoryBlock(name="agent", pm=pm, agent="sam")])
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.response.schema import Response
from llama_index.core.bridge.pydantic import ConfigDict, Field
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import BaseMemoryBlock
from llama_index.core.query_engine import CustomQueryEngine
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from ..citations import Citation
from . import DEFAULT_K, cited_passages, metadata


def _nodes(citations: list[Citation], method: str, run_id: str | None = None) -> list[NodeWithScore]:
    return [NodeWithScore(node=TextNode(text=c.quote, id_=f"{c.document}:{c.start}-{c.end}",
                                        metadata=metadata(c, method, run_id)), score=c.score) for c in citations]


class PagemindRetriever(BaseRetriever):
    """The ``similarity_top_k`` passages of ``source`` that best match the query in ``method``'s memory, as nodes
    with their places and scores (metadata: ``document_name``, ``unit``, ``index``, ``location``, ``start``/``end``
    offsets, ``found_by``), found with no LLM call (:meth:`pagemind.Pagemind.retrieve`). ``top_k`` is taken too."""

    def __init__(self, pm: Any, source: Any, method: str = "rag", similarity_top_k: int | None = None,
                 top_k: int | None = None, **options: Any) -> None:
        super().__init__()
        self.pm, self.source, self.method, self.options = pm, source, method, options
        self.similarity_top_k = similarity_top_k or top_k or DEFAULT_K

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        found = self.pm.retrieve(self.source, query_bundle.query_str, self.similarity_top_k, self.method,
                                 **self.options)
        return _nodes(found, self.method)


class PagemindQueryEngine(CustomQueryEngine):
    """Answers with a pagemind method (any: ReadAgent, MemWalker, RAG, full text, auto); the response's source nodes
    are the passages the answer cites."""

    pm: Any
    source: Any
    method: str = "auto"
    options: dict[str, Any] = Field(default_factory=dict)

    def custom_query(self, query_str: str) -> Response:
        answer, citations = cited_passages(self.pm, self.source, query_str, self.method, self.options)
        return Response(response=answer.text, source_nodes=_nodes(citations, answer.method, answer.run_id),
                        metadata={"method": answer.method, "run_id": answer.run_id,
                                  "usage": answer.usage.as_dict()})


class AgentMemoryBlock(BaseMemoryBlock[str]):
    """A MemGPT agent as long-term memory of LlamaIndex's ``Memory``: messages put into it are kept in the agent's
    archival storage (no LLM call); getting it gives the agent's core memory and the archival passages that match
    the latest message (the agent's own search)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    pm: Any
    agent: str = Field(description="the agent's name (pagemind agent create NAME)")
    passages: int = Field(default=3, description="archival passages given back for the latest message")

    def _agent(self) -> Any:
        return self.pm.agent(self.agent, llm=False)

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        agent = self._agent()
        lines = [f"<{b.label}>\n{b.value}\n</{b.label}>" for b in agent.blocks() if b.value]
        query = next((str(m.content) for m in reversed(messages or []) if m.content), "")
        if query:
            _, found = agent.archive.search_passages(query, 0)
            lines += [f"[archival {p.id}] {p.text}" for p in found[: self.passages]]
        return "\n".join(lines)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        texts = [f"{m.role.value}: {m.content}" for m in messages if m.content]
        if texts:
            agent = self._agent()
            agent.archive.insert(texts, agent.now(), source="llama-index")


__all__ = ["AgentMemoryBlock", "PagemindQueryEngine", "PagemindRetriever"]
