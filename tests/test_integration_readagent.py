"""ReadAgent end to end on the real embedded model (the tiny SmolLM2: it exercises every path quickly)."""

import re

import pytest

from helpers import on_embedded_models
from pagemind.cli.main import sample_path

pytestmark = on_embedded_models()


@pytest.fixture(scope="module")
def session(tiny_model):
    return tiny_model


# the tiny model's gists run to the reply limit (512 tokens: 42 of the first test's 55 s on 2 cores); 96 tokens
# keep every path (pagination, gists, look-up, answer) and the run short
GIST = 96


def short_text() -> str:
    paragraphs = sample_path().read_text().split("\n\n")
    return "\n\n".join(paragraphs[:12])  # ~700 words: two or three pages


def test_readagent_p_end_to_end_on_the_embedded_model(session, tmp_path):
    book = tmp_path / "story.txt"
    book.write_text(short_text())
    question = "What is the name of the supply boat?"
    options = ["Isobel's Gate", "Margery Dell", "Orra's Bowl", "Kell Stone"]
    answer = session.ask(book, question, options=options, method="readagent-p", max_tokens=GIST)
    memory = session.reader("readagent-p", max_tokens=GIST).load(session.document(book))
    assert memory is not None and len(memory.pages) >= 2
    assert " ".join(p.text for p in memory.pages).split() == short_text().split()
    assert all(g.text.strip() for g in memory.gists)
    assert {p.label_source for p in memory.pages} <= {"llm", "fallback", "tail"}
    # the grammar makes the tiny model's decisions parse: one look-up naming pages, one answer naming an option
    assert [e.role for e in answer.trace.events] == ["lookup", "answer"]
    lookup, final = answer.trace.events
    assert answer.letter in ("A", "B", "C", "D"), (answer.letter, answer.text, answer.fallbacks)
    assert final.reply == f"Answer: ({answer.letter})" and answer.text == options[answer.choice]
    assert not any(f.startswith("no option named") for f in answer.fallbacks)
    # the pages read are the valid page ids the look-up named, in its order (the last ones dropped only when
    # they did not fit, recorded as such)
    assert lookup.reply.startswith("I want to look up Page [")
    named = list(dict.fromkeys(int(n) for n in re.findall(r"\d+", lookup.reply)))
    assert named and all(0 <= p < len(memory.pages) for p in named)
    assert answer.pages_read == named[:len(answer.pages_read)]
    dropped = [f for f in answer.fallbacks if f.startswith("page ") and "dropped" in f]
    assert len(answer.pages_read) + len(dropped) == len(named), (answer.pages_read, named, answer.fallbacks)
    assert answer.usage.prompt_tokens > 0
    document = session.document(book)  # every citation's quote is the document's text at its offsets
    assert all(document.text[c.start:c.end] == c.quote and c.document == document.id for c in answer.citations)
    # the same question again: memory and replies come from the store
    again = session.ask(book, question, options=options, method="readagent-p", max_tokens=GIST)
    assert again.letter == answer.letter and again.usage.calls == again.usage.cached_calls == 2


def test_readagent_s_and_free_form_on_the_embedded_model(session, tmp_path):
    book = tmp_path / "story.txt"
    book.write_text(short_text())
    answer = session.ask(book, "Who finds the map?", method="readagent-s", max_pages=2, max_tokens=GIST)
    assert answer.text.strip()
    assert answer.choice is None
    roles = [e.role for e in answer.trace.events]
    assert roles[-1] == "answer" and 1 <= roles.count("lookup") <= 2 + 2 * 2
    assert len(set(answer.pages_read)) == len(answer.pages_read) <= 2
    document = session.document(book)
    assert all(document.text[c.start:c.end] == c.quote for c in answer.citations)
