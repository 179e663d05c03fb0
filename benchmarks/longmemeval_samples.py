"""(z) LongMemEval's knowledge-update and temporal-reasoning types on format-exact samples: the MemGPT agent and
OP-RAG through ``pagemind eval`` (LongMemEval's loader, its judge prompts per type, session recall of citations).

LongMemEval itself is not staged here (``pagemind data get longmemeval`` fetches it; run this harness on it with
a server elsewhere). This script writes six questions in the published ``longmemeval_oracle.json`` layout — three
whose answer changed between sessions (knowledge update: "Where do I live now?" after a move), three that need the
sessions' dates (temporal reasoning) — each in a history of five dated sessions, and runs the evaluation on them.
The judge is the same model (``--rater-llm`` to change it).

    python benchmarks/longmemeval_samples.py [--llm local:qwen2.5-coder-1.5b] [--tag before] [--methods memgpt,op-rag]
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

from common import RUNS, method_options, results_for, write_result

FILLER = [("Any tips for growing tomatoes on a balcony?", "Water them deeply and give them full sun."),
          ("Can you suggest a quick weeknight dinner?", "A vegetable stir-fry with rice takes twenty minutes."),
          ("What is a good stretch after running?", "Try a standing quad stretch for thirty seconds a side."),
          ("Recommend a podcast about history.", "Many people enjoy 'The Rest Is History'.")]

# (id, type, question, answer, question date, [(session date, user turn, answer-bearing)], answer session index)
SAMPLES = [
    ("ku-home", "knowledge-update", "Which city do I live in now?", "Leeds", "2023/09/01 (Fri) 10:00",
     [("2023/03/02 (Thu) 09:00", "I live in York and I love the old city walls.", True),
      ("2023/07/15 (Sat) 18:30", "Big news: I moved to Leeds last week for my new job.", True)]),
    ("ku-bike", "knowledge-update", "How many bikes do I own at the moment?", "three", "2023/10/10 (Tue) 08:00",
     [("2023/04/11 (Tue) 19:00", "I own two bikes, a road bike and a gravel bike.", True),
      ("2023/08/20 (Sun) 12:00", "I bought a folding bike for the train, so now I have three bikes.", True)]),
    ("ku-job", "knowledge-update", "What is my job title now?", "senior editor", "2023/12/01 (Fri) 09:00",
     [("2023/02/14 (Tue) 10:00", "I work as an assistant editor at a small publisher.", True),
      ("2023/10/03 (Tue) 17:45", "I was promoted to senior editor today!", True)]),
    ("tr-trip", "temporal-reasoning", "How many days after my dentist appointment did I fly to Lisbon?", "10 days",
     "2023/06/30 (Fri) 10:00",
     [("2023/06/05 (Mon) 09:00", "I had a dentist appointment this morning; two fillings.", True),
      ("2023/06/15 (Thu) 20:00", "I just landed in Lisbon today for a week of holiday.", True)]),
    ("tr-first", "temporal-reasoning", "Which did I start first, pottery classes or the Spanish course?",
     "pottery classes", "2023/11/20 (Mon) 10:00",
     [("2023/05/08 (Mon) 18:00", "I started pottery classes tonight, my bowl was lopsided.", True),
      ("2023/09/12 (Tue) 19:00", "First lesson of my Spanish course today, hola!", True)]),
    ("tr-weeks", "temporal-reasoning", "How many weeks ago did I adopt my cat Miso?", "4 weeks",
     "2023/06/17 (Sat) 10:00",
     [("2023/05/20 (Sat) 11:00", "I adopted a cat today and named her Miso.", True)]),
]


def dataset() -> list[dict]:
    rows = []
    for qid, kind, question, answer, asked, told in SAMPLES:
        sessions = [(date, [(user, "Thanks for telling me.")], True) for date, user, _ in told]
        months = sorted(d for d, _, _ in sessions)
        for i, (user, reply) in enumerate(FILLER):  # small talk around them, on dates of its own
            sessions.append((f"{months[0][:8]}{10 + 4 * i:02d}{months[0][10:11]}", [(user, reply)], False))
        sessions.sort(key=lambda s: s[0])
        rows.append({"question_id": qid, "question_type": kind, "question": question, "answer": answer,
                     "question_date": asked,
                     "haystack_session_ids": [f"{qid}-s{i}" for i in range(len(sessions))],
                     "haystack_dates": [_date(d) for d, _, _ in sessions],
                     "haystack_sessions": [[t for u, r in turns for t in (
                         {"role": "user", "content": u, **({"has_answer": True} if has else {})},
                         {"role": "assistant", "content": r})] for _, turns, has in sessions],
                     "answer_session_ids": [f"{qid}-s{i}" for i, (_, _, has) in enumerate(sessions) if has]})
    return rows


def _date(text: str) -> str:
    """A sample's date as LongMemEval writes it ("2023/05/20 (Sat) 02:21"); filler dates get a plain weekday."""
    return text if "(" in text else f"{text[:10]} (Mon) 12:00"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--llm", default=None, help="default: the embedded default model")
    parser.add_argument("--methods", default="memgpt,op-rag")
    parser.add_argument("--budget", type=int, default=1500)
    parser.add_argument("--tag", default="")
    parser.add_argument("--runs", type=Path, default=RUNS)
    parser.add_argument("-O", "--option", action="append", default=[], help="METHOD:KEY=VALUE (as pagemind eval)")
    args = parser.parse_args()
    from pagemind import Pagemind
    from pagemind.eval import EvalConfig, Runner, summarise, write_report

    name = f"longmemeval-samples-{re.sub(r'[^A-Za-z0-9.-]+', '-', args.llm or 'default').strip('-')}" + \
        (f"-{args.tag}" if args.tag else "")
    run_dir = args.runs / name
    data = args.runs / f"{name}-data" / "longmemeval"
    data.mkdir(parents=True, exist_ok=True)
    (data / "longmemeval_oracle.json").write_text(json.dumps(dataset(), indent=1))
    started = time.perf_counter()
    with Pagemind(args.llm, store=args.runs / f"{name}-store.db") as pm:
        config = EvalConfig(dataset="longmemeval", methods=tuple(args.methods.split(",")), data=str(data.parent),
                            params={"split": "oracle"}, budget=args.budget,
                            method_options=method_options(args.option))
        Runner(pm, config, run_dir, command="python benchmarks/longmemeval_samples.py").run()
    write_report(run_dir)
    summary = summarise(run_dir)
    rows = {m["method"]: {k: m.get(k) for k in ("n", "errors", "score", "evidence_recall", "tokens", "seconds")}
            for m in summary["methods"]}
    by_type = summary.get("breakdown", {}).get("scores", {})
    write_result(name, {"model": summary["config"].get("model"), "budget": args.budget, "questions": len(SAMPLES),
                        "seconds": round(time.perf_counter() - started, 1), "methods": rows, "by_type": by_type},
                 into=results_for(args.runs))


if __name__ == "__main__":
    main()
