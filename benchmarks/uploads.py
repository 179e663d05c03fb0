"""Memory of a ``pagemind serve`` process under large request bodies (issue 21 item 2).

A real ``pagemind serve --auth none`` on 127.0.0.1 (the default ``--max-bytes``, 16 MiB; the LLM is pagemind's
mock OpenAI-compatible server, never called) receives: one 10 MB text upload (accepted: the control), one 50 MB
and one 250 MB text upload, 8 parallel 250 MB uploads (multipart ``file`` parts), and a 300 MB JSON body to
``POST /v1/agents/{id}/archival`` and to ``POST /v1/documents``, each JSON body once with its ``Content-Length``
and once chunked (no declared length: the server must count). Measured per case: the status(es), seconds to the
answer, megabytes the client had sent when the answer came (a client here stops sending as soon as the server
answers, as browsers do), and the server process's peak RSS growth: its ``VmHWM`` (reset through
``/proc/PID/clear_refs`` before each case) minus its ``VmRSS`` before the case; where the reset is not allowed,
the highest ``VmRSS`` sampled every 5 ms.

The client is a raw socket, so a server that answers 413 and closes mid-body is a result, not a crash.

    python benchmarks/uploads.py [--wait 60]
"""

from __future__ import annotations

import argparse
import json
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import MOCK_LLM_FLAGS, ROOT, write_result
from pagemind.llm.llamaserver import free_port, wait_until_answering
from pagemind.llm.mockserver import MockServer

MB = 1_000_000
BLOCK = b"the keeper lit the lamp at dusk and wrote it down in the log.\n" * 16384  # ~1 MB of text
BOUNDARY = "pagemind-bench-boundary"
AGENT_OPTIONS = {"embedder": "none", "tool_calling": "json", "constrained": False}


# --- the server and its memory --------------------------------------------------------------------------------------
class Served:
    """A ``pagemind serve --auth none`` subprocess on 127.0.0.1 with a fresh store."""

    def __init__(self, mock_url: str, home: Path, wait: float) -> None:
        self.port = free_port()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pagemind", "serve", "--auth", "none", "--port", str(self.port), "--store",
             str(home / "served.db"), "--base-url", mock_url, *MOCK_LLM_FLAGS],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wait_until_answering(f"http://127.0.0.1:{self.port}/v1/health", self.process, timeout=wait,
                             what="pagemind serve")

    def status(self, field: str) -> int:
        """A ``/proc/PID/status`` figure in bytes (``VmRSS``, ``VmHWM``)."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
        raise KeyError(field)

    def reset_peak(self) -> bool:
        """Reset ``VmHWM`` to the current RSS (Linux ``clear_refs`` 5); False where that is not allowed."""
        try:
            Path(f"/proc/{self.process.pid}/clear_refs").write_text("5")
            return True
        except OSError:
            return False

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(15)


def peak_growth(server: Served, run: Callable[[], object]) -> tuple[object, float, str]:
    """(what ``run`` returned, the server's peak RSS growth in MB during it, how the peak was measured)."""
    time.sleep(0.5)  # let the previous case's connections close
    exact = server.reset_peak()
    before = server.status("VmRSS")
    highest = before
    done = threading.Event()

    def sample() -> None:
        nonlocal highest
        while not done.is_set():
            highest = max(highest, server.status("VmRSS"))
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        result = run()
    finally:
        done.set()
        sampler.join()
    peak = max(highest, server.status("VmHWM")) if exact else highest
    return result, round((peak - before) / MB, 1), "VmHWM" if exact else "VmRSS sampled"


# --- a client that stops sending once it is answered ---------------------------------------------------------------
def post(port: int, path: str, content_type: str, body: Iterator[bytes], length: int | None) -> dict:
    """POST ``body`` (declared ``length``, or chunked when None), stopping as soon as the server answers or closes;
    {status, seconds, sent_mb, detail}. Status 0: no answer (the connection closed without one)."""
    start = time.perf_counter()
    sock = socket.create_connection(("127.0.0.1", port), timeout=300)
    framing = f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked"
    sock.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: {content_type}\r\n"
                 f"{framing}\r\nConnection: close\r\n\r\n".encode())
    sent = 0
    try:
        for chunk in body:
            if select.select([sock], [], [], 0)[0]:
                break  # an answer (or a close) before the end of the body
            sock.sendall(chunk if length is not None else b"%x\r\n%s\r\n" % (len(chunk), chunk))
            sent += len(chunk)
        else:
            if length is None:
                sock.sendall(b"0\r\n\r\n")
    except OSError:  # the server closed the connection mid-body: its answer may still be readable
        pass
    status, detail = read_answer(sock)
    sock.close()
    return {"status": status, "seconds": round(time.perf_counter() - start, 2), "sent_mb": round(sent / MB, 1),
            "detail": detail[:160]}


def read_answer(sock: socket.socket) -> tuple[int, str]:
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            got = sock.recv(65536)
            if not got:
                break
            data += got
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1]) if lines[0].startswith("HTTP/") else 0
        length = next((int(line.split(":", 1)[1]) for line in lines[1:] if line.lower().startswith("content-length:")),
                      None)
        while length is not None and len(rest) < length:
            got = sock.recv(65536)
            if not got:
                break
            rest += got
    except OSError:
        return 0, ""
    try:
        return status, str(json.loads(rest).get("detail", ""))
    except ValueError:
        return status, rest.decode("utf-8", "replace")


