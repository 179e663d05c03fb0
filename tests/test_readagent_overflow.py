"""ReadAgent beyond the window (pagemind's variant past the paper's stated limit): when the whole gist memory does
not fit, the look-up shows the gists most relevant to the question, in narrative order; when it fits, nothing
changes."""

from __future__ import annotations

import re

import pytest

from helpers import middle_label
from pagemind.answering.question import Question
from pagemind.errors import ContextWindowExceeded
from pagemind.llm.client import LLM
from pagemind.llm.fake import ScriptedLLM
from pagemind.methods import registry
from pagemind.store import Store
from pagemind.text import Document

QUESTION = Question("Where did the lighthouse keeper hide the brass compass?", ("in the boathouse", "in the attic"))


def book(pages: int = 60) -> Document:
    """Paragraphs of filler; one paragraph in the middle speaks of the compass."""
    paragraphs = [" ".join(f"tide{i}w{j}" for j in range(70)) for i in range(pages * 5)]
    paragraphs[pages * 5 // 2] = ("The lighthouse keeper hid the brass compass in the boathouse under the nets. "
                                  + " ".join(f"filler{j}" for j in range(50)))
    return Document.from_text("\n\n".join(paragraphs))


def first_shown_page(request) -> str:
    shown = re.findall(r"^<Page (\d+)>$", request.messages[0].content, flags=re.MULTILINE)
    return f"I want to look up Page [{shown[0]}] to check" if request.role == "lookup" else "STOP"


def twelve_words_a_paragraph(request) -> str:
    """A 'gist': the first twelve words of each of the page's paragraphs."""
    page = request.messages[-1].content.split("Passage:\n", 1)[1]
    return " ".join(" ".join(line.split()[:12]) for line in page.splitlines() if line.strip())


def fake(window: int) -> ScriptedLLM:
    return ScriptedLLM(by_role={"paginate": middle_label, "gist": twelve_words_a_paragraph,
                                "lookup": first_shown_page,
                                "answer": "Answer: (A) in the boathouse"}, context_window=window)


@pytest.mark.parametrize("method", ["readagent-p", "readagent-s", "gistmem"])
def test_a_gist_memory_beyond_the_window_answers_from_the_most_relevant_gists(method):
    doc = book()
    scripted = fake(2048)
    reader = registry.get(method)(LLM(scripted), Store(":memory:"), **({"max_pages": 1} if method != "gistmem"
                                                                        else {}))
    memory = reader.build(doc)
    assert len(memory.pages) > 40 and LLM(scripted).count_tokens(memory.tagged_gists()) > 2048
    answer = reader.answer(memory, QUESTION)
    assert answer.letter == "A"
    shown = answer.details["gists_shown"]
    assert shown == sorted(shown) and 0 < len(shown) < len(memory.pages)  # narrative order, a subset
    compass = next(p.index for p in memory.pages if "compass" in p.text)
    assert compass in shown  # BM25 found the page that speaks of the compass
    assert any("overflow=retrieve" in f for f in answer.fallbacks)
    prompt = scripted.history[-1].messages[0].content
    assert all(f"<Page {i}>" not in prompt for i in set(range(len(memory.pages))) - set(shown))


def test_refuse_is_the_papers_limit_and_a_memory_that_fits_is_answered_exactly_as_the_paper():
    doc = book()
    reader = registry.get("readagent-p")(LLM(fake(2048)), Store(":memory:"), overflow="refuse")
    memory = reader.build(doc)
    with pytest.raises(ContextWindowExceeded, match="overflow=refuse"):
        reader.answer(memory, QUESTION)
    roomy = fake(1_000_000)
    wide = registry.get("readagent-p")(LLM(roomy), Store(":memory:"))
    answer = wide.answer(wide.build(doc), QUESTION)
    assert "gists_shown" not in answer.details and not any("overflow" in f for f in answer.fallbacks)
    lookup = next(r for r in roomy.history if r.role == "lookup").messages[0].content
    assert lookup.count("<Page ") == len(memory.pages)  # every gist, as the paper
