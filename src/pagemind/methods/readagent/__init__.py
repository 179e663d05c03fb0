"""ReadAgent (Lee et al., ICML 2024): episode pagination, gist memory, parallel and sequential look-up.

Three methods share one memory (pages + gists) and differ only in their look-up mode (:mod:`.lookup`):
ReadAgent-P looks up several pages in one request, ReadAgent-S one page per step, and GistMem answers from the
gists alone (the paper's ablation).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar, TypeVar

from ...answering.evidence import Evidence
from ...answering.finish import Context, Reading
from ...answering.question import Question
from ...library import Library, shelves
from ...llm.usage import Trace
from ...text import Document, split_paragraphs
from ..base import About, Build, MemoryWriter, Reader
from .build import build_gist_memory
from .lookup import GistsOnly, LookUp, LookupMode, Parallel, Sequential, expand, fit_gists
from .memory import PRESETS, Gist, GistMemory, LookupOptions, Page, ParallelOptions, ReadAgentOptions
from .paginate import window_span

PAPER = "ReadAgent (Lee et al., ICML 2024)"
RO = TypeVar("RO", bound=ReadAgentOptions)


class ReadAgent(Reader[GistMemory, RO]):
    """The family: the gist memory (built once, shared by all three methods) and answering with the pages its
    look-up mode chose expanded. A method names its options and its :class:`LookupMode`; nothing else."""

    memory_kind = "readagent"
    unit = "page"
    # 2: a continued gist (gist_mode=continue) is checked against its page and must not repeat an earlier page's
    # gist. Only the continue-mode build changed, so separate-mode memories stay at version 1 (:meth:`builder`).
    builder_version = 2
    mode: ClassVar[LookupMode[Any]]

    def builder(self) -> int:
        return self.builder_version if self.options.gist_mode == "continue" else 1

    def _build(self, document: Document, writer: MemoryWriter, build: Build) -> None:
        build_gist_memory(document, writer, build, self.llm, self.options)

    def _assemble(self, document: Document, key: str | None, items: MemoryWriter | None) -> GistMemory:
        assert items is not None
        pages = tuple(Page(**p) for p in items.items("page"))
        gists = {g["page"]: Gist(**g) for g in items.items("gist")}
        return GistMemory(key, document.id, document.words, self.key_settings(), pages,
                          tuple(gists[p.index] for p in pages), self.memory_model())

    def _compose(self, library: Library, parts: list[GistMemory], trace: Trace) -> GistMemory:
        """The documents' pages and gists one after another, numbered on (``<Page 0>`` is the first document's first
        page); each document's first gist names it, so look-up can tell documents apart. Beyond the window, the
        overflow option (retrieval, hierarchy) works on the whole as on one long document."""
        pages: list[Page] = []
        gists: list[Gist] = []
        for member, part in zip(library.members, parts):
            for k, (page, gist) in enumerate(zip(part.pages, part.gists)):
                index = len(pages)
                pages.append(replace(page, index=index))
                gists.append(replace(gist, page=index, text=(f"[{member.name}] " if k == 0 else "") + gist.text))
        return GistMemory(None, library.id, library.words, self.key_settings(), tuple(pages), tuple(gists),
                          self.memory_model(), shelves=shelves(library, "page", [len(p.pages) for p in parts]))

    def _reuse(self, old: GistMemory, previous: Document, document: Document, writer: MemoryWriter) -> int:
        """A changed document's pages (and their gists) from its previous version, up to the first page whose
        pagination window — its paragraphs, the look-ahead one, the previous page shown — is not the same text in
        both: the model would be shown the same prompt, so its decision stands. Sequential pagination (the paper's)
        only; the build then resumes at the first changed page. An appended text keeps all its pages but the last."""
        if self.options.pagination != "sequential":
            return 0
        size = max(50, self.options.max_words // 2)  # as build_gist_memory splits
        before = split_paragraphs(previous.text, max_words=size)
        after = split_paragraphs(document.text, max_words=size)
        same = next((k for k, (a, b) in enumerate(zip(before, after)) if a != b), min(len(before), len(after)))
        kept: list[tuple[Page, Gist]] = []
        for page, gist in zip(old.pages, old.gists):
            window_end = window_span(after, page.start, self.options, len(after))[0]
            if page.end > same or window_end >= same or page.label_source not in ("llm", "fallback"):
                break  # the window reaches changed (or new) text, or the text's end decided the page
            kept.append((page, gist))
        writer.put_many("page", [(p.index, p.__dict__) for p, _ in kept])
        if self.options.gist_mode == "separate":  # a gist of its page alone (continue mode's follows its turn)
            writer.put_many("gist", [(g.page, g.__dict__) for _, g in kept])
        return len(kept)

    def describe(self, memory: GistMemory) -> dict[str, Any]:
        return {
            "pages": len(memory.pages),
            "document_words": memory.document_words,
            "gist_words": memory.gist_words,
            "compression_rate": round(memory.compression_rate, 2),
            "fallback_pages": sum(p.label_source == "fallback" for p in memory.pages),
            "fallback_gists": sum(g.source == "fallback" for g in memory.gists),
        }

    def units(self, memory: GistMemory) -> list[Evidence]:
        """The pages (a retriever ranks their text; ReadAgent's own look-up, an LLM call, is the answer's)."""
        return [Evidence("page", p.index, p.text, "page") for p in memory.pages]

    def _answer(self, memory: GistMemory, question: Question, context: Context) -> Reading:
        context.phase("looking up pages")
        found: dict[str, Any] = {}  # what a look-up beyond the window did (overflow=hierarchical)
        writer = MemoryWriter(self.store, memory.key) if memory.key is not None else None
        view = fit_gists(memory, question, self.llm, self.options, context, self.mode, writer, found)
        looked: LookUp = self.mode.look_up(view, question, self.llm, self.options, context)
        expanded = expand(view, question, self.llm, self.options, context, looked)
        reply = self._reply(question, expanded.request, context)
        details: dict[str, Any] = {"requested_pages": list(looked.pages), "pages": len(memory.pages),
                                   "expand": "follow-up" if expanded.follow_up else "in-place", **found}
        if view is not memory:
            details["gists_shown"] = [p.index for p in view.pages]
        return Reading(reply.text, reply.choice, list(expanded.kept),
                       max(len(expanded.text.split()), view.gist_words), memory.document_words, details,
                       evidence(view, expanded.kept))


def evidence(view: GistMemory, expanded: tuple[int, ...]) -> list[Evidence]:
    """What the answer was given: the expanded pages, then the pages it saw as gists (their sentences count less;
    GistMem's, which saw only gists, count fully)."""
    read = set(expanded)
    gist_weight = 0.6 if read else 1.0
    return ([Evidence("page", p.index, p.text, "page") for p in view.pages if p.index in read]
            + [Evidence("page", p.index, p.text, "gist", gist_weight) for p in view.pages if p.index not in read])


class ReadAgentP(ReadAgent[ParallelOptions]):
    name = "readagent-p"
    about = About("ReadAgent-P", "gist memory; look up several pages in one request, then answer (paper §3.2)",
                  PAPER)
    Options = ParallelOptions
    mode = Parallel()


class ReadAgentS(ReadAgent[LookupOptions]):
    name = "readagent-s"
    about = About("ReadAgent-S", "gist memory; look up one page at a time, each step seeing the pages read so "
                                 "far (paper §3.2)", PAPER)
    Options = LookupOptions
    mode = Sequential()


class GistMem(ReadAgent[ReadAgentOptions]):
    name = "gistmem"
    about = About("GistMem", "answer from the gist memory alone, no look-up (the paper's ablation)", PAPER)
    Options = ReadAgentOptions
    mode = GistsOnly()


__all__ = ["PRESETS", "Gist", "GistMem", "GistMemory", "LookupOptions", "Page", "ParallelOptions", "ReadAgent",
           "ReadAgentOptions", "ReadAgentP", "ReadAgentS"]
