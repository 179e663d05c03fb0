"""The benchmarks of issue 27 on format-exact samples the tests write (the real files are not staged here):
LongMemEval (loader, the agent asked at the question's date, the benchmark's judge per type, per-type report,
session recall of cited answers), the BABILong-style generator (deterministic, facts where the evidence says,
accuracy by length), ∞Bench En.MC / En.QA, LongBench v2 (by length) and PageIndex's PDF benchmark (evidence pages
as labels), each run end to end through the runner with the scripted fake."""

from __future__ import annotations

import json
import re

import pytest

from pagemind import Pagemind, ScriptedLLM
from pagemind.errors import DatasetError
from pagemind.eval import EvalConfig, Runner, summarise
from pagemind.eval.datasets import DatasetWarning
from pagemind.eval.generated import babi_story, load_babilong
from pagemind.eval.raters import Raters, Verdict, parse_verdict
from pagemind.eval.rundir import RunDir
from pagemind.eval.sets import datasets, load_dataset
from test_eval_datasets import write


def run(fake, root, run_dir, **config):
    with Pagemind(fake, store=root / "store.db") as pm:
        return Runner(pm, EvalConfig(**{"data": str(root), **config}), run_dir, progress=False).run()


# --- LongMemEval ----------------------------------------------------------------------------------------------
def session(*turns, answer_at=None):
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": t, **({"has_answer": True}
                                                                              if i == answer_at else {})}
            for i, t in enumerate(turns)]


LME = [
    {"question_id": "q-user-1", "question_type": "single-session-user", "question": "What is my cat called?",
     "answer": "Miso", "question_date": "2023/06/01 (Thu) 10:00",
     "haystack_session_ids": ["s-late", "s-cat"],  # the oracle file is not sorted by date
     "haystack_dates": ["2023/05/29 (Mon) 09:15", "2023/05/20 (Sat) 02:21"],
     "haystack_sessions": [session("Any tips for tomatoes?", "Water them deeply."),
                           session("I just adopted a cat called Miso.", "Congratulations on Miso!", answer_at=0)],
     "answer_session_ids": ["s-cat"]},
    {"question_id": "q-time-2", "question_type": "temporal-reasoning",
     "question": "How many days before asking this did I adopt my cat?", "answer": "12 days",
     "question_date": "2023/06/01 (Thu) 10:00", "haystack_session_ids": ["s-cat"],
     "haystack_dates": ["2023/05/20 (Sat) 02:21"],
     "haystack_sessions": [session("I just adopted a cat called Miso.", "Lovely.", answer_at=0)],
     "answer_session_ids": ["s-cat"]},
    {"question_id": "q-dog-3_abs", "question_type": "single-session-user", "question": "What is my dog called?",
     "answer": "You did not mention a dog.", "question_date": "2023/06/01 (Thu) 10:00",
     "haystack_session_ids": ["s-cat"], "haystack_dates": ["2023/05/20 (Sat) 02:21"],
     "haystack_sessions": [session("I just adopted a cat called Miso.", "Lovely.")], "answer_session_ids": []},
]


