"""ReadAgent's state: pages, gists, the gist memory, and the options with the paper's presets."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal

from ...declare import option
from ...errors import ConfigError
from ..base import StoredMemory
from ..options import ReaderOptions


@dataclass(frozen=True)
class Page:
    index: int  # 0-based, as in the notebook's <Page 0>
    start: int  # first paragraph
    end: int  # one past the last paragraph
    text: str
    label_source: str = "llm"  # llm | fallback | tail | end

    @property
    def words(self) -> int:
        return len(self.text.split())


@dataclass(frozen=True)
class Gist:
    page: int
    text: str
    source: str = "llm"  # llm | fallback (the reply was empty: the page's beginning stands in, recorded)

    @property
    def words(self) -> int:
        return len(self.text.split())


@dataclass(frozen=True)
class GistMemory(StoredMemory):
    """Pages and their gists for one document, model and settings."""

    pages: tuple[Page, ...]
    gists: tuple[Gist, ...]
    model: str

    @property
    def gist_words(self) -> int:
        return sum(g.words for g in self.gists)

    @property
    def compression_rate(self) -> float:
        """Percent of the words the gists remove (the notebook's ``100 - gist_words/words*100``)."""
        return 100.0 * (1 - self.gist_words / max(1, self.document_words))

    def tagged_gists(self, expanded: frozenset[int] = frozenset()) -> str:
        """``<Page i>\\n gist`` blocks (expanded pages show their full text), joined by newlines."""
        return "\n".join(f"<Page {p.index}>\n" + (p.text if p.index in expanded else g.text)
                         for p, g in zip(self.pages, self.gists))

    def expanded_text(self, expanded: frozenset[int]) -> str:
        """Gists with the chosen pages replaced by their text in place, without tags (as the notebook)."""
        return "\n".join(p.text if p.index in expanded else g.text for p, g in zip(self.pages, self.gists))

    def page(self, index: int) -> Page:
        """The page numbered ``index`` (also in a view that shows only some pages)."""
        return next(p for p in self.pages if p.index == index)

    def restrict(self, indices: Iterable[int]) -> GistMemory:
        """A view showing only the pages ``indices`` (in narrative order, their numbers kept): the gists retrieved
        for a question when the whole gist memory does not fit the window."""
        keep = set(indices)
        pairs = [(p, g) for p, g in zip(self.pages, self.gists) if p.index in keep]
        return replace(self, pages=tuple(p for p, _ in pairs), gists=tuple(g for _, g in pairs))

    def outline(self) -> list[str]:
        lines: list[str] = []
        for p, g in zip(self.pages, self.gists):
            fallback = ", gist: fallback" if g.source == "fallback" else ""
            lines += [f"<Page {p.index}> ({p.words} words -> {g.words}, paragraphs {p.start}-{p.end - 1}, "
                      f"break: {p.label_source}{fallback})", g.text, ""]
        return lines

    def as_json(self) -> dict[str, Any]:
        return {"gists": [{"page": p.index, "words": p.words, "gist": g.text, "gist_source": g.source,
                           "break": p.label_source} for p, g in zip(self.pages, self.gists)]}


GistMode = Literal["separate", "continue"]
Expand = Literal["in-place", "follow-up"]


@dataclass(frozen=True)
class ReadAgentOptions(ReaderOptions):
    """ReadAgent's settings; those marked ``memory`` are part of the memory's key."""

    owner = "ReadAgent"
    # Paper, Appendix C and the notebook: pagination sizes and look-up limits per dataset.
    presets: ClassVar[dict[str, dict[str, Any]]] = {
        "quality": {"prompts": "quality", "min_words": 280, "max_words": 600, "max_pages": 5,
                    "previous_page": False},
        "qmsum": {"prompts": "qmsum", "min_words": 280, "max_words": 600, "max_pages": 2, "previous_page": True},
        "narrativeqa-book": {"prompts": "narrativeqa", "min_words": 500, "max_words": 3000, "max_pages": 3,
                             "previous_page": True},
        "narrativeqa-movie": {"prompts": "narrativeqa", "min_words": 600, "max_words": 1000, "max_pages": 3,
                              "previous_page": False},
    }

    preset: str = option("quality", "settings and prompts of a paper dataset", memory=True)
    min_words: int = option(280, "words before the first pause label of a pagination window", memory=True,
                            minimum=1)
    max_words: int = option(600, "most words in a pagination window", memory=True, minimum=1)
    tail_words: int = option(350, "a remainder shorter than this becomes the last page without an LLM call",
                             memory=True, minimum=0)
    previous_page: bool = option(False, "show the previous page in the pagination prompt", memory=True)
    lookahead: bool = option(True, "show the paragraph after the last label in the pagination prompt",
                             memory=True)
    gist_mode: GistMode = option("separate", "separate: the paper's gist prompt; continue: the gist as a "
                                             "follow-up turn of pagination (prompt-cache reuse)", memory=True)
    pagination: Literal["sequential", "chunked", "streaming", "sections"] = option(
        "sequential", "sequential: the paper's; chunked (pagemind): paragraph-aligned chunks paginated "
                      "concurrently, each chunk's last page ending at its end; streaming (pagemind): each "
                      "pagination turn continues one conversation and shows only text not yet read, so a prefix "
                      "cache serves the rest; sections (pagemind): the paper's pagination inside each of the "
                      "document's own sections (outline, headings), so no page crosses a section and a section "
                      "shorter than a page is one page with no LLM call (no sections: the paper's)",
        memory="changed")
    stream_share: float = option(0.5, "streaming pagination: a conversation starts over once it holds this share "
                                      "of the context window", memory="changed")
    chunk_words: int = option(10000, "chunked pagination: words per chunk", memory="changed", minimum=1)
    constrained: bool = option(True, "enforce reply formats with a grammar where the backend can",
                               memory=True, flag="--constrained/--unconstrained")
    max_tokens: int = option(512, "most tokens of one reply, as in the notebook", memory=True, minimum=1)
    budget: int | None = option(None, "most tokens of the answer context (gists + expanded pages); "
                                      "none: the window decides", minimum=1)
    overflow: Literal["retrieve", "hierarchical", "refuse"] = option(
        "retrieve", "when the whole gist memory does not fit the look-up prompt: retrieve (pagemind: the gists most "
                    "relevant to the question, BM25 + FragRel's context relation, shown in narrative order), "
                    "hierarchical (pagemind: groups of consecutive gists gisted again, level by level until the top "
                    "fits; the model chooses groups top-down, then pages inside them) or refuse (the paper's limit)")
    gist_share: float = option(0.5, "overflow=retrieve: share of the window the retrieved gists may take (the rest "
                                    "holds the prompt, the pages looked up and the answer)", minimum=0.05,
                               maximum=0.95)
    group_size: int = option(10, "overflow=hierarchical: consecutive gists per group gist (each level's groups "
                                 "are built once, at the first question that needs them, and stored)", minimum=2)
    max_groups: int = option(2, "overflow=hierarchical: groups ReadAgent-P and GistMem may choose per level "
                                "(ReadAgent-S chooses one)", minimum=1)

    def check(self) -> None:
        if self.min_words > self.max_words:
            raise ConfigError("ReadAgent needs min_words <= max_words")


@dataclass(frozen=True)
class LookupOptions(ReadAgentOptions):
    """ReadAgent-S: the look-up limit."""

    max_pages: int = option(5, "pages to look up (ReadAgent-P: per request; ReadAgent-S: steps)", minimum=1)


@dataclass(frozen=True)
class ParallelOptions(LookupOptions):
    """ReadAgent-P: the look-up limit and how the pages are shown."""

    expand: Expand = option("in-place", "in-place: pages replace their gists (paper); follow-up: pages follow as "
                                        "the next turn of the look-up conversation (prompt-cache reuse)")


PRESETS = ReadAgentOptions.presets
