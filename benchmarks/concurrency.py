"""(b) Concurrency: wall time to build a ReadAgent index (gist_mode="separate") against an OpenAI-compatible
mock server on 127.0.0.1 that takes ``--latency`` seconds per request, at client concurrency 1, 8 and 32.

Pagination is sequential (each page starts where the previous ended); gists are independent, and each one is
submitted as soon as its page is decided, so they overlap pagination. The mock reads the prompt it answers:
pagination gets the middle offered label, a gist the first 15% of the page's words (as benchmarks/tokens.py).

Ideal time (the critical path, in units of the latency L; P pagination calls, G gist calls):
    c = 1:  (P + G) * L                              every call one after the other
    c >= 2: (max(P, ceil(G / (c - 1))) + 1) * L      pagination back to back, the last gist one L after the last
                                                     page, but gists have at most c - 1 slots beside pagination
Reported: measured wall time, efficiency = ideal_c / T_c (1.0 = on the critical path), speed-up T_1 / T_c, and
fraction of ideal speed-up = (T_1 / T_c) / (ideal_1 / ideal_c); and the mock's observed max requests in flight.
A second series makes gists ``--gist-factor`` times slower than pagination (a gist generates ~100 tokens, a
pause point ~10), which is where concurrency can pay: with equal latencies one gist slot already keeps up.

    python benchmarks/concurrency.py [--words 20000] [--latency 0.25] [--levels 1,8,32]
"""

from __future__ import annotations

import argparse
import math
import re
import time
from pathlib import Path

from common import DATA, concatenated_articles, quality_rows, write_result
from pagemind import LLM, Document, Store
from pagemind.llm.mockserver import MockServer
from pagemind.llm.openai import OpenAICompatible
from pagemind.llm.usage import Trace
from pagemind.methods.readagent import ReadAgentP

_LABEL = re.compile(r"^<(\d+)>$", re.MULTILINE)


def mock_reply(body: dict) -> str:
    """The mock's reply, from the request body (the HTTP request carries no role: read the prompt)."""
    first = str(body["messages"][0]["content"])
    if first.startswith("You are given a passage"):
        labels = _LABEL.findall(first)
        if len(body["messages"]) == 1 and labels:
            return f"Break point: <{labels[len(labels) // 2]}>\n Because it is a natural pause."
    if first.startswith("Please shorten"):
        words = first.split("Passage:\n", 1)[1].split()
        return " ".join(words[: max(1, round(len(words) * 0.15))])
    return "ok"


class GistSlowerMock(MockServer):
    """The mock with gist requests ``factor`` times slower (a gist generates far more tokens than a label)."""

    def __init__(self, latency: float, factor: float, **kwargs) -> None:
        super().__init__(latency=latency, **kwargs)
        self.factor = factor

    def _begin(self, body: dict, headers: dict) -> dict:
        step = super()._begin(body, headers)
        if str(body["messages"][0]["content"]).startswith("Please shorten"):
            step.setdefault("latency", self.latency * self.factor)
        return step


def ideal_seconds(pages: int, gists: int, c: int, latency: float, factor: float = 1.0) -> float:
    """The critical path; a gist takes ``factor`` * latency."""
    gist = factor * latency
    if c == 1:
        return pages * latency + gists * gist
    return max(pages * latency + gist, math.ceil(gists / (c - 1)) * gist + latency)


def run(doc: Document, c: int, latency: float, factor: float) -> dict:
    with GistSlowerMock(latency, factor, text=mock_reply) as server:
        backend = OpenAICompatible("mock", base_url=server.url, context_window=32768)
        llm = LLM(backend, cache=None, concurrency=c)
        agent = ReadAgentP(llm, Store(":memory:"), preset="quality", gist_mode="separate")
        trace = Trace()
        t0 = time.perf_counter()
        memory = agent.build(doc, trace=trace)
        wall = time.perf_counter() - t0
        backend.close()
        roles = trace.by_role()
        pages = roles["paginate"].calls if "paginate" in roles else 0
        gists = roles["gist"].calls if "gist" in roles else 0
        ideal = ideal_seconds(pages, gists, c, latency, factor)
        return {
            "concurrency": c, "effective_concurrency": llm.concurrency, "wall_seconds": round(wall, 2),
            "pagination_calls": pages, "gist_calls": gists, "pages": len(memory.pages),
            "fallback_pages": sum(p.label_source == "fallback" for p in memory.pages),
            "ideal_seconds": round(ideal, 2), "efficiency": round(ideal / wall, 3),
            "max_in_flight": server.max_in_flight, "requests": len(server.requests),
            **({"warning": f"{server.max_in_flight} requests in flight at concurrency {c}"}
               if server.max_in_flight > c else {}),
        }


def series(doc: Document, levels: list[int], latency: float, factor: float) -> list[dict]:
    runs = []
    for c in levels:
        runs.append(run(doc, c, latency, factor))
        print(f"gist x{factor}", runs[-1], flush=True)
    base = next((r for r in runs if r["concurrency"] == 1), None)
    if base is not None:
        for r in runs:
            r["speedup"] = round(base["wall_seconds"] / r["wall_seconds"], 2)
            r["ideal_speedup"] = round(base["ideal_seconds"] / r["ideal_seconds"], 2)
            r["fraction_of_ideal_speedup"] = round(r["speedup"] / r["ideal_speedup"], 3)
    return runs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--words", type=int, default=20_000)
    ap.add_argument("--latency", type=float, default=0.25, help="seconds the mock takes per request")
    ap.add_argument("--levels", default="1,8,32")
    ap.add_argument("--gist-factor", type=float, default=4.0,
                    help="second series: gists this many times slower than pagination (0 skips it)")
    ap.add_argument("--data", type=Path, default=DATA)
    args = ap.parse_args()

    text, _ = concatenated_articles(quality_rows(args.data), args.words)
    doc = Document.from_text(text, "quality-concat")
    levels = [int(c) for c in args.levels.split(",") if c]
    runs = series(doc, levels, args.latency, 1.0)
    slow = series(doc, levels, args.latency, args.gist_factor) if args.gist_factor > 0 else []
    write_result("concurrency", {
        "method": (f"ReadAgent build (quality preset, gist_mode=separate) through the OpenAI-compatible HTTP backend "
                   f"against pagemind's MockServer on 127.0.0.1 with {args.latency}s per request; simulated replies "
                   "(middle label, first 15% of the page's words); LLM(cache=None, concurrency=c)."),
        "ideal": ("critical path, a gist taking g = factor*L: c=1: P*L + G*g; c>=2: max(P*L + g, ceil(G/(c-1))*g + L)"
                  " (with factor 1: (max(P, ceil(G/(c-1)))+1)*L); efficiency = ideal_c/T_c; "
                  "fraction_of_ideal_speedup = (T_1/T_c)/(ideal_1/ideal_c)"),
        "document_words": doc.words, "latency_seconds": args.latency, "runs": runs,
        **({"gist_latency_factor": args.gist_factor, "runs_slow_gists": slow} if slow else {}),
    })


if __name__ == "__main__":
    main()
