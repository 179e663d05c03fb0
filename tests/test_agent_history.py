"""Core memory's history with the scripted fake: every write to a block is a version with its cause and time — the
agent's own functions, the Python API, a revert, an import — shown with diffs, reverted without losing anything,
carried by an Agent File; the one block rule holds on every path."""

import json
import threading

import pytest
from click.testing import CliRunner

from pagemind import LLM, Pagemind, ScriptedLLM, Store
from pagemind.agent import Agent, AgentOptions
from pagemind.cli.main import cli
from pagemind.errors import InputError, NotFound


def call(function, thoughts="thinking", **arguments):
    return json.dumps({"thoughts": thoughts, "function": function, "arguments": arguments})


def make(steps=(), store=None, name="sam"):
    fake = ScriptedLLM(by_role={"agent-step": list(steps), "summarise": "talked"})
    return Agent.create(LLM(fake), store or Store(":memory:"), name, human="Name: Lee",
                        options=AgentOptions(embedder="none")), fake


def test_every_write_is_a_version_with_its_cause_and_a_revert_loses_nothing():
    agent, _ = make([call("core_memory_append", label="human", content="Lives in York", request_heartbeat=True),
                     call("core_memory_replace", label="human", old_content="York", new_content="Leeds",
                          request_heartbeat=True),
                     call("send_message", message="noted")])
    agent.say("I moved from York to Leeds.")
    history = agent.block_history("human")
    assert [v.version for v in history] == [3, 2, 1]  # newest first
    assert [v.block.value for v in history] == ["Name: Lee\nLives in Leeds", "Name: Lee\nLives in York", "Name: Lee"]
    steps = [e.seq for e in agent.history(0, 100)[1] if e.kind == "step" and e.payload.get("function") in
             ("core_memory_append", "core_memory_replace")]
    assert [v.cause for v in history] == [f"step {steps[1]}: core_memory_replace",
                                          f"step {steps[0]}: core_memory_append", "create"]
    assert "-Lives in York" in history[0].diff(history[1]) and "+Lives in Leeds" in history[0].diff(history[1])
    assert history[0].time >= history[1].time >= history[2].time

    block, number = agent.revert_block("human", 2, cause="test")
    assert (block.value, number) == ("Name: Lee\nLives in York", 4)
    assert agent.blocks()[1].value == "Name: Lee\nLives in York"
    assert agent.block_history("human", limit=1)[0].cause == "revert to 2 (test)"
    assert [v.version for v in agent.block_history("human")] == [4, 3, 2, 1]  # nothing deleted
    agent.revert_block("human", 3)  # a revert is reverted like any write
    assert agent.blocks()[1].value == "Name: Lee\nLives in Leeds"
    assert [v.version for v in agent.block_history("human", before=3)] == [2, 1]  # paging back
    assert {v.block.label for v in agent.block_history()} == {"human", "persona"}
    with pytest.raises(NotFound, match="block 'human' has no version 9"):
        agent.revert_block("human", 9)


def test_a_revert_that_no_longer_fits_the_limit_is_refused_and_the_rule_holds_everywhere():
    agent, _ = make()
    agent.set_block("human", "x" * 1500, cause="test")
    agent.set_block("human", "short", limit=1000, cause="test")
    with pytest.raises(InputError, match="1,500 characters; the block's limit is now 1,000: raise the limit first"):
        agent.revert_block("human", 2)
    assert agent.blocks()[1].value == "short" and len(agent.block_history("human")) == 3  # nothing written
    agent.set_block("human", "short", limit=2000, cause="test")
    assert agent.revert_block("human", 2)[0].value == "x" * 1500
    with pytest.raises(InputError, match="exceed its limit"):  # the store's rule: any caller
        agent.store.put_block(agent.id, agent.blocks()[1].__class__("human", "y" * 3000, 2000), "test")
    with pytest.raises(InputError, match="a description is at most 2,000 characters"):
        agent.set_block("human", "ok", description="d" * 2001)


def test_descriptions_are_kept_by_the_agents_own_writes():
    agent, _ = make([call("core_memory_append", label="human", content="Likes tea", request_heartbeat=True),
                     call("send_message", message="ok")])
    agent.set_block("human", "Name: Lee", description="what the agent knows of its user", cause="test")
    agent.say("I like tea.")
    assert agent.blocks()[1].description == "what the agent knows of its user"
    assert agent.block_history("human", limit=1)[0].block.description == "what the agent knows of its user"