# --- bodies (generated as they are sent: the client holds one block) ------------------------------------------------
def text_blocks(size: int) -> Iterator[bytes]:
    left = size
    while left > 0:
        yield BLOCK[:left]
        left -= len(BLOCK)


def multipart(size: int, filename: str) -> tuple[Iterator[bytes], int]:
    head = (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\n"
            f"Content-Type: text/plain\r\n\r\n").encode()
    tail = f"\r\n--{BOUNDARY}--\r\n".encode()

    def chunks() -> Iterator[bytes]:
        yield head
        yield from text_blocks(size)
        yield tail

    return chunks(), len(head) + size + len(tail)


def json_text(size: int, extra: dict | None = None) -> tuple[Iterator[bytes], int]:
    head = (json.dumps(extra)[:-1] + ", " if extra else "{").encode() + b'"text": "'
    tail = b'"}'
    one_line = BLOCK.replace(b"\n", b" ")

    def chunks() -> Iterator[bytes]:
        yield head
        left = size
        while left > 0:
            yield one_line[:left]
            left -= len(one_line)
        yield tail

    return chunks(), len(head) + size + len(tail)


def upload_text(port: int, size: int, name: str) -> dict:
    body, length = multipart(size, name)
    return post(port, "/v1/documents", f"multipart/form-data; boundary={BOUNDARY}", body, length)


def send_json(port: int, path: str, size: int, declared: bool, extra: dict | None = None) -> dict:
    body, length = json_text(size, extra)
    return post(port, path, "application/json", body, length if declared else None)


def create_agent(port: int) -> int | None:
    import httpx

    r = httpx.post(f"http://127.0.0.1:{port}/v1/agents", json={"name": "bench", "options": AGENT_OPTIONS},
                   timeout=60, trust_env=False)
    return r.json().get("id") if r.status_code in (200, 201) else None


# --- the run --------------------------------------------------------------------------------------------------------
def cases(port: int, agent_id: int | None) -> list[tuple[str, Callable[[], object]]]:
    archival = f"/v1/agents/{agent_id}/archival"
    listed: list[tuple[str, Callable[[], object]]] = [
        ("10 MB text upload (accepted)", lambda: upload_text(port, 10 * MB, "ten.txt")),
        ("50 MB text upload", lambda: upload_text(port, 50 * MB, "fifty.txt")),
        ("250 MB text upload", lambda: upload_text(port, 250 * MB, "big.txt")),
        ("8 parallel 250 MB text uploads", lambda: parallel(port, 8, 250 * MB)),
        ("300 MB JSON to /v1/documents, declared length",
         lambda: send_json(port, "/v1/documents", 300 * MB, True, {"name": "big.txt"})),
        ("300 MB JSON to /v1/documents, chunked",
         lambda: send_json(port, "/v1/documents", 300 * MB, False, {"name": "big.txt"})),
    ]
    if agent_id is not None:
        listed += [("300 MB JSON to archival, declared length", lambda: send_json(port, archival, 300 * MB, True)),
                   ("300 MB JSON to archival, chunked", lambda: send_json(port, archival, 300 * MB, False))]
    return listed


def parallel(port: int, count: int, size: int) -> list[dict]:
    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(lambda n: upload_text(port, size, f"big{n}.txt"), range(count)))


def summary(result: object) -> dict:
    """One row's figures; for parallel uploads the statuses, the slowest answer and the most sent."""
    if isinstance(result, list):
        return {"status": sorted({r["status"] for r in result}), "seconds": max(r["seconds"] for r in result),
                "sent_mb": max(r["sent_mb"] for r in result), "detail": result[0]["detail"]}
    assert isinstance(result, dict)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wait", type=float, default=60.0, help="seconds to wait for pagemind serve")
    args = parser.parse_args()
    wired = "from .uploads import" in (ROOT / "src" / "pagemind" / "server" / "app.py").read_text()
    rows = []
    with tempfile.TemporaryDirectory() as tmp, MockServer() as mock:
        server = Served(mock.url, Path(tmp), args.wait)
        try:
            idle_mb = round(server.status("VmRSS") / MB, 1)
            agent_id = create_agent(server.port)
            for label, run in cases(server.port, agent_id):
                result, growth, how = peak_growth(server, run)
                row = {"case": label, **summary(result), "peak_rss_growth_mb": growth, "peak_measured_by": how}
                rows.append(row)
                print(f"{label:<48} {row['status']!s:>10} {row['seconds']:>7}s  sent {row['sent_mb']:>6} MB  "
                      f"peak RSS +{growth} MB", flush=True)
        finally:
            server.close()
    write_result("uploads", {
        "setup": "pagemind serve --auth none on 127.0.0.1, default --max-bytes (16 MiB; containers 16x) and "
                 "--max-body; text bodies generated as sent; the client stops sending once answered",
        "read_upload_wired": wired, "server_idle_rss_mb": idle_mb, "cases": rows})


if __name__ == "__main__":
    main()
