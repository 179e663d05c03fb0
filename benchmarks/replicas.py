"""Several ``pagemind serve`` replicas on one Postgres (issue 17's benchmark).

A Postgres with pgvector (from the pgserver wheel, or ``--store postgresql://...``), replicas of ``pagemind serve``
on loopback ports, and one mock OpenAI-compatible LLM with a fixed latency per request. 20 agents x 10 turns from 40
concurrent clients (two per agent, five turns each, one after another), the clients spread over the replicas.

* **Kill**: half-way through (100 turns answered) replica 0 is SIGKILLed and started again on its port. A client
  whose request fails at the transport level (the replica died under it, or refuses connections) sends it again to
  the other replica — what a load balancer's retry does. Counted against the messages the clients sent: lost (not in
  its agent's recall), duplicated (more than once), crossed (in another agent's recall); runs left queued or running.
  Run twice: with an ``Idempotency-Key`` per message (the retry is the same request), and without (a retry of a
  message the dead replica had already stored stores it again).
* **Throughput**: the same 200 turns with 1 and with 2 replicas (no kill).
* **Archival search**: 100k passages (384-d unit vectors) of one agent, the 10 nearest to a query, in Postgres
  (HNSW candidates, exact re-ranking) vs SQLite (exact scan), p50/p95 over 30 queries.

    python benchmarks/replicas.py [--latency 0.2] [--passages 100000] [--store postgresql://...]
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import MOCK_LLM_FLAGS, pct, write_result
from pagemind import users as users_api
from pagemind.llm.llamaserver import free_port, wait_until_answering
from pagemind.llm.mockserver import MockServer
from pagemind.runs import INTERRUPTED
from pagemind.store import open_store

AGENT = {"embedder": "none", "tool_calling": "json", "constrained": False}


def reply(body: dict) -> str:
    """An agent step answering the last user message it sees: ``echo: <message>``."""
    said = [json.loads(line)["message"] for m in body["messages"] for line in str(m.get("content") or "").splitlines()
            if line.startswith("{") and '"user_message"' in line]
    return json.dumps({"thoughts": "reply", "function": "send_message",
                       "arguments": {"message": f"echo: {said[-1] if said else '?'}"}})


class Replica:
    def __init__(self, store: str, llm_url: str, workers: int, port: int | None = None) -> None:
        self.store, self.llm_url, self.workers = store, llm_url, workers
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pagemind", "serve", "--port", str(self.port), "--store", self.store,
             "--base-url", self.llm_url, "--concurrency", "64", "--workers", str(self.workers), *MOCK_LLM_FLAGS],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wait_until_answering(f"{self.url}/v1/health", self.process, what="pagemind serve")

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(15)


class Balancer:
    """The clients' load balancer: a request goes to its preferred replica; when that one fails at the transport
    level (died mid-request, refuses connections) the same request goes to the next replica, until one answers."""

    def __init__(self, urls: list[str], key: str) -> None:
        import httpx

        self.urls = urls
        self.clients = [httpx.Client(base_url=u, headers={"Authorization": f"Bearer {key}"}, timeout=300,
                                     limits=httpx.Limits(max_connections=100, max_keepalive_connections=100))
                        for u in urls]
        self.retries = 0
        self._lock = threading.Lock()

    def post(self, prefer: int, path: str, body: dict, headers: dict | None = None):
        import httpx

        for attempt in range(60):
            client = self.clients[(prefer + attempt) % len(self.clients)]
            try:
                return client.post(path, json=body, headers=headers or {})
            except httpx.TransportError:
                with self._lock:
                    self.retries += 1
                time.sleep(0.05 if attempt < len(self.clients) else 0.5)
        raise RuntimeError(f"no replica answered {path}")

    def get(self, path: str):
        return self.clients[-1].get(path).json()

    def close(self) -> None:
        for c in self.clients:
            c.close()


def workload(lb: Balancer, agents: int, turns: int, tag: str, *, keys: bool, on_half=None) -> dict:
    """``agents`` agents, two clients each (preferring different replicas), ``turns // 2`` turns per client."""
    ids = [lb.post(a % len(lb.urls), "/v1/agents", {"name": f"{tag}{a}", "options": AGENT}).json()["id"]
           for a in range(agents)]
    per_client = turns // 2
    sent: dict[str, int] = {}  # message -> agent id
    answered, statuses, wrong_echo = [0], Counter(), [0]
    lock = threading.Lock()
    half = threading.Event()

    def client(job: tuple[int, int]) -> None:
        a, c = job
        for t in range(per_client):
            message = f"{tag}-a{a}-c{c}-t{t}"
            with lock:
                sent[message] = ids[a]
            headers = {"Idempotency-Key": message} if keys else {}
            r = lb.post(c, f"/v1/agents/{ids[a]}/messages", {"message": message}, headers)
            with lock:
                statuses[r.status_code] += 1
                if r.status_code == 200 and r.json()["messages"] != [f"echo: {message}"]:
                    wrong_echo[0] += 1
                answered[0] += 1
                if answered[0] == agents * per_client * 2 // 2:
                    half.set()

    killer = threading.Thread(target=lambda: (half.wait(), on_half()), daemon=True) if on_half else None
    if killer:
        killer.start()
    start = time.perf_counter()
    with ThreadPoolExecutor(agents * 2) as pool:
        list(pool.map(client, [(a, c) for a in range(agents) for c in range(2)]))
    wall = time.perf_counter() - start
    if killer:
        killer.join()
    lost = duplicated = crossed = 0
    for agent_id in ids:
        history = lb.get(f"/v1/agents/{agent_id}/messages?limit=500")["messages"]
        got = Counter(m["payload"]["message"] for m in history if m["kind"] == "user_message")
        mine = [m for m, target in sent.items() if target == agent_id]
        lost += sum(1 for m in mine if got[m] == 0)
        duplicated += sum(got[m] - 1 for m in mine if got[m] > 1)
        crossed += sum(n for m, n in got.items() if sent.get(m) != agent_id)
    runs = [r for agent_id in ids for r in lb.get(f"/v1/runs?kind=turn&target={agent_id}&limit=500")]
    return {"turns": len(sent), "clients": agents * 2, "seconds": round(wall, 2),
            "turns_per_second": round(len(sent) / wall, 2), "lost": lost, "duplicated": duplicated,
            "crossed": crossed, "http_statuses": dict(statuses), "replies_echoing_another_message": wrong_echo[0],
            "runs_left_queued_or_running": sum(r["status"] in ("queued", "running") for r in runs),
            "runs_interrupted": sum(r["error"] == INTERRUPTED for r in runs)}


