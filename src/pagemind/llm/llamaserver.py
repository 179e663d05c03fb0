"""llama-cpp-python's own OpenAI-compatible server (``python -m llama_cpp.server``) on 127.0.0.1, for tests and
benchmarks: a real server that pagemind discovers, counts tokens with and constrains like any other.

Use it as a context manager::

    with LlamaCppPythonServer(model_path, n_ctx=4096) as server:
        backend = OpenAICompatible("smol", base_url=server.url, context_window=server.n_ctx)

It needs the server's extra dependencies (FastAPI, uvicorn...), which ``scripts/install.sh`` installs.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

import httpx

from ..errors import BackendUnavailable


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until_answering(url: str, process: subprocess.Popen, *, timeout: float = 60.0, what: str = "the server",
                         output: Callable[[], str] | None = None) -> None:
    """Poll ``GET url`` until it answers 200 while ``process`` (the server) runs; raise :class:`BackendUnavailable`
    if it exits (with what it printed: ``output()``, else its stdout/stderr pipe, read once it has exited) or does
    not answer within ``timeout`` seconds (the caller stops it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pipe = process.stderr or process.stdout
            printed = output() if output is not None else pipe.read() if pipe is not None else ""
            printed = printed.decode("utf-8", "replace") if isinstance(printed, bytes) else printed
            raise BackendUnavailable(f"{what} exited with {process.returncode}: {printed[-800:]}")
        try:
            if httpx.get(url, timeout=2.0, trust_env=False).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise BackendUnavailable(f"{what} did not answer {url} within {timeout:.0f} s")


class LlamaCppPythonServer:
    """One ``llama_cpp.server`` process serving one GGUF model; started on enter, stopped on exit."""

    def __init__(self, model: str | Path, *, n_ctx: int = 4096, threads: int = 1, n_batch: int = 512,
                 startup_timeout: float = 120.0) -> None:
        """``threads``: llama.cpp threads. One by default: on a busy machine llama.cpp's spinning worker threads
        slow a request down many times (a 128-token gist of SmolLM2: 14 s with one thread, 122 s with two,
        measured on 2 shared cores)."""
        self.model = Path(model)
        self.n_ctx = n_ctx
        self.threads = max(1, threads)
        self.n_batch = n_batch
        self.startup_timeout = startup_timeout
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def url(self) -> str:
        """The OpenAI-compatible base URL, ending in /v1."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LlamaCppPythonServer:
        """Start the server on a free port and wait until it answers ``GET /v1/models``."""
        self.port = free_port()
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - kept open while the server runs; stop() closes it
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model), "--host", "127.0.0.1",
               "--port", str(self.port), "--n_ctx", str(self.n_ctx), "--n_threads", str(self.threads),
               "--n_threads_batch", str(self.threads), "--n_batch", str(self.n_batch)]
        self._process = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT)
        try:
            wait_until_answering(f"{self.url}/models", self._process, timeout=self.startup_timeout,
                                 what="llama_cpp.server", output=self.log)
        except BackendUnavailable:
            self.stop()
            raise
        return self

    def log(self) -> str:
        """What the server printed so far."""
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s) and release its port."""
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=10)
        self._process = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> LlamaCppPythonServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
