"""RAG readers: top-k fragments by BM25 / dense / hybrid scores, optionally with FragRel, answered by the LLM.

``rag`` shows the retrieved fragments best first; ``op-rag`` keeps them in document order (order-preserving
RAG, the strong baseline of OP-RAG / DOS-RAG). Fragments are 500-word windows (FragRel) or ReadAgent's pages
(the RAG baselines of the ReadAgent paper). The memory is the fragment list, stored content-addressed
(kind ``fragment``) so later questions only score; dense vectors are cached in the store's embeddings table.
Fragments are added in rank order while the context text fits ``budget`` tokens and the model's window.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from ..answering.evidence import Evidence
from ..answering.finish import Context, Reading
from ..answering.question import Question
from ..declare import option
from ..errors import ConfigError
from ..library import Library, shelves
from ..llm.client import LLM
from ..llm.usage import Trace
from ..retrieval.fragments import Fragment, from_dicts, label_sections, split_pages, split_sections, split_words
from ..retrieval.select import fit
from ..store import SQLStore
from ..text import Document
from .base import About, Build, MemoryWriter, Reader, StoredMemory
from .full import most_that_fit, truncate_words
from .options import ReaderOptions
from .reply import answer_request

if TYPE_CHECKING:
    from ..retrieval.embed import Embedder
    from ..retrieval.index import FragmentIndex, RetrievalSettings

TOKENS_PER_WORD = 1.4  # English prose with the fragments' labels, as the tokenizers count it (a margin, not a mean)
FEWEST_WORDS = 64  # a fragment holds at least a few sentences


def fragment_words_for(budget: int, k: int | None = None) -> int:
    """Words per fragment so that ``budget`` tokens read ``k`` fragments (5 when unset)."""
    return max(FEWEST_WORDS, int(budget / (TOKENS_PER_WORD * (k or 5))))


PRESETS: dict[str, dict[str, Any]] = {
    "quality": {"prompts": "quality", "fragment_words": 500},
    "qmsum": {"prompts": "qmsum", "fragment_words": 500},
    "narrativeqa-book": {"prompts": "narrativeqa", "fragment_words": 800},
    "narrativeqa-movie": {"prompts": "narrativeqa", "fragment_words": 500},
}


EMBEDDERS = ("minilm", "hashing")  # what load_embedder opens


@dataclass(frozen=True)
class RAGOptions(ReaderOptions):
    """RAG's settings; those marked ``memory`` shape the stored fragments."""

    owner = "RAG"
    presets = PRESETS

    preset: str = option("quality", "fragment size and prompts of a paper dataset")
    fragments: Literal["words", "pages", "sections"] = option(
        "words", "fixed word windows; ReadAgent's pages (the RAG baselines of the ReadAgent paper); or word windows "
        "that never cross one of the document's own sections, each naming its section path")
    fragment_words: int = option(500, "words per fragment", minimum=1)
    scorer: Literal["bm25", "dense", "hybrid"] = option("bm25", "s_ind: BM25, dense (MiniLM) or both fused")
    fusion: Literal["rrf", "mix"] = option("rrf", "hybrid: reciprocal rank fusion or a score mix")
    fragrel: bool = option(False, "re-score with FragRel's relations (paper Eq. 1-3)")
    relation: Literal["context", "semantic", "semantic-distance"] = option("context", "FragRel's relation")
    alpha: float = option(0.5, "FragRel: weight of the environment score", minimum=0)
    w_rel: float = option(0.3, "FragRel context relation: w_rel", minimum=0)
    context_within: Literal["source", "section"] = option(
        "source", "FragRel context relation: between neighbouring fragments of one source (the paper), or only within "
                  "one of the document's sections (with fragments=sections: a heading ends a fragment's context)")
    semantic_k: int = option(64, "FragRel semantic relation: neighbours per fragment (0: every pair)", minimum=0)
    named_sections: bool = option(True, "a question naming a statement or an Item (\"the cash flow statement\", "
                                        "\"Item 7\") reads the fragments of that section first")
    pick_sections: bool = option(False, "PageIndex's reasoning step: one constrained call in which the model picks, "
                                        "among the titles of the document's sections, up to 3 where the answer is "
                                        "printed; their fragments are read first")
    top_k: int | None = option(5, "most fragments shown (0 or none: as many as fit the budget)", minimum=0)
    order: Literal["score", "position"] | None = option(None, "fragment order in the prompt (none: the method's; "
                                                              "rag: score, op-rag: position)")
    budget: int | None = option(None, "most tokens of the context text; none: what the window allows", minimum=1)
    embedder: str = option("minilm", "dense embeddings: minilm or hashing")

    def memory_settings(self) -> dict[str, Any]:
        if self.fragments == "pages":
            return {"fragments": "pages", "readagent": self.readagent_options().memory_settings()}
        return {"fragments": self.fragments, "fragment_words": self.fragment_words}

    def retrieval(self) -> RetrievalSettings:
        from ..retrieval.index import RetrievalSettings  # numpy: loaded when a RAG reader scores, not on start-up

        return RetrievalSettings(scorer=self.scorer, fusion=self.fusion, fragrel=self.fragrel,
                                 relation=self.relation, alpha=self.alpha, w_rel=self.w_rel,
                                 context_within=self.context_within, semantic_k=self.semantic_k)

    def readagent_options(self) -> Any:
        from .readagent import ReadAgentOptions

        return ReadAgentOptions.create(self.preset, constrained=self.constrained)  # same preset names

    @classmethod
    def create(cls, preset: str | None = None, **given: Any) -> RAGOptions:
        """As every reader's options, and: with a ``budget`` and no ``fragment_words`` given, word fragments small
        enough that the budget reads ``top_k`` of them (5 unless set), not one (LoCoMo at 1,500 tokens read one of
        its 28 500-word fragments), never larger than the preset's (:func:`fragment_words_for`)."""
        made = super().create(preset, **given)
        if made.budget is None or given.get("fragment_words") is not None or made.fragments != "words":
            return made
        return replace(made, fragment_words=min(made.fragment_words, fragment_words_for(made.budget, made.k)))

    def check(self) -> None:
        self.retrieval()  # validates scorer, relation, alpha, w_rel
        # a str, not a Literal: the agent's --embedder flag (one CLI flag for both) takes auto and none too
        if self.embedder not in EMBEDDERS:
            raise ConfigError(f"RAG option embedder must be one of {', '.join(EMBEDDERS)} (got {self.embedder!r})")

    @property
    def k(self) -> int | None:
        """The fragment limit (None: as many as fit)."""
        return self.top_k or None


