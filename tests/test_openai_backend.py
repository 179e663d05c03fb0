"""The OpenAI-compatible backend against the stdlib mock server, through the LLM wrapper."""

from __future__ import annotations

import socket
import time

import pytest

from pagemind.errors import (
    BackendUnavailable,
    BadRequest,
    ConfigError,
    ContextWindowExceeded,
    RateLimited,
    ServerError,
)
from pagemind.llm.base import Constraint, LLMRequest, estimate_tokens
from pagemind.llm.client import LLM
from pagemind.llm.mockserver import MockServer
from pagemind.llm.openai import OpenAICompatible


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def make_llm(backend: OpenAICompatible, sleeps: list[float] | None = None, **kwargs) -> LLM:
    record = sleeps if sleeps is not None else []
    return LLM(backend, sleep=record.append, **kwargs)


def free_closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_success_without_key_sends_no_authorization() -> None:
    latency = 0.2  # the mock holds this reply back: the measured seconds must cover it
    with MockServer(script=[{"text": "hello there", "latency": latency}]) as server:
        backend = OpenAICompatible("mock-model", base_url=server.url, context_window=8192)
        started = time.perf_counter()
        response, event = make_llm(backend).complete(LLMRequest.user("say hi", max_tokens=16, stop=("\n",)))
        elapsed = time.perf_counter() - started
        backend.close()
    assert response.text == "hello there"
    assert response.prompt_tokens == 2 and response.completion_tokens == 2
    assert response.model == backend.model_id == f"openai:mock-model@{server.url}"
    assert response.finish_reason == "stop" and not response.constrained
    # the request's own time: at least the mock's latency, within the call's wall time; the trace keeps it
    assert latency <= response.seconds <= elapsed and event.seconds == response.seconds
    body = server.requests[0]
    assert body["model"] == "mock-model"
    assert body["messages"] == [{"role": "user", "content": "say hi"}]
    assert body["max_tokens"] == 16 and body["temperature"] == 0.0 and body["stop"] == ["\n"]
    assert "response_format" not in body and "grammar" not in body
    assert "authorization" not in server.headers[0]


def test_api_key_sent_as_bearer_and_env_fallbacks(monkeypatch: pytest.MonkeyPatch) -> None:
    with MockServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        backend = OpenAICompatible("m", context_window=8192)
        assert backend.execute(LLMRequest.user("x")).text == "ok"
        backend.close()
        explicit = OpenAICompatible("m", base_url=server.url, api_key="sk-other", env={}, context_window=8192)
        explicit.execute(LLMRequest.user("y"))
        explicit.close()
    assert backend.model_id == f"openai:m@{server.url}"
    assert server.headers[0]["authorization"] == "Bearer sk-test"
    assert server.headers[1]["authorization"] == "Bearer sk-other"
    assert "sk-test" not in backend.model_id


def test_missing_usage_is_estimated() -> None:
    with MockServer(script=[{"text": "four words right here", "usage": None, "finish_reason": "length"}]) as server:
        backend = OpenAICompatible("m", base_url=server.url, context_window=8192)
        response = backend.execute(LLMRequest.user("a question"))
        backend.close()
    assert response.prompt_tokens == estimate_tokens("a question")
    assert response.completion_tokens == estimate_tokens("four words right here")
    assert response.finish_reason == "length"


def test_429_then_success_honours_retry_after() -> None:
    with MockServer(script=[{"status": 429, "retry_after": 3}]) as server:
        backend = OpenAICompatible("m", base_url=server.url, context_window=8192)
        sleeps: list[float] = []
        assert make_llm(backend, sleeps).text(LLMRequest.user("x")) == "ok"
        backend.close()
    assert sleeps == [3.0]
    assert len(server.requests) == 2


def test_429_error_carries_retry_after() -> None:
    with MockServer(script=[{"status": 429, "retry_after": "1.5"}]) as server:
        backend = OpenAICompatible("m", base_url=server.url, context_window=8192)
        with pytest.raises(RateLimited) as info:
            backend.execute(LLMRequest.user("x"))
        backend.close()
    assert info.value.retry_after == 1.5


def test_500_exhausts_retries() -> None:
    with MockServer(script=[{"status": 500}] * 10) as server:
        backend = OpenAICompatible("m", base_url=server.url, context_window=8192)
        sleeps: list[float] = []
        with pytest.raises(ServerError):
            make_llm(backend, sleeps, max_retries=2).complete(LLMRequest.user("x"))
        backend.close()
    assert len(server.requests) == 3 and len(sleeps) == 2


