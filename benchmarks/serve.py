"""``pagemind serve`` under concurrent agent traffic (issue 16's benchmark).

10 MemGPT agents x 5 turns sent by 50 concurrent HTTP clients (one turn each, all at once) to a real
``pagemind serve`` process whose LLM is pagemind's mock OpenAI-compatible server with a fixed latency per request.
Checked: every agent's recall holds exactly its own 5 user messages (none lost, crossed or duplicated), in the
order the server ran its turns, and no two turns of one agent overlapped. Measured: throughput against the same
50 turns through the Python API directly (10 threads, one per agent); the client's latency per turn and the
server's added latency (round trip minus the turn's own time from queued to finished, i.e. HTTP, auth, run
bookkeeping); and one client sending 5 turns at once to a single agent (they must run in the order sent).

    python benchmarks/serve.py [--latency 0.2] [--agents 10] [--turns 5]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import MOCK_LLM_FLAGS, pct, write_result
from pagemind import Pagemind
from pagemind import users as users_api
from pagemind.llm.llamaserver import free_port, wait_until_answering
from pagemind.llm.mockserver import MockServer

REPLY = json.dumps({"thoughts": "answer", "function": "send_message", "arguments": {"message": "noted"}})
AGENT_OPTIONS = {"embedder": "none", "tool_calling": "json", "constrained": False}


def ms(value: float) -> float:
    return round(value * 1000, 1)


def direct(url: str, agents: int, turns: int, store: Path) -> dict:
    """The same turns through the Python API: one thread per agent, its turns one after another."""
    with Pagemind("openai:mock", base_url=url, context_window=8192, server_kind="openai", cache=False,
                  concurrency=64, store=store) as pm:
        names = [f"direct{a}" for a in range(agents)]
        for name in names:
            pm.create_agent(name, options=AGENT_OPTIONS)
        latencies: list[float] = []

        def run(name: str) -> None:
            for t in range(turns):
                start = time.perf_counter()
                pm.send(name, f"{name}-turn{t}")
                latencies.append(time.perf_counter() - start)

        start = time.perf_counter()
        with ThreadPoolExecutor(agents) as pool:
            list(pool.map(run, names))
        wall = time.perf_counter() - start
    return {"seconds": round(wall, 3), "turns_per_second": round(agents * turns / wall, 2),
            "turn_p50_ms": ms(pct(latencies, 0.5)), "turn_p95_ms": ms(pct(latencies, 0.95))}


class Served:
    """A ``pagemind serve`` subprocess on 127.0.0.1 with one user; ``client`` carries the user's key."""

    def __init__(self, mock_url: str, home: Path, workers: int) -> None:
        import httpx

        store = home / "served.db"
        pm = Pagemind(settings=None, store=store)
        _, key = users_api.create_user(pm.store, "bench")
        pm.close()
        port = free_port()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pagemind", "serve", "--port", str(port), "--store", str(store), "--base-url",
             mock_url, "--concurrency", "64", "--workers", str(workers), *MOCK_LLM_FLAGS],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.url = f"http://127.0.0.1:{port}"
        self.client = httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {key}"}, timeout=300,
                                   limits=httpx.Limits(max_connections=100, max_keepalive_connections=100))
        wait_until_answering(f"{self.url}/v1/health", self.process, what="pagemind serve")

    def close(self) -> None:
        self.client.close()
        self.process.terminate()
        self.process.wait(15)


def recall(client, agent_id: int) -> list[str]:
    history = client.get(f"/v1/agents/{agent_id}/messages?limit=500").json()["messages"]
    return [m["payload"]["message"] for m in history if m["kind"] == "user_message"]


def turn_runs(client, agent_id: int) -> list[dict]:
    return sorted(client.get(f"/v1/runs?kind=turn&target={agent_id}&limit=500").json(), key=lambda r: r["started"])


