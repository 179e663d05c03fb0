"""FragRel scores on hand-computed cases (context and semantic relations) and the O(N) context relation."""

import numpy as np
import pytest

from pagemind.errors import ConfigError
from pagemind.retrieval import Fragment, FragmentIndex, RetrievalSettings
from pagemind.retrieval.embed import HashingEmbedder
from pagemind.retrieval.fragrel import relations
from pagemind.retrieval.fragrel.relations import (
    SEMANTIC_K,
    ContextRelation,
    MatrixRelation,
    SemanticRelation,
    causal_geometric,
    dense_environment,
    exact_neighbours,
    fragrel_scores,
    has_ann,
    two_sided_geometric,
)


# --- context structure relation (Eq. 7) ------------------------------------------------------------------
def test_context_relation_hand_computed():
    # w_rel = 0.5, alpha = 0.5, s_ind = [1, 0, 0, 2] at positions 0..3.
    # Row 0 weights [1, .5, .25, .125] (sum 1.875): env = (1 + .25) / 1.875 = 2/3.
    # Row 1 weights [.5, 1, .5, .25] (sum 2.25): env = (.5 + .5) / 2.25 = 4/9.
    # Row 2 weights [.25, .5, 1, .5] (sum 2.25): env = (.25 + 1) / 2.25 = 5/9.
    # Row 3 weights [.125, .25, .5, 1] (sum 1.875): env = (.125 + 2) / 1.875 = 17/15.
    rel = ContextRelation([0, 1, 2, 3], w_rel=0.5)
    s = np.array([1.0, 0.0, 0.0, 2.0])
    assert rel.environment(s) == pytest.approx([2 / 3, 4 / 9, 5 / 9, 17 / 15])
    assert fragrel_scores(s, rel, alpha=0.5) == pytest.approx([4 / 3, 2 / 9, 5 / 18, 77 / 30])


def test_context_relation_promotes_a_fragment_between_relevant_neighbours():
    # Fragment 1 (0.5) sits between two 0.9s; fragment 5 (0.6) is isolated. Paper defaults w_rel .3, alpha .5.
    s = np.array([0.9, 0.5, 0.9, 0.0, 0.0, 0.6, 0.0])
    rel = ContextRelation(range(7), w_rel=0.3)
    s_rel = fragrel_scores(s, rel, alpha=0.5)
    assert s[5] > s[1] and s_rel[1] > s_rel[5]
    # row 1: weights [.3, 1, .3, .09, .027, .0081, .00243]
    w = 0.3 ** np.abs(np.arange(7) - 1)
    assert s_rel[1] == pytest.approx(0.5 + 0.5 * (w @ s) / w.sum())


def test_w_rel_zero_degrades_to_independent_scores():
    s = np.array([0.3, 0.9, 0.1, 0.5])
    s_rel = fragrel_scores(s, ContextRelation(range(4), w_rel=0.0), alpha=0.5)
    assert s_rel == pytest.approx(1.5 * s)  # the fragment itself is in the sum (w_ii = w^0 = 1)


def test_relation_does_not_cross_sources_and_handles_gaps():
    # two files; in file "b" the positions have a gap (2 is missing)
    positions, sources = [0, 1, 0, 1, 3], ["a", "a", "b", "b", "b"]
    rel = ContextRelation(positions, sources, w_rel=0.4)
    W = rel.dense()
    assert W[0, 2] == 0 and W[1, 4] == 0
    assert W[3, 4] == pytest.approx(0.4**2) and W[2, 4] == pytest.approx(0.4**3)
    s = np.array([0.2, 1.0, 0.7, 0.1, 0.9])
    assert rel.environment(s) == pytest.approx(dense_environment(W, s))


@pytest.mark.parametrize("use_scipy", [True, False])
@pytest.mark.parametrize("w", [0.0, 0.3, 0.8, 0.97, 1.0])
def test_o_n_context_relation_equals_dense_formula_on_random_inputs(use_scipy, w):
    rng = np.random.default_rng(7)
    for n in (1, 2, 17, 400):
        s = rng.normal(size=n)
        D = w ** np.abs(np.subtract.outer(np.arange(n), np.arange(n))).astype(float)
        assert two_sided_geometric(s, w, use_scipy) == pytest.approx(D @ s, abs=1e-9)
        sources = rng.choice(["x", "y", "z"], size=n).tolist()
        positions = np.zeros(n, dtype=int)
        for src in set(sources):  # increasing positions per source, with random gaps
            idx = [i for i, t in enumerate(sources) if t == src]
            positions[idx] = np.cumsum(rng.integers(1, 3, size=len(idx)))
        rel = ContextRelation(positions, sources, w_rel=w, use_scipy=use_scipy)
        same = np.equal.outer(np.array(sources), np.array(sources))
        W = np.where(same, w ** np.abs(np.subtract.outer(positions, positions)).astype(float), 0.0)
        assert rel.dense() == pytest.approx(W)
        assert rel.environment(s) == pytest.approx(dense_environment(W, s), abs=1e-9)


