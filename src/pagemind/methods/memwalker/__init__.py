"""MemWalker (Chen et al., 2023, arXiv:2310.05029): a tree of summaries, navigated by the LLM per question."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...llm.client import LLM
from ...llm.usage import Trace
from ...store import Store
from ...text import Document
from ..question import Answer, Question
from .build import Progress, build_tree, check_window, load_tree
from .memory import PRESETS, MemoryTree, MemWalkerOptions, TreeNode
from .navigate import NO_ANSWER, answer_question
from .trajectory import Step, format_walk


class MemWalker:
    """``build(document) -> MemoryTree`` once; ``answer(tree, question)`` many times."""

    name = "memwalker"

    def __init__(self, llm: LLM, store: Store, options: MemWalkerOptions | None = None):
        opts = options or MemWalkerOptions()
        # Grammar-constrained replies only where the backend enforces them; elsewhere the parsers work alone.
        self.options = replace(opts, constrained=opts.constrained and llm.backend.capabilities.supports_grammar)
        check_window(self.options, llm)
        self.llm = llm
        self.store = store

    def build(self, document: Document, progress: Progress | None = None, trace: Trace | None = None) -> MemoryTree:
        return build_tree(document, self.llm, self.store, self.options, trace=trace, progress=progress)

    def load(self, document: Document) -> MemoryTree | None:
        return load_tree(document, self.llm, self.store, self.options)

    def answer(self, memory: MemoryTree, question: Question) -> Answer:
        return answer_question(memory, question, self.llm, self.options)

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


__all__ = ["MemWalker", "MemWalkerOptions", "MemoryTree", "NO_ANSWER", "PRESETS", "Step", "TreeNode", "format_walk"]
