"""The full-text baseline: the whole document in the prompt, truncated to what fits (or to a budget).

Truncation keeps the left part (the paper's QMSum baseline), the right part, or both ends with the
middle cut out. The cut is made in tokens of the model's own tokenizer, by bisection on words.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ..answering.evidence import Evidence
from ..answering.finish import Context, Reading
from ..answering.question import Question
from ..declare import option
from ..errors import InputTooLarge
from ..library import Library, Shelf, shelves
from ..llm.usage import Trace
from ..text import Document
from .base import About, MemoryWriter, Reader
from .options import ReaderOptions
from .reply import answer_request

Keep = Literal["left", "right", "middle-cut"]
PROMPT_PRESETS: dict[str, dict[str, Any]] = {
    "quality": {"prompts": "quality"}, "qmsum": {"prompts": "qmsum"},
    "narrativeqa-book": {"prompts": "narrativeqa"}, "narrativeqa-movie": {"prompts": "narrativeqa"},
}


@dataclass(frozen=True)
class FullTextOptions(ReaderOptions):
    owner = "full-text"
    presets = PROMPT_PRESETS

    preset: str = option("quality", "the answer prompts of a paper dataset (ReadAgent's)")
    keep: Keep = option("left", "what truncation keeps when the text does not fit (left: the paper's QMSum "
                                "baseline)")
    budget: int | None = option(None, "most tokens of the document text; none: all the window allows", minimum=1)


@dataclass(frozen=True)
class FullMemory:
    """The document itself: nothing is built or stored."""

    key: None
    document_id: str
    text: str
    words: int
    shelves: tuple[Shelf, ...] = ()  # a library's: its documents, one after another in ``text``

    def outline(self) -> list[str]:
        return [f"the whole text ({self.words} words): nothing is built or stored for the full-text baseline"]

    def as_json(self) -> dict[str, Any]:
        return {"words": self.words}


def truncate_words(text: str, n: int, keep: Keep) -> str:
    """``text`` cut to ``n`` of its words — the first (``left``), the last (``right``) or half of each around
    "[...]" (``middle``) — its line breaks kept (a statement's rows, a conversation's turns stay on their lines)."""
    import re

    spans = [m.span() for m in re.finditer(r"\S+", text)]
    if not spans or n <= 0:
        return ""
    if n >= len(spans):
        return text[spans[0][0]:spans[-1][1]]
    if keep == "left":
        return text[spans[0][0]:spans[n - 1][1]]
    if keep == "right":
        return text[spans[len(spans) - n][0]:spans[-1][1]]
    head = (n + 1) // 2
    tail = text[spans[len(spans) - (n - head)][0]:spans[-1][1]] if n - head else ""
    return text[spans[0][0]:spans[head - 1][1]] + "\n[...]\n" + tail


def most_that_fit(n: int, fits: Callable[[int], bool]) -> int:
    """The largest ``k <= n`` with ``fits(k)`` (``fits`` monotone), by bisection; 0 when none does."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo


class FullText(Reader[FullMemory, FullTextOptions]):
    name = "full"
    about = About("Full text", "the whole document in the prompt, truncated to what fits (the papers' baseline)",
                  "baseline (ReadAgent, MemWalker papers)")
    Options = FullTextOptions
    unit = "text"

    def _assemble(self, document: Document, key: str | None, items: MemoryWriter | None) -> FullMemory:
        return FullMemory(None, document.id, document.text, document.words)

    def _compose(self, library: Library, parts: list[FullMemory], trace: Trace) -> FullMemory:
        """The documents one after another, each under its name."""
        return FullMemory(None, library.id, library.text, library.words, shelves(library, "text", [1] * len(library)))

    def describe(self, memory: FullMemory) -> dict[str, Any]:
        return {"document_words": memory.words}

    def _fits(self, question: Question, text: str) -> bool:
        request = answer_request(question, text, self.options.prompt_set, self.options.constrained)
        if self.options.budget is not None and self.llm.count_tokens(text) > self.options.budget:
            return False
        return self.llm.fits(request)

    def _answer(self, memory: FullMemory, question: Question, context: Context) -> Reading:
        text = memory.text
        truncated = False
        if not self._fits(question, text):
            if memory.shelves:  # a cut library would leave out whole documents unseen: refused, not truncated
                raise InputTooLarge(
                    f"the library's {len(memory.shelves)} documents ({memory.words:,} words) do not fit "
                    f"{self.llm.model_id}'s {self.llm.context_window}-token window"
                    + (f" or the {self.options.budget}-token budget" if self.options.budget else "")
                    + " in full: ask it with a method that reads beyond the window (-m readagent-p, memwalker, rag)")
            words = len(text.split())
            whole = text
            kept = most_that_fit(words, lambda n: self._fits(question, truncate_words(whole, n, self.options.keep)))
            text = truncate_words(whole, kept, self.options.keep)
            truncated = True
            context.fallback(f"text truncated ({self.options.keep}) to {kept} of {words} words")
        request = answer_request(question, text, self.options.prompt_set, self.options.constrained)
        reply = self._reply(question, request, context, "answering from the whole text")
        words_read = len(text.split())
        return Reading(reply.text, reply.choice, [], words_read, memory.words,
                       {"words_read": words_read, "document_words": memory.words, "truncated": truncated},
                       [Evidence("text", None, text, "text")])


__all__ = ["FullMemory", "FullText", "FullTextOptions", "most_that_fit", "truncate_words"]
