"""A real ``pagemind serve`` process on 127.0.0.1 with the tiny embedded model (SmolLM2-135M): a user's key from
``pagemind users create``, a document upload, an ask streamed over SSE step by step, and the run's trace read
back from ``/v1/runs/{id}/steps``."""

from __future__ import annotations

import subprocess
import sys

import pytest

from helpers import on_embedded_models, sse_events
from pagemind.cli.main import sample_path
from pagemind.llm.llamaserver import free_port, wait_until_answering

pytestmark = on_embedded_models("fastapi", "uvicorn", "multipart")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(base url, API key) of a ``pagemind serve`` subprocess, stopped after the module."""
    home = tmp_path_factory.mktemp("serve")
    store = str(home / "s.db")
    created = subprocess.run([sys.executable, "-m", "pagemind", "users", "--store", store, "create", "ann"],
                             capture_output=True, text=True, timeout=60, check=True)
    key = created.stdout.strip()
    assert key.startswith("pm_")
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "pagemind", "serve", "--port", str(port), "--llm", "local:smollm2-135m",
         "--n-ctx", "4096", "--concurrency", "1", "--store", store, "--keepalive", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(f"{url}/v1/health", process, what="pagemind serve")
        yield url, key
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_upload_ask_streamed_and_the_runs_trace(served):
    import httpx

    url, key = served
    auth = {"Authorization": f"Bearer {key}"}
    assert httpx.get(f"{url}/v1/health").json()["auth"] == "keys"
    assert httpx.get(f"{url}/v1/documents").status_code == 401
    text = "\n\n".join(sample_path().read_text(encoding="utf-8").split("\n\n")[:6])
    r = httpx.post(f"{url}/v1/documents", headers=auth, files={"file": ("story.txt", text.encode(), "text/plain")})
    assert r.status_code == 201, r.text
    doc = r.json()
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    assert httpx.post(f"{url}/v1/documents", headers=auth,
                      files={"file": ("x.png", png, "image/png")}).status_code == 415

    with httpx.stream("POST", f"{url}/v1/documents/{doc['id']}/ask?stream=true", headers=auth, timeout=300,
                      json={"question": "Who keeps the lighthouse?", "method": "full"}) as stream:
        assert stream.status_code == 200 and stream.headers["content-type"].startswith("text/event-stream")
        events = [{"id": i, "event": kind, "data": data} for i, kind, data in sse_events(stream.iter_lines())]
    kinds = [e["event"] for e in events]
    assert kinds[-1] == "end" and "llm" in kinds and "result" in kinds, kinds
    run = events[-1]["data"]
    assert run["status"] == "done" and run["result"]["answer"]
    llm = next(e["data"]["data"] for e in events if e["event"] == "llm")
    assert llm["role"] == "answer" and llm["prompt_tokens"] > 0 and llm["completion_tokens"] > 0

    steps = httpx.get(f"{url}/v1/runs/{run['id']}/steps", headers=auth).json()
    assert [s["seq"] for s in steps] == [e["id"] for e in events if e["id"] is not None]
    assert [s["kind"] for s in steps] == kinds[:-1]
    got = httpx.get(f"{url}/v1/runs/{run['id']}", headers=auth).json()
    assert got["usage"]["calls"] >= 1 and got["usage"]["prompt_tokens"] == llm["prompt_tokens"]
    assert [r["id"] for r in httpx.get(f"{url}/v1/runs", headers=auth).json()] == [run["id"]]
