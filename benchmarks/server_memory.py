"""The shared model server's memory after a long mixed run (issue 35): it grew to 5.7 GB of RSS in 100 minutes of
mixed use when llama-server's prompt cache had no cap; it is now weights + slots x window of KV cache + the capped
prompt cache (``prompt_cache_mb``, 512 MiB by default, shown by ``pagemind models status``).

A fresh shared llama-server (its own run directory, so no user's server is touched) with the default settings
(4 slots of ``n_ctx`` tokens) serves one pagemind session for ``--minutes``: in turn a RAG question on one of
several documents, a GistMem build of a new slice of text (pagination and gists), and an agent's turn — distinct
prompts all, so the prompt cache fills. The server's RSS is sampled every ``--every`` seconds.

    python benchmarks/server_memory.py [--minutes 15] [--model qwen2.5-coder-1.5b] [--every 20]

Writes ``results/server_memory.json``: the samples, the first and the largest RSS, the calls made, and the bound
the settings give (weights file + slots x n_ctx x KV bytes a token + the cap).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import write_result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=15.0)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--every", type=float, default=20.0)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp())
    os.environ["PAGEMIND_RUN_DIR"] = str(home / "run")  # a server of its own, stopped at the end
    os.environ["PAGEMIND_HOME"] = str(home / "home")

    from pagemind import Pagemind
    from pagemind.cli.main import sample_path
    from pagemind.llm import catalogue, managed

    texts = [sample_path().read_text(), sample_path("long").read_text()]
    words = " ".join(texts).split()
    samples: list[dict] = []
    counts = {"ask": 0, "index": 0, "turn": 0, "calls": 0}
    stop = threading.Event()

    def sample() -> None:
        start = time.monotonic()
        while not stop.is_set():
            running = managed.status()
            if running:
                samples.append({"t": round(time.monotonic() - start), "rss_mb": round(managed.memory_mb(
                    running[0].pid))})
            stop.wait(args.every)

    sampler = threading.Thread(target=sample, daemon=True)
    with Pagemind(f"local:{args.model}", store=home / "s.db", embedded="server", cache=False) as pm:
        settings = pm.settings
        try:
            pm.create_agent("sam", options={"embedder": "none", "context_window": 4000})
            agent = pm.agent("sam")
            sampler.start()
            deadline = time.monotonic() + args.minutes * 60
            n = 0
            while time.monotonic() < deadline:
                slice_ = " ".join(words[(n * 700) % len(words):][:1500])
                doc = pm.read(slice_, f"slice-{n}.txt")
                kind = ("ask", "index", "turn")[n % 3]
                before = pm.llm.usage.calls
                if kind == "ask":
                    pm.ask(doc, f"What happens in part {n}?", method="rag", fragment_words=200)
                elif kind == "index":
                    pm.index(doc, "gistmem", max_tokens=48)
                else:
                    agent.say(f"Note number {n}: the tide was {n % 7} feet at dawn. What do you remember?")
                counts[kind] += 1
                counts["calls"] += pm.llm.usage.calls - before
                n += 1
            stop.set()
            sampler.join(5)
            running = managed.status()
            cap = running[0].cache_mb if running else settings.prompt_cache_mb
        finally:
            stop.set()
            managed.stop()  # the server this run started, whatever happened
    weights = catalogue.model_path(args.model).stat().st_size / 2**20
    rss = [s["rss_mb"] for s in samples]
    write_result("server_memory", {
        "model": args.model, "minutes": args.minutes, "slots": settings.slots, "n_ctx": settings.n_ctx,
        "prompt_cache_mb": cap, "weights_mb": round(weights), "work": counts,
        "rss_first_mb": rss[0] if rss else None, "rss_max_mb": max(rss) if rss else None,
        "rss_last_mb": rss[-1] if rss else None, "samples": samples})


if __name__ == "__main__":
    main()
