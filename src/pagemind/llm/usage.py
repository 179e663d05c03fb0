"""Usage accounting and traces: every LLM call is recorded with its role, tokens and seconds."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TraceEvent:
    role: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    cached: bool
    reply: str
    decision: str = ""  # what the caller made of the reply (set through Trace.note)


@dataclass
class Usage:
    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    cached_prompt_tokens: int = 0  # what the calls served from the cache would have cost
    cached_completion_tokens: int = 0

    def add(self, event: TraceEvent) -> None:
        self.calls += 1
        self.cached_calls += int(event.cached)
        if event.cached:
            self.cached_prompt_tokens += event.prompt_tokens
            self.cached_completion_tokens += event.completion_tokens
        else:
            self.prompt_tokens += event.prompt_tokens
            self.completion_tokens += event.completion_tokens
            self.seconds += event.seconds

    @property
    def all_prompt_tokens(self) -> int:
        """Prompt tokens of every call, those served from the cache included (as OpenAI counts a prompt cache)."""
        return self.prompt_tokens + self.cached_prompt_tokens

    @property
    def all_completion_tokens(self) -> int:
        return self.completion_tokens + self.cached_completion_tokens

    def merged(self, other: Usage) -> Usage:
        return Usage(
            self.calls + other.calls,
            self.cached_calls + other.cached_calls,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.seconds + other.seconds,
            self.cached_prompt_tokens + other.cached_prompt_tokens,
            self.cached_completion_tokens + other.cached_completion_tokens,
        )

    def as_dict(self) -> dict[str, float]:
        return {
            "calls": self.calls,
            "cached_calls": self.cached_calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "seconds": round(self.seconds, 3),
            "cached_prompt_tokens": self.cached_prompt_tokens,
            "cached_completion_tokens": self.cached_completion_tokens,
        }


@dataclass
class Trace:
    """The LLM calls of one operation (an index build, one answer), in completion order.

    Tokens and seconds of cached calls are not counted in :attr:`usage`: they cost nothing. ``listener`` (e.g. a
    run's recorder) hears each change as it happens: ``("call", event)``, ``("decision", (event, decision))`` (the event
    as it was recorded), ``("note", text)``; it is called outside the trace's lock, from the thread that made the call.
    """

    events: list[TraceEvent] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    listener: Callable[[str, Any], None] | None = field(default=None, repr=False, compare=False)

    def record(self, event: TraceEvent) -> None:
        with self._lock:
            self.events.append(event)
        if self.listener is not None:
            self.listener("call", event)

    def decide(self, event: TraceEvent, decision: str) -> None:
        """Attach the caller's reading of a reply to its event."""
        decided = None
        with self._lock:
            for i in range(len(self.events) - 1, -1, -1):
                if self.events[i] is event:
                    decided = self.events[i] = TraceEvent(**{**event.__dict__, "decision": decision})
                    break
        if decided is not None and self.listener is not None:
            self.listener("decision", (event, decision))

    def note(self, text: str) -> None:
        with self._lock:
            self.notes.append(text)
        if self.listener is not None:
            self.listener("note", text)

    @property
    def usage(self) -> Usage:
        u = Usage()
        for e in self.events:
            u.add(e)
        return u

    def by_role(self) -> dict[str, Usage]:
        out: dict[str, Usage] = {}
        for e in self.events:
            out.setdefault(e.role, Usage()).add(e)
        return out
