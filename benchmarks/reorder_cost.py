"""(av) What ``reorder`` costs a multiple-choice answer: the answer's prompt sent again with its options listed in
reverse order, beside the answer call and the prior's, per call, on the embedded default model (its shared
llama-server, whose prompt cache holds the answer's prompt when the reordered one follows it).

    python benchmarks/reorder_cost.py [--questions 6] [--data DIR]

QuALITY questions of different articles are asked with ``rag`` at the calibration runs' budget (2,000 context
tokens, preset ``quality``) and ``reorder=auto``, into a new store (no cached reply). Per role: the prompt tokens as
accounted (a cached prefix still counts: the matched-cost figure) and the seconds, median and range; and the reordered
call's seconds as a share of the answer call's. Stop a shared llama-server first (``pkill -f llama-server``): one that
has read these prompts before answers them from its own cache, and the answer call is timed as short as the reordered.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from common import DATA, quality_rows, write_result
from pagemind import Document, Pagemind
from pagemind.answering.question import Question

ROLES = ("answer", "reordered", "prior")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=6)
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    rows, seen = [], set()
    for row in quality_rows(args.data):
        if row["article"][:200] not in seen:
            seen.add(row["article"][:200])
            rows.append(row)
    rows = rows[:args.questions]
    calls: dict[str, list[tuple[int, float]]] = {role: [] for role in ROLES}
    shares = []
    with tempfile.TemporaryDirectory() as tmp, Pagemind(store=Path(tmp) / "cost.db", record_runs=False) as pm:
        for row in rows:
            question = Question(row["question"], tuple(row["options"]))
            answer = pm.ask(Document.from_text(row["article"]), question, method="rag", budget=2000,
                            preset="quality", reorder="auto")
            by_role = {e.role: e for e in answer.trace.events if not e.cached}
            for role in ROLES:
                if role in by_role:
                    calls[role].append((by_role[role].prompt_tokens, by_role[role].seconds))
            if "answer" in by_role and "reordered" in by_role:
                shares.append(by_role["reordered"].seconds / by_role["answer"].seconds)
            print(answer.letter, answer.probability.as_dict(), [(e.role, e.prompt_tokens, round(e.seconds, 2))
                                                                 for e in answer.trace.events], flush=True)

    def summary(values: list[float]) -> dict:
        return {"median": round(statistics.median(values), 3), "min": round(min(values), 3),
                "max": round(max(values), 3)} if values else {}

    result = {"questions": len(rows), "model": "embedded default (shared llama-server)",
              "roles": {role: {"calls": len(v), "prompt_tokens": summary([float(t) for t, _ in v]),
                               "seconds": summary([s for _, s in v])} for role, v in calls.items()},
              "reordered_seconds_per_answer_second": summary(shares)}
    write_result("reorder_cost", result)


if __name__ == "__main__":
    main()