def test_longmemeval_reads_the_published_format(tmp_path):
    write(tmp_path / "longmemeval" / "longmemeval_oracle.json", LME)
    examples = load_dataset("longmemeval", tmp_path, {"split": "oracle"})
    first = examples[0]
    assert [e.id for e in examples] == ["q-user-1", "q-time-2", "q-dog-3_abs"]
    assert first.question == "(Current date: 2023/06/01 (Thu) 10:00) What is my cat called?"
    # sessions in date order, each turn dated from its session, the user's turns as the user's
    assert [(t.role, t.time) for t in first.conversation] == [
        ("user", "2023-05-20 02:21:00"), ("assistant", "2023-05-20 02:22:00"), ("user", "2023-05-29 09:15:00"),
        ("assistant", "2023-05-29 09:16:00")]
    assert first.document.startswith("Session s-cat (2023/05/20 (Sat) 02:21):\n[2023-05-20 02:21] User: I just")
    [span] = first.evidence  # the answer session, header to last turn
    assert first.document[span.start:span.end] == ("Session s-cat (2023/05/20 (Sat) 02:21):\n[2023-05-20 02:21] "
                                                   "User: I just adopted a cat called Miso.\n[2023-05-20 02:22] "
                                                   "Assistant: Congratulations on Miso!")
    assert first.meta["asked_at"] == "2023-06-01 10:00:00" and first.meta["answer_turns"] == 1
    assert examples[2].meta["abstention"] is True and examples[2].evidence == ()
    assert len(load_dataset("longmemeval", tmp_path, {"split": "oracle", "abstention": "false"})) == 2
    assert [e.id for e in load_dataset("longmemeval", tmp_path, {"split": "oracle",
                                                                 "types": "temporal-reasoning"})] == ["q-time-2"]
    with pytest.raises(DatasetError, match="unknown question types"):
        load_dataset("longmemeval", tmp_path, {"split": "oracle", "types": "trivia"})
    broken = [dict(LME[0], haystack_dates=LME[0]["haystack_dates"][:1])]
    write(tmp_path / "bad" / "longmemeval_oracle.json", broken)
    with pytest.raises(DatasetError, match="differ in length"):
        load_dataset("longmemeval", tmp_path / "bad", {"split": "oracle"})


def test_longmemeval_runs_with_its_judge_per_type_and_the_agent_asked_at_the_date(tmp_path):
    write(tmp_path / "longmemeval" / "longmemeval_oracle.json", LME)
    asked: list[str] = []

    def agent_step(request):
        asked.append(request.messages[-1].content)
        return json.dumps({"thoughts": "t", "function": "send_message", "arguments": {"message": "It is Miso."}})

    def judge(request):  # the benchmark's prompts tell the types apart; a verdict per question
        prompt = request.messages[0].content
        if "unanswerable" in prompt:
            return "no"
        return "Yes." if "What is my cat called?" in prompt else "No"

    fake = ScriptedLLM(by_role={"answer": "Your cat is Miso.", "agent-step": agent_step, "rate": judge})
    run(fake, tmp_path, tmp_path / "run", dataset="longmemeval", methods=("full", "memgpt"),
        params={"split": "oracle"})
    rows = {(r["method"], r["example_id"]): r for r in RunDir(tmp_path / "run").read()}
    for method in ("full", "memgpt"):
        assert rows[(method, "q-user-1")]["scores"]["judge"] == 1.0
        assert rows[(method, "q-time-2")]["scores"]["judge"] == 0.0
        assert rows[(method, "q-dog-3_abs")]["scores"]["judge"] == 0.0
    prompts = [h.messages[0].content for h in fake.history if h.role == "rate"]
    assert sum("do not penalize off-by-one errors" in p for p in prompts) == 2  # the temporal prompt, per method
    assert sum("Does the model correctly identify the question as unanswerable?" in p for p in prompts) == 2
    assert all("Question: What is my cat called?" in p for p in prompts if "Miso" in p and "cat called" in p)
    # the agent was asked at the question's date (its clock), with the history in recall storage
    assert any('"time": "2023-06-01 10:00"' in m for m in asked)
    summary = summarise(tmp_path / "run")
    split = summary["breakdown"]
    assert split["key"] == "question_type" and set(split["groups"]) == {"single-session-user", "temporal-reasoning"}
    assert split["scores"]["full"]["temporal-reasoning"] == [0.0, 1]


