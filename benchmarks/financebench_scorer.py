"""(ae) The automatic FinanceBench scorer against the paper's hand grades: every graded answer of the paper's runs
(GPT-4, GPT-4-Turbo, Claude 2, Llama 2; ``published/``) to the staged questions is scored by
``pagemind.eval.metrics.financebench`` and compared with its human label (correct, incorrect, refusal).

    python benchmarks/financebench_scorer.py [--data DIR] [--show 20]

The questions are split in two halves by their id (even and odd number): rules were written looking at the first
(``tune``) only; the second (``held``) says whether they carry over. Reported per half and pooled: agreement of the
three labels, Cohen's kappa, precision and recall of "correct", the confusion matrix, and per published run the hand
grade's accuracy beside the automatic one (so pagemind's automatic accuracy is read against the paper's rows in the
same currency). ``--show N`` prints N disagreements of the tune half.

Writes ``results/financebench_scorer.json``.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path

from common import DATA, write_result

LABELS = ("correct", "incorrect", "refusal")


def rows(data: Path) -> list[dict]:
    from pagemind.eval.sets_filings import PUBLISHED_LABELS

    folder = data / "financebench"
    staged = {json.loads(line)["financebench_id"]
              for line in (folder / "financebench_open_source.jsonl").read_text().splitlines() if line.strip()}
    out = []
    for path in sorted((folder / "published").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            r = json.loads(line)
            label = PUBLISHED_LABELS.get(str(r.get("label", "")))
            if label is None or r.get("financebench_id") not in staged:
                continue
            number = int(re.sub(r"\D", "", r["financebench_id"]) or 0)
            out.append({"id": r["financebench_id"], "half": "tune" if number % 2 == 0 else "held",
                        "run": f"{r['model_name']} {r['eval_mode']}", "question": r["question"],
                        "gold": str(r["gold_answer"]), "answer": str(r["model_answer"] or ""), "label": label})
    return out


def measures(pairs: list[tuple[str, str]]) -> dict:
    n = len(pairs)
    agree = sum(a == b for a, b in pairs) / n if n else 0.0
    by_hand, by_auto = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    chance = sum(by_hand[x] * by_auto[x] for x in LABELS) / (n * n) if n else 0.0
    kappa = (agree - chance) / (1 - chance) if chance < 1 else 0.0
    both = sum(a == b == "correct" for a, b in pairs)
    return {"n": n, "agreement": round(agree, 3), "kappa": round(kappa, 3),
            "precision_correct": round(both / by_auto["correct"], 3) if by_auto["correct"] else None,
            "recall_correct": round(both / by_hand["correct"], 3) if by_hand["correct"] else None,
            "confusion (hand -> automatic)": {f"{a} -> {b}": c for (a, b), c in sorted(Counter(pairs).items())}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the folder holding financebench/")
    parser.add_argument("--show", type=int, default=0, help="print this many disagreements of the tune half")
    args = parser.parse_args()
    from pagemind.eval.metrics import financebench_grade

    graded = rows(args.data)
    for r in graded:
        r["automatic"] = financebench_grade(r["answer"], r["gold"], r["question"])
    out: dict = {"answers": len(graded), "questions": len({r["id"] for r in graded}), "halves": {}, "runs": {}}
    for half in ("tune", "held"):
        mine = [r for r in graded if r["half"] == half]
        out["halves"][half] = measures([(r["label"], r["automatic"]) for r in mine])
    out["halves"]["pooled"] = measures([(r["label"], r["automatic"]) for r in graded])
    for run in sorted({r["run"] for r in graded}):
        mine = [r for r in graded if r["run"] == run]
        out["runs"][run] = {"n": len(mine), "hand": round(sum(r["label"] == "correct" for r in mine) / len(mine), 3),
                            "automatic": round(sum(r["automatic"] == "correct" for r in mine) / len(mine), 3),
                            "hand_refusals": sum(r["label"] == "refusal" for r in mine),
                            "automatic_refusals": sum(r["automatic"] == "refusal" for r in mine)}
    shown = [r for r in graded if r["half"] == "tune" and r["label"] != r["automatic"]][:args.show]
    for r in shown:
        print(f"{r['label']} -> {r['automatic']} | {r['question'][:80]} | gold {r['gold'][:60]!r} | "
              f"{r['answer'][:200]!r}".replace("\n", " "))
    write_result("financebench_scorer", out)


if __name__ == "__main__":
    main()
