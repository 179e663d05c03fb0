"""Agent Files (.af, issue 25): a pagemind agent exported and imported back is the same agent (blocks, options,
every event with its kind, payload, time and in-context flag, archival passages); Letta's published files import
(double-encoded JSON, tool calls and returns as steps and results, the system prompt as the agent's own
instructions); what has no counterpart is refused by name before anything is stored, or left out on request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pagemind import Pagemind, ScriptedLLM
from pagemind.agent.agentfile import Unsupported, plan_import, read_agent_file
from pagemind.errors import InputError

DATA = Path(__file__).parent / "data" / "agentfiles"


def scripted_agent() -> ScriptedLLM:
    """Saves a fact with core_memory_append (a heartbeat), then answers; every other turn just answers."""
    calls = {"n": 0}

    def step(request):
        calls["n"] += 1
        if calls["n"] == 1:
            return json.dumps({"thoughts": "worth keeping", "function": "core_memory_append",
                               "arguments": {"label": "human", "content": "Likes tea.", "request_heartbeat": True}})
        return json.dumps({"thoughts": "answer", "function": "send_message", "arguments": {"message": "Noted."}})

    return ScriptedLLM(by_role={"agent-step": step})


def events_of(agent):
    _, events = agent.history(0, 10**6)
    return [(e.kind, e.payload, e.time, e.seq, e.in_context) for e in events]


def test_a_pagemind_agent_round_trips_losslessly(tmp_path):
    pm = Pagemind(scripted_agent(), store=tmp_path / "s.db")
    pm.create_agent("sam", human="Name: Ann", options={"embedder": "none", "tool_calling": "json", "max_steps": 5})
    turn = pm.send("sam", "I like tea, remember that.")
    assert turn.messages == ["Noted."] and [s.function for s in turn.steps] == ["core_memory_append", "send_message"]
    sam = pm.agent("sam", llm=False)
    sam.archive.insert(["The map is under the third stair.", "Wren keeps the ledger."], sam.now(),
                       ["where the map is", None], "api")
    sam.notify("A document was loaded.")

    exported = pm.export_agent("sam", model="m-1")
    text = json.dumps(exported)
    assert {"agents", "groups", "blocks", "files", "sources", "tools", "mcp_servers", "metadata",
            "created_at"} <= set(exported)
    agent = exported["agents"][0]
    # Letta's readers see the history in its shapes: the call with its arguments, the tool's return after it
    roles = [m["role"] for m in agent["messages"]]
    assert roles[0] == "system" and "assistant" in roles and "tool" in roles
    call = next(m for m in agent["messages"] if m["tool_calls"] and
                m["tool_calls"][0]["function"]["name"] == "core_memory_append")
    assert json.loads(call["tool_calls"][0]["function"]["arguments"])["content"] == "Likes tea."
    result = agent["messages"][agent["messages"].index(call) + 1]
    assert result["role"] == "tool" and result["tool_call_id"] == call["tool_calls"][0]["id"]
    assert [b["label"] for b in exported["blocks"]] == ["persona", "human"]
    assert exported["blocks"][1]["value"] == "Name: Ann\nLikes tea."
    assert {t["name"] for t in exported["tools"]} >= {"send_message", "archival_memory_search"}
    assert all(t["source_code"] is None for t in exported["tools"])
    assert agent["llm_config"]["model"] == "m-1"

    pm.import_agent(text, name="sam2")  # as a string, as read from a file
    twin = pm.agent("sam2", llm=False)
    assert events_of(twin) == events_of(sam)
    assert twin.blocks() == sam.blocks() and twin.options == sam.options
    assert twin.state.__dict__ == sam.state.__dict__
    strip = [(p.text, p.time, p.summary, p.source) for p in sam.passages()[1]]
    assert [(p.text, p.time, p.summary, p.source) for p in twin.passages()[1]] == strip and len(strip) == 2
    # and the twin goes on talking where the original stopped
    assert pm.send("sam2", "Hello again").messages == ["Noted."]
    assert pm.export_agent("sam2")["agents"][0]["messages"][1:-3] == exported["agents"][0]["messages"][1:]


def test_a_published_letta_example_imports(tmp_path):
    raw = (DATA / "memgpt_agent.af").read_bytes()
    assert raw.startswith(b'"{')  # the repository's examples are JSON encoded twice
    pm = Pagemind(scripted_agent(), store=tmp_path / "s.db")
    plans = pm.import_agent(raw)
    assert [p.name for p in plans] == ["memgpt_agent"] and plans[0].dropped == ()
    sam = pm.agent("memgpt_agent", llm=False)
    blocks = {b.label: b for b in sam.blocks()}
    assert "First name: Chad" in blocks["human"].value and "I am Sam." in blocks["persona"].value
    assert blocks["human"].limit == 20000  # Letta's limits are kept per block
    assert sam.options.system.startswith("<base_instructions>\nYou are a helpful self-improving agent")
    assert blocks["human"].description.startswith("The human block")  # descriptions are kept
    assert pm.export_agent("memgpt_agent")["blocks"][0]["description"] == blocks[
        pm.export_agent("memgpt_agent")["blocks"][0]["label"]].description
    assert [(v.version, v.cause) for v in sam.block_history("human")] == [(1, "import")]
    # its system prompt is the agent's own instructions; pagemind's step format, functions and memory follow
    live = pm.agent("memgpt_agent")
    system = live.main_context().system_text(live.blocks())
    assert system.startswith("<base_instructions>") and "Functions:" in system and "First name: Chad" in system
    assert pm.send(live, "Hi, it's Chad.").messages == ["Noted."]


def test_letta_tool_calls_become_steps_and_unsupported_features_are_named(tmp_path):
    raw = (DATA / "loop.af").read_bytes()
    with pytest.raises(Unsupported) as refused:
        plan_import(raw)
    named = str(refused.value)
    for feature in ("tool 'web_search'", "tool 'fetch_webpage'", "tool 'memory_rethink'", "tool 'note' (its source "
                    "code would run"):
        assert feature in named
    pm = Pagemind(scripted_agent(), store=tmp_path / "s.db")
    with pytest.raises(Unsupported):
        pm.import_agent(raw)
    assert pm.store.list_agents() == []  # refused before anything was stored

    plans = pm.import_agent(raw, skip_unsupported=True)
    assert any("'note'" in d for d in plans[0].dropped)
    loop = pm.agent("Loop", llm=False)
    assert len(loop.blocks()) == 9 and loop.options.system.startswith("You are Loop.")
    kinds = [(e.kind, e.payload.get("function"), e.in_context) for e in loop.history(0, 100)[1]]
    assert kinds == [("step", "send_message", True), ("function_result", "send_message", True)]
    step = loop.history(0, 1)[1][0]
    assert step.payload["arguments"]["message"].startswith("I'm Loop.") and step.time == "2026-01-22 02:06:34"


def test_files_that_are_not_agent_files_are_refused_clearly(tmp_path):
    for bad, why in ((b"\xff\xfe\x00", "not UTF-8"), (b"{nope", "not JSON"), (b'{"agents": []}', "non-empty"),
                     (b"[1, 2]", "non-empty"), (b'"just a string"', "not JSON")):
        with pytest.raises(InputError, match=why):
            read_agent_file(bad)
    doc = read_agent_file((DATA / "memgpt_agent.af").read_bytes())
    doc["groups"] = [{"id": "group-0", "manager_type": "sleeptime", "agent_ids": ["agent-0"]}]
    doc["mcp_servers"] = [{"server_name": "github"}]
    with pytest.raises(Unsupported, match=r"multi-agent groups \(1: sleeptime\).*MCP servers \('github'\)"):
        plan_import(doc)
    doc = read_agent_file((DATA / "memgpt_agent.af").read_bytes())
    doc["blocks"][0]["label"] = "Human Notes"
    with pytest.raises(InputError, match="block label 'Human Notes'"):
        plan_import(doc)
    pm = Pagemind(scripted_agent(), store=tmp_path / "s.db")
    pm.import_agent((DATA / "memgpt_agent.af").read_bytes())
    with pytest.raises(Exception, match="already exists"):
        pm.import_agent((DATA / "memgpt_agent.af").read_bytes())


def test_malformed_agent_files_are_input_errors_before_anything_is_stored(tmp_path):
    """Issue 49: the fields of a pagemind export typed on import (an event's kind, payload and time; a passage's
    time; the state), a Letta file held to create's limits (blocks, message length), and a file's JSON shape checked
    before it is parsed (depth, values; also inside a double-encoded file) — each an InputError naming the fault."""
    pm = Pagemind(scripted_agent(), store=tmp_path / "s.db")
    pm.create_agent("sam", options={"embedder": "none", "tool_calling": "json", "max_steps": 5})
    pm.send("sam", "I like tea, remember that.")
    pm.agent("sam", llm=False).archive.insert(["The map is under the stair."], "2024-01-01 10:00:00", [None], "api")
    good = pm.export_agent("sam")
    assert plan_import(good, name="sam-copy")  # the export itself imports

    def broken(change):
        doc = json.loads(json.dumps(good))
        change(doc["agents"][0], doc["pagemind"]["agents"][doc["agents"][0]["id"]])
        return doc

    def event(agent, kind):
        return next(m["pagemind"] for m in agent["messages"] if m["pagemind"]["kind"] == kind)

    cases = [
        (lambda a, mine: event(a, "user_message").update(time=2 ** 70), "time .* is not YYYY-MM-DD"),
        (lambda a, mine: event(a, "user_message").update(payload={}), "user_message event's message is NoneType"),
        (lambda a, mine: event(a, "user_message").update(payload="hello"), "payload is str, not an object"),
        (lambda a, mine: event(a, "function_result").update(payload=[1]), "payload is list, not an object"),
        (lambda a, mine: event(a, "step")["payload"].update(arguments="x"), "step event's arguments is str"),
        (lambda a, mine: mine["passages"][0].update(time=2 ** 70), "a passage's time"),
        (lambda a, mine: mine.update(state={"evictions": "many"}), "state holds a field of the wrong type"),
        (lambda a, mine: event(a, "step").update(kind="dream"), "an event of kind 'dream'"),
    ]
    for change, why in cases:
        with pytest.raises(InputError, match=why):
            pm.import_agent(broken(change), name="sam-bad")
    assert [a.name for a in pm.store.list_agents()] == ["sam"]  # nothing stored

    letta = read_agent_file((DATA / "memgpt_agent.af").read_bytes())
    many = json.loads(json.dumps(letta))
    many["agents"][0]["memory_blocks"] = [{"label": f"b{i}", "value": "x"} for i in range(65)]
    many["agents"][0]["block_ids"] = []
    with pytest.raises(InputError, match="65 blocks; an agent has at most 64"):
        plan_import(many)
    long = json.loads(json.dumps(letta))
    long["agents"][0]["messages"].append({"role": "user", "content": "w" * 100_001, "id": "message-x"})
    with pytest.raises(InputError, match="message"):
        plan_import(long)
    deep = b'{"agents": [' + b"[" * 200 + b"]" * 200 + b"]}"
    with pytest.raises(InputError, match="nested over 64 levels"):
        read_agent_file(deep)
    with pytest.raises(InputError, match="nested over 64 levels"):  # the same file encoded once more as a string
        read_agent_file(json.dumps(deep.decode()).encode())
    wide = ("[" + ",".join(["1"] * 1_000_001) + "]").encode()
    with pytest.raises(InputError, match="over 1,000,000 values"):
        read_agent_file(b'{"agents": [' + wide + b"]}")
