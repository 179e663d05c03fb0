"""A source tree as FragRel's repository graph (Appendix A), with its RepoCoder fragments mapped onto it.

Nodes: one per directory holding source files (the root included), one per file, and the kept syntax nodes
of every file (:mod:`.code_parse`: statement-level nodes and calls). Edges, undirected, weights of Appendix A
(:data:`.code_graph.EDGE_WEIGHTS`):

* directory tree, 0.3: a directory to each subdirectory and to each of its files;
* file, 1.0: a file node to the syntax root of its file;
* syntax tree, 0.5: a kept syntax node to its nearest kept ancestor;
* call, 0.8: a call node to the definitions its callee name resolves to.

**Call resolution** (a name, not a type, is all a parser sees): the callee name is the called identifier
(``foo(...)``) or the last identifier of an attribute (``obj.attr.foo(...)``); other callees (``f()()``,
``x[0]()``) get no edge. The candidates are every ``def`` and ``class`` of that name in the repository. If
the calling file defines the name itself, the call links to those local definitions only; otherwise to every
definition of the name, provided there are at most ``max_fanout`` (default 5) of them. Names defined more
often (``__init__``, ``get``, ``run``...) get no call edge: an edge to each of hundreds of same-named methods
would relate everything to everything and make every Dijkstra search explore the whole repository.

Fragments are RepoCoder windows (:func:`..fragments.split_repository`, 20 lines, stride 10). A fragment
covers the kept nodes whose own text (:mod:`.code_parse`) falls inside its lines, each with a **length** = the
number of its non-whitespace UTF-8 bytes inside the fragment: the len_k of Eq. 8.

For a completion at line ``h`` of a file of the tree, :meth:`CodeRepository.view` hides what lies at or below
the hole, so nothing of the lines being completed reaches the ranking: the file's fragments that end after
line ``h`` are excluded, its syntax nodes that start at or after the hole are removed with their edges, and
call edges are resolved again without the removed definitions and calls.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ...errors import ConfigError
from ..fragments import Fragment, split_repository
from .code_files import SourceTree
from .code_graph import EDGE_WEIGHTS, CodeGraph, NodeSpans, cost_matrix
from .code_parse import FileSyntax, parse_file

_WS = np.zeros(256, dtype=bool)
_WS[[9, 10, 11, 12, 13, 32]] = True


@dataclass(frozen=True, eq=False)
class GraphView:
    """The graph as one query may see it: the edge list, its cost matrix, and the fragments it may not use."""

    u: np.ndarray
    v: np.ndarray
    w: np.ndarray
    excluded: np.ndarray  # bool per fragment
    n_nodes: int
    removed_nodes: int = 0  # syntax nodes hidden below a hole

    @cached_property
    def cost(self):
        """Symmetric sparse -log(w) (:func:`.code_graph.cost_matrix`)."""
        return cost_matrix(self.n_nodes, self.u, self.v, self.w)


class CodeRepository:
    """Files, fragments, syntax and the repository graph of one source tree.

    ``fragments`` may be given (e.g. loaded from the store); they must be the tree's RepoCoder windows.
    """

    def __init__(self, tree: SourceTree, fragments: Sequence[Fragment] | None = None, window: int = 20,
                 stride: int = 10, max_fanout: int = 5):
        if max_fanout < 0:
            raise ConfigError("max_fanout must be >= 0")
        self.tree = tree
        self.max_fanout = max_fanout
        self.fragments = (list(fragments) if fragments is not None
                          else split_repository(((f.path, f.text) for f in tree.files), window, stride))
        self.syntax: list[FileSyntax] = [parse_file(f.text, f.language) for f in tree.files]
        self.file_index = {f.path: i for i, f in enumerate(tree.files)}
        self._number_nodes()
        self._static_edges()
        self._map_fragments()

    # --- nodes and edges -------------------------------------------------------------------------------
    def _number_nodes(self) -> None:
        dirs = {""}
        for f in self.tree.files:
            parts = f.path.split("/")[:-1]
            dirs.update("/".join(parts[:k]) for k in range(1, len(parts) + 1))
        self.directories = sorted(dirs)
        self.dir_node = {d: i for i, d in enumerate(self.directories)}
        n_files = len(self.tree.files)
        self.file_node = np.arange(len(self.directories), len(self.directories) + n_files, dtype=np.int64)
        sizes = np.array([len(s) for s in self.syntax], dtype=np.int64)
        self.syntax_offset = len(self.directories) + n_files + np.concatenate([[0], np.cumsum(sizes)[:-1]])
        self.n_nodes = int(len(self.directories) + n_files + sizes.sum())

    def node_label(self, node: int) -> str:
        """A readable name: ``dir/``, ``file.py`` or ``file.py:kind@line`` (for debugging and tests)."""
        if node < len(self.directories):
            return (self.directories[node] or ".") + "/"
        n_files = len(self.tree.files)
        if node < len(self.directories) + n_files:
            return self.tree.files[node - len(self.directories)].path
        f = int(np.searchsorted(self.syntax_offset, node, side="right")) - 1
        local = node - int(self.syntax_offset[f])
        src = self.tree.files[f].text.encode("utf-8")
        line = src[: int(self.syntax[f].start[local])].count(b"\n") + 1
        return f"{self.tree.files[f].path}:{self.syntax[f].kinds[local]}@{line}"

    def _static_edges(self) -> None:
        u: list[np.ndarray] = []
        v: list[np.ndarray] = []
        w: list[np.ndarray] = []

        def add(a, b, kind: str) -> None:
            a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
            u.append(a)
            v.append(b)
            w.append(np.full(len(a), EDGE_WEIGHTS[kind]))

        subdirs = [d for d in self.directories if d]
        add([self.dir_node[d.rpartition("/")[0]] for d in subdirs], [self.dir_node[d] for d in subdirs],
            "directory")
        add([self.dir_node[f.path.rpartition("/")[0]] for f in self.tree.files], self.file_node, "directory")
        add(self.file_node, self.syntax_offset, "file")  # local node 0 is the syntax root
        for f, syn in enumerate(self.syntax):
            child = np.flatnonzero(syn.parent >= 0)
            add(child + self.syntax_offset[f], syn.parent[child] + self.syntax_offset[f], "syntax")
        self._u, self._v, self._w = np.concatenate(u), np.concatenate(v), np.concatenate(w)
        self._definitions: dict[str, list[tuple[int, int]]] = defaultdict(list)  # name -> [(file, node)]
        for f, syn in enumerate(self.syntax):
            for name, local in syn.definitions:
                self._definitions[name].append((f, int(self.syntax_offset[f]) + local))

    def call_edges(self, removed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(call node, definition node) pairs by the resolution rule of the module docstring, without the
        definitions and calls flagged in ``removed`` (bool per node)."""
        defs = self._definitions
        if removed is not None:
            defs = {name: [d for d in found if not removed[d[1]]] for name, found in defs.items()}
        calls, targets = [], []
        for f, syn in enumerate(self.syntax):
            base = int(self.syntax_offset[f])
            for name, local in syn.calls:
                node = base + local
                if removed is not None and removed[node]:
                    continue
                found = defs.get(name)
                if not found:
                    continue
                here = [d for fd, d in found if fd == f]
                chosen = here or ([d for _, d in found] if len(found) <= self.max_fanout else [])
                calls.extend([node] * len(chosen))
                targets.extend(chosen)
        return np.array(calls, dtype=np.int64), np.array(targets, dtype=np.int64)

    def view(self, hole: tuple[str, int] | None = None) -> GraphView:
        """The graph for a query; ``hole = (path, line)`` (0-based line being completed) hides the hole and
        everything below it in that file (module docstring). Without a hole the full graph (cached)."""
        if hole is None or hole[0] not in self.file_index:  # nothing of the tree to hide
            if getattr(self, "_full_view", None) is None:
                cu, cv = self.call_edges()
                self._full_view = GraphView(np.concatenate([self._u, cu]), np.concatenate([self._v, cv]),
                                            np.concatenate([self._w, np.full(len(cu), EDGE_WEIGHTS["call"])]),
                                            np.zeros(len(self.fragments), dtype=bool), self.n_nodes)
            return self._full_view
        path, line = hole
        f = self.file_index[path]
        hole_byte = int(self.line_offsets(f)[min(max(line, 0), len(self.line_offsets(f)) - 1)])
        removed = np.zeros(self.n_nodes, dtype=bool)
        syn = self.syntax[f]
        local = np.flatnonzero(syn.start >= hole_byte)
        local = local[local > 0]  # the syntax root stays: the file exists above the hole
        removed[local + self.syntax_offset[f]] = True
        keep = ~(removed[self._u] | removed[self._v])
        cu, cv = self.call_edges(removed)
        excluded = np.array([fr.source == path and fr.end > line for fr in self.fragments], dtype=bool)
        return GraphView(np.concatenate([self._u[keep], cu]), np.concatenate([self._v[keep], cv]),
                         np.concatenate([self._w[keep], np.full(len(cu), EDGE_WEIGHTS["call"])]),
                         excluded, self.n_nodes, int(removed.sum()))

    @property
    def graph(self) -> CodeGraph:
        """The full repository graph as a :class:`.code_graph.CodeGraph` (plain tuples: for small trees/tests)."""
        v = self.view()
        return CodeGraph.from_arrays(self.n_nodes, v.u, v.v, v.w)

    # --- fragments -> nodes ---------------------------------------------------------------------------
    def line_offsets(self, f: int) -> np.ndarray:
        """Byte offset of every line start of file ``f``, and the file's size last."""
        cache = self.__dict__.setdefault("_offsets", {})
        if f not in cache:
            src = self.tree.files[f].text.encode("utf-8")
            starts = np.flatnonzero(np.frombuffer(src, dtype=np.uint8) == 10) + 1
            cache[f] = np.concatenate([[0], starts[starts < len(src)], [len(src)]]).astype(np.int64)
        return cache[f]

    def _map_fragments(self) -> None:
        by_file: dict[str, list[Fragment]] = defaultdict(list)
        for fr in self.fragments:
            if fr.source not in self.file_index:
                raise ConfigError(f"fragment {fr.index} names {fr.source!r}, not a file of this tree")
            by_file[fr.source].append(fr)
        ptr_parts: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for path, frs in by_file.items():
            f = self.file_index[path]
            syn = self.syntax[f]
            src = np.frombuffer(self.tree.files[f].text.encode("utf-8"), dtype=np.uint8)
            prefix = np.concatenate([[0], np.cumsum(~_WS[src])]).astype(np.int64)
            off = self.line_offsets(f)
            fa = off[np.minimum([fr.start for fr in frs], len(off) - 1)]
            fb = off[np.minimum([fr.end for fr in frs], len(off) - 1)]
            i0 = np.searchsorted(syn.seg_end, fa, side="right")
            i1 = np.searchsorted(syn.seg_start, fb, side="left")
            counts = np.maximum(i1 - i0, 0)
            which = np.repeat(np.arange(len(frs)), counts)
            seg = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts) + np.repeat(i0, counts)
            a = np.maximum(syn.seg_start[seg], fa[which])
            b = np.minimum(syn.seg_end[seg], fb[which])
            length = prefix[b] - prefix[a]
            ok = length > 0
            key = which[ok] * len(syn) + syn.seg_node[seg[ok]]
            uniq, inverse = np.unique(key, return_inverse=True)
            sums = np.bincount(inverse, weights=length[ok])
            frag_of, node_of = uniq // len(syn), uniq % len(syn) + self.syntax_offset[f]
            for k, fr in enumerate(frs):
                lo, hi = np.searchsorted(frag_of, [k, k + 1])
                ptr_parts[fr.index] = (node_of[lo:hi], sums[lo:hi])
        if sorted(ptr_parts) != list(range(len(self.fragments))):
            raise ConfigError("fragment indices must be 0..N-1 in order")
        lengths = [len(ptr_parts[i][0]) for i in range(len(self.fragments))]
        self.span_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        self.span_node = (np.concatenate([ptr_parts[i][0] for i in range(len(self.fragments))]).astype(np.int64)
                          if self.fragments else np.zeros(0, dtype=np.int64))
        self.span_len = (np.concatenate([ptr_parts[i][1] for i in range(len(self.fragments))])
                         if self.fragments else np.zeros(0))

    def spans(self, fragment: int) -> NodeSpans:
        """(graph node, text length) of every node fragment ``fragment`` covers."""
        lo, hi = self.span_ptr[fragment], self.span_ptr[fragment + 1]
        return list(zip(self.span_node[lo:hi].tolist(), self.span_len[lo:hi].tolist()))

    @property
    def fragment_nodes(self) -> list[NodeSpans]:
        """Every fragment's :meth:`spans`, the input of :func:`.code_graph.code_relation_rows`."""
        return [self.spans(i) for i in range(len(self.fragments))]

    def stats(self) -> dict[str, int]:
        v = self.view()
        return {"files": len(self.tree.files), "directories": len(self.directories), "nodes": self.n_nodes,
                "syntax_nodes": int(sum(len(s) for s in self.syntax)), "edges": len(v.u),
                "call_edges": int(len(v.u) - len(self._u)), "fragments": len(self.fragments),
                "spans": len(self.span_node)}
