"""ReadAgent (Lee et al., ICML 2024): episode pagination, gist memory, parallel and sequential look-up.

Three methods share one memory (pages + gists): ReadAgent-P looks up several pages in one request, ReadAgent-S
one page per step, and GistMem answers from the gists alone (the paper's ablation).
"""

from __future__ import annotations

from typing import Any, ClassVar

from ...text import Document
from ..base import About, Build, Context, MemoryWriter, Reader, Reading
from ..question import Question
from .build import build_gist_memory
from .lookup import answer_from, fit_gists, lookup_parallel, lookup_sequential
from .memory import PRESETS, Gist, GistMemory, LookupOptions, Page, ParallelOptions, ReadAgentOptions


PAPER = "ReadAgent (Lee et al., ICML 2024)"


CONTINUED_GIST_CHECKS = 2  # 2: a continued gist must be about its page and not repeat an earlier page's gist


class ReadAgent(Reader[GistMemory, Any]):
    """The family: the gist memory (built once, shared by all three look-up modes) and answering with the pages
    a look-up chose expanded; a mode implements only :meth:`_look_up`."""

    memory_kind = "readagent"
    unit = "page"
    Options: ClassVar[type[ReadAgentOptions]] = ReadAgentOptions

    def _build(self, document: Document, writer: MemoryWriter, build: Build) -> None:
        build_gist_memory(document, writer, build, self.llm, self.options)

    def memory_settings(self) -> dict[str, Any]:
        """The options that shape the memory; with continued gists also the version of their checks, so that a
        memory built before continued gists were checked against their page is built again."""
        settings = super().memory_settings()
        if self.options.gist_mode == "continue":
            settings["continued_gist_checks"] = CONTINUED_GIST_CHECKS
        return settings

    def _assemble(self, document: Document, key: str | None, items: MemoryWriter | None) -> GistMemory:
        assert items is not None
        pages = tuple(Page(**p) for p in items.items("page"))
        gists = {g["page"]: Gist(**g) for g in items.items("gist")}
        return GistMemory(key, document.id, document.words, self.memory_settings(), pages,
                          tuple(gists[p.index] for p in pages), self.llm.model_id)

    def describe(self, memory: GistMemory) -> dict[str, Any]:
        return {
            "pages": len(memory.pages),
            "document_words": memory.document_words,
            "gist_words": memory.gist_words,
            "compression_rate": round(memory.compression_rate, 2),
            "fallback_pages": sum(p.label_source == "fallback" for p in memory.pages),
            "fallback_gists": sum(g.source == "fallback" for g in memory.gists),
        }

    def _look_up(self, memory: GistMemory, question: Question, context: Context) -> tuple[list[int], tuple]:
        """The pages to expand, and the look-up conversation when the answer may follow it (GistMem: none)."""
        return [], ()

    mode = "gists"  # parallel | sequential | gists: which prompt shows every gist first

    def _answer(self, memory: GistMemory, question: Question, context: Context) -> Reading:
        context.phase("looking up pages")
        found: dict[str, Any] = {}  # what a look-up beyond the window did (overflow=hierarchical)
        writer = MemoryWriter(self.store, memory.key) if memory.key is not None else None
        view = fit_gists(memory, question, self.llm, self.options, context, self.mode, writer, found)
        pages, conversation = self._look_up(view, question, context)
        context.phase("answering")
        reply, kept, text, follow_up = answer_from(view, question, self.llm, self.options, context, pages,
                                                   conversation)
        details: dict[str, Any] = {"requested_pages": pages, "pages": len(memory.pages),
                                   "expand": "follow-up" if follow_up else "in-place", **found}
        if view is not memory:
            details["gists_shown"] = [p.index for p in view.pages]
        return Reading(reply.text, reply.choice, kept, max(len(text.split()), view.gist_words),
                       memory.document_words, details)


class ReadAgentP(ReadAgent):
    name = "readagent-p"
    about = About("ReadAgent-P", "gist memory; look up several pages in one request, then answer (paper §3.2)",
                  PAPER)
    Options = ParallelOptions
    mode = "parallel"

    def _look_up(self, memory: GistMemory, question: Question, context: Context) -> tuple[list[int], tuple]:
        return lookup_parallel(memory, question, self.llm, self.options, context)


class ReadAgentS(ReadAgent):
    name = "readagent-s"
    about = About("ReadAgent-S", "gist memory; look up one page at a time, each step seeing the pages read so "
                                 "far (paper §3.2)", PAPER)
    Options = LookupOptions
    mode = "sequential"

    def _look_up(self, memory: GistMemory, question: Question, context: Context) -> tuple[list[int], tuple]:
        return lookup_sequential(memory, question, self.llm, self.options, context), ()


class GistMem(ReadAgent):
    name = "gistmem"
    about = About("GistMem", "answer from the gist memory alone, no look-up (the paper's ablation)", PAPER)


__all__ = ["PRESETS", "Gist", "GistMem", "GistMemory", "LookupOptions", "Page", "ParallelOptions", "ReadAgent",
           "ReadAgentOptions", "ReadAgentP", "ReadAgentS"]