def test_two_writers_at_once_keep_both_versions_in_commit_order(tmp_path):
    store_path = tmp_path / "s.db"
    make(store=Store(store_path))
    errors = []

    def write(i):
        try:
            other = Agent.load(None, Store(store_path), "sam")
            other.set_block("human", f"writer {i}", cause=f"writer {i}")
        except Exception as err:
            errors.append(err)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    history = Agent.load(None, Store(store_path), "sam").block_history("human")
    assert [v.version for v in history] == [5, 4, 3, 2, 1]
    assert sorted(v.cause for v in history[:4]) == [f"writer {i}" for i in range(4)]
    assert Agent.load(None, Store(store_path), "sam").blocks()[1].value == history[0].block.value


def test_an_agent_file_carries_the_history_and_a_bad_one_is_refused(tmp_path):
    pm = Pagemind(ScriptedLLM(), store=tmp_path / "s.db")
    agent = pm.create_agent("sam", human="Name: Lee", options={"embedder": "none"})
    for i in range(3):
        agent.set_block("human", f"Name: Lee\nfact {i}", cause=f"edit {i}")
    exported = pm.export_agent("sam")
    pm.import_agent(exported, name="twin")
    twin = pm.agent("twin", llm=False)
    assert [(v.version, v.cause) for v in twin.block_history("human")] == [
        (4, "edit 2"), (3, "edit 1"), (2, "edit 0"), (1, "create")]  # the last version holds the block: no new one

    versions = exported["pagemind"]["agents"]["agent-0"]["block_versions"]
    first = next(v for v in versions if v["label"] == "human")
    many = [{**first, "version": n, "value": f"v{n}", "time": float(n)} for n in range(1, 10_001)]
    big = json.loads(json.dumps(exported))
    big["pagemind"]["agents"]["agent-0"]["block_versions"] = many + [v for v in versions if v["label"] == "persona"]
    pm.import_agent(big, name="many")
    crowd = pm.agent("many", llm=False)
    assert crowd.block_history("human", limit=2)[1].version == 10_000
    assert crowd.block_history("human", limit=1)[0].cause == "import"  # the block's value after its history
    last_human = max(i for i, v in enumerate(versions) if v["label"] == "human")  # human v4
    for label, bad, message in (("human", {"version": 3}, "numbered upwards from 1"),
                                ("nobody", {}, "which the file's blocks do not have"),
                                ("human", {"value": "z" * 3000}, "exceed its limit")):
        wrong = json.loads(json.dumps(exported))
        wrong["pagemind"]["agents"]["agent-0"]["block_versions"][last_human].update({"label": label, **bad})
        with pytest.raises(InputError, match=message):
            pm.import_agent(wrong, name="wrong")
    assert "wrong" not in [a.name for a in pm.store.list_agents()]  # nothing stored


def test_the_cli_logs_shows_and_reverts(tmp_path):
    store = tmp_path / "s.db"
    pm = Pagemind(ScriptedLLM(), store=store)
    agent = pm.create_agent("sam", human="Name: Lee", options={"embedder": "none"})
    agent.set_block("human", "Name: Lee\nLives in Leeds", cause="python")
    pm.close()
    run = CliRunner().invoke
    logged = run(cli, ["agent", "memory", "log", "sam", "human", "--store", str(store)])
    assert logged.exit_code == 0, logged.output
    assert logged.output.splitlines()[0].startswith("human v2") and "python" in logged.output
    assert "    +Lives in Leeds" in logged.output
    shown = run(cli, ["agent", "memory", "show", "sam", "human", "--at", "1", "--store", str(store)])
    assert shown.output == "Name: Lee\n"
    reverted = run(cli, ["agent", "memory", "revert", "sam", "human", "1", "--store", str(store)])
    assert reverted.exit_code == 0 and "as version 3" in reverted.output
    now = run(cli, ["agent", "memory", "show", "sam", "human", "--store", str(store)])
    assert now.output == "Name: Lee\n"
    missing = run(cli, ["agent", "memory", "log", "sam", "nothing", "--store", str(store)])
    assert missing.exit_code != 0 and "has no block 'nothing'" in missing.output