def test_connection_refused_is_unavailable_and_quick() -> None:
    port = free_closed_port()
    backend = OpenAICompatible("m", base_url=f"http://127.0.0.1:{port}/v1", context_window=8192)
    started = time.perf_counter()
    with pytest.raises(BackendUnavailable) as info:  # raised by discovery, on first use
        make_llm(backend, max_retries=0).complete(LLMRequest.user("x"))
    backend.close()
    assert time.perf_counter() - started < 5
    said = str(info.value)  # the model by name, never the server's address (issue 49)
    assert "openai:m" in said and f"127.0.0.1:{port}" not in said and "\n" not in said


def test_read_timeout_is_unavailable() -> None:
    with MockServer(latency=2.0) as server:
        backend = OpenAICompatible("m", base_url=server.url, timeout=0.2, context_window=8192)
        with pytest.raises(BackendUnavailable, match="timed out"):
            backend.execute(LLMRequest.user("x"))
        backend.close()


@pytest.mark.parametrize("message", [
    "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens.",
    "context_length_exceeded",
    "the request exceeds the available context size, try increasing it",
])
def test_context_length_400(message: str) -> None:
    with MockServer(script=[{"status": 400, "message": message}]) as server:
        backend = OpenAICompatible("m", base_url=server.url, context_window=8192)
        with pytest.raises(ContextWindowExceeded):
            make_llm(backend).complete(LLMRequest.user("x"))
        backend.close()
    assert len(server.requests) == 1  # not retried


def test_other_400_is_bad_request() -> None:
    with MockServer(script=[{"status": 400, "message": "unknown parameter 'foo'"}]) as server:
        backend = OpenAICompatible("m", base_url=server.url, context_window=8192)
        with pytest.raises(BadRequest, match="400.*unknown parameter"):
            backend.execute(LLMRequest.user("x"))
        backend.close()


def test_401_is_bad_request_naming_the_key() -> None:
    with MockServer(script=[{"status": 401, "message": "Incorrect API key provided"}]) as server:
        backend = OpenAICompatible("m", base_url=server.url, api_key="sk-wrong", context_window=8192)
        with pytest.raises(BadRequest, match="API key") as info:
            make_llm(backend).complete(LLMRequest.user("x"))
        backend.close()
    assert "401" in str(info.value) and "sk-wrong" not in str(info.value)
    assert len(server.requests) == 1


def test_404_is_bad_request() -> None:
    with MockServer() as server:
        backend = OpenAICompatible("m", base_url=server.url + "/nowhere", context_window=8192)
        with pytest.raises(BadRequest, match="404"):
            backend.execute(LLMRequest.user("x"))
        backend.close()


@pytest.mark.parametrize("step", [{"garbage": True}, {"body": "<html>proxy page</html>"}, {"body": '{"choices": []}'}])
def test_malformed_200_is_server_error(step: dict) -> None:
    with MockServer(script=[step]) as server:
        backend = OpenAICompatible("m", base_url=server.url, context_window=8192)
        with pytest.raises(ServerError, match="malformed"):
            backend.execute(LLMRequest.user("x"))
        backend.close()


def test_null_content_is_empty_text() -> None:
    body = '{"choices": [{"message": {"role": "assistant", "content": null}, "finish_reason": "stop"}]}'
    with MockServer(script=[{"body": body}]) as server:
        backend = OpenAICompatible("m", base_url=server.url, context_window=8192)
        assert backend.execute(LLMRequest.user("x")).text == ""
        backend.close()


def test_json_schema_forwarded_as_response_format_by_a_plain_openai_server() -> None:
    schema = {"type": "object", "properties": {"page": {"type": "integer"}}, "required": ["page"],
              "additionalProperties": False}
    request = LLMRequest.user("x", constraint=Constraint(name="lookup", gbnf="root ::= \"1\"", json_schema=schema))
    with MockServer(script=[{"text": '{"page": 3}'}]) as server:
        backend = OpenAICompatible("m", base_url=server.url, context_window=8192)
        assert backend.capabilities.supports_json_schema and not backend.capabilities.supports_grammar
        response = backend.execute(request)
        backend.close()
    assert response.constrained and response.text == '{"page": 3}'
    assert server.requests[0]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "lookup", "schema": schema, "strict": True},
    }
    assert "grammar" not in server.requests[0]


