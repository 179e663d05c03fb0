"""MemGPT agents in the store: isolation, restart continuity, crash recovery, serialised turns, documents."""

import json
import multiprocessing
import os
import time
from typing import ClassVar

import pytest

from helpers import first_words_gist, make_text, middle_label
from pagemind import LLM, Document, ScriptedLLM, Store
from pagemind.agent import (
    Agent,
    AgentBusy,
    AgentExists,
    AgentNotFound,
    AgentOptions,
    AgentStore,
    load_into_agent,
    passages,
)

# replies are sent as scripted: no search-again hold, no reply from recall before the agent's own steps
OPTS = AgentOptions(embedder="none", search_again=0, recall_answer=False)


def call(function, thoughts="thinking", **arguments):
    return json.dumps({"thoughts": thoughts, "function": function, "arguments": arguments})


def llm(*steps, **roles):
    return LLM(ScriptedLLM(by_role={"agent-step": list(steps), **roles}))


def test_agents_never_see_each_other():
    store = Store(":memory:")
    alice = Agent.create(llm(call("core_memory_append", label="human", content="Alice, allergic to nuts",
                                  request_heartbeat=True),
                             call("archival_memory_insert", content="Alice's passport number is X123",
                                  request_heartbeat=True),
                             call("send_message", message="noted")), store, "alice", options=OPTS)
    bob_llm = llm(call("archival_memory_search", query="passport", page=0, request_heartbeat=True),
                  call("conversation_search", query="nuts", page=0, request_heartbeat=True),
                  call("send_message", message="I don't know"))
    bob = Agent.create(bob_llm, store, "bob", options=OPTS)
    alice.say("I'm Alice and I'm allergic to nuts.")
    turn = bob.say("What is Alice's passport number? Does she like nuts?")
    assert turn.steps[0].result == "No results found."
    assert turn.steps[1].result == "No results found."  # not alice's message, nor bob's own question
    assert bob.blocks()[1].value == "" and alice.blocks()[1].value.startswith("Alice")
    assert all("Alice, allergic" not in m.content for r in bob_llm.backend.history for m in r.messages)
    assert alice.counts()["archival"] == 1 and bob.counts()["archival"] == 0
    with pytest.raises(AgentExists):
        Agent.create(None, store, "alice")
    AgentStore(store).delete_agent("alice")
    assert store.count_agent_events(alice.id) == 0 and store.count_agent_passages(alice.id) == 0
    with pytest.raises(AgentNotFound):
        Agent.load(None, store, "alice")


def test_a_conversation_continues_after_a_restart(tmp_path):
    path = tmp_path / "pm.db"
    with_store = Store(path)
    first = Agent.create(llm(call("core_memory_append", label="human", content="Name: Chad", request_heartbeat=True),
                             call("send_message", message="Hi Chad")), with_store, "sam", options=OPTS)
    first.say("I'm Chad, it's my birthday")
    with_store.close()

    reopened = Store(path)
    fake = ScriptedLLM(by_role={"agent-step": call("send_message", message="Happy birthday again, Chad!")})
    agent = Agent.load(LLM(fake), reopened, "sam")
    turn = agent.say("Do you remember me?")
    prompt = fake.history[0]
    assert "Name: Chad" in prompt.messages[0].content  # core memory survived
    assert "it's my birthday" in " ".join(m.content for m in prompt.messages)  # so did the queue
    assert turn.messages == ["Happy birthday again, Chad!"]
    assert agent.counts()["recall"] == 3 + 6 + 3  # boot + first turn + this turn


def _crash_in_child(path):
    """A process that dies (no cleanup at all) in the middle of running a function."""
    from pagemind.agent import functions

    def die(self, label, content):
        os._exit(3)

    functions.Toolbox.core_memory_append = die
    agent = Agent.load(llm(call("core_memory_append", label="human", content="x", request_heartbeat=True)),
                       Store(path), "sam")
    agent.say("remember x")


