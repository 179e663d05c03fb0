"""A scripted fake LLM for tests (yours and ours). Never a default: it must be asked for by name.

Two ways to script it, combinable:

* a queue: ``ScriptedLLM(["Break point: <3>", "a gist"])`` answers in order;
* per role: ``ScriptedLLM(by_role={"gist": lambda req: "short"})`` answers every request of that role
  with a string or a function of the request (queued answers for the role are used first).

Every request is recorded in ``history``. Replies are counted in whitespace tokens.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable

from ..errors import ScriptExhausted
from .base import Backend, Capabilities, LLMRequest, LLMResponse

Reply = str | Callable[[LLMRequest], "str | LLMResponse"] | BaseException


class ScriptedLLM(Backend):
    provider = "scripted"

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        by_role: dict[str, Reply | Iterable[Reply]] | None = None,
        default: Reply | None = None,
        context_window: int = 32768,
        model_id: str = "scripted",
        supports_grammar: bool = False,
        supports_json_schema: bool = False,
        supports_logprobs: bool = False,
    ) -> None:
        self.queue: deque[Reply] = deque(replies)
        self.by_role: dict[str, Reply] = {}
        self.role_queues: dict[str, deque[Reply]] = {}
        for role, reply in (by_role or {}).items():
            if isinstance(reply, (list, tuple)):
                self.role_queues[role] = deque(reply)
            else:
                self.by_role[role] = reply  # type: ignore[assignment]
        self.default = default
        self.model_id = model_id
        self.capabilities = Capabilities(
            context_window=context_window, supports_grammar=supports_grammar,
            supports_json_schema=supports_json_schema, supports_logprobs=supports_logprobs, max_concurrency=4,
            has_tokenizer=True, token_counts="model", window_source="scripted",
        )
        self.history: list[LLMRequest] = []
        self._lock = threading.Lock()

    def enqueue(self, *replies: Reply) -> None:
        self.queue.extend(replies)

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def _next(self, request: LLMRequest) -> Reply:
        q = self.role_queues.get(request.role)
        if q:
            return q.popleft()
        if request.role in self.by_role:
            return self.by_role[request.role]
        if self.queue:
            return self.queue.popleft()
        if self.default is not None:
            return self.default
        raise ScriptExhausted(f"scripted LLM has no reply for a {request.role!r} request")

    def execute(self, request: LLMRequest) -> LLMResponse:
        with self._lock:
            self.history.append(request)
            reply = self._next(request)
        if isinstance(reply, BaseException):
            raise reply
        text = reply(request) if callable(reply) else reply
        if isinstance(text, LLMResponse):  # a reply that says more than its text (a finish_reason)
            return text
        return LLMResponse(
            text=text,
            prompt_tokens=self.count_tokens(request.prompt_text()),
            completion_tokens=self.count_tokens(text),
            seconds=0.0,
            model=self.model_id,
        )

    def roles(self) -> list[str]:
        return [r.role for r in self.history]
