"""One embedded model process shared by every pagemind process of the user (the design Ollama uses).

The embedded model is served by llama.cpp's own server (``llama-server``), which ``scripts/install.sh`` builds in the
same compile as llama-cpp-python, from the same vendored llama.cpp sources: the same code the in-process backend runs.
A CLI, ``pagemind mcp`` and ``pagemind serve`` asking the same model talk to one process holding one copy of the
weights, with ``slots`` requests decoded together (continuous batching), each slot keeping its prompt's KV cache.

* **Started on first use**: :func:`ensure` finds the running server for a :class:`ServerSpec` (model file, window,
  slots, threads) or starts one, under a lock file so that processes starting at once start one server. It listens on
  127.0.0.1 on a free port with a random API key, both in a state file only the user can read, so another user of
  the machine cannot use it.
* **Supervised**: a small supervisor process (``python -m pagemind.llm.managed``) starts the server, watches its
  ``/metrics``, stops it after ``idle`` seconds without a request, and removes the state file when it stops for any
  reason. The server dies with its supervisor (``PR_SET_PDEATHSIG``), so no orphan keeps the weights.
* **Stale state is handled**: a state file whose processes are gone or do not answer is removed and a new server is
  started; a port taken between choosing and binding gets another port.
* **Token counts never start it**: :class:`SharedLlama` counts with the model's vocabulary in this process (as the
  in-process backend does), so an answer served from the reply cache loads no weights anywhere.

``pagemind models serve|status|stop`` start, list and stop these servers by hand. Where no ``llama-server`` is
installed (``embedded=auto``) the in-process backend is used instead, and says so (``pagemind models info``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..config import Settings, cache_dir
from ..errors import BackendUnavailable, ConfigError
from ..hashing import content_hash
from ..processes import pid_alive
from .base import LLMRequest, LLMResponse
from .local import LlamaCpp, model_file

log = logging.getLogger(__name__)
SERVER_ENV = "PAGEMIND_LLAMA_SERVER"  # a llama-server binary to use instead of the installed one
STARTUP_TIMEOUT = 300.0  # seconds for a server to load its model and answer /health
# A request to the shared server waits behind the other slots' work and then reads its whole prompt: on a slow CPU
# a full window takes far longer than a remote API's 600 s (10k tokens at ~10 tokens/s with four slots busy), and a
# timed-out request is sent again from the start. The server is ours and local: a dead one refuses the connection
# (and is started again), so the read timeout is only a bound on a hung one.
REQUEST_TIMEOUT = 6 * 3600.0


def server_binary(env: dict[str, str] | None = None) -> Path | None:
    """The ``llama-server`` to run: ``PAGEMIND_LLAMA_SERVER``, else the one installed beside llama-cpp-python (the
    install builds it into the environment's ``bin/`` of site-packages), else None."""
    env = dict(os.environ) if env is None else env
    if env.get(SERVER_ENV):
        path = Path(env[SERVER_ENV]).expanduser()
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise ConfigError(f"{SERVER_ENV}={path}: not an executable file")
        return path
    import importlib.util

    spec = importlib.util.find_spec("llama_cpp")  # where it is installed, without importing it (and its library)
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent.parent / "bin" / "llama-server"
    return path if path.is_file() and os.access(path, os.X_OK) else None


def _libraries(binary: Path) -> str:
    """The directories of the shared llama.cpp libraries the installed server links (``lib/`` beside ``bin/``, and
    llama-cpp-python's own), for ``LD_LIBRARY_PATH``: the install does not give the server an rpath."""
    root = binary.parent.parent
    return os.pathsep.join(str(p) for p in (root / "lib", root / "llama_cpp" / "lib") if p.is_dir())


@dataclass(frozen=True)
class ServerSpec:
    """What one shared server serves; processes asking for the same spec share its server."""

    model: str  # the GGUF file, resolved
    n_ctx: int  # the window of one slot (each slot gets a whole window)
    slots: int = 4
    threads: int = 2
    cache_mb: int = 512  # RAM for prompt states beyond the slots' own (llama-server --cache-ram)
    idle: float = 600.0  # seconds without a request before the server stops (0: never)

    def __post_init__(self) -> None:  # at least one slot; no negative cache or idle time
        object.__setattr__(self, "slots", max(1, self.slots))
        object.__setattr__(self, "cache_mb", max(0, self.cache_mb))
        object.__setattr__(self, "idle", max(0.0, self.idle))

    @classmethod
    def of(cls, path: Path, n_ctx: int, threads: int | None = None, cache_mb: int = 512, slots: int = 4,
           idle: float = 600.0) -> ServerSpec:
        """The spec of GGUF file ``path`` with these settings (the window at most the trained context, read from the
        file's header; a backend that has read it builds its spec directly)."""
        from .local import _trained_context, default_threads, window_for

        return cls(model=str(Path(path).resolve()), n_ctx=window_for(n_ctx, _trained_context(Path(path))),
                   slots=slots, threads=threads or default_threads(), cache_mb=cache_mb, idle=idle)

    @property
    def key(self) -> str:
        """Which server: the model and the settings that shape its replies and memory (not ``idle``)."""
        return content_hash({"model": self.model, "n_ctx": self.n_ctx, "slots": self.slots, "threads": self.threads,
                             "cache_mb": self.cache_mb})[:16]

    def command(self, binary: Path, port: int, api_key: str) -> list[str]:
        return [str(binary), "--model", self.model, "--host", "127.0.0.1", "--port", str(port),
                "--api-key", api_key, "--ctx-size", str(self.n_ctx * self.slots), "--parallel", str(self.slots),
                "--no-kv-unified", "--cont-batching", "--threads", str(self.threads), "--threads-batch",
                str(self.threads), "--batch-size", "512", "--cache-ram", str(self.cache_mb), "--metrics",
                "--no-webui", "--jinja"]


@dataclass(frozen=True)
class Running:
    """A running shared server, as its state file records it."""

    key: str
    pid: int  # llama-server
    supervisor: int
    port: int
    api_key: str
    model: str
    n_ctx: int
    slots: int
    threads: int
    idle: float
    started: float
    binary: str
    cache_mb: int = 0  # the prompt cache's cap (llama-server --cache-ram); 0 in records of older versions

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def run_dir() -> Path:
    """Where the state, lock and log files of shared servers live (only the user may read them):
    ``PAGEMIND_RUN_DIR``, else ``run/`` in the user cache directory."""
    path = Path(os.environ.get("PAGEMIND_RUN_DIR") or cache_dir() / "run")
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o700)
    return path