# --- BABILong -------------------------------------------------------------------------------------------------
def solve(question: str, text: str) -> str:
    """A bAbI reader that follows the facts in order (what a method that read them all could answer)."""
    where: dict[str, str] = {}
    holder: dict[str, str] = {}
    trail: dict[str, list[str]] = {}
    for who, verb, what in re.findall(r"(\w+) (moved to|went to|journeyed to|travelled to|went back to|picked up) "
                                      r"the (\w+)\.", text):
        if verb == "picked up":
            holder[what] = who
            trail[what] = [where.get(who, "")]
        else:
            where[who] = what
            for thing, person in holder.items():
                if person == who:
                    trail[thing].append(what)
    if m := re.match(r"Where is the (\w+)\?", question):
        return where[holder[m.group(1)]]
    if m := re.match(r"Where was the (\w+) before the (\w+)\?", question):
        places = trail[m.group(1)]
        return places[places.index(m.group(2)) - 1]
    m = re.match(r"Where is (\w+)\?", question)
    return where[m.group(1)] if m else "?"


def test_babilong_stories_follow_from_their_supporting_facts():
    import random

    for task in ("qa1", "qa2", "qa3"):
        for seed in range(30):
            story = babi_story(task, random.Random(seed))
            assert solve(story.question, " ".join(story.facts)) == story.answer
            assert solve(story.question, " ".join(story.facts[i] for i in story.support)) == story.answer
    with pytest.raises(DatasetError, match="unknown task"):
        babi_story("qa9", random.Random(0))


def test_babilong_is_deterministic_and_hides_its_facts_at_the_length_asked(tmp_path):
    examples = load_babilong(None, tokens=(4000, 16000), samples=2)
    assert len(examples) == 12 and examples == load_babilong(None, tokens=(4000, 16000), samples=2)
    assert examples != load_babilong(None, tokens=(4000, 16000), samples=2, seed=1)
    for e in examples:
        target = e.meta["target_tokens"] * 0.75
        assert target <= e.meta["words"] <= target + 1200  # whole paragraphs, plus the facts
        assert solve(e.question, e.document) == e.references[0]
        assert len(e.evidence) == e.meta["supporting"]
        for span in e.evidence:
            assert re.fullmatch(r"\w+ [a-z ]+ the \w+\.", e.document[span.start:span.end])
    (tmp_path / "hay").mkdir()
    (tmp_path / "hay" / "a.txt").write_text("\n\n".join(f"Paragraph {i} " + "word " * 60 for i in range(40)))
    own = load_babilong(tmp_path / "hay", tasks=("qa1",), tokens=(1000,), samples=1)
    assert "Paragraph" in own[0].document and solve(own[0].question, own[0].document) == own[0].references[0]
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError, match="no text of 200 words"):
        load_babilong(tmp_path / "empty")
    with pytest.raises(DatasetError, match="outside 500"):
        load_babilong(None, tokens=(100,))


def test_babilong_runs_without_data_and_reports_accuracy_by_length(tmp_path, monkeypatch):
    monkeypatch.setenv("PAGEMIND_DATA", str(tmp_path / "nothing-here"))

    def answer(request):
        prompt = "\n".join(m.content for m in request.messages)
        question = re.search(r"(Where [^?]+\?)", prompt.split("Question")[-1] if "Question" in prompt else prompt)
        return solve(question.group(1), prompt) if question else "?"

    fake = ScriptedLLM(by_role={"answer": answer})
    with Pagemind(fake, store=tmp_path / "store.db") as pm:
        Runner(pm, EvalConfig(dataset="babilong", methods=("full",), params={"tokens": "1000,2000",
                                                                                     "samples": "2"}),
               tmp_path / "run", progress=False).run()
    rows = RunDir(tmp_path / "run").read()
    assert len(rows) == 12 and all(r["scores"]["accuracy"] == 1.0 for r in rows)
    split = summarise(tmp_path / "run")["breakdown"]
    assert split["key"] == "target_tokens" and split["groups"] == ["1000", "2000"]


# --- ∞Bench, LongBench v2 -------------------------------------------------------------------------------------
NOVEL = "\n\n".join(f"Chapter {i}. " + " ".join(f"w{i}x{j}" for j in range(80)) for i in range(20))


