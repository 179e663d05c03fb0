"""The code-structure relation's graph math (Eq. 8, Appendix A) on a hand-built two-file package."""

import numpy as np
import pytest

pytest.importorskip("scipy")  # the `retrieval` extra

from pagemind.errors import ConfigError
from pagemind.retrieval.fragrel.code_graph import (
    EDGE_WEIGHTS,
    CodeGraph,
    code_relation,
    code_relation_rows,
    max_product_paths,
)
from pagemind.retrieval.fragrel.relations import dense_environment, fragrel_scores

# pkg/ (0) -- a.py (1), b.py (2)                        directory edges 0.3
# a.py (1) -- <module a> (3);  b.py (2) -- <module b> (6)   file <-> syntax root 1.0
# <module a> (3) -- def foo (4) -- foo body (5)            syntax 0.5
# <module b> (6) -- call foo() (7), other statement (8)    syntax 0.5
# call foo() (7) -- def foo (4)                            call -> definition 0.8 (across files)
# node 9 is isolated
TREE = [(0, 1, "directory"), (0, 2, "directory"), (1, 3, "file"), (2, 6, "file"), (3, 4, "syntax"),
        (4, 5, "syntax"), (6, 7, "syntax"), (6, 8, "syntax")]
GRAPH = CodeGraph.build(10, TREE + [(7, 4, "call")])
NO_CALLS = CodeGraph.build(10, TREE)
# fragment 0: a.py lines with def foo (10 chars) and its body (30); fragment 1: b.py, the call (20) + other (20)
FRAGMENTS = [[(4, 10.0), (5, 30.0)], [(7, 20.0), (8, 20.0)]]


def test_edge_weights_are_the_papers():
    assert EDGE_WEIGHTS == {"syntax": 0.5, "directory": 0.3, "file": 1.0, "call": 0.8}


def test_max_product_path_hand_computed():
    D = max_product_paths(GRAPH, [7, 8, 0, 9])
    assert D[0, 4] == pytest.approx(0.8)  # the call edge beats 7-6-2-0-1-3-4 = .5*1*.3*.3*1*.5 = .0225
    assert D[1, 5] == pytest.approx(0.5 * 0.5 * 0.8 * 0.5)  # 8-6-7-4-5 = 0.1
    assert D[0, 7] == 1.0 and D[3, 9] == 1.0  # a node to itself: the empty path
    assert D[2, 3] == pytest.approx(0.3)  # weight-1.0 edges (cost 0) are kept as edges
    assert D[3, 0] == 0.0  # unreachable
    D0 = max_product_paths(NO_CALLS, [7])
    assert D0[0, 4] == pytest.approx(0.5 * 1.0 * 0.3 * 0.3 * 1.0 * 0.5)


def test_min_weight_prunes_weak_paths_and_repeated_edges_keep_the_best():
    # 7 to 0: 7-6-2-0 = .5*1*.3 = .15 beats 7-4-3-1-0 = .8*.5*1*.3 = .12
    assert max_product_paths(GRAPH, [7])[0, 0] == pytest.approx(0.15)
    assert max_product_paths(GRAPH, [7], min_weight=0.2)[0, 0] == 0.0  # .15 < .2: pruned
    assert max_product_paths(GRAPH, [7], min_weight=0.1)[0, 0] == pytest.approx(0.15)
    g = CodeGraph(3, ((0, 1, 0.2), (1, 0, 0.9), (1, 2, 0.5)))
    assert max_product_paths(g, [0])[0].tolist() == pytest.approx([1.0, 0.9, 0.45])


def test_fragment_relation_eq8_hand_computed():
    W = code_relation_rows(GRAPH, FRAGMENTS)
    # w_01 = (10*20*.8 + 10*20*.2 + 30*20*.4 + 30*20*.1) / (40*40) = 500/1600
    # w_00 = (10*10*1 + 2*10*30*.5 + 30*30*1) / 1600 = 1300/1600;  w_11 = (400 + 2*400*.25 + 400) / 1600
    assert pytest.approx(np.array([[1300, 500], [500, 1000]]) / 1600) == W
    W0 = code_relation_rows(NO_CALLS, FRAGMENTS)
    assert W0[0, 1] < 0.02 < W[0, 1]  # the cross-file call edge is what relates the two fragments


def test_rows_for_candidates_only_match_the_full_matrix():
    frags = FRAGMENTS + [[(9, 5.0)], [(0, 1.0), (1, 1.0)]]
    full = code_relation_rows(GRAPH, frags)
    part = code_relation_rows(GRAPH, frags, rows=[3, 1])
    assert part == pytest.approx(full[[3, 1]])
    assert full == pytest.approx(full.T)
    s = np.array([0.1, 0.9, 0.4, 0.3])
    rel = code_relation(GRAPH, frags, rows=[1, 3])
    got = fragrel_scores(s, rel, 0.5, candidates=np.array([1, 3]))
    ref = s + 0.5 * dense_environment(full, s)
    assert got[[1, 3]] == pytest.approx(ref[[1, 3]]) and np.isneginf(got[[0, 2]]).all()


def test_bad_graphs_are_refused():
    with pytest.raises(ConfigError):
        CodeGraph(2, ((0, 1, 1.5),)).cost_matrix()
    with pytest.raises(ConfigError):
        CodeGraph(2, ((0, 5, 0.5),)).cost_matrix()
    with pytest.raises(ConfigError):
        code_relation_rows(GRAPH, [[(4, 0.0)]])
