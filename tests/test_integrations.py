"""The LlamaIndex and LangChain adapters (issue 25) against the real packages, on the scripted fake: a retriever
over a method returns the cited passages with their places, a query engine answers with a method, and a MemGPT
agent serves as a memory block of LlamaIndex's Memory."""

from __future__ import annotations

import asyncio

import pytest

from helpers import make_text
from pagemind import Document, Pagemind, ScriptedLLM

FACT = "Wren found the map under the third stair."
STORY = make_text(8, 40).replace("p3w0 ", FACT + " ", 1)


@pytest.fixture
def pm(tmp_path):
    with Pagemind(ScriptedLLM(by_role={"answer": "Wren found the map under the stair."}),
                  store=tmp_path / "s.db") as session:
        yield session


def test_llama_index_retriever_and_query_engine_cite_their_places(pm, tmp_path):
    pytest.importorskip("llama_index.core")
    from pagemind.integrations.llama_index import PagemindQueryEngine, PagemindRetriever

    book = tmp_path / "cape.txt"
    book.write_text(STORY)
    nodes = PagemindRetriever(pm, str(book), method="rag", fragment_words=60).retrieve("Who found the map?")
    assert nodes and nodes[0].node.text == FACT and nodes[0].score > 0
    meta = nodes[0].node.metadata
    assert (meta["document_name"], meta["unit"], meta["found_by"]) == ("cape.txt", "fragment", "fragment")
    assert STORY[meta["start"]:meta["end"]] == FACT and pm.runs.get(meta["run_id"], None) is not None

    pm.add("shelf", [Document(make_text(5, 40), "other.txt"), Document(STORY, "cape.txt")])
    engine = PagemindQueryEngine(pm=pm, source="shelf", method="full")
    response = engine.query("Who found the map?")
    assert str(response) == "Wren found the map under the stair."
    assert response.source_nodes[0].node.metadata["document_name"] == "cape.txt"
    assert response.metadata["method"] == "full" and response.metadata["usage"]["calls"] == 1


def test_a_memgpt_agent_is_a_llama_index_memory_block(pm):
    pytest.importorskip("llama_index.core")
    from llama_index.core.llms import ChatMessage
    from llama_index.core.memory import Memory

    from pagemind.integrations.llama_index import AgentMemoryBlock

    pm.create_agent("sam", human="Name: Ann", options={"embedder": "none"})
    block = AgentMemoryBlock(name="sam's memory", pm=pm, agent="sam")
    memory = Memory.from_defaults(session_id="s1", token_limit=40, chat_history_token_ratio=0.5,
                                  token_flush_size=20, memory_blocks=[block])
    for n in range(6):  # enough to flush the oldest messages out of short-term memory into the block
        memory.put(ChatMessage(role="user", content=f"Message {n}: my sister Ada flies planes over the fjord."))
        memory.put(ChatMessage(role="assistant", content=f"Noted {n}."))
    agent = pm.agent("sam", llm=False)
    assert agent.counts()["archival"] > 0  # the flushed messages are the agent's archival passages
    got = asyncio.run(block.aget([ChatMessage(role="user", content="Who flies planes?")]))
    assert "<human>\nName: Ann\n</human>" in got and "my sister Ada flies planes" in got
    assert "sam's memory" in str(memory.get())


def test_langchain_retriever_returns_documents_with_their_places(pm, tmp_path):
    pytest.importorskip("langchain_core")
    from pagemind.integrations.langchain import PagemindRetriever

    book = tmp_path / "cape.txt"
    book.write_text(STORY)
    docs = PagemindRetriever(pm=pm, source=str(book), method="rag", options={"fragment_words": 60}).invoke(
        "Who found the map?")
    assert docs[0].page_content == FACT
    assert docs[0].metadata["document_name"] == "cape.txt" and docs[0].metadata["unit"] == "fragment"
    assert STORY[docs[0].metadata["start"]:docs[0].metadata["end"]] == FACT