def _healthy(url: str, timeout: float = 2.0) -> bool:
    import httpx

    try:
        return httpx.get(f"{url}/health", timeout=timeout, trust_env=False).status_code == 200
    except httpx.HTTPError:
        return False


def _read(path: Path) -> Running | None:
    try:
        return Running(**json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None


def _write(path: Path, running: Running) -> None:
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(asdict(running), fh)
    os.replace(tmp, path)


@contextlib.contextmanager
def _locked(key: str) -> Iterator[None]:
    """One process at a time starts or stops the server of ``key`` (an advisory lock on a file)."""
    import fcntl

    with (run_dir() / f"{key}.lock").open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _state(key: str) -> Path:
    return run_dir() / f"{key}.json"


def _terminate(pid: int, wait: float = 10.0) -> None:
    """SIGTERM, then SIGKILL after ``wait`` seconds."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + wait
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if pid_alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _discard(running: Running) -> None:
    """Stop a recorded server whatever its state and forget it."""
    for pid in (running.supervisor, running.pid):
        if pid_alive(pid):
            _terminate(pid)
    with contextlib.suppress(FileNotFoundError):
        _state(running.key).unlink()


def _answering(running: Running) -> bool:
    """Whether a recorded server still runs under its supervisor and answers."""
    return pid_alive(running.pid) and pid_alive(running.supervisor) and _healthy(running.url)


def ensure(spec: ServerSpec, *, timeout: float = STARTUP_TIMEOUT, binary: Path | None = None) -> Running:
    """The running server of ``spec``, started when there is none (or only a stale record of one)."""
    binary = binary or server_binary()
    if binary is None:
        raise BackendUnavailable("no llama-server is installed (run scripts/install.sh, or set embedded=process)")
    with _locked(spec.key):
        path = _state(spec.key)
        running = _read(path)
        if running is not None:
            if _answering(running):
                return running
            _discard(running)  # stale: its processes are gone or do not answer
        elif path.exists():
            path.unlink()  # unreadable
        log = run_dir() / f"{spec.key}.log"
        with log.open("wb") as out:
            supervisor = subprocess.Popen(
                [sys.executable, "-m", "pagemind.llm.managed", json.dumps({**asdict(spec), "binary": str(binary)})],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                close_fds=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            running = _read(path)
            if running is not None and running.supervisor == supervisor.pid and _healthy(running.url):
                return running
            if supervisor.poll() is not None:
                said = log.read_text(encoding="utf-8", errors="replace")[-1500:]
                raise BackendUnavailable(f"the shared llama-server for {Path(spec.model).name} did not start "
                                         f"(exit {supervisor.returncode}): {said}")
            time.sleep(0.1)
        _terminate(supervisor.pid)
        raise BackendUnavailable(f"the shared llama-server for {Path(spec.model).name} did not answer within "
                                 f"{timeout:.0f} s (log: {log.name} in {run_dir()})")


def status() -> list[Running]:
    """Every running shared server of this user (stale records are removed)."""
    out = []
    for path in sorted(run_dir().glob("*.json")):
        running = _read(path)
        if running is None:
            path.unlink(missing_ok=True)
        elif pid_alive(running.pid) and pid_alive(running.supervisor):
            out.append(running)
        else:
            with _locked(running.key):
                _discard(running)
    return out


def stop(keys: set[str] | None = None) -> list[Running]:
    """Stop the shared servers (those of ``keys``, or all); returns what was stopped."""
    stopped = []
    for running in status():
        if keys is None or running.key in keys:
            with _locked(running.key):
                _discard(running)
            stopped.append(running)
    return stopped


def memory_mb(pid: int) -> float:
    """Resident memory of a process in MiB (``/proc``), 0 when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


# --- the supervisor (its own process) -----------------------------------------------------------------
def _metrics(url: str, api_key: str) -> tuple[float, float] | None:
    """(requests in flight or waiting, tokens processed so far) from llama-server's Prometheus metrics."""
    import httpx

    try:
        reply = httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {api_key}"}, timeout=5.0,
                          trust_env=False)
    except httpx.HTTPError:
        return None
    if reply.status_code != 200:
        return None
    values: dict[str, float] = {}
    for line in reply.text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            with contextlib.suppress(ValueError):
                values[name.strip()] = float(value)
    busy = values.get("llamacpp:requests_processing", 0.0) + values.get("llamacpp:requests_deferred", 0.0)
    done = values.get("llamacpp:prompt_tokens_total", 0.0) + values.get("llamacpp:tokens_predicted_total", 0.0)
    return busy, done


