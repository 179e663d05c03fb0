"""Every document reader cites the sentences its answer rests on (issue 23), through the base Reader's one path:
aligned sentences by default (no LLM call), quotes the model gives and pagemind checks with ``cite=quotes``."""

import json

import pytest
from click.testing import CliRunner

from helpers import first_words_gist, middle_label
from pagemind import LLM, Document, Pagemind, ScriptedLLM, Store
from pagemind.answering.evidence import Evidence, parse_quotes, sentences, supporting
from pagemind.answering.question import Question
from pagemind.cli.main import cli
from pagemind.methods import registry

FACT = "Wren found the map inside an old sea chest."
BOAT = "The supply boat was called the Margery Dell."
ANSWER = "Wren found the map in a sea chest."


def paragraph(i: int, words: int = 60) -> str:
    filler = " ".join(f"p{i}w{j}" for j in range(words)) + "."
    return {1: f"{FACT} {filler}", 22: f"{BOAT} {filler}"}.get(i, filler)


def text(paragraphs: int = 30) -> str:
    return "\n\n".join(paragraph(i) for i in range(paragraphs))


def navigate(request):
    prompt = request.messages[-1].content
    return f"Reasoning: it is here.\nAction: -2\nAnswer: {ANSWER}" if "-2" in prompt else "Reasoning: first.\nAction: 0"


def fake(**roles):
    return ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist, "summarise": "a summary",
                                "lookup": "I want to look up Page [0]", "navigate": navigate, "answer": ANSWER,
                                **roles})


READERS = [  # method, options, what the citations are found by
    ("full", {}, {"text"}),
    ("rag", {"fragment_words": 100}, {"fragment"}),
    ("op-rag", {"fragment_words": 100}, {"fragment"}),
    ("rag", {"fragment_words": 100, "fragrel": True}, {"fragment"}),  # FragRel
    ("gistmem", {}, {"gist"}),
    ("readagent-p", {}, {"page", "gist"}),
    ("readagent-s", {"max_pages": 1}, {"page", "gist"}),
    ("memwalker", {"segment_tokens": 200}, {"leaf"}),
]


def answer_with(method, options, document, question="Who found the map, and where?", scripted=None, **cite):
    scripted = scripted or fake()
    reader = registry.get(method)(LLM(scripted, concurrency=1), Store(":memory:"), **options, **cite)
    memory = reader.build(document)
    before = len(scripted.history)
    answer = reader.answer(memory, Question.parse(question))
    return answer, scripted.history[before:]


def check_offsets(answer, document):
    for c in answer.citations:
        assert document.text[c.start:c.end] == c.quote, c
        assert c.document == document.id


@pytest.mark.parametrize("method,options,found_by", READERS, ids=[f"{m}{'+fragrel' if o.get('fragrel') else ''}"
                                                                  for m, o, _ in READERS])
def test_every_reader_cites_the_sentence_its_answer_rests_on(method, options, found_by):
    document = Document.from_text(text())
    answer, calls = answer_with(method, options, document)
    assert answer.text == ANSWER
    assert answer.citations, answer.fallbacks
    check_offsets(answer, document)
    assert {c.found_by for c in answer.citations} <= found_by
    assert answer.citations[0].quote == FACT  # the best-supporting sentence first
    assert answer.citations[0].score is not None and answer.citations[0].score > 0
    assert all(c.unit == {"full": "text", "memwalker": "leaf"}.get(method, "page" if "read" in method or method ==
                                                                    "gistmem" else "fragment")
               for c in answer.citations)
    assert answer.as_dict()["citations"][0]["quote"] == FACT
    # the default mode adds no LLM call: the same calls as without citations
    off, calls_off = answer_with(method, options, document, cite="off")
    assert off.citations == [] and [r.role for r in calls] == [r.role for r in calls_off]
    assert "cite" not in [r.role for r in calls]


def test_memwalker_cites_its_answering_leaf_and_keeps_the_path():
    document = Document.from_text(text())
    answer, _ = answer_with("memwalker", {"segment_tokens": 200}, document)
    path = answer.details["answer_path"]
    assert path[0] == "root" and answer.citations[0].index == answer.pages_read[-1]
    assert {c.index for c in answer.citations} == {answer.pages_read[-1]}


