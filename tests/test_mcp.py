"""The MCP server through the SDK's own client: ``pagemind mcp`` over stdio in a real process, and the streamable
HTTP endpoint of ``pagemind serve``'s app under uvicorn on loopback; the LLM is an OpenAI-compatible server on
127.0.0.1 (pagemind's mock) answering the ask and scripting the agent's steps."""

from __future__ import annotations

import itertools
import json
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from pagemind.llm.llamaserver import free_port, wait_until_answering
from pagemind.llm.mockserver import MockServer
from pagemind.methods import registry

STORY = ("Wren keeps the lamps of the tower on the northern cape.\n\nAbel, her brother, sails the ferry.\n\n"
         "The map was found under the third stair by Wren in the winter of the storm.")
AGENT_FORMAT = "Reply format: every reply is exactly one JSON object"


def step(function: str, thoughts: str = "thinking", **arguments: Any) -> str:
    return json.dumps({"thoughts": thoughts, "function": function, "arguments": arguments})


class Replies:
    """The LLM server's replies: the agent's steps in order (each turn: keep the fact in archival memory, note it
    in the human block, answer), and an answer naming Wren to every question about the document."""

    def __init__(self) -> None:
        self.turns = 0
        self.queue: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        system = str(body["messages"][0]["content"])
        if AGENT_FORMAT not in system:
            return "Answer: Wren keeps the lamps."
        with self.lock:
            if not self.queue:
                self.turns += 1
                self.queue = [step("archival_memory_insert", content="The user's sister is Ada, a pilot.",
                                   request_heartbeat=True),
                              step("core_memory_append", label="human", content="Sister: Ada",
                                   request_heartbeat=True),
                              step("send_message", thoughts="done", message=f"Noted, Ada it is ({self.turns}).")]
            return self.queue.pop(0)


@pytest.fixture()
def llm():
    with MockServer(text=Replies()) as server:
        yield server


def text(result: Any) -> str:
    return result.content[0].text


async def check_tools(client: Client, *, paths: bool) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert {"add_document", "list_documents", "list_methods", "ask", "show_trace", "list_runs", "create_agent",
            "list_agents", "send_message", "read_core_memory", "search_archival", "search_recall"} <= set(tools)
    assert ("path" in tools["add_document"].input_schema["properties"]) is paths
    ask = tools["ask"].input_schema
    assert ask["required"] == ["question"]  # and a document_id or a library
    assert {"add_to_library", "list_libraries", "remove_document", "get_document_structure", "get_page_content",
            "core_memory_append", "core_memory_replace", "core_memory_history", "core_memory_revert",
            "delete_agent", "forget_passage"} <= set(tools)
    assert tools["forget_passage"].annotations.model_dump(by_alias=True)["destructiveHint"] is True
    assert ("path" in tools["add_to_library"].input_schema["properties"]) is paths
    assert ask["properties"]["method"]["enum"] == list(registry.document_methods())
    options = ask["properties"]["method_options"]
    assert options["type"] == "object" and options["additionalProperties"] is False
    for method in registry.document_methods():  # every method's every option, typed as its declaration says
        for name, declared in registry.get(method).Options.json_schema()["properties"].items():
            kinds = [k for k in (declared["type"] if isinstance(declared["type"], list) else [declared["type"]])
                     if k != "null"]  # nullable: leaving it out is the default
            assert options["properties"][name]["type"] == (kinds[0] if len(kinds) == 1 else kinds), (method, name)
    memwalker = registry.get("memwalker").Options.json_schema()["properties"]["segment_tokens"]
    assert options["properties"]["segment_tokens"] == {**memwalker,
                                                       "description": f"memwalker: {memwalker['description']}"}
    assert "memwalker: most tokens of text shown per call" in options["properties"]["budget"]["description"]
    agent_options = tools["create_agent"].input_schema["properties"]["options"]["properties"]
    assert agent_options["max_steps"]["type"] == "integer" and agent_options["context_window"]["type"] == "integer"
    for tool in tools.values():  # portable schemas: no union types, descriptions without docstring indentation
        assert "anyOf" not in json.dumps(tool.input_schema) and '"type": [' not in json.dumps(tool.input_schema)
        assert "\n    " not in (tool.description or ""), tool.name


