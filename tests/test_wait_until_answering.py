"""The one wait for a started server process (pagemind serve, llama_cpp.server) to answer on loopback."""

import subprocess
import sys

import pytest

from pagemind.errors import BackendUnavailable
from pagemind.llm.llamaserver import free_port, wait_until_answering
from pagemind.llm.mockserver import MockServer


def test_a_server_that_exits_is_reported_with_what_it_printed():
    process = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit('no such model: x.gguf')"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    with pytest.raises(BackendUnavailable, match=r"the server exited with 1: no such model: x.gguf"):
        wait_until_answering(f"http://127.0.0.1:{free_port()}/v1/health", process, timeout=30)


def test_a_server_that_answers_is_waited_for_and_one_that_does_not_times_out():
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with MockServer() as mock:
            wait_until_answering(f"{mock.url}/models", sleeper, timeout=10)
        with pytest.raises(BackendUnavailable, match=r"pagemind serve did not answer .* within 1 s"):
            wait_until_answering(f"http://127.0.0.1:{free_port()}/v1/health", sleeper, timeout=1,
                                 what="pagemind serve")
    finally:
        sleeper.kill()
        sleeper.wait()
