"""A streamed reply that breaks off (an error event mid-stream, a connection cut before ``data: [DONE]``) is retried
and never cached: against the mock OpenAI-compatible server on 127.0.0.1, through the public LLM and Pagemind API."""

from __future__ import annotations

import pytest

from helpers import make_text
from pagemind.api import Pagemind
from pagemind.errors import StreamBroken
from pagemind.llm.base import LLMRequest
from pagemind.llm.client import LLM
from pagemind.llm.mockserver import MockServer
from pagemind.llm.openai import OpenAICompatible
from pagemind.store import Store, StoreResponseCache
from pagemind.text import Document

FULL = "Wren finds the map in the sea chest below the stairs."
FAULTS = {"error event": {"stream_error": 3, "message": "CUDA out of memory"}, "cut": {"stream_cut": 3}}
BROKE = {"error event": "the server sent an error event: CUDA out of memory", "cut": "without its terminator"}


def client(server: MockServer, store: Store, **kwargs) -> tuple[LLM, list[float]]:
    sleeps: list[float] = []
    backend = OpenAICompatible("mock", base_url=server.url, context_window=4096)
    return LLM(backend, cache=StoreResponseCache(store), sleep=sleeps.append, **kwargs), sleeps


@pytest.mark.parametrize("fault", FAULTS)
def test_a_transient_break_is_retried_and_only_the_complete_reply_is_cached(fault):
    store = Store(":memory:")
    with MockServer(text=FULL, script=[FAULTS[fault]]) as server:
        llm, sleeps = client(server, store)
        pieces: list[str] = []
        response, event = llm.complete(LLMRequest.user("Who finds the map?"), on_text=pieces.append)
        assert response.text == FULL and not event.cached
        assert len(server.requests) == 2 and len(sleeps) == 1  # broken once, retried once
        assert "".join(pieces) == FULL  # the retry hands on only what the broken attempt had not shown
        again, event = llm.complete(LLMRequest.user("Who finds the map?"), on_text=pieces.append)
        plain, _ = llm.complete(LLMRequest.user("Who finds the map?"))
        assert event.cached and again.text == plain.text == FULL and len(server.requests) == 2
        llm.backend.close()


@pytest.mark.parametrize("fault", FAULTS)
def test_a_persistent_break_reaches_the_caller_after_the_retries_and_nothing_is_cached(fault):
    store = Store(":memory:")
    with MockServer(text=FULL, stream_fault=FAULTS[fault]) as server:
        llm, sleeps = client(server, store, max_retries=2)
        with pytest.raises(StreamBroken, match=BROKE[fault]) as caught:
            llm.complete(LLMRequest.user("Who finds the map?"), on_text=lambda piece: None)
        assert server.url not in str(caught.value) and "after 3 chunks" in str(caught.value)  # named, not placed
        assert len(server.requests) == 3 and len(sleeps) == 2  # the first try and two retries
        server.stream_fault = None  # the server recovers: the next ask computes the whole reply
        pieces: list[str] = []
        response, event = llm.complete(LLMRequest.user("Who finds the map?"), on_text=pieces.append)
        assert not event.cached and response.text == "".join(pieces) == FULL and len(server.requests) == 4
        again, event = llm.complete(LLMRequest.user("Who finds the map?"))
        assert event.cached and again.text == FULL
        llm.backend.close()


def test_the_backend_accepts_a_stream_whose_last_chunk_finished_even_without_its_terminator():
    with MockServer(text="Wren finds it.", script=[{"stream_cut": 3}, {"stream_error": 3}]) as server:
        backend = OpenAICompatible("mock", base_url=server.url, context_window=4096)
        response = backend.stream(LLMRequest.user("q"), lambda piece: None)  # cut after the finish reason
        assert response.text == "Wren finds it." and response.finish_reason == "stop"
        with pytest.raises(StreamBroken, match="error event"):  # an error event after the last chunk still breaks
            backend.stream(LLMRequest.user("q"), lambda piece: None)
        backend.close()


def test_a_retry_that_differs_from_what_the_broken_attempt_showed_is_handed_on_whole():
    store = Store(":memory:")
    with MockServer(text=FULL, script=[{"stream_cut": 2, "text": "Nobody finds anything"}]) as server:
        llm, _ = client(server, store)
        pieces: list[str] = []
        response, _ = llm.complete(LLMRequest.user("Who?"), on_text=pieces.append)
        assert response.text == FULL and "".join(pieces) == "Nobody finds " + FULL
        llm.backend.close()


def test_pagemind_ask_retries_a_cut_answer_and_a_second_ask_is_served_from_the_cache(tmp_path):
    doc = Document.from_text(make_text(8, 30))
    with MockServer(text="Answer: the keeper of the light", script=[{"stream_cut": 2}]) as server:
        backend = OpenAICompatible("mock", base_url=server.url, context_window=8192)
        with Pagemind(backend, store=tmp_path / "s.db") as pm:
            pm.llm.backoff = 0.0
            pieces: list[str] = []
            first = pm.ask(doc, "Who?", method="full", on_text=pieces.append)
            assert first.draft == "the keeper of the light" and "".join(pieces) == "Answer: the keeper of the light"
            asked = len(server.requests)
            second = pm.ask(doc, "Who?", method="full")
            assert second.text == first.text and len(server.requests) == asked  # from the cache
        backend.close()
