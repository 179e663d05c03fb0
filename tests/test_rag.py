"""The RAG readers with the scripted fake: retrieval, order, FragRel, budgets to the token, stored memory."""

import pytest

from helpers import first_words_gist, make_text, middle_label
from pagemind import LLM, Document, ScriptedLLM, Store
from pagemind.answering.question import Question
from pagemind.errors import ConfigError
from pagemind.methods import registry
from pagemind.methods.full import FullText
from pagemind.methods.rag import RAG, RAGOptions
from pagemind.retrieval.embed import HashingEmbedder
from pagemind.store import StoreResponseCache

DOC = Document.from_text(make_text(10, 50))  # 10 paragraphs "p{i}w0 ... p{i}w49." = 500 words


def context_of(fake: ScriptedLLM) -> str:
    prompt = fake.history[-1].messages[0].content
    return prompt.split("Article:\n", 1)[1].split("\n\nQuestion:", 1)[0]


def reader(fake=None, store=None, mode="rag", embedder=None, **opts):
    fake = fake or ScriptedLLM(by_role={"answer": "Answer: (B) two"})
    store = store or Store(":memory:")
    llm = LLM(fake, cache=StoreResponseCache(store), concurrency=1)
    opts.setdefault("fragment_words", 50)
    return registry.get(mode)(llm, store, RAGOptions.create("quality", **opts), embedder), fake


def ask(text):
    return Question(text, ("one", "two", "three", "four"))


def test_rag_retrieves_the_matching_fragments_best_first():
    rag, fake = reader(top_k=2)
    memory = rag.build(DOC)
    assert len(memory.fragments) == 10 and memory.fragments[3].text.startswith("p3w0")
    answer = rag.answer(memory, ask("What about p7w3 and p7w9 and p2w1?"))
    assert answer.letter == "B" and answer.method == "rag"
    assert answer.details["fragments"] == [7, 2]  # two query words in fragment 7, one in fragment 2
    assert context_of(fake).startswith("p7w0") and "p2w0" in context_of(fake)
    assert answer.context_words == 100


def test_op_rag_keeps_document_order():
    rag, fake = reader(mode="op-rag", top_k=2)
    answer = rag.answer(rag.build(DOC), ask("What about p7w3 and p7w9 and p2w1?"))
    assert answer.details["fragments"] == [2, 7] and answer.details["order"] == "position"
    assert context_of(fake).startswith("p2w0")


def test_budget_is_respected_to_the_token():
    # scripted tokens are whitespace words: each fragment is 50 tokens, "\n\n" adds none
    for budget, shown in ((100, 2), (99, 1), (150, 3), (149, 2)):
        rag, fake = reader(top_k=None, budget=budget)
        answer = rag.answer(rag.build(DOC), ask("p1w1 p4w4 p6w6 p8w8 p8w7 p4w3"))
        assert answer.details["context_tokens"] == 50 * shown <= budget
        assert len(context_of(fake).split()) == 50 * shown


def test_a_budget_below_one_fragment_truncates_the_best_fragment():
    rag, fake = reader(budget=20)
    answer = rag.answer(rag.build(DOC), ask("p5w2"))
    assert context_of(fake).split() == [f"p5w{j}" for j in range(20)]
    assert any("truncated" in f for f in answer.fallbacks)


def test_context_window_limits_what_is_added():
    fake = ScriptedLLM(by_role={"answer": "Answer: (A)"}, context_window=700)
    rag, _ = reader(fake, top_k=None)
    rag.answer(rag.build(DOC), ask("p1w1 p2w2 p3w3 p4w4 p5w5 p6w6 p7w7 p8w8 p9w9 p0w0"))
    request = fake.history[-1]
    assert rag.llm.fits(request) and 50 <= len(context_of(fake).split()) < 500


def test_fragrel_context_relation_changes_the_pick():
    # BM25: fragment 5 matches two query words, fragments 1, 2, 3 one each (equal scores, ties by index).
    # Without FragRel the top 3 are 5, 1, 2. With the context relation (w_rel .5, alpha 1) fragment 2, whose
    # both neighbours match, rises above 1 and 3, and 3 (neighbours 2 and, at distance 2, 5) above 1.
    q = ask("p1w0 p3w0 p5w0 p5w1 p2w10")
    plain, _ = reader(top_k=3)
    rel, _ = reader(top_k=3, fragrel=True, w_rel=0.5, alpha=1.0)
    assert plain.answer(plain.build(DOC), q).details["fragments"] == [5, 1, 2]
    answer = rel.answer(rel.build(DOC), q)
    assert answer.details["fragments"] == [5, 2, 3]
    s = answer.details["scores"]
    assert s[2] > s[3] > s[1]


def test_memory_is_stored_and_reused(tmp_path):
    store = Store(tmp_path / "m.db")
    rag, _ = reader(store=store)
    memory = rag.build(DOC)
    again, _ = reader(store=Store(tmp_path / "m.db"))
    loaded = again.load(DOC)
    assert loaded is not None and loaded.fragments == memory.fragments and loaded.key == memory.key
    other, _ = reader(store=Store(tmp_path / "m.db"), fragment_words=100)
    assert other.load(DOC) is None  # fragment size is part of the memory key
    # retrieval-only options are not: they reuse the stored fragments
    assert reader(store=Store(tmp_path / "m.db"), top_k=1, fragrel=True)[0].load(DOC) is not None


