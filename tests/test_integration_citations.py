"""Every reader cites, on the real embedded model (the tiny SmolLM2): each citation's quote is the document's text
at its offsets (issue 23)."""

import pytest

from helpers import on_embedded_models
from pagemind.cli.main import sample_path

pytestmark = on_embedded_models()

# every reader once on the real model: ReadAgent-P/-S and MemWalker check their citations in their own end-to-end
# tests (test_integration_readagent.py, test_integration_memwalker.py), so one document here asks the others; the
# library test asks a reader of each memory kind that composes a library on the real model (the whole text,
# fragments with and without FragRel, gists; MemWalker's library composition is tested on the scripted fake)
READERS = [("full", {}), ("rag", {"fragment_words": 120}), ("op-rag", {"fragment_words": 120}),
           ("rag", {"fragment_words": 120, "fragrel": True})]
# the tiny model's gists run to the reply limit (512 tokens, 40 s a page on 2 cores): 48 keeps every path short
GIST = 48
LIBRARY_READERS = [("full", {}), ("op-rag", {"fragment_words": 120}), ("rag", {"fragment_words": 120, "fragrel": True}),
                   ("readagent-p", {"max_tokens": GIST})]


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


def test_a_library_of_real_texts_is_asked_with_every_method_and_cites_the_right_document(session, tmp_path):
    """A library of three real texts (the story's opening, the novella's storm, its letter): every method answers
    across it on the real model, each citation's quote is its document's text at its offsets, and the methods that
    retrieve by the question's words cite the document that holds the answer."""
    story = sample_path().read_text().split("\n\n")
    novella = sample_path("long").read_text().split("\n\n")
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    (shelf / "boat.txt").write_text("\n\n".join(story[1:4]))  # the supply boat, the Margery Dell
    (shelf / "storm.txt").write_text("\n\n".join(novella[2:5]))
    (shelf / "light.txt").write_text("\n\n".join(novella[5:8]))
    session.add("real-shelf", [shelf])
    library = session.library("real-shelf")
    question = "What is the name of the supply boat?"
    for method, opts in LIBRARY_READERS:
        answer = session.ask("real-shelf", question, method=method, **opts)
        assert answer.details["library"]["documents"] == 3, method
        for c in answer.citations:
            member = library.member(c.document)
            assert member is not None and member.text[c.start:c.end] == c.quote, (method, c)
            assert c.document_name == member.name, (method, c)
        if method in ("rag", "op-rag", "full") and answer.citations:
            assert answer.citations[0].document_name == "boat.txt", (method, answer.citations[0])
    # a changed document: only it is built again, and it starts from its previous memory
    (shelf / "storm.txt").write_text("\n\n".join(novella[2:6]))
    (change,) = [c for c in session.add("real-shelf", [shelf])[0] if c.status != "unchanged"]
    assert change.name == "storm.txt" and change.status == "updated"
    again = session.ask("real-shelf", question, method="gistmem", max_tokens=GIST)
    assert again.index_trace is not None
    spent = again.index_trace.usage.calls - again.index_trace.usage.cached_calls
    from pagemind import LLM, Store
    from pagemind.methods import registry

    # no cache, no past
    alone = registry.get("gistmem")(LLM(session.llm.backend), Store(tmp_path / "alone.db"), max_tokens=GIST)
    alone.build(session.document(shelf / "storm.txt"))
    fresh = alone.store.list_memories()[0].build_usage["calls"]
    assert 0 < spent <= fresh  # the changed document only (the others are found), its unchanged pages reused
