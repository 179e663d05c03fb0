"""The full-text baseline: the whole document in the prompt, truncated to what fits (or to a budget).

Truncation keeps the left part (the paper's QMSum baseline), the right part, or both ends with the
middle cut out. The cut is made in tokens of the model's own tokenizer, by bisection on words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..errors import ConfigError
from ..llm.client import LLM
from ..llm.usage import Trace
from ..text import Document
from .answering import answer, answer_request
from .question import Answer, Question

Keep = Literal["left", "right", "middle-cut"]


@dataclass(frozen=True)
class FullText:
    document_id: str
    text: str
    words: int


def truncate_words(words: list[str], n: int, keep: Keep) -> str:
    if n >= len(words):
        return " ".join(words)
    if keep == "left":
        return " ".join(words[:n])
    if keep == "right":
        return " ".join(words[len(words) - n:])
    head = (n + 1) // 2
    return " ".join(words[:head] + ["[...]"] + words[len(words) - (n - head):])


class FullTextReader:
    name = "full"

    def __init__(self, llm: LLM, store: Any = None, keep: Keep = "left", budget: int | None = None,
                 prompt_set: str = "quality", constrained: bool = True, max_retries: int = 2):
        self.llm = llm
        self.keep = keep
        self.budget = budget  # context tokens for the document text; None = all the window allows
        self.prompt_set = prompt_set
        self.constrained = constrained and llm.backend.capabilities.supports_grammar
        self.max_retries = max_retries

    @classmethod
    def from_options(cls, llm: LLM, store: Any = None, preset: str = "quality", **options: Any) -> "FullTextReader":
        """From method options: ``keep``, ``budget``, ``constrained``, ``max_retries`` and a ``preset`` naming the
        answer prompts (ReadAgent's preset names: quality, qmsum, narrativeqa-*)."""
        from .readagent.memory import PRESETS

        bad = set(options) - {"keep", "budget", "constrained", "max_retries"}
        if bad:
            raise ConfigError(f"unknown full-text option(s): {', '.join(sorted(bad))}")
        if preset not in PRESETS:
            raise ConfigError(f"unknown preset {preset!r} for full (have: {', '.join(PRESETS)})")
        if options.get("keep", "left") not in ("left", "right", "middle-cut"):
            raise ConfigError(f"keep must be left, right or middle-cut (got {options['keep']!r})")
        if options.get("budget") is not None and options["budget"] < 1:
            raise ConfigError("budget must be at least 1 token")
        return cls(llm, store, prompt_set=PRESETS[preset]["prompts"], **options)

    def build(self, document: Document, progress: Any = None, trace: Any = None) -> FullText:
        return FullText(document.id, document.text, document.words)

    def load(self, document: Document) -> FullText:
        return self.build(document)

    def describe(self, memory: FullText) -> dict[str, Any]:
        return {"document_words": memory.words}

    def _fits(self, question: Question, text: str) -> bool:
        request = answer_request(question, text, self.prompt_set, self.constrained)
        if self.budget is not None and self.llm.count_tokens(text) > self.budget:
            return False
        return self.llm.fits(request)

    def answer(self, memory: FullText, question: Question) -> Answer:
        trace = Trace()
        fallbacks: list[str] = []
        text = memory.text
        if not self._fits(question, text):
            words = text.split()
            lo, hi = 0, len(words)
            while lo < hi:  # the most words that fit
                mid = (lo + hi + 1) // 2
                if self._fits(question, truncate_words(words, mid, self.keep)):
                    lo = mid
                else:
                    hi = mid - 1
            text = truncate_words(words, lo, self.keep)
            fallbacks.append(f"text truncated ({self.keep}) to {lo} of {len(words)} words")
        request = answer_request(question, text, self.prompt_set, self.constrained)
        reply = answer(self.llm, question, request, trace, self.max_retries)
        context_words = len(text.split())
        return Answer(
            question=question, method="full", text=reply.text, choice=reply.choice,
            compression_rate=100.0 * (1 - context_words / max(1, memory.words)), context_words=context_words,
            trace=trace, fallbacks=fallbacks + reply.fallbacks,
        )