def served_many(server: Served, agents: int, turns: int) -> dict:
    """agents x turns sends, one client each, all started at once."""
    c = server.client
    ids = [c.post("/v1/agents", json={"name": f"agent{a}", "options": AGENT_OPTIONS}).json()["id"]
           for a in range(agents)]
    jobs = [(a, t) for t in range(turns) for a in range(agents)]
    results: dict[tuple[int, int], tuple[float, str, int]] = {}
    barrier = threading.Barrier(len(jobs))

    def send(job: tuple[int, int]) -> None:
        a, t = job
        barrier.wait()
        start = time.perf_counter()
        r = c.post(f"/v1/agents/{ids[a]}/messages", json={"message": f"agent{a}-turn{t}"})
        results[job] = (time.perf_counter() - start, r.json().get("run_id", ""), r.status_code)

    start = time.perf_counter()
    with ThreadPoolExecutor(len(jobs)) as pool:
        list(pool.map(send, jobs))
    wall = time.perf_counter() - start
    failed = [j for j, (_, _, status) in results.items() if status != 200]
    exact, ordered, overlaps = 0, 0, 0
    runs_by_id = {}
    for a, agent_id in enumerate(ids):
        got = recall(c, agent_id)
        runs = turn_runs(c, agent_id)
        runs_by_id.update({r["id"]: r for r in runs})
        exact += sorted(got) == sorted(f"agent{a}-turn{t}" for t in range(turns)) and len(got) == turns
        ordered += got == [r["request"]["message"] for r in runs]
        overlaps += sum(x["finished"] > y["started"] for x, y in pairwise(runs))
    latencies = [rtt for rtt, _, _ in results.values()]
    added = [rtt - (runs_by_id[run]["finished"] - runs_by_id[run]["created"])
             for rtt, run, _ in results.values() if run in runs_by_id]
    own = [runs_by_id[run]["finished"] - runs_by_id[run]["started"] for _, run, _ in results.values()
           if run in runs_by_id]
    return {"clients": len(jobs), "seconds": round(wall, 3), "turns_per_second": round(len(jobs) / wall, 2),
            "failed": len(failed), "agents_with_exactly_their_turns": exact, "agents_in_server_order": ordered,
            "overlapping_turns": overlaps, "client_p50_ms": ms(pct(latencies, 0.5)),
            "client_p95_ms": ms(pct(latencies, 0.95)), "turn_own_p50_ms": ms(pct(own, 0.5)),
            "added_p50_ms": ms(pct(added, 0.5)), "added_p95_ms": ms(pct(added, 0.95))}


def one_client_burst(server: Served, turns: int) -> dict:
    """One client sends ``turns`` messages to one agent at once (each in flight before the previous answers)."""
    c = server.client
    agent_id = c.post("/v1/agents", json={"name": "burst", "options": AGENT_OPTIONS}).json()["id"]
    futures = []
    start = time.perf_counter()
    with ThreadPoolExecutor(turns) as pool:
        for t in range(turns):
            futures.append(pool.submit(c.post, f"/v1/agents/{agent_id}/messages", json={"message": f"burst-{t}"}))
            while len(c.get(f"/v1/runs?kind=turn&target={agent_id}").json()) < t + 1:  # accepted: send the next
                time.sleep(0.002)
        statuses = [f.result().status_code for f in futures]
    wall = time.perf_counter() - start
    runs = turn_runs(c, agent_id)
    got = recall(c, agent_id)
    return {"turns": turns, "seconds": round(wall, 3), "all_200": statuses == [200] * turns,
            "recall_in_order_sent": got == [f"burst-{t}" for t in range(turns)],
            "overlapping_turns": sum(x["finished"] > y["started"] for x, y in pairwise(runs)),
            "max_runs_at_once": max_concurrent(runs)}


def max_concurrent(runs: list[dict]) -> int:
    edges = sorted([(r["started"], 1) for r in runs] + [(r["finished"], -1) for r in runs])
    now = best = 0
    for _, step in edges:
        now += step
        best = max(best, now)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.2, help="mock LLM seconds per request")
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--workers", type=int, default=16, help="pagemind serve --workers")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, MockServer(latency=args.latency, text=REPLY) as mock:
        home = Path(tmp)
        baseline = direct(mock.url, args.agents, args.turns, home / "direct.db")
        server = Served(mock.url, home, args.workers)
        try:
            many = served_many(server, args.agents, args.turns)
            burst = one_client_burst(server, args.turns)
        finally:
            server.close()
    write_result("serve", {
        "setup": f"{args.agents} agents x {args.turns} turns, one LLM call per turn, mock LLM with "
                 f"{args.latency}s per request; pagemind serve --workers {args.workers} on SQLite, 127.0.0.1",
        "latency_s": args.latency, "direct_python_api": baseline, "served_50_clients": many,
        "one_client_5_turns_at_once": burst,
        "throughput_vs_direct": round(many["turns_per_second"] / baseline["turns_per_second"], 3),
    })


if __name__ == "__main__":
    main()
