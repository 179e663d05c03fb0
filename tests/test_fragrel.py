"""FragRel scores on hand-computed cases (context and semantic relations) and the O(N) context relation."""

import numpy as np
import pytest

from pagemind.errors import ConfigError
from pagemind.retrieval import Fragment, FragmentIndex, RetrievalSettings
from pagemind.retrieval.fragrel.relations import (ContextRelation, MatrixRelation, SemanticRelation,
                                        causal_geometric, dense_environment, fragrel_scores, two_sided_geometric)


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
    # the top-k sparse form keeps every positive neighbour when k covers them all
    sparse = SemanticRelation(V, form="similarity", dense_limit=10, neighbours=59)
    assert sparse.environment(s) == pytest.approx(SemanticRelation(V).environment(s), rel=1e-6)
    rows = np.array([3, 17])
    assert sparse.environment(s, rows) == pytest.approx(sparse.environment(s)[rows])


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


def test_index_rank_with_fragrel_context():
    texts = ["alpha beta", "gamma", "alpha beta", "delta", "epsilon", "alpha", "zeta"]
    frags = [Fragment(i, t, i) for i, t in enumerate(texts)]
    plain = FragmentIndex(frags, RetrievalSettings(scorer="bm25")).rank("alpha beta gamma")
    rel = FragmentIndex(frags, RetrievalSettings(scorer="bm25", fragrel=True, w_rel=0.3)).rank("alpha beta gamma")
    assert rel.s_ind == pytest.approx(plain.s_ind)
    expected = plain.s_ind + 0.5 * ContextRelation(range(7), w_rel=0.3).environment(plain.s_ind)
    assert rel.s_rel == pytest.approx(expected)
    assert list(rel.order) == list(np.argsort(-expected, kind="stable"))
