"""(az) What a free-form answer's sampled replies cost (``samples``): the answer's prompt sent N times more at a
temperature, one after another, beside the answer call, per call, on the embedded default model (its shared
llama-server, whose slot holds the answer's prompt when the samples follow it).

    python benchmarks/samples_cost.py [--questions 6] [--samples 4] [--data DIR]

QuALITY questions of different articles are asked without their options (free form) with ``rag`` at the
calibration runs' budget (2,000 context tokens, preset ``quality``) into a new store (no cached reply), with
``samples=N``. Per role: the prompt tokens as accounted (a cached prefix still counts: the matched-cost figure) and
the seconds, median and range; the samples' seconds together as a share of the answer call's; the agreement each
answer got. Stop a shared llama-server first (``pkill -f llama-server``): one that has read these prompts before
answers the answer call from its own cache, as short as a sample.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from common import DATA, quality_articles, write_result
from pagemind import Document, Pagemind

ROLES = ("answer", "sample")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=6)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    rows = quality_articles(args.data, args.questions)
    calls: dict[str, list[tuple[int, float]]] = {role: [] for role in ROLES}
    shares: list[float] = []
    agreed: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, Pagemind(store=Path(tmp) / "cost.db", record_runs=False) as pm:
        for row in rows:
            answer = pm.ask(Document.from_text(row["article"]), row["question"], method="rag", budget=2000,
                            preset="quality", samples=args.samples)
            fresh = [e for e in answer.trace.events if not e.cached and e.role in calls]
            for e in fresh:
                calls[e.role].append((e.prompt_tokens, e.seconds))
            answered = sum(e.seconds for e in fresh if e.role == "answer")
            if answered:
                shares.append(sum(e.seconds for e in fresh if e.role == "sample") / answered)
            if answer.probability.agreement is not None:
                agreed.append(answer.probability.agreement)
            print(answer.text[:60], answer.probability.as_dict(),
                  [(e.role, e.prompt_tokens, round(e.seconds, 2), e.cached) for e in answer.trace.events], flush=True)

    def summary(values: list[float]) -> dict:
        return {"median": round(statistics.median(values), 3), "min": round(min(values), 3),
                "max": round(max(values), 3)} if values else {}

    write_result("samples_cost", {
        "questions": len(rows), "samples": args.samples, "model": "embedded default (shared llama-server)",
        "roles": {role: {"calls": len(v), "prompt_tokens": summary([float(t) for t, _ in v]),
                         "seconds": summary([s for _, s in v])} for role, v in calls.items()},
        "samples_seconds_per_answer_second": summary(shares), "agreement": summary(agreed)})


if __name__ == "__main__":
    main()