async def document_ask_trace(client: Client, **add: str) -> tuple[str, str]:
    added = await client.call_tool("add_document", {"name": "cape.txt", **add})
    assert not added.is_error, text(added)
    doc = added.structured_content
    assert doc["name"] == "cape.txt" and doc["words"] == len(STORY.split()) and text(added).startswith("document ")
    listed = await client.call_tool("list_documents", {})
    assert [d["id"] for d in listed.structured_content["documents"]] == [doc["id"]]

    heard: list[str | None] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        heard.append(message)

    answered = await client.call_tool("ask", {"document_id": doc["id"], "question": "Who keeps the lamps?",
                                              "method": "full", "method_options": {"budget": 2000}},
                                      progress_callback=progress)
    assert not answered.is_error, text(answered)
    answer = answered.structured_content
    assert answer["answer"] == "Wren keeps the lamps." and answer["method"] == "full"
    assert text(answered).startswith("Wren keeps the lamps.") and answer["run_id"] in text(answered)
    assert answer["support"]["label"] == "supported" and "\n\nSupport: supported by [1]" in text(answered)
    assert "answering from the whole text" in heard  # the method's phases, as MCP progress notifications

    trace = await client.call_tool("show_trace", {"run_id": answer["run_id"]})
    run = trace.structured_content
    assert run["run"]["status"] == "done" and run["run"]["kind"] == "ask" and run["run"]["method"] == "full"
    assert run["run"]["request"]["method_options"] == {"budget": 2000}
    kinds = [s["kind"] for s in run["steps"]]
    assert "llm" in kinds and kinds[-1] == "result" and run["usage"]["calls"] == kinds.count("llm") >= 1
    llm_step = next(s for s in run["steps"] if s["kind"] == "llm")["data"]
    assert llm_step["role"] == "answer" and llm_step["prompt_tokens"] > 0 and "Wren" in llm_step["reply"]
    assert "llm answer:" in text(trace)

    wrong = await client.call_tool("ask", {"document_id": doc["id"], "question": "q", "method": "memwalker",
                                           "method_options": {"max_pages": 3}})
    assert wrong.is_error and "max_pages applies to readagent-p, readagent-s, not memwalker" in text(wrong)
    bad = await client.call_tool("ask", {"document_id": doc["id"], "question": "q", "method": "full",
                                         "method_options": {"budget": 0}})
    assert bad.is_error and "budget must be at least 1" in text(bad)
    missing = await client.call_tool("ask", {"document_id": "0" * 64, "question": "q"})
    assert missing.is_error and "no document '" in text(missing)
    await library_ask(client, doc["id"])
    return doc["id"], answer["run_id"]


async def library_ask(client: Client, doc_id: str) -> None:
    put = await client.call_tool("add_to_library", {"library": "cape", "document_id": doc_id})
    assert not put.is_error and put.structured_content["document"]["status"] == "added", text(put)
    other = await client.call_tool("add_to_library", {"library": "cape", "name": "ferry.txt",
                                                      "text": "Abel sails the ferry across the sound each morning."})
    assert not other.is_error, text(other)
    listed = await client.call_tool("list_libraries", {})
    (shelf,) = listed.structured_content["libraries"]
    assert [d["name"] for d in shelf["documents"]] == ["cape.txt", "ferry.txt"]
    both = await client.call_tool("ask", {"question": "q", "document_id": doc_id, "library": "cape"})
    assert both.is_error and "give document_id or library" in text(both)
    answered = await client.call_tool("ask", {"library": "cape", "question": "Who keeps the lamps?",
                                              "method": "full"})
    assert not answered.is_error, text(answered)
    first = answered.structured_content["citations"][0]
    assert first["document_name"] == "cape.txt" and first["quote"].startswith("Wren keeps the lamps")
    assert "[1] cape.txt, text: \"Wren keeps the lamps" in text(answered)
    opened = await client.call_tool("get_page", {"run_id": answered.structured_content["run_id"]})
    assert '<cite n="1">Wren keeps the lamps' in opened.structured_content["marked"]


