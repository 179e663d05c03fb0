"""Each OpenAI-compatible server kind: discovery of its window, its tokenizer and its constraint mechanism.

The mock server answers with the reply shapes each server documents, and every request pagemind sends is
compared with the request shape of that server's documentation (cited next to each expected body).
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from pagemind.config import resolve_settings
from pagemind.errors import ConfigError, ContextWindowExceeded
from pagemind.llm.base import Constraint, LLMRequest, Message, Tool
from pagemind.llm.client import LLM
from pagemind.llm.mockserver import MockServer
from pagemind.llm.openai import OpenAICompatible
from pagemind.llm.registry import open_backend
from pagemind.llm.servers import TokenCounts, openai_window

GBNF = 'root ::= "Answer: " [ABCD]'
SCHEMA = {"type": "object", "properties": {"page": {"type": "integer"}}, "required": ["page"],
          "additionalProperties": False}


def words(text: str) -> int:
    """The mock servers' tokenizer: one token a word."""
    return len(text.split())


def chat(messages: list[dict]) -> str:
    return "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages) + "<|im_start|>assistant\n"


# Reply shapes as the servers document them (see pagemind.llm.servers for the sources).
def vllm_routes(version: str = "0.11.0", window: int = 32768) -> dict:
    return {
        # docs.vllm.ai, OpenAI-compatible server: GET /v1/models model cards carry max_model_len
        "GET /v1/models": {"object": "list", "data": [{"id": "qwen", "object": "model", "created": 1,
                                                        "owned_by": "vllm", "root": "qwen", "parent": None,
                                                        "max_model_len": window}]},
        "GET /version": {"version": version},
        # vllm/entrypoints/serve/tokenize/protocol.py: TokenizeResponse {count, max_model_len, tokens, token_strs}
        "POST /tokenize": lambda b: {
            "count": words(b["prompt"]) if "prompt" in b else words(chat(b["messages"])) + 1,
            "max_model_len": window, "tokens": [], "token_strs": None},
    }


def sglang_routes() -> dict:
    return {
        # sglang/srt/entrypoints/openai/protocol.py: ModelCard(owned_by="sglang", max_model_len=...)
        "GET /v1/models": {"object": "list", "data": [{"id": "qwen/qwen2.5-0.5b-instruct", "object": "model",
                                                        "created": 1, "owned_by": "sglang", "root": None,
                                                        "max_model_len": 32768}]},
        # serving_tokenize.py: a list of prompts gives a list of counts
        "POST /tokenize": lambda b: {"tokens": [], "count": [words(p) for p in b["prompt"]]
                                     if isinstance(b["prompt"], list) else words(b["prompt"]), "max_model_len": 32768},
    }


def llamacpp_routes(props: dict | None = None) -> dict:
    return {
        # tools/server/README.md: GET /v1/models, owned_by "llamacpp", meta.n_ctx_train
        "GET /v1/models": {"object": "list", "data": [{"id": "model.gguf", "object": "model", "owned_by": "llamacpp",
                                                        "meta": {"n_ctx_train": 131072, "n_vocab": 128256}}]},
        # GET /props: default_generation_settings.n_ctx is one slot's window; total_slots is --parallel
        "GET /props": props or {"default_generation_settings": {"id": 0, "n_ctx": 4096, "params": {}},
                                "total_slots": 2, "model_path": "model.gguf", "chat_template": "..."},
        # POST /tokenize {content, add_special, parse_special} -> {"tokens": [...]}
        "POST /tokenize": lambda b: {"tokens": list(range(words(b["content"]) + (1 if b.get("add_special") else 0)))},
        # POST /apply-template {messages} -> {"prompt": ...}
        "POST /apply-template": lambda b: {"prompt": chat(b["messages"])},
    }


def llama_cpp_python_routes(bos: int = 1) -> dict:
    return {
        # llama_cpp/server/app.py (0.3.36): model ids only
        "GET /v1/models": {"object": "list", "data": [{"id": "model.gguf", "object": "model", "owned_by": "me",
                                                        "permissions": []}]},
        "GET /openapi.json": {"openapi": "3.1.0", "info": {"title": "🦙 llama.cpp Python API", "version": "0.3.36"}},
        # /extras/tokenize/count tokenizes with add_bos=True: the BOS is in every count
        "POST /extras/tokenize/count": lambda b: {"count": words(b["input"]) + bos},
    }


