"""The evaluation of support (issue 38): AUROC, accuracy at 80% coverage, wrong and right answers flagged, and the
unanswerable variants that give every labelled set an abstention half — checked with a scripted oracle."""

import json

import pytest

from pagemind import Pagemind, ScriptedLLM
from pagemind.eval import EvalConfig, Runner, summarise
from pagemind.eval.datasets import Example
from pagemind.eval.evidence import Span
from pagemind.eval.generated import load_babilong
from pagemind.eval.report import (
    auroc,
    coverage_accuracy,
    coverage_at_precision,
    ece_consistency,
    expected_calibration_error,
    markdown,
    threshold_at_precision,
)
from pagemind.eval.rundir import RunDir
from pagemind.eval.unanswerable import REFERENCE, SUFFIX, variant, with_variants


def test_auroc_is_the_chance_a_right_answer_outranks_a_wrong_one():
    assert auroc([0.9, 0.8, 0.2, 0.1], [True, True, False, False]) == 1.0
    assert auroc([0.1, 0.2, 0.8, 0.9], [True, True, False, False]) == 0.0
    assert auroc([0.5, 0.5], [True, False]) == 0.5  # a tie counts half
    assert auroc([0.9, 0.3, 0.6], [True, False, False]) == 1.0 and auroc([0.9, 0.3], [True, True]) is None


def test_accuracy_at_coverage_answers_only_the_most_confident():
    assert coverage_accuracy([0.9, 0.8, 0.7, 0.6, 0.1], [1, 1, 1, 1, 0]) == 1.0  # the least confident 20% dropped
    assert coverage_accuracy([0.1, 0.9], [1, 0], coverage=0.5) == 0.0 and coverage_accuracy([], []) is None


def test_coverage_at_a_precision_and_the_calibration_error():
    """Issue 51: the share of answers a user could act on at 80% or 90% right (most confident first; ties kept or
    cut together), and ECE, the gap between confidence and the share right per bin."""
    confidence = [0.95, 0.9, 0.85, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2]
    right = [True, True, True, True, False, True, False, False, True, False]
    assert coverage_at_precision(confidence, right, 0.9) == 0.4  # the first four are right; five would be 80%
    assert coverage_at_precision(confidence, right, 0.8) == 0.6  # 5 of 6
    assert coverage_at_precision([0.9, 0.1], [False, True], 0.8) == 0.0 and coverage_at_precision([], [], 0.9) is None
    assert coverage_at_precision([0.5, 0.5], [True, False], 0.9) == 0.0  # a tie is not split to suit the target
    # the threshold that keeps them: the least confidence among the answers kept
    assert threshold_at_precision(confidence, right, 0.9) == 0.8
    assert threshold_at_precision(confidence, right, 0.8) == 0.6
    assert threshold_at_precision([0.5, 0.5], [True, False], 0.9) is None
    assert expected_calibration_error([0.95, 0.95, 0.15, 0.15], [True, True, False, False]) == pytest.approx(0.1)
    assert expected_calibration_error([0.5, 0.5], [True, False]) == 0.0
    assert expected_calibration_error([1.0, 1.0], [False, False]) == 1.0


def test_an_ece_is_read_against_what_so_few_answers_explain():
    import random

    rng = random.Random(7)
    few = [rng.random() for _ in range(55)]
    many = [rng.random() for _ in range(500)]
    # labels drawn from the confidence itself: calibrated, yet on 55 answers its ECE is far from 0
    calibrated = [rng.random() < c for c in few]
    floor, p = ece_consistency(few, calibrated)
    assert 0.09 < floor < 0.18 and p > 0.05
    assert expected_calibration_error(few, calibrated) > 0.05
    # the floor falls as answers grow (about 1 / sqrt(n))
    many_floor, _ = ece_consistency(many, [rng.random() < c for c in many])
    assert many_floor < floor / 2
    # a confidence off by far more than chance: nearly every draw's ECE lies below the one measured
    assert ece_consistency(many, [c < 0.5 for c in many])[1] == 0.0
    # seeded: the same answers, the same reading
    assert ece_consistency(few, calibrated) == (floor, p) and ece_consistency([], []) is None


