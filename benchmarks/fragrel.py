"""FragRel: scoring time (1k / 10k / 100k fragments), MiniLM throughput, and retrieval quality with and
without FragRel on the QuALITY slice and MTBench+ -> results/fragrel.json. No LLM runs.

    nice -n 19 python benchmarks/fragrel.py            # everything (~5-10 min on 2 busy cores)
    python benchmarks/fragrel.py --skip-quality         # timings only

Quality proxies (neither set marks gold fragments):
* QuALITY: the "gold" fragments are those holding the most distinct content words (>= 3 letters, no
  stopwords) of the correct option (ties: all of them; questions whose best count is < 2 are left out).
  Two queries: the question alone, and the question + all four options (what the ``rag`` reader sends; it
  contains the correct option's words, among three wrong ones). hit@k = a gold fragment in the top k.
* MTBench+: the query is the probe turn; gold turns are the earlier turns of the topic(s) the probe's
  turn-info names (e.g. ``roleplay-95-Q`` -> every ``roleplay-95-*`` turn). Bot turns are empty in the data,
  so fragments are the user turns, positions = user-turn order.
"""

from __future__ import annotations

import os

# FragRel scoring is a few memory-bound vector passes; multi-threaded OpenBLAS on a shared 2-core machine
# spends ~100x longer synchronising threads than computing (a 1000x1000 mat-vec: 15 ms vs 0.14 ms).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA, peak_rss_mb, quality_rows, write_result
from pagemind.retrieval import Fragment, FragmentIndex, RetrievalSettings, split_words
from pagemind.retrieval.cache import EmbeddingCache
from pagemind.retrieval.embed import CachedEmbedder, MiniLM
from pagemind.retrieval.fragrel.code_graph import CodeGraph, code_relation_rows
from pagemind.retrieval.fragrel.relations import ContextRelation, SemanticRelation, fragrel_scores
from pagemind.retrieval.scorers import words
from pagemind.store import Store

STOP = set("the a an and or of to in on at for with from by is are was were be been it its this that these those "
           "he she they them his her their him we you your our not but as so if than then there what which who "
           "whom how why when where did does do has have had would could should will can may might about into "
           "out up one all any more most some such only also very just because".split())
VARIANTS = {  # name -> (relation, alpha, w_rel); None = no FragRel
    "none": None,
    "context": ("context", 0.5, 0.3),
    "context-chat": ("context", 0.5, 0.8),
    "semantic": ("semantic", 0.5, 0.3),
    "semantic-distance": ("semantic-distance", 0.5, 0.3),
}


def timed(fn, reps: int) -> float:
    """Median milliseconds of ``reps`` calls."""
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return round(statistics.median(out), 3)