async def memory_tools(client: Client, doc_id: str) -> None:
    """The tools that read a memory's structure and units, remove a document, edit core memory, delete an agent."""
    none_yet = await client.call_tool("get_document_structure", {"document_id": doc_id, "method": "memwalker"})
    assert none_yet.is_error and "no memwalker memory" in text(none_yet)
    asked = await client.call_tool("ask", {"document_id": doc_id, "question": "Who?", "method": "gistmem"})
    assert not asked.is_error, text(asked)
    shape = await client.call_tool("get_document_structure", {"document_id": doc_id, "method": "gistmem"})
    pages = shape.structured_content["pages"]
    assert [p["page"] for p in pages] == [0] and text(shape).startswith("<Page 0>")
    page = await client.call_tool("get_page_content", {"document_id": doc_id, "pages": "0"})
    (unit,) = page.structured_content["units"]
    assert unit["unit"] == "page" and unit["text"].split()[:8] == STORY.split()[:8] and \
        unit["gist"] == pages[0]["gist"]
    beyond = await client.call_tool("get_page_content", {"document_id": doc_id, "pages": "0-3"})
    assert beyond.is_error and "has no unit 1" in text(beyond)
    shaped = await client.call_tool("get_page_content", {"document_id": doc_id, "pages": "three"})
    assert shaped.is_error

    made = await client.call_tool("create_agent", {"name": "tmp", "human": "Name: Lee",
                                                   "options": {"tool_calling": "json", "embedder": "none"}})
    assert not made.is_error, text(made)
    added = await client.call_tool("core_memory_append", {"agent": "tmp", "label": "human", "content": "Likes tea"})
    assert added.structured_content["value"] == "Name: Lee\nLikes tea"
    swapped = await client.call_tool("core_memory_replace", {"agent": "tmp", "label": "human",
                                                             "old_content": "tea", "new_content": "coffee"})
    assert swapped.structured_content["value"] == "Name: Lee\nLikes coffee"
    missing = await client.call_tool("core_memory_replace", {"agent": "tmp", "label": "human",
                                                             "old_content": "cocoa", "new_content": "x"})
    assert missing.is_error and "not in the human block" in text(missing)
    core = await client.call_tool("read_core_memory", {"agent": "tmp"})
    assert "Likes coffee" in text(core)
    history = await client.call_tool("core_memory_history", {"agent": "tmp", "label": "human"})
    versions = history.structured_content["versions"]
    assert [(v["version"], v["cause"]) for v in versions] == [(3, "mcp: local"), (2, "mcp: local"), (1, "create")]
    assert "+Likes coffee" in versions[0]["diff"] and "human v3  mcp: local" in text(history)
    back = await client.call_tool("core_memory_revert", {"agent": "tmp", "label": "human", "version": 2})
    assert back.structured_content["value"] == "Name: Lee\nLikes tea" and back.structured_content["version"] == 4
    nothing = await client.call_tool("core_memory_revert", {"agent": "tmp", "label": "human", "version": 7})
    assert nothing.is_error and "no version 7" in text(nothing)
    audited = await client.call_tool("audit_memory", {"agent": "tmp", "fold": True})
    assert audited.structured_content["total"] == 0 and text(audited) == "0 passages: 0 repeats, 0 junk, " \
        "0 superseded; folded 0"
    unknown = await client.call_tool("forget_passage", {"agent": "tmp", "passage": 1})
    assert unknown.is_error and "no archival passage 1" in text(unknown)
    tidied = await client.call_tool("consolidate_memory", {"agent": "tmp"})  # nothing said yet: nothing to do
    assert tidied.structured_content["messages"] == 0 and text(tidied).startswith("read 0 messages: stored 0")
    gone = await client.call_tool("delete_agent", {"agent": "tmp"})
    assert not gone.is_error and "tmp" not in str((await client.call_tool("list_agents", {})).structured_content)
    removed = await client.call_tool("remove_document", {"document_id": doc_id})
    assert not removed.is_error
    listed = await client.call_tool("list_documents", {})
    assert doc_id not in str(listed.structured_content)