def test_causal_pass_is_a_geometric_prefix_sum():
    x = np.array([1.0, 2.0, 3.0])
    assert causal_geometric(x, 0.5) == pytest.approx([1.0, 2.5, 4.25])
    assert causal_geometric(x, 0.5, use_scipy=False) == pytest.approx([1.0, 2.5, 4.25])


def test_ranking_is_invariant_to_positive_affine_rescaling_of_s_ind():
    # s_env is a normalised average, so a*s + b gives a*s_rel + b(1 + alpha): BM25 needs no normalisation.
    rng = np.random.default_rng(3)
    s = rng.random(50)
    rel = ContextRelation(range(50), w_rel=0.3)
    a = fragrel_scores(s, rel, 0.5)
    b = fragrel_scores(7.0 * s + 3.0, rel, 0.5)
    assert b == pytest.approx(7.0 * a + 3.0 * 1.5)
    assert (np.argsort(-a) == np.argsort(-b)).all()


# --- semantic relation (Eq. 6) ---------------------------------------------------------------------------
E = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])  # cos01 = 0, cos02 = .6, cos12 = .8
S = np.array([1.0, 0.0, 0.5])


def test_semantic_similarity_hand_computed():
    # W = [[1, 0, .6], [0, 1, .8], [.6, .8, 1]]
    rel = SemanticRelation(E, form="similarity")
    assert rel.environment(S) == pytest.approx([1.3 / 1.6, 0.4 / 1.8, 1.1 / 2.4])
    assert fragrel_scores(S, rel, 0.5) == pytest.approx(S + 0.5 * np.array([1.3 / 1.6, 0.4 / 1.8, 1.1 / 2.4]))


def test_semantic_distance_as_printed_hand_computed():
    # Eq. 6 as printed: W = 1 - cos = [[0, 1, .4], [1, 0, .2], [.4, .2, 0]]; it favours *dissimilar* neighbours:
    # fragment 1 (orthogonal to the relevant fragment 0) gets the largest environment score.
    rel = SemanticRelation(E, form="distance")
    env = rel.environment(S)
    assert env == pytest.approx([0.2 / 1.4, 1.1 / 1.2, 0.4 / 0.6])
    assert env[1] == env.max()


def test_semantic_fast_forms_equal_dense_formula():
    rng = np.random.default_rng(11)
    V = rng.normal(size=(60, 8))
    s = rng.random(60)
    for form in ("similarity", "distance"):
        rel = SemanticRelation(V, form=form)  # float32 embeddings: agreement to ~1e-7
        assert rel.environment(s) == pytest.approx(dense_environment(rel.dense(), s), rel=1e-6)
    rows = np.array([3, 17])
    sparse = SemanticRelation(V, k=5)
    assert sparse.environment(s, rows) == pytest.approx(sparse.environment(s)[rows])


def unit32(V: np.ndarray) -> np.ndarray:
    """The unit vectors a SemanticRelation keeps (float32), back in float64."""
    return (V / np.linalg.norm(V, axis=1, keepdims=True)).astype(np.float32).astype(np.float64)