def test_infbench_and_longbench_v2_read_their_published_formats_and_run(tmp_path):
    write(tmp_path / "infbench" / "longbook_choice_eng.jsonl", [
        {"id": 0, "context": NOVEL, "input": "Who keeps the ledger?", "answer": ["Wren"],
         "options": ["Tam", "Wren", "Sixpence", "the keeper"]},
        {"id": 1, "context": NOVEL, "input": "Where is the map?", "answer": ["under the stair"],
         "options": ["in the lamp", "under the stair", "at sea", "nowhere"]}], lines=True)
    write(tmp_path / "infbench" / "longbook_qa_eng.jsonl", [
        {"id": 7, "context": NOVEL, "input": "Who keeps the ledger?", "answer": ["Wren", "the keeper Wren"],
         "options": []}], lines=True)
    mc = load_dataset("infbench-mc", tmp_path)
    assert [e.gold for e in mc] == [1, 1] and mc[0].document_id == mc[1].document_id  # one novel, one memory
    qa = load_dataset("infbench-qa", tmp_path)
    assert qa[0].task == "qa" and qa[0].references == ("Wren", "the keeper Wren")
    write(tmp_path / "bad" / "longbook_choice_eng.jsonl", [{"id": 0, "context": NOVEL, "input": "?",
                                                            "answer": ["Nobody"], "options": ["A", "B"]}], lines=True)
    with pytest.raises(DatasetError, match="not one of the options"):
        load_dataset("infbench-mc", tmp_path / "bad")

    rows = [{"_id": f"lb{i}", "domain": "Single-Document QA", "sub_domain": "Novel", "difficulty": "hard",
             "length": length, "question": "Who keeps the ledger?", "choice_A": "Tam", "choice_B": "Wren",
             "choice_C": "Sixpence", "choice_D": "Nobody", "answer": "B", "context": NOVEL + f" {i}"}
            for i, length in enumerate(("short", "medium", "long"))]
    write(tmp_path / "longbench2" / "data.json", rows)
    lb = load_dataset("longbench2", tmp_path)
    assert [e.gold for e in lb] == [1, 1, 1] and [e.meta["length"] for e in lb] == ["short", "medium", "long"]
    assert [e.id for e in load_dataset("longbench2", tmp_path, {"length": "long"})] == ["longbench2-lb2"]

    fake = ScriptedLLM(by_role={"answer": "Answer: (B)"})
    run(fake, tmp_path, tmp_path / "run-lb", dataset="longbench2", methods=("full",))
    split = summarise(tmp_path / "run-lb")["breakdown"]
    assert split["key"] == "length" and split["scores"]["full"]["long"] == [1.0, 1]
    run(fake, tmp_path, tmp_path / "run-mc", dataset="infbench-mc", methods=("rag",))
    assert all(r["scores"]["accuracy"] == 1.0 for r in RunDir(tmp_path / "run-mc").read())


# --- Long PDFs with evidence pages: PageIndex-OSS-Benchmark and MMLongBench-Doc-V2 ----------------------------
def pdf_folder(folder, name="report.pdf", unreadable=()):
    """A 4-page report (page 3 holds the revenue) in ``documents/``, as both repositories lay them out, and an
    image-only deck for each name in ``unreadable``."""
    from helpers import make_pdf

    (folder / "documents").mkdir(parents=True, exist_ok=True)
    pages = [[f"Report page {p} line {k} about revenue growth" for k in range(6)] for p in range(1, 5)]
    pages[2][0] = "Net revenue in 2023 was 4.2 billion dollars"
    (folder / "documents" / name).write_bytes(make_pdf(pages))
    for other in unreadable:
        (folder / "documents" / other).write_bytes(make_pdf([None, None]))


def published(doc_id, question, answer, pages, fmt="Str", sources="['Pure-text (Plain-text)']", **more):
    """A row as both sets publish it: the lists spelled as Python strings."""
    return {"doc_id": doc_id, "question": question, "answer": answer, "answer_format": fmt,
            "evidence_pages": pages, "evidence_sources": sources, "doc_type": "Financial report", **more}


