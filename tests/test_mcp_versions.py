"""pagemind's MCP server and clients across the SDK's two majors: ``mcp`` 2.x is installed in the project's
environment, 1.x in a side environment made by ``scripts/install.sh`` (a venv over the project's site-packages
with ``mcp<2`` installed in it, so the same pagemind runs under either). Each pairing is tested end to end: a
1.x server (``pagemind mcp`` in the side environment) with the 2.x client and with a 1.x client, and a 1.x client
with the 2.x server at ``/mcp`` of ``pagemind serve``'s app."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from pagemind.llm.mockserver import MockServer
from test_mcp import STORY, Replies, Served, check_tools, document_ask_trace, served_app

CLIENT = Path(__file__).with_name("mcp1_client.py")


def mcp1_python() -> str:
    """The side environment's python (``PAGEMIND_MCP1_PYTHON``, else where ``scripts/install.sh`` makes it)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    python = os.environ.get("PAGEMIND_MCP1_PYTHON") or str(cache / "pagemind" / "venvs" / "mcp1" / "bin" / "python")
    assert Path(python).exists(), f"no mcp 1.x environment at {python}: run scripts/install.sh"
    return python


@pytest.fixture(scope="module")
def py1() -> str:
    python = mcp1_python()
    found = subprocess.run([python, "-c", "import importlib.metadata as m, pagemind.server.mcp_sdk as s; "
                                          "print(m.version('mcp'), s.MAJOR)"],
                           capture_output=True, text=True, timeout=120, env=env_of(None))
    assert found.returncode == 0, found.stderr
    version, major = found.stdout.split()
    assert version.startswith("1.") and major == "1", found.stdout  # the side environment really has 1.x
    return python


def test_the_side_environment_imports_this_environments_pagemind_and_its_own_mcp(py1):
    """The mcp 1.x environment reads pagemind and its dependencies from the environment the tests run in (a .pth
    that scripts/install.sh writes), whatever that is: the base interpreter or a virtualenv over it."""
    import platformdirs

    import pagemind

    found = subprocess.run([py1, "-c", "import pagemind, platformdirs, mcp, sys; print(pagemind.__file__); "
                                       "print(platformdirs.__file__); print(sys.prefix)"],
                           capture_output=True, text=True, timeout=120, env=env_of(None))
    assert found.returncode == 0, found.stderr
    where, dirs, prefix = found.stdout.split()
    assert Path(where).resolve() == Path(pagemind.__file__).resolve()
    assert Path(dirs).resolve() == Path(platformdirs.__file__).resolve()
    assert Path(prefix).resolve() != Path(sys.prefix).resolve()  # its own environment, not this one


@pytest.fixture()
def llm():
    with MockServer(text=Replies()) as server:
        yield server


def env_of(home: Path | None) -> dict[str, str]:
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH", "")) if p))
    if home is not None:
        env.update(PAGEMIND_HOME=str(home), PAGEMIND_CONTEXT_WINDOW="8192")
    return env


def walk_with_1x_client(py1: str, *target: str, env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run([py1, str(CLIENT), *target], capture_output=True, text=True, timeout=240, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    seen: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return seen


def check_walk(seen: dict[str, Any]) -> None:
    """What the 1.x client saw: every tool, their hints, a document added, asked (with progress), a bad option
    refused by name, the resource templates, the resource and the prompt."""
    assert seen["server"] == "pagemind" and seen["ask_required"] == ["question"] and seen["read_only"] is True
    assert {"add_document", "ask", "show_trace", "create_agent", "send_message", "get_page"} <= set(seen["tools"])
    added = seen["added"]
    assert not added["error"] and added["data"]["name"] == "cape.txt" and added["text"].startswith("document ")
    answer = seen["answer"]
    assert not answer["error"] and answer["data"]["answer"] == "Wren keeps the lamps."
    assert answer["text"].startswith("Wren keeps the lamps.") and answer["data"]["run_id"] in answer["text"]
    assert "answering from the whole text" in seen["progress"]
    assert seen["bad"]["error"] and "budget must be at least 1" in seen["bad"]["text"]
    assert seen["templates"] == ["pagemind://agents/{agent}/core-memory", "pagemind://documents/{document_id}",
                                 "pagemind://libraries/{name}"]
    assert seen["resource"]["name"] == "cape.txt" and seen["resource"]["id"] == added["data"]["id"]
    assert "`ask`" in seen["prompt"] and added["data"]["id"] in seen["prompt"]


def server_command(python: str, llm: MockServer) -> list[str]:
    return [python, "-m", "pagemind", "mcp", "--llm", "openai:mock", "--base-url", llm.url]


def test_a_1x_client_with_pagemind_mcp_running_on_1x(tmp_path: Path, py1: str, llm: MockServer) -> None:
    seen = walk_with_1x_client(py1, "stdio", *server_command(py1, llm), env=env_of(tmp_path / "home"))
    check_walk(seen)


def test_the_2x_client_with_pagemind_mcp_running_on_1x(tmp_path: Path, py1: str, llm: MockServer) -> None:
    command = server_command(py1, llm)
    params = StdioServerParameters(command=command[0], args=command[1:], env=env_of(tmp_path / "home"))
    errors = (tmp_path / "stderr.txt").open("w")

    async def main() -> None:
        async with Client(stdio_client(params, errlog=errors), read_timeout_seconds=60) as client:
            await check_tools(client, paths=True)
            await document_ask_trace(client, text=STORY)

    try:
        anyio.run(main)
    finally:
        errors.close()


def test_a_1x_client_with_the_2x_server_of_pagemind_serve(tmp_path: Path, py1: str, llm: MockServer) -> None:
    from pagemind.users import create_user

    app, pm = served_app(tmp_path, llm, "keys")
    _, key = create_user(pm.store, "ann")
    with Served(app) as served:
        seen = walk_with_1x_client(py1, "http", served.url + "/mcp", key, env=env_of(None))
    check_walk(seen)
    pm.close()
