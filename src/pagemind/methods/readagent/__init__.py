"""ReadAgent (Lee et al., ICML 2024): episode pagination, gist memory, parallel and sequential look-up."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...llm.client import LLM
from ...llm.usage import Trace
from ...store import Store
from ...text import Document
from ..question import Answer, Question
from .build import Progress, build_memory, load_memory
from .lookup import answer_question
from .memory import PRESETS, Gist, GistMemory, Page, ReadAgentOptions

MODES = {"readagent-p": "parallel", "readagent-s": "sequential", "gistmem": "gists"}


class ReadAgent:
    """``build(document) -> GistMemory`` once; ``answer(memory, question)`` many times."""

    def __init__(self, llm: LLM, store: Store, options: ReadAgentOptions | None = None, mode: str = "readagent-p"):
        if mode not in MODES:
            raise ValueError(f"unknown ReadAgent mode {mode!r}")
        opts = options or ReadAgentOptions()
        # Grammar-constrained replies only where the backend enforces them; elsewhere the parsers work alone.
        self.options = replace(opts, constrained=opts.constrained and llm.backend.capabilities.supports_grammar)
        self.llm = llm
        self.store = store
        self.name = mode

    def build(self, document: Document, progress: Progress | None = None, trace: Trace | None = None) -> GistMemory:
        return build_memory(document, self.llm, self.store, self.options, trace=trace, progress=progress)

    def load(self, document: Document) -> GistMemory | None:
        return load_memory(document, self.llm, self.store, self.options)

    def answer(self, memory: GistMemory, question: Question) -> Answer:
        return answer_question(memory, question, self.llm, self.options, MODES[self.name])

    def describe(self, memory: GistMemory) -> dict[str, Any]:
        return {
            "pages": len(memory.pages),
            "document_words": memory.document_words,
            "gist_words": memory.gist_words,
            "compression_rate": round(memory.compression_rate, 2),
            "fallback_pages": sum(p.label_source == "fallback" for p in memory.pages),
            "fallback_gists": sum(g.source == "fallback" for g in memory.gists),
        }


__all__ = ["PRESETS", "Gist", "GistMemory", "Page", "ReadAgent", "ReadAgentOptions", "MODES"]