def test_pageindex_reads_the_published_format_and_scores_citations_by_page(tmp_path):
    pytest.importorskip("pypdf")
    folder = tmp_path / "pageindex"
    pdf_folder(folder)
    write(folder / "questions.json", [
        published("report.pdf", "What was net revenue in 2023?", "4.2 billion dollars", "[3]", task_type="lookup"),
        published("report.pdf", "Which pages discuss growth?", "['page one', 'page two']", "[1, 1, 2]", "List",
                  task_type="enumerate"),
        published("report.pdf", "How many pages?", 4, "[]", "Int", "[]", task_type="count"),
        published("report.pdf", "Who audited it?", "Not answerable or none", "[]", "None", "[]",
                  task_type="lookup")])
    examples = load_dataset("pageindex", tmp_path)
    first, listed, counted, unanswerable = examples
    [span] = first.evidence
    assert span.label == "page 3" and first.document[span.start:span.end].startswith("Net revenue in 2023")
    assert "Report page 4" not in first.document[span.start:span.end]
    assert [s.label for s in listed.evidence] == ["page 1", "page 2"]  # "[1, 1, 2]": page 1 once
    assert listed.references == ("page one; page two",) and listed.meta["answer"] == "['page one', 'page two']"
    assert counted.references == ("4",) and first.document_id == counted.document_id == "pageindex-report"
    assert first.meta["evidence_sources"] == ["Pure-text (Plain-text)"] and first.meta["task_type"] == "lookup"
    # V2's slices: one evidence page; else cross-page when answerable (the count names no page)
    assert [e.meta["evidence_kind"] for e in examples] == ["single-page", "cross-page", "cross-page", "unanswerable"]
    assert [e.id for e in load_dataset("pageindex", tmp_path, {"task_type": "lookup"})] == [first.id,
                                                                                            unanswerable.id]
    write(folder / "questions.json", [published("missing.pdf", "?", "x", "[1]")])
    with pytest.raises(DatasetError, match="no PDF for 'missing.pdf'"):
        load_dataset("pageindex", tmp_path)
    write(folder / "questions.json", [published("report.pdf", "?", "x", "[one]")])
    with pytest.raises(DatasetError, match="evidence_pages .* is not a list"):
        load_dataset("pageindex", tmp_path)


def test_unreadable_pdfs_and_pages_a_pdf_lacks_are_left_out_with_a_note_the_run_keeps(tmp_path):
    pytest.importorskip("pypdf")
    folder = tmp_path / "mmlongbench-doc"
    pdf_folder(folder, unreadable=["slides.pdf"])
    write(folder / "samples.json", [
        published("report.pdf", "What was net revenue in 2023?", "4.2 billion dollars", "[3, 1418]"),
        published("slides.pdf", "What colour is the logo?", "Blue", "[1]", sources="['Figure']"),
        published("slides.pdf", "What is on slide 2?", "A map", "[2]", sources="['Figure']")])
    write(folder / "question_types.json", [{"doc_id": "report.pdf", "question": "What was net revenue in 2023?",
                                            "task_type": "lookup", "requires_visual": False}])
    with pytest.warns(DatasetWarning) as caught:
        [example] = load_dataset("mmlongbench-doc", tmp_path)
    notes = [str(w.message) for w in caught]
    assert any("2 question(s) left out, about 1 PDF(s)" in n and "slides.pdf: has no text layer" in n
               for n in notes)
    assert any("evidence pages their PDF does not have" in n and "[1418]" in n for n in notes)
    assert [s.label for s in example.evidence] == ["page 3"] and example.meta["task_type"] == "lookup"

    fake = ScriptedLLM(by_role={"answer": "Net revenue in 2023 was 4.2 billion dollars [1].",
                                "rate": '{"equivalent": true, "abstained": false, "reason": "same value"}'})
    run(fake, tmp_path, tmp_path / "run", dataset="mmlongbench-doc", methods=("full",))
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert len(config["dataset_notes"]) == 2 and "slides.pdf" in config["dataset_notes"][0]
    from pagemind.eval import write_report

    _, warned = write_report(tmp_path / "run")
    assert warned[:2] == config["dataset_notes"]
    assert "- while loading: mmlongbench-doc: 2 question(s) left out" in (tmp_path / "run" / "summary.md").read_text()


