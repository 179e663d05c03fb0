"""Letta's REST API on ``pagemind serve`` (issue 25), with the real ``letta-client`` SDK against the real app on
127.0.0.1 (the scripted fake as the model): agents, core-memory blocks, archival memory, messages sync and
streaming in Letta's shapes, the history listed page by page, export and import of Agent Files, another user's
agent not found, and what has no counterpart refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
letta_client = pytest.importorskip("letta_client")

from pagemind import Pagemind, ScriptedLLM  # noqa: E402
from pagemind import users as users_api  # noqa: E402
from pagemind.server.app import create_app  # noqa: E402
from test_mcp import Served  # noqa: E402

DATA = Path(__file__).parent / "data" / "agentfiles"


def agent_step(request):
    """A message that mentions tea is saved to core memory first (a chained call), every message is answered."""
    said = [m.content for m in request.messages if m.role == "user"][-1]
    if '"type": "user_message"' in said and "tea" in said.rsplit('"type": "user_message"', 1)[1]:
        return json.dumps({"thoughts": "worth keeping", "function": "core_memory_append",
                           "arguments": {"label": "human", "content": "Likes tea.", "request_heartbeat": True}})
    return json.dumps({"thoughts": "answering", "function": "send_message",
                       "arguments": {"message": "Noted, thank you."}})


@pytest.fixture
def served(tmp_path):
    pm = Pagemind(ScriptedLLM(by_role={"agent-step": agent_step}), store=tmp_path / "s.db")
    ann = users_api.create_user(pm.store, "ann")
    bob = users_api.create_user(pm.store, "bob")
    with Served(create_app(pm, auth="keys", keepalive=1.0, workers=4)) as server:
        base = f"{server.url}/letta"
        yield {"pm": pm, "base": base, "ann_key": ann[1],
               "ann": letta_client.Letta(base_url=base, api_key=ann[1], max_retries=0),
               "bob": letta_client.Letta(base_url=base, api_key=bob[1], max_retries=0), "ann_id": ann[0].id}
    pm.close()


def test_a_letta_client_program_runs_against_pagemind(served):
    client, pm = served["ann"], served["pm"]
    assert client.health().status == "ok"
    agent = client.agents.create(name="sam", model="openai/gpt-4o-mini", embedding="openai/text-embedding-3-small",
                                 memory_blocks=[{"label": "human", "value": "Name: Ann", "limit": 5000},
                                                {"label": "persona", "value": "I am Sam, a careful assistant."}])
    assert agent.id.startswith("agent-") and agent.name == "sam"
    assert {(b.label, b.value, b.limit) for b in agent.memory.blocks} == {
        ("human", "Name: Ann", 5000), ("persona", "I am Sam, a careful assistant.", 2000)}
    assert {t.name for t in agent.tools} >= {"send_message", "core_memory_append", "archival_memory_search"}
    # the same agent is one of the user's agents on pagemind's own surfaces
    assert [row.name for row in pm.agents(served["ann_id"])] == [f"u{served['ann_id']}.sam"]

    reply = client.agents.messages.create(agent_id=agent.id, messages=[{"role": "user", "content": "I like tea."}])
    kinds = [m.message_type for m in reply.messages]
    assert kinds == ["reasoning_message", "tool_call_message", "tool_return_message", "reasoning_message",
                     "assistant_message"]
    call, result = reply.messages[1], reply.messages[2]
    assert call.tool_call.name == "core_memory_append" and json.loads(call.tool_call.arguments)["content"] == \
        "Likes tea."
    assert result.tool_call_id == call.tool_call.tool_call_id and result.status == "success"
    assert reply.messages[-1].content == "Noted, thank you."
    assert reply.stop_reason.stop_reason == "end_turn"
    assert reply.usage.step_count == 2 and reply.usage.total_tokens == reply.usage.prompt_tokens + \
        reply.usage.completion_tokens > 0
    run = pm.runs.get(reply.usage.run_ids[0], served["ann_id"])  # a recorded run, as every turn
    assert run.kind == "turn" and run.status == "done"
    assert client.agents.blocks.retrieve("human", agent_id=agent.id).value == "Name: Ann\nLikes tea."

    streamed = list(client.agents.messages.create(agent_id=agent.id, streaming=True,
                                                  messages=[{"role": "user", "content": "How are you?"}]))
    assert [c.message_type for c in streamed] == ["reasoning_message", "assistant_message", "stop_reason",
                                                  "usage_statistics"]
    assert streamed[1].content == "Noted, thank you." and streamed[-1].step_count == 1
    only = client.agents.messages.create(agent_id=agent.id, include_return_message_types=["assistant_message"],
                                         messages=[{"role": "user", "content": [{"type": "text", "text": "Bye"}]}])
    assert [m.message_type for m in only.messages] == ["assistant_message"]

    # the whole history, newest first, page by page (the SDK follows the cursors)
    history = list(client.agents.messages.list(agent_id=agent.id, limit=2))
    users = [m.content for m in history if m.message_type == "user_message"]
    assert users == ["Bye", "How are you?", "I like tea."]
    ids = [int(m.id.split("-")[1]) for m in history]
    assert ids == sorted(ids, reverse=True) and ids[-1] == 1
    oldest = list(client.agents.messages.list(agent_id=agent.id, order="asc", limit=500))
    asc = [int(m.id.split("-")[1]) for m in oldest]
    assert asc == sorted(asc) and sorted(asc) == sorted(ids)  # the same messages, oldest first

    updated = client.agents.blocks.update("persona", agent_id=agent.id, value="I am Sam.")
    assert updated.value == "I am Sam." and [b.label for b in client.agents.blocks.list(agent_id=agent.id)] == \
        ["persona", "human"]
    passage = client.agents.passages.create(agent_id=agent.id, text="The map is under the third stair.")[0]
    client.agents.passages.create(agent_id=agent.id, text="Wren keeps the ledger.")
    found = client.agents.passages.search(agent_id=agent.id, query="map stair")
    assert found.count >= 1 and found.results[0].content == "The map is under the third stair."
    assert next(p.text for p in client.agents.passages.list(agent_id=agent.id)) == passage.text

    changed = client.agents.update(agent.id, system="You are Sam. Answer in one sentence.")
    assert changed.system == "You are Sam. Answer in one sentence."
    assert pm.agent(f"u{served['ann_id']}.sam", llm=False).options.system == changed.system


def test_export_and_import_through_letta_client(served):
    client = served["ann"]
    agent = client.agents.create(name="sam", memory_blocks=[{"label": "human", "value": "Name: Ann"}])
    client.agents.messages.create(agent_id=agent.id, messages=[{"role": "user", "content": "I like tea."}])
    client.agents.passages.create(agent_id=agent.id, text="The map is under the third stair.")
    exported = client.agents.export_file(agent.id)
    doc = json.loads(exported)
    assert doc["agents"][0]["name"] == "sam" and doc["pagemind"]["agents"]["agent-0"]["passages"][0]["text"] == \
        "The map is under the third stair."

    made = client.agents.import_file(file=("sam.af", exported.encode()), name="sam-copy")
    twin = client.agents.retrieve(made.agent_ids[0])
    assert twin.name == "sam-copy" and {b.value for b in twin.memory.blocks} == {b.value for b in
                                                                                 client.agents.retrieve(agent.id)
                                                                                 .memory.blocks}
    mine = [(m.message_type, getattr(m, "content", None)) for m in client.agents.messages.list(agent_id=agent.id)]
    copy = [(m.message_type, getattr(m, "content", None)) for m in client.agents.messages.list(agent_id=twin.id)]
    assert copy == mine
    assert [p.text for p in client.agents.passages.list(agent_id=twin.id)] == ["The map is under the third stair."]

    published = client.agents.import_file(file=("memgpt_agent.af", (DATA / "memgpt_agent.af").read_bytes()))
    chad = client.agents.retrieve(published.agent_ids[0])
    assert chad.name == "memgpt_agent" and chad.system.startswith("<base_instructions>")
    assert "First name: Chad" in client.agents.blocks.retrieve("human", agent_id=chad.id).value
    said = client.agents.messages.create(agent_id=chad.id, messages=[{"role": "user", "content": "Hi"}])
    assert said.messages[-1].content == "Noted, thank you."

    loop = (DATA / "loop.af").read_bytes()
    with pytest.raises(letta_client.UnprocessableEntityError, match="tool 'note'"):
        client.agents.import_file(file=("loop.af", loop))
    again = client.agents.retrieve(client.agents.import_file(file=("sam.af", exported.encode())).agent_ids[0])
    assert again.name == "sam-2" and again.id not in (agent.id, twin.id)  # as Letta: an import is a new agent
    client.agents.delete(again.id)
    assert {a.name for a in client.agents.list()} == {"sam", "sam-copy", "memgpt_agent"}
    kept = client.agents.import_file(file=("loop.af", loop), extra_query={"skip_unsupported": True})
    assert any("'note'" in d for d in kept.model_extra["pagemind"]["dropped"])
    assert client.agents.retrieve(kept.agent_ids[0]).name == "Loop"
    assert [a.name for a in client.agents.list(name="Loop")] == ["Loop"]


def test_another_users_agent_is_not_found_and_unsupported_requests_are_named(served):
    ann, bob = served["ann"], served["bob"]
    agent = ann.agents.create(name="sam")
    with pytest.raises(letta_client.NotFoundError):
        bob.agents.retrieve(agent.id)
    with pytest.raises(letta_client.NotFoundError):
        bob.agents.messages.create(agent_id=agent.id, messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(letta_client.NotFoundError):
        bob.agents.export_file(agent.id)
    assert list(bob.agents.list()) == []
    with pytest.raises(letta_client.AuthenticationError):
        letta_client.Letta(base_url=str(ann.base_url), api_key="wrong", max_retries=0).agents.list()

    for call, named in (
            (lambda: ann.agents.messages.create(agent_id=agent.id, messages=[{"role": "user", "content": "x"}],
                                                client_tools=[{"name": "lookup"}]), "client_tools"),
            (lambda: ann.agents.messages.create(agent_id=agent.id, messages=[{"role": "user", "content": "x"}],
                                                override_model="openai/gpt-5"), "override_model"),
            (lambda: ann.agents.passages.create(agent_id=agent.id, text="t", tags=["a"]), "passage tags"),
            (lambda: ann.agents.blocks.update("human", agent_id=agent.id, value="v", read_only=True),
             "block field 'read_only'")):
        with pytest.raises(letta_client.UnprocessableEntityError, match=named):
            call()
    with pytest.raises(letta_client.APIStatusError, match="messages/cancel is not part of pagemind's Letta") as err:
        ann.agents.messages.cancel(agent_id=agent.id)
    assert err.value.status_code == 501
    with pytest.raises(letta_client.ConflictError):
        ann.agents.create(name="sam")
    ann.agents.delete(agent.id)
    with pytest.raises(letta_client.NotFoundError):
        ann.agents.retrieve(agent.id)


def test_a_slow_step_streams_pings_when_asked(tmp_path):
    import time

    def slow_step(request):
        time.sleep(0.8)
        return json.dumps({"thoughts": "slowly", "function": "send_message", "arguments": {"message": "Done."}})

    pm = Pagemind(ScriptedLLM(by_role={"agent-step": slow_step}), store=tmp_path / "s.db")
    _, key = users_api.create_user(pm.store, "ann")
    with Served(create_app(pm, auth="keys", keepalive=0.2, workers=2)) as server:
        client = letta_client.Letta(base_url=f"{server.url}/letta", api_key=key, max_retries=0)
        agent = client.agents.create(name="sam")
        kinds = [c.message_type for c in client.agents.messages.create(
            agent_id=agent.id, streaming=True, include_pings=True, messages=[{"role": "user", "content": "hi"}])]
        quiet = [c.message_type for c in client.agents.messages.create(
            agent_id=agent.id, streaming=True, messages=[{"role": "user", "content": "hi"}])]
    pm.close()
    assert kinds[0] == "ping" and kinds.count("ping") >= 2
    assert [k for k in kinds if k != "ping"] == quiet == ["reasoning_message", "assistant_message", "stop_reason",
                                                          "usage_statistics"]


def test_bad_agent_files_are_refused_and_nothing_is_stored(tmp_path):
    pm = Pagemind(ScriptedLLM(by_role={"agent-step": agent_step}), store=tmp_path / "s.db", max_bytes=4096)
    _, key = users_api.create_user(pm.store, "ann")
    with Served(create_app(pm, auth="keys", keepalive=1.0, workers=2)) as server:
        client = letta_client.Letta(base_url=f"{server.url}/letta", api_key=key, max_retries=0)
        with pytest.raises(letta_client.UnprocessableEntityError, match="not JSON"):
            client.agents.import_file(file=("x.af", b"{not json"))
        with pytest.raises(letta_client.UnprocessableEntityError, match='non-empty "agents" list'):
            client.agents.import_file(file=("x.af", b'{"agents": []}'))
        with pytest.raises(letta_client.APIStatusError, match="over this server's limit") as big:
            client.agents.import_file(file=("x.af", b" " * 200_000))
        assert big.value.status_code == 413
        with pytest.raises(letta_client.UnprocessableEntityError, match="field 'file'"):
            client.post("/v1/agents/import", cast_to=object, body={"name": "x"},
                        options={"headers": {"Content-Type": "multipart/form-data"}})
        assert list(client.agents.list()) == []
    pm.close()


def test_letta_quickstart_as_published_and_what_the_sdk_must_not_retry(served):
    """Letta's quickstart, as its docs print it (model, embedding, two blocks, tools=["web_search", "run_code"]), with
    the SDK's default retries: tools without a counterpart are skipped and said; a taken name (409) and a route
    this surface lacks (501) are sent once, not three times; a block's limit changes; Letta's labels with '-' and
    '/' survive create, retrieve, export and import."""
    import httpx

    sent: list[str] = []
    http = httpx.Client(event_hooks={"request": [lambda r: sent.append(f"{r.method} {r.url.path}")]})
    client = letta_client.Letta(base_url=served["base"], api_key=served["ann_key"], http_client=http)

    agent_state = client.agents.create(
        model="openai/gpt-4.1",
        embedding="openai/text-embedding-3-small",
        memory_blocks=[
            {"label": "human", "value": "The human's name is Chad. They like vibe coding."},
            {"label": "persona", "value": "My name is Sam, the all-knowing sentient AI."},
        ],
        tools=["web_search", "run_code"],
    )
    warnings = agent_state.model_extra["pagemind"]["warnings"]
    assert [w.split(":")[0] for w in warnings[:2]] == ["tool 'web_search' skipped", "tool 'run_code' skipped"]
    assert "model 'openai/gpt-4.1'" in warnings[2]
    response = client.agents.messages.create(agent_id=agent_state.id,
                                             messages=[{"role": "user", "content": "How's it going?"}])
    assert [m.message_type for m in response.messages][-1] == "assistant_message"

    sent.clear()
    with pytest.raises(letta_client.ConflictError):
        client.agents.create(name=agent_state.name)
    with pytest.raises(letta_client.APIStatusError) as err:
        client.agents.messages.cancel(agent_id=agent_state.id)
    assert err.value.status_code == 501 and len(sent) == 2, sent  # each sent once: no retry of what cannot succeed

    longer = client.agents.blocks.update("human", agent_id=agent_state.id, limit=6000)
    assert (longer.limit, longer.value) == (6000, "The human's name is Chad. They like vibe coding.")
    described = client.agents.blocks.update("human", agent_id=agent_state.id, description="Facts about the user")
    assert described.description == "Facts about the user" and described.limit == 6000
    assert client.agents.blocks.retrieve("human", agent_id=agent_state.id).description == "Facts about the user"
    history = served["pm"].agent(f"u{served['ann_id']}.{agent_state.name}", llm=False).block_history("human")
    assert [v.cause for v in history[:2]] == ["letta: ann", "letta: ann"]
    with pytest.raises(letta_client.UnprocessableEntityError, match="exceed its limit"):
        client.agents.blocks.update("human", agent_id=agent_state.id, limit=10)

    made = client.agents.create(name="labels", memory_blocks=[
        {"label": "customer-profile", "value": "Prefers email.", "description": "how to reach them"},
        {"label": "project/notes", "value": "Due Friday."}])
    assert {b.label: b.description for b in made.memory.blocks}["customer-profile"] == "how to reach them"
    assert {b.label for b in made.memory.blocks} == {"customer-profile", "project/notes", "human", "persona"}
    assert client.agents.blocks.retrieve("project/notes", agent_id=made.id).value == "Due Friday."
    pm, ann_id = served["pm"], served["ann_id"]
    assert {b.label for b in pm.agent(f"u{ann_id}.labels", llm=False).blocks()} >= {"customer-profile",
                                                                                     "project.notes"}
    exported = json.loads(client.agents.export_file(made.id))
    assert {b["label"] for b in exported["blocks"]} >= {"customer-profile", "project/notes"}
    back = client.agents.retrieve(client.agents.import_file(
        file=("labels.af", json.dumps(exported).encode())).agent_ids[0])
    assert back.name == "labels-2" and {b.label for b in back.memory.blocks} == {b.label for b in made.memory.blocks}
    with pytest.raises(letta_client.UnprocessableEntityError, match="memory_blocks.0.label: String should match"):
        client.agents.create(name="dotted", memory_blocks=[{"label": "a.b", "value": "x"}])


def searching_step(request):
    """Search the archive first; once its results are in the context, answer from them."""
    said = "\n".join(m.content for m in request.messages)
    if "archival_memory_search" not in said.split('"type": "user_message"')[-1]:
        return json.dumps({"thoughts": "look it up", "function": "archival_memory_search",
                           "arguments": {"query": "tea", "page": 0, "request_heartbeat": True}})
    return json.dumps({"thoughts": "found it", "function": "send_message",
                       "arguments": {"message": "You drink green tea from Assam."}})


def asked_about_tea(tmp_path, fake):
    """Ann's agent, told in a passage which tea she drinks, asked it through Letta's SDK: the reply."""
    with Pagemind(fake, store=tmp_path / "s.db") as pm:
        ann = users_api.create_user(pm.store, "ann")
        with Served(create_app(pm, auth="keys", keepalive=1.0, workers=2)) as server:
            client = letta_client.Letta(base_url=f"{server.url}/letta", api_key=ann[1], max_retries=0)
            agent = client.agents.create(name="tia", memory_blocks=[{"label": "human", "value": "Name: Ann"}])
            client.agents.passages.create(agent_id=agent.id, text="Ann drinks green tea from Assam every morning.")
            return client.agents.messages.create(agent_id=agent.id, messages=[{"role": "user",
                                                                              "content": "What tea do I drink?"}])


def test_a_turn_answered_from_recall_shows_its_reasoning_reply_and_what_was_recalled(tmp_path):
    """A new agent's default: the question answered by the reply from recall — in Letta's messages as the agent's
    reasoning ("Answered from what recall placed in context") and its assistant message, with the recalled passage
    and its citation in pagemind's extension; no step of the agent's own ran."""
    fake = ScriptedLLM(by_role={"recall-answer": ["You drink green tea from Assam."]})
    reply = asked_about_tea(tmp_path, fake)
    kinds = [m.message_type for m in reply.messages]
    assert kinds == ["reasoning_message", "assistant_message"], kinds
    assert reply.messages[0].reasoning.startswith("Answered from what recall placed in context")
    assert reply.messages[-1].content == "You drink green tea from Assam."
    ext = reply.model_extra["pagemind"]
    assert ext["recalled"][0]["unit"] == "passage" and "green tea from Assam" in ext["citations"][0]["quote"]
    assert fake.roles() == ["recall-answer"]


def test_a_turn_that_searched_carries_its_support_in_pagemind_s_extension(tmp_path):
    """The reply from recall says the memories do not tell: the agent's own steps search, and answer."""
    reply = asked_about_tea(tmp_path, ScriptedLLM(by_role={"agent-step": searching_step,
                                                           "recall-answer": ["I do not know."]}))
    assert reply.messages[-1].content == "You drink green tea from Assam."
    ext = reply.model_extra["pagemind"]
    assert ext["support"]["label"] == "supported" and ext["confidence"] > 0.5
    assert "green tea from Assam" in ext["citations"][0]["quote"]
    # recall before reply placed the matching passage ahead of the agent's first step, and the reply says so
    assert ext["recalled"][0]["unit"] == "passage" and "green tea from Assam" in ext["recalled"][0]["quote"]
