"""One set of limits on every surface (issue 35): what the largest body and the largest accepted text cost a
``pagemind serve`` process.

A real ``pagemind serve --auth none`` on 127.0.0.1 (default ``--max-bytes`` 16 MiB, so ``--max-body`` 33.5 MiB;
the LLM is pagemind's mock OpenAI-compatible server, never called) receives:

* **32 MB JSON bodies of small objects** (``[{"a": 1}, ...]``, the shape that costs most once parsed) on every JSON
  route — ``/v1/chat/completions``, ``/v1/agents``, ``/letta/v1/agents``, ``/mcp`` — one at a time, then four at
  once on the chat route: the status, and the server's peak RSS growth (as ``uploads.py`` measures it);
* **the largest text each surface accepts** as an archival passage (100,000 characters: the native route, Letta's
  route) and as a core-memory block in an imported Agent File, with the agent's default embedder: the server
  process's CPU seconds for the request, and the status;
* (issue 49) **the same 32 MB body under each Content-Type** — JSON, ``application/x-www-form-urlencoded``,
  ``multipart/form-data`` — on the chat, responses, embeddings and agents routes, one at a time and four at once:
  status and peak RSS growth;
* (issue 49) **the costliest document and request each route takes**: a 70 KB DOCX of 8,000,000 empty
  paragraphs, a PDF of 10 scanned pages (OCR; CPU per page, and a client that leaves after 1 s), the largest
  ``/v1/embeddings`` request (2,048 texts): status, CPU seconds, wall seconds;
* (issue 49, part ``read``) **the same kind of PDF sent as a background run** (``?wait=false``): seconds to the 202,
  then a cancel after its first page: pages read, the run's status, CPU seconds and whether a document was kept.

    python benchmarks/limits.py [--wait 60] [--only types,costs,read]
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
from pagemind.server.openai_compat import EMBEDDING_MODEL
from uploads import Served, peak_growth, post

MB = 1_000_000
RUN = time.time_ns() % 1_000_000  # this run's pages differ from any run's before
ROUTES = ("/v1/chat/completions", "/v1/agents", "/letta/v1/agents", "/mcp")


def small_objects(size: int) -> bytes:
    one = b'{"a": 1}, '
    return b"[" + one * (size // len(one)) + b'{"a": 1}]'


def multipart(body: bytes) -> tuple[str, bytes]:
    """``body`` as the one field of a multipart/form-data body: (its Content-Type, its bytes)."""
    boundary = "pagemindbench"
    head = f'--{boundary}\r\nContent-Disposition: form-data; name="body"\r\n\r\n'.encode()
    return f"multipart/form-data; boundary={boundary}", head + body + f"\r\n--{boundary}--\r\n".encode()


def docx_bomb() -> bytes:
    """A DOCX of 8,000,000 empty paragraphs (~70 KB zipped, under the unpacked limit)."""
    import io
    import zipfile

    import docx

    word = docx.Document()
    word.add_paragraph("The keeper lit the lamp at dusk.")
    real, out = io.BytesIO(), io.BytesIO()
    word.save(real)
    with zipfile.ZipFile(real) as source, zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "word/document.xml":
                head, _, rest = data.partition(b"<w:body>")
                data = head + b"<w:body>" + b"<w:p/>" * 8_000_000 + rest
            z.writestr(item, data)
    return out.getvalue()


def scanned_pdf(pages: int) -> bytes:
    """A PDF of ``pages`` image-only pages, each its own lines of text, new on every run (so no page is read from
    the OCR cache)."""
    import io

    from PIL import Image, ImageDraw, ImageFont

    font_path = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
    pictures = []
    for n in range(pages):
        picture = Image.new("L", (1700, 2200), 255)
        draw = ImageDraw.Draw(picture)
        font = ImageFont.truetype(str(font_path), 40) if font_path.exists() else ImageFont.load_default(40)
        for i in range(20):
            draw.text((100, 150 + 90 * i), f"Ledger {RUN} page {n}, line {i}: the lamp count was {n * 31 + i}.",
                      fill=0, font=font)
        pictures.append(picture)
    out = io.BytesIO()
    pictures[0].save(out, "PDF", resolution=200, save_all=True, append_images=pictures[1:])
    return out.getvalue()


def types_and_costs(server: Served, body: bytes, out: dict, only: set[str]) -> None:
    """Issue 49's cases: the body under each Content-Type, and the costliest document and request."""
    if "types" in only:
        kinds = {"json": ("application/json", body), "form": ("application/x-www-form-urlencoded", body),
                 "multipart": multipart(body)}
        for route in ("/v1/chat/completions", "/v1/responses", "/v1/embeddings", "/v1/agents"):
            for kind, (content_type, data) in kinds.items():
                result, grown, how = peak_growth(server, lambda r=route, c=content_type, d=data: post(
                    server.port, r, c, iter([d]), len(d)))
                out["content_types"][f"{kind} {route}"] = {**result, "peak_rss_growth_mb": grown, "measured_by": how}
                print(kind, route, out["content_types"][f"{kind} {route}"], flush=True)
        for kind, (content_type, data) in kinds.items():
            def four(c: str = content_type, d: bytes = data) -> list[dict]:
                with ThreadPoolExecutor(4) as pool:
                    return list(pool.map(lambda _: post(server.port, "/v1/chat/completions", c, iter([d]), len(d)),
                                         range(4)))

            results, grown, how = peak_growth(server, four)
            out["content_types"][f"4 x {kind} /v1/chat/completions"] = {
                "status": sorted({r["status"] for r in results}), "peak_rss_growth_mb": grown, "measured_by": how}
            print("4 x", kind, out["content_types"][f"4 x {kind} /v1/chat/completions"], flush=True)
    if "costs" not in only:
        return
    base = f"http://127.0.0.1:{server.port}"
    with httpx.Client(base_url=base, timeout=900) as client:
        bomb = docx_bomb()
        out["costs"]["DOCX of 8,000,000 empty paragraphs"] = {"file_kb": round(len(bomb) / 1000), **timed(
            server, lambda: client.post("/v1/documents", files={"file": ("bomb.docx", bomb)}))}
        pages = 10
        pdf = scanned_pdf(pages)
        row = timed(server, lambda: client.post("/v1/documents", files={"file": ("scans.pdf", pdf)}))
        out["costs"][f"PDF of {pages} scanned pages (OCR)"] = {**row, "cpu_s_per_page": round(row["cpu_s"] / pages, 2)}
        other = scanned_pdf(pages + 1)  # new pictures: none read from the cache

        def leaves() -> httpx.Response:
            try:
                return client.post("/v1/documents", files={"file": ("scans2.pdf", other)}, timeout=1.0)
            except httpx.ReadTimeout:
                time.sleep(8)  # the server's worker reads on until it looks again (after the page it is on)
                return httpx.Response(499, text="the client left after 1 s")

        out["costs"][f"PDF of {pages + 1} scanned pages, client leaves after 1 s"] = timed(server, leaves)
        for repeat, label in ((10, "2,048 texts of ~140 tokens (the most accepted: 300,000 tokens)"),
                              (20, "2,048 texts of ~290 tokens (over 300,000 tokens)")):
            texts = [f"The keeper lit lamp {n} at dusk and wrote it in the ledger. " * repeat for n in range(2048)]
            out["costs"][f"/v1/embeddings, {label}"] = timed(server, lambda t=texts: client.post(
                "/v1/embeddings", json={"model": EMBEDDING_MODEL, "input": t}))
    for name, row in out["costs"].items():
        print(name, row, flush=True)


