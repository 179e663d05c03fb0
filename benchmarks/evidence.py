"""Evidence recall (issue 23): how often each method's citations land on the labelled evidence, with a real model.

Runs the evaluation harness (``pagemind.eval.Runner``, what ``pagemind eval run`` runs) and reads the evidence
columns of its summary (``pagemind.eval.evidence``: a citation hits a label when their character spans overlap;
recall = labelled spans hit / labelled spans; precision = citations on a label / citations):

* ``qmsum``: QMSum val (the staged split), specific queries only (general queries have no turn labels), every
  document method (``readagent-p``, ``readagent-s``, ``gistmem``, ``memwalker``, ``rag``, ``op-rag``, ``full``)
  at the same ``--budget`` of context tokens per prompt;
* ``locomo``: the staged LoCoMo conversations, the MemGPT agent (``memgpt``, the conversation in recall storage,
  its citations the recall messages and passages it used) at the same budget, categories 1-4.

``--queries N`` takes the first N labelled questions of the chosen documents (``--documents``: document ids,
default the shortest documents of the set that hold N questions, so few memories are built); ``--queries 0``
runs every labelled question of the whole split (the full benchmark: hours on a CPU). Each run writes its run
directory (``--runs``, resumable: running the same command again continues) and
``results/evidence-<set>-<model>-b<budget>-q<queries>.json``.

    python benchmarks/evidence.py qmsum --llm local:qwen2.5-coder-1.5b --queries 3 --budget 1500
    python benchmarks/evidence.py locomo --methods memgpt --llm local:smollm2-135m --queries 5
    python benchmarks/evidence.py qmsum --queries 0 --budget 3000          # the whole val split
    python benchmarks/evidence.py qmsum --methods rag,full -O rag:cite=quotes -O full:cite=quotes  # quotes dropped

``--grades FILE`` (a ``grades.jsonl`` of the same answers graded by hand, as ``calibrate.py`` reads) adds the share
judged right beside F1, per method and per type — LoCoMo's token F1 scores a right sentence low against a phrase.
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from common import DATA, RUNS, method_options, read_grades, results_for, write_result
from pagemind import Pagemind
from pagemind.eval import EvalConfig, Runner, summarise, write_report
from pagemind.eval.datasets import Example
from pagemind.eval.rundir import RunDir
from pagemind.eval.sets import load_dataset

DOCUMENT_METHODS = ("readagent-p", "readagent-s", "gistmem", "memwalker", "rag", "op-rag", "full")
DEFAULT_METHODS = {"qmsum": DOCUMENT_METHODS, "locomo": ("memgpt",)}
PARAMS = {"qmsum": {"queries": "specific"}, "locomo": {}}


class Chosen(Runner):
    """The harness on a fixed list of examples (the benchmark picks them; the harness does the rest)."""

    def __init__(self, *args: Any, chosen: list[Example], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.chosen = chosen

    def examples(self) -> list[Example]:
        return self.chosen


def choose(dataset: str, data: Path, documents: list[str], queries: int, per_category: int = 0) -> list[Example]:
    labelled = [e for e in load_dataset(dataset, str(data), PARAMS[dataset]) if e.evidence]
    if per_category:
        return by_category(labelled, documents, per_category)
    if queries == 0 and not documents:
        return labelled
    if not documents:  # the shortest documents, until there are enough questions: few memories to build
        for e in sorted(labelled, key=lambda e: (e.words, e.document_id)):
            if len([x for x in labelled if x.document_id in documents]) >= queries:
                break
            if e.document_id not in documents:
                documents.append(e.document_id)
    picked = sorted((e for e in labelled if e.document_id in documents), key=lambda e: documents.index(e.document_id))
    return picked[:queries] if queries else picked


def by_category(labelled: list[Example], documents: list[str], n: int) -> list[Example]:
    """``n`` questions of each category, taken in turn from each document (the set's order within one): a sample
    spread over the conversations, so a category's figure is not one conversation's."""
    chosen: list[Example] = []
    for category in sorted({int(e.meta.get("category", 0)) for e in labelled}):
        pools = [[e for e in labelled if e.document_id == d and int(e.meta.get("category", 0)) == category]
                 for d in documents or sorted({e.document_id for e in labelled})]
        taken = 0
        for i in range(max(map(len, pools), default=0)):
            for pool in pools:
                if taken < n and i < len(pool):
                    chosen.append(pool[i])
                    taken += 1
    return chosen


def per_type(records: Iterable[dict[str, Any]],
             grades: dict[tuple[str, str], bool] | None = None) -> dict[str, dict[str, dict[str, float]]]:
    """Per method and question type (LoCoMo's categories): n, the headline score (a failure 0), evidence recall
    and tokens per answer; with ``grades`` (answers graded by hand), the share judged right where every answer of
    the group is graded."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in records:
        kind = (r.get("meta") or {}).get("question_type")
        if kind:
            groups.setdefault((r["method"], str(kind)), []).append(r)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for (method, kind), rows in sorted(groups.items()):
        ok = [r.get("status") != "error" for r in rows]
        f1 = [float((r.get("scores") or {}).get("f1", 0.0)) if good else 0.0 for r, good in zip(rows, ok)]
        recall = [float((r.get("evidence") or {}).get("recall") or 0.0) if good else 0.0 for r, good in zip(rows, ok)]
        tokens = [int((r.get("usage") or {}).get("prompt_tokens", 0)) for r in rows]
        out.setdefault(method, {})[kind] = {"n": len(rows), "f1": round(sum(f1) / len(rows), 3),
                                            "evidence_recall": round(sum(recall) / len(rows), 3),
                                            "prompt_tokens": round(sum(tokens) / len(rows))}
        judged = judged_share(rows, grades or {})
        if judged is not None:
            out[method][kind]["judged"] = judged
    return out


def judged_share(rows: list[dict[str, Any]], grades: dict[tuple[str, str], bool]) -> float | None:
    """The share of ``rows`` graded right by hand (a failed answer: wrong); None unless every one is graded."""
    keys = [(r["example_id"], r["method"]) for r in rows]
    if not keys or any(k not in grades for k in keys):
        return None
    return round(sum(grades[k] and r.get("status") != "error" for k, r in zip(keys, rows)) / len(rows), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dataset", choices=sorted(DEFAULT_METHODS))
    parser.add_argument("--methods", default="", help="comma-separated (default: every document method for "
                                                      "qmsum, memgpt for locomo)")
    parser.add_argument("--llm", default=None, help="local:NAME | gguf:PATH | openai:MODEL (default: the "
                                                    "embedded default model)")
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--budget", type=int, default=1500, help="context tokens per prompt, every method")
    parser.add_argument("--queries", type=int, default=3, help="labelled questions (0: all of the split)")
    parser.add_argument("--per-category", type=int, default=0, help="instead of --queries: N labelled questions "
                                                                     "of each category, spread over the documents")
    parser.add_argument("--documents", default="", help="comma-separated document ids (e.g. qmsum-Bed002)")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--runs", type=Path, default=RUNS)
    parser.add_argument("--n-ctx", type=int, default=None)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--tag", default="", help="a name for this run (e.g. before / after a change): its own "
                                                  "run directory and result file")
    parser.add_argument("-O", "--option", action="append", default=[], help="METHOD:KEY=VALUE (as pagemind eval)")
    parser.add_argument("--short-answers", action="store_true",
                        help="score the short phrase each answer gives (as pagemind eval run --short-answers)")
    parser.add_argument("--grades", type=Path, default=None,
                        help="a grades.jsonl of these answers graded by hand ({example_id, method, right} a line): "
                             "the share judged right beside F1, per method and type")
    args = parser.parse_args()
    if args.grades and not args.grades.exists():
        parser.error(f"no such file: {args.grades}")
    methods = tuple(m for m in args.methods.split(",") if m) or DEFAULT_METHODS[args.dataset]
    examples = choose(args.dataset, args.data, [d for d in args.documents.split(",") if d], args.queries,
                      args.per_category)
    options = method_options(args.option)
    model = re.sub(r"[^A-Za-z0-9.-]+", "-", args.llm or "default").strip("-")
    cite = {v for o in options.values() for k, v in o.items() if k == "cite"}
    mode = f"-{'-'.join(sorted(cite))}" if cite else ""  # e.g. -quotes: a run of another mode is another run
    tag = f"-{args.tag}" if args.tag else ""
    size = f"c{args.per_category}" if args.per_category else f"q{args.queries}"
    run_dir = args.runs / f"evidence-{args.dataset}-{model}-b{args.budget}-{size}{mode}{tag}"
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    given = {k: v for k, v in {"base_url": args.base_url, "n_ctx": args.n_ctx, "threads": args.threads}.items()
             if v is not None}
    started = time.perf_counter()
    with Pagemind(args.llm, store=run_dir.parent / "evidence-store.db", **given) as pm:
        runner = Chosen(pm, EvalConfig(dataset=args.dataset, methods=methods, data=str(args.data),
                                       params=PARAMS[args.dataset], budget=args.budget, method_options=options,
                                       short_answers=args.short_answers),
                        run_dir, command=" ".join(["python benchmarks/evidence.py", args.dataset]), chosen=examples)
        result = runner.run()
    write_report(run_dir)
    summary = summarise(run_dir)
    columns = ("n", "errors", "score", "citations", "evidence_n", "evidence_recall", "evidence_precision",
               "quotes_dropped", "tokens", "index_tokens", "seconds")
    rows = {m["method"]: {k: m[k] for k in columns} for m in summary["methods"]}
    latest = list(RunDir(run_dir).latest().values())
    grades = read_grades(args.grades, {(r["example_id"], r["method"]): r.get("prediction") or "" for r in latest}) \
        if args.grades else {}
    for method, row in rows.items():
        judged = judged_share([r for r in latest if r["method"] == method], grades)
        if judged is not None:
            row["judged"] = judged
    by_type = per_type(latest, grades)
    write_result(run_dir.name, {
        "dataset": args.dataset, "model": summary["config"].get("model"), "budget": args.budget,
        "examples": [e.id for e in examples], "documents": sorted({e.document_id for e in examples}),
        "document_words": sorted({e.words for e in examples}), "primary": summary["primary"],
        "run_dir": run_dir.name, "finished": result.finished, "errors": result.errors,
        "seconds": round(time.perf_counter() - started, 1), "methods": rows,
        **({"by_question_type": by_type} if by_type else {})},
        into=results_for(args.runs))


if __name__ == "__main__":
    main()
