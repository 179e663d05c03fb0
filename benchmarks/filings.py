"""(ab) Real filings: reading FinanceBench's PDFs, and finding the evidence page without an LLM call.

``read``: seconds and peak RSS to read each staged FinanceBench PDF (one child process per PDF, so each peak is its
own), as a ratio to pdfium's bare page text in the same child; ``--engine pypdf`` reads as pagemind did before
pdfium (pypdf's text, pdfplumber on every ruled page); ``--second`` also times a second read of the same file through
the store (the file is read once). ``--only NAME`` keeps PDFs whose name holds NAME.

``retrieve``: evidence-page recall of the passages retrieval returns for the 74 dev questions (``Pagemind.retrieve``,
no LLM call): a question counts when one of its first k passages overlaps one of its evidence pages, at k = 4, 8,
16 and the default (RAG/OP-RAG's top_k of 5), per retrieval configuration, by question type.

``walk``: MemWalker on a filing's sections (``tree=sections``, ``summaries=titles``: built with no LLM call) guided by
BM25 or by BM25 and MiniLM mixed (``guide``): the leaves a walk reads when the model takes the first child a guided
triage shows every time, and evidence-page recall after 1, 2, 3 and 4 leaves read, beside their words; no LLM call.

``pick``: the same recall when the model first picks sections by their titles (``pick_sections``, PageIndex's
reasoning step: one call a question), beside the same configuration's ranking without it; ``--llm`` names the model
(default: the embedded one), ``--limit`` runs the first N questions. Also the calls' tokens and seconds.

    python benchmarks/filings.py read [--engine pypdf] [--second] [--only 10K]
    python benchmarks/filings.py retrieve
    python benchmarks/filings.py walk [--segment-tokens 330] [--revert best]
    python benchmarks/filings.py pick [--config "hybrid mix"] [--limit 30] [--llm openai:...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import DATA, ROOT, write_result

BARE = r"""
import json, resource, sys, time
name = sys.argv[1]
import pypdfium2
start = time.perf_counter()
pdf = pypdfium2.PdfDocument(name)
chars = 0
for i in range(len(pdf)):
    page = pdf[i]; text = page.get_textpage(); chars += len(text.get_text_range()); text.close(); page.close()