def background_read(server: Served, out: dict) -> None:
    """A scanned PDF sent with ``?wait=false``: answered at once with a run, cancelled after its first page."""
    pages = 10
    pdf = scanned_pdf(pages + 2)  # its own pictures: none read from the OCR cache
    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=900) as client:
        before, start = cpu_seconds(server.process.pid), time.perf_counter()
        queued = client.post("/v1/documents?wait=false", files={"file": ("scans3.pdf", pdf)})
        answered = time.perf_counter() - start
        run_id = queued.json()["id"]

        def phases() -> list[dict]:
            return [s["data"] for s in client.get(f"/v1/runs/{run_id}/steps").json() if s["kind"] == "phase"]

        while not phases():
            time.sleep(0.1)
        client.post(f"/v1/runs/{run_id}/cancel")
        while (run := client.get(f"/v1/runs/{run_id}").json())["status"] in ("queued", "running"):
            time.sleep(0.1)
        read = phases()[-1]
        kept = [d["name"] for d in client.get("/v1/documents").json() if d["name"] == "scans3.pdf"]
        out["costs"][f"PDF of {pages + 2} scanned pages, ?wait=false, cancelled after its first page"] = {
            "status": queued.status_code, "answered_s": round(answered, 2), "run": run["status"],
            "pages_read": f"{read['done']} of {read['total']}", "kept": bool(kept),
            "cpu_s": round(cpu_seconds(server.process.pid) - before, 2),
            "wall_s": round(time.perf_counter() - start, 2)}
    print(out["costs"], flush=True)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far, with those of the children it waited for (Tesseract,
    one process a page) (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / os.sysconf("SC_CLK_TCK")


def timed(server: Served, send: Callable[[], httpx.Response]) -> dict:
    before, start = cpu_seconds(server.process.pid), time.perf_counter()
    response = send()
    return {"status": response.status_code, "cpu_s": round(cpu_seconds(server.process.pid) - before, 2),
            "wall_s": round(time.perf_counter() - start, 2), "detail": response.text[:120]}


def largest_texts(server: Served, out: dict) -> None:
    """The largest text each surface accepts: CPU seconds and status."""
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wait", type=float, default=60.0, help="seconds to wait for the server to start")
    parser.add_argument("--mb", type=int, default=32, help="size of the JSON bodies of small objects")
    parser.add_argument("--only", default="json,texts,types,costs",
                        help="which parts: json (the JSON routes), texts (the largest texts), types, costs, read")
    args = parser.parse_args()
    only = set(args.only.split(","))
    body = small_objects(args.mb * MB)
    out: dict = {"body_mb": round(len(body) / MB, 1), "json_routes": {}, "largest_text": {}, "content_types": {},
                 "costs": {}}
    with tempfile.TemporaryDirectory() as home, MockServer() as mock:
        server = Served(mock.url, Path(home), args.wait)
        try:
            types_and_costs(server, body, out, only)
            for route in ROUTES if "json" in only else ():
                result, grown, how = peak_growth(server, lambda r=route: post(
                    server.port, r, "application/json", iter([body]), len(body)))
                out["json_routes"][route] = {**result, "peak_rss_growth_mb": grown, "measured_by": how}
                print(route, out["json_routes"][route], flush=True)

            def four() -> list[dict]:
                with ThreadPoolExecutor(4) as pool:
                    return list(pool.map(lambda _: post(server.port, ROUTES[0], "application/json", iter([body]),
                                                        len(body)), range(4)))

            if "json" in only:
                results, grown, how = peak_growth(server, four)
                out["json_routes"]["4 x /v1/chat/completions"] = {
                    "status": sorted({r["status"] for r in results}), "peak_rss_growth_mb": grown, "measured_by": how}
                print("4 in parallel", out["json_routes"]["4 x /v1/chat/completions"], flush=True)
            if "texts" in only:
                largest_texts(server, out)
            if "read" in only:
                background_read(server, out)

        finally:
            server.close()
    write_result("limits" if only >= {"json", "texts", "types", "costs"} else f"limits-{'-'.join(sorted(only))}",
                 out)


if __name__ == "__main__":
    main()