def paper_environment(V: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Eq. 9 with w_ij = max(0, cos), w_ii = 1, over every pair, written out independently of the relation."""
    E = unit32(V)
    W = np.clip(E @ E.T, 0.0, None)
    np.fill_diagonal(W, 1.0)
    return (W @ s) / W.sum(axis=1)


@pytest.mark.parametrize("settings", [
    {"k": 0}, {"k": 59}, {"k": 500}, {"k": 59, "search": "exact"}, {"k": 0, "search": "exact"},
    {"k": 0, "dense_limit": 10},  # dense rows recomputed per query, W never held
])
def test_every_neighbour_kept_equals_the_dense_formula(settings):
    rng = np.random.default_rng(5)
    V = rng.normal(size=(60, 8))
    s = rng.random(60)
    rel = SemanticRelation(V, **settings)
    assert rel.environment(s) == pytest.approx(paper_environment(V, s), rel=1e-9, abs=1e-12)
    rows = np.array([0, 7, 59])
    assert rel.environment(s, rows) == pytest.approx(paper_environment(V, s)[rows], rel=1e-9, abs=1e-12)
    if settings.get("search") == "exact":
        assert rel.search == "exact" and rel.k == 59 and rel.W is None  # the neighbour lists, not a matrix
    else:
        assert rel.search == "dense" and rel.k == 0


def test_fewer_neighbours_change_the_scores_but_follow_their_own_sparse_matrix():
    rng = np.random.default_rng(6)
    V = rng.normal(size=(80, 8))
    s = rng.random(80)
    rel = SemanticRelation(V, k=5)
    assert rel.search == "exact" and rel.nbr_idx.shape == (80, 5)
    assert not np.allclose(rel.environment(s), paper_environment(V, s))
    assert rel.environment(s) == pytest.approx(dense_environment(rel.dense(), s), rel=1e-12)
    E = unit32(V)  # row 0 by hand: itself (weight 1) and its 5 most similar fragments, negative cosines as 0
    cos = E[0] @ E.T
    nearest = np.argsort(-np.where(np.arange(80) == 0, -np.inf, cos))[:5]
    w = np.clip(cos[nearest], 0.0, None)
    assert rel.environment(s)[0] == pytest.approx((s[0] + w @ s[nearest]) / (1.0 + w.sum()), rel=1e-12)


@pytest.mark.parametrize("memory_mb", [0.001, 0.05, 64.0])  # one row per block, a few blocks, one block
def test_exact_neighbours_equal_brute_force(memory_mb):
    rng = np.random.default_rng(7)
    E = unit32(rng.normal(size=(300, 16))).astype(np.float32)
    idx, cos = exact_neighbours(E, 7, memory_mb)
    full = E.astype(np.float64) @ E.astype(np.float64).T
    np.fill_diagonal(full, -np.inf)
    expected = np.argsort(-full, axis=1)[:, :7]
    assert (idx == expected).all()  # best first; random vectors have no ties
    assert cos == pytest.approx(np.take_along_axis(full, expected, axis=1), rel=1e-12)


def test_neighbour_relation_memory_is_linear_in_n():
    import tracemalloc

    rng = np.random.default_rng(8)
    sizes, peaks = {}, {}
    for n in (3000, 6000):
        V = rng.normal(size=(n, 16)).astype(np.float32)
        tracemalloc.start()
        rel = SemanticRelation(V, k=8, memory_mb=1.0)
        peaks[n] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert rel.W is None and rel.nnz == n * 9  # k neighbours + itself per row
        assert peaks[n] < n * n * 4 / 8  # never an eighth of the N x N float32 products at once
        sizes[n] = rel.nbytes
    assert sizes[6000] == 2 * sizes[3000]  # embeddings + neighbour lists: exactly linear
    assert peaks[6000] < 2 * peaks[3000]  # the build: linear part plus one block of about memory_mb


def test_auto_search_chooses_by_size_and_falls_back_without_faiss(monkeypatch):
    rng = np.random.default_rng(9)
    V = rng.normal(size=(200, 8))
    assert SemanticRelation(V, k=10, approximate_above=500).search == "exact"
    assert SemanticRelation(V, k=0).search == "dense"
    monkeypatch.setattr(relations, "_faiss", lambda: None)
    assert not has_ann()
    assert SemanticRelation(V, k=10, approximate_above=100).search == "exact"  # no faiss: brute force
    with pytest.raises(ConfigError, match="pagemind\\[ann\\]"):
        SemanticRelation(V, k=10, search="approximate")
    with pytest.raises(ConfigError):
        SemanticRelation(V, k=-1)


@pytest.mark.skipif(not has_ann(), reason="faiss (the ann extra) is not installed")
def test_approximate_index_finds_nearly_the_exact_neighbours():
    rng = np.random.default_rng(10)
    centres = rng.normal(size=(40, 32))  # clustered, like real embeddings
    V = centres[rng.integers(0, 40, 3000)] + 0.6 * rng.normal(size=(3000, 32))
    s = rng.random(3000)
    approx = SemanticRelation(V, k=16, approximate_above=1000)
    exact = SemanticRelation(V, k=16, search="exact")
    assert approx.search == "approximate" and approx.nbr_idx.shape == (3000, 16) and approx.nnz == 3000 * 17
    assert (approx.nbr_idx != np.arange(3000)[:, None]).all()  # never its own neighbour
    assert (np.diff(approx.nbr_w, axis=1) <= 1e-7).all()  # best first
    recall = np.mean([len(set(a) & set(b)) / 16 for a, b in zip(approx.nbr_idx, exact.nbr_idx)])
    assert recall > 0.9
    assert approx.environment(s) == pytest.approx(exact.environment(s), abs=0.02)
    top = set(np.argsort(-fragrel_scores(s, approx))[:50]) & set(np.argsort(-fragrel_scores(s, exact))[:50])
    assert len(top) >= 45


def test_matrix_relation_and_candidate_rows():
    W = np.array([[1.0, 0.5, 0.0], [0.5, 1.0, 0.5], [0.0, 0.5, 1.0]])
    s = np.array([0.2, 0.4, 1.0])
    full = fragrel_scores(s, MatrixRelation(W), 0.5)
    assert full == pytest.approx(s + 0.5 * dense_environment(W, s))
    part = fragrel_scores(s, MatrixRelation(W[[2]], row_ids=[2]), 0.5, candidates=np.array([2]))
    assert part[2] == pytest.approx(full[2]) and np.isneginf(part[:2]).all()


def test_settings_validation():
    with pytest.raises(ConfigError):
        RetrievalSettings(w_rel=1.5)
    with pytest.raises(ConfigError):
        RetrievalSettings(alpha=-1)
    with pytest.raises(ConfigError):
        RetrievalSettings(scorer="tfidf")
    with pytest.raises(ConfigError):
        RetrievalSettings(semantic_k=-1)


def test_semantic_k_reaches_the_relation_from_rag_options():
    from pagemind.methods.rag import RAGOptions

    assert RAGOptions().semantic_k == SEMANTIC_K == RetrievalSettings().semantic_k
    assert RAGOptions(semantic_k=3).retrieval().semantic_k == 3
    frags = [Fragment(i, f"fragment {i} about topic {i % 4} and more", i) for i in range(12)]
    for k, search in ((3, "exact"), (0, "dense"), (11, "dense")):
        settings = RetrievalSettings(fragrel=True, relation="semantic", semantic_k=k)
        rel = FragmentIndex(frags, settings, HashingEmbedder()).relation()
        assert (rel.k, rel.search) == ((k, search) if search == "exact" else (0, "dense"))


def test_index_rank_with_fragrel_context():
    texts = ["alpha beta", "gamma", "alpha beta", "delta", "epsilon", "alpha", "zeta"]
    frags = [Fragment(i, t, i) for i, t in enumerate(texts)]
    plain = FragmentIndex(frags, RetrievalSettings(scorer="bm25")).rank("alpha beta gamma")
    rel = FragmentIndex(frags, RetrievalSettings(scorer="bm25", fragrel=True, w_rel=0.3)).rank("alpha beta gamma")
    assert rel.s_ind == pytest.approx(plain.s_ind)
    expected = plain.s_ind + 0.5 * ContextRelation(range(7), w_rel=0.3).environment(plain.s_ind)
    assert rel.s_rel == pytest.approx(expected)
    assert list(rel.order) == list(np.argsort(-expected, kind="stable"))


def test_the_context_relation_can_stop_at_a_sections_heading():
    """Issue 37: with ``context_within="section"`` a fragment's context is its own section's fragments: the first
    fragment after a heading gets nothing from the relevant one just before it."""
    texts = ["filler one", "filler two", "alpha beta", "gamma", "delta"]
    sections = ["§1", "§1", "§1", "§2", "§2"]
    frags = [Fragment(i, t, i, section=s) for i, (t, s) in enumerate(zip(texts, sections))]
    across = FragmentIndex(frags, RetrievalSettings(fragrel=True)).rank("alpha beta")
    within = FragmentIndex(frags, RetrievalSettings(fragrel=True, context_within="section")).rank("alpha beta")
    assert across.s_rel[3] > 0 and within.s_rel[3] == 0  # "gamma" opens §2: no context from §1 there
    assert across.s_rel[1] > 0 and within.s_rel[1] > 0  # inside §1 the neighbours still lend each other context
