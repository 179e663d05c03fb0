"""(q) The near-duplicate threshold of archival inserts, measured on MSC's persona facts with the embedded MiniLM.

Negatives: two different facts of one speaker in one session's persona list (distinct by construction: "I own a
Jeep." / "I have a marketing job."). Positives: a speaker's first-session fact and its restatement in a later
session's summary, taken where the two share a content word and MiniLM ranks that restatement first among the
speaker's later facts ("I own a jeep wrangler." / "I own a Jeep."); approximate, so their figure is a lower bound of
what a threshold catches. Also: the added milliseconds of one archival insert with the check (SQLite, 1,000 and
10,000 passages stored) and the storage of one core-memory version.

    python benchmarks/archival_dedup.py [--data DIR] [--sessions 300]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from common import DATA, write_result


def persona_pairs(path: Path, sessions: int) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    from pagemind.text.words import keywords

    negatives, candidates = [], []
    for line in path.read_text().splitlines()[:sessions]:
        row = json.loads(line)
        for speaker in (0, 1):
            later = [f for f in row["personas"][speaker] if f.strip()]
            negatives += [(a, b) for i, a in enumerate(later) for b in later[i + 1:]]
            for first in row["init_personas"][speaker]:
                shared = [f for f in later if keywords(first) & keywords(f)]
                if shared:
                    candidates.append((first, shared))
    return negatives, [(a, b) for a, bs in candidates for b in bs]


def cosines(encoder: object, pairs: list[tuple[str, str]]) -> np.ndarray:
    from pagemind.retrieval.embed import text_vectors

    left = text_vectors(encoder, [a for a, _ in pairs], 8192, 10**9).vectors  # type: ignore[arg-type]
    right = text_vectors(encoder, [b for _, b in pairs], 8192, 10**9).vectors  # type: ignore[arg-type]
    return np.einsum("ij,ij->i", left, right)


def insert_cost(stored: int) -> dict[str, float]:
    """Milliseconds of one archival_memory_insert through the agent's function (the check included) with
    ``stored`` passages already there."""
    from pagemind import LLM, ScriptedLLM, Store
    from pagemind.agent import Agent, AgentOptions

    with tempfile.TemporaryDirectory() as tmp:
        agent = Agent.create(LLM(ScriptedLLM()), Store(Path(tmp) / "s.db"), "bench",
                             options=AgentOptions(embedder="minilm"))
        agent.archive.insert([f"fact number {i}: the {i % 97}th lamp is lit at {i % 24} o'clock" for i in
                              range(stored)], agent.now())
        times = []
        for i in range(20):
            start = time.perf_counter()
            agent.tools.run("archival_memory_insert", {"content": f"A new fact {i}: Ada flies planes on day {i}."})
            times.append((time.perf_counter() - start) * 1000)
        plain = []
        for i in range(20):
            start = time.perf_counter()
            agent.archive.insert([f"Another fact {i}: Abel sails on day {i}."], agent.now())
            plain.append((time.perf_counter() - start) * 1000)
        return {"stored": stored, "insert_ms_checked": statistics.median(times),
                "insert_ms_unchecked": statistics.median(plain)}


def version_bytes() -> dict[str, float]:
    """Bytes the store grows by per core-memory version of a 1,000-character block (SQLite, page-rounded)."""
    from pagemind import LLM, ScriptedLLM, Store
    from pagemind.agent import Agent, AgentOptions

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.db"
        agent = Agent.create(LLM(ScriptedLLM()), Store(path), "bench", options=AgentOptions(embedder="none"))
        agent.store.store.execute("VACUUM")
        before = path.stat().st_size
        for i in range(1000):
            agent.set_block("human", (f"edit {i} " + "x" * 1000)[:1000], cause="bench")
        agent.store.store.execute("VACUUM")
        return {"versions": 1000, "block_chars": 1000, "bytes_per_version": (path.stat().st_size - before) / 1000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--sessions", type=int, default=300)
    args = parser.parse_args()
    from pagemind.answering.evidence import minilm_encoder

    encoder = minilm_encoder()
    negatives, candidates = persona_pairs((args.data or DATA) / "msc" / "msc_dialogue_session_2_test.jsonl",
                                          args.sessions)
    neg = cosines(encoder, negatives)
    cand = cosines(encoder, candidates)
    # a first-session fact's restatement: of the later facts sharing a word with it, the nearest
    best: dict[str, float] = {}
    for (first, _), c in zip(candidates, cand):
        best[first] = max(best.get(first, -1.0), float(c))
    pos = np.array(sorted(best.values()))
    rows = []
    for threshold in (0.80, 0.85, 0.88, 0.90, 0.92, 0.95):
        rows.append({"threshold": threshold, "distinct_facts_merged": float((neg >= threshold).mean()),
                     "restatements_caught": float((pos >= threshold).mean())})
    result = {"negatives": len(neg), "positives": len(pos),
              "negative_quantiles": {q: float(np.quantile(neg, q)) for q in (0.5, 0.99, 0.999, 1.0)},
              "positive_quantiles": {q: float(np.quantile(pos, q)) for q in (0.1, 0.5, 0.9)},
              "thresholds": rows, "insert_cost": [insert_cost(n) for n in (1000, 10000)],
              "core_memory_version": version_bytes()}
    print(json.dumps(result, indent=2))
    write_result("archival_dedup", result)


if __name__ == "__main__":
    main()