async def agent_memory(client: Client) -> str:
    created = await client.call_tool("create_agent", {"name": "sam", "human": "Name: Lee",
                                                      "options": {"tool_calling": "json", "embedder": "none"}})
    assert not created.is_error, text(created)
    assert created.structured_content["name"] == "sam"
    again = await client.call_tool("create_agent", {"name": "sam"})
    assert again.is_error and "already have an agent named 'sam'" in text(again)
    named = await client.call_tool("create_agent", {"name": "a b"})
    assert named.is_error and "agent name 'a b': use letters" in text(named) and "u1." not in text(named)
    refused = await client.call_tool("create_agent", {"name": "x", "options": {"page_size": "many"}})
    assert refused.is_error and "page_size" in text(refused)

    sent = await client.call_tool("send_message", {"agent": "sam", "message": "My sister is Ada; she flies planes."})
    assert not sent.is_error, text(sent)
    turn = sent.structured_content
    assert turn["messages"] == ["Noted, Ada it is (1)."] and text(sent).startswith("Noted, Ada it is (1).")
    assert [s["function"] for s in turn["steps"]] == ["archival_memory_insert", "core_memory_append", "send_message"]

    core = await client.call_tool("read_core_memory", {"agent": "sam"})
    blocks = {b["label"]: b["value"] for b in core.structured_content["blocks"]}
    assert blocks["human"] == "Name: Lee\nSister: Ada" and "Sister: Ada" in text(core)
    assert core.structured_content["counts"]["archival"] == 1

    archival = await client.call_tool("search_archival", {"agent": "sam", "query": "pilot"})
    assert archival.structured_content["total"] == 1 and "sister is Ada, a pilot" in archival.structured_content[
        "items"][0]
    recall = await client.call_tool("search_recall", {"agent": "sam", "query": "flies planes"})
    assert recall.structured_content["total"] >= 1 and "My sister is Ada" in recall.structured_content["items"][0]

    trace = await client.call_tool("show_trace", {"run_id": turn["run_id"]})
    agent_steps = [s["data"] for s in trace.structured_content["steps"] if s["kind"] == "step"]
    assert [s["function"] for s in agent_steps] == ["archival_memory_insert", "core_memory_append", "send_message"]
    listed = await client.call_tool("list_agents", {})
    assert [a["name"] for a in listed.structured_content["agents"]] == ["sam"]
    nobody = await client.call_tool("read_core_memory", {"agent": "nobody"})
    assert nobody.is_error and "no agent 'nobody'" in text(nobody)
    return turn["run_id"]


