"""Evidence labels (QMSum turn ranges, LoCoMo dialogue ids) as character spans, and the evidence metrics."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from pagemind import Pagemind, ScriptedLLM
from pagemind.citations import Citation
from pagemind.eval import EvalConfig, Runner, summarise
from pagemind.eval import runner as runner_module
from pagemind.eval.evidence import Span, evidence_scores, line_offsets, overlaps, place, qmsum_spans, support_proxy
from pagemind.eval.memgpt import document_of
from pagemind.eval.report import markdown
from pagemind.eval.rundir import RunDir
from pagemind.eval.sets import load_dataset
from test_eval_datasets import write

STAGED = Path(__file__).resolve().parents[2] / "shared" / "data"
staged = pytest.mark.skipif(not (STAGED / "qmsum").is_dir() or not (STAGED / "locomo").is_dir(),
                            reason="the staged data (../shared/data) is not here")


def cited(start, end, text, unit="page", index=0, found_by="page"):
    return Citation("doc", unit, index, start, end, text[start:end], found_by)


# --- labels on the staged rows ---------------------------------------------------------------------
@staged
def test_qmsum_turn_ranges_become_the_character_spans_of_those_turns():
    examples = load_dataset("qmsum", str(STAGED), {})
    row = json.loads((STAGED / "qmsum" / "val.jsonl").open().readline())  # Bed002, the first meeting
    lines = [f"{t['speaker']}: {t['content']}" for t in row["meeting_transcripts"]]
    bed = [e for e in examples if e.meta["meeting"] == row["meeting_id"]]
    specific = [e for e in bed if e.meta["query_kind"] == "specific"]
    assert len(specific) == len(row["specific_query_list"])
    for e, q in zip(specific, row["specific_query_list"]):
        assert [s.turns for s in e.evidence] == [(int(a), min(int(b), len(lines) - 1))
                                                 for a, b in q["relevant_text_span"]]
        for s in e.evidence:
            first, last = s.turns
            assert e.document[s.start:s.end] == "\n".join(lines[first:last + 1])
        assert document_of(e).text == e.document  # the offsets hold in the text the readers read
    assert all(not e.evidence for e in bed if e.meta["query_kind"] == "general")  # whole-meeting: no labels
    # every labelled span of the split starts at a turn's first character and ends at a turn's last
    for e in (e for e in examples if e.evidence):
        for s in e.evidence:
            assert s.start == 0 or e.document[s.start - 1] == "\n"
            assert s.end == len(e.document) or e.document[s.end] == "\n"


@staged
def test_locomo_dialogue_ids_become_the_lines_of_those_turns():
    examples = load_dataset("locomo", str(STAGED), {})
    raw = json.loads((STAGED / "locomo" / "locomo_conversations_1-5.json").read_text())
    by_id = {t["dia_id"]: t for conv in raw[:1] for k, v in conv["conversation"].items()
             if k.startswith("session_") and isinstance(v, list) for t in v}
    first = next(e for e in examples if e.id == "locomo-conv-26-0")  # "When did Caroline go to the LGBTQ ..."
    assert first.meta["evidence"] == ["D1:3"] and [s.label for s in first.evidence] == ["D1:3"]
    s = first.evidence[0]
    line = first.document[s.start:s.end]
    assert line.startswith("[2023-05-08] Caroline: ") and line.endswith(by_id["D1:3"]["text"])
    assert first.conversation[s.turns[0]].text == f"Caroline: {by_id['D1:3']['text']}"  # the agent's recall turn
    # the agent cites the recall message holding that turn (offsets into the message): it lands on the label
    turn = first.conversation[s.turns[0]].text
    sentence = turn.split(": ", 1)[1]
    message = Citation("recall", "message", 12, len(turn) - len(sentence), len(turn), sentence, "message")
    neighbour = first.conversation[s.turns[0] + 1].text
    other = Citation("recall", "message", 13, 0, len(neighbour), neighbour, "message")
    got = evidence_scores(first.document, first.evidence, [message, other])
    assert (got["recall"], got["precision"], got["placed"]) == (1.0, 0.5, 2)
    several = next(e for e in examples if e.document_id == "locomo-conv-26" and len(e.evidence) > 1)
    for s in several.evidence:
        assert by_id[s.label]["text"] in several.document[s.start:s.end]
    # the data's broken ids are recorded, never guessed
    broken = {e.id: e.meta["evidence_unresolved"] for e in examples if "evidence_unresolved" in e.meta}
    assert broken["locomo-conv-43-18"] == ["D:11:26"]
    assert sum(bool(e.evidence) for e in examples) >= len(examples) - len(broken)


def test_qmsum_spans_from_a_constructed_transcript(tmp_path):
    lines = ["A: one .", "B: two two .", "A: three ."]
    offsets = line_offsets(lines)
    text = "\n".join(lines)
    spans = qmsum_spans([["1", "2"], ["0", "0"]], offsets, "row")
    assert [text[s.start:s.end] for s in spans] == ["B: two two .\nA: three .", "A: one ."]
    assert qmsum_spans([["2", "3"]], offsets, "row")[0].turns == (2, 2)  # one past the end is clamped
    with pytest.raises(Exception, match="outside"):
        qmsum_spans([["3", "4"]], offsets, "row")


# --- overlap and the metrics -----------------------------------------------------------------------
def test_overlap_is_of_half_open_spans():
    assert overlaps((0, 10), (9, 20))  # one shared character
    assert not overlaps((0, 10), (10, 20))  # touching: no shared character
    assert not overlaps((10, 20), (0, 10))
    assert overlaps((5, 6), (0, 100)) and overlaps((0, 100), (5, 6))  # containment, both ways
    assert not overlaps((3, 3), (0, 10))  # an empty span overlaps nothing


def test_recall_and_precision_by_hand():
    text = "".join(f"sentence {i:02d}. " for i in range(20))  # 13 characters each
    labels = (Span("turns 0-1", 0, 26, (0, 1)), Span("turns 10-10", 130, 143, (10, 10)))
    # a citation ending exactly where label 2 starts must not count: an off-by-one overlap would make it a hit
    touching = cited(117, 130, text)
    assert evidence_scores(text, labels, [touching])["recall"] == 0.0
    cites = [cited(13, 26, text), cited(0, 5, text), touching, cited(200, 213, text)]
    got = evidence_scores(text, labels, cites)
    assert got["recall"] == 0.5 and got["hit"] == [0]  # label 0 hit (twice), label 1 not
    assert got["precision"] == 0.5  # 2 of 4 citations on a label
    assert (got["labels"], got["citations"], got["placed"]) == (2, 4, 4)
    cites.append(cited(135, 140, text))
    assert evidence_scores(text, labels, cites)["recall"] == 1.0
    none = evidence_scores(text, labels, [])
    assert none["recall"] == 0.0 and none["precision"] is None


def test_a_citation_of_another_text_is_placed_by_its_quote():
    text = "[2023-05-08] Caroline: I went to a support group.\n[2023-05-08] Melanie: Nice!"
    labels = (Span("D1:1", 0, text.index("\n"), (0, 0)),)
    message = Citation("agent", "message", 7, 0, 43, "Caroline: I went to a support group.", "message")
    assert place(text, message) == (13, text.index("\n"))  # a recall message lands on its transcript line
    invented = Citation("agent", "message", 8, 0, 10, "Nobody said this.", "quote")
    assert place(text, invented) is None
    got = evidence_scores(text, labels, [message, invented])
    assert (got["recall"], got["precision"], got["placed"]) == (1.0, 0.5, 1)
    assert evidence_scores(text, labels, [message.as_dict()])["recall"] == 1.0  # records hold dicts


def test_support_proxy():
    text = "The keeper's daughter rowed to the island at dawn."
    c = [cited(0, len(text), text)]
    assert support_proxy("She rowed to the island", c) == 1.0  # "she" is a stopword: rowed, island
    assert support_proxy("She swam to the island", c) == 0.5
    assert support_proxy("She swam to the island", []) == 0.0
    assert support_proxy(None, c) is None and support_proxy("the", c) is None


def test_evidence_of_a_multiple_choice_answer_is_the_proxy():
    from pagemind.answering.question import Answer
    from pagemind.eval.datasets import Example

    text = "Wren found the map under the stairs."
    e = Example("q", "quality", "choice", "Who found the map?", "d", text, options=("Wren", "Abel"), gold=0)
    answer = Answer(question=e.as_question(), method="full", text="Wren", choice=0,
                    citations=[cited(0, len(text), text)])
    assert runner_module.evidence_of(e, answer) == {"support": 1.0}
    assert runner_module.evidence_of(e, replace(answer, choice=1, text="Abel")) == {"support": 0.0}
    assert runner_module.evidence_of(e, replace(answer, choice=None)) == {"support": None}


# --- the runner keeps citations; the report shows the evidence ---------------------------------------
def qmsum_with_spans(root):
    turns = [{"speaker": "AB"[i % 2], "content": f"turn {i} " + " ".join(f"w{i}x{j}" for j in range(40)) + " ."}
             for i in range(12)]
    write(root / "qmsum" / "val.jsonl", [{
        "meeting_id": "M0", "general_query_list": [{"query": "Summarize the whole meeting", "answer": "a plan"}],
        "specific_query_list": [{"query": "What about turn 3?", "answer": "turn three", "relevant_text_span":
                                 [["3", "4"], ["9", "9"]]}],
        "meeting_transcripts": turns}], lines=True)


def test_records_keep_citations_and_the_report_shows_evidence(tmp_path, monkeypatch):
    qmsum_with_spans(tmp_path)
    read = runner_module._read

    def citing(reader, memory, example, chosen=None, source=None):  # the answer cites turn 3
        answer = read(reader, memory, example, chosen, source)
        at = example.document.index("B: turn 3 ")
        end = example.document.index("\n", at)
        return replace(answer, citations=[Citation("d", "text", None, at, end, example.document[at:end], "text")])

    monkeypatch.setattr(runner_module, "_read", citing)
    fake = ScriptedLLM(by_role={"answer": "turn three was discussed"}, default="turn three was discussed")
    with Pagemind(fake, store=tmp_path / "store.db") as pm:
        Runner(pm, EvalConfig(dataset="qmsum", methods=("full",), data=str(tmp_path)), tmp_path / "run",
               progress=False).run()
    recs = {r["example_id"]: r for r in RunDir(tmp_path / "run").read()}
    specific, general = recs["qmsum-M0-s0"], recs["qmsum-M0-g0"]
    assert specific["citations"][0]["quote"].startswith("B: turn 3 ")
    assert specific["citations"][0]["location"] == "text"
    assert [lab["turns"] for lab in specific["labels"]] == [[3, 4], [9, 9]]
    assert specific["evidence"]["recall"] == 0.5 and specific["evidence"]["precision"] == 1.0
    assert "labels" not in general and general["evidence"] == {}
    summary = summarise(tmp_path / "run")
    m = summary["methods"][0]
    assert (m["evidence_n"], m["evidence_recall"], m["evidence_precision"], m["citations"]) == (1, 0.5, 1.0, 1.0)
    md = markdown(summary)
    assert "| citations/q | evidence recall | evidence precision |" in md
    assert "| 1.00 | 0.500 | 1.000 |" in md and "overlap" in md


def test_a_failed_labelled_example_counts_zero_recall(tmp_path):
    rd = RunDir(tmp_path / "run")
    rd.start({"dataset": "locomo", "methods": ["memgpt"], "params": {}, "seed": 0, "limit": None, "budget": None,
              "model": "m", "raters": False, "by_document": False, "primary": "f1", "method_options": {},
              "commands": []})
    label = [{"label": "D1:1", "start": 0, "end": 5, "turns": [0, 0]}]
    rd.append("examples.jsonl", {"key": "memgpt|a", "example_id": "a", "method": "memgpt", "status": "ok",
                                 "scores": {"f1": 1.0}, "usage": {}, "labels": label, "citations": [{}, {}],
                                 "evidence": {"recall": 1.0, "precision": 0.5}})
    rd.append("examples.jsonl", {"key": "memgpt|b", "example_id": "b", "method": "memgpt", "status": "error",
                                 "error": "X", "labels": label})
    rd.append("examples.jsonl", {"key": "memgpt|c", "example_id": "c", "method": "memgpt", "status": "ok",
                                 "scores": {"f1": 0.0}, "usage": {}, "citations": [], "evidence": {}})  # no labels
    m = summarise(tmp_path / "run")["methods"][0]
    assert (m["evidence_n"], m["evidence_recall"], m["evidence_precision"]) == (2, 0.5, 0.5)
    assert m["citations"] == 1.0  # 2 and 0 citations over the two answers
    assert m["evidence_support"] is None


def test_a_multiple_choice_run_reports_the_support_proxy(tmp_path):
    article = ("Wren found the map under the stairs of the lighthouse. Abel slept through the storm. "
               "The keeper's ledger was kept in the harbour office for years.\n\n") * 3
    write(tmp_path / "quality" / "quality_dev_slice.json", [
        {"article_id": str(i), "article": f"Article {i}.\n\n{article}", "question": f"Who found the map ({i})?",
         "options": ["Wren found the map", "Abel found the map", "The keeper", "Nobody"], "gold_label": 0}
        for i in range(2)])
    with Pagemind(ScriptedLLM(by_role={"answer": "Answer: (A)"}), store=tmp_path / "store.db") as pm:
        Runner(pm, EvalConfig(dataset="quality", methods=("full",), data=str(tmp_path)), tmp_path / "run",
               progress=False).run()
    recs = RunDir(tmp_path / "run").read()
    for r in recs:  # the full-text reader cites by default; each record keeps its citations and the proxy
        assert "labels" not in r and set(r["evidence"]) == {"support"}
        assert all(c["quote"] and c["end"] > c["start"] for c in r["citations"])
    m = summarise(tmp_path / "run")["methods"][0]
    assert m["evidence_recall"] is None and m["evidence_n"] == 0
    assert [r["choice"] for r in recs] == ["A", "A"]
    assert all(r["evidence"]["support"] == 1.0 for r in recs)  # "Wren found the map under the stairs" is cited
    assert m["evidence_support"] == pytest.approx(sum(r["evidence"]["support"] for r in recs) / len(recs))
    assert "evidence support (proxy)" in markdown(summarise(tmp_path / "run"))


def test_the_summary_reports_the_share_of_quotes_dropped_in_quotes_mode(tmp_path):
    article = ("Wren found the map under the stairs of the lighthouse. Abel slept through the storm. "
               "The keeper's ledger was kept in the harbour office for years.\n\n") * 3
    write(tmp_path / "quality" / "quality_dev_slice.json", [
        {"article_id": "0", "article": f"Article 0.\n\n{article}", "question": "Who found the map?",
         "options": ["Wren found the map", "Abel found the map", "The keeper", "Nobody"], "gold_label": 0}])
    quotes = json.dumps({"quotes": ["Wren found the map under the stairs", "Abel drew the map in the sand"]})
    with Pagemind(ScriptedLLM(by_role={"answer": "Answer: (A)", "cite": quotes}), store=tmp_path / "store.db") as pm:
        Runner(pm, EvalConfig(dataset="quality", methods=("full",), data=str(tmp_path),
                              method_options={"full": {"cite": "quotes"}}), tmp_path / "run", progress=False).run()
    (rec,) = RunDir(tmp_path / "run").read()
    assert [c["found_by"] for c in rec["citations"]] == ["quote"]
    assert any(f.startswith("quote not in the text") for f in rec["fallbacks"])
    summary = summarise(tmp_path / "run")
    assert summary["methods"][0]["quotes_dropped"] == 0.5  # one of the model's two quotes is not in the article
    assert "quotes dropped" in markdown(summary)
    default = summarise_method_of(tmp_path, article)
    assert default["quotes_dropped"] is None  # the default mode asks for no quotes: nothing to drop


def summarise_method_of(tmp_path: Path, article: str) -> dict:
    with Pagemind(ScriptedLLM(by_role={"answer": "Answer: (A)"}), store=tmp_path / "store.db") as pm:
        Runner(pm, EvalConfig(dataset="quality", methods=("full",), data=str(tmp_path)), tmp_path / "plain",
               progress=False).run()
    return summarise(tmp_path / "plain")["methods"][0]
