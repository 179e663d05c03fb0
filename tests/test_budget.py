"""``budget``: the same cap on document-derived context tokens for every method, and the CLI flag routing."""

import pytest
from click.testing import CliRunner

from helpers import first_words_gist, make_text, middle_label
from pagemind import Document, Pagemind, ScriptedLLM
from pagemind.answering.question import Question
from pagemind.cli.main import cli
from pagemind.errors import ConfigError

QUESTION = Question("Which page?", ("one", "two", "three", "four"))


def context_of(request) -> str:
    """The text block of a ReadAgent/full/RAG answer prompt (between the fixed lines of the template)."""
    return request.messages[0].content


def readagent_fake(pages="I want to look up Page [0, 1, 2] to"):
    return ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist, "lookup": pages,
                                "answer": "Answer: (B)"})


def test_readagent_budget_drops_the_last_asked_pages_and_records_it(tmp_path):
    doc = Document.from_text(make_text(30, 60))
    with Pagemind(readagent_fake(), store=tmp_path / "s.db") as pm:
        unlimited = pm.ask(doc, QUESTION, method="readagent-p")
        memory = pm.index(doc, method="readagent-p")
        one_page = memory.gist_words + max(len(p.text.split()) for p in memory.pages[:1])
        # the fake counts one token per word: room for the gists and page 0, not for pages 1 and 2 as well
        limited = pm.ask(doc, QUESTION, method="readagent-p", budget=one_page + 5)
    assert unlimited.pages_read == [0, 1, 2]
    assert limited.pages_read == [0]
    assert any("budget" in f for f in limited.fallbacks)
    assert limited.context_words <= one_page + 5 < unlimited.context_words


def test_readagent_budget_below_the_gist_memory_answers_from_gists_and_says_so(tmp_path):
    doc = Document.from_text(make_text(30, 60))
    with Pagemind(readagent_fake(), store=tmp_path / "s.db") as pm:
        answer = pm.ask(doc, QUESTION, method="readagent-p", budget=3)
    assert answer.pages_read == []
    assert any("gist memory alone" in f and "budget of 3" in f for f in answer.fallbacks)


@pytest.mark.parametrize("method,extra", [("full", {}), ("rag", {"top_k": 0, "fragment_words": 100}),
                                          ("op-rag", {"top_k": 0, "fragment_words": 100})])
def test_budget_caps_the_context_of_full_and_rag_to_the_token(tmp_path, method, extra):
    doc = Document.from_text(make_text(40, 60))
    fake = ScriptedLLM(by_role={"answer": "Answer: (A)"})
    with Pagemind(fake, store=tmp_path / "s.db") as pm:
        answer = pm.ask(doc, QUESTION, method=method, budget=700, **extra)
    assert 0 < answer.context_words <= 700
    if method == "full":
        assert answer.context_words == 700  # cut to the word
    else:  # whole 100-word fragments (plus separators) until the next one would not fit
        assert len(answer.details["fragments"]) == 7  # 7 x 100 words = 700 tokens for the fake (1 per word)


def test_memwalker_budget_cuts_working_memory_and_rejects_a_budget_below_the_segment(tmp_path):
    navigate = ["Action: 1", "Action: 1", "Action: -2\nAnswer: (A)"]

    def summarise(request):
        return " ".join(request.messages[0].content.split()[:12])

    fake = ScriptedLLM(by_role={"summarise": summarise, "navigate": list(navigate)})
    with Pagemind(fake, store=tmp_path / "s.db") as pm:
        doc = Document.from_text(make_text(8, 10))
        answer = pm.ask(doc, QUESTION, method="memwalker", segment_tokens=25, max_children=2, budget=30)
        leaf = [r for r in fake.history if r.role == "navigate"][-1].messages[0].content
        background = leaf.split("Story background information: ")[1].split("\nMain text: ")[0]
        main = leaf.split("\nMain text: ")[1].split("\n")[0]
        assert len(background.split()) + len(main.split()) <= 30
        assert answer.details["memory_truncated"] == 1
        with pytest.raises(ConfigError, match="segment"):
            pm.reader("memwalker", segment_tokens=25, budget=10)


def test_cli_routes_flags_to_their_method_and_refuses_flags_of_another(tmp_path):
    book = tmp_path / "book.txt"
    book.write_text(make_text(30, 60))
    store = str(tmp_path / "s.db")
    fake = ScriptedLLM(by_role={"answer": "Answer: (B) two"})
    runner = CliRunner()
    ok = runner.invoke(cli, ["ask", str(book), "Which page?", "-o", "one", "-o", "two", "-m", "op-rag",
                             "--top-k", "2", "--fragment-words", "100", "--fragrel", "--budget", "150",
                             "--store", store, "--json"], obj={"backend": fake})
    assert ok.exit_code == 0, ok.output
    assert '"method": "op-rag"' in ok.stdout
    prompt = fake.history[-1].messages[0].content
    assert len(prompt.split()) < 150 + 80  # one 100-word fragment fits the budget of 150, two would not
    wrong = runner.invoke(cli, ["ask", str(book), "q?", "-m", "full", "--max-children", "3", "--store", store],
                          obj={"backend": fake})
    assert wrong.exit_code == 2
    assert "--max-children applies to memwalker, not full" in wrong.output


def test_unknown_options_from_python_are_errors(tmp_path):
    with Pagemind(ScriptedLLM(), store=tmp_path / "s.db") as pm:
        for method in ("readagent-p", "memwalker", "rag", "full"):
            with pytest.raises(ConfigError, match="unknown"):
                pm.reader(method, no_such_option=1)
        with pytest.raises(ConfigError, match="unknown method"):
            pm.reader("nope")


def test_full_text_cut_to_a_budget_keeps_its_lines():
    """The full-text baseline cut to what fits keeps the text's line breaks: a statement's rows and a conversation's
    turns reach the model on their lines, not joined into one (left, right, and both ends around "[...]")."""
    from pagemind.methods.full import truncate_words

    text = "Title line\n| Net sales | 1,000 | 900 |\n| Cost of sales | 600 | 500 |\n\nLast line here"
    assert truncate_words(text, 7, "left") == "Title line\n| Net sales | 1,000"
    assert truncate_words(text, 3, "right") == "Last line here"
    assert truncate_words(text, 4, "middle") == "Title line\n[...]\nline here"
    assert truncate_words(text, 100, "left") == text and truncate_words(text, 0, "left") == ""
    fake = ScriptedLLM(default="ok")
    answer = Pagemind(fake).ask(Document.from_text(text * 40, name="s"), "What were net sales?", method="full",
                                budget=60)
    shown = fake.history[-1].messages[-1].content
    assert "| 1,000 | 900 |\n| Cost of sales |" in shown and "text truncated (left)" in " ".join(answer.fallbacks)
