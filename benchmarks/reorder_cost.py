"""(av, ax) What a multiple-choice answer's confidence calls cost: the answer's prompt sent again with its options
listed in reverse order (``reorder``, the default) and, where that is off, the question and options with no text (the
prior), beside the answer call, per call, on the embedded default model (its shared llama-server, whose prompt cache
holds the answer's prompt when the reordered one follows it).

    python benchmarks/reorder_cost.py [--questions 6] [--data DIR]

QuALITY questions of different articles are asked with ``rag`` at the calibration runs' budget (2,000 context
tokens, preset ``quality``) into a new store (no cached reply): once as by default (the answer and the reordered
call; the prior's call is made only where the reordered one is not), then again with ``reorder=off`` (the answer
replayed from the LLM cache, and the prior's call). Per role: the prompt tokens as accounted (a cached prefix still
counts: the matched-cost figure) and the seconds, median and range; the calls each way makes; and the reordered and
prior calls' seconds as a share of the answer call's. Stop a shared llama-server first (``pkill -f llama-server``):
one that has read these prompts before answers them from its own cache, and the answer call is timed as short as the
reordered.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from common import DATA, quality_articles, write_result
from pagemind import Document, Pagemind
from pagemind.answering.question import Question

ROLES = ("answer", "reordered", "prior")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=6)
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    rows = quality_articles(args.data, args.questions)
    calls: dict[str, list[tuple[int, float]]] = {role: [] for role in ROLES}
    made: dict[str, list[int]] = {"auto": [], "off": []}  # the calls each answer made that no cache answered
    shares: dict[str, list[float]] = {"reordered": [], "prior": []}
    with tempfile.TemporaryDirectory() as tmp, Pagemind(store=Path(tmp) / "cost.db", record_runs=False) as pm:
        for row in rows:
            question = Question(row["question"], tuple(row["options"]))
            document = Document.from_text(row["article"])
            answer_seconds = None
            for reorder in ("auto", "off"):
                answer = pm.ask(document, question, method="rag", budget=2000, preset="quality", reorder=reorder)
                fresh = [e for e in answer.trace.events if not e.cached]
                made[reorder].append(len(fresh))
                for e in fresh:
                    if e.role in calls:
                        calls[e.role].append((e.prompt_tokens, e.seconds))
                    if e.role == "answer":
                        answer_seconds = e.seconds
                    elif e.role in shares and answer_seconds:
                        shares[e.role].append(e.seconds / answer_seconds)
                print(reorder, answer.letter, answer.probability.as_dict(),
                      [(e.role, e.prompt_tokens, round(e.seconds, 2), e.cached) for e in answer.trace.events],
                      flush=True)

    def summary(values: list[float]) -> dict:
        return {"median": round(statistics.median(values), 3), "min": round(min(values), 3),
                "max": round(max(values), 3)} if values else {}

    result = {"questions": len(rows), "model": "embedded default (shared llama-server)",
              "roles": {role: {"calls": len(v), "prompt_tokens": summary([float(t) for t, _ in v]),
                               "seconds": summary([s for _, s in v])} for role, v in calls.items()},
              # the calls no cache answered: by default the answer and the reordered call; again with reorder=off
              # the prior's alone (the answer replayed), so a choice asked so first makes the answer's and the prior's
              "fresh_calls_per_answer": {reorder: summary([float(n) for n in v]) for reorder, v in made.items()},
              "reordered_seconds_per_answer_second": summary(shares["reordered"]),
              "prior_seconds_per_answer_second": summary(shares["prior"])}
    write_result("reorder_cost", result)


if __name__ == "__main__":
    main()
