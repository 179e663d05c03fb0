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
from pagemind.eval.generated import babi_story, load_babilong
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


# --- PageIndex's PDF benchmark --------------------------------------------------------------------------------
def test_pageindex_questions_point_at_pdf_pages_and_citations_are_scored_by_page(tmp_path):
    pytest.importorskip("pypdf")
    from test_formats import make_pdf

    folder = tmp_path / "pageindex"
    (folder / "pdfs").mkdir(parents=True)
    pages = [[f"Report page {p} line {k} about revenue growth" for k in range(6)] for p in range(1, 5)]
    pages[2][0] = "Net revenue in 2023 was 4.2 billion dollars"
    (folder / "pdfs" / "report.pdf").write_bytes(make_pdf(pages))
    write(folder / "questions.json", [
        {"doc_id": "report.pdf", "question": "What was net revenue in 2023?", "answer": "4.2 billion dollars",
         "answer_format": "str", "evidence_pages": [3], "evidence_sources": ["text"], "doc_type": "financial"},
        {"doc_id": "report", "question": "How many pages?", "answer": 4, "answer_format": "int",
         "evidence_pages": [], "evidence_sources": [], "doc_type": "financial"}])
    examples = load_dataset("pageindex", tmp_path)
    first = examples[0]
    [span] = first.evidence
    assert span.label == "page 3" and first.document[span.start:span.end].startswith("Net revenue in 2023")
    assert "Report page 4" not in first.document[span.start:span.end]
    assert examples[1].references == ("4",) and examples[0].document_id == examples[1].document_id
    write(folder / "questions.json", [{"doc_id": "report.pdf", "question": "?", "answer": "x",
                                       "evidence_pages": [9]}])
    with pytest.raises(DatasetError, match="evidence page 9 is not a page of report.pdf"):
        load_dataset("pageindex", tmp_path)
    write(folder / "questions.json", [{"doc_id": "missing.pdf", "question": "?", "answer": "x"}])
    with pytest.raises(DatasetError, match="no PDF for 'missing.pdf'"):
        load_dataset("pageindex", tmp_path)

    write(folder / "questions.json", [{"doc_id": "report.pdf", "question": "What was net revenue in 2023?",
                                       "answer": "4.2 billion dollars", "evidence_pages": [3]}])
    fake = ScriptedLLM(by_role={"answer": "Net revenue in 2023 was 4.2 billion dollars [1]."})
    run(fake, tmp_path, tmp_path / "run", dataset="pageindex", methods=("full",))
    [row] = RunDir(tmp_path / "run").read()
    assert row["scores"]["f1"] >= 0.5 and row["labels"] == [{"label": "page 3", "start": span.start,
                                                           "end": span.end, "turns": [0, 0]}]
    assert row["evidence"]["recall"] == 1.0 and row["evidence"]["precision"] == 1.0  # the cited page is page 3


def test_every_new_set_is_registered_with_its_citation():
    specs = datasets()
    for name in ("longmemeval", "babilong", "infbench-mc", "infbench-qa", "longbench2", "pageindex"):
        assert specs[name].description and specs[name].citation
    assert specs["longmemeval"].primary == "judge" and specs["babilong"].needs_data is False


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
