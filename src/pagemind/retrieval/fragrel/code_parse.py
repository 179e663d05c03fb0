"""Parsing one source file with tree-sitter into the syntax part of FragRel's repository graph (Appendix A).

The paper's graph holds "all code parsing nodes (function definition, function body, assignment
expression, ...)". To keep a real repository's graph small, only **statement-level nodes** are kept
(for Python):

* the ``module`` (the syntax root, joined to its file node),
* definitions: ``function_definition``, ``class_definition``, ``decorated_definition``,
* ``block`` (a function, class or compound-statement body: the paper's "function body"),
* every statement kind (``*_statement``) and the clauses of compound statements (``elif``, ``else``,
  ``except``, ``finally``, ``case``),
* ``call`` expressions: the "function invoking nodes" that call edges start from.

Expressions, identifiers, parameters and so on are not nodes: their text counts towards the nearest kept
node that contains them. Kept nodes nest as in the syntax tree (a kept node's parent is its nearest kept
ancestor), and every byte of the file belongs to exactly one kept node, the innermost one that covers it
(its *own* text; the module owns what nothing else does, leading comments and blank lines included). Those
disjoint pieces are what FragRel's Eq. 8 calls the "non-overlapping graph nodes" of a fragment.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from ...errors import ConfigError

_CLAUSES = ("elif_clause", "else_clause", "except_clause", "except_group_clause", "finally_clause", "case_clause")
# rank among kept nodes with the same byte range, parent first: a block can span exactly one definition or
# statement (a class body holding one method), a statement exactly one call
_RANK = {"module": 0, "block": 1, "decorated_definition": 2, "function_definition": 3, "class_definition": 3,
         "call": 5}
_STATEMENT_RANK = 4


@dataclass(frozen=True)
class LanguageSpec:
    """What to keep of one tree-sitter grammar, and how definitions and calls are found."""

    name: str
    module: str  # the grammar package (a PyPI wheel with the compiled grammar)
    root: str
    definitions: str  # query: @def the definition node, @name its name
    calls: str  # query: @call the call node, @name the callee's name

    def keeps(self, kind: str) -> bool:
        return kind in _RANK or kind.endswith("_statement") or kind in _CLAUSES


PYTHON = LanguageSpec(
    name="python", module="tree_sitter_python", root="module",
    definitions="(function_definition name: (identifier) @name) @def "
                "(class_definition name: (identifier) @name) @def",
    # callee name: an identifier, or the last identifier of an attribute (obj.attr.name)
    calls="(call function: [(identifier) @name (attribute attribute: (identifier) @name)]) @call",
)
LANGUAGES = {"python": PYTHON}


@dataclass(frozen=True, eq=False)
class FileSyntax:
    """The kept syntax nodes of one file (node 0 is the root), in preorder.

    ``seg_*`` are the nodes' own text pieces: disjoint byte ranges, sorted, each owned by one node.
    ``definitions`` are ``(name, node)`` of function and class definitions; ``calls`` are
    ``(callee name, call node)``.
    """

    kinds: tuple[str, ...]
    parent: np.ndarray
    start: np.ndarray
    end: np.ndarray
    seg_start: np.ndarray
    seg_end: np.ndarray
    seg_node: np.ndarray
    definitions: tuple[tuple[str, int], ...]
    calls: tuple[tuple[str, int], ...]
    size: int  # bytes of the file (UTF-8)

    def __len__(self) -> int:
        return len(self.kinds)


class _Grammar:
    def __init__(self, spec: LanguageSpec):
        try:
            import tree_sitter as ts
        except ImportError:
            raise ConfigError("code retrieval needs tree-sitter: pip install 'pagemind[retrieval]'") from None
        try:
            grammar = __import__(spec.module)
        except ImportError:
            raise ConfigError(f"parsing {spec.name} needs the {spec.module.replace('_', '-')} package: "
                              "pip install 'pagemind[retrieval]'") from None
        self.spec = spec
        self.language = ts.Language(grammar.language())
        self.parser = ts.Parser(self.language)
        kinds = [self.language.node_kind_for_id(i) for i in range(self.language.node_kind_count)
                 if self.language.node_kind_is_named(i) and self.language.node_kind_is_visible(i)]
        kept = sorted({k for k in kinds if k is not None and spec.keeps(k)})
        self.kept = ts.QueryCursor(ts.Query(self.language, " ".join(f"({k}) @node" for k in kept)))
        self.definitions = ts.QueryCursor(ts.Query(self.language, spec.definitions))
        self.calls = ts.QueryCursor(ts.Query(self.language, spec.calls))


@cache
def grammar(language: str) -> Any:
    """The parser and queries of ``language`` (built once per process)."""
    if language not in LANGUAGES:
        raise ConfigError(f"no grammar for {language!r} (have: {', '.join(LANGUAGES)})")
    return _Grammar(LANGUAGES[language])


def _named(cursor: Any, root: Any) -> list[tuple[Any, str]]:
    """(node, name) for every match of a query with @def/@call and @name captures."""
    out = []
    for _, caps in cursor.matches(root):
        nodes = caps.get("def") or caps.get("call")
        names = caps.get("name")
        if nodes and names:
            out.append((nodes[0], names[0].text.decode("utf-8", "replace")))
    return out


def parse_file(text: str, language: str = "python") -> FileSyntax:
    """The kept nodes, their own text pieces, definitions and calls of one file's text."""
    g = grammar(language)
    src = text.encode("utf-8")
    tree = g.parser.parse(src)
    root = tree.root_node
    raw = []  # (start, end, rank, kind, node id)
    for node in g.kept.captures(root).get("node", []):
        kind = node.type
        if node.id == root.id or kind == g.spec.root:
            continue  # the root is added below with the whole file as its range
        s, e = node.start_byte, node.end_byte
        if e > s:
            raw.append((s, e, _RANK.get(kind, _STATEMENT_RANK), kind, node.id))
    raw.sort(key=lambda r: (r[0], -r[1], r[2]))
    n = len(raw) + 1
    kinds = [g.spec.root] + [r[3] for r in raw]
    start = np.array([0] + [r[0] for r in raw], dtype=np.int64)
    end = np.array([len(src)] + [r[1] for r in raw], dtype=np.int64)
    index_of = {r[4]: i + 1 for i, r in enumerate(raw)}
    parent = np.full(n, -1, dtype=np.int64)
    segs: list[tuple[int, int, int]] = []
    stack: list[list[int]] = [[0, 0]]  # [node, first byte not yet given to the node or a child]

    def close() -> None:
        node, cursor = stack.pop()
        if end[node] > cursor:
            segs.append((cursor, int(end[node]), node))
        if stack:
            stack[-1][1] = max(stack[-1][1], int(end[node]))

    for i in range(1, n):
        s = int(start[i])
        while len(stack) > 1 and end[stack[-1][0]] <= s:
            close()
        top = stack[-1]
        if s > top[1]:
            segs.append((top[1], s, top[0]))
        top[1] = max(top[1], s)
        parent[i] = top[0]
        stack.append([i, s])
    while stack:
        close()
    segs.sort()
    seg = np.array(segs, dtype=np.int64).reshape(-1, 3)
    definitions = tuple((name, index_of[node.id]) for node, name in _named(g.definitions, root)
                        if node.id in index_of)
    calls = tuple((name, index_of[node.id]) for node, name in _named(g.calls, root) if node.id in index_of)
    return FileSyntax(tuple(kinds), parent, start, end, seg[:, 0], seg[:, 1], seg[:, 2], definitions, calls,
                      len(src))
