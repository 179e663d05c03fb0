"""FragRel's semantic relation at scale (issue 15, item 7) -> results/fragrel_scale.json. No LLM runs.

Timing: random unit vectors of MiniLM's size (d = 384), one subprocess per cell so that its peak RSS is its own,
OpenBLAS and faiss on one thread (the machine is shared). Before: the build this replaced (exact top-64 over
blocks of 1024 rows, each block argpartitioned whole) and the dense formula (k = 0, every pair) at 10k and 20k
fragments; at 100k both are extrapolated (time quadratic, the old build's memory linear), never run. After: the
exact blocked top-k at 10k and 20k, the HNSW index (faiss, the ``ann`` extra) at 10k, 20k and 100k, and the
printed 1 - cos form (exact, O(N d) per query) at 100k.

Quality: real MiniLM embeddings of QMSum meeting transcripts (100-word fragments, meetings in file order until
``--fragments``), queried with QMSum's specific queries; a query's gold fragments are those overlapping its
relevant turns. For s_ind = dense and BM25: hit@1/5/10, and the overlap of each variant's top 5 with the dense
formula's top 5; the index's neighbour recall against the exact top-k.

    nice -n 19 python benchmarks/fragrel_scale.py --store emb.db   # timings ~8 min on 2 busy cores, then embedding
                                                                    # 10k fragments ~12 min (cached in --store)
    python benchmarks/fragrel_scale.py --skip-quality                 # timings only
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")  # faiss

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA, write_result
from pagemind.retrieval.fragrel.relations import (
    APPROXIMATE_ABOVE,
    ContextRelation,
    SemanticRelation,
    exact_neighbours,
    has_ann,
)

D = 384
K = 64
SIZES = (10_000, 20_000, 100_000)


def rss_mb() -> float:
    """Peak resident memory of this process so far."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mb() -> float:
    """Resident memory now (Linux), so the peak can be taken against what the vectors really hold."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return rss_mb()


def random_units(n: int, seed: int = 0) -> np.ndarray:
    E = np.random.default_rng(seed).standard_normal((n, D), dtype=np.float32)
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    return E


def previous_top_k(E: np.ndarray, k: int = K, block: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """The build this replaced: exact top-k, blocks of 1024 rows x N, the negated block argpartitioned whole."""
    n = len(E)
    idx, wts = np.zeros((n, k), dtype=np.int64), np.zeros((n, k))
    for b in range(0, n, block):
        sims = E[b:b + block] @ E.T
        sims[np.arange(sims.shape[0]), np.arange(b, b + sims.shape[0])] = -np.inf
        part = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        idx[b:b + block] = part
        wts[b:b + block] = np.clip(np.take_along_axis(sims, part, axis=1), 0.0, None)
    return idx, wts


def cell(kind: str, n: int, k: int) -> dict:
    """One timing cell, run in its own process."""
    E = random_units(n)
    s = np.random.default_rng(1).random(n)
    base = current_rss_mb()
    wall, cpu = time.perf_counter(), time.process_time()
    if kind == "previous":
        idx, wts = previous_top_k(E, k)
        query = lambda: ((wts * s[idx]).sum(axis=1) + s) / (wts.sum(axis=1) + 1.0)
        nnz = idx.size + n
    else:
        form = "distance" if kind == "distance" else "similarity"
        search = {"dense": "dense", "exact": "exact", "approximate": "approximate"}.get(kind, "auto")
        rel = SemanticRelation(E, form=form, k=0 if kind == "dense" else k, search=search)
        query = lambda: rel.environment(s)
        nnz = rel.nnz
    build_s, build_cpu = time.perf_counter() - wall, time.process_time() - cpu
    reps = 1 if kind == "dense" else 5
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        query()
        times.append(time.perf_counter() - t)
    return {"build_s": round(build_s, 2), "build_cpu_s": round(build_cpu, 2),
            "query_ms": round(statistics.median(times) * 1000, 2), "nnz": int(nnz),
            "rss_vectors_mb": round(base), "peak_rss_mb": round(rss_mb()),
            "peak_minus_vectors_mb": round(rss_mb() - base)}


def run_cell(kind: str, n: int, k: int = K) -> dict:
    out = subprocess.run([sys.executable, __file__, "--cell", kind, str(n), str(k)], check=True,
                         capture_output=True, text=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    print(kind, n, json.dumps(res), flush=True)
    return res


def timings() -> dict:
    res: dict = {"before": {}, "after": {}}
    for n in SIZES[:2]:
        res["before"][f"{n} previous top-{K}"] = run_cell("previous", n)
        res["before"][f"{n} dense (k=0)"] = run_cell("dense", n)
        res["after"][f"{n} exact top-{K}"] = run_cell("exact", n)
    if has_ann():
        for n in SIZES:
            res["after"][f"{n} approximate top-{K}"] = run_cell("approximate", n)
    res["after"][f"{SIZES[-1]} distance (1 - cos, exact)"] = run_cell("distance", SIZES[-1])
    # 100k before: extrapolated from 20k (time ~ N^2; the previous build's memory ~ N: 1024 x N block arrays)
    big, mid, small = SIZES[2], SIZES[1], SIZES[0]
    grow = (big / mid) ** 2
    prev_mid, prev_small = res["before"][f"{mid} previous top-{K}"], res["before"][f"{small} previous top-{K}"]
    dense_mid = res["before"][f"{mid} dense (k=0)"]
    slope = (prev_mid["peak_minus_vectors_mb"] - prev_small["peak_minus_vectors_mb"]) / (mid - small)
    res["before"][f"{big} previous top-{K} (extrapolated)"] = {
        "build_s": round(prev_mid["build_s"] * grow, 1), "build_cpu_s": round(prev_mid["build_cpu_s"] * grow, 1),
        "peak_minus_vectors_mb": round(prev_mid["peak_minus_vectors_mb"] + slope * (big - mid))}
    res["before"][f"{big} dense (k=0, extrapolated)"] = {
        "build_s": round(dense_mid["build_s"] * grow, 1), "build_cpu_s": round(dense_mid["build_cpu_s"] * grow, 1),
        "query_ms": round(dense_mid["query_ms"] * grow),
        "W_float64_mb_if_held": round(big * big * 8 / 2**20)}
    ratios = {}  # against what search="auto" picks at that size
    for n in SIZES:
        prev = res["before"].get(f"{n} previous top-{K}") or res["before"][f"{n} previous top-{K} (extrapolated)"]
        after = f"{'approximate' if has_ann() and n > APPROXIMATE_ABOVE else 'exact'} top-{K}"
        new = res["after"].get(f"{n} {after}")
        if new:
            ratios[str(n)] = {"after": after,
                              "build_wall_before_over_after": round(prev["build_s"] / new["build_s"], 2),
                              "build_cpu_before_over_after": round(prev["build_cpu_s"] / new["build_cpu_s"], 2),
                              "extra_memory_before_over_after": round(
                                  prev["peak_minus_vectors_mb"] / max(new["peak_minus_vectors_mb"], 1), 1)}
    res["ratios"] = ratios
    return res


# --- quality on real embeddings --------------------------------------------------------------------------
def qmsum(data: Path, n: int) -> tuple[list, list[tuple[str, set[int]]]]:
    from pagemind.retrieval import Fragment

    frags: list = []
    queries: list[tuple[str, set[int]]] = []
    for split in ("val", "train"):
        for line in (data / "qmsum" / f"{split}.jsonl").read_text().splitlines():
            r = json.loads(line)
            starts, words = [], []
            for turn in r["meeting_transcripts"]:
                starts.append(len(words))
                words += turn["content"].split()
            starts.append(len(words))
            base = len(frags)
            for pos, b in enumerate(range(0, len(words), 100)):
                frags.append(Fragment(len(frags), " ".join(words[b:b + 100]), pos, r["meeting_id"]))
            for q in r["specific_query_list"]:
                gold: set[int] = set()
                for a, b in q["relevant_text_span"]:
                    first, end = starts[int(a)], starts[min(int(b) + 1, len(starts) - 1)]
                    gold |= {base + i for i in range(first // 100, max(end - 1, first) // 100 + 1)}
                queries.append((q["query"], gold))
            if len(frags) >= n:
                break
        if len(frags) >= n:
            break
    frags = frags[:n]
    return frags, [(t, {g for g in gold if g < n}) for t, gold in queries if any(g < n for g in gold)]


def dense_formula(E: np.ndarray, S: np.ndarray, block: int = 500) -> np.ndarray:
    """Eq. 9 with w_ij = max(0, cos), w_ii = 1, for every query (columns of S) at once, written out."""
    E64 = E.astype(np.float64)
    num, den = np.zeros_like(S), np.zeros(len(E))
    for b in range(0, len(E), block):
        W = np.clip(E64[b:b + block] @ E64.T, 0.0, None)
        r = np.arange(W.shape[0])
        W[r, b + r] = 1.0
        den[b:b + block] = W.sum(axis=1)
        num[b:b + block] = W @ S
    return num / den[:, None]


def top(x: np.ndarray, k: int) -> list[int]:
    return [int(i) for i in np.argsort(-x, kind="stable")[:k]]


def quality(data: Path, n: int, store_path: Path | None) -> dict:
    from pagemind.retrieval import FragmentIndex, RetrievalSettings
    from pagemind.retrieval.cache import EmbeddingCache
    from pagemind.retrieval.embed import CachedEmbedder, MiniLM
    from pagemind.store import Store

    frags, queries = qmsum(data, n)
    store = Store(store_path or Path(tempfile.mkdtemp()) / "embeddings.db")
    index = FragmentIndex(frags, RetrievalSettings(scorer="dense"), CachedEmbedder(MiniLM(threads=2),
                                                                                   EmbeddingCache(store)))
    t = time.perf_counter()
    E = index.vectors()
    embed_s = time.perf_counter() - t
    scores = {"dense": np.stack([index.dense(q) for q, _ in queries], axis=1),
              "bm25": np.stack([index.bm25(q) for q, _ in queries], axis=1)}
    check = SemanticRelation(E, k=0)  # the library's dense form against the written-out formula
    E = check.E  # the unit rows every relation keeps (float32)
    reference = {name: dense_formula(E, S) for name, S in scores.items()}
    assert np.allclose(check.environment(scores["dense"][:, 0]), reference["dense"][:, 0], rtol=1e-9, atol=1e-12)

    variants: dict[str, object | None] = {"none": None, "dense formula (k=0)": "reference",
                                          "context (w_rel .3)": ContextRelation([f.position for f in frags],
                                                                                [f.source for f in frags], 0.3)}
    builds: dict[str, float] = {}
    for k in (16, 32, 64, 128):
        t = time.perf_counter()
        variants[f"exact top-{k}"] = SemanticRelation(E, k=k, search="exact")
        builds[f"exact top-{k}"] = round(time.perf_counter() - t, 2)
    recall = None
    if has_ann():
        t = time.perf_counter()
        approx = SemanticRelation(E, k=K, search="approximate")
        builds[f"approximate top-{K}"] = round(time.perf_counter() - t, 2)
        variants[f"approximate top-{K}"] = approx
        exact_idx, _ = exact_neighbours(approx.E, K)
        assert approx.nbr_idx is not None
        recall = round(float(np.mean([len(set(a) & set(b)) / K for a, b in zip(approx.nbr_idx, exact_idx)])), 3)

    out: dict = {"fragments": len(frags), "fragment_words": 100, "queries": len(queries),
                 "mean_gold_fragments": round(float(np.mean([len(g) for _, g in queries])), 2),
                 "embedding_s": round(embed_s, 1), "relation_build_s": builds,
                 f"approximate_top{K}_neighbour_recall": recall, "alpha": 0.5}
    for name, S in scores.items():
        ref_top = [top(S[:, j] + 0.5 * reference[name][:, j], 5) for j in range(len(queries))]
        table = {}
        for label, rel in variants.items():
            hits = {1: [], 5: [], 10: []}
            overlap = []
            for j, (_, gold) in enumerate(queries):
                s = S[:, j]
                if rel is None:
                    rel_s = s
                elif rel == "reference":
                    rel_s = s + 0.5 * reference[name][:, j]
                else:
                    rel_s = s + 0.5 * rel.environment(s)  # type: ignore[attr-defined]
                order = top(rel_s, 10)
                for k in hits:
                    hits[k].append(float(bool(gold & set(order[:k]))))
                overlap.append(len(set(order[:5]) & set(ref_top[j])) / 5)
            table[label] = {**{f"hit@{k}": round(float(np.mean(v)), 3) for k, v in hits.items()},
                            "top5_overlap_with_dense_formula": round(float(np.mean(overlap)), 3)}
        out[f"s_ind={name}"] = table
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cell", nargs=3, metavar=("KIND", "N", "K"), help=argparse.SUPPRESS)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--store", type=Path, help="SQLite file caching embeddings (default: a temporary one)")
    ap.add_argument("--fragments", type=int, default=10_000, help="real fragments for the quality check")
    ap.add_argument("--skip-quality", action="store_true")
    args = ap.parse_args()
    if args.cell:
        kind, n, k = args.cell
        print(json.dumps(cell(kind, int(n), int(k))))
        return
    result: dict = {"dim": D, "k": K, "faiss": has_ann(), "threads": {"openblas": os.environ["OPENBLAS_NUM_THREADS"],
                                                                     "faiss (omp)": os.environ["OMP_NUM_THREADS"]},
                    "load_average_at_start": [round(x, 2) for x in os.getloadavg()], "timing": timings()}
    if not args.skip_quality:
        result["quality_qmsum"] = quality(args.data, args.fragments, args.store)
    result["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    write_result("fragrel_scale", result)


if __name__ == "__main__":
    main()
