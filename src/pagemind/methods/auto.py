"""``auto``: read what fits. The whole text when the document, the question and the answer fit the model's window
with room to spare; ReadAgent-P beyond that (pagemind's default method; it says which it chose and why).

A short text answered from its gists alone loses what the gists dropped (a small model's gist may even
misattribute who did what), while the full text has every word: so a memory is only worth building when the text
does not fit. Explicit methods are never second-guessed.

``auto`` is a :class:`~.base.Chooser`, not a reader: :meth:`pagemind.Pagemind.reader` resolves it for a document to
the full-text reader or ReadAgent-P, and the memory, the answer and the run are that reader's (the answer's
``details["auto"]`` says which and why).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..text import Document
from .base import About, Chooser, Chosen, Reader
from .full import FullText, FullTextOptions
from .options import option
from .readagent import ParallelOptions, ReadAgentP

ANSWER_RESERVE = 1024  # tokens beside the text: instructions, question, options and the reply


@dataclass(frozen=True)
class AutoOptions(ParallelOptions):
    """ReadAgent-P's options (used when the text does not fit), plus how much of the window stays free."""

    owner = "auto"

    room: float = option(0.25, "share of the context window kept free when reading the whole text (0-0.9)",
                         minimum=0, maximum=0.9)


class Auto(Chooser):
    name = "auto"
    about = About("Auto", "the whole text when it fits the window with room to spare, else ReadAgent-P (the default)")
    Options = AutoOptions
    unit = "page"
    options: AutoOptions

    def choose(self, document: Document) -> Chosen:
        """Full text when the document fits ``(1 - room)`` of the window less the answer's reserve."""
        window = self.llm.context_window
        room = int(window * (1 - self.options.room)) - ANSWER_RESERVE
        if self.options.budget is not None:
            room = min(room, self.options.budget)
        if document.words > room:  # no tokenizer gives fewer tokens than words for prose: no need to count
            return Chosen("readagent-p", f"{document.words:,} words are more than the {room:,} tokens the whole text "
                                         f"may take of the {window:,}-token window")
        tokens = self.llm.count_tokens(document.text)
        if tokens <= room:
            return Chosen("full", f"{tokens:,} tokens fit the {window:,}-token window with room to spare")
        return Chosen("readagent-p", f"{tokens:,} tokens are more than the {room:,} the whole text may take of the "
                                     f"{window:,}-token window")

    def reader(self, chosen: Chosen) -> Reader[Any, Any]:
        method = FullText if chosen.method == "full" else ReadAgentP
        options: Any = FullTextOptions if chosen.method == "full" else ParallelOptions
        shared = {s.name: getattr(self.options, s.name) for s in options.specs() if s.name in
                  {t.name for t in AutoOptions.specs()}}
        return method(self.llm, self.store, options.create(**shared))


__all__ = ["Auto", "AutoOptions"]
