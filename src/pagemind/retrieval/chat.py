"""Retrieval over a conversation history (FragRel's memory-enhanced chatbot setting, paper §4.3 / B.3).

One fragment per turn; the last ``recent`` turns are always included; older turns are scored against
the query (the paper: the last dialog turn plus the latest user prompt), FragRel's context relation uses
the turn order (w_rel = 0.8, alpha = 0.5 in the paper), and the retrieved turns are put back in time order.
Reusable by a MemGPT-style agent and by evaluation harnesses: add turns as they happen, retrieve per reply.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable

import numpy as np

from .cache import EmbeddingCache, MemoryCache
from .embed import CachedEmbedder, Embedder, load_embedder
from .fragments import Fragment
from .index import FragmentIndex, RetrievalSettings
from .select import fit

CHAT_SETTINGS = RetrievalSettings(scorer="dense", fragrel=True, relation="context", w_rel=0.8, alpha=0.5)


@dataclass(frozen=True)
class Turn:
    """One message of the conversation; ``index`` is its place in time (0 = first)."""

    index: int
    speaker: str
    text: str
    time: float | None = None

    def render(self) -> str:
        return f"{self.speaker}: {self.text}" if self.speaker else self.text


@dataclass(frozen=True)
class ChatContext:
    """What to show the model: retrieved older turns and the recent turns, each in time order."""

    retrieved: tuple[Turn, ...]
    recent: tuple[Turn, ...]
    scores: dict[int, float] = field(default_factory=dict)  # turn index -> the score it was ranked by

    @property
    def turns(self) -> tuple[Turn, ...]:
        return self.retrieved + self.recent

    def text(self, separator: str = "\n") -> str:
        return separator.join(t.render() for t in self.turns)


class ChatRetriever:
    """``add`` turns as they happen; ``retrieve(query)`` returns the context for the next reply.

    Args:
        settings: scorer and FragRel settings (default: dense + context relation, w_rel 0.8, alpha 0.5).
        embedder: for dense/hybrid scoring (default: MiniLM, from the ``retrieval`` extra).
        store: a pagemind Store to cache turn embeddings in (default: an in-memory cache).
        recent: how many last turns are always included.
        top_k: how many older turns to retrieve (the paper: 8).
        count_tokens, budget: optional token counter and budget for the whole context text.
    """

    def __init__(self, settings: RetrievalSettings = CHAT_SETTINGS, embedder: Embedder | None = None,
                 store: Any = None, recent: int = 2, top_k: int = 8,
                 count_tokens: Callable[[str], int] | None = None, budget: int | None = None):
        self.settings = settings
        self.recent = max(0, recent)
        self.top_k = top_k
        self.count_tokens = count_tokens
        self.budget = budget
        self.turns: list[Turn] = []
        self._embedder = None
        if settings.needs_embedder:
            inner = embedder or load_embedder("minilm")
            self._embedder = CachedEmbedder(inner, EmbeddingCache(store) if store is not None else MemoryCache())
        self._index: FragmentIndex | None = None
        self._indexed: list[Turn] = []

    def add(self, speaker: str, text: str, time: float | None = None) -> Turn:
        turn = Turn(len(self.turns), speaker, text, time)
        self.turns.append(turn)
        self._index = None
        return turn

    def extend(self, turns: Iterable[tuple[str, str]]) -> None:
        for speaker, text in turns:
            self.add(speaker, text)

    def _searchable(self) -> FragmentIndex:
        if self._index is None:
            self._indexed = [t for t in self.turns if t.text.strip()]  # empty turns carry nothing to match
            fragments = [Fragment(k, t.render(), t.index, "", t.index, t.index + 1, "turns")
                         for k, t in enumerate(self._indexed)]
            self._index = FragmentIndex(fragments, self.settings, self._embedder)
        return self._index

    def rank(self, query: str) -> list[tuple[Turn, float]]:
        """Every older (non-recent) non-empty turn with its score, best first."""
        older = len(self.turns) - self.recent
        index = self._searchable()
        candidates = np.array([k for k, t in enumerate(self._indexed) if t.index < older], dtype=np.int64)
        if not len(candidates):
            return []
        ranking = index.rank(query, candidates=candidates if self.settings.fragrel else None)
        scores = ranking.scores
        order = [int(k) for k in ranking.order if self._indexed[int(k)].index < older]
        return [(self._indexed[k], float(scores[k])) for k in order]

    def retrieve(self, query: str, top_k: int | None = None, budget: int | None = None) -> ChatContext:
        """The recent turns plus the ``top_k`` best older turns that fit the budget, all in time order."""
        top_k = self.top_k if top_k is None else top_k
        budget = self.budget if budget is None else budget
        recent = tuple(self.turns[len(self.turns) - self.recent:]) if self.recent else ()
        ranked = self.rank(query)
        by_index = {t.index: t for t, _ in ranked}
        fragments = [Fragment(t.index, t.render(), t.index, "", t.index, t.index + 1, "turns") for t, _ in ranked]

        def render(chosen: list[Fragment]) -> str:
            return ChatContext(tuple(sorted((by_index[f.index] for f in chosen), key=lambda t: t.index)), recent).text()

        def fits(text: str) -> bool:
            return budget is None or self.count_tokens is None or self.count_tokens(text) <= budget

        chosen = fit(fragments, fits, order="position", top_k=top_k, render=render)
        retrieved = tuple(by_index[f.index] for f in chosen.fragments)
        scores = {t.index: s for t, s in ranked if t.index in {r.index for r in retrieved}}
        return ChatContext(retrieved, recent, scores)

    def with_settings(self, **changes: Any) -> "ChatRetriever":
        """The same history under other settings (shares the embedder and its cache)."""
        other = ChatRetriever.__new__(ChatRetriever)
        other.__dict__.update(self.__dict__)
        other.settings = replace(self.settings, **changes)
        other.turns = list(self.turns)
        other._index = None
        if other.settings.needs_embedder and other._embedder is None:
            other._embedder = CachedEmbedder(load_embedder("minilm"), MemoryCache())
        return other