def scoring_times() -> dict:
    rng = np.random.default_rng(0)
    res: dict = {"context": {}, "semantic": {}, "code": {}}
    for n in (1_000, 10_000, 100_000):
        s = rng.random(n)
        for label, sources in (("one source", None), ("files of 100", [str(i // 100) for i in range(n)])):
            for use_scipy in (True, False):
                t = time.perf_counter()
                rel = ContextRelation(np.arange(n) % 100 if sources else np.arange(n), sources, 0.3, use_scipy)
                build = (time.perf_counter() - t) * 1000
                key = f"{n} {label} {'scipy lfilter' if use_scipy else 'numpy scan'}"
                res["context"][key] = {"build_ms": round(build, 2),
                                       "score_ms": timed(lambda s=s, rel=rel: fragrel_scores(s, rel, 0.5), 9)}
        E = rng.normal(size=(n, 384)).astype(np.float32)
        rel = SemanticRelation(E, form="distance")
        res["semantic"][f"{n} distance (exact, O(N d))"] = {
            "score_ms": timed(lambda s=s, rel=rel: fragrel_scores(s, rel, 0.5), 5)}
        if n <= 10_000:
            t = time.perf_counter()
            sim = SemanticRelation(E, form="similarity", k=64)  # scale: benchmarks/fragrel_scale.py
            kind = f"top-64 {sim.search}"
            res["semantic"][f"{n} similarity ({kind})"] = {
                "build_ms": round((time.perf_counter() - t) * 1000, 1),
                "score_ms": timed(lambda s=s, sim=sim: fragrel_scores(s, sim, 0.5), 5)}
    # code relation: a random tree of 20k nodes + 40k extra edges, 2k fragments of 10 nodes, 100 candidates
    n_nodes = 20_000
    tree = [(i, int(rng.integers(0, i)), 0.5) for i in range(1, n_nodes)]
    extra = [(int(a), int(b), 0.8) for a, b in rng.integers(0, n_nodes, size=(40_000, 2)) if a != b]
    graph = CodeGraph(n_nodes, tuple(tree + extra))
    frags = [[(int(g), float(rng.integers(1, 50))) for g in rng.choice(n_nodes, 10, replace=False)]
             for _ in range(2000)]
    t = time.perf_counter()
    code_relation_rows(graph, frags, rows=list(range(100)), min_weight=1e-3)
    res["code"]["20k nodes, 60k edges, 2k fragments, rows for 100 candidates"] = {
        "ms": round((time.perf_counter() - t) * 1000, 1)}
    return res


def throughput(rows: list[dict], embedder: MiniLM, n: int = 40) -> dict:
    frags = [f.text for r in rows for f in split_words(r["article"], 500)][:n]
    chunks = sum(len(embedder.chunk_ids(t)) for t in frags)
    tokens = sum(embedder.tokenizer.count(t) for t in frags)
    t = time.perf_counter()
    embedder.embed(frags)
    secs = time.perf_counter() - t
    queries = [r["question"] for r in rows[:20]]
    t = time.perf_counter()
    embedder.embed(queries)
    qsecs = time.perf_counter() - t
    return {"fragments": len(frags), "fragment_words": 500, "sub_chunks": chunks, "wordpiece_tokens": tokens,
            "seconds": round(secs, 2), "fragments_per_s": round(len(frags) / secs, 2),
            "chunks_per_s": round(chunks / secs, 2), "tokens_per_s": round(tokens / secs),
            "queries_per_s": round(len(queries) / qsecs, 1), "threads": 2}


def settings(scorer: str, variant: str, pool: str = "max") -> RetrievalSettings:
    v = VARIANTS[variant]
    if v is None:
        return RetrievalSettings(scorer=scorer, pool=pool)
    rel, alpha, w = v
    return RetrievalSettings(scorer=scorer, pool=pool, fragrel=True, relation=rel, alpha=alpha, w_rel=w)


def gold_fragments(frags: list[Fragment], option: str) -> set[int]:
    content = {w for w in words(option) if len(w) >= 3 and w not in STOP}
    counts = [len(content & set(words(f.text))) for f in frags]
    best = max(counts)
    return {i for i, c in enumerate(counts) if c == best} if best >= 2 else set()


def evaluate(cases: list[tuple[list[Fragment], str, set[int]]], embedder, ks: tuple[int, ...], variants,
             metric: str = "recall") -> dict:
    out: dict = {}
    for scorer in ("bm25", "dense", "hybrid"):
        for variant in variants:
            hits = {k: [] for k in ks}
            rr = []
            for frags, query, gold in cases:
                idx = FragmentIndex(frags, settings(scorer, variant), embedder)
                order = [int(i) for i in idx.rank(query).order]
                for k in ks:
                    found = len(gold & set(order[:k]))
                    hits[k].append(found / len(gold) if metric == "recall" else float(found > 0))
                rr.append(1.0 / (1 + min(order.index(g) for g in gold)))
            out[f"{scorer} / {variant}"] = {**{f"{metric}@{k}": round(float(np.mean(v)), 3) for k, v in hits.items()},
                                           "mrr": round(float(np.mean(rr)), 3)}
    return out


def quality(rows: list[dict], embedder, sizes=(500, 250)) -> dict:
    res: dict = {}
    variants = ["none", "context", "semantic", "semantic-distance"]
    for size in sizes:
        cases = []
        for r in rows:
            frags = split_words(r["article"], size)
            gold = gold_fragments(frags, r["options"][r["gold_label"]])
            if gold:
                cases.append((frags, r, gold))
        entry: dict = {"questions_with_proxy_gold": len(cases), "questions": len(rows),
                       "mean_fragments": round(float(np.mean([len(c[0]) for c in cases])), 1),
                       "mean_gold_fragments": round(float(np.mean([len(c[2]) for c in cases])), 2)}
        for label, query in (("question", lambda r: r["question"]),
                             ("question+options", lambda r: r["question"] + "\n" + "\n".join(r["options"]))):
            entry[f"query={label}"] = evaluate([(f, query(r), g) for f, r, g in cases], embedder, (1, 3), variants,
                                               metric="hit")
        res[f"{size}-word fragments"] = entry
    return res


def mtbench(path: Path, embedder) -> dict:
    convs = json.loads(path.read_text())
    cases, by_type = [], {}
    for c in convs:
        human = [t for t in c["conversations"] if t["from"] == "human"]
        probe, history = human[-1], human[:-1]
        assert probe["turn-info"].endswith("-Q")
        parts = probe["turn-info"][:-2].split("-")
        topics = {"-".join(parts[i:i + 2]) for i in range(0, len(parts), 2)}
        gold = {i for i, t in enumerate(history) if re.sub(r"-\d+$", "", t["turn-info"]) in topics}
        frags = [Fragment(i, t["value"], i, "", i, i + 1, "turns") for i, t in enumerate(history)]
        cases.append((frags, probe["value"], gold))
        by_type.setdefault(c["type"], []).append(len(cases) - 1)
    res = {"conversations": len(cases), "mean_turns": round(float(np.mean([len(c[0]) for c in cases])), 1),
           "mean_gold_turns": round(float(np.mean([len(c[2]) for c in cases])), 2),
           "all": evaluate(cases, embedder, (1, 3, 5, 8), list(VARIANTS))}
    for kind, ids in by_type.items():
        res[kind] = evaluate([cases[i] for i in ids], embedder, (8,), ["none", "context-chat"])
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--store", type=Path, help="SQLite file caching embeddings (default: a temporary one)")
    ap.add_argument("--skip-quality", action="store_true")
    args = ap.parse_args()
    result: dict = {"scoring_ms": scoring_times()}
    print(json.dumps(result["scoring_ms"], indent=1), flush=True)
    minilm = MiniLM(threads=2)
    rows = quality_rows(args.data)
    result["embedding_throughput"] = throughput(rows, minilm)
    print(json.dumps(result["embedding_throughput"]), flush=True)
    if not args.skip_quality:
        store = Store(args.store or Path(tempfile.mkdtemp()) / "embeddings.db")
        embedder = CachedEmbedder(minilm, EmbeddingCache(store))
        t = time.perf_counter()
        result["quality"] = quality(rows, embedder)
        result["mtbench_plus"] = mtbench(args.data / "mtbench-plus" / "mtbenchplus.json", embedder)
        result["quality_seconds"] = round(time.perf_counter() - t, 1)
    result["embedder"] = minilm.model_id
    result["openblas_threads"] = os.environ.get("OPENBLAS_NUM_THREADS")
    result["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    result["peak_rss_mb"] = round(peak_rss_mb())
    write_result("fragrel", result)


if __name__ == "__main__":
    main()
