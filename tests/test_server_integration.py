"""pagemind against a real OpenAI-compatible server: llama-cpp-python's own (``python -m llama_cpp.server``) with
the tiny SmolLM2 test model, started on 127.0.0.1 for this module and stopped after it.

What is checked end to end: the server's kind is discovered and its missing window refused until declared; token
counts come from the server and equal the embedded model's; replies at temperature 0 equal the embedded model's;
ReadAgent's look-up and answer, a MemWalker walk and MemGPT agent steps are sent with the server's grammar.
"""

from __future__ import annotations

import pytest

from helpers import on_embedded_models
from pagemind import Pagemind
from pagemind.cli.main import sample_path
from pagemind.errors import ConfigError
from pagemind.llm.base import Constraint, LLMRequest, Message

pytestmark = on_embedded_models("fastapi", "uvicorn", "sse_starlette", "starlette_context", "pydantic_settings")

N_CTX = 4096
QUESTION = "What is the name of the supply boat?"
OPTIONS = ["Isobel's Gate", "Margery Dell", "Orra's Bowl", "Kell Stone"]


@pytest.fixture(scope="module")
def server():
    from pagemind.llm import catalogue
    from pagemind.llm.llamaserver import LlamaCppPythonServer

    with LlamaCppPythonServer(catalogue.model_path("smollm2-135m"), n_ctx=N_CTX) as running:
        yield running


@pytest.fixture(scope="module")
def served(server, tmp_path_factory):
    """A session on the server; every request and reply the backend exchanged is kept in ``pm.exchanges``."""
    home = tmp_path_factory.mktemp("served")
    with Pagemind("openai:smollm2", base_url=server.url, context_window=N_CTX, store=home / "s.db",
                  concurrency=1, cache=False) as pm:
        backend = pm.llm.backend
        pm.exchanges = []
        execute = backend.execute

        def recorded(request: LLMRequest):
            response = execute(request)
            pm.exchanges.append((request, response))
            return response

        backend.execute = recorded
        yield pm


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    path = tmp_path_factory.mktemp("doc") / "story.txt"
    path.write_text("\n\n".join(sample_path().read_text().split("\n\n")[:6]))  # ~300 words: every call is short
    return path


def test_the_server_is_discovered_and_its_unreported_window_refused(server):
    from pagemind.llm.openai import OpenAICompatible

    with pytest.raises(ConfigError, match="llama-cpp-python.*--context-window"):
        _ = OpenAICompatible("smollm2", base_url=server.url).capabilities
    backend = OpenAICompatible("smollm2", base_url=server.url, context_window=N_CTX)
    caps = backend.capabilities
    backend.close()
    assert caps.extra["server_kind"] == "llama-cpp-python" and "openapi.json" in caps.extra["kind_source"]
    assert caps.context_window == N_CTX and caps.token_counts == "server" and caps.supports_grammar
    assert not caps.supports_tools and caps.max_concurrency == 1


def test_server_token_counts_and_replies_equal_the_embedded_models(served, tiny_model):
    texts = [sample_path().read_text()[:3000], "Isobel's Gate — naïve café, 1,234 tokens?", "  spaced\n\nlines  ", ""]
    assert served.llm.count_tokens_many(texts) == [tiny_model.llm.count_tokens(t) for t in texts]
    request = LLMRequest(messages=(Message("system", "Answer with one letter."),
                                   Message("user", f"{QUESTION}\n(A) {OPTIONS[0]}\n(B) {OPTIONS[1]}")),
                         max_tokens=12, constraint=Constraint("letter", gbnf='root ::= "Answer: (" [AB] ")"'))
    on_server, _ = served.llm.complete(request)
    embedded, _ = tiny_model.llm.complete(request)
    assert on_server.constrained and on_server.text == embedded.text and on_server.text.startswith("Answer: (")
    assert on_server.prompt_tokens == embedded.prompt_tokens  # both counted by llama.cpp on the same template
    assert served.llm.prompt_tokens(request) >= on_server.prompt_tokens  # the guard's count errs on the safe side


def test_readagent_lookup_and_answer_are_constrained_on_the_server(served, book):
    served.exchanges.clear()
    answer = served.ask(book, QUESTION, options=OPTIONS, method="readagent-p", max_tokens=96)  # short gists
    assert [e.role for e in answer.trace.events] == ["lookup", "answer"]
    by_role = {req.role: (req, resp) for req, resp in served.exchanges}
    for role in ("lookup", "answer"):
        request, response = by_role[role]
        assert request.constraint is not None and request.constraint.gbnf and response.constrained
    # the server's grammar-bound reply names one option, and that option is the answer (never a guess)
    assert answer.letter in ("A", "B", "C", "D"), (answer.letter, answer.text, answer.fallbacks)
    assert by_role["answer"][1].text == f"Answer: ({answer.letter})" and answer.text == OPTIONS[answer.choice]
    assert by_role["lookup"][1].text.startswith("I want to look up Page [") and answer.pages_read


def test_a_memwalker_walk_on_the_server(served, book):
    options = {"segment_tokens": 100, "max_children": 3, "node_tokens": 40, "reasoning_chars": 60}  # short calls
    served.exchanges.clear()
    answer = served.ask(book, QUESTION, options=OPTIONS, method="memwalker", **options)
    tree = served.reader("memwalker", **options).load(served.document(book))
    assert tree is not None and tree.depth >= 2
    roles = [e.role for e in answer.trace.events]
    assert roles and roles.count("navigate") >= 1
    navigation = [(req, resp) for req, resp in served.exchanges if req.role == "navigate"]
    assert navigation and all(req.constraint is not None and resp.constrained for req, resp in navigation)


def test_an_agent_turn_calls_functions_through_the_servers_grammar(served):
    from pagemind.agent import Agent, AgentOptions

    options = AgentOptions(embedder="none", context_window=2400, max_tokens=240, max_steps=2, keep_last=2)
    agent = Agent.create(served.llm, served.store, "tiny-served", human="", options=options)
    served.exchanges.clear()
    turn = agent.say("Hello! My name is Wren.")
    assert turn.steps and all(s.valid for s in turn.steps), [s.reply for s in turn.steps if not s.valid]
    assert all(s.function for s in turn.steps) and turn.valid_action_rate == 1.0
    steps = [(req, resp) for req, resp in served.exchanges if req.role == "agent-step"]
    # this server forces no call with tool_choice "required": steps are function calls as grammar-bound JSON
    assert steps and all(not req.tools and req.constraint is not None and resp.constrained for req, resp in steps)
    with pytest.raises(ConfigError, match="native tool calling"):
        Agent.create(served.llm, served.store, "native", human="",
                     options=AgentOptions(embedder="none", tool_calling="native", max_steps=1)).say("hi")
