"""(t) Answers that judge their own support (issue 38): how well ``confidence`` tells right answers from wrong, how
often wrong and right answers are flagged, how often unanswerable variants abstain — and what it costs.

Runs the evaluation harness (``pagemind eval run ... --unanswerable``) on staged sets with one method and three ways
of judging support: the default (words, numbers and names of the claims in the cited text, no LLM call), the same
with the MiniLM similarity (``support=minilm``), and the verifier (``verify=true``, one short call). The three share
the method's answers through the LLM cache, so only the verifier's calls are new. Then times :func:`assess` alone
(milliseconds per answer, lexical and MiniLM) on the bundled short story.

Goals (issue 38): flag >= 70% of wrong answers while flagging <= 15% of right ones; abstain on >= 80% of the
unanswerable variants at <= 10% answerable abstentions; the verifier <= 15% of the answer's prompt tokens.

    python benchmarks/support.py --llm local:qwen2.5-coder-1.5b [--sets quality,locomo,babilong] [--limit 4]
        [--budget 1500]
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from pathlib import Path

from common import DATA, RUNS, results_for, write_result
from pagemind import Pagemind
from pagemind.eval import EvalConfig, Runner, summarise, write_report

SETS = {  # dataset -> (data folder, parameters)
    "quality": ("quality", {}),
    "locomo": ("locomo", {}),
    "babilong": (None, {"tasks": "qa1,qa2", "tokens": "4000"}),  # samples: half of --limit per task
}
VARIANTS = {"rag": {}, "rag@minilm": {"support": "minilm"}, "rag@verify": {"verify": "true"}}
COLUMNS = ("n", "score", "support_auroc", "accuracy_at_80", "flagged_wrong", "flagged_right", "unanswerable_n",
           "abstention_recall", "abstention_precision", "false_abstention", "tokens", "prompt_tokens", "calls",
           "seconds")


def assess_timing(runs: int = 40) -> dict[str, float]:
    """Milliseconds per :func:`pagemind.answering.support.assess` of a cited answer over the short story, words
    alone and with MiniLM (its load excluded: once per process)."""
    from importlib import resources

    from pagemind.answering.evidence import Evidence, minilm_encoder, supporting
    from pagemind.answering.question import Question
    from pagemind.answering.support import assess
    from pagemind.text import Document

    text = resources.files("pagemind").joinpath("samples", "lighthouse.txt").read_text(encoding="utf-8")
    document = Document.from_text(text)
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", text) if len(s.split()) > 6][:runs]
    read = [Evidence("text", None, text, "text")]
    encoder = minilm_encoder()
    out: dict[str, float] = {}
    for name, embedder in (("lexical", None), ("minilm", encoder)):
        times = []
        for sentence in sentences:
            answer = " ".join(sentence.split()[:12])
            cited = supporting(document, read, answer, "What happened?")
            started = time.perf_counter()
            assess(Question("What happened?"), answer, cited, [text], embedder)
            times.append(1000 * (time.perf_counter() - started))
        out[f"{name}_ms_median"] = round(statistics.median(times), 2)
        out[f"{name}_ms_max"] = round(max(times), 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--llm", default=None, help="local:NAME | openai:MODEL (default: pagemind's default model)")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--limit", type=int, default=4, help="answerable questions per set (each gets a variant)")
    parser.add_argument("--method", default="rag")
    parser.add_argument("--budget", type=int, default=1500, help="context tokens of every answer (matched cost)")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--runs", type=Path, default=RUNS)
    args = parser.parse_args()
    model = re.sub(r"[^A-Za-z0-9.-]+", "-", args.llm or "default").strip("-")
    variants = {name.replace("rag", args.method, 1): opts for name, opts in VARIANTS.items()}
    results: dict[str, dict[str, dict[str, object]]] = {}
    started = time.perf_counter()
    for dataset in [s for s in args.sets.split(",") if s]:
        folder, params = SETS[dataset]
        if dataset == "babilong":
            params = {**params, "samples": str(max(1, (args.limit + 1) // 2))}
        run_dir = args.runs / f"support-{dataset}-{model}-{args.method}-l{args.limit}-b{args.budget}"
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        with Pagemind(args.llm, store=run_dir.parent / "support-store.db") as pm:
            config = EvalConfig(dataset=dataset, methods=tuple(variants), data=str(args.data / folder) if folder
                                else None, params=params, limit=args.limit, by_document=dataset != "babilong",
                                budget=args.budget,
                                method_options=variants, unanswerable=True)
            Runner(pm, config, run_dir, progress=False, command=f"python benchmarks/support.py --sets {dataset}").run()
        write_report(run_dir)
        summary = summarise(run_dir)
        results[dataset] = {m["method"]: {k: m.get(k) for k in COLUMNS} for m in summary["methods"]}
        results[dataset]["primary"] = {"metric": summary["primary"]}
        print(dataset, results[dataset], flush=True)
    write_result(f"support-{model}-{args.method}-l{args.limit}", {
        "model": args.llm or "default", "method": args.method, "limit": args.limit, "budget": args.budget,
        "sets": results,
        "assess": assess_timing(), "seconds": round(time.perf_counter() - started, 1)}, into=results_for(args.runs))


if __name__ == "__main__":
    main()