# --- stdio: `pagemind mcp` in a real process ---------------------------------------------------------------
def test_pagemind_mcp_over_stdio(tmp_path: Path, llm: MockServer) -> None:
    story = tmp_path / "cape.txt"
    story.write_text(STORY)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "pagemind", "mcp", "--llm", "openai:mock", "--base-url", llm.url],
        env={"PAGEMIND_HOME": str(tmp_path / "home"), "PAGEMIND_CONTEXT_WINDOW": "8192",
             "PYTHONPATH": os.environ.get("PYTHONPATH", "")})
    errors = (tmp_path / "stderr.txt").open("w")

    async def main() -> None:
        async with Client(stdio_client(params, errlog=errors), read_timeout_seconds=60) as client:
            await check_tools(client, paths=True)
            both = await client.call_tool("add_document", {"text": "x", "path": str(story)})
            assert both.is_error and "one of them" in text(both)
            await document_ask_trace(client, path=str(story))
            await agent_memory(client)
            runs = await client.call_tool("list_runs", {})
            assert [r["kind"] for r in runs.structured_content["runs"]] == ["turn", "ask", "ask"]  # refused: none
            again = await client.call_tool("add_document", {"text": STORY.replace("storm", "gale"),
                                                            "name": "again.txt"})
            first = await client.call_tool("list_documents", {"limit": 1})  # a page at a time, the next named
            assert [d["name"] for d in first.structured_content["documents"]] == ["again.txt"]
            assert "call again with after=" in text(first)
            rest = await client.call_tool("list_documents", {"after": first.structured_content["next"]})
            assert [d["name"] for d in rest.structured_content["documents"]] == ["cape.txt"]
            assert "next" not in rest.structured_content
            older = await client.call_tool("list_runs", {"limit": 2})
            oldest = await client.call_tool("list_runs", {"after": older.structured_content["next"]})
            assert [r["kind"] for r in oldest.structured_content["runs"]] == ["ask"]
            await memory_tools(client, again.structured_content["id"])

    try:
        anyio.run(main)
    finally:
        errors.close()
    from pagemind.store import Store

    store = Store(tmp_path / "home" / "pagemind.db")  # what the tools did, they did as the local user
    local = store.get_user("local")
    assert local is not None and len(store.user_documents(local.id)) == 1
    assert {r.user_id for r in store.list_runs(local.id)} == {local.id} and store.user_agents(local.id)


