"""One set of limits on every surface (issue 35): what the largest body and the largest accepted text cost a
``pagemind serve`` process.

A real ``pagemind serve --auth none`` on 127.0.0.1 (default ``--max-bytes`` 16 MiB, so ``--max-body`` 33.5 MiB;
the LLM is pagemind's mock OpenAI-compatible server, never called) receives:

* **32 MB JSON bodies of small objects** (``[{"a": 1}, ...]``, the shape that costs most once parsed) on every JSON
  route — ``/v1/chat/completions``, ``/v1/agents``, ``/letta/v1/agents``, ``/mcp`` — one at a time, then four at
  once on the chat route: the status, and the server's peak RSS growth (as ``uploads.py`` measures it);
* **the largest text each surface accepts** as an archival passage (100,000 characters: the native route, Letta's
  route) and as a core-memory block in an imported Agent File, with the agent's default embedder: the server
  process's CPU seconds for the request, and the status.

    python benchmarks/limits.py [--wait 60]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import write_result
from pagemind.limits import MAX_BLOCK, MAX_PASSAGE
from pagemind.llm.mockserver import MockServer
from uploads import Served, peak_growth, post

MB = 1_000_000
ROUTES = ("/v1/chat/completions", "/v1/agents", "/letta/v1/agents", "/mcp")


def small_objects(size: int) -> bytes:
    one = b'{"a": 1}, '
    return b"[" + one * (size // len(one)) + b'{"a": 1}]'


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(server: Served, send: Callable[[], httpx.Response]) -> dict:
    before, start = cpu_seconds(server.process.pid), time.perf_counter()
    response = send()
    return {"status": response.status_code, "cpu_s": round(cpu_seconds(server.process.pid) - before, 2),
            "wall_s": round(time.perf_counter() - start, 2), "detail": response.text[:120]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wait", type=float, default=60.0, help="seconds to wait for the server to start")
    parser.add_argument("--mb", type=int, default=32, help="size of the JSON bodies of small objects")
    args = parser.parse_args()
    body = small_objects(args.mb * MB)
    out: dict = {"body_mb": round(len(body) / MB, 1), "json_routes": {}, "largest_text": {}}
    with tempfile.TemporaryDirectory() as home, MockServer() as mock:
        server = Served(mock.url, Path(home), args.wait)
        try:
            for route in ROUTES:
                result, grown, how = peak_growth(server, lambda r=route: post(
                    server.port, r, "application/json", iter([body]), len(body)))
                out["json_routes"][route] = {**result, "peak_rss_growth_mb": grown, "measured_by": how}
                print(route, out["json_routes"][route], flush=True)

            def four() -> list[dict]:
                with ThreadPoolExecutor(4) as pool:
                    return list(pool.map(lambda _: post(server.port, ROUTES[0], "application/json", iter([body]),
                                                        len(body)), range(4)))

            results, grown, how = peak_growth(server, four)
            out["json_routes"]["4 x /v1/chat/completions"] = {
                "status": sorted({r["status"] for r in results}), "peak_rss_growth_mb": grown, "measured_by": how}
            print("4 in parallel", out["json_routes"]["4 x /v1/chat/completions"], flush=True)

            base = f"http://127.0.0.1:{server.port}"
            with httpx.Client(base_url=base, timeout=600) as client:
                agent = client.post("/v1/agents", json={"name": "bench"}).json()
                # the encoder loaded first (a short passage), then texts no cache has seen, one per surface
                out["largest_text"]["warm-up: a short passage (loads the encoder)"] = timed(server, lambda: client.post(
                    f"/v1/agents/{agent['id']}/archival", json={"text": "The lamp is lit."}))

                def passage(tag: str) -> str:
                    return "".join(f"The keeper ({tag}) lit lamp {n} at dusk and wrote it down. "
                                   for n in range(3000))[:MAX_PASSAGE]

                out["largest_text"]["native passage"] = timed(server, lambda: client.post(
                    f"/v1/agents/{agent['id']}/archival", json={"text": passage("native")}))
                out["largest_text"]["letta passage"] = timed(server, lambda: client.post(
                    f"/letta/v1/agents/agent-{agent['id']}/archival-memory", json={"text": passage("letta")}))
                out["largest_text"]["letta passage over the limit"] = timed(server, lambda: client.post(
                    f"/letta/v1/agents/agent-{agent['id']}/archival-memory", json={"text": passage("x") * 10}))
                exported = client.get(f"/letta/v1/agents/agent-{agent['id']}/export").json()
                exported["agents"][0]["name"] = "bench-copy"
                exported["blocks"][0]["value"] = ("lamp " * 30_000)[:MAX_BLOCK]
                exported["blocks"][0]["limit"] = MAX_BLOCK
                for ext in exported.get("pagemind", {}).get("agents", {}).values():
                    ext["name"] = "bench-copy"
                out["largest_text"]["agent file import, 100k block"] = timed(server, lambda: client.post(
                    "/letta/v1/agents/import", files={"file": ("a.af", json.dumps(exported).encode())}))
                exported["blocks"][0]["value"] = "lamp " * 1_000_000  # 5 MB: imported before, then every turn 422
                out["largest_text"]["agent file import, 5 MB block"] = timed(server, lambda: client.post(
                    "/letta/v1/agents/import", files={"file": ("a.af", json.dumps(exported).encode())}))
            for name, row in out["largest_text"].items():
                print(name, row, flush=True)
        finally:
            server.close()
    write_result("limits", out)


if __name__ == "__main__":
    main()
