"""Every reader cites, on the real embedded model (the tiny SmolLM2): each citation's quote is the document's text
at its offsets (issue 23)."""

import pytest

from helpers import on_embedded_models
from pagemind.cli.main import sample_path

pytestmark = on_embedded_models()

READERS = [("full", {}), ("rag", {"fragment_words": 120}), ("op-rag", {"fragment_words": 120}),
           ("rag", {"fragment_words": 120, "fragrel": True}), ("gistmem", {}), ("readagent-p", {}),
           ("readagent-s", {"max_pages": 1}),
           ("memwalker", {"segment_tokens": 200, "max_children": 3, "node_tokens": 120, "reasoning_chars": 80})]


@pytest.fixture(scope="module")
def session(tiny_model):
    return tiny_model


def test_every_reader_cites_text_that_is_really_there(session, tmp_path):
    book = tmp_path / "story.txt"
    book.write_text("\n\n".join(sample_path().read_text().split("\n\n")[:5]))  # ~270 words: one or two pages
    document = session.document(book)
    question, options = "What is the name of the supply boat?", ["Isobel's Gate", "Margery Dell", "Orra's Bowl"]
    cited = {}
    for method, opts in READERS:
        answer = session.ask(book, question, options=options, method=method, **opts)
        for c in answer.citations:
            assert document.text[c.start:c.end] == c.quote and c.document == document.id, (method, c)
        cited[method] = len(answer.citations)
    quoted = session.ask(book, question, options=options, method="full", cite="quotes")
    assert quoted.choice is None or "cite" in [e.role for e in quoted.trace.events]  # asked after a chosen option
    for c in quoted.citations:
        assert document.text[c.start:c.end] == c.quote
    assert all(c.found_by == "quote" for c in quoted.citations) or any("instead" in f for f in quoted.fallbacks)
    code = tmp_path / "src"
    (code / "pkg").mkdir(parents=True)
    (code / "pkg" / "boat.py").write_text('BOAT = "Margery Dell"\n\n\ndef boat_name():\n    return BOAT\n')
    answer = session.ask_code(code, "What does boat_name return?")
    for c in answer.citations:
        assert (code / c.document).read_text()[c.start:c.end] == c.quote and c.found_by == "window"
    assert sum(cited.values()) > 0, cited