print(json.dumps({"seconds": time.perf_counter() - start, "pages": len(pdf), "chars": chars,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

READ = r"""
import json, resource, sys, time
name, engine, second, store = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4]
if engine == "pypdf":
    sys.modules["pypdfium2"] = None  # pagemind's reading before pdfium: pypdf's text, pdfplumber's ruled pages
from pagemind import Pagemind, ScriptedLLM
with Pagemind(ScriptedLLM(default="x"), store=store) as pm:
    start = time.perf_counter()
    doc = pm.document(name)
    first = time.perf_counter() - start
    again = None
    if second:
        start = time.perf_counter()
        pm.document(name)
        again = time.perf_counter() - start
lines = [l for l in doc.text.split("\n") if l.strip()]
bare = sum(1 for l in lines if not any(c.isalpha() for c in l))
print(json.dumps({"seconds": first, "second_seconds": again, "pages": len(doc.pages), "sections": len(doc.sections),
                  "tables": doc.text.count("| --- |"), "bare_number_lines": round(bare / max(1, len(lines)), 4),
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _child(code: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code, *(str(Path(a).resolve()) if Path(a).exists() else a
                                                          for a in args)],
                          capture_output=True, text=True, check=False, cwd=ROOT)  # a path given from here
    if done.returncode:
        raise SystemExit(f"{args[0]}: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else 'failed'}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def read(args: argparse.Namespace) -> None:
    pdfs = sorted((args.data / "financebench" / "pdfs").glob("*.pdf"))
    pdfs = [p for p in pdfs if not args.only or args.only.lower() in p.name.lower()]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for pdf in pdfs:
            bare = _child(BARE, str(pdf))
            ours = _child(READ, str(pdf), args.engine, "1" if args.second else "0", str(Path(tmp) / "s.db"))
            row = {"pdf": pdf.name, "pages": ours["pages"], "seconds": round(ours["seconds"], 3),
                   "pages_per_s": round(ours["pages"] / ours["seconds"], 1),
                   "pdfium_seconds": round(bare["seconds"], 3), "ratio": round(ours["seconds"] / bare["seconds"], 2),
                   "rss_mb": round(ours["rss_mb"], 1), "pdfium_rss_mb": round(bare["rss_mb"], 1),
                   "second_seconds": None if ours["second_seconds"] is None else round(ours["second_seconds"], 4),
                   "sections": ours["sections"], "tables": ours["tables"],
                   "bare_number_lines": ours["bare_number_lines"]}
            rows.append(row)
            print(json.dumps(row), flush=True)
    total = sum(r["seconds"] for r in rows)
    write_result(f"filings-read-{args.engine}", {
        "engine": args.engine, "pdfs": len(rows), "seconds_total": round(total, 2),
        "seconds_max": max(r["seconds"] for r in rows),
        "ratio_median": sorted(r["ratio"] for r in rows)[len(rows) // 2],
        "rss_max_mb": max(r["rss_mb"] for r in rows), "rows": rows})


CONFIGS = {  # name -> (method, options)
    "bm25 alone": ("rag", {"named_sections": False}),
    "bm25 (rag, op-rag)": ("rag", {}),
    "bm25 sections": ("rag", {"fragments": "sections"}),
    "hybrid mix": ("rag", {"scorer": "hybrid", "fusion": "mix"}),
    "hybrid mix sections": ("rag", {"scorer": "hybrid", "fusion": "mix", "fragments": "sections"}),
    "hybrid mix 250 (auto)": ("rag", {"scorer": "hybrid", "fusion": "mix", "fragment_words": 250}),
    "dense": ("rag", {"scorer": "dense"}),
}
KS = (4, 5, 8, 10, 16, 20)  # 5: RAG's and OP-RAG's default top_k; 10: auto's on a PDF


def retrieve(args: argparse.Namespace) -> None:
    from pagemind import Pagemind, ScriptedLLM
    from pagemind.eval.sets import load_dataset

    examples = load_dataset("financebench", args.data / "financebench")
    wanted = [c for c in args.config.split("|") if c]
    configs = {k: v for k, v in CONFIGS.items() if not wanted or any(c in k for c in wanted)}
    table: dict[str, dict[str, list[float]]] = {}
    by_type: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp, Pagemind(ScriptedLLM(default="x"), store=Path(tmp) / "s.db") as pm:
        from pagemind.text import Document

        documents: dict[str, Document] = {}
        for name, (method, options) in configs.items():
            start = time.perf_counter()
            for e in examples:
                pdf = args.data / "financebench" / "pdfs" / f"{e.meta['doc']}.pdf"
                document = documents.setdefault(e.document_id, pm.document(pdf))
                passages = pm.retrieve(document, e.question, max(KS), method, **options)
                for k in KS:
                    hit = any(p.start < s.end and s.start < p.end for p in passages[:k] for s in e.evidence)
                    table.setdefault(name, {}).setdefault(f"k={k}", []).append(float(hit))
                    if k == 5:
                        by_type.setdefault(name, {}).setdefault(str(e.meta["question_type"]), []).append(float(hit))
            print(name, {k: round(sum(v) / len(v), 3) for k, v in table[name].items()},
                  f"{time.perf_counter() - start:.1f} s", flush=True)
    write_result("filings-retrieve", {
        "questions": len(examples),
        "recall": {n: {k: round(sum(v) / len(v), 3) for k, v in row.items()} for n, row in table.items()},
        "recall_at_5_by_type": {n: {t: [round(sum(v) / len(v), 3), len(v)] for t, v in row.items()}
                                for n, row in by_type.items()}})


def pick(args: argparse.Namespace) -> None:
    from pagemind import Pagemind
    from pagemind.answering.finish import Context
    from pagemind.answering.question import Question
    from pagemind.eval.sets import load_dataset
    from pagemind.llm.usage import Trace

    examples = load_dataset("financebench", args.data / "financebench")[: args.limit or None]
    name = args.config or "hybrid mix"
    method, options = CONFIGS[name]
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp, Pagemind(args.llm, store=Path(tmp) / "s.db") as pm:
        documents: dict = {}
        for e in examples:
            pdf = args.data / "financebench" / "pdfs" / f"{e.meta['doc']}.pdf"
            document = documents.setdefault(e.document_id, pm.document(pdf))
            plan = pm.plan(document, method, **options, pick_sections=True)
            reader = plan.reader
            memory = reader.load(document) or reader.build(document)
            ranking = reader.passage_index(memory).rank(e.question)
            plain = reader.ordered(memory, e.question, ranking.order)
            context = Context(trace=Trace())
            start = time.perf_counter()
            picked = reader.read_order(memory, Question(e.question), ranking.order, context)
            seconds = time.perf_counter() - start
            usage = context.trace.usage
            row = {"question": e.id, "type": e.meta["question_type"], "seconds": round(seconds, 1),
                   "tokens": usage.prompt_tokens + usage.completion_tokens, "fallbacks": context.fallbacks}
            for label, order in (("ranked", plain), ("picked", picked)):
                passages = [memory.fragments[i] for i in order[: max(KS)]]
                spans = [_span(document, f) for f in passages]
                row[label] = {f"k={k}": any(a < s.end and s.start < b for a, b in spans[:k] for s in e.evidence)
                              for k in KS}
            rows.append(row)
            print(json.dumps(row), flush=True)
    recall = {label: {f"k={k}": round(sum(r[label][f"k={k}"] for r in rows) / len(rows), 3) for k in KS}
              for label in ("ranked", "picked")}
    write_result("filings-pick", {"config": name, "model": args.llm or "default", "questions": len(rows),
                                  "recall": recall,
                                  "seconds_mean": round(sum(r["seconds"] for r in rows) / len(rows), 1),
                                  "tokens_mean": round(sum(r["tokens"] for r in rows) / len(rows)),
                                  "rows": rows})
    print(json.dumps(recall))


LEAVES = (1, 2, 3, 4)  # leaves a walk reads


def first_taken(tree, scores, revert: str = "parent") -> list:
    """The leaves in the order a guided walk reads them when the model takes the first child shown every time and
    rejects every leaf: each node's children by the best score beneath them (ties in reading order), depth first;
    with ``revert=best`` the walk climbs to the best unread leaf after each, so it reads them best first."""
    if revert == "best":
        return [leaf for _, _, leaf in sorted((-s, n, leaf) for n, (leaf, s) in enumerate(zip(tree.leaves, scores)))]
    best: dict[str, float] = {}
    for leaf, score in zip(tree.leaves, scores):
        parts = leaf.id.split(".")
        for depth in range(1, len(parts) + 1):
            key = ".".join(parts[:depth])
            best[key] = max(best.get(key, float("-inf")), float(score))

    def visit(node) -> list:
        if not node.children:
            return [node]
        ranked = sorted(tree.children(node), key=lambda child: -best.get(child.id, float("-inf")))
        return [leaf for child in ranked for leaf in visit(child)]

    return visit(tree.root)


def walk(args: argparse.Namespace) -> None:
    from pagemind import Pagemind, ScriptedLLM
    from pagemind.eval.sets import load_dataset

    examples = load_dataset("financebench", args.data / "financebench")
    guides = ("bm25", "hybrid")
    found: dict[str, dict[int, list[float]]] = {g: {k: [] for k in LEAVES} for g in guides}
    words: dict[str, list[int]] = {g: [] for g in guides}
    skipped: list[str] = []
    with tempfile.TemporaryDirectory() as tmp, Pagemind(ScriptedLLM(default="x"), store=Path(tmp) / "s.db") as pm:
        documents: dict = {}
        for e in examples:
            pdf = args.data / "financebench" / "pdfs" / f"{e.meta['doc']}.pdf"
            document = documents.setdefault(e.document_id, pm.document(pdf))
            if not document.sections:
                skipped.append(e.id)
                continue
            for guide in guides:
                reader = pm.plan(document, "memwalker", tree="sections", summaries="titles", guide=guide,
                                 **({"segment_tokens": args.segment_tokens} if args.segment_tokens else {})).reader
                tree = reader.load(document) or reader.build(document)
                order = first_taken(tree, reader.guide_scores(tree, e.question), args.revert)
                spans = [_span(document, leaf, "leaf") for leaf in order[: max(LEAVES)]]
                for k in LEAVES:
                    found[guide][k].append(float(any(a < s.end and s.start < b for a, b in spans[:k]
                                                     for s in e.evidence)))
                words[guide].append(sum(len(leaf.text.split()) for leaf in order[:2]))
    result = {"questions": len(examples), "without_sections": skipped,
              "recall": {g: {f"leaves={k}": round(sum(v) / max(1, len(v)), 3) for k, v in row.items()}
                         for g, row in found.items()},
              "words_of_two_leaves_median": {g: sorted(w)[len(w) // 2] for g, w in words.items() if w}}
    write_result("filings-walk" + (f"-s{args.segment_tokens}" if args.segment_tokens else "")
                 + ("-best" if args.revert == "best" else ""),
                 {**result, "segment_tokens": args.segment_tokens or "default", "revert": args.revert})
    print(json.dumps(result))


def _span(document, unit, kind: str = "fragment") -> tuple[int, int]:
    """A fragment's (or leaf's) character offsets in the document's text (its words' place)."""
    from pagemind.answering.evidence import Evidence, passage

    head = unit.head if kind == "leaf" else ""  # a leaf's text starts with its table's head; a fragment's does not
    found = passage(document, Evidence(kind, unit.index, unit.text, kind, head=head), 0.0)
    return (found.start, found.end) if found is not None else (-1, -1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("part", choices=("read", "retrieve", "walk", "pick"))
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--engine", choices=("pdfium", "pypdf"), default="pdfium")
    parser.add_argument("--second", action="store_true")
    parser.add_argument("--only", default="")
    parser.add_argument("--config", default="",
                        help="retrieve: the configurations whose name holds one of these (|-separated); pick: "
                             "the one configuration (default: hybrid mix)")
    parser.add_argument("--llm", default=None, help="pick: the model (default: the embedded one)")
    parser.add_argument("--limit", type=int, default=0, help="pick: the first N questions")
    parser.add_argument("--segment-tokens", type=int, default=0, help="walk: MemWalker's leaf size (default: its own)")
    parser.add_argument("--revert", choices=("parent", "best"), default="parent", help="walk: MemWalker's revert")
    args = parser.parse_args()
    {"read": read, "retrieve": retrieve, "walk": walk, "pick": pick}[args.part](args)


if __name__ == "__main__":
    main()