def ollama_routes(loaded: bool = True) -> dict:
    return {
        "GET /v1/models": {"object": "list",
                           "data": [{"id": "qwen2.5:0.5b", "object": "model", "owned_by": "library"}]},
        "GET /api/version": {"version": "0.12.3"},
        # docs.ollama.com/api/ps: context_length is what the loaded model was given
        "GET /api/ps": {"models": [{"name": "qwen2.5:0.5b", "model": "qwen2.5:0.5b", "size": 1,
                                    "context_length": 8192}] if loaded else []},
        # docs.ollama.com/api/show: parameters is text, one "name value" a line
        "POST /api/show": {"parameters": "num_ctx                        4096\nstop \"<|im_end|>\"",
                           "model_info": {"qwen2.context_length": 32768}},
    }


def constrained(gbnf: str | None = GBNF, schema: dict | None = None) -> LLMRequest:
    return LLMRequest.user("Which letter?", max_tokens=8,
                           constraint=Constraint("letter", gbnf=gbnf, json_schema=schema))


def sent(server: MockServer) -> dict:
    """The last chat body, without the fields every request has."""
    body = dict(server.requests[-1])
    for key in ("model", "messages", "max_tokens", "temperature"):
        body.pop(key)
    return body


def routes_called(server: MockServer) -> list[str]:
    return [f"{method} {path}" for method, path, _ in server.calls]


# --- vLLM ------------------------------------------------------------------------------------------
def test_vllm_window_tokenizer_and_structured_outputs_grammar() -> None:
    with MockServer(routes=vllm_routes()) as server:
        backend = OpenAICompatible("qwen", base_url=server.url)
        caps = backend.capabilities
        assert caps.context_window == 32768 and caps.window_source == "GET /v1/models max_model_len"
        assert caps.extra["server_kind"] == "vllm" and caps.extra["version"] == "0.11.0"
        assert caps.token_counts == "server" and caps.supports_grammar and caps.supports_json_schema
        assert backend.count_tokens("one two three four") == 4
        # POST /tokenize {"prompt", "add_special_tokens": false} (TokenizeCompletionRequest)
        assert server.calls[-1][2] == {"model": "qwen", "prompt": "one two three four", "add_special_tokens": False}
        # the whole chat prompt is counted by the server's own template (TokenizeChatRequest)
        request = LLMRequest(messages=(Message("system", "be brief"), Message("user", "hello there")))
        assert backend.prompt_tokens(request) == words(chat([{"role": "system", "content": "be brief"},
                                                             {"role": "user", "content": "hello there"}])) + 1
        assert server.calls[-1][2]["messages"][1] == {"role": "user", "content": "hello there"}
        assert server.calls[-1][2]["add_generation_prompt"] is True
        backend.execute(constrained())
    # docs.vllm.ai/en/latest/features/structured_outputs: extra_body={"structured_outputs": {"grammar": ...}}
    assert sent(server) == {"structured_outputs": {"grammar": GBNF}}


def test_vllm_before_0_10_2_gets_guided_grammar() -> None:
    with MockServer(routes=vllm_routes(version="0.9.2")) as server:
        backend = OpenAICompatible("qwen", base_url=server.url)
        backend.execute(constrained())
    # docs.vllm.ai/en/v0.9.1/features/structured_outputs: extra_body={"guided_grammar": ...}
    assert sent(server) == {"guided_grammar": GBNF}
    assert "guided_grammar" in backend.capabilities.constraint


# --- SGLang ----------------------------------------------------------------------------------------
def test_sglang_batched_token_counts_and_ebnf() -> None:
    with MockServer(routes=sglang_routes()) as server:
        backend = OpenAICompatible("qwen/qwen2.5-0.5b-instruct", base_url=server.url)
        assert backend.capabilities.context_window == 32768 and backend.capabilities.extra["server_kind"] == "sglang"
        before = len(server.calls)
        texts = ["a b", "c d e", "f", "a b"]
        assert backend.count_tokens_many(texts) == [2, 3, 1, 2]
        batch = server.calls[before:]
        assert len(batch) == 1  # one call for the three distinct texts
        assert sorted(batch[0][2]["prompt"]) == ["a b", "c d e", "f"] and batch[0][2]["add_special_tokens"] is False
        assert backend.count_tokens_many(texts) == [2, 3, 1, 2] and len(server.calls) == before + 1  # cached
        backend.execute(constrained(schema=SCHEMA))
    # docs.sglang.io/advanced_features/structured_outputs: extra_body={"ebnf": ...}; one constraint per request
    assert sent(server) == {"ebnf": GBNF}