def test_dense_scorer_embeds_once_into_the_store(tmp_path):
    store = Store(tmp_path / "d.db")
    rag, _ = reader(store=store, scorer="dense", top_k=1, embedder=HashingEmbedder(dim=4096))
    memory = rag.build(DOC)
    from pagemind.retrieval.cache import EmbeddingCache

    assert EmbeddingCache(store).count() == 10
    answer = rag.answer(memory, ask("p6w1 p6w2 p6w3"))
    assert answer.details["fragments"] == [6]
    rag.answer(memory, ask("p9w1"))
    assert EmbeddingCache(store).count() == 10  # queries are not stored: the table holds fragments only


def test_pages_fragments_reuse_readagent_pages():
    fake = ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist, "answer": "Answer: (C)"})
    store = Store(":memory:")
    llm = LLM(fake, cache=StoreResponseCache(store), concurrency=1)
    rag = RAG(llm, store, fragments="pages", top_k=1)
    doc = Document.from_text(make_text(30, 60))
    memory = rag.build(doc)
    assert memory.fragments[0].unit == "pages" and memory.fragments[0].start == 0
    assert " ".join(f.text for f in memory.fragments).split() == doc.text.split()
    answer = rag.answer(memory, ask("p20w5"))
    page = next(f for f in memory.fragments if f.start <= 20 < f.end)
    assert answer.details["fragments"] == [page.index] and answer.letter == "C"


def test_full_text_budget_is_respected_to_the_token():
    for keep in ("left", "right", "middle-cut"):
        fake = ScriptedLLM(by_role={"answer": "Answer: (A)"})
        full = FullText(LLM(fake), Store(":memory:"), keep=keep, budget=77)
        full.answer(full.build(DOC), ask("?"))
        assert len(context_of(fake).split()) == 77  # "[...]" of middle-cut counts as a token


def test_bad_options_are_config_errors():
    for bad in ({"scorer": "tfidf"}, {"w_rel": 2.0}, {"top_k": -1}, {"budget": 0}, {"fragments": "lines"},
                {"order": "random"}, {"nonsense": 1}):
        with pytest.raises(ConfigError):
            RAGOptions.create("quality", **bad)
    with pytest.raises(ConfigError):
        RAGOptions.create("unknown")
    assert RAGOptions.create("quality", top_k=0).k is None  # 0: as many fragments as fit


def test_a_memory_built_on_other_sections_of_the_same_text_is_not_reused(tmp_path):
    """A file read again into other sections (a new reading rule) gets a memory of its own: its fragments carry the
    sections; the same text with the same sections finds the stored one."""
    from dataclasses import replace

    from pagemind.text.sections import Section

    text = "Results\n" + "The revenue rose in every region of the group. " * 60 + "\nRisks\n" + "A storm. " * 80
    plain = Document.from_text(text, name="r.txt")
    one = replace(plain, sections=(Section("Results", 1, 0, len(text) // 2), Section("Risks", 1, len(text) // 2,
                                                                                   len(text))))
    other = replace(plain, sections=(Section("Results and risks", 1, 0, len(text)),))
    reader = registry.get("rag")(LLM(ScriptedLLM()), Store(tmp_path / "s.db"))
    keys = [reader.memory_key(d) for d in (plain, one, other, replace(one, name="again.pdf"))]
    assert len(set(keys[:3])) == 3 and keys[1] == keys[3]
    built = reader.build(one)
    assert any("Risks" in (f.section or "") for f in built.fragments)
    assert all("Results and risks" in (f.section or "") for f in reader.build(other).fragments)


def test_a_budget_reads_several_fragments_not_one():
    """Issue 50: with a budget and no fragment size given, fragments are sized so the budget reads top_k of them
    (LoCoMo at 1,500 tokens read one of its 28 500-word fragments); a size given, or a large budget, stays."""
    long = Document.from_text(make_text(40, 150))  # 6,000 words
    store = Store(":memory:")
    fake = ScriptedLLM(by_role={"answer": "Answer: (B) two"})
    llm = LLM(fake, cache=StoreResponseCache(store), concurrency=1)
    opts = RAGOptions.create("quality", budget=1500)
    assert opts.fragment_words == 214 and RAGOptions.create("quality").fragment_words == 500
    assert RAGOptions.create("quality", budget=1500, fragment_words=500).fragment_words == 500
    assert RAGOptions.create("quality", budget=100_000).fragment_words == 500  # never larger than the preset's
    rag = registry.get("op-rag")(llm, store, opts, None)
    answer = rag.answer(rag.build(long), ask("What about p7w3 and p21w9 and p30w1 and p12w4?"))
    assert len(answer.details["fragments"]) == 5, answer.details
    assert llm.count_tokens(context_of(fake)) <= 1500
    wide = registry.get("op-rag")(llm, store, RAGOptions.create("quality", budget=1500, fragment_words=500), None)
    assert len(wide.answer(wide.build(long), ask("What about p7w3?")).details["fragments"]) < 5  # fewer, wider