def test_a_crash_mid_step_leaves_no_orphaned_call_and_no_stuck_lock(tmp_path):
    path = tmp_path / "pm.db"
    store = Store(path)
    Agent.create(None, store, "sam", options=OPTS)
    child = multiprocessing.get_context("fork").Process(target=_crash_in_child, args=(str(path),))
    child.start()
    child.join(60)
    assert child.exitcode == 3
    astore = AgentStore(store)
    agent_id = astore.get_agent("sam").id
    assert store.lease_holder(f"agent:{agent_id}").pid == child.pid  # the dead process still "holds" the lock
    assert astore.queue(agent_id)[-1].is_call  # and its call has no result

    fake = ScriptedLLM(by_role={"agent-step": call("send_message", message="I'm back")})
    agent = Agent.load(LLM(fake), store, "sam", lock_timeout=5)
    started = time.monotonic()
    turn = agent.say("hello?")
    assert time.monotonic() - started < 5 and turn.messages == ["I'm back"]
    queue = astore.queue(agent_id)
    call_at = max(i for i, e in enumerate(queue) if e.is_call and e.payload["function"] == "core_memory_append")
    assert queue[call_at + 1].kind == "function_result" and queue[call_at + 1].payload["status"] == "Failed"
    assert "interrupted" in queue[call_at + 1].payload["message"]
    assert agent.blocks()[1].value == ""  # the half-run function changed nothing
    assert store.lease_holder(f"agent:{agent_id}") is None


def _talk(path, tag, results):
    def slow(request):
        time.sleep(0.3)
        return call("send_message", message=f"reply to {tag}")

    agent = Agent.load(LLM(ScriptedLLM(by_role={"agent-step": slow})), Store(path), "shared")
    for i in range(2):
        agent.say(f"{tag} message {i}")
    results.put(tag)


def test_two_processes_talking_to_one_agent_are_serialised(tmp_path):
    path = tmp_path / "pm.db"
    Agent.create(None, Store(path), "shared", options=OPTS)
    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()
    procs = [ctx.Process(target=_talk, args=(str(path), tag, results)) for tag in ("A", "B")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert sorted(results.get(timeout=5) for _ in procs) == ["A", "B"]
    store = AgentStore(Store(path))
    history = [e for e in store.history(store.get_agent("shared").id, 100) if e.kind in ("user_message", "step")]
    turns = [(history[i].search_text(), history[i + 1].search_text()) for i in range(1, len(history), 2)]
    assert len(turns) == 4
    for said, answered in turns:  # every user message is answered before the next one starts
        assert answered.endswith(f"reply to {said[0]}")


def test_a_live_holder_makes_others_wait_then_give_up():
    store = Store(":memory:")
    agent = Agent.create(llm(call("send_message", message="hi")), store, "busy", options=OPTS, lock_timeout=0.3)
    other = Agent.load(None, store, "busy", lock_timeout=0.3)
    with other.lock.held(), pytest.raises(AgentBusy, match="busy"):
        agent.say("hello")
    assert agent.say("hello").messages == ["hi"]


def test_documents_go_into_archival_storage_in_passages(tmp_path):
    text = make_text(30, 60)  # 1800 words
    chunks = passages(text, 300)
    assert all(len(c.split()) <= 300 for c in chunks) and " ".join(chunks).split() == text.split()
    fake = ScriptedLLM(by_role={"agent-step": [
        call("archival_memory_search", query="p17w3", page=0, request_heartbeat=True),
        call("send_message", message="found it")]})
    agent = Agent.create(LLM(fake), Store(":memory:"), "reader", options=OPTS)
    loaded = load_into_agent(agent, Document.from_text(text, name="book.txt"))
    assert loaded.passages == len(chunks) == agent.counts()["archival"]
    turn = agent.say("What comes after p17w2?")
    assert "p17w3" in turn.steps[0].result and "Showing 1 of 1" in turn.steps[0].result
    assert "uploaded the document 'book.txt'" in fake.history[0].messages[-1].content


def test_documents_with_readagent_gists_as_summaries():
    fake = ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist})
    agent = Agent.create(LLM(fake), Store(":memory:"), "gister", options=OPTS)
    loaded = load_into_agent(agent, Document.from_text(make_text(30, 60)), gists=True)
    assert loaded.gists and loaded.passages >= 3
    result = agent.archive.search("p0w0", 0).render()
    assert "(gist: p0w0 p1w0" in result


def test_a_document_loaded_into_a_second_agent_is_not_embedded_again():
    from pagemind.retrieval import HashingEmbedder

    class Counting(HashingEmbedder):
        texts: ClassVar[list] = []

        def embed(self, texts):
            Counting.texts.extend(texts)
            return super().embed(texts)

    store = Store(":memory:")
    doc = Document.from_text(make_text(12, 60), name="book.txt")
    for name in ("one", "two"):
        agent = Agent.create(None, store, name, options=AgentOptions(embedder="hashing"))
        agent.archive._embedder = Counting()
        load_into_agent(agent, doc)
        if name == "one":
            first = len(Counting.texts)
    assert first > 0 and len(Counting.texts) == first  # the second agent's passages came from the cache
    assert agent.archive.search("p5w7", 0).total >= 1