def test_a_multiple_choice_answer_cites_the_chosen_option():
    document = Document.from_text(text())
    answer, _ = answer_with("full", {}, document, "What was the supply boat called?\n(A) Orra\n(B) Margery Dell",
                            fake(answer="Answer: (B)"))
    assert answer.letter == "B" and answer.citations[0].quote == BOAT
    unanswered, _ = answer_with("full", {}, document, "What was the supply boat called?\n(A) Orra\n(B) Margery Dell",
                                fake(answer="I cannot tell."))
    assert unanswered.choice is None and unanswered.citations == []  # no option chosen: nothing to support


def test_a_paged_document_cites_its_own_page():
    parts = ["\n\n".join(paragraph(i) for i in range(k, k + 10)) for k in (0, 10, 20)]
    document = Document.from_parts(parts, name="book.pdf", format="pdf")
    answer, _ = answer_with("readagent-p", {}, document, "What was the supply boat called?",
                            fake(answer="The boat was called the Margery Dell.", lookup="I want to look up Page [0]"))
    check_offsets(answer, document)
    boat = next(c for c in answer.citations if c.quote == BOAT)
    assert boat.source_page == 3 and "(p. 3)" in boat.location and boat.found_by == "gist"  # seen through its gist
    first, _ = answer_with("full", {}, document)
    assert first.citations[0].source_page == 1


def test_the_code_reader_cites_its_windows_in_their_files(tmp_path):
    files = {"pkg/alpha.py": "def alpha_total(values):\n    return sum(values)\n",
             "pkg/beta.py": "def beta_scale(values, factor):\n    return [v * factor for v in values]\n"}
    for path, body in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(body)
    pm = Pagemind(ScriptedLLM(by_role={"answer": "alpha_total returns the sum of the values."}),
                  store=Store(":memory:"))
    # the encoder asked for by name: this passed only after another test had loaded MiniLM into the process
    answer = pm.ask_code(tmp_path, "What does alpha_total return?", cite_encoder="minilm")
    assert answer.details["cite_encoder"] == "minilm"
    assert answer.citations and {c.found_by for c in answer.citations} == {"window"}
    for c in answer.citations:
        assert files[c.document][c.start:c.end] == c.quote
    assert answer.citations[0].document == "pkg/alpha.py" and "alpha_total" in answer.citations[0].quote


# --- quoted evidence ------------------------------------------------------------------------------------------
def test_quotes_are_checked_and_an_invented_quote_is_dropped_as_a_fallback():
    document = Document.from_text(text())
    invented = "Abel painted the lighthouse moon green."
    scripted = fake(cite=json.dumps({"quotes": [FACT.lower().replace(" ", "  "), invented, "..."]}))
    answer, calls = answer_with("readagent-p", {}, document, scripted=scripted, cite="quotes")
    assert [r.role for r in calls] == ["lookup", "answer", "cite"]  # one added call, after the paper's answer
    # found despite case and spacing; the quote is the document's own text (the loose match spans the words)
    assert [c.quote for c in answer.citations] == [FACT.rstrip(".")]
    assert answer.citations[0].found_by == "quote" and answer.citations[0].unit == "page"
    check_offsets(answer, document)
    assert all(invented not in c.quote for c in answer.citations)
    assert any("dropped" in f and "Abel painted" in f for f in answer.fallbacks)
    assert any(f.startswith("quote too short to check") for f in answer.fallbacks)
    assert "Quote, word for word" in calls[-1].messages[0].content and FACT in calls[-1].messages[0].content
    # the paper's prompts are untouched: the answer request is the same as in the default mode
    _, default_calls = answer_with("readagent-p", {}, document)
    assert default_calls[-1].messages == calls[1].messages


def test_quotes_that_are_all_invented_fall_back_to_aligned_sentences():
    document = Document.from_text(text())
    scripted = fake(cite='{"quotes": ["Nothing like this is in the story."]}')
    answer, _ = answer_with("full", {}, document, scripted=scripted, cite="quotes")
    assert [c.found_by for c in answer.citations][:1] == ["text"] and answer.citations[0].quote == FACT
    assert any("dropped" in f for f in answer.fallbacks) and any("instead" in f for f in answer.fallbacks)


