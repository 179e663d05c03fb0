"""RAG readers: top-k fragments by BM25 / dense / hybrid scores, optionally with FragRel, answered by the LLM.

``rag`` shows the retrieved fragments best first; ``op-rag`` keeps them in document order (order-preserving
RAG, the strong baseline of OP-RAG / DOS-RAG). Fragments are 500-word windows (FragRel) or ReadAgent's pages
(the RAG baselines of the ReadAgent paper). The memory is the fragment list, stored content-addressed
(kind ``fragment``) so later questions only score; dense vectors are cached in the store's embeddings table.
Fragments are added in rank order while the context text fits ``budget`` tokens and the model's window.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from ..errors import ConfigError
from ..llm.client import LLM
from ..llm.usage import Trace
from ..retrieval.cache import EmbeddingCache
from ..retrieval.embed import CachedEmbedder, Embedder, load_embedder
from ..retrieval.fragments import Fragment, from_dicts, split_pages, split_words
from ..retrieval.index import FragmentIndex, RetrievalSettings
from ..retrieval.select import fit
from ..store import Store, memory_key
from ..text import Document
from .answering import answer, answer_request
from .full import truncate_words
from .question import Answer, Question
from .options import from_preset

METHOD = "rag"
MODES = {"rag": "score", "op-rag": "position"}
PRESETS: dict[str, dict[str, Any]] = {
    "quality": {"prompts": "quality", "fragment_words": 500},
    "qmsum": {"prompts": "qmsum", "fragment_words": 500},
    "narrativeqa-book": {"prompts": "quality", "fragment_words": 800},
    "narrativeqa-movie": {"prompts": "quality", "fragment_words": 500},
}


@dataclass(frozen=True)
class RAGOptions:
    """Settings; those that change the stored fragments are in :meth:`memory_settings`."""

    preset: str = "quality"
    fragments: Literal["words", "pages"] = "words"
    fragment_words: int = 500
    scorer: Literal["bm25", "dense", "hybrid"] = "bm25"
    fusion: Literal["rrf", "mix"] = "rrf"
    fragrel: bool = False
    relation: Literal["context", "semantic", "semantic-distance"] = "context"
    alpha: float = 0.5
    w_rel: float = 0.3
    top_k: int | None = 5  # None (or 0 when given): as many as fit
    order: Literal["score", "position"] | None = None  # None: the mode's (rag: score, op-rag: position)
    budget: int | None = None  # tokens of the context text; None: what the window allows
    embedder: str = "minilm"
    constrained: bool = True
    max_retries: int = 2

    def memory_settings(self) -> dict[str, Any]:
        if self.fragments == "pages":
            return {"fragments": "pages", "readagent": self.readagent_options().memory_settings()}
        return {"fragments": "words", "fragment_words": self.fragment_words}

    def retrieval(self) -> RetrievalSettings:
        return RetrievalSettings(scorer=self.scorer, fusion=self.fusion, fragrel=self.fragrel,
                                 relation=self.relation, alpha=self.alpha, w_rel=self.w_rel)

    def readagent_options(self):
        from .readagent import ReadAgentOptions

        return ReadAgentOptions.from_preset(self.preset, constrained=self.constrained)  # same preset names

    @property
    def prompt_set(self) -> str:
        return PRESETS[self.preset]["prompts"]

    @classmethod
    def from_preset(cls, preset: str = "quality", **overrides: Any) -> "RAGOptions":
        opts = from_preset(cls, "RAG", PRESETS, preset, overrides)
        if opts.fragments not in ("words", "pages"):
            raise ConfigError(f"fragments must be words or pages (got {opts.fragments!r})")
        if opts.fragment_words < 1:
            raise ConfigError("fragment_words must be at least 1")
        if opts.top_k is not None and opts.top_k < 0:
            raise ConfigError("top_k must be at least 1 (or 0: as many fragments as fit)")
        if opts.top_k == 0:
            opts = replace(opts, top_k=None)
        if opts.budget is not None and opts.budget < 1:
            raise ConfigError("budget must be at least 1 token")
        if opts.order not in (None, "score", "position"):
            raise ConfigError(f"order must be score or position (got {opts.order!r})")
        opts.retrieval()  # validates scorer, relation, alpha, w_rel
        return opts


@dataclass(frozen=True)
class RAGMemory:
    key: str
    document_id: str
    document_words: int
    fragments: tuple[Fragment, ...]
    settings: dict[str, Any]


class RAGReader:
    """``build(document) -> RAGMemory`` once (fragments, stored); ``answer(memory, question)`` many times."""

    def __init__(self, llm: LLM, store: Store, options: RAGOptions | None = None, mode: str = "rag",
                 embedder: Embedder | None = None):
        if mode not in MODES:
            raise ConfigError(f"unknown RAG mode {mode!r} (have: {', '.join(MODES)})")
        opts = options or RAGOptions()
        self.options = replace(opts, constrained=opts.constrained and llm.backend.capabilities.supports_grammar)
        self.order = self.options.order or MODES[mode]
        self.llm = llm
        self.store = store
        self.name = mode
        self._embedder = embedder
        self._indexes: dict[str, FragmentIndex] = {}

    # --- memory -------------------------------------------------------------------------------------
    def _model(self) -> str:
        return self.llm.model_id if self.options.fragments == "pages" else "-"  # words need no model

    def _key(self, document: Document) -> str:
        return memory_key(document.id, METHOD, self.options.memory_settings(), self._model())

    def build(self, document: Document, progress: Any = None, trace: Trace | None = None) -> RAGMemory:
        memory = self.load(document) or self._build(document, progress, trace)
        if self.options.retrieval().needs_embedder:
            self.index(memory).chunk_vectors()  # embedded once, into the store's cache (later: lookups)
        return memory

    def _build(self, document: Document, progress: Any, trace: Trace | None) -> RAGMemory:
        if self.options.fragments == "pages":
            from .readagent import ReadAgent

            pages = ReadAgent(self.llm, self.store, self.options.readagent_options()).build(document, progress, trace)
            fragments = split_pages(pages.pages)
        else:
            fragments = split_words(document.text, self.options.fragment_words)
        key, settings = self._key(document), self.options.memory_settings()
        self.store.put_document(document.id, document.name, document.words, len(document.text))
        self.store.open_memory(key, document.id, METHOD, settings, self._model())
        for f in fragments:
            self.store.put_item(key, "fragment", f.index, f.as_dict())
        self.store.mark_complete(key)
        return RAGMemory(key, document.id, document.words, tuple(fragments), settings)

    def load(self, document: Document) -> RAGMemory | None:
        key = self._key(document)
        record = self.store.get_memory(key)
        if record is None or record.status != "complete":
            return None
        fragments = tuple(from_dicts(self.store.items(key, "fragment")))
        return RAGMemory(key, document.id, document.words, fragments, self.options.memory_settings())

    def describe(self, memory: RAGMemory) -> dict[str, Any]:
        return {"fragment_count": len(memory.fragments), "document_words": memory.document_words,
                "fragment_words": max((f.words for f in memory.fragments), default=0),
                **asdict(self.options.retrieval())}

    def index(self, memory: RAGMemory) -> FragmentIndex:
        if memory.key not in self._indexes:
            settings = self.options.retrieval()
            embedder = None
            if settings.needs_embedder:
                inner = self._embedder or load_embedder(self.options.embedder)
                embedder = CachedEmbedder(inner, EmbeddingCache(self.store))
            self._indexes[memory.key] = FragmentIndex(memory.fragments, settings, embedder)
        return self._indexes[memory.key]

    # --- answering ----------------------------------------------------------------------------------
    def _fits(self, question: Question, text: str) -> bool:
        if self.options.budget is not None and self.llm.count_tokens(text) > self.options.budget:
            return False
        return self.llm.fits(answer_request(question, text, self.options.prompt_set, self.options.constrained))

    def answer(self, memory: RAGMemory, question: Question) -> Answer:
        trace = Trace()
        query = question.text if not question.is_choice else question.text + "\n" + "\n".join(question.options)
        ranking = self.index(memory).rank(query)
        ranked = [memory.fragments[int(i)] for i in ranking.order]
        chosen = fit(ranked, lambda text: self._fits(question, text), self.order, self.options.top_k)
        text, fallbacks = chosen.text, []
        if not chosen.fragments and ranked:  # not even the best fragment fits: cut it (keep its start)
            words = ranked[0].text.split()
            lo, hi = 0, len(words)
            while lo < hi:
                mid = (lo + hi + 1) // 2
                lo, hi = (mid, hi) if self._fits(question, truncate_words(words, mid, "left")) else (lo, mid - 1)
            text = truncate_words(words, lo, "left")
            fallbacks.append(f"best fragment {ranked[0].index} truncated to {lo} of {len(words)} words to fit")
        elif chosen.skipped:
            fallbacks.append(f"fragments {list(chosen.skipped)} skipped: over the budget or the context window")
        request = answer_request(question, text, self.options.prompt_set, self.options.constrained)
        reply = answer(self.llm, question, request, trace, self.options.max_retries)
        context_words = len(text.split())
        scores = ranking.scores
        return Answer(
            question=question, method=self.name, text=reply.text, choice=reply.choice,
            pages_read=chosen.indices if chosen.fragments else [ranked[0].index] if ranked else [],
            compression_rate=100.0 * (1 - context_words / max(1, memory.document_words)),
            context_words=context_words, trace=trace, fallbacks=fallbacks + reply.fallbacks,
            details={**self.describe(memory), "fragments": chosen.indices, "order": self.order,
                     "scores": {int(i): round(float(scores[int(i)]), 6) for i in ranking.order[:20]},
                     "context_tokens": self.llm.count_tokens(text)},
        )
