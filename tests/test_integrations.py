"""The LlamaIndex and LangChain adapters (issues 25, 36) against the real packages, on the scripted fake: a retriever
returns k passages of a method's memory with their places and no LLM call (as LlamaIndex's RetrieverQueryEngine and
LangChain's retriever API call it), a query engine / runnable answers with a method and its citations, and a MemGPT
agent serves as a memory block of LlamaIndex's Memory."""

from __future__ import annotations

import asyncio

import pytest

from helpers import make_text
from pagemind import Document, Pagemind, ScriptedLLM

FACT = "Wren found the map under the third stair."
STORY = make_text(8, 40).replace("p3w0 ", FACT + " ", 1)


@pytest.fixture
def fake():
    return ScriptedLLM(by_role={"answer": "Wren found the map under the stair.", "gist": "a gist",
                                "paginate": "Break point: <5>"})


@pytest.fixture
def pm(tmp_path, fake):
    with Pagemind(fake, store=tmp_path / "s.db") as session:
        yield session


def test_llama_index_retriever_returns_top_k_without_an_llm_call_and_the_query_engine_answers(pm, fake, tmp_path):
    pytest.importorskip("llama_index.core")
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine

    from pagemind.integrations.llama_index import PagemindQueryEngine, PagemindRetriever

    book = tmp_path / "cape.txt"
    book.write_text(STORY)
    retriever = PagemindRetriever(pm, str(book), method="rag", fragment_words=60, similarity_top_k=2)
    nodes = retriever.retrieve("Who found the map?")
    assert len(nodes) == 2 and FACT in nodes[0].node.text and nodes[0].score > nodes[1].score >= 0
    meta = nodes[0].node.metadata
    assert (meta["document_name"], meta["unit"], meta["found_by"]) == ("cape.txt", "fragment", "fragment")
    assert STORY[meta["start"]:meta["end"]] == nodes[0].node.text and len(nodes[0].node.text.split()) == 60
    # LlamaIndex's own query engine over the retriever: its LLM (here its MockLLM) answers; pagemind's is not called
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM(max_tokens=8))
    response = engine.query("Who found the map?")
    assert len(response.source_nodes) == 2 and FACT in response.source_nodes[0].node.text
    assert fake.history == [] and pm.runs.list() == []  # a retriever is no run and makes no LLM call
    assert len(PagemindRetriever(pm, str(book), method="rag", fragment_words=60, top_k=3).retrieve("map")) == 3

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


def test_langchain_retriever_takes_k_as_search_kwargs_and_calls_no_llm(pm, fake, tmp_path):
    pytest.importorskip("langchain_core")
    from pagemind.integrations.langchain import PagemindRetriever, answering

    book = tmp_path / "cape.txt"
    book.write_text(STORY)
    retriever = PagemindRetriever(pm=pm, source=str(book), method="rag", options={"fragment_words": 60},
                                  search_kwargs={"k": 2})
    docs = retriever.invoke("Who found the map?")
    assert len(docs) == 2 and FACT in docs[0].page_content
    assert docs[0].metadata["document_name"] == "cape.txt" and docs[0].metadata["unit"] == "fragment"
    assert STORY[docs[0].metadata["start"]:docs[0].metadata["end"]] == docs[0].page_content
    assert docs[0].metadata["score"] >= docs[1].metadata["score"]
    both = retriever.batch(["Who found the map?", "Where was the map?"])  # LangChain's batch: two retrievals
    assert [len(d) for d in both] == [2, 2] and fake.history == []
    assert len(PagemindRetriever(pm=pm, source=str(book), k=3, options={"fragment_words": 60}).invoke("map")) == 3
    # answering is a runnable of its own: the method's answer call, and the passages it cites
    answered = answering(pm, str(book), method="full").invoke("Who found the map?")
    assert answered["answer"] == "Wren found the map under the stair." and answered["method"] == "full"
    assert FACT in answered["citations"][0].page_content and fake.roles() == ["answer"]


def test_retrieve_ranks_every_kind_of_passage_and_never_builds_with_the_llm(pm, fake, tmp_path):
    """ReadAgent's pages and a library's fragments are retrievable too; a memory that needs the LLM to be built is
    refused until it is indexed, and the full text (no passages) is refused by name."""
    from pagemind.errors import InputError

    book = tmp_path / "cape.txt"
    book.write_text(STORY)
    with pytest.raises(InputError, match="index it first"):
        pm.retrieve(str(book), "Who found the map?", 2, "readagent-p")
    assert fake.history == []
    pm.index(str(book), "readagent-p")
    calls = len(fake.history)
    pages = pm.retrieve(str(book), "Who found the map?", 2, "readagent-p")
    assert len(fake.history) == calls and pages[0].unit == "page" and FACT in pages[0].quote
    assert STORY[pages[0].start:pages[0].end] == pages[0].quote
    with pytest.raises(InputError, match="no passages"):
        pm.retrieve(str(book), "map", 2, "full")
    for k in (0, 1001, True):
        with pytest.raises(InputError, match="k: the passages"):
            pm.retrieve(str(book), "map", k)
    pm.add("shelf", [Document(make_text(5, 40), "other.txt"), Document(STORY, "cape.txt")])
    found = pm.retrieve("shelf", "Who found the map?", 3, fragment_words=60)
    assert found[0].document_name == "cape.txt" and FACT in found[0].quote and len(fake.history) == calls
    member = pm.library("shelf").member(found[0].document)
    assert member is not None and all(
        pm.library("shelf").member(c.document).text[c.start:c.end] == c.quote for c in found)