@dataclass(frozen=True)
class RAGMemory(StoredMemory):
    """The document's fragments, in document order."""

    fragments: tuple[Fragment, ...]

    def outline(self) -> list[str]:
        lines: list[str] = []
        for f in self.fragments:
            lines += [f"<Fragment {f.index}> ({f.words} words)", f.text[:300] + ("…" if len(f.text) > 300 else ""), ""]
        return lines

    def as_json(self) -> dict[str, Any]:
        return {"fragments": [f.as_dict() for f in self.fragments]}


class RAG(Reader[RAGMemory, RAGOptions]):
    """Top-k fragments by their scores, best first."""

    name = "rag"
    # 2: word windows keep the document's line breaks (a statement's rows stay rows) and carry the header of a table
    # they start inside; ReadAgent pages as fragments are built as before
    builder_version = 2

    def builder(self) -> int:
        return 1 if self.options.fragments == "pages" else self.builder_version
    about = About("RAG", "top-k fragments by BM25 / dense / hybrid scores (optionally FragRel), best first",
                  "RAG baseline (ReadAgent, FragRel papers); FragRel (§3)")
    Options = RAGOptions
    memory_kind = "rag"
    unit = "fragment"
    order: Literal["score", "position"] = "score"

    def __init__(self, llm: LLM, store: SQLStore, options: RAGOptions | None = None,
                 embedder: Embedder | None = None, **given: Any) -> None:
        super().__init__(llm, store, options, **given)
        self.order = self.options.order or self.order
        self._embedder = embedder

    def embeds(self) -> bool:
        semantic = self.options.fragrel and self.options.relation != "context"  # FragRel's semantic relations
        return self.options.scorer in ("dense", "hybrid") or semantic

    # --- memory -------------------------------------------------------------------------------------
    @property
    def builds_with_llm(self) -> bool:
        return self.options.fragments == "pages"

    def _build(self, document: Document, writer: MemoryWriter, build: Build) -> None:
        if self.options.fragments == "pages":
            from .readagent import GistMem

            reader = GistMem(self.llm, self.store, self.options.readagent_options())
            fragments = split_pages(reader.build(document, build.progress, build.trace).pages)
        elif self.options.fragments == "sections":
            fragments = split_sections(document.text, document.sections, self.options.fragment_words)
        else:
            fragments = label_sections(split_words(document.text, self.options.fragment_words), document.text,
                                       document.sections)
        writer.put_many("fragment", [(f.index, f.as_dict()) for f in fragments])

    def _assemble(self, document: Document, key: str | None, items: MemoryWriter | None) -> RAGMemory:
        assert items is not None
        return RAGMemory(key, document.id, document.words, self.key_settings(),
                         tuple(from_dicts(items.items("fragment"))))

    def _compose(self, library: Library, parts: list[RAGMemory], trace: Trace) -> RAGMemory:
        """The fragments of all documents, numbered on; each keeps its place in its document (``position``) and
        names the document as its source, so the context relation stays within a document and OP-RAG shows each
        document's fragments in its order."""
        fragments = [replace(f, index=i, source=member.name) for i, (member, f) in enumerate(
            (member, f) for member, part in zip(library.members, parts) for f in part.fragments)]
        return RAGMemory(None, library.id, library.words, self.key_settings(), tuple(fragments),
                         shelves=shelves(library, "fragment", [len(p.fragments) for p in parts]))

    def _ready(self, memory: RAGMemory) -> None:
        if self.options.retrieval().needs_embedder:
            self.index(memory).chunk_vectors()  # embedded once, into the store's cache (later: lookups)

    def describe(self, memory: RAGMemory) -> dict[str, Any]:
        return {"fragment_count": len(memory.fragments), "document_words": memory.document_words,
                "fragment_words": max((f.words for f in memory.fragments), default=0),
                **asdict(self.options.retrieval())}

    def index(self, memory: RAGMemory) -> FragmentIndex:
        from ..retrieval.index import FragmentIndex

        settings = self.options.retrieval()
        return self.keyed_index(memory, lambda encoder: FragmentIndex(memory.fragments, settings, encoder),
                                self.options.embedder if settings.needs_embedder else None)

    # --- retrieving ---------------------------------------------------------------------------------
    def units(self, memory: RAGMemory) -> list[Evidence]:
        return [Evidence("fragment", f.index, f.shown, "fragment", head=f.head) for f in memory.fragments]

    def passage_index(self, memory: RAGMemory) -> FragmentIndex:
        """The fragments as this reader ranks them to answer: its scorer, FragRel when on."""
        return self.index(memory)

    def ordered(self, memory: RAGMemory, query: str, order: Any) -> list[int]:
        """The ranking's fragment indices, those of a section the question names first (``named_sections``)."""
        ranked = super().ordered(memory, query, order)
        if not self.options.named_sections:
            return ranked
        from ..retrieval.named import named_first

        return named_first(ranked, _labels(memory), query)

    def read_order(self, memory: RAGMemory, question: Question, order: Any, context: Context) -> list[int]:
        """The order an answer reads the fragments in: :meth:`ordered`, and with ``pick_sections`` the fragments of
        the sections the model picks by their titles first (one call: :mod:`.pick`)."""
        ranked = self.ordered(memory, question.text, order)
        if not self.options.pick_sections:
            return ranked
        from .pick import pick, picked_first

        labels = _labels(memory)
        context.phase("picking sections by their titles")
        picked, problem = pick(self.llm, question.text, labels, context.trace, constrained=self.options.constrained,
                               retries=self.options.max_retries)
        if problem:
            context.fallback(problem)
        elif not picked and not any(any(label) for label in labels):
            context.fallback("pick_sections: the document has no sections; the ranking stands")
        return picked_first(ranked, labels, picked) if picked else ranked

    # --- answering ----------------------------------------------------------------------------------
    def _fits(self, question: Question, text: str) -> bool:
        if self.options.budget is not None and self.llm.count_tokens(text) > self.options.budget:
            return False
        return self.llm.fits(answer_request(question, text, self.options.prompt_set, self.options.constrained))

    def _answer(self, memory: RAGMemory, question: Question, context: Context) -> Reading:
        query = question.text if not question.is_choice else question.text + "\n" + "\n".join(question.options)
        ranking = self.index(memory).rank(query)
        ranked = [memory.fragments[i] for i in self.read_order(memory, question, ranking.order, context)]
        chosen = fit(ranked, lambda text: self._fits(question, text), self.order, self.options.k)
        text = chosen.text
        if not chosen.fragments and ranked:  # not even the best fragment fits: cut it (keep its start)
            best = ranked[0].shown
            words = len(best.split())
            kept = most_that_fit(words, lambda n: self._fits(question, truncate_words(best, n, "left")))
            text = truncate_words(best, kept, "left")
            context.fallback(f"best fragment {ranked[0].index} truncated to {kept} of {words} words to fit")
        elif chosen.skipped:
            context.fallback(f"fragments {list(chosen.skipped)} skipped: over the budget or the context window")
        reply = self._reply(question, answer_request(question, text, self.options.prompt_set,
                                                     self.options.constrained), context)
        scores = ranking.scores
        return Reading(
            reply.text, reply.choice, chosen.indices if chosen.fragments else [ranked[0].index] if ranked else [],
            len(text.split()), memory.document_words,
            {**self.describe(memory), "fragments": chosen.indices, "order": self.order,
             "scores": {int(i): round(float(scores[int(i)]), 6) for i in ranking.order[:20]},
             "context_tokens": self.llm.count_tokens(text)},
            [Evidence("fragment", f.index, f.shown, "fragment", head=f.head) for f in chosen.fragments]
            or [Evidence("fragment", f.index, text, "fragment", head=f.head if text.startswith(f.head) else "")
                for f in ranked[:1]],
        )


def _labels(memory: RAGMemory) -> list[tuple[str, ...]]:
    """Each fragment's section labels: the section it is in, then those that start inside it."""
    return [(f.section, *f.opens) for f in memory.fragments]


class OPRAG(RAG):
    """The same fragments kept in document order (order-preserving RAG, the strong baseline of OP-RAG/DOS-RAG)."""

    name = "op-rag"
    about = About("OP-RAG", "the top-k fragments kept in document order (order-preserving RAG)",
                  "OP-RAG (Yu et al., 2024)")
    order = "position"


__all__ = ["OPRAG", "PRESETS", "RAG", "RAGMemory", "RAGOptions"]
