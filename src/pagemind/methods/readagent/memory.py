"""ReadAgent's state: pages, gists, the gist memory, and the options with the paper's presets."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from ...errors import ConfigError
from ..options import from_preset


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
class GistMemory:
    """Pages and their gists for one document, model and settings."""

    key: str
    document_id: str
    document_words: int
    pages: tuple[Page, ...]
    gists: tuple[Gist, ...]
    settings: dict[str, Any]
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
        return "\n".join(
            f"<Page {p.index}>\n" + (p.text if p.index in expanded else self.gists[p.index].text)
            for p in self.pages
        )

    def expanded_text(self, expanded: frozenset[int]) -> str:
        """Gists with the chosen pages replaced by their text in place, without tags (as the notebook)."""
        return "\n".join(p.text if p.index in expanded else self.gists[p.index].text for p in self.pages)


GistMode = Literal["separate", "continue"]
Expand = Literal["in-place", "follow-up"]


@dataclass(frozen=True)
class ReadAgentOptions:
    """Settings. Those that change the memory are in :meth:`memory_settings` (part of its key)."""

    preset: str = "quality"
    min_words: int = 280
    max_words: int = 600
    tail_words: int = 350  # a remainder shorter than this becomes the last page without an LLM call
    previous_page: bool = False  # show "...\n" + the previous page in the pagination prompt
    lookahead: bool = True  # show the paragraph after the last label in the pagination prompt
    gist_mode: GistMode = "separate"  # continue: ask for the gist as a follow-up turn (prompt-cache reuse)
    max_pages: int = 5  # look-up limit (ReadAgent-P pages per request, ReadAgent-S steps)
    constrained: bool = True  # enforce reply formats by grammar where the backend can
    max_retries: int = 2  # re-asks after an unparsable reply, per decision
    max_tokens: int = 512  # per reply, as in the notebook
    budget: int | None = None  # tokens of the answer context (gists + expanded pages); None: the window decides
    expand: Expand = "in-place"  # ReadAgent-P: pages replace their gists (paper), or follow as the next turn

    def memory_settings(self) -> dict[str, Any]:
        keys = ("preset", "min_words", "max_words", "tail_words", "previous_page", "lookahead", "gist_mode",
                "constrained", "max_tokens")
        d = asdict(self)
        return {k: d[k] for k in keys}

    @property
    def prompt_set(self) -> str:
        return PRESETS[self.preset]["prompts"]

    @classmethod
    def from_preset(cls, preset: str = "quality", **overrides: Any) -> "ReadAgentOptions":
        opts = from_preset(cls, "ReadAgent", PRESETS, preset, overrides)
        if not 0 < opts.min_words <= opts.max_words:
            raise ConfigError("ReadAgent needs 0 < min_words <= max_words")
        if opts.max_pages < 1:
            raise ConfigError("max_pages must be at least 1")
        if opts.budget is not None and opts.budget < 1:
            raise ConfigError("budget must be at least 1 token")
        if opts.expand not in ("in-place", "follow-up"):
            raise ConfigError(f"expand must be in-place or follow-up (got {opts.expand!r})")
        return opts


# Paper, Appendix C and the notebook: pagination sizes and look-up limits per dataset.
PRESETS: dict[str, dict[str, Any]] = {
    "quality": {"prompts": "quality", "min_words": 280, "max_words": 600, "max_pages": 5, "previous_page": False},
    "qmsum": {"prompts": "qmsum", "min_words": 280, "max_words": 600, "max_pages": 2, "previous_page": True},
    "narrativeqa-book": {"prompts": "quality", "min_words": 500, "max_words": 3000, "max_pages": 3,
                         "previous_page": True},
    "narrativeqa-movie": {"prompts": "quality", "min_words": 600, "max_words": 1000, "max_pages": 3,
                          "previous_page": False},
}