def test_the_mmlongbench_v2_judge_scores_pageindex_answers_and_citations_count_by_page(tmp_path):
    pytest.importorskip("pypdf")
    folder = tmp_path / "pageindex"
    pdf_folder(folder)
    write(folder / "questions.json", [
        published("report.pdf", "What was  net revenue\n in 2023?", "4.2 billion dollars", "[3]"),
        published("report.pdf", "Who audited it?", "Not answerable", "[]", "None", "[]")])

    def judge(request):  # V2's prompt carries the reference and the format; one verdict per question
        prompt = request.messages[0].content
        if "<reference_answer>Not answerable</reference_answer>" in prompt:
            return "The response declines."  # no verdict: asked again, then counted as not equivalent
        assert "<question>What was net revenue in 2023?</question>" in prompt  # whitespace collapsed, as V2 does
        assert "<expected_format>Str</expected_format>" in prompt and "Treat the reference answer as correct" in prompt
        return '```json\n{"equivalent": true, "abstained": false, "reason": "Same figure."}\n```'

    fake = ScriptedLLM(by_role={"answer": "Net revenue in 2023 was 4.2 billion dollars [1].", "rate": judge})
    run(fake, tmp_path, tmp_path / "run", dataset="pageindex", methods=("full",))
    rows = {r["example_id"]: r for r in RunDir(tmp_path / "run").read()}
    right, declined = rows["pageindex-0"], rows["pageindex-1"]
    assert right["scores"]["judge"] == 1.0 and right["scores"]["abstained"] == 0.0
    assert right["rating"] == {"judge": 100, "fallbacks": [], "abstained": False, "reason": "Same figure."}
    assert right["evidence"]["recall"] == 1.0 and right["evidence"]["precision"] == 1.0  # it cited page 3
    assert declined["scores"]["judge"] == 0.0 and "judge gave no verdict" in declined["rating"]["fallbacks"][0]
    assert sum(r == "rate" for r in fake.roles()) == 1 + 3  # one verdict; one reply without one, asked twice more
    summary = summarise(tmp_path / "run")
    assert summary["primary"] == "judge" and summary["breakdown"]["key"] == "evidence_kind"
    assert summary["breakdown"]["scores"]["full"] == {"single-page": [1.0, 1], "unanswerable": [0.0, 1]}
    # V2's F1: recall 1/1 answerable, precision 1 right of 2 that did not abstain
    [full] = summary["methods"]
    assert full["metrics"]["v2_f1"] == round(2 * 1.0 * 0.5 / 1.5, 4) and full["metrics"]["abstained"] == 0.0


def test_auto_is_evaluated_as_users_get_it_the_method_it_picks_per_document_named(tmp_path):
    pytest.importorskip("pypdf")
    folder = tmp_path / "pageindex"
    pdf_folder(folder)
    write(folder / "questions.json", [published("report.pdf", "What was net revenue in 2023?", "4.2 billion dollars",
                                                "[3]")])
    fake = ScriptedLLM(by_role={"answer": "Net revenue in 2023 was 4.2 billion dollars [1].",
                                "rate": '{"equivalent": true, "abstained": false, "reason": "same"}'},
                       context_window=4096)
    run(fake, tmp_path, tmp_path / "small", dataset="pageindex", methods=("auto",))
    [row] = RunDir(tmp_path / "small").read()
    assert row["method"] == "auto" and row["details"]["auto"]["method"] == "full"  # 4 short pages fit
    [build] = [b for b in RunDir(tmp_path / "small").read("builds.jsonl") if b["status"] == "ok"]
    assert build["chosen"]["method"] == "full" and "fit the 4,096-token window" in build["chosen"]["reason"]
    fake = ScriptedLLM(by_role=fake.by_role, context_window=1400)  # no room to spare now: OP-RAG reads the pages
    run(fake, tmp_path, tmp_path / "tight", dataset="pageindex", methods=("auto",))
    [row] = RunDir(tmp_path / "tight").read()
    assert row["details"]["auto"]["method"] == "op-rag" and row["scores"]["judge"] == 1.0


