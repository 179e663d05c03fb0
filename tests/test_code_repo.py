"""Code retrieval, repository side: walking a tree, tree-sitter nodes, the Appendix A graph, fragment spans,
the bounded code relation and FragRel's effect on a ranking."""

import os

import numpy as np
import pytest

pytest.importorskip("scipy")  # the `retrieval` extra
pytest.importorskip("tree_sitter_python")

from pagemind.errors import ConfigError, InputError
from pagemind.retrieval.fragrel.code_files import tree_from_files, walk_source_tree
from pagemind.retrieval.fragrel.code_graph import code_relation_rows, max_product_paths
from pagemind.retrieval.fragrel.code_parse import parse_file
from pagemind.retrieval.fragrel.code_rank import CodeSearchSettings, rank_code, relation_rows
from pagemind.retrieval.fragrel.code_repo import CodeRepository
from pagemind.retrieval.fragrel.relations import dense_environment

A_PY = "def helper(x):\n    return x + 1\n"
B_PY = "from pkg.a import helper\n\n\ndef main():\n    return helper(2)\n"


def write(root, files):
    for path, text in files.items():
        p = root / path
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            p.write_bytes(text)
        else:
            p.write_text(text)
    return root


def labelled_edges(repo):
    v = repo.view()
    return {(repo.node_label(int(a)), repo.node_label(int(b)), float(w)) for a, b, w in zip(v.u, v.v, v.w)}


def node(repo, label):
    found = [i for i in range(repo.n_nodes) if repo.node_label(i) == label]
    assert len(found) == 1, (label, found)
    return found[0]


# --- walking ------------------------------------------------------------------------------------------
def test_walk_reads_python_and_skips_with_reasons(tmp_path):
    outside = tmp_path / "outside.py"
    outside.write_text("SECRET = 1\n")
    root = write(tmp_path / "repo", {
        "pkg/a.py": A_PY, "pkg/b.py": B_PY, "README.md": "# not code\n",
        "pkg/bin.py": b"\x00\x01\x02binary", "pkg/latin.py": "x = 'caf\xe9'\n".encode("latin-1"),
        ".hidden/h.py": "h = 1\n", "pkg/__pycache__/c.py": "c = 1\n", "venv/lib/v.py": "v = 1\n",
        "venv/pyvenv.cfg": "home = x\n", "node_modules/n.py": "n = 1\n",
    })
    os.symlink(outside, root / "pkg" / "link.py")
    os.symlink(tmp_path, root / "loop")  # a linked directory is never entered
    tree = walk_source_tree(root)
    assert [f.path for f in tree.files] == ["pkg/a.py", "pkg/b.py"]
    reasons = dict(tree.skipped)
    assert reasons["pkg/bin.py"] == "binary file (contains NUL bytes)"
    assert reasons["pkg/latin.py"] == "not valid UTF-8 (byte 8: b'\\xe9')"
    assert reasons["pkg/link.py"] == "symbolic link to a file outside the tree"
    assert any("skipped pkg/bin.py: binary" in n for n in tree.notes())


def test_walk_bad_directories_are_clear_errors(tmp_path):
    with pytest.raises(InputError, match="no such directory"):
        walk_source_tree(tmp_path / "missing")
    (tmp_path / "f.py").write_text("x = 1\n")
    with pytest.raises(InputError, match="not a directory"):
        walk_source_tree(tmp_path / "f.py")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="no readable source files"):
        walk_source_tree(empty)
    docs = write(tmp_path / "docs", {"README.md": "text\n", "data.bin": b"\x00\x00"})
    with pytest.raises(InputError, match="no readable source files"):
        walk_source_tree(docs)
    only_bad = write(tmp_path / "bad", {"x.py": b"\x00binary"})
    with pytest.raises(InputError, match="binary"):
        walk_source_tree(only_bad)
    with pytest.raises(InputError, match="more than 1 source files"):
        walk_source_tree(write(tmp_path / "two", {"a.py": "a = 1\n", "b.py": "b = 1\n"}), max_files=1)


def test_text_is_normalised_so_lines_match_an_editor():
    tree = tree_from_files({"x.py": "\ufeffa = 1\r\nb = 2\rc = 3\fd = 4\n"})
    assert tree.files[0].text == "a = 1\nb = 2\nc = 3 d = 4\n"


