"""Archival storage: insert passages (embedded when an embedder is available) and search them, paginated.

Search modes: ``text`` (case-insensitive substring, the paper's nested-KV setting: UUIDs are out of
distribution for embedding models), ``semantic`` (cosine over the retrieval layer's embeddings) and
``hybrid`` (exact text matches first, then the semantic ranking). Without an embedding model (numpy,
onnxruntime or the MiniLM weights missing, or ``embedder="none"``) semantic ranking falls back to keyword
overlap scoring, and :meth:`Archive.describe` says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from ..errors import ConfigError
from ..limits import MAX_EMBEDDED, check_text
from ..text.words import keywords
from .memory import AgentOptions, Passage, SearchPage
from .store import AgentStore


@lru_cache(maxsize=4)
def resolve_embedder(name: str) -> Any | None:
    """The embedder for ``name`` (auto | minilm | hashing | none), or None when there is none to use."""
    if name == "none":
        return None
    try:
        from ..retrieval.embed import load_embedder
    except ImportError as err:  # numpy missing: the retrieval layer cannot run
        if name == "auto":
            return None
        raise ConfigError(f"embedder {name!r} needs the retrieval layer ({err})") from None
    if name == "auto":
        try:
            return load_embedder("minilm")
        except (ConfigError, ImportError):
            return None
    return load_embedder(name)


class Archive:
    """The archival storage of one agent."""

    def __init__(self, store: AgentStore, agent_id: int, options: AgentOptions, embedder: Any | None = "auto"):
        self.store = store
        self.agent_id = agent_id
        self.options = options
        self._embedder = embedder  # an Embedder, None, or "auto": resolve from options on first use

    @property
    def embedder(self) -> Any | None:
        if self._embedder == "auto":
            self._embedder = resolve_embedder(self.options.embedder)
        return self._embedder

    def describe(self) -> str:
        mode = self.options.archival_search
        if mode == "text":
            return "text search (case-insensitive substring)"
        if self.embedder is None:
            return f"{mode}: keyword-overlap ranking (no embedding model available)"
        return f"{mode}: embeddings from {self.embedder.model_id}"

    def _vectors(self, texts: Sequence[str]) -> list[bytes | None]:
        embedder = self.embedder
        if embedder is None or not texts:
            return [None] * len(texts)
        from ..retrieval.cache import EmbeddingCache
        from ..retrieval.embed import CachedEmbedder, fragment_vectors

        # passages go through the store's embedding cache: the same document loaded into another agent (or
        # into one agent per evaluation question) is embedded once
        cached = CachedEmbedder(embedder, EmbeddingCache(self.store.store))
        matrix = fragment_vectors(cached.embed(list(texts)))
        return [row.tobytes() for row in matrix]

    def insert(self, texts: Sequence[str], time: str | Sequence[str], summaries: Sequence[str | None] | None = None,
               source: str | Sequence[str | None] | None = None) -> list[int]:
        """Store passages; the embedding is taken of the summary (if any) plus the text (its first
        :data:`~pagemind.limits.MAX_EMBEDDED` characters). ``time`` and ``source``:
        one for all, or one per passage (an imported archive keeps each passage's own)."""
        for text in texts:  # every surface's passages end here: one bound, and the embedding's work with it
            check_text("passage", text)
        summaries = list(summaries) if summaries is not None else [None] * len(texts)
        times = [time] * len(texts) if isinstance(time, str) else list(time)
        sources = [source] * len(texts) if source is None or isinstance(source, str) else list(source)
        # a passage's vector is taken of its beginning (at most MAX_EMBEDDED characters): the work one request causes
        # stays bounded (a 100,000-character passage took 16 s of CPU to embed whole); text search reads it all
        vectors = self._vectors([(f"{s}\n{t}" if s else t)[:MAX_EMBEDDED] for t, s in zip(texts, summaries)])
        model = self.embedder.model_id if self.embedder is not None else None
        rows = [(t, s, src, v, model if v is not None else None, when)
                for t, s, src, v, when in zip(texts, summaries, sources, vectors, times)]
        return self.store.insert_passages(self.agent_id, rows)

    def search(self, query: str, page: int) -> SearchPage:
        total, found = self.search_passages(query, page)
        return SearchPage(tuple(p.describe() for p in found), total, page, self.options.page_size)

    def search_passages(self, query: str, page: int) -> tuple[int, list[Passage]]:
        """(how many passages match, the passages of page ``page``) of a search, as :meth:`search` shows them."""
        size = self.options.page_size
        if self.options.archival_search == "text":
            return self.store.search_passages_text(self.agent_id, query, page * size, size)
        total, ranked = self.ranked(query, (page + 1) * size)
        ids = ranked[page * size:(page + 1) * size]
        return total, self.store.passages(self.agent_id, ids)

    def rank(self, query: str) -> list[int]:
        """Passage ids best first: exact matches first in hybrid mode, then semantic (or keyword) order."""
        return self.ranked(query)[1]

    def ranked(self, query: str, limit: int | None = None) -> tuple[int, list[int]]:
        """(how many passages rank, the first ``limit`` of them best first); in semantic mode the store finds only
        those (a Postgres store with its vector index), in hybrid mode the whole order is needed for the total."""
        if self.options.archival_search == "hybrid":
            exact = [p.id for p in self.store.search_passages_text(self.agent_id, query)[1]]
            seen = set(exact)
            ranked = exact + [i for i in self._similar(query)[1] if i not in seen]
            return len(ranked), ranked[:limit]
        return self._similar(query, limit)

    def _similar(self, query: str, limit: int | None = None) -> tuple[int, list[int]]:
        embedder = self.embedder
        if embedder is not None:
            from ..retrieval.embed import fragment_vectors

            q = fragment_vectors(embedder.embed([query]))[0]
            total, ids = self.store.nearest_passages(self.agent_id, embedder.model_id, q.tobytes(), limit)
            if total:
                return total, ids
        wanted = keywords(query)
        scored = []
        for pid, text in self.store.passage_texts(self.agent_id):
            hits = len(wanted & keywords(text))
            if hits:
                scored.append((-hits / len(wanted), pid))
        found = [pid for _, pid in sorted(scored)]
        return len(found), found[:limit]
