"""Documents into archival storage (the paper's document analysis): passages of about 300 words, or
ReadAgent's pages with their gists as passage summaries."""

from __future__ import annotations

from dataclasses import dataclass

from ..library import Library
from ..llm.usage import Trace
from ..text import Document, split_paragraphs
from .context import prompt
from .core import Agent

PASSAGE_WORDS = 300  # Letta's embedding_chunk_size default


@dataclass(frozen=True)
class LoadedDocument:
    name: str
    words: int
    passages: int
    gists: bool
    passage_ids: tuple[int, ...]


def passages(text: str, words: int = PASSAGE_WORDS) -> list[str]:
    """Paragraphs packed into passages of at most ``words`` words (long paragraphs split at sentences)."""
    out: list[list[str]] = [[]]
    used = 0
    for para in split_paragraphs(text, max_words=words):
        n = len(para.split())
        if used + n > words and out[-1]:
            out.append([])
            used = 0
        out[-1].append(para)
        used += n
    return ["\n\n".join(p) for p in out if p]


def load_into_agent(agent: Agent, document: Document, *, words: int = PASSAGE_WORDS, gists: bool = False,
                  trace: Trace | None = None) -> LoadedDocument:
    """Insert ``document`` into the agent's archival storage and tell the agent with a system alert."""
    summaries: list[str | None] | None = None
    if gists:
        from ..methods.readagent import GistMem

        reader = GistMem(agent.llm, agent.store.store, preset="quality")
        memory = reader.build(document, trace=trace)
        texts = [p.text for p in memory.pages]
        by_page = {g.page: g.text for g in memory.gists}
        summaries = [by_page.get(p.index) for p in memory.pages]
    else:
        texts = passages(document.text, words)
    ids = agent.archive.insert(texts, agent.now(), summaries, source=document.name)
    agent.notify(prompt("document", name=document.name, words=document.words, passages=len(ids)))
    return LoadedDocument(document.name, document.words, len(ids), gists, tuple(ids))


def load_library_into_agent(agent: Agent, library: Library, *, words: int = PASSAGE_WORDS, gists: bool = False,
                            trace: Trace | None = None) -> list[LoadedDocument]:
    """Insert every document of a library into the agent's archival storage, each passage with its document's name
    as its source (archival search shows it, and the agent's citations name it): MemGPT's document analysis over a
    collection."""
    return [load_into_agent(agent, member, words=words, gists=gists, trace=trace) for member in library.members]