def test_a_variant_loses_its_labelled_evidence_and_keeps_its_question():
    text = "Mary went to the kitchen. Mary journeyed to the bedroom. John sat down."
    e = Example("q1", "set", "qa", "Where is Mary?", "doc", text, references=("bedroom",),
                evidence=(Span("fact", 26, 56),), meta={"k": 1})
    v = variant(e)
    # and Mary's earlier move, from which an older answer could be read (issue 51: BABILong's earlier moves)
    assert v.id == "q1" + SUFFIX and v.document == "John sat down."
    assert v.question == e.question and v.references == (REFERENCE,) and v.evidence == ()
    assert v.meta["unanswerable"] and v.meta["removed"] == "labelled evidence" and v.meta["k"] == 1
    assert v.document_id.startswith("doc" + SUFFIX) and v.document_id != e.document_id


def test_without_labels_the_sentences_holding_the_answer_go_and_a_summary_gets_no_variant():
    text = ("The boat was called the Margery Dell. Tam skippered it every week.\n\n"
            "The inspector wore a grey coat. It rained.")
    choice = Example("c", "set", "choice", "What was the boat called?", "d", text,
                     options=("The Margery Dell", "The Pequod"), gold=0)
    v = variant(choice)
    assert "Margery" not in v.document and "grey coat" in v.document and v.options == choice.options
    summary = Example("s", "set", "summary", "Summarise.", "d", text, references=("A boat and a coat.",))
    assert variant(summary) is None  # its words are nowhere whole in the text: no sentence holds the answer
    both, missing = with_variants([choice, summary])
    assert [e.id for e in both] == ["c", "c" + SUFFIX, "s"] and missing == 1


def test_a_restatement_the_support_check_holds_goes_with_the_answer(monkeypatch):
    """Issue 51: a variant also loses every other sentence the support check judges to hold the answer to the
    question (QuALITY's restatements of the gold option), asked of each sentence alone; the rest stays."""
    from pagemind.answering import support

    text = ("The boat was called the Margery Dell. Tam skippered it every week.\n\n"
            "Her name was painted on the bow in red. The inspector wore a grey coat.")
    choice = Example("c", "set", "choice", "What was the boat called?", "d", text,
                     options=("The Margery Dell", "The Pequod"), gold=0)
    real, asked = support.assess, []

    def judged(question, answer, citations, read, embedder=None):
        asked.append((question, answer, citations[0].quote))
        if citations[0].quote.startswith("Her name was painted"):  # a restatement the words alone do not show
            return support.Support("supported", 0.9)
        return real(question, answer, citations, read, embedder)

    monkeypatch.setattr(support, "assess", judged)
    v = variant(choice)
    assert "Margery" not in v.document and "painted on the bow" not in v.document
    assert "Tam skippered it every week." in v.document and "grey coat" in v.document
    assert ("What was the boat called?", "The Margery Dell", "The inspector wore a grey coat.") in asked


def oracle(examples, wrong=()):
    """Answers what the gold fact in its prompt says; without it (a variant) or for the ``wrong`` questions, a place
    the text never names."""
    facts = {e.question: (e.document[e.evidence[0].start:e.evidence[0].end], e.references[0]) for e in examples}

    def answer(request):
        prompt = request.messages[-1].content
        question = next(q for q in facts if q in prompt)
        fact, gold = facts[question]
        return f"Answer: {gold}" if fact in prompt and question not in wrong else "Answer: garage"

    return ScriptedLLM(by_role={"answer": answer})


