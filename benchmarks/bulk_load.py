"""Bulk loads: N archival passages of one agent (random float32 unit vectors, MiniLM's 384 dimensions) loaded
through ``insert_agent_passages`` in batches, into SQLite and into Postgres (``pgserver``, in a temporary
directory), in one run. Postgres loads with a binary COPY and maintains no HNSW index row by row: the index of a
dimension is built by the first search that needs it, timed here as ``postgres_index_build_s``.

    python benchmarks/bulk_load.py --n 100000        # results/bulk_load.json
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


def _load(store, vectors: np.ndarray, batch: int) -> tuple[int, float]:
    agent = store.create_agent("bench", {}, {}, 0.0, [])
    started = time.perf_counter()
    for b in range(0, len(vectors), batch):
        store.insert_agent_passages(agent, [PassageRow(f"passage {b + i}", "2024-01-01", embedding=v.tobytes(),
                                                       embedder="e") for i, v in enumerate(vectors[b:b + batch])])
    return agent, round(time.perf_counter() - started, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000, help="passages")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--batch", type=int, default=1000, help="passages per insert_agent_passages call")
    parser.add_argument("--index-memory", default="1GB", help="maintenance_work_mem while the HNSW index is built")
    args = parser.parse_args()
    import pgserver

    from pagemind.store.postgres import PostgresStore

    m = np.random.default_rng(0).standard_normal((args.n, args.dim)).astype(np.float32)
    vectors = m / np.linalg.norm(m, axis=1, keepdims=True)
    result: dict = {"n": args.n, "dim": args.dim, "batch": args.batch, "index_memory": args.index_memory}
    with tempfile.TemporaryDirectory(prefix="pagemind-bench-") as tmp:
        Path(tmp).chmod(0o755)
        lite = Store(Path(tmp) / "s.db")
        _, result["sqlite_load_s"] = _load(lite, vectors, args.batch)
        lite.close()
        home = Path(tmp) / "pg"
        home.mkdir()
        home.chmod(0o755)
        server = pgserver.get_server(home, cleanup_mode="stop")
        try:
            pg = PostgresStore(server.get_uri(), exact_up_to=args.n // 2, index_memory=args.index_memory)
            agent, result["postgres_load_s"] = _load(pg, vectors, args.batch)
            started = time.perf_counter()  # beyond exact_up_to: this search builds the HNSW index first
            total, ids = pg.nearest_agent_passages(agent, "e", vectors[0].tobytes(), 5)
            result["postgres_index_build_s"] = round(time.perf_counter() - started, 2)
            assert total == args.n and ids[0] == 1, (total, ids)
            seconds = []
            for v in vectors[1:21]:
                started = time.perf_counter()
                pg.nearest_agent_passages(agent, "e", v.tobytes(), 5)
                seconds.append(time.perf_counter() - started)
            result["postgres_search_after_median_ms"] = round(statistics.median(seconds) * 1000, 1)
            pg.close()
        finally:
            server.cleanup()
    result["postgres_over_sqlite"] = round(result["postgres_load_s"] / result["sqlite_load_s"], 2)
    print(write_result("bulk_load", result))


if __name__ == "__main__":
    main()
