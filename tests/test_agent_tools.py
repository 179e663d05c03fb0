"""The MemGPT agent with native tool calling, over pagemind's OpenAI-compatible backend and the mock server."""

import pytest

from pagemind import LLM, Store
from pagemind.agent import Agent, AgentOptions, AgentStore
from pagemind.errors import BadRequest, ConfigError
from pagemind.llm.mockserver import MockServer
from pagemind.llm.openai import OpenAICompatible
from pagemind.store import StoreResponseCache


def agent_on(server, store=None, name="ana", tools=True, **options):
    backend = OpenAICompatible("m", base_url=server.url, context_window=8192, tools=tools)
    store = store or Store(":memory:")
    agent = Agent.create(LLM(backend, cache=StoreResponseCache(store)), store, name,
                         options=AgentOptions(embedder="none", **options))
    return agent, backend


def test_steps_are_native_tool_calls_with_the_monologue_as_an_argument():
    script = [
        {"tool_calls": [("archival_memory_insert", {"inner_thoughts": "keep this", "content": "Ada is the sister",
                                                    "request_heartbeat": True})]},
        {"text": "Telling her.", "tool_calls": [("send_message", {"inner_thoughts": "", "message": "Noted!"})]},
    ]
    with MockServer(script=script) as server:
        agent, backend = agent_on(server)
        turn = agent.say("My sister is Ada.")
        backend.close()
    assert turn.messages == ["Noted!"] and turn.valid_actions == 2 and turn.stop_reason == "yield"
    assert [s.function for s in turn.steps] == ["archival_memory_insert", "send_message"]
    assert turn.steps[0].thoughts == "keep this" and turn.steps[1].thoughts == "Telling her."
    body = server.requests[0]
    assert body["tool_choice"] == "required" and "response_format" not in body
    tools = {t["function"]["name"]: t["function"] for t in body["tools"]}
    assert set(tools) == {"send_message", "core_memory_append", "core_memory_replace", "conversation_search",
                          "conversation_search_date", "archival_memory_insert", "archival_memory_replace",
                          "archival_memory_search"}
    search = tools["archival_memory_search"]
    assert search["description"] == "search archival memory."
    assert list(search["parameters"]["properties"]) == ["inner_thoughts", "query", "page", "request_heartbeat"]
    assert tools["core_memory_append"]["parameters"]["properties"]["label"]["enum"] == ["persona", "human"]
    assert "inner_thoughts argument" in body["messages"][0]["content"]  # the system prompt says how to reply
    assert agent.archive.search("Ada", 0).total == 1


def test_a_bad_tool_call_is_an_invalid_action_with_a_forced_heartbeat():
    script = [{"tool_calls": [("core_memory_append", {"inner_thoughts": "x", "label": "nope", "content": "y",
                                                      "request_heartbeat": False})]},
              {"tool_calls": [("send_message", {"inner_thoughts": "", "message": "sorry"})]}]
    with MockServer(script=script) as server:
        agent, backend = agent_on(server)
        turn = agent.say("hi")
        backend.close()
    assert [s.status for s in turn.steps] == ["Failed", "OK"] and turn.messages == ["sorry"]
    assert turn.steps[0].heartbeat == "failed"


def test_a_server_that_refuses_tools_gets_json_replies_from_then_on():
    reply = '{"thoughts": "t", "function": "send_message", "arguments": {"message": "hello"}}'
    script = [{"status": 400, "message": "tools are not supported by this model"}, {"text": reply}, {"text": reply}]
    with MockServer(script=script) as server:
        store = Store(":memory:")
        agent, backend = agent_on(server, store=store)
        first = agent.say("hi")
        second = Agent.load(agent.llm, store, "ana").say("again")  # remembered across loads
        backend.close()
    assert first.messages == second.messages == ["hello"]
    assert "tools" in server.requests[0] and "tools" not in server.requests[1] and "tools" not in server.requests[2]
    assert server.requests[1]["response_format"]["type"] == "json_schema"  # constrained the other way instead
    assert "Reply format: every reply is exactly one JSON object" in server.requests[1]["messages"][0]["content"]
    assert any("native tool calls refused" in n for n in first.trace.notes)


def test_tool_calling_native_is_strict_and_json_never_offers_tools():
    with MockServer(script=[{"status": 400, "message": "tools are not supported"}]) as server:
        agent, backend = agent_on(server, tool_calling="native")
        with pytest.raises(BadRequest):
            agent.say("hi")
        backend.close()
    reply = '{"thoughts": "t", "function": "send_message", "arguments": {"message": "ok"}}'
    with MockServer(script=[{"text": reply}]) as server:
        agent, backend = agent_on(server, name="bo", tool_calling="json")
        assert agent.say("hi").messages == ["ok"]
        backend.close()
    assert "tools" not in server.requests[0]
    with MockServer() as server:  # said when the agent is made (its first prompt cannot be built)
        store = Store(":memory:")
        with pytest.raises(ConfigError, match="no native tool calling"):
            agent_on(server, store=store, name="cy", tools=False, tool_calling="native")
        assert AgentStore(store).list_agents() == []
    with pytest.raises(ConfigError):
        AgentOptions(tool_calling="sometimes")


def test_tool_calls_survive_the_response_cache():
    script = [{"tool_calls": [("send_message", {"inner_thoughts": "t", "message": "cached"})]}]
    with MockServer(script=script) as server:
        store = Store(":memory:")
        backend = OpenAICompatible("m", base_url=server.url, context_window=8192)
        llm = LLM(backend, cache=StoreResponseCache(store))
        from pagemind.llm.base import LLMRequest, Tool

        request = LLMRequest.user("x", tools=(Tool("send_message", "say", {"type": "object"}),))
        first, _ = llm.complete(request)
        again, event = llm.complete(request)
        backend.close()
    assert event.cached and again.tool_calls == first.tool_calls and again.tool_calls[0].name == "send_message"
    assert len(server.requests) == 1
