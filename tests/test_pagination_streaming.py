"""Streaming pagination (pagemind's option): one pagination conversation whose turns show only text not yet shown,
so a prefix cache serves what the model has read; the same pages as the paper's pagination for the same choices."""

from __future__ import annotations

import re

import pytest

from helpers import make_text
from pagemind import LLM, Document, ScriptedLLM, Store
from pagemind.methods import registry
from pagemind.store import SQLiteResponseCache
from pagemind.text import split_paragraphs

TEXT = make_text(60, 60)  # 3,600 words, about 9 pages


def offered(request) -> list[int]:
    """The labels a pagination request offers: listed in a streaming turn, else the labels on their own lines."""
    listed = re.findall(r"one of ((?:<\d+>(?:, )?)+)\.", request.messages[-1].content)
    if listed:
        return [int(n) for n in re.findall(r"<(\d+)>", listed[-1])]
    return [int(n) for n in re.findall(r"^<(\d+)>$", request.messages[-1].content, flags=re.MULTILINE)]


def middle(request) -> str:
    labels = offered(request)
    return f"Break point: <{labels[len(labels) // 2]}>\nBecause it pauses there."


def gist(request) -> str:
    return "A gist: " + " ".join(request.messages[-1].content.split()[:6])


def reader(fake, store=None, window=32768, **opts):
    store = store or Store(":memory:")
    llm = LLM(fake, cache=SQLiteResponseCache(store), concurrency=1)
    return registry.get("readagent-p")(llm, store, preset="quality", **opts)


def scripted(window=32768, **roles):
    return ScriptedLLM(by_role={"paginate": middle, "gist": gist, **roles}, context_window=window)


@pytest.mark.parametrize("gist_mode", ["separate", "continue"])
def test_the_same_pages_as_the_papers_pagination_for_the_same_choices(gist_mode):
    paper = reader(scripted(), gist_mode=gist_mode).build(Document.from_text(TEXT))
    streamed_fake = scripted()
    streamed = reader(streamed_fake, gist_mode=gist_mode, pagination="streaming").build(Document.from_text(TEXT))
    assert [(p.start, p.end) for p in streamed.pages] == [(p.start, p.end) for p in paper.pages]
    assert len(streamed.pages) >= 6 and len(streamed.gists) == len(streamed.pages)


def test_each_turn_extends_the_conversation_and_shows_only_new_text():
    fake = scripted()
    reader(fake, gist_mode="continue", pagination="streaming").build(Document.from_text(TEXT))
    # (the tail page, taken without a pagination call, is gisted on its own)
    requests = [r for r in fake.history if r.role == "paginate" or len(r.messages) > 1]
    for before, after in zip(requests, requests[1:]):  # a prefix cache serves every earlier turn
        assert after.messages[:len(before.messages)] == before.messages
        assert after.messages[len(before.messages)].role == "assistant"
    # every paragraph's text is shown in full once (the look-ahead shows the next one's beginning with "...")
    paragraphs = split_paragraphs(TEXT, max_words=300)
    turns = [r.messages[-1].content for r in requests if r.role == "paginate"]
    for paragraph in paragraphs[:-1]:
        full_lines = sum(1 for t in turns for line in t.splitlines() if line == paragraph)
        assert full_lines <= 2  # once in its turn, and at most once more as the look-ahead line
    new_words = sum(len(t.split()) for t in turns)
    paper_fake = scripted()
    reader(paper_fake, gist_mode="continue").build(Document.from_text(TEXT))
    paper_words = sum(len(r.messages[0].content.split()) for r in paper_fake.history if r.role == "paginate")
    assert new_words < 0.75 * paper_words  # the re-read part of each window is not sent again


def test_the_gist_turn_names_the_page_by_its_labels():
    fake = scripted()
    memory = reader(fake, gist_mode="continue", pagination="streaming").build(Document.from_text(TEXT))
    asks = [r.messages[-1].content for r in fake.history if r.role == "gist"]
    assert "before label" in asks[0]  # the first page: the conversation holds only its window
    second = memory.pages[1]
    assert f"from label <{second.start}> to label <{second.end}>" in asks[1]


def test_a_conversation_that_outgrows_its_share_of_the_window_starts_over():
    fake = scripted(window=6000)
    memory = reader(fake, pagination="streaming", stream_share=0.5).build(Document.from_text(TEXT))
    lengths = [len(r.messages) for r in fake.history if r.role == "paginate"]
    assert lengths[0] == 1 and 1 in lengths[1:] and max(lengths) > 1
    sizes = [sum(len(m.content.split()) for m in r.messages) for r in fake.history if r.role == "paginate"]
    assert max(sizes) <= 3000
    pages = memory.pages
    assert pages[0].start == 0 and all(a.end == b.start for a, b in zip(pages, pages[1:]))


def test_a_killed_streaming_build_resumes_with_a_new_conversation(tmp_path):
    store = Store(tmp_path / "s.db")
    calls = {"n": 0}

    def dies_after_four(request):
        calls["n"] += 1
        if calls["n"] > 4:
            raise KeyboardInterrupt
        return middle(request)

    with pytest.raises(KeyboardInterrupt):
        reader(scripted(paginate=dies_after_four), store, pagination="streaming").build(Document.from_text(TEXT))
    kept = len(store.items(store.list_memories()[0].key, "page"))
    assert kept == 4
    fake = scripted()
    memory = reader(fake, store, pagination="streaming").build(Document.from_text(TEXT))
    first = next(r for r in fake.history if r.role == "paginate")
    assert len(first.messages) == 1 and "You are given a passage" in first.messages[0].content
    assert [p.index for p in memory.pages] == list(range(len(memory.pages)))
    paper = reader(scripted()).build(Document.from_text(TEXT))
    assert [(p.start, p.end) for p in memory.pages] == [(p.start, p.end) for p in paper.pages]


def test_streaming_is_its_own_memory():
    store = Store(":memory:")
    doc = Document.from_text(TEXT)
    assert reader(scripted(), store).memory_key(doc) != reader(scripted(), store, pagination="streaming").memory_key(doc)
