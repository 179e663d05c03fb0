"""``auto``: read what fits. The whole text when the document, the question and the answer fit the model's window
with room to spare; ReadAgent-P beyond that (pagemind's default method; it says which it chose and why).

A short text answered from its gists alone loses what the gists dropped (a small model's gist may even
misattribute who did what), while the full text has every word: so a memory is only worth building when the text
does not fit. Explicit methods are never second-guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..llm.usage import Trace
from ..text import Document
from .base import About, Progress, Reader
from .full import FullText
from .options import option
from .question import Answer, Question
from .readagent import ParallelOptions, ReadAgentP

ANSWER_RESERVE = 1024  # tokens beside the text: instructions, question, options and the reply


@dataclass(frozen=True)
class AutoOptions(ParallelOptions):
    """ReadAgent-P's options (used when the text does not fit), plus how much of the window stays free."""

    owner = "auto"

    room: float = option(0.25, "share of the context window kept free when reading the whole text (0-0.9)",
                         minimum=0, maximum=0.9)


@dataclass(frozen=True)
class Choice:
    """Which method ``auto`` chose for a document, and why."""

    method: str  # full | readagent-p
    reason: str


@dataclass(frozen=True)
class AutoMemory:
    """The chosen method's memory, with the choice."""

    choice: Choice
    inner: Any

    @property
    def key(self) -> str | None:
        return self.inner.key

    def outline(self) -> list[str]:
        return [f"auto: {self.choice.method} ({self.choice.reason})", ""] + self.inner.outline()

    def as_json(self) -> dict[str, Any]:
        return {"auto": {"method": self.choice.method, "reason": self.choice.reason}, **self.inner.as_json()}


class Auto(Reader[AutoMemory, AutoOptions]):
    name = "auto"
    about = About("Auto", "the whole text when it fits the window with room to spare, else ReadAgent-P (the default)")
    Options = AutoOptions
    unit = "page"

    def choose(self, document: Document) -> Choice:
        """Full text when the document fits ``(1 - room)`` of the window less the answer's reserve."""
        window = self.llm.context_window
        room = int(window * (1 - self.options.room)) - ANSWER_RESERVE
        if self.options.budget is not None:
            room = min(room, self.options.budget)
        if document.words > room:  # no tokenizer gives fewer tokens than words for prose: no need to count
            return Choice("readagent-p", f"{document.words:,} words are more than the {room:,} tokens the whole text "
                                         f"may take of the {window:,}-token window")
        tokens = self.llm.count_tokens(document.text)
        if tokens <= room:
            return Choice("full", f"{tokens:,} tokens fit the {window:,}-token window with room to spare")
        return Choice("readagent-p", f"{tokens:,} tokens are more than the {room:,} the whole text may take of the "
                                     f"{window:,}-token window")

    def _reader(self, choice: Choice) -> Reader[Any, Any]:
        o = self.options
        if choice.method == "full":
            return FullText(self.llm, self.store, preset=o.preset, budget=o.budget, constrained=o.constrained,
                            max_retries=o.max_retries)
        fields = {s.name: getattr(o, s.name) for s in ParallelOptions.specs()}
        return ReadAgentP(self.llm, self.store, ParallelOptions(**fields))

    def build(self, document: Document, progress: Progress | None = None, trace: Trace | None = None) -> AutoMemory:
        choice = self.choose(document)
        return AutoMemory(choice, self._reader(choice).build(document, progress, trace))

    def load(self, document: Document) -> AutoMemory | None:
        choice = self.choose(document)
        inner = self._reader(choice).load(document)
        return None if inner is None else AutoMemory(choice, inner)

    def _assemble(self, document: Any, key: str | None, items: Any) -> AutoMemory:
        raise NotImplementedError("auto delegates to the method it chooses")

    def describe(self, memory: AutoMemory) -> dict[str, Any]:
        return {"method": memory.choice.method, "reason": memory.choice.reason,
                **self._reader(memory.choice).describe(memory.inner)}

    def answer(self, memory: AutoMemory, question: Question, progress: Progress | None = None,
               on_text: Any = None, trace: Trace | None = None) -> Answer:
        answer = self._reader(memory.choice).answer(memory.inner, question, progress, on_text, trace=trace)
        answer.details["auto"] = {"method": memory.choice.method, "reason": memory.choice.reason}
        return answer

    def _answer(self, memory: AutoMemory, question: Question, context: Any) -> Any:
        raise NotImplementedError("auto delegates to the method it chooses")


__all__ = ["Auto", "AutoMemory", "AutoOptions", "Choice"]
