"""The LLM contract: one typed request in, one typed response out.

A backend implements :meth:`Backend.execute` and declares its capabilities as attributes. Everything
else (cache, retries, concurrency limits, usage accounting, the context-window guard) is added once
for every backend by :class:`pagemind.llm.client.LLM`.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ..hashing import content_hash

Role = Literal["system", "user", "assistant"]
TokenCounting = Literal["model", "server", "estimate"]
MESSAGE_OVERHEAD_TOKENS = 8  # chat-template tokens per message (role markers, separators), when not measured


@dataclass(frozen=True)
class Message:
    role: Role
    content: str


@dataclass(frozen=True)
class Constraint:
    """A fixed form the reply must take, for backends that can enforce it.

    ``gbnf`` is a llama.cpp grammar, ``json_schema`` a JSON schema. A backend enforces what it declares
    in its capabilities and ignores the rest; the caller's tolerant parser always checks the reply.
    """

    name: str
    gbnf: str | None = None
    json_schema: dict[str, Any] | None = None


@dataclass(frozen=True)
class Tool:
    """A function the model may call (native tool calling): name, description and a JSON schema of its
    arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: str  # JSON text, as the model wrote it (the caller's parser validates it)


@dataclass(frozen=True)
class LLMRequest:
    messages: tuple[Message, ...]
    role: str = "generic"  # what the call is for: paginate, gist, lookup, answer, summarise, navigate...
    max_tokens: int = 512
    temperature: float = 0.0
    stop: tuple[str, ...] = ()
    constraint: Constraint | None = None
    tools: tuple[Tool, ...] = ()  # non-empty: the reply must call one of these (backends with supports_tools)
    seed: int | None = None  # the sampler's seed (a client's, for replies it can repeat at a temperature above 0)
    logprobs: int = 0  # > 0: return each reply token's log-probability and this many top alternatives (backends
    # with supports_logprobs; others reply without them)

    @classmethod
    def user(cls, text: str, **kwargs: Any) -> LLMRequest:
        return cls(messages=(Message("user", text),), **kwargs)

    def prompt_text(self) -> str:
        return "\n".join(m.content for m in self.messages)

    def cache_key(self, model_id: str, scope: str = "") -> str:
        """Content address of (model, request, scope); the role is bookkeeping and not part of it. ``scope``: whose
        cache the reply goes to (``""``: the local user's, whose addresses are those from before scopes existed)."""
        payload = asdict(self)
        payload.pop("role")
        if not payload["tools"]:
            payload.pop("tools")  # requests without tools keep the addresses they had before tools existed
        if payload["seed"] is None:
            payload.pop("seed")  # so do requests without a seed
        if not payload["logprobs"]:
            payload.pop("logprobs")  # and requests that ask for no log-probabilities
        payload["model"] = model_id
        if scope:
            payload["scope"] = scope
        return content_hash(payload)


@dataclass(frozen=True)
class LLMResponse:
    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    model: str
    cached: bool = False
    finish_reason: str = "stop"
    constrained: bool = False  # True when the backend enforced request.constraint
    tool_calls: tuple[ToolCall, ...] = ()  # native tool calls, when the request offered tools
    logprobs: tuple[TokenLogprob, ...] = ()  # per reply token, when the request asked and the backend returns them


@dataclass(frozen=True)
class TokenLogprob:
    """One reply token's log-probability and its most likely alternatives (``top``: (token, log-probability))."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass
class Capabilities:
    """What a backend can do, declared by it or discovered from its server (never guessed)."""

    context_window: int = 8192
    supports_grammar: bool = False  # enforces ``Constraint.gbnf``; methods turn their decision grammars on by this
    supports_json_schema: bool = False
    supports_tools: bool = False  # native tool calling (OpenAI-style ``tools`` with a required call)
    supports_logprobs: bool = False  # returns the reply tokens' log-probabilities (``LLMRequest.logprobs``)
    max_concurrency: int = 8  # how many requests may usefully run at once
    has_tokenizer: bool = False
    can_stream: bool = False  # :meth:`Backend.stream` delivers the reply as it is generated (else in one piece)
    token_counts: TokenCounting = "estimate"  # how count_tokens counts: "model" (in process), "server", "estimate"
    window_source: str = "declared"  # where context_window comes from
    constraint: str = ""  # how constraints are enforced, in words (``pagemind models info``)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def estimated_counts(self) -> bool:
        """True when token counts are the estimate of :func:`estimate_tokens`, not a tokenizer's."""
        return self.token_counts == "estimate"


class Backend(ABC):
    """A model behind one method. Subclasses set ``model_id`` and ``capabilities``."""

    model_id: str = "unknown"  # the model and, for a server, where it is served (messages, the reply cache)
    provider: str = "unknown"  # who serves the model, as OpenTelemetry's gen_ai.provider.name names it
    capabilities: Capabilities

    @property
    def model_identity(self) -> str:
        """Which model this is, whatever serves it: what a stored memory depends on (``Reader.memory_model``), so
        replicas or a moved server find the memories the same model built. A backend whose ``model_id`` names a
        place (a server's URL) overrides it; by default the ``model_id``."""
        return self.model_id

    @abstractmethod
    def execute(self, request: LLMRequest) -> LLMResponse:
        """Run one request. Raise the typed errors of :mod:`pagemind.errors` on failure."""

    def stream(self, request: LLMRequest, on_text: Callable[[str], None]) -> LLMResponse:
        """Run one request, handing the reply's text to ``on_text`` piece by piece as it is generated. The default
        (a backend that cannot stream) hands it over in one piece when it is done. A stream that breaks off raises
        (:class:`pagemind.errors.StreamBroken`): only a complete reply is returned, so only it is cached."""
        response = self.execute(request)
        on_text(response.text)
        return response

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` with the model's own tokenizer when it has one, else an estimate."""
        return estimate_tokens(text)

    def count_tokens_many(self, texts: Sequence[str]) -> list[int]:
        """Counts for many texts at once (backends that count over HTTP batch them)."""
        return [self.count_tokens(t) for t in texts]

    def prompt_tokens(self, request: LLMRequest) -> int:
        """Tokens the whole request occupies in the context (messages plus chat-template overhead, and the
        tool definitions a server renders into the prompt)."""
        messages = sum(self.count_tokens(m.content) + MESSAGE_OVERHEAD_TOKENS for m in request.messages)
        return messages + tool_tokens(self, request)

    def close(self) -> None:  # noqa: B027 - optional: a backend holding nothing has nothing to release
        """Release resources (HTTP pools, model memory)."""


def tool_tokens(backend: Backend, request: LLMRequest) -> int:
    """About what the tool definitions of ``request`` add to the prompt (their JSON text)."""
    if not request.tools:
        return 0
    return backend.count_tokens(json.dumps([asdict(t) for t in request.tools], ensure_ascii=False))


def estimate_tokens(text: str) -> int:
    """A conservative token estimate for backends without a tokenizer (about 4 characters a token,
    never fewer than 1.4 tokens a word), so that guards err on the safe side."""
    if not text:
        return 0
    words = len(text.split())
    return max(int(len(text) / 3.6) + 1, int(words * 1.4) + 1)
