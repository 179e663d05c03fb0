"""Chunked pagination (pagemind's option): paragraph-aligned chunks paginated at once, pages numbered in order."""

import threading
import time

import pytest

from helpers import first_words_gist, make_text, middle_label
from pagemind import LLM, Document, ScriptedLLM, Store
from pagemind.methods import registry
from pagemind.methods.readagent.build import plan_chunks
from pagemind.store import StoreResponseCache
from pagemind.text import split_paragraphs

TEXT = make_text(120, 60)  # 7,200 words; chunks of 1,500 words: 25 paragraphs each, the last 20


def reader(fake, store=None, concurrency=4, **opts):
    store = store or Store(":memory:")
    llm = LLM(fake, cache=StoreResponseCache(store), concurrency=concurrency)
    return registry.get("readagent-p")(llm, store, preset="quality", **opts)


def chunked(fake, store=None, concurrency=4, **opts):
    return reader(fake, store, concurrency, pagination="chunked", chunk_words=1500, **opts)


class Slow:
    """A reply that takes ``delay`` seconds and counts how many are being computed at once."""

    def __init__(self, reply, delay=0.03):
        self.reply, self.delay = reply, delay
        self.in_flight = self.most = 0
        self._lock = threading.Lock()

    def __call__(self, request):
        with self._lock:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
        time.sleep(self.delay)
        with self._lock:
            self.in_flight -= 1
        return self.reply(request)


class Dies:
    """A reply that raises once ``after`` replies were given (thread-safe)."""

    def __init__(self, reply, after):
        self.reply, self.left = reply, after
        self._lock = threading.Lock()

    def __call__(self, request):
        with self._lock:
            self.left -= 1
            if self.left < 0:
                raise RuntimeError("killed")
        return self.reply(request)


def spans(memory, store):
    return [(c["start"], c["end"], c["pages"]) for c in store.items(memory.key, "chunk")]


def test_chunks_are_whole_paragraphs_of_about_chunk_words():
    paragraphs = split_paragraphs(TEXT)
    chunks = plan_chunks(paragraphs, 1500)
    assert [(c.start, c.end) for c in chunks] == [(0, 25), (25, 50), (50, 75), (75, 100), (100, 120)]
    joined = plan_chunks(paragraphs[:110], 1500)  # a last chunk under half the size joins the one before
    assert [(c.start, c.end) for c in joined][-1] == (75, 110)
    assert plan_chunks([], 1500) == []


def test_chunked_pages_equal_sequential_pagination_of_each_chunk():
    store = Store(":memory:")
    fake = ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist})
    memory = chunked(fake, store).build(Document.from_text(TEXT))
    chunks = spans(memory, store)
    assert [(s, e) for s, e, _ in chunks] == [(0, 25), (25, 50), (50, 75), (75, 100), (100, 120)]
    assert [p.index for p in memory.pages] == list(range(len(memory.pages)))  # global numbers, in order
    assert [p.start for p in memory.pages[1:]] == [p.end for p in memory.pages[:-1]]
    assert " ".join(p.text for p in memory.pages).split() == TEXT.split()
    assert [g.text for g in memory.gists] == [" ".join(line.split()[0] for line in p.text.splitlines())
                                              for p in memory.pages]  # each gist belongs to its page
    paragraphs = split_paragraphs(TEXT)
    for start, end, n in chunks:
        inside = [(p.start, p.end) for p in memory.pages if start <= p.start < end]
        assert inside[-1][1] == end and len(inside) == n  # the chunk's last page ends at the chunk's end
        alone = reader(ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist})).build(
            Document.from_text("\n\n".join(paragraphs[start:end])))
        assert inside == [(p.start + start, p.end + start) for p in alone.pages]
    assert store.items(memory.key, "draft-page") == [] and store.items(memory.key, "draft-gist") == []


def test_chunked_pagination_keeps_several_requests_in_flight_sequential_one():
    seq_fake = ScriptedLLM(by_role={"paginate": (seq := Slow(middle_label)), "gist": first_words_gist})
    sequential = reader(seq_fake).build(Document.from_text(TEXT))
    ch_fake = ScriptedLLM(by_role={"paginate": (ch := Slow(middle_label)), "gist": first_words_gist})
    memory = chunked(ch_fake).build(Document.from_text(TEXT))
    assert seq.most == 1  # the paper's pagination: one page after another
    assert ch.most > 1  # the chunks are paginated at once (4 slots, 5 chunks)
    assert " ".join(p.text for p in memory.pages).split() == " ".join(p.text for p in sequential.pages).split()
    assert sequential.key != memory.key  # the pagination is part of the memory's key


def test_killed_chunked_build_resumes_each_chunk_where_it_stopped(tmp_path):
    doc = Document.from_text(TEXT)
    full = ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist})
    reference = chunked(full, Store(tmp_path / "ref.db")).build(doc)
    calls = sum(r.role == "paginate" for r in full.history)

    path = tmp_path / "s.db"
    dying = ScriptedLLM(by_role={"paginate": Dies(middle_label, 6), "gist": first_words_gist})
    with pytest.raises(RuntimeError, match="killed"):
        chunked(dying, Store(path)).build(doc)
    store = Store(path)
    (record,) = store.memories_for(doc.id)
    drafts = store.items(record.key, "draft-page")
    assert record.status == "building" and 0 < len(drafts) < len(reference.pages)
    assert store.items(record.key, "page") == []  # nothing is numbered before every chunk is done
    assert len(store.items(record.key, "chunk")) == 5  # the chunk boundaries are stored before any call

    resumed = ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist})
    memory = chunked(resumed, store).build(doc)
    decided = sum(d["label_source"] != "tail" for d in drafts)  # pages that took a call before the kill
    assert sum(r.role == "paginate" for r in resumed.history) == calls - decided
    assert [(p.index, p.start, p.end) for p in memory.pages] == [(p.index, p.start, p.end) for p in reference.pages]
    assert [g.text for g in memory.gists] == [g.text for g in reference.gists]
    assert store.get_memory(record.key).status == "complete"


def test_killed_while_numbering_numbers_again_without_calls(tmp_path):
    doc = Document.from_text(TEXT)
    path = tmp_path / "s.db"
    store = Store(path)
    real = store.put_items

    def dies_on_pages(key, kind, items):
        if kind == "page":
            raise RuntimeError("killed")
        real(key, kind, items)

    store.put_items = dies_on_pages
    fake = ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist})
    with pytest.raises(RuntimeError, match="killed"):
        chunked(fake, store).build(doc)
    resumed = ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist})
    memory = chunked(resumed, Store(path)).build(doc)
    assert resumed.history == []  # every page and gist was stored: only the numbering is redone
    assert [p.index for p in memory.pages] == list(range(len(memory.pages)))
    assert len(memory.gists) == len(memory.pages)


@pytest.mark.parametrize("concurrency", [1, 4])
def test_continued_gists_follow_their_pagination_turn_in_each_chunk(concurrency):
    fake = ScriptedLLM(by_role={"paginate": middle_label, "gist": "a short gist"})
    memory = chunked(fake, concurrency=concurrency, gist_mode="continue").build(Document.from_text(TEXT))
    gists = [r for r in fake.history if r.role == "gist"]
    continued = [r for r in gists if len(r.messages) == 3]  # pagination prompt, its reply, the gist request
    tails = sum(p.label_source == "tail" for p in memory.pages)  # a tail page had no pagination turn
    assert len(continued) == len(memory.pages) - tails and len(gists) == len(memory.pages)
    assert len(memory.gists) == len(memory.pages)