# --- llama.cpp server ------------------------------------------------------------------------------
def test_llamacpp_props_window_slots_template_count_and_grammar() -> None:
    with MockServer(routes=llamacpp_routes()) as server:
        backend = OpenAICompatible("model.gguf", base_url=server.url)
        caps = backend.capabilities
        assert caps.context_window == 4096 and "default_generation_settings.n_ctx" in caps.window_source
        assert caps.max_concurrency == 2  # total_slots
        assert backend.count_tokens("a b c") == 3
        assert server.calls[-1][2] == {"content": "a b c", "add_special": False, "parse_special": False}
        messages = [{"role": "user", "content": "a b c"}]
        assert backend.prompt_tokens(LLMRequest.user("a b c")) == words(chat(messages)) + 1  # with the BOS
        assert ("POST", "/apply-template", {"messages": messages}) in server.calls
        backend.execute(constrained(schema=SCHEMA))
        backend.execute(constrained(gbnf=None, schema=SCHEMA))
    # tools/server/README.md: "grammar": "root ::= ..." in the request body
    assert server.requests[0]["grammar"] == GBNF and "response_format" not in server.requests[0]
    assert server.requests[0]["repeat_penalty"] == 1.0
    assert server.requests[1]["response_format"]["json_schema"]["schema"] == SCHEMA


def test_older_llamacpp_props_with_top_level_n_ctx() -> None:
    routes = llamacpp_routes(props={"n_ctx": 2048, "total_slots": 1})
    routes.pop("GET /v1/models")
    with MockServer(routes=routes) as server:
        backend = OpenAICompatible("m", base_url=server.url)
        assert backend.capabilities.context_window == 2048 and backend.capabilities.window_source == "GET /props n_ctx"
        assert backend.capabilities.extra["server_kind"] == "llama.cpp"


