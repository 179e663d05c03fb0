"""Answers streamed as they are generated: the backend contract, the OpenAI-compatible stream (server-sent events),
the API, and llama.cpp's stream on the tiny embedded model."""

from __future__ import annotations

import pytest

from helpers import make_text, on_embedded_models
from pagemind.api import Pagemind
from pagemind.llm.base import LLMRequest
from pagemind.llm.client import LLM
from pagemind.llm.fake import ScriptedLLM
from pagemind.llm.mockserver import MockServer
from pagemind.llm.openai import OpenAICompatible
from pagemind.store import Store, StoreResponseCache
from pagemind.text import Document


def test_a_backend_that_cannot_stream_hands_over_the_reply_once_and_a_cached_reply_streams_at_once():
    store = Store(":memory:")
    llm = LLM(ScriptedLLM(replies=["Wren finds it."]), cache=StoreResponseCache(store))
    pieces: list[str] = []
    response, _ = llm.complete(LLMRequest.user("who?"), on_text=pieces.append)
    assert pieces == ["Wren finds it."] and response.text == "Wren finds it."
    _, event = llm.complete(LLMRequest.user("who?"), on_text=pieces.append)
    assert event.cached and pieces == ["Wren finds it."] * 2


def test_an_openai_compatible_server_streams_piece_by_piece_with_its_usage():
    with MockServer(text="Wren finds the map in the sea chest.") as server:
        backend = OpenAICompatible("mock", base_url=server.url, context_window=4096)
        assert backend.capabilities.can_stream
        pieces: list[str] = []
        response = backend.stream(LLMRequest.user("Who finds the map?"), pieces.append)
        assert len(pieces) == 8 and "".join(pieces) == response.text == "Wren finds the map in the sea chest."
        assert response.completion_tokens == 8 and response.prompt_tokens == 4  # the server's own usage
        assert server.requests[-1]["stream"] is True and server.requests[-1]["stream_options"]["include_usage"]


def test_an_error_status_on_a_stream_is_raised_as_for_a_plain_call():
    from pagemind.errors import RateLimited

    with MockServer(script=[{"status": 429, "retry_after": 0}]) as server:
        backend = OpenAICompatible("mock", base_url=server.url, context_window=4096)
        with pytest.raises(RateLimited):
            backend.stream(LLMRequest.user("q"), lambda piece: None)


def test_ask_streams_a_free_form_answer_and_never_a_multiple_choice_letter(tmp_path):
    doc = Document.from_text(make_text(8, 30))
    fake = ScriptedLLM(by_role={"answer": "Answer: the keeper"})
    pieces: list[str] = []
    with Pagemind(fake, store=tmp_path / "s.db") as pm:
        free = pm.ask(doc, "Who?", method="full", on_text=pieces.append)
        assert "".join(pieces) == "Answer: the keeper" and free.draft == "the keeper"  # streamed, then withdrawn:
        assert free.abstained and free.text.startswith("The document does not say")  # no keeper in the text
        pieces.clear()
        pm.ask(doc, "Who?", options=["the keeper", "the cook"], method="full", on_text=pieces.append)
        assert pieces == []


@pytest.mark.integration
def test_llama_cpp_streams_the_same_reply_it_would_return(tiny_model):
    for mark in on_embedded_models():
        if mark.name == "skipif" and mark.args[0]:
            pytest.skip(mark.kwargs["reason"])
    backend = tiny_model.llm.backend
    request = LLMRequest.user("Name three colours.", max_tokens=24)
    pieces: list[str] = []
    # both from a cold start: a reused prompt prefix evaluates the tail in another batch, whose float rounding may
    # change a greedy choice of the tiny model (seen on an AVX-512 build); the same state gives the same reply
    backend.forget_prompts()
    streamed = backend.stream(request, pieces.append)
    backend.forget_prompts()
    whole = backend.execute(request)
    assert len(pieces) > 3 and "".join(pieces) == streamed.text == whole.text  # temperature 0
