"""(l) One shared model process (issue 26): memory of several pagemind processes, throughput by slots, and a short
question's latency while another user's long build runs — the shared llama-server against the in-process backend.

    python benchmarks/shared_model.py [--model qwen2.5-coder-1.5b] [--parts memory,slots,latency]

* ``memory``: three pagemind processes (each opens the model and answers one question, then holds it) — with the
  in-process backend each holds its own copy of the weights; with the shared server they hold the vocabulary only
  and one llama-server holds the weights. Reported: each process's RSS and the total (the server included).
* ``slots``: a shared server with 1, 2, 4 and 8 slots; as many requests as slots at once (different prompts of
  ~200 tokens, 64 generated tokens each, temperature 0); generated tokens per second over all of them, and whether
  every reply equals the one-slot (serial) reply to the same prompt.
* ``latency``: one user's long build (``--build-calls`` gist-sized calls in a row, as an index makes them) while
  another asks short questions one after another; the short question's p50/p95 seconds, through the shared server
  (4 slots) and through one in-process backend (calls serialised), in the same run.

Writes ``results/shared_model.json`` (the parts run; parts measured before are kept).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from common import RESULTS, pct, write_result
from pagemind.llm import catalogue
from pagemind.llm.base import LLMRequest
from pagemind.llm.local import LlamaCpp
from pagemind.llm.managed import ServerSpec, SharedLlama, ensure, memory_mb, stop

PROMPTS = [f"Here is note {n}: the ledger of the keeper lists {n * 7} gulls, {n + 3} boats and one lamp that "
           f"burned for {n * 2 + 5} nights. " * 6 + "Summarise the note in two sentences." for n in range(8)]

HOLD = """
import sys, time
from pagemind.config import resolve_settings
from pagemind.llm.managed import open_embedded
from pagemind.llm.base import LLMRequest
s = resolve_settings(llm=sys.argv[1], embedded=sys.argv[2], n_ctx=int(sys.argv[3]))
b = open_embedded(s.llm, s)
b.execute(LLMRequest.user("Name one colour.", max_tokens=4))
print("ready", flush=True)
time.sleep(600)
"""


def part_memory(model: str, n_ctx: int) -> dict:
    out = {}
    for embedded in ("process", "server"):
        stop()
        procs = [subprocess.Popen([sys.executable, "-c", HOLD, f"local:{model}", embedded, str(n_ctx)],
                                  stdout=subprocess.PIPE, text=True) for _ in range(3)]
        try:
            for p in procs:
                assert p.stdout is not None and p.stdout.readline().strip() == "ready"
            clients = [round(memory_mb(p.pid)) for p in procs]
            from pagemind.llm.managed import status

            servers = [round(memory_mb(r.pid)) for r in status()]
            out[embedded] = {"clients_mb": clients, "servers_mb": servers, "total_mb": sum(clients) + sum(servers)}
            print(embedded, out[embedded], flush=True)
        finally:
            for p in procs:
                p.kill()
                p.wait()
    stop()
    out["ratio_total"] = round(out["process"]["total_mb"] / out["server"]["total_mb"], 2)
    return out


def part_slots(path: Path, n_ctx: int, threads: int) -> dict:
    rows = []
    reference: list[str] = []  # each prompt's reply from a one-slot server, one request at a time
    for slots in (1, 2, 4, 8):
        stop()
        backend = SharedLlama(path, n_ctx=n_ctx, threads=threads, slots=slots, prompt_cache_mb=0)
        backend.execute(LLMRequest.user("warm up", max_tokens=2))
        if not reference:
            reference = [backend.execute(LLMRequest.user(p, max_tokens=64)).text for p in PROMPTS]
        requests = [LLMRequest.user(PROMPTS[i], max_tokens=64) for i in range(slots)]
        replies: list = [None] * slots

        def run(i: int) -> None:
            replies[i] = backend.execute(requests[i])  # noqa: B023 - joined below, in this iteration

        start = time.perf_counter()
        workers = [threading.Thread(target=run, args=(i,)) for i in range(slots)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        seconds = time.perf_counter() - start
        generated = sum(r.completion_tokens for r in replies)
        same = sum(r.text == reference[i] for i, r in enumerate(replies))
        rows.append({"slots": slots, "seconds": round(seconds, 2), "generated": generated,
                     "tokens_per_s": round(generated / seconds, 2), "replies_equal_to_serial": f"{same}/{slots}"})
        print(rows[-1], flush=True)
        backend.close()
    stop()
    base = rows[0]["tokens_per_s"]
    for row in rows:
        row["vs_one_slot"] = round(row["tokens_per_s"] / base, 2)
    return {"rows": rows}


def part_latency(path: Path, n_ctx: int, threads: int, build_calls: int, questions: int) -> dict:
    out = {}
    build = [LLMRequest.user(PROMPTS[i % 8] + f" (page {i})", max_tokens=96, role="gist") for i in range(build_calls)]
    short = [LLMRequest.user(f"In one word: what colour is snow? ({i})", max_tokens=4) for i in range(questions)]
    for label, make in (("in-process", lambda: LlamaCpp(path, n_ctx=n_ctx, threads=threads, prompt_cache_mb=0)),
                        ("shared-4-slots", lambda: SharedLlama(path, n_ctx=n_ctx, threads=threads, slots=4,
                                                               prompt_cache_mb=0))):
        stop()
        backend = make()
        backend.execute(LLMRequest.user("warm up", max_tokens=2))
        done = threading.Event()

        def builder(backend: LlamaCpp, done: threading.Event) -> None:
            for r in build:
                if done.is_set():
                    break
                backend.execute(r)

        worker = threading.Thread(target=builder, args=(backend, done))
        worker.start()
        time.sleep(2.0)  # the build is under way
        seconds = []
        for q in short:
            t0 = time.perf_counter()
            backend.execute(q)
            seconds.append(time.perf_counter() - t0)
        done.set()
        worker.join()
        out[label] = {"p50_s": round(statistics.median(seconds), 2), "p95_s": round(pct(seconds, 95), 2),
                      "n": len(seconds)}
        print(label, out[label], flush=True)
        backend.close()
    stop()
    out["p50_ratio"] = round(out["in-process"]["p50_s"] / out["shared-4-slots"]["p50_s"], 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--n-ctx", type=int, default=16384)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--parts", default="memory,slots,latency")
    ap.add_argument("--build-calls", type=int, default=12)
    ap.add_argument("--questions", type=int, default=8)
    args = ap.parse_args()
    path = catalogue.model_path(args.model)
    spec = ServerSpec.of(path, args.n_ctx)
    previous = RESULTS / "shared_model.json"  # parts measured in another run are kept
    result: dict = json.loads(previous.read_text()) if previous.exists() else {}
    result.update({"model": args.model, "n_ctx": args.n_ctx, "threads": args.threads, "cores": os.cpu_count(),
                   "server": str(Path(ensure(spec).binary).name)})
    stop()
    parts = args.parts.split(",")
    if "memory" in parts:
        result["memory"] = part_memory(args.model, args.n_ctx)
    if "slots" in parts:
        result["slots"] = part_slots(path, args.n_ctx, args.threads)
    if "latency" in parts:
        result["latency"] = part_latency(path, args.n_ctx, args.threads, args.build_calls, args.questions)
    print(write_result("shared_model", result))


if __name__ == "__main__":
    main()