def _die_with_parent() -> None:
    """In the server's process before exec: SIGTERM when the supervisor dies (Linux), so no orphan holds weights."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def supervise(spec: ServerSpec, binary: Path, *, tick: float | None = None,
              clock: Callable[[], float] = time.monotonic) -> int:
    """Start the server of ``spec``, record it, stop it after ``spec.idle`` idle seconds; the exit code."""
    from .llamaserver import free_port

    path = _state(spec.key)
    env = {**os.environ, "LD_LIBRARY_PATH": os.pathsep.join(
        p for p in (_libraries(binary), os.environ.get("LD_LIBRARY_PATH", "")) if p)}
    server: subprocess.Popen[bytes] | None = None
    stopping = threading.Event()

    def on_term(signum: int, frame: Any) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    api_key = secrets.token_urlsafe(24)
    running = None
    try:
        for _attempt in range(5):  # a port taken between choosing and binding: another port
            port = free_port()
            server = subprocess.Popen(spec.command(binary, port, api_key), env=env, stdin=subprocess.DEVNULL,
                                      preexec_fn=_die_with_parent)  # only prctl before exec
            url = f"http://127.0.0.1:{port}"
            deadline = clock() + STARTUP_TIMEOUT
            while server.poll() is None and not _healthy(url) and clock() < deadline and not stopping.is_set():
                time.sleep(0.2)
            if server.poll() is None and _healthy(url):
                running = Running(key=spec.key, pid=server.pid, supervisor=os.getpid(), port=port, api_key=api_key,
                                  model=spec.model, n_ctx=spec.n_ctx, slots=spec.slots, threads=spec.threads,
                                  idle=spec.idle, started=time.time(), binary=str(binary), cache_mb=spec.cache_mb)
                _write(path, running)
                break
            if server.poll() is None:  # not answering in time, or asked to stop
                _terminate(server.pid)
                return 1
            print(f"llama-server exited with {server.returncode} on port {port}; trying another port", flush=True)
        if running is None or server is None:
            return 1
        tick = tick if tick is not None else max(0.5, min(5.0, spec.idle / 4 if spec.idle else 5.0))
        last_active, done = clock(), -1.0
        while not stopping.wait(tick):
            if server.poll() is not None:
                print(f"llama-server exited with {server.returncode}", flush=True)
                return 1
            seen = _metrics(running.url, api_key)
            if seen is not None and (seen[0] > 0 or seen[1] != done):
                last_active, done = clock(), seen[1]
            if spec.idle and clock() - last_active >= spec.idle:
                print(f"idle for {spec.idle:.0f} s: stopping", flush=True)
                return 0
        return 0
    finally:
        if server is not None and server.poll() is None:
            _terminate(server.pid)
        current = _read(path)
        if current is not None and current.supervisor == os.getpid():
            path.unlink(missing_ok=True)


# --- the backend ----------------------------------------------------------------------------------------
class SharedLlama(LlamaCpp):
    """The embedded model through the user's shared server: counts and templates in this process (the vocabulary
    alone), generation in the server, several requests at once (its slots). A server that stopped (idle, killed)
    is started again and the request sent once more."""

    provider = "llama.cpp"

    def __init__(self, path: Path, n_ctx: int = 16384, threads: int | None = None, name: str | None = None,
                 prompt_cache_mb: int = 512, slots: int = 4, idle: float = 600.0,
                 binary: Path | None = None, fallback: bool = False) -> None:
        """``fallback``: when the server cannot be started, run the model in this process instead (and say so in
        the capabilities) rather than fail (``embedded=auto``)."""
        super().__init__(path, n_ctx=n_ctx, threads=threads, name=name, prompt_cache_mb=prompt_cache_mb)
        self.fallback = fallback
        self.in_process = False  # True once the server failed to start and ``fallback`` moved the model here
        self.binary = binary or server_binary()
        if self.binary is None:
            raise BackendUnavailable("no llama-server is installed (run scripts/install.sh, or set embedded=process)")
        self.spec = ServerSpec(model=str(self.path.resolve()), n_ctx=self.n_ctx, slots=slots, threads=self.threads,
                               cache_mb=prompt_cache_mb, idle=idle)  # the window as opened: the header read once
        caps = self.capabilities
        caps.max_concurrency = self.spec.slots
        caps.supports_logprobs = True  # the server returns them (a reply made in this process after a fallback: none)
        caps.constraint = "GBNF grammar (llama.cpp server); JSON schema as a grammar"
        caps.extra = {**caps.extra, "process": "shared llama-server", "slots": self.spec.slots,
                      "server": str(self.binary)}
        self._remote: Any = None
        self._retired: list[Any] = []
        self._remote_lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """Whether this process has used the model (in the server, or here after a fallback)."""
        return self._remote is not None or self._llm is not None

    def _client(self, stale: Any = None) -> Any:
        """The HTTP client of the running server (started if needed, or again when ``stale``, the client that just
        failed, is still the current one); None when it could not start and the model moved into this process
        (``fallback``)."""
        from .openai import OpenAICompatible

        with self._remote_lock:
            if self._closed:
                raise BackendUnavailable("the local model was closed")
            if self._remote is None or self._remote is stale:
                if self._remote is not None:
                    self._retired.append(self._remote)  # other threads may still be reading a reply from it
                    self._remote = None
                try:
                    running = ensure(self.spec, binary=self.binary)
                except BackendUnavailable as err:
                    if not self.fallback:
                        raise
                    self.in_process = True
                    self.capabilities.max_concurrency = 1
                    self.capabilities.supports_logprobs = False
                    self.capabilities.extra["process"] = None
                    self.capabilities.extra["fallback"] = f"the shared llama-server did not start: {err}"
                    log.warning("running the model in this process: %s", err)
                    return None
                self._remote = OpenAICompatible(
                    Path(self.spec.model).name, base_url=f"{running.url}/v1", api_key=running.api_key,
                    context_window=self.n_ctx, server_kind="llama.cpp", tools=False,
                    max_concurrency=self.spec.slots, timeout=REQUEST_TIMEOUT)
            return self._remote

    def _call(self, request: LLMRequest, send: Callable[[Any], LLMResponse],
              here: Callable[[], LLMResponse]) -> LLMResponse:
        self._fitting_prompt(request)  # refused here, before any server starts
        if self.in_process:
            return here()
        client = self._client()
        if client is None:
            return here()
        try:
            reply = send(client)
        except BackendUnavailable:
            client = self._client(stale=client)  # stopped for idleness, or killed: start it again, once
            if client is None:
                return here()
            reply = send(client)
        return LLMResponse(text=reply.text, prompt_tokens=reply.prompt_tokens,
                           completion_tokens=reply.completion_tokens, seconds=reply.seconds, model=self.model_id,
                           finish_reason=reply.finish_reason, constrained=reply.constrained, logprobs=reply.logprobs)

    def execute(self, request: LLMRequest) -> LLMResponse:
        return self._call(request, lambda client: client.execute(request), lambda: super(SharedLlama, self)
                          .execute(request))

    def stream(self, request: LLMRequest, on_text: Callable[[str], None]) -> LLMResponse:
        return self._call(request, lambda client: client.stream(request, on_text),
                          lambda: super(SharedLlama, self).stream(request, on_text))

    def forget_prompts(self) -> None:
        """Measurements that must start cold: the shared server's slots are other processes' too, so only a model
        in this process forgets."""
        if self.in_process:
            super().forget_prompts()

    def close(self) -> None:
        with self._remote_lock:
            for client in [*self._retired, self._remote]:
                if client is not None:
                    client.close()
            self._remote, self._retired = None, []
        super().close()


def open_embedded(spec_or_path: str, settings: Settings) -> LlamaCpp:
    """Open ``local:NAME`` or ``gguf:PATH`` as the settings say: through the user's shared llama-server
    (``embedded=server``; ``auto`` when one is installed, falling back to this process if it cannot start), else in
    this process (``embedded=process``, or ``auto`` without a llama-server)."""
    path, name = model_file(spec_or_path)
    if settings.embedded != "process":
        binary = server_binary()
        if binary is not None or settings.embedded == "server":
            return SharedLlama(path, n_ctx=settings.n_ctx, threads=settings.threads, name=name,
                               prompt_cache_mb=settings.prompt_cache_mb, slots=settings.slots,
                               idle=settings.server_idle, binary=binary, fallback=settings.embedded == "auto")
    return LlamaCpp(path, n_ctx=settings.n_ctx, threads=settings.threads, name=name,
                    prompt_cache_mb=settings.prompt_cache_mb)


def main(argv: list[str] | None = None) -> int:
    args = json.loads((argv or sys.argv[1:])[0])
    binary = Path(args.pop("binary"))
    return supervise(ServerSpec(**args), binary)


if __name__ == "__main__":
    raise SystemExit(main())