def test_asked_of_the_whole_library_the_right_pdf_must_be_found_and_cited(tmp_path):
    """library=true: every question reads all the PDFs as one library (one memory); its labels stay on its own
    PDF, so a citation of the right words in another PDF is not a hit."""
    pytest.importorskip("pypdf")
    from helpers import make_pdf

    folder = tmp_path / "pageindex"
    pdf_folder(folder, unreadable=["deck.pdf"])
    other = [[f"Annual memo page {p} line {k} about staffing" for k in range(6)] for p in range(1, 3)]
    other[1][0] = "Net revenue in 2023 was 9.9 billion dollars at the sister company"
    (folder / "documents" / "memo.pdf").write_bytes(make_pdf(other))
    write(folder / "questions.json", [
        published("report.pdf", "What was net revenue in 2023?", "4.2 billion dollars", "[3]", task_type="lookup"),
        published("memo.pdf", "How many pages?", 2, "[]", "Int", "[]", task_type="count"),
        published("deck.pdf", "What colour is the logo?", "Blue", "[1]", task_type="lookup")])
    with pytest.warns(DatasetWarning, match="deck.pdf: has no text layer"):
        [asked] = load_dataset("pageindex", tmp_path, {"library": "true", "task_type": "lookup"})
    assert asked.document_id == "pageindex-library" and [n for n, _ in asked.library] == ["memo.pdf", "report.pdf"]
    assert asked.document.startswith("Report page 1")  # its own PDF, which its labels are spans of

    def answer(request):
        prompt = "\n".join(m.content for m in request.messages)
        assert "Annual memo page" in prompt and "Report page" in prompt  # one library: both PDFs are read
        return "Net revenue in 2023 was 4.2 billion dollars [1]."

    fake = ScriptedLLM(by_role={"answer": answer, "rate": '{"equivalent": true, "abstained": false, "reason": "r"}'})
    run(fake, tmp_path, tmp_path / "lib", dataset="pageindex", methods=("full",),
        params={"library": "true", "task_type": "lookup"})
    assert "deck.pdf" in json.loads((tmp_path / "lib" / "config.json").read_text())["dataset_notes"][0]
    [row] = RunDir(tmp_path / "lib").read()
    named = {c["document_name"] for c in row["citations"]}
    assert named == {"report.pdf", "memo.pdf"}  # both revenue sentences align with the answer
    assert row["evidence"]["recall"] == 1.0 and row["evidence"]["precision"] == 0.5  # the memo's is on no label
    assert len([b for b in RunDir(tmp_path / "lib").read("builds.jsonl") if b["status"] == "ok"]) == 1


def test_a_citation_of_another_document_of_the_library_is_on_no_label():
    from pagemind.citations import Citation
    from pagemind.eval.evidence import Span, evidence_scores

    text = "Intro. Net revenue in 2023 was 4.2 billion dollars. Outro."
    start = text.index("Net")
    quote = text[start:start + 43]
    label = [Span("page 3", start, start + 43)]

    def cite(document):
        return Citation(document, "text", None, start, start + 43, quote, "text")

    assert evidence_scores(text, label, [cite("own")])["recall"] == 1.0
    assert evidence_scores(text, label, [cite("own")], "own")["recall"] == 1.0
    # the same words in another member: a hit only if nobody checks which document was cited
    assert evidence_scores(text, label, [cite("other")])["recall"] == 1.0
    scored = evidence_scores(text, label, [cite("other"), cite("own")], "own")
    assert scored["hit"] == [0] and scored["precision"] == 0.5 and scored["placed"] == 1
    assert evidence_scores(text, label, [cite("other")], "own")["recall"] == 0.0