# --- llama-cpp-python's server -------------------------------------------------------------------
def test_llama_cpp_python_needs_the_window_and_counts_without_the_bos() -> None:
    with MockServer(routes=llama_cpp_python_routes(bos=1)) as server:
        with pytest.raises(ConfigError, match="llama-cpp-python.*--context-window"):
            _ = OpenAICompatible("model.gguf", base_url=server.url).capabilities
        backend = OpenAICompatible("model.gguf", base_url=server.url, context_window=2048)
        caps = backend.capabilities
        assert caps.context_window == 2048 and "--context-window" in caps.window_source
        assert caps.token_counts == "server" and caps.max_concurrency == 1 and not caps.supports_tools
        assert backend.count_tokens_many(["a b c", "", "d"]) == [3, 0, 1]  # the BOS the endpoint adds is removed
        bodies = [body for _, path, body in server.calls if "/tokenize" in path]
        # the texts are counted concurrently: which request came last is not fixed
        assert {"model": "model.gguf", "input": "d"} in bodies and {"model": "model.gguf", "input": "a b c"} in bodies
        backend.execute(constrained(schema=SCHEMA))
        backend.execute(constrained(gbnf=None, schema=SCHEMA))
        tool = Tool("send_message", "reply", {"type": "object", "properties": {}})
        backend.execute(LLMRequest.user("hi", tools=(tool,), constraint=Constraint("step", json_schema=SCHEMA)))
    # llama_cpp/server/types.py: grammar; llama_chat_format.py reads response_format {"type": "json_object", "schema"}
    assert server.requests[0]["grammar"] == GBNF
    # its repeat_penalty defaults to 1.1 (types.py), the OpenAI API's and the embedded backend's is none
    assert all(body["repeat_penalty"] == 1.0 for body in server.requests)
    assert server.requests[1]["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert "tools" not in server.requests[2] and server.requests[2]["response_format"]["schema"] == SCHEMA


# --- Ollama ----------------------------------------------------------------------------------------
def test_ollama_window_from_ps_then_show_and_json_schema_only() -> None:
    with MockServer(routes=ollama_routes(loaded=True)) as server:
        backend = OpenAICompatible("qwen2.5:0.5b", base_url=server.url)
        assert backend.capabilities.context_window == 8192 and "/api/ps" in backend.capabilities.window_source
        assert backend.capabilities.token_counts == "estimate" and not backend.capabilities.supports_grammar
        backend.execute(constrained())  # a grammar alone: Ollama cannot enforce it
        backend.execute(constrained(schema=SCHEMA))
    assert sent(server) == {"response_format": {"type": "json_schema", "json_schema": {
        "name": "letter", "schema": SCHEMA, "strict": True}}}
    assert "grammar" not in server.requests[0] and "response_format" not in server.requests[0]
    with MockServer(routes=ollama_routes(loaded=False)) as server:
        backend = OpenAICompatible("qwen2.5:0.5b", base_url=server.url)
        assert backend.capabilities.context_window == 4096 and "num_ctx" in backend.capabilities.window_source


# --- declared kinds, precedence, reports ---------------------------------------------------------
def test_a_declared_kind_skips_detection_and_a_declared_window_wins() -> None:
    with MockServer(routes=llamacpp_routes()) as server:
        backend = OpenAICompatible("m", base_url=server.url, server_kind="llama.cpp", context_window=1024)
        caps = backend.capabilities
    assert caps.context_window == 1024 and caps.extra["kind_source"] == "declared by the --server-kind setting"
    # no detection probe; GET /v1/models once, for the model a llama.cpp server serves (what memories are keyed by)
    assert "GET /openapi.json" not in routes_called(server) and "GET /api/version" not in routes_called(server)
    assert routes_called(server).count("GET /v1/models") == 1
    assert any("reports 4096" in note for note in caps.extra["notes"])
    with pytest.raises(ConfigError, match="server-kind"):
        _ = OpenAICompatible("m", base_url="http://127.0.0.1:1/v1", server_kind="tgi", context_window=1).capabilities


def test_settings_precedence_for_server_options(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("PAGEMIND_CONTEXT_WINDOW", "16384")
    monkeypatch.setenv("PAGEMIND_SERVER_KIND", "vllm")
    assert resolve_settings().context_window == 16384 and resolve_settings().server_kind == "vllm"
    assert resolve_settings(context_window=2048, server_kind="sglang").context_window == 2048
    monkeypatch.delenv("PAGEMIND_CONTEXT_WINDOW")
    monkeypatch.delenv("PAGEMIND_SERVER_KIND")
    assert resolve_settings().context_window is None and resolve_settings().server_kind == "auto"
    with MockServer(routes=llamacpp_routes()) as server:
        backend = open_backend(resolve_settings(llm="openai:m", base_url=server.url, context_window=3000))
        assert backend.capabilities.context_window == 3000 and backend.capabilities.extra["server_kind"] == "llama.cpp"
        backend.close()


def test_token_counts_are_cached_in_a_bounded_lru() -> None:
    cache = TokenCounts(size=2)
    for i, text in enumerate(["a", "b", "c"]):
        cache.put(TokenCounts.key(text), i)
    assert cache.get(TokenCounts.key("a")) is None and cache.get(TokenCounts.key("c")) == 2 and len(cache) == 2
    with MockServer(routes=llamacpp_routes()) as server:
        backend = OpenAICompatible("m", base_url=server.url)
        backend.count_tokens("x y")
        before = len(server.calls)
        assert backend.count_tokens("x y") == 2 and len(server.calls) == before


def test_a_context_error_reports_the_servers_window() -> None:
    message = "This model's maximum context length is 2048 tokens. However, you requested 3000 tokens."
    with MockServer(routes=llama_cpp_python_routes(), script=[{"status": 400, "message": message}]) as server:
        backend = OpenAICompatible("m", base_url=server.url, context_window=4096)
        with pytest.raises(ContextWindowExceeded) as info:
            LLM(backend, max_retries=0).complete(LLMRequest.user("x"))
    assert info.value.context_window == 2048


def test_openai_window_table_matches_whole_name_parts() -> None:
    assert openai_window("gpt-4o") == 128000 and openai_window("gpt-4o-mini-2024-07-18") == 128000
    assert openai_window("gpt-4.1-mini") == 1_047_576 and openai_window("o3-mini") == 200_000
    assert openai_window("gpt-4oops") is None and openai_window("llama3") is None


def test_models_info_prints_what_was_found_and_from_where() -> None:
    from pagemind.cli.models import models

    with MockServer(routes=vllm_routes()) as server:
        result = CliRunner().invoke(models, ["info", "--llm", "openai:qwen", "--base-url", server.url])
    assert result.exit_code == 0, result.output
    assert "vllm 0.11.0" in result.output and "32768 tokens  (GET /v1/models max_model_len)" in result.output
    assert "counted by the server: POST /tokenize" in result.output
    assert "structured_outputs.grammar" in result.output and "native tool calling" in result.output
    with MockServer(routes=llama_cpp_python_routes()) as server:
        result = CliRunner().invoke(models, ["info", "--llm", "openai:m", "--base-url", server.url])
    assert result.exit_code != 0 and "llama-cpp-python" in result.output and "--context-window" in result.output