# --- streamable HTTP: the endpoint in pagemind serve's app, under uvicorn on loopback ---------------------
class Served:
    """An ASGI app served by uvicorn in a thread on a free port of 127.0.0.1."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        # a TCP socket by its protocol number: asyncio sets TCP_NODELAY only on sockets whose proto says TCP (as the
        # ones it makes itself for `pagemind serve` do); with proto 0, Nagle held each response's body for the
        # client's delayed ACK of its headers, 40 ms a request on a kept-alive connection
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> Served:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "uvicorn did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


def http_client(url: str, key: str | None) -> Client:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {key}"} if key else {}
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60.0))
    return Client(streamable_http_client(url, http_client=http), read_timeout_seconds=60)


def served_app(tmp_path: Path, llm: MockServer, auth: str) -> tuple[Any, Any]:
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    from pagemind import Pagemind
    from pagemind.server.mcp import mount

    pm = Pagemind("openai:mock", store=tmp_path / "serve.db", base_url=llm.url, context_window=8192)
    try:
        from pagemind.server.app import create_app
    except ImportError:  # the HTTP API is not there: the endpoint alone
        from pagemind.server.mcp import http_app

        return http_app(pm, auth=auth), pm
    app = create_app(pm, auth=auth)
    if not any(getattr(route, "path", None) == "/mcp" for route in app.router.routes):
        mount(app, app.state.service)
    return app, pm


def test_mcp_over_streamable_http_as_the_key_user(tmp_path: Path, llm: MockServer) -> None:
    import httpx

    from pagemind.users import create_user

    app, pm = served_app(tmp_path, llm, "keys")
    _, ann = create_user(pm.store, "ann")
    _, bob = create_user(pm.store, "bob")
    with Served(app) as served:
        url = served.url + "/mcp"
        hello = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        accept = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
        for headers in ({}, {"Authorization": "Bearer pm_wrong"}, {"Authorization": ann}):
            refused = httpx.post(url, json=hello, headers={**accept, **headers})
            assert refused.status_code == 401 and refused.headers["www-authenticate"] == 'Bearer realm="pagemind"'
        rebound = httpx.post(url, json=hello, headers={**accept, "Authorization": f"Bearer {ann}",
                                                       "Host": "attacker.example"})
        assert rebound.status_code == 421
        foreign = httpx.post(url, json=hello, headers={**accept, "Authorization": f"Bearer {ann}",
                                                       "Origin": "http://attacker.example"})
        assert foreign.status_code == 403

        async def as_ann() -> tuple[str, str, str]:
            async with http_client(url, ann) as client:
                await check_tools(client, paths=False)
                path = await client.call_tool("add_document", {"path": "/etc/hostname"})
                assert path.is_error and "path is only read over stdio" in text(path)
                doc, run = await document_ask_trace(client, text=STORY)
                turn = await agent_memory(client)
                return doc, run, turn

        async def as_bob(doc: str, run: str, turn: str) -> None:
            async with http_client(served.url + "/mcp/", bob) as client:  # the trailing slash is served too
                listed = await client.call_tool("list_documents", {})
                assert listed.structured_content == {"documents": []}
                shelves = await client.call_tool("list_libraries", {})
                assert shelves.structured_content == {"libraries": []}  # ann's library is not bob's
                theirs = await client.call_tool("ask", {"library": "cape", "question": "q"})
                assert theirs.is_error and "no library 'cape'" in text(theirs)
                asked = await client.call_tool("ask", {"document_id": doc, "question": "Who keeps the lamps?"})
                assert asked.is_error and f"no document {doc!r}" in text(asked)
                for run_id in (run, turn):
                    trace = await client.call_tool("show_trace", {"run_id": run_id})
                    assert trace.is_error and f"no run {run_id!r}" in text(trace)
                core = await client.call_tool("read_core_memory", {"agent": "sam"})
                assert core.is_error and "no agent 'sam'" in text(core)
                mine = await client.call_tool("create_agent", {"name": "sam", "options": {"embedder": "none"}})
                assert not mine.is_error, text(mine)  # bob's own sam: names are per user
                assert (await client.call_tool("list_agents", {})).structured_content["agents"][0]["name"] == "sam"

        doc, run, turn = anyio.run(as_ann)
        anyio.run(as_bob, doc, run, turn)
    pm.close()


def test_mcp_over_http_without_keys_acts_as_the_local_user(tmp_path: Path, llm: MockServer) -> None:
    app, pm = served_app(tmp_path, llm, "none")
    with Served(app) as served:
        async def main() -> str:
            async with http_client(served.url + "/mcp", None) as client:
                added = await client.call_tool("add_document", {"text": STORY, "name": "cape.txt"})
                return added.structured_content["id"]

        doc = anyio.run(main)
    local = pm.store.get_user("local")
    assert local is not None and [d.id for d in pm.store.user_documents(local.id)] == [doc]
    pm.close()


def test_mcp_at_slash_mcp_of_a_real_pagemind_serve(tmp_path: Path, llm: MockServer) -> None:
    import subprocess

    import httpx

    pytest.importorskip("uvicorn")
    from pagemind.store import Store
    from pagemind.users import create_user

    store = tmp_path / "serve.db"
    opened = Store(store)
    _, key = create_user(opened, "ann")
    opened.close()
    port = free_port()
    env = dict(os.environ, PAGEMIND_HOME=str(tmp_path / "home"), PAGEMIND_CONTEXT_WINDOW="8192")
    process = subprocess.Popen([sys.executable, "-m", "pagemind", "serve", "--port", str(port), "--store", str(store),
                                "--llm", "openai:mock", "--base-url", llm.url], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(base + "/v1/health", process, what="pagemind serve")
        refused = httpx.post(base + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                             headers={"Accept": "application/json, text/event-stream"})
        if refused.status_code == 404:
            pytest.skip("this pagemind serve does not mount /mcp")
        assert refused.status_code == 401

        async def main() -> None:
            async with http_client(base + "/mcp", key) as client:
                await check_tools(client, paths=False)
                await document_ask_trace(client, text=STORY)

        anyio.run(main)
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_mcp_turns_wait_in_the_agents_line_with_its_http_messages(tmp_path: Path) -> None:
    """In pagemind serve, an MCP send_message is a turn in the agent's line like an HTTP message: the agent reads
    busy with the MCP turn's run, a no-wait HTTP send is refused naming it, and turns run in arrival order."""
    import httpx

    from pagemind.users import create_user

    with MockServer(text=Replies(), latency=0.15) as llm:
        app, pm = served_app(tmp_path, llm, "keys")
        user, key = create_user(pm.store, "ann")
        auth = {"Authorization": f"Bearer {key}"}
        with Served(app) as served:
            made = httpx.post(served.url + "/v1/agents", headers=auth,
                              json={"name": "sam", "options": {"tool_calling": "json", "embedder": "none"}})
            assert made.status_code == 201, made.text
            agent_url = f"{served.url}/v1/agents/{made.json()['id']}"

            def get(path: str = "") -> dict[str, Any]:
                return httpx.get(agent_url + path, headers=auth).json()

            def queued(message: str) -> bool:
                return any(r.request.get("message") == message for r in pm.runs.list(user.id, kind="turn"))

            async def until(check: Any) -> None:
                deadline = time.monotonic() + 30
                while not await anyio.to_thread.run_sync(check):
                    assert time.monotonic() < deadline
                    await anyio.sleep(0.02)

            async def main() -> dict[str, Any]:
                said: dict[str, Any] = {}
                async with http_client(served.url + "/mcp", key) as client, anyio.create_task_group() as tasks:
                    async def mcp_send(message: str) -> None:
                        sent = await client.call_tool("send_message", {"agent": "sam", "message": message})
                        assert not sent.is_error, text(sent)
                        said[message] = sent.structured_content

                    def http_send(message: str) -> None:
                        said[message] = httpx.post(agent_url + "/messages", headers=auth, json={"message": message},
                                                   timeout=60).json()

                    tasks.start_soon(mcp_send, "first")
                    await until(lambda: get()["busy"])
                    running = get()["running_run"]
                    refused = await anyio.to_thread.run_sync(lambda: httpx.post(
                        agent_url + "/messages?wait=false", headers=auth, json={"message": "not now"}))
                    assert refused.status_code == 409 and refused.json()["run_id"] == running
                    tasks.start_soon(anyio.to_thread.run_sync, http_send, "second")
                    await until(lambda: queued("second"))
                    tasks.start_soon(mcp_send, "third")
                return said, running

            said, running = anyio.run(main)
        assert said["first"]["run_id"] == running
        turns = sorted(pm.runs.list(user.id, kind="turn"), key=lambda r: r.started)
        assert [r.request["message"] for r in turns] == ["first", "second", "third"]
        assert all(r.status == "done" for r in turns)
        assert all(a.finished <= b.started for a, b in itertools.pairwise(turns))  # one at a time
        assert [said[m]["messages"] for m in ("first", "second", "third")] == [
            ["Noted, Ada it is (1)."], ["Noted, Ada it is (2)."], ["Noted, Ada it is (3)."]]
        pm.close()