def test_an_unreadable_quote_reply_is_re_asked_then_recorded():
    document = Document.from_text(text())
    scripted = fake(cite=["I used the first page.", '{"quotes": ["' + FACT + '"]}'])
    answer, calls = answer_with("full", {}, document, scripted=scripted, cite="quotes")
    assert [r.role for r in calls] == ["answer", "cite", "cite"] and answer.citations[0].found_by == "quote"


def test_parse_quotes_and_sentences():
    assert parse_quotes('```json\n{"quotes": ["a b.", " "]}\n```') == ["a b."]
    assert parse_quotes('- "one."\n- "two."') == ["one.", "two."]
    assert isinstance(parse_quotes("no quotes"), str) and isinstance(parse_quotes('{"quotes": 3}'), str)
    assert sentences("One two. Three?\nFour\n\nFive.") == ["One two.", "Three?", "Four", "Five."]
    assert sentences("a = 1\nb = 2", lines=True) == ["a = 1", "b = 2"]
    assert sentences("A Mr. Osric Pellow came. He left.") == ["A Mr. Osric Pellow came.", "He left."]
    doc = Document.from_text("Alpha beta.\n\nGamma delta. Wren keeps the map.")
    found = supporting(doc, [Evidence("text", None, doc.text, "text")], "the map is Wren's")
    assert [c.quote for c in found] == ["Wren keeps the map."]
    assert supporting(doc, [Evidence("text", None, doc.text, "text")], "nothing shared") == []


# --- the CLI --------------------------------------------------------------------------------------------------
def test_cli_ask_prints_markers_and_sources_and_json_carries_them(tmp_path):
    book = tmp_path / "story.txt"
    book.write_text(text())
    scripted = fake()
    result = CliRunner().invoke(cli, ["ask", str(book), "Who found the map?", "-m", "full"],
                                obj={"backend": scripted})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith(ANSWER + " [1]")
    assert "Sources:" in lines and any(line.startswith("[1] text (text): ") and FACT in line for line in lines)
    data = json.loads(CliRunner().invoke(cli, ["ask", str(book), "Who found the map?", "-m", "full", "--json"],
                                         obj={"backend": scripted}).stdout)
    assert data["citations"][0]["quote"] == FACT and data["citations"][0]["location"] == "text"
    quoted = CliRunner().invoke(cli, ["ask", str(book), "Who found the map?", "-m", "full", "--cite", "quotes",
                                      "--json"], obj={"backend": fake(cite=json.dumps({"quotes": [FACT]}))})
    assert json.loads(quoted.stdout)["citations"][0]["found_by"] == "quote"


def test_an_encoder_re_ranks_the_lexical_candidates():
    from pagemind.answering.evidence import rank
    from pagemind.retrieval.embed import HashingEmbedder

    document = Document.from_text(text())
    evidence = [Evidence("text", None, document.text, "text")]
    lexical = rank(evidence, ANSWER, "Who found the map?")
    mixed = rank(evidence, ANSWER, "Who found the map?", embedder=HashingEmbedder())
    assert {c.sentence for c in mixed} == {c.sentence for c in lexical} and mixed[0].sentence == FACT
    assert mixed[0].score != lexical[0].score  # the encoder's similarity is mixed in
    found = supporting(document, evidence, ANSWER, embedder=HashingEmbedder())
    assert found[0].quote == FACT and document.text[found[0].start:found[0].end] == FACT


def test_the_citation_encoder_is_an_option_resolved_when_the_reader_is_made():
    """The encoder that ranks the cited sentences was whatever the process had loaded: in a server, the first RAG
    request switched every later full-text answer to MiniLM. It is the ``cite_encoder`` option now, and recorded."""
    document = Document.from_text(text(), name="doc.txt")
    dense, _ = answer_with("rag", {"scorer": "hybrid"}, document)  # loads the retrieval stack
    assert dense.details["cite_encoder"] == "minilm" and not any("cite_encoder" in f for f in dense.fallbacks)
    whole, _ = answer_with("full", {}, document)
    assert whole.details["cite_encoder"] == "lexical"  # auto: the full text does not embed, whatever ran before
    again, _ = answer_with("full", {}, document, cite_encoder="minilm")
    assert again.details["cite_encoder"] == "minilm"
    plain, _ = answer_with("rag", {}, document, cite_encoder="lexical")  # bm25, asked lexical
    assert plain.details["cite_encoder"] == "lexical"
    check_offsets(again, document)