# --- parsing --------------------------------------------------------------------------------------------
def test_kept_nodes_own_every_byte_once():
    src = "import os\n\nclass A:\n    def m(self):\n        x = helper(1)\n        return x\n"
    syn = parse_file(src)
    assert syn.kinds[:4] == ("module", "import_statement", "class_definition", "block")
    assert syn.kinds[4] == "function_definition" and syn.parent[4] == 3  # the class body holds the method
    assert "call" in syn.kinds and syn.calls == (("helper", syn.kinds.index("call")),)
    assert syn.definitions == (("A", 2), ("m", 4))
    covered = np.zeros(syn.size, dtype=int)
    for a, b in zip(syn.seg_start, syn.seg_end):
        covered[a:b] += 1
    assert (covered == 1).all()  # own-text pieces partition the file


# --- the graph ------------------------------------------------------------------------------------------
def test_graph_edges_of_a_two_file_package(tmp_path):
    repo = CodeRepository(walk_source_tree(write(tmp_path, {"pkg/a.py": A_PY, "pkg/b.py": B_PY})))
    edges = labelled_edges(repo)
    assert ("./", "pkg/", 0.3) in edges  # directory tree
    assert ("pkg/", "pkg/a.py", 0.3) in edges and ("pkg/", "pkg/b.py", 0.3) in edges
    assert ("pkg/a.py", "pkg/a.py:module@1", 1.0) in edges  # file node <-> syntax root
    assert ("pkg/a.py:function_definition@1", "pkg/a.py:module@1", 0.5) in edges  # syntax tree
    assert ("pkg/b.py:call@5", "pkg/b.py:return_statement@5", 0.5) in edges
    assert ("pkg/b.py:call@5", "pkg/a.py:function_definition@1", 0.8) in edges  # the call across files
    assert sum(1 for e in edges if e[2] == 0.8) == 1
    call, definition = node(repo, "pkg/b.py:call@5"), node(repo, "pkg/a.py:function_definition@1")
    D = max_product_paths(repo.graph, [call])
    assert D[0, definition] == pytest.approx(0.8)
    assert D[0, node(repo, "pkg/a.py")] == pytest.approx(0.8 * 0.5)  # call -> def -> module -> file (1.0)
    assert D[0, node(repo, "pkg/")] == pytest.approx(0.8 * 0.5 * 0.3)  # beats the way through b.py: .5^2 *.3


def test_call_resolution_local_first_and_fanout_cap():
    files = {"a.py": "def get():\n    pass\n\ndef use():\n    return get()\n",  # calls its own get
             "b.py": "def run():\n    return get()\n"}  # get is defined once elsewhere: linked
    for n in range(3):
        files[f"m{n}.py"] = "def get():\n    pass\n"
    repo = CodeRepository(tree_from_files(files))
    calls = {(e[0], e[1]) for e in labelled_edges(repo) if e[2] == 0.8}
    assert ("a.py:call@5", "a.py:function_definition@1") in calls
    assert not any(c == "a.py:call@5" and d != "a.py:function_definition@1" for c, d in calls)
    assert {d for c, d in calls if c == "b.py:call@2"} == {"a.py:function_definition@1", "m0.py:function_definition@1",
                                                          "m1.py:function_definition@1", "m2.py:function_definition@1"}
    capped = CodeRepository(tree_from_files(files), max_fanout=3)  # 4 definitions of get: too ambiguous
    assert not any(e[0] == "b.py:call@2" for e in labelled_edges(capped) if e[2] == 0.8)


# --- fragments -> nodes --------------------------------------------------------------------------------
def test_fragment_spans_are_non_whitespace_lengths_of_own_text():
    body = "".join(f"    v{i} = {i}\n" for i in range(21))
    text = "def f():\n" + body + "    x = helper(10)\n    return x\n"  # 24 lines: windows [0,10) [0,20) [10,24)
    repo = CodeRepository(tree_from_files({"m.py": text}))
    assert [(f.start, f.end) for f in repo.fragments] == [(0, 10), (0, 20), (10, 24)]
    for f in repo.fragments:  # every non-whitespace byte is counted once, for the node that owns it
        assert sum(length for _, length in repo.spans(f.index)) == len("".join(f.text.split()))
    last = dict((repo.node_label(n), length) for n, length in repo.spans(2))
    assert last["m.py:call@23"] == len("helper(10)")
    assert last["m.py:expression_statement@23"] == len("x=")
    assert last["m.py:return_statement@24"] == len("returnx")
    assert last["m.py:expression_statement@11"] == len("v9=9")
    assert "m.py:function_definition@1" not in last  # its header line is not in lines 11-24
    first = dict((repo.node_label(n), length) for n, length in repo.spans(0))
    assert first["m.py:function_definition@1"] == len("deff():")