# --- the same checks as the HTTP API, with clean errors -------------------------------------------------------
def test_mcp_refuses_what_http_refuses_with_the_reason(tmp_path: Path) -> None:
    """Issue 21: MCP ran an empty question and an empty message, and said "Error executing tool ask" without the
    reason for 11 options; its errors carried pydantic's links. The tools now parse into the HTTP API's shapes."""
    from pagemind import Pagemind, ScriptedLLM
    from pagemind.server.mcp import build_server
    from pagemind.server.service import Service

    fake = ScriptedLLM(by_role={"answer": "Answer: Wren", "agent-step": step("send_message", message="hi")})
    with Pagemind(fake, store=tmp_path / "m.db") as pm:
        service = Service(pm, auth="none")
        server = build_server(service, lambda ctx: service.local)

        async def go() -> None:
            async with Client(server) as client:
                doc = (await client.call_tool("add_document", {"text": STORY, "name": "cape.txt"})).structured_content
                cases = [("ask", {"document_id": doc["id"], "question": "   "},
                          "question: Value error, must not be blank"),
                         ("ask", {"document_id": doc["id"], "question": "Which?",
                                  "options": [f"o{i}" for i in range(11)]}, "options: List should have at most 10"),
                         ("create_agent", {"name": "sam", "options": {"max_steps": "many"}}, "max_steps"),
                         ("search_recall", {"agent": "sam", "query": "x", "page": 10**30}, "page")]
                for tool, arguments, reason in cases:
                    refused = await client.call_tool(tool, arguments)
                    assert refused.is_error and reason in text(refused), (tool, text(refused))
                    assert "errors.pydantic.dev" not in text(refused), text(refused)
                assert (await client.call_tool("create_agent", {"name": "sam", "options": {"embedder": "none"}})
                        ).is_error is False
                empty = await client.call_tool("send_message", {"agent": "sam", "message": ""})
                assert empty.is_error and "message" in text(empty)
                assert fake.history == []  # nothing reached the model
                assert pm.runs.list(service.local.id) == []

        try:
            anyio.run(go)
        finally:
            service.close()


