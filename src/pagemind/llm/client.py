"""The one wrapper every method talks to: cache, retries, concurrency, context guard, accounting."""

from __future__ import annotations

import copy
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from ..errors import ContextWindowExceeded, LLMError, RateLimited, is_retryable
from .base import Backend, LLMRequest, LLMResponse
from .usage import Trace, TraceEvent, Usage


class ResponseCache(Protocol):
    """Replies by request (:meth:`LLMRequest.cache_key`), and prompts' token counts by model and prompt."""

    def get(self, key: str) -> LLMResponse | None: ...

    def put(self, key: str, response: LLMResponse) -> None: ...

    def tokens(self, key: str) -> int | None: ...

    def put_tokens(self, key: str, tokens: int) -> None: ...


class LLM:
    """A backend plus the behaviour every backend shares.

    Args:
        backend: the model.
        cache: a response cache (content-addressed on model + request); ``None`` disables caching.
        concurrency: the most requests in flight at once (capped by the backend's own limit).
        max_retries: retries of retryable errors (rate limits, 5xx, timeouts), with exponential backoff.
        backoff: the first pause in seconds; doubled each retry, with jitter.
        scope: whose replies the cache holds: part of every cache key, so a reply cached in one scope is never
            served in another (``""``: the local user's; the service gives each other user their own, see
            :meth:`scoped`). Methods also key their stored memories by it (``Reader.memory_key``).
    """

    def __init__(
        self,
        backend: Backend,
        *,
        cache: ResponseCache | None = None,
        concurrency: int = 8,
        max_retries: int = 4,
        backoff: float = 1.0,
        sleep=time.sleep,
        scope: str = "",
    ) -> None:
        self.backend = backend
        self.cache = cache
        self.scope = scope
        self.concurrency = max(1, min(concurrency, backend.capabilities.max_concurrency))
        self.max_retries = max_retries
        self.backoff = backoff
        self.usage = Usage()
        self._sleep = sleep
        self._usage_lock = threading.Lock()
        # The bound holds across every caller (a build's pool, the eval runner's documents...), not per pool.
        self._slots = threading.BoundedSemaphore(self.concurrency)

    def scoped(self, scope: str) -> LLM:
        """This client for one scope (a user of the service): the same backend, cache store, concurrency bound
        and usage totals, with replies cached, and memories keyed, under ``scope``."""
        if scope == self.scope:
            return self
        view = copy.copy(self)  # shallow: the backend, the slots, the usage and its lock are shared
        view.scope = scope
        return view

    # --- facts -------------------------------------------------------------------------------------
    @property
    def model_id(self) -> str:
        return self.backend.model_id

    @property
    def model_identity(self) -> str:
        """Which model, not where it is served (:attr:`Backend.model_identity`): what stored memories depend on."""
        return self.backend.model_identity

    @property
    def context_window(self) -> int:
        return self.backend.capabilities.context_window

    def count_tokens(self, text: str) -> int:
        return self.count_tokens_many([text])[0]

    def count_tokens_many(self, texts: Sequence[str]) -> list[int]:
        """Counts for many texts (one batched call on servers whose tokenize endpoint takes a list); a count made
        before for this model is found in the cache, so a repeated answer opens no tokenizer."""
        keys = [self._count_key("text", t) for t in texts]
        found = [self.cache.tokens(k) if self.cache is not None and k is not None else None for k in keys]
        missing = [i for i, n in enumerate(found) if n is None]
        if missing:
            counted = self.backend.count_tokens_many([texts[i] for i in missing])
            for i, n in zip(missing, counted):
                found[i] = n
                if self.cache is not None and keys[i] is not None:
                    self.cache.put_tokens(keys[i], n)  # type: ignore[arg-type]
        return [int(n or 0) for n in found]

    def prompt_tokens(self, request: LLMRequest) -> int:
        """Tokens ``request`` occupies in the window (its messages after the chat template, its tools), counted
        once per model and kept in the cache."""
        key = self._count_key("prompt", request)
        if key is not None and self.cache is not None:
            kept = self.cache.tokens(key)
            if kept is not None:
                return kept
        n = self.backend.prompt_tokens(request)
        if key is not None and self.cache is not None:
            self.cache.put_tokens(key, n)
        return n

    def _count_key(self, kind: str, what: str | LLMRequest) -> str | None:
        """The cache address of a count: the model's identity and the text, or the request's messages and tools
        (None: counts not kept, where the backend only estimates them: that costs nothing)."""
        if self.cache is None or self.backend.capabilities.token_counts == "estimate":
            return None
        from ..hashing import content_hash

        if isinstance(what, str):
            payload: object = {"count": kind, "model": self.model_identity, "text": what}
        else:
            payload = {"count": kind, "model": self.model_identity,
                       "messages": [[m.role, m.content] for m in what.messages],
                       "tools": [repr(t) for t in what.tools]}
        return content_hash(payload)

    def fits(self, request: LLMRequest) -> bool:
        return self.prompt_tokens(request) + request.max_tokens <= self.context_window

    def check_fits(self, request: LLMRequest) -> None:
        """The context-window guard: never send a prompt the model cannot hold with its reply."""
        n = self.prompt_tokens(request)
        if n + request.max_tokens > self.context_window:
            raise ContextWindowExceeded(
                f"{request.role} prompt needs {n} tokens + {request.max_tokens} for the reply, "
                f"but {self.model_identity} holds {self.context_window}",
                prompt_tokens=n,
                context_window=self.context_window,
            )

    # --- calls -------------------------------------------------------------------------------------
    def complete(self, request: LLMRequest, trace: Trace | None = None,
                 on_text: Callable[[str], None] | None = None) -> tuple[LLMResponse, TraceEvent]:
        """Run one request (cached, guarded, retried). Returns the response and its trace event. ``on_text``
        receives the reply as it is generated (a cached reply at once); a call retried after a stream broke off
        streams again, from where the text already handed over ends when the new reply repeats it."""
        key = self._key(request)
        if key is not None and self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:  # the same request to the same model was answered: it fitted, nothing to count
                if on_text is not None:
                    on_text(hit.text)
                return hit, self._account(request, hit, trace, cached=True)
        self.check_fits(request)
        attempt = 0
        shown = None if on_text is None else _Shown(on_text)
        while True:
            try:
                with self._slots:
                    response = (self.backend.execute(request) if shown is None
                                else self.backend.stream(request, shown.attempt()))
                break
            except LLMError as err:
                if not is_retryable(err) or attempt >= self.max_retries:
                    raise
                self._sleep(self._pause(err, attempt))
                attempt += 1
        # Only a complete reply gets here: a backend raises for a broken one (StreamBroken), so a partial reply is
        # never cached, and never served to a later call.
        if key is not None and self.cache is not None:
            self.cache.put(key, response)
        return response, self._account(request, response, trace, cached=False)

    def text(self, request: LLMRequest, trace: Trace | None = None) -> str:
        return self.complete(request, trace)[0].text

    def map(
        self, requests: Sequence[LLMRequest], trace: Trace | None = None
    ) -> list[tuple[LLMResponse, TraceEvent]]:
        """Run independent requests concurrently (up to ``concurrency``); results in request order."""
        if self.concurrency == 1 or len(requests) <= 1:
            return [self.complete(r, trace) for r in requests]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests))) as pool:
            return list(pool.map(lambda r: self.complete(r, trace), requests))

    # --- internals ---------------------------------------------------------------------------------
    def _key(self, request: LLMRequest) -> str | None:
        if request.temperature > 0:
            return None  # sampled replies are not reproducible: never serve them from the cache
        return request.cache_key(self.model_id, self.scope)

    def _pause(self, err: LLMError, attempt: int) -> float:
        if isinstance(err, RateLimited) and err.retry_after:
            return float(err.retry_after)
        return self.backoff * (2**attempt) * (0.5 + random.random())

    def _account(
        self, request: LLMRequest, response: LLMResponse, trace: Trace | None, cached: bool
    ) -> TraceEvent:
        event = TraceEvent(
            role=request.role,
            prompt_tokens=response.prompt_tokens,
            completion_tokens=response.completion_tokens,
            seconds=0.0 if cached else response.seconds,
            cached=cached,
            reply=response.text,
        )
        with self._usage_lock:
            self.usage.add(event)
        if trace is not None:
            trace.record(event)
        return event


class _Shown:
    """The text a streamed call has handed to ``on_text`` across its attempts: a retry hands on only what goes past
    it (a reply at temperature 0 repeats what the broken attempt showed), or everything once the reply differs."""

    def __init__(self, on_text: Callable[[str], None]) -> None:
        self.on_text = on_text
        self.text = ""  # handed over so far
        self.current = ""  # the current attempt's reply so far

    def attempt(self) -> Callable[[str], None]:
        self.current = ""
        return self.hand

    def hand(self, piece: str) -> None:
        self.current += piece
        if self.text.startswith(self.current):
            return  # a broken attempt showed it already
        fresh = self.current[len(self.text):] if self.current.startswith(self.text) else self.current
        self.text = self.current  # (a reply that differs from what was shown is handed on whole)
        self.on_text(fresh)
