"""Code retrieval on real repositories: what the Appendix A graph and FragRel's code relation cost, and whether
the relation finds called definitions -> results/coderepo.json. No LLM runs.

    nice -n 19 python benchmarks/coderepo.py                # pagemind's src/ and the CPython stdlib
                                                            # (~5 min idle, ~10 min at load average 5)
    python benchmarks/coderepo.py --repos src --queries 20  # the small tree only (~1 min)

Repositories: this project's ``src/`` tree, and the standard library of the running Python without its test
suites (``test``/``tests`` directories, ``idlelib``, ``lib2to3``, ``site-packages``, ``ensurepip``).

Cost: walk (read + decode), build (tree-sitter parse, graph, fragment spans), graph size; per query, the
leak-free view, s_ind (BM25 rebuilt without the hidden windows) and the code-relation rows of the top-M
candidates with FragRel (:func:`pagemind.retrieval.fragrel.code_rank.relation_rows`), for several (M, min_weight).

Retrieval check, RepoCoder's "API invocation" flavour: a hole is a line holding a call whose callee name is
defined exactly once in the repository, in another file. The query is the 20 lines above it (RepoCoder), the
hole line and everything below it in its file are hidden (windows excluded, graph masked). Gold = the windows
holding the definition's ``def``/``class`` line. hit@k = a gold window in the top k; reported for BM25 and
Jaccard with and without FragRel (alpha 0.5), plus how often the gold is among the M candidates at all (FragRel
only re-ranks those). One hole per file at most, files and holes drawn with a fixed seed.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # small products; threads only contend on 2 shared cores

import argparse
import random
import statistics
import sys
import sysconfig
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, peak_rss_mb, write_result
from pagemind.retrieval.fragrel.code_files import SourceTree, walk_source_tree
from pagemind.retrieval.fragrel.code_rank import CodeSearchSettings, rank_code, relation_rows
from pagemind.retrieval.fragrel.code_repo import CodeRepository
from pagemind.retrieval.fragrel.relations import MatrixRelation, fragrel_scores

STDLIB_SKIP = {"test", "tests", "idlelib", "lib2to3", "site-packages", "ensurepip"}
CONFIGS = [(50, 0.01), (50, 0.05), (20, 0.01)]  # (top_m, min_weight); the first is the default
KS = (1, 5, 10)


def load(name: str) -> tuple[SourceTree, float]:
    start = time.perf_counter()
    if name == "src":
        tree = walk_source_tree(ROOT / "src")
    else:
        full = walk_source_tree(sysconfig.get_path("stdlib"), max_files=10_000)
        files = tuple(f for f in full.files if not STDLIB_SKIP & set(f.path.split("/")))
        tree = SourceTree(full.root, "stdlib", files, full.skipped)
    return tree, time.perf_counter() - start


def holes(repo: CodeRepository, n: int, seed: int = 0) -> list[dict]:
    """Lines calling a name defined once in the repository, in another file; one per file, seeded."""
    defs = Counter(name for syn in repo.syntax for name, _ in syn.definitions)
    where = {}
    for f, syn in enumerate(repo.syntax):
        for name, local in syn.definitions:
            where[name] = (f, int(syn.start[local]))
    rng = random.Random(seed)
    files = list(range(len(repo.syntax)))
    rng.shuffle(files)
    out = []
    for f in files:
        syn, text = repo.syntax[f], repo.tree.files[f].text.encode("utf-8")
        found = []
        for name, local in syn.calls:
            if defs[name] != 1 or where[name][0] == f:
                continue
            line = text[: int(syn.start[local])].count(b"\n")
            if line >= 10:
                found.append((name, line))
        if not found:
            continue
        name, line = rng.choice(found)
        df, dstart = where[name]
        dline = repo.tree.files[df].text.encode("utf-8")[:dstart].count(b"\n")
        gold = [fr.index for fr in repo.fragments
                if fr.source == repo.tree.files[df].path and fr.start <= dline < fr.end]
        lines = repo.tree.files[f].text.splitlines()
        out.append({"path": repo.tree.files[f].path, "line": line, "callee": name, "gold": gold,
                    "query": "\n".join(lines[max(0, line - 20):line])})
        if len(out) >= n:
            break
    return out


def rank_of(order: np.ndarray, gold: list[int]) -> int | None:
    pos = np.flatnonzero(np.isin(order, gold))
    return int(pos[0]) + 1 if len(pos) else None


def summary(values: list[float]) -> dict:
    if not values:
        return {}
    v = sorted(values)
    return {"median": round(statistics.median(v), 4), "p90": round(v[int(0.9 * (len(v) - 1))], 4),
            "max": round(v[-1], 4), "n": len(v)}


def hits(ranks: list[int | None]) -> dict:
    n = len(ranks)
    out = {f"hit@{k}": round(sum(1 for r in ranks if r is not None and r <= k) / max(1, n), 3) for k in KS}
    out["mrr@10"] = round(sum(1 / r for r in ranks if r is not None and r <= 10) / max(1, n), 3)
    return out


def bench_repo(name: str, n_queries: int, slow_queries: int) -> dict:
    tree, walk_s = load(name)
    t = time.perf_counter()
    repo = CodeRepository(tree)
    build_s = time.perf_counter() - t
    stats = repo.stats()
    lines = sum(len(f.text.splitlines()) for f in tree.files)
    print(f"{name}: {stats} walk {walk_s:.1f}s build {build_s:.1f}s", file=sys.stderr)
    result = {"files": stats["files"], "lines": lines, "bytes": sum(len(f.text.encode()) for f in tree.files),
              "skipped_files": len(tree.skipped), "walk_seconds": round(walk_s, 2), "build_seconds": round(build_s, 2),
              "graph": {k: stats[k] for k in ("nodes", "syntax_nodes", "directories", "edges", "call_edges")},
              "fragments": stats["fragments"], "spans_per_fragment": round(stats["spans"] / stats["fragments"], 1)}
    queries = holes(repo, n_queries)
    result["queries"] = len(queries)
    timings: dict[str, dict[str, list[float]]] = {}
    ranks: dict[str, list[int | None]] = {}
    in_candidates: dict[str, list[bool]] = {}
    extra = [(50, 0.001)] + ([(50, 0.0)] if name == "src" else [])  # slow settings: the first few queries only
    for qi, q in enumerate(queries):
        hole = (q["path"], q["line"])
        for scorer in ("bm25", "jaccard"):
            t0 = time.perf_counter()
            base = rank_code(repo, q["query"], CodeSearchSettings(scorer=scorer, fragrel=False), hole)
            score_s = time.perf_counter() - t0
            allowed = ~np.isneginf(base.s_ind)
            s = np.where(allowed, base.s_ind, 0.0)
            view = repo.view(hole)
            ranks.setdefault(scorer, []).append(rank_of(base.order, q["gold"]))
            timings.setdefault(scorer, {}).setdefault("view_and_score_seconds", []).append(score_s)
            configs = CONFIGS if scorer == "bm25" else CONFIGS[:1]
            configs = configs + (extra if scorer == "bm25" and qi < slow_queries else [])
            for top_m, mw in configs:
                key = f"{scorer}+fragrel M={top_m} min_weight={mw}"
                cand = base.order[:top_m]
                t1 = time.perf_counter()
                W, k = relation_rows(repo, cand, view, mw)
                s_rel = fragrel_scores(s, MatrixRelation(W, row_ids=cand.tolist()), 0.5, candidates=cand)
                rel_s = time.perf_counter() - t1
                order = np.concatenate([cand[np.argsort(-s_rel[cand], kind="stable")], base.order[top_m:]])
                ranks.setdefault(key, []).append(rank_of(order, q["gold"]))
                in_candidates.setdefault(key, []).append(bool(np.isin(cand, q["gold"]).any()))
                tm = timings.setdefault(key, {})
                tm.setdefault("relation_seconds", []).append(rel_s)
                tm.setdefault("subgraph_nodes", []).append(k)
        if qi % 5 == 4:
            print(f"  {qi + 1}/{len(queries)} queries", file=sys.stderr)
    result["per_query"] = {k: {m: summary(v) for m, v in tm.items()} for k, tm in timings.items()}
    result["retrieval"] = {k: {**hits(r), "n": len(r)} for k, r in ranks.items()}
    for k, flags in in_candidates.items():
        result["retrieval"][k]["gold_in_candidates"] = round(sum(flags) / max(1, len(flags)), 3)
    for k, r in ranks.items():  # per query: did FragRel move the gold window up or down?
        scorer = k.split("+")[0]
        if "+" in k:
            moved = [(b or 10**9) - (a or 10**9) for a, b in zip(r, ranks[scorer])]
            result["retrieval"][k]["gold_rank_up/down/same"] = [sum(m > 0 for m in moved), sum(m < 0 for m in moved),
                                                                sum(m == 0 for m in moved)]
    result["peak_rss_mb"] = round(peak_rss_mb(), 1)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repos", nargs="+", default=["src", "stdlib"], choices=["src", "stdlib"])
    parser.add_argument("--queries", type=int, default=30, help="holes per repository")
    parser.add_argument("--slow-queries", type=int, default=3, help="holes also run with min_weight 0.001 (and 0)")
    args = parser.parse_args()
    start, load_before = time.perf_counter(), os.getloadavg()[0]
    repos = {name: bench_repo(name, args.queries, args.slow_queries) for name in args.repos}
    write_result("coderepo", {
        "python_stdlib": f"CPython {sys.version.split()[0]} standard library without "
                         f"{', '.join(sorted(STDLIB_SKIP))}",
        "cores": os.cpu_count(), "load_average_start_end": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "seconds": round(time.perf_counter() - start, 1), "alpha": 0.5, "repositories": repos})


if __name__ == "__main__":
    main()
