"""A method from outside pagemind, found through its ``pagemind.readers`` entry point (tests/test_reader_plugin.py).

The "lead" baseline: the memory is the document's paragraphs, and a question is answered from the first
``paragraphs`` of them. One module, nothing in pagemind edited.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pagemind.answering.finish import Context, Reading
from pagemind.answering.question import Question
from pagemind.declare import option
from pagemind.llm.base import LLMRequest
from pagemind.methods.base import About, Build, MemoryWriter, Reader
from pagemind.methods.options import ReaderOptions
from pagemind.text import Document, split_paragraphs


@dataclass(frozen=True)
class LeadOptions(ReaderOptions):
    owner = "lead"

    paragraphs: int = option(2, "paragraphs from the start shown to the model", minimum=1)
    min_words: int = option(20, "paragraphs shorter than this are merged", memory=True, minimum=1)


@dataclass(frozen=True)
class Lead:
    key: str | None
    paragraphs: tuple[str, ...]
    words: int

    def outline(self) -> list[str]:
        return [f"¶{i}: {p[:60]}" for i, p in enumerate(self.paragraphs)]

    def as_json(self) -> dict[str, Any]:
        return {"paragraphs": list(self.paragraphs)}


class LeadReader(Reader[Lead, LeadOptions]):
    name = "lead"
    about = About("Lead", "answer from the document's first paragraphs (a test plugin)")
    Options = LeadOptions
    memory_kind = "lead"
    unit = "paragraph"

    @property
    def builds_with_llm(self) -> bool:
        return False

    def _build(self, document: Document, writer: MemoryWriter, build: Build) -> None:
        paragraphs = split_paragraphs(document.text, max_words=max(50, self.options.min_words))
        writer.put_many("paragraph", [(i, {"text": p}) for i, p in enumerate(paragraphs)])

    def _assemble(self, document: Document, key: str | None, items: MemoryWriter | None) -> Lead:
        assert items is not None
        return Lead(key, tuple(p["text"] for p in items.items("paragraph")), document.words)

    def describe(self, memory: Lead) -> dict[str, Any]:
        return {"paragraphs": len(memory.paragraphs)}

    def _answer(self, memory: Lead, question: Question, context: Context) -> Reading:
        shown = memory.paragraphs[: self.options.paragraphs]
        text = "\n\n".join(shown)
        response, _ = self.llm.complete(LLMRequest.user(f"{text}\n\nQuestion: {question.text}", role="answer"),
                                        context.trace)
        return Reading(response.text.strip(), None, list(range(len(shown))), len(text.split()), memory.words)