# --- the bounded relation -------------------------------------------------------------------------------
def _package():
    big = "".join(f"    step{i} = {i}\n" for i in range(25))
    return tree_from_files({
        "pkg/a.py": "def helper(x):\n" + big + "    return x\n",
        "pkg/b.py": "from pkg.a import helper\n\n\ndef main():\n" + big + "    return helper(2)\n",
        "pkg/sub/c.py": "class K:\n    def m(self):\n        return helper(3)\n",
        "other/d.py": "def lonely():\n    return 0\n",
    })


@pytest.mark.parametrize("min_weight", [0.0, 0.01, 0.05, 0.2])
def test_subgraph_rows_equal_the_whole_graph(min_weight):
    repo = CodeRepository(_package())
    rows = [1, 4, 6]
    full = code_relation_rows(repo.graph, repo.fragment_nodes, rows=rows, min_weight=min_weight)
    mine, searched = relation_rows(repo, rows, min_weight=min_weight)
    assert mine == pytest.approx(full, abs=1e-12)
    if min_weight == 0.0:
        assert searched == repo.n_nodes  # exact: the whole (connected) graph
    if min_weight >= 0.2:
        assert searched < repo.n_nodes  # pruned: other/d.py is .3^3 away from pkg/


# --- FragRel changes the ranking ------------------------------------------------------------------------
FLIP = {
    "lib/geometry.py": "def align_widget(widget, grid):\n    offset = grid.step - widget.left\n"
                       "    return widget.moved(offset)\n",
    "lib/colors.py": "def paint(canvas):\n    # widget canvas layout widget canvas\n"
                     "    canvas.fill('widget layout')\n    return canvas\n",
    "app/screen.py": "from lib.geometry import align_widget\n\n\ndef layout(canvas, widget, grid):\n"
                     "    align_widget(widget, grid)\n    canvas.draw(widget)\n",
}


def test_code_relation_promotes_the_called_definition():
    repo = CodeRepository(tree_from_files(FLIP))
    screen, colors, geometry = 0, 1, 2  # one window per file, files sorted by path
    query = FLIP["app/screen.py"]
    plain = rank_code(repo, query, CodeSearchSettings(fragrel=False))
    rel = rank_code(repo, query, CodeSearchSettings(fragrel=True, alpha=0.5, min_weight=0.0))  # exact Eq. 8
    s = plain.s_ind
    assert s[screen] > s[colors] > s[geometry] > 0  # colors shares more words with the query
    assert plain.order.tolist() == [screen, colors, geometry]
    assert rel.order.tolist() == [screen, geometry, colors]  # the called definition moves up
    W = code_relation_rows(repo.graph, repo.fragment_nodes)  # the whole-graph Eq. 8, computed apart
    assert rel.s_rel == pytest.approx(s + 0.5 * dense_environment(W, s))
    assert W[geometry, screen] > 0.1 > 0.01 > W[colors, screen]
    no_calls = CodeRepository(tree_from_files(FLIP), max_fanout=0)  # the cross-file call edge is gone
    W0 = code_relation_rows(no_calls.graph, no_calls.fragment_nodes)
    assert W0[geometry, screen] < 0.01
    assert rank_code(no_calls, query, CodeSearchSettings()).order.tolist() == [screen, colors, geometry]


def test_only_top_m_candidates_are_rescored():
    repo = CodeRepository(tree_from_files(FLIP))
    r = rank_code(repo, FLIP["app/screen.py"], CodeSearchSettings(top_m=2))
    assert r.candidates.tolist() == [0, 1]
    assert np.isneginf(r.s_rel[2]) and r.order.tolist() == [0, 1, 2]  # geometry is not a candidate now


def test_search_settings_are_validated():
    for bad in ({"scorer": "dense"}, {"alpha": -1}, {"top_m": 0}, {"min_weight": 1.0}):
        with pytest.raises(ConfigError):
            CodeSearchSettings(**bad)