def test_mcp_resources_and_the_ask_prompt_are_listed_and_read_as_the_key_user(tmp_path: Path, llm: MockServer) -> None:
    """Resource templates for a user's documents, libraries and agents' core memory, read as the request's user
    (another user's is not found), and the ask-with-citations prompt, through the SDK's client over HTTP."""
    from pagemind.users import create_user

    app, pm = served_app(tmp_path, llm, "keys")
    ann_row, ann = create_user(pm.store, "ann")
    _, bob = create_user(pm.store, "bob")
    doc = pm.add_document(STORY, "cape.txt", user_id=ann_row.id)
    pm.add("shelf", [pm.read(STORY, "cape.txt")], user_id=ann_row.id)
    pm.create_agent(f"u{ann_row.id}.sam", user_id=ann_row.id, display_name="sam", human="Name: Ann",
                    options={"embedder": "none"})
    with Served(app) as served:
        url = served.url + "/mcp"

        async def check() -> None:
            async with http_client(url, ann) as client:
                templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
                assert templates == {"pagemind://documents/{document_id}", "pagemind://libraries/{name}",
                                     "pagemind://agents/{agent}/core-memory"}
                read = await client.read_resource(f"pagemind://documents/{doc.id}")
                assert json.loads(read.contents[0].text)["name"] == "cape.txt"
                shelf = json.loads((await client.read_resource("pagemind://libraries/shelf")).contents[0].text)
                assert [d["name"] for d in shelf["documents"]] == ["cape.txt"]
                core = json.loads((await client.read_resource("pagemind://agents/sam/core-memory")).contents[0].text)
                assert {b["label"]: b["value"] for b in core["blocks"]}["human"] == "Name: Ann"
                prompts = {p.name: p for p in (await client.list_prompts()).prompts}
                assert "ask-with-citations" in prompts
                got = await client.get_prompt("ask-with-citations", {"question": "Who keeps the lamps?",
                                                                     "library": "shelf"})
                said = got.messages[0].content.text
                assert '"Who keeps the lamps?"' in said and 'library "shelf"' in said and "`ask`" in said
            async with http_client(url, bob) as client:
                for uri in (f"pagemind://documents/{doc.id}", "pagemind://libraries/shelf",
                            "pagemind://agents/sam/core-memory"):
                    with pytest.raises(Exception, match="no (document|library|agent)"):
                        await client.read_resource(uri)

        anyio.run(check)
    pm.close()