def test_a_response_past_twelve_thousand_characters_is_cut_as_the_v2_script_cuts_it():
    from pagemind.llm.client import LLM

    fake = ScriptedLLM(by_role={"rate": '{"equivalent": false, "abstained": true, "reason": "declined"}'})
    judged = Raters(LLM(fake)).mmlongbench("Q?", "7", "Int", "x" * 12000 + "TAIL")
    prompt = fake.history[0].messages[0].content
    assert "x" * 12000 in prompt and "TAIL" not in prompt
    assert (judged.rating, judged.abstained, judged.reason) == (0, True, "declined")
    assert parse_verdict('{"equivalent": true, "abstained": false, "reas') == Verdict(True, False, "")
    assert parse_verdict("Equivalent: yes") is None


def test_every_new_set_is_registered_with_its_citation():
    specs = datasets()
    for name in ("longmemeval", "babilong", "infbench-mc", "infbench-qa", "longbench2", "pageindex",
                 "mmlongbench-doc"):
        assert specs[name].description and specs[name].citation
    assert specs["longmemeval"].primary == "judge" and specs["babilong"].needs_data is False
    assert specs["pageindex"].primary == specs["mmlongbench-doc"].primary == "judge"


def test_the_new_sets_run_from_the_command_line(tmp_path):
    from click.testing import CliRunner

    from pagemind.cli.main import cli

    write(tmp_path / "longmemeval" / "longmemeval_oracle.json", LME)
    fake = ScriptedLLM(by_role={"answer": "Your cat is Miso.", "rate": "yes"})

    def invoke(*args):
        return CliRunner().invoke(cli, ["eval", *args, "--store", str(tmp_path / "s.db"), "--no-progress"],
                                  obj={"backend": fake})

    done = invoke("longmemeval", "-m", "full", "-p", "split=oracle", "--data", str(tmp_path), "--run-dir",
                  str(tmp_path / "lme"))
    assert done.exit_code == 0, done.output
    assert "question_type" in (tmp_path / "lme" / "summary.md").read_text()  # the per-type table
    assert "3 answered now (0 failed)" in done.stderr
    made = invoke("babilong", "-m", "full", "-p", "tokens=1000", "-p", "samples=1", "--run-dir",
                  str(tmp_path / "bl"))
    assert made.exit_code == 0, made.output
    assert len(RunDir(tmp_path / "bl").read()) == 3


def test_the_pdf_sets_run_from_the_command_line_with_their_notes_on_stderr(tmp_path):
    pytest.importorskip("pypdf")
    from click.testing import CliRunner

    from pagemind.cli.main import cli

    folder = tmp_path / "pageindex"
    pdf_folder(folder, unreadable=["deck.pdf"])
    write(folder / "questions.json", [
        published("report.pdf", "What was net revenue in 2023?", "4.2 billion dollars", "[3]", task_type="lookup"),
        published("deck.pdf", "What colour is the logo?", "Blue", "[1]", task_type="lookup")])
    fake = ScriptedLLM(by_role={"answer": "Net revenue in 2023 was 4.2 billion dollars [1].",
                                "rate": '{"equivalent": true, "abstained": false, "reason": "same"}'})
    done = CliRunner().invoke(cli, ["eval", "pageindex", "-m", "auto", "-m", "op-rag", "-p", "library=true",
                                    "--data", str(tmp_path), "--run-dir", str(tmp_path / "run"), "--store",
                                    str(tmp_path / "s.db"), "--no-progress"], obj={"backend": fake})
    assert done.exit_code == 0, done.output
    assert "warning: pageindex: 1 question(s) left out, about 1 PDF(s)" in done.stderr
    assert "2 answered now (0 failed)" in done.stderr
    summary = (tmp_path / "run" / "summary.md").read_text()
    assert "| auto |" in summary and "| op-rag |" in summary and "v2_f1" in summary