def served(store: str, llm_url: str, key: str, n: int, workers: int, agents: int, turns: int, tag: str, *,
           keys: bool = True, kill: bool = False) -> dict:
    replicas = [Replica(store, llm_url, workers) for _ in range(n)]
    lb = Balancer([r.url for r in replicas], key)
    restarted: dict = {}

    def kill_and_restart() -> None:
        replicas[0].kill()
        killed = time.perf_counter()
        replicas[0].start()
        restarted["down_seconds"] = round(time.perf_counter() - killed, 2)

    try:
        result = workload(lb, agents, turns, tag, keys=keys, on_half=kill_and_restart if kill else None)
    finally:
        lb.close()
        for r in replicas:
            r.stop()
    return {**result, "retries": lb.retries, **restarted, "replicas": n}


def archival(pg_url: str, sqlite_path: Path, passages: int, dim: int = 384, queries: int = 30) -> dict:
    """The 10 nearest of ``passages`` archival passages of one agent, Postgres vs SQLite."""
    import numpy as np

    from pagemind.store.rows import PassageRow

    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((passages, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    out = {}
    for name, spec in (("sqlite", str(sqlite_path)), ("postgres", pg_url)):
        store = open_store(spec)
        agent_id = store.create_agent(f"archive-{name}", {}, {}, time.time(), [])
        started = time.perf_counter()
        for b in range(0, passages, 2000):
            store.insert_agent_passages(agent_id, [
                PassageRow(f"passage {i}", "2025-01-01 00:00:00", None, "bench", vectors[i].tobytes(), "bench-384")
                for i in range(b, min(passages, b + 2000))])
        loaded = time.perf_counter() - started
        seconds, hits = [], 0
        for _ in range(queries):
            target = int(rng.integers(passages))
            query = vectors[target] + rng.standard_normal(dim).astype(np.float32) * 0.02
            query /= np.linalg.norm(query)
            started = time.perf_counter()
            _, ids = store.nearest_agent_passages(agent_id, "bench-384", query.astype(np.float32).tobytes(), 10)
            seconds.append(time.perf_counter() - started)
            hits += bool(ids) and ids[0] == q_id(store, agent_id, target)
        out[name] = {"passages": passages, "insert_seconds": round(loaded, 1),
                     "top10_p50_ms": round(pct(seconds, 0.5) * 1000, 1),
                     "top10_p95_ms": round(pct(seconds, 0.95) * 1000, 1),
                     "nearest_is_the_perturbed_passage": f"{hits}/{queries}"}
        store.close()
    return out


def q_id(store, agent_id: int, index: int) -> int:
    """The id of the agent's ``index``-th passage (ids are given in insertion order)."""
    _, rows = store.search_agent_passages(agent_id, "", index, 1)
    return rows[0].id


def postgres(home: Path):
    """A pgserver Postgres (bundles pgvector) and the URL of a fresh database on it."""
    import pgserver
    import psycopg

    home.mkdir(parents=True, exist_ok=True)
    for folder in (home.parent, home):  # as root, pgserver runs the server as another user, who must reach it
        folder.chmod(0o755)
    server = pgserver.get_server(home, cleanup_mode="stop")
    base, _, query = server.get_uri().partition("?")
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute("CREATE DATABASE pagemind_bench")
    return server, f"{base.rsplit('/', 1)[0]}/pagemind_bench" + (f"?{query}" if query else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.2, help="mock LLM seconds per request")
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--turns", type=int, default=10, help="turns per agent")
    parser.add_argument("--workers", type=int, default=16, help="pagemind serve --workers")
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--store", help="a postgresql:// URL (default: a pgserver Postgres in a temporary directory)")
    parser.add_argument("--skip", nargs="*", default=[], choices=["kill", "throughput", "archival"])
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="pagemind-replicas-"))
    server, url = (None, args.store) if args.store else postgres(home / "pg")
    result: dict = {"setup": f"{args.agents} agents x {args.turns} turns, {args.agents * 2} concurrent clients, one "
                             f"LLM call per turn, mock LLM {args.latency}s per request; pagemind serve --workers "
                             f"{args.workers} on one Postgres (pgserver), all on 127.0.0.1, 2 cores"}
    try:
        store = open_store(url)
        _, key = users_api.create_user(store, "bench")
        store.close()
        with MockServer(latency=args.latency, text=reply) as mock:
            common = (url, mock.url, key)
            if "kill" not in args.skip:
                result["kill_with_idempotency_keys"] = served(*common, 2, args.workers, args.agents, args.turns, "k",
                                                              kill=True)
                print(json.dumps(result["kill_with_idempotency_keys"]), flush=True)
                result["kill_without_keys"] = served(*common, 2, args.workers, args.agents, args.turns, "n",
                                                     keys=False, kill=True)
                print(json.dumps(result["kill_without_keys"]), flush=True)
            if "throughput" not in args.skip:
                one = served(*common, 1, args.workers, args.agents, args.turns, "one")
                two = served(*common, 2, args.workers, args.agents, args.turns, "two")
                result["throughput"] = {"one_replica": one, "two_replicas": two,
                                        "speedup": round(two["turns_per_second"] / one["turns_per_second"], 2),
                                        "ideal_turns_per_second": round(args.agents / args.latency, 1)}
                print(json.dumps(result["throughput"]), flush=True)
        if "archival" not in args.skip:
            result["archival_search"] = archival(url, home / "archive.db", args.passages)
            print(json.dumps(result["archival_search"]), flush=True)
    finally:
        if server is not None:
            server.cleanup()
        shutil.rmtree(home, ignore_errors=True)
    write_result("replicas", result)


if __name__ == "__main__":
    main()