@pytest.mark.parametrize("wrong", [0, 2])
def test_the_report_scores_support_and_abstention_with_a_scripted_oracle(tmp_path, wrong):
    params = {"tasks": "qa1", "tokens": "1000", "samples": "4"}
    examples = load_babilong(None, tasks=("qa1",), tokens=(1000,), samples=4)
    misses = {e.question for e in examples[:wrong]}
    with Pagemind(oracle(examples, misses), store=tmp_path / "s.db") as pm:
        Runner(pm, EvalConfig("babilong", ("full",), params=params, unanswerable=True), tmp_path / "run",
               progress=False).run()
    records = RunDir(tmp_path / "run").read()
    assert len(records) == 8 and sum(bool(r["meta"].get("unanswerable")) for r in records) == 4
    assert all(r["abstained"] is False for r in records)  # the protocol's answers are scored, not replaced
    from pagemind.answering.signals import NAMES  # every answer's signals kept for fitting a confidence (issue 51)

    assert all(list(r["signals"]) == list(NAMES) and r["kind"] == "free" for r in records)
    invented = [r for r in records if r["meta"].get("unanswerable")]
    assert all(r["signals"]["supported"] == 0.0 and r["signals"]["has_probability"] == 0.0 for r in invented)
    # and its probability as the answer has it (the fake gives no log-probabilities: said, not made up)
    assert all(r["probability"] == {"basis": "none", "value": None} for r in records)
    from pagemind.answering.calibration import fitted  # the confidence: the shipped free-form model's, else hand-set

    model = fitted().get("free")
    assert all(r["confidence"] == pytest.approx(model.probability(r["signals"]) if model else
                                                r["signals"]["support_confidence"], abs=1e-4) for r in records)
    summary = summarise(tmp_path / "run")
    (m,) = summary["methods"]
    assert m["n"] == 4 and m["score"] == (4 - wrong) / 4  # the headline counts the answerable questions alone
    # the oracle's invented answers abstain: on every variant, and on the answerable questions it gets wrong
    assert m["unanswerable_n"] == 4 and m["abstention_recall"] == 1.0 and m["false_abstention"] == wrong / 4
    assert m["abstention_precision"] == pytest.approx(4 / (4 + wrong))
    if wrong:
        assert m["support_auroc"] == 1.0 and m["flagged_wrong"] == 1.0 and m["flagged_right"] == 0.0
        assert m["accuracy_at_80"] == pytest.approx(2 / 3)  # 3 of 4 answered: the two right ones first
        assert m["coverage_at_90"] == 0.5 and m["ece"] is not None
        assert m["ece_floor"] is not None and 0.0 <= m["ece_p"] <= 1.0  # the ECE beside what 4 answers explain
    else:
        assert m["support_auroc"] is None and m["flagged_right"] == 0.0  # no wrong answer to tell apart
    report = markdown(summary)
    assert "Support and abstention:" in report and "| full |" in report.split("Support and abstention:")[1]
    assert "ECE if calibrated" in report and "ECE p" in report
    assert json.loads(json.dumps(summary))  # the summary stays JSON


def test_a_sets_own_unanswerable_questions_count_for_abstention_and_stay_in_the_headline():
    from pagemind.eval.report import summarise_method

    def record(i, score, confidence, abstains, **meta):
        return {"status": "ok", "example_id": str(i), "scores": {"judge": score}, "confidence": confidence,
                "support": "unsupported" if abstains else "supported", "would_abstain": abstains, "meta": meta}

    records = [record(1, 1.0, 0.9, False), record(2, 0.0, 0.1, True),
               record(3, 1.0, 0.0, True, evidence_kind="unanswerable"),  # MMLongBench-Doc: "Not answerable"
               record(4, 0.0, 0.8, False, abstention=True)]  # LongMemEval's _abs question, answered anyway
    s = summarise_method("rag", records, [], [], "judge")
    assert s.n == 4 and s.score == 0.5  # the judge scored all four
    assert s.abstention_recall == 0.5 and s.false_abstention == 0.5 and s.abstention_precision == 0.5
    assert s.support_auroc == 1.0  # over the two answerable ones


def test_an_eval_answer_is_cited_in_its_own_document_however_many_others_the_reader_read_since(tmp_path):
    """Concurrent units push a document out of the reader's few remembered ones: the runner names it, so its answer
    keeps its citations (and with them its support) — before, such an answer had none and read as unsupported."""
    from pagemind.eval.runner import _read
    from pagemind.text import Document

    examples = load_babilong(None, tasks=("qa1",), tokens=(1000,), samples=6)
    with Pagemind(oracle(examples), store=tmp_path / "s.db") as pm:
        reader = pm.reader("full")
        first = Document.from_text(examples[0].document, examples[0].document_id)
        memory = reader.build(first)
        for e in examples[1:]:  # five more documents read by the same reader
            reader.build(Document.from_text(e.document, e.document_id))
        cited = _read(reader, memory, examples[0], None, first)
        forgotten = _read(reader, memory, examples[0])
    assert cited.citations and cited.support.label == "supported"
    assert not forgotten.citations  # what the runner used to get


def test_pagemind_eval_unanswerable_prints_the_support_and_abstention_table(tmp_path):
    from click.testing import CliRunner

    from pagemind.cli.main import cli

    examples = load_babilong(None, tasks=("qa1",), tokens=(1000,), samples=2)
    done = CliRunner().invoke(cli, ["eval", "babilong", "-m", "full", "-p", "tasks=qa1", "-p", "tokens=1000", "-p",
                                    "samples=2", "--unanswerable", "--run-dir", str(tmp_path / "run"), "--store",
                                    str(tmp_path / "s.db"), "--no-progress"], obj={"backend": oracle(examples)})
    assert done.exit_code == 0, done.output
    table = done.stdout.split("Support and abstention:")[1]
    assert "| unanswerable abstained |" in table and "| full |" in table and "100%" in table
