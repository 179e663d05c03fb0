"""Archival search latency: N passages of one agent (random float32 unit vectors, MiniLM's 384 dimensions), one page
(5 passages) for each of Q queries, through ``nearest_agent_passages``: the SQLite store (the agent's vectors read
once and kept in memory, ranked in numpy; its first search, and reading every vector per query as it did before
the cache, are timed too), the Postgres store searched exactly (pgvector's ``<#>`` scan, then the candidates ranked
exactly) and through its HNSW index. Postgres runs from the ``pgserver`` wheel in a temporary directory.

    python benchmarks/store_search.py --n 10000 --queries 50
    python benchmarks/store_search.py --n 100000 --queries 20 --sqlite-only   # results/store_search_sqlite.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import write_result
from pagemind.store import PassageRow, Store
from pagemind.store.vectors import rank


def _vectors(n: int, dim: int, seed: int) -> np.ndarray:
    m = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _fill(store, vectors: np.ndarray) -> tuple[int, float]:
    agent = store.create_agent("bench", {}, {}, 0.0, [])
    started = time.perf_counter()
    for b in range(0, len(vectors), 1000):
        store.insert_agent_passages(agent, [PassageRow(f"passage {b + i}", "2024-01-01", embedding=v.tobytes(),
                                                       embedder="e") for i, v in enumerate(vectors[b:b + 1000])])
    return agent, time.perf_counter() - started


def _time(store, agent: int, queries: np.ndarray, limit: int) -> tuple[list[float], list[list[int]]]:
    seconds, found = [], []
    for q in queries:
        started = time.perf_counter()
        found.append(store.nearest_agent_passages(agent, "e", q.tobytes(), limit)[1])
        seconds.append(time.perf_counter() - started)
    return seconds, found


def _summary(seconds: list[float]) -> dict:
    ms = sorted(s * 1000 for s in seconds)
    return {"median_ms": round(statistics.median(ms), 2), "p90_ms": round(ms[int(0.9 * (len(ms) - 1))], 2)}


def _sqlite(lite: Store, vectors: np.ndarray, queries: np.ndarray, limit: int, result: dict) -> list[list[int]]:
    """SQLite: the first search (reads the vectors), the cached searches, and every vector read per query."""
    agent, result["sqlite_insert_s"] = _fill(lite, vectors)
    started = time.perf_counter()
    lite.nearest_agent_passages(agent, "e", queries[0].tobytes(), limit)
    result["sqlite_first_search_ms"] = round((time.perf_counter() - started) * 1000, 1)
    seconds, expected = _time(lite, agent, queries, limit)
    result["sqlite"] = _summary(seconds)
    every: list[float] = []
    for q in queries[:5]:
        started = time.perf_counter()
        found = rank(lite.agent_passage_vectors(agent, "e"), q.tobytes(), limit)
        every.append(time.perf_counter() - started)
        assert found == expected[len(every) - 1]
    result["sqlite_every_vector_per_query"] = _summary(every)
    lite.close()
    return expected


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000, help="passages of the agent")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--limit", type=int, default=5, help="passages per page")
    parser.add_argument("--ef-search", type=int, nargs="+", default=[40, 200, 1000], help="HNSW ef_search values")
    parser.add_argument("--sqlite-only", action="store_true", help="no Postgres (loading 100k passages takes ~9 min)")
    args = parser.parse_args()
    if args.sqlite_only:
        vectors, queries = _vectors(args.n, args.dim, 0), _vectors(args.queries, args.dim, 1)
        result = {"n": args.n, "dim": args.dim, "queries": args.queries, "limit": args.limit}
        with tempfile.TemporaryDirectory(prefix="pagemind-bench-") as tmp:
            _sqlite(Store(Path(tmp) / "s.db"), vectors, queries, args.limit, result)
        print(write_result("store_search_sqlite", result))
        return

    import pgserver
    import psycopg

    from pagemind.store.postgres import PostgresStore

    vectors, queries = _vectors(args.n, args.dim, 0), _vectors(args.queries, args.dim, 1)
    result: dict = {"n": args.n, "dim": args.dim, "queries": args.queries, "limit": args.limit}
    with tempfile.TemporaryDirectory(prefix="pagemind-bench-") as tmp:
        home = Path(tmp) / "pg"
        home.mkdir()
        Path(tmp).chmod(0o755)
        home.chmod(0o755)
        started = time.perf_counter()
        server = pgserver.get_server(home, cleanup_mode="stop")
        result["pg_server_start_s"] = round(time.perf_counter() - started, 2)
        try:
            expected = _sqlite(Store(Path(tmp) / "s.db"), vectors, queries, args.limit, result)

            url = server.get_uri()
            pg = PostgresStore(url, exact_up_to=args.n)  # exact: every query scans the agent's vectors
            agent, result["postgres_insert_s"] = _fill(pg, vectors)
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("ANALYZE agent_passages")
            seconds, found = _time(pg, agent, queries, args.limit)
            result["postgres_exact"] = {**_summary(seconds), "equal_to_sqlite": found == expected}
            pg.db.exact_up_to = 0  # the HNSW index finds the candidates
            rows = pg.agent_passage_vectors(agent, "e")
            for ef in args.ef_search:
                pg.db.ef_search = ef
                seconds, found = _time(pg, agent, queries, args.limit)
                hits = sum(len(set(f) & set(e)) for f, e in zip(found, expected))
                ordered = all(f == rank([r for r in rows if r[0] in f], q.tobytes()) for f, q in zip(found, queries))
                result[f"postgres_hnsw_ef{ef}"] = {**_summary(seconds),
                                                   "recall": round(hits / sum(map(len, expected)), 4),
                                                   "equal_to_sqlite": found == expected, "ranked_exactly": ordered}
            pg.close()
        finally:
            server.cleanup()
    print(write_result("store_search", result))
    for key, value in result.items():
        if key.startswith(("sqlite", "postgres")):
            print(key, value)


if __name__ == "__main__":
    main()
