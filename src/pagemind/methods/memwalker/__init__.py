"""MemWalker (Chen et al., 2023, arXiv:2310.05029): a tree of summaries, navigated by the LLM per question."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ...answering.evidence import Evidence
from ...answering.finish import Context, Reading
from ...answering.question import Question
from ...errors import ConfigError, InputError
from ...library import Library, shelves
from ...llm.usage import Trace
from ...text import Document
from ..base import About, Build, MemoryWriter, Reader
from .build import build_tree, compose_trees, node_limit, plan_tree
from .memory import PRESETS, MemoryTree, MemWalkerOptions, TreeNode
from .navigate import NO_ANSWER, Walk
from .segment import segment_text
from .trajectory import NavigationStep, format_walk

if TYPE_CHECKING:
    from ...llm.client import LLM
    from ...retrieval.embed import Embedder
    from ...retrieval.index import FragmentIndex
    from ...store import SQLStore


class MemWalker(Reader[MemoryTree, MemWalkerOptions]):
    """``build(document) -> MemoryTree`` once; ``answer(tree, question)`` navigates it per question."""

    name = "memwalker"
    about = About("MemWalker", "a tree of summaries navigated with reasoning, revert and working memory (paper §3)",
                  "MemWalker (Chen et al., 2023)")
    Options = MemWalkerOptions
    memory_kind = "memwalker"
    unit = "leaf"
    # 2: a tree of sections keeps a table's rows as lines and a leaf carries its table's head (the paper's tree is
    # built as before)
    builder_version = 2

    def builder(self) -> int:
        return self.builder_version if self.options.tree == "sections" else 1

    def __init__(self, llm: LLM, store: SQLStore, options: MemWalkerOptions | None = None,
                 embedder: Embedder | None = None, **given: Any) -> None:
        super().__init__(llm, store, options, **given)
        self._embedder = embedder  # guide=hybrid: MiniLM unless given

    def check(self) -> None:
        """A segment plus its summary reply must fit the model's window."""
        need = self.options.segment_tokens + self.node_limit + 64
        if need > self.llm.context_window:
            raise ConfigError(f"MemWalker segments of {self.options.segment_tokens} tokens do not fit "
                              f"{self.llm.model_id}'s {self.llm.context_window}-token window with their summaries; "
                              "lower --segment-tokens")

    @property
    def node_limit(self) -> int:
        return node_limit(self.options, self.llm.context_window)

    def memory_settings(self) -> dict[str, Any]:
        """The sizes and the effective node limit (it depends on the model's window)."""
        return {**self.options.memory_settings(), "node_limit": self.node_limit}

    @property
    def builds_with_llm(self) -> bool:
        """A titles-only tree of sections is built without an LLM call (a retriever may build it)."""
        return not (self.options.tree == "sections" and self.options.summaries == "titles")

    def memory_model(self) -> str:
        """The model's identity even for a titles-only tree: its sizes are counted in the model's tokens."""
        return self.llm.model_identity

    def _build(self, document: Document, writer: MemoryWriter, build: Build) -> None:
        if self.options.tree == "sections" and not document.sections:  # never an LLM tree build it was not asked for
            raise InputError(f"{document.name} has no sections (no outline, headings, contents page or filing Items): "
                             "tree=sections needs them; use tree=paper (the paper's tree, summarised by the LLM) or "
                             "another method (op-rag)")
        if self.options.tree == "sections":
            from .sections import build_section_tree

            build_section_tree(document, writer, build, self.llm, self.options, self.node_limit)
            return
        build_tree(document, writer, build, self.llm, self.options, self.node_limit)

    def _reuse(self, old: MemoryTree, previous: Document, document: Document, writer: MemoryWriter) -> int:
        """A changed document's leaves from its previous version where the segment is the same text at the same
        place (its summary would be asked of the same prompt); every parent is made again from its children (a
        parent's compression is an LLM call only when its children's summaries exceed the node limit). A tree of
        sections is planned anew (its leaves are the sections' own text, no LLM call)."""
        if self.options.tree == "sections":
            return 0
        segments = segment_text(document.text, self.options.segment_tokens, self.llm.count_tokens)
        slots = plan_tree(len(segments), self.options.max_children)  # the new tree's shape: a leaf's id may move
        kept = [replace(n, id=slots[n.index].id) for n in old.leaves
                if n.index < len(segments) and segments[n.index] == n.text]
        writer.put_many("node", [(n.index, n.as_dict()) for n in kept])
        return len(kept)

    def _compose(self, library: Library, parts: list[MemoryTree], trace: Trace) -> MemoryTree:
        """Each document's tree under a library-level tree of summaries, navigated from the library's root (revert
        and working memory work across documents as within one)."""
        nodes = compose_trees([m.name for m in library.members], [list(p.nodes) for p in parts], self.node_limit,
                              self.options.max_children, self.llm, trace)
        return MemoryTree(None, library.id, library.words, self.key_settings(), tuple(nodes), self.memory_model(),
                          shelves=shelves(library, "leaf", [len(p.leaves) for p in parts]))

    def _assemble(self, document: Document, key: str | None, items: MemoryWriter | None) -> MemoryTree:
        assert key is not None and items is not None
        nodes = sorted((TreeNode.from_dict(d) for d in items.items("node")), key=lambda n: n.index)
        return MemoryTree(key, document.id, document.words, self.key_settings(), tuple(nodes),
                          self.memory_model())

    def describe(self, memory: MemoryTree) -> dict[str, Any]:
        return {
            "depth": memory.depth,
            "nodes": len(memory.nodes),
            "leaves": len(memory.leaves),
            "document_words": memory.document_words,
            "document_tokens": memory.document_tokens,
            "compressed_nodes": sum(n.compressed for n in memory.nodes),
            "root_summary_tokens": memory.root.summary_tokens,
            "segment_tokens": memory.settings["segment_tokens"],
            "max_children": memory.settings["max_children"],
            "node_limit": memory.settings["node_limit"],
        }

    def units(self, memory: MemoryTree) -> list[Evidence]:
        """The leaves (a retriever ranks their text; navigating the tree, LLM calls, is the answer's)."""
        return [Evidence("leaf", n.index, n.text, "leaf", head=n.head) for n in memory.leaves]

    def embeds(self) -> bool:
        return self.options.guide == "hybrid"

    def passage_index(self, memory: MemoryTree) -> FragmentIndex:
        """BM25 over the leaves; with ``guide=hybrid`` BM25 and MiniLM scores mixed, as ``auto`` ranks a PDF's
        fragments (the leaves' vectors kept in the store's embedding cache): what a guided walk ranks children by
        and ``retrieve`` returns."""
        if self.options.guide != "hybrid":
            return super().passage_index(memory)
        from ...retrieval.index import FragmentIndex, RetrievalSettings

        settings = RetrievalSettings(scorer="hybrid", fusion="mix")
        return self.keyed_index(memory, lambda encoder: FragmentIndex(self.passage_fragments(memory), settings,
                                                                      encoder), "minilm")

    def ordered(self, memory: MemoryTree, query: str, order: Any) -> list[int]:
        """The ranking, with the leaves of a section the question names ("the cash flow statement", "Item 7") first,
        as RAG's ``named_sections`` does; a tree of sections labels each leaf with its sections' titles."""
        from ...retrieval.named import named_first

        ranked = [int(i) for i in order]
        return named_first(ranked, section_labels(memory), query) if memory.settings.get("tree") == "sections" \
            else ranked

    def guide_scores(self, memory: MemoryTree, query: str) -> list[float]:
        """Each leaf's place in :meth:`rank` as a score (the first highest): what a guided walk ranks children by."""
        ranked = self.rank(memory, query)
        place = {evidence.index: len(ranked) - n for n, (evidence, _) in enumerate(ranked)}
        return [float(place.get(leaf.index, 0)) for leaf in memory.leaves]

    def _answer(self, memory: MemoryTree, question: Question, context: Context) -> Reading:
        context.phase("walking the tree")
        scores = (lambda: self.guide_scores(memory, question.text)) if self.options.guide != "none" else None
        return Walk(memory, question, self.llm, self.options, context, leaf_scores=scores).reading()


def section_labels(tree: MemoryTree) -> list[tuple[str, ...]]:
    """Each leaf's section label for :func:`~pagemind.retrieval.named.named_first`: the section path its summary names
    ("§Item 8 › Consolidated Statements of Cash Flows"), as a RAG fragment's is — a section that fits one segment is
    its leaf, which names it."""
    from .sections import leaf_path

    return [(path,) if (path := leaf_path(leaf.summary)) else () for leaf in tree.leaves]


__all__ = ["NO_ANSWER", "PRESETS", "MemWalker", "MemWalkerOptions", "MemoryTree", "NavigationStep", "TreeNode",
           "format_walk"]