def test_a_grammar_is_sent_only_to_a_server_kind_that_enforces_it() -> None:
    request = LLMRequest.user("x", constraint=Constraint(name="n", gbnf='root ::= "yes" | "no"', json_schema={}))
    with MockServer() as server:
        backend = OpenAICompatible("m", base_url=server.url, context_window=8192, server_kind="llama.cpp")
        assert backend.capabilities.supports_grammar
        response = backend.execute(request)
        backend.close()
        plain = OpenAICompatible("m", base_url=server.url, context_window=8192, server_kind="openai")
        only_gbnf = LLMRequest.user("x", constraint=Constraint(name="n", gbnf='root ::= "yes" | "no"'))
        unconstrained = plain.execute(only_gbnf)
        plain.close()
    assert response.constrained
    assert server.requests[0]["grammar"] == 'root ::= "yes" | "no"'
    assert "response_format" not in server.requests[0]
    assert not plain.capabilities.supports_grammar and "unconstrained" in plain.capabilities.constraint
    assert not unconstrained.constrained and "grammar" not in server.requests[1]
    assert "response_format" not in server.requests[1]


def test_concurrency_is_bounded_by_the_wrapper() -> None:
    requests = [LLMRequest.user(f"request {i}") for i in range(16)]
    with MockServer(latency=0.2) as server:
        backend = OpenAICompatible("m", base_url=server.url, context_window=8192)
        results = make_llm(backend, concurrency=8).map(requests)
        backend.close()
    assert [r.text for r, _ in results] == ["ok"] * 16
    assert 1 < server.max_in_flight <= 8


def test_official_url_without_key_is_config_error() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        OpenAICompatible("gpt-4o")
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        OpenAICompatible("gpt-4o", base_url="https://api.openai.com/v1/", env={})


def test_bad_base_url_is_config_error() -> None:
    with pytest.raises(ConfigError):
        OpenAICompatible("m", base_url="localhost:8000/v1")


def test_openai_hosted_windows_are_declared_and_nothing_else_is_guessed() -> None:
    official = {"OPENAI_API_KEY": "sk-x"}
    mini = OpenAICompatible("gpt-4o-mini", env=official)
    assert mini.capabilities.context_window == 128000 and "declared table" in mini.capabilities.window_source
    assert OpenAICompatible("gpt-4o-2024-08-06", env=official).capabilities.context_window == 128000
    assert OpenAICompatible("gpt-4.1-nano", env=official).capabilities.context_window == 1_047_576
    assert OpenAICompatible("gpt-4", env=official).capabilities.context_window == 8192
    assert OpenAICompatible("gpt-4-turbo-2024-04-09", env=official).capabilities.context_window == 128000
    with pytest.raises(ConfigError, match="--context-window"):
        _ = OpenAICompatible("some-new-model", env=official).capabilities
    with MockServer() as server:  # a server that reports no window: refused, never 8192
        with pytest.raises(ConfigError, match="--context-window"):
            LLM(OpenAICompatible("llama3", base_url=server.url))
        declared = OpenAICompatible("llama3", base_url=server.url, context_window=4096, max_concurrency=4)
        assert declared.capabilities.context_window == 4096 and declared.capabilities.max_concurrency == 4
        assert "--context-window" in declared.capabilities.window_source
        assert declared.capabilities.token_counts == "estimate" and declared.capabilities.estimated_counts
    with pytest.raises(ConfigError, match="positive"):
        OpenAICompatible("llama3", base_url="http://127.0.0.1:1/v1", context_window=0)


def test_strict_only_for_schemas_strict_mode_accepts() -> None:
    from pagemind.agent import step_schema
    from pagemind.llm.openai import strict_compatible

    closed = {"type": "object", "additionalProperties": False, "required": ["page"],
              "properties": {"page": {"type": "integer"}, }}
    assert strict_compatible(closed)
    assert not strict_compatible({**closed, "additionalProperties": True})
    assert not strict_compatible({**closed, "required": []})  # strict mode wants every property required
    assert not strict_compatible({**closed, "properties": {"page": {"type": "string", "maxLength": 9}}})
    assert not strict_compatible({"oneOf": [closed]})
    assert not strict_compatible(step_schema(["persona", "human"], 1000))  # the agent's step: sent non-strict
    request = LLMRequest.user("x", constraint=Constraint(name="s", json_schema={"oneOf": [closed]}))
    with MockServer() as server:
        backend = OpenAICompatible("m", base_url=server.url, context_window=8192)
        backend.execute(request)
        backend.close()
    assert server.requests[0]["response_format"]["json_schema"]["strict"] is False


def test_the_concurrency_bound_holds_across_callers() -> None:
    import threading

    requests = [LLMRequest.user(f"request {i}") for i in range(8)]
    with MockServer(latency=0.2) as server:
        backend = OpenAICompatible("m", base_url=server.url, context_window=8192)
        llm = make_llm(backend, concurrency=3)
        threads = [threading.Thread(target=llm.map, args=(requests,)) for _ in range(3)]  # 3 pools of 3
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        backend.close()
    assert len(server.requests) == 24
    assert server.max_in_flight == 3
