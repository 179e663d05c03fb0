"""Streaming pagination (pagemind's option): one pagination conversation whose turns show only text not yet shown,
so a prefix cache serves what the model has read; the same pages as the paper's pagination for the same choices."""

from __future__ import annotations

import re
from itertools import pairwise

import pytest

from helpers import make_text
from pagemind import LLM, Document, ScriptedLLM, Store
from pagemind.methods import registry
from pagemind.store import StoreResponseCache
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
    llm = LLM(fake, cache=StoreResponseCache(store), concurrency=1)
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
    for before, after in pairwise(requests):  # a prefix cache serves every earlier turn
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
    assert pages[0].start == 0 and all(a.end == b.start for a, b in pairwise(pages))


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
    streaming = reader(scripted(), store, pagination="streaming")
    assert reader(scripted(), store).memory_key(doc) != streaming.memory_key(doc)


def _words(text: str) -> list[str]:
    return re.findall(r"p\d+w\d+", text)


def test_a_continued_gist_about_other_text_is_rejected_and_the_page_gisted_on_its_own():
    """A small model in a long conversation gists the text it read first again; such a gist is re-asked, then
    the page is gisted on its own with the paper's prompt, so every gist is about its own page."""
    calls = iter(range(1000))

    def gists(request):
        if len(request.messages) == 1:  # the paper's gist prompt: the page alone
            return "Own gist: " + " ".join(_words(request.messages[0].content)[:12])
        k = next(calls)  # words of the conversation's first page, never the same twice
        return "Gist: " + " ".join(_words(request.messages[0].content)[k:k + 20])

    fake = scripted(gist=gists)
    trace = __import__("pagemind").Trace()
    memory = reader(fake, gist_mode="continue", pagination="streaming").build(Document.from_text(TEXT), trace=trace)
    for page, g in zip(memory.pages, memory.gists):
        assert set(_words(g.text)) <= set(_words(page.text)) and g.source == "llm", (page.index, g.text)
    rejected = [n for n in trace.notes if n.startswith("continued gist of page")]
    assert "gist is about other text than its page (0% of its words are in the page, 95% in the text around " \
           "it)" in rejected[0]
    separate = [r for r in fake.history if r.role == "gist" and len(r.messages) == 1]
    tails = sum(p.label_source == "tail" for p in memory.pages)  # a tail page has no pagination turn to continue
    assert len(separate) - tails == len(rejected) >= len(memory.pages) - 3  # a conversation's first page passes


def test_a_continued_gist_that_repeats_an_earlier_pages_gist_is_rejected():
    same = "The keeper rows the supply boat across the bay every morning before the storm bell rings twice."

    def gists(request):
        if len(request.messages) == 1:
            return "Own gist: " + " ".join(_words(request.messages[0].content)[:12])
        return same

    trace = __import__("pagemind").Trace()
    memory = reader(scripted(gist=gists), gist_mode="continue").build(Document.from_text(TEXT), trace=trace)
    continued = [g for g in memory.gists if g.text == same]
    assert len(continued) == 1 and memory.gists[0].text == same  # the first page's gist stands
    assert any("gist repeats the gist of an earlier page" in n for n in trace.notes)


def test_the_grounding_checks_leave_other_gists_alone():
    from pagemind.methods.readagent.gist import check_gist
    from pagemind.methods.readagent.memory import Page

    page = Page(0, 0, 3, "The lighthouse keeper Wren lit the lamp at dusk while her brother Abel sailed the ferry "
                         "home through the fog, and the bell on the point rang for the late boats.", "llm")
    abstractive = "A keeper tends her light on a foggy evening as her sibling guides travellers back to port."
    assert check_gist(abstractive, page, around="Prices of fish rose at the market that winter.") == abstractive
    assert check_gist("Wren lit the lamp.", page, around="Wren lit the lamp.", earlier=["Wren lit the lamp."]) \
        == "Wren lit the lamp."  # too short to judge
    other = "Prices of fish rose at the market that winter, and the traders of the harbour town complained loudly."
    assert "about other text" in str(check_gist(other, page, around=other).problem)
    assert check_gist(other, page) == other  # the paper's separate prompt shows the page alone: nothing to compare


def test_a_memory_of_continued_gists_built_before_their_checks_is_built_again():
    store = Store(":memory:")
    paper, continued = reader(scripted(), store), reader(scripted(), store, gist_mode="continue")
    assert "builder" not in paper.key_settings()  # the paper's memories keep their keys (build version 1)
    assert continued.key_settings()["builder"] == 2  # ReadAgent's build version 2: continued gists are checked
    doc = Document.from_text(TEXT)
    older = continued.memory_settings()  # the key of a memory built before the checks (no version in it)
    from pagemind.store.rows import memory_key

    assert continued.memory_key(doc) != memory_key(doc.id, "readagent", older, continued.memory_model())
    assert paper.memory_key(doc) == memory_key(doc.id, "readagent", paper.memory_settings(), paper.memory_model())
