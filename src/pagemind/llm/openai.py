"""A backend for any OpenAI-compatible chat-completions server (vLLM, SGLang, llama.cpp, llama-cpp-python, Ollama,
LM Studio, OpenAI).

The backend makes exactly one HTTP call per request and raises a typed error on failure; retries,
backoff, caching and concurrency limits belong to :class:`pagemind.llm.client.LLM`. On first use it asks the
server what it is, which context window it serves and whether it can count tokens (see
:mod:`pagemind.llm.servers`); its capabilities are what the server said or what the settings declared, never a
guess. When nothing tells the window, it refuses and names ``--context-window``.
"""

from __future__ import annotations

import json
import os
import re
import ssl
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

import httpx

from ..errors import (
    BackendUnavailable,
    BadRequest,
    ConfigError,
    ContextWindowExceeded,
    RateLimited,
    ServerError,
    StreamBroken,
    ToolsRefused,
)
from .base import Backend, Capabilities, LLMRequest, LLMResponse, TokenLogprob, ToolCall, estimate_tokens, tool_tokens
from .servers import (
    OFFICIAL_HOSTS,
    PER_MESSAGE_TOKENS,
    TEMPLATE_ALLOWANCE_TOKENS,
    Discovery,
    Probe,
    Server,
    TokenCounts,
    count_many,
    discover,
    strict_compatible,
)

OFFICIAL_BASE_URL = "https://api.openai.com/v1"
CONTEXT_MARKERS = ("context_length_exceeded", "maximum context length", "context length", "too many tokens",
                   "context size")  # the last is llama.cpp server's wording
WINDOW_IN_ERROR = re.compile(r"maximum context length is (\d+)")
LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}


def _excerpt(text: str, limit: int = 200) -> str:
    """One line of at most ``limit`` characters, with no URL in it (a server's or a proxy's address, with what
    credentials it carries, is never shown to a user)."""
    line = " ".join(_URL.sub("<url>", text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.I)


def _retry_after(headers: httpx.Headers) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


class OpenAICompatible(Backend):
    """The chat-completions API over ``httpx``; one call per request, typed errors, no retries.

    Args:
        model: the model name the server serves.
        base_url: e.g. ``http://localhost:8000/v1``; else ``OPENAI_BASE_URL``, else the OpenAI API.
        context_window: overrides what the server reports (required where nothing reports it).
        server_kind: ``auto`` (ask the server) or one of :data:`pagemind.llm.servers.SERVER_KINDS`.
        tools: offer native tool calling where the server kind honours it.
    """
    provider = "openai"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 600.0,
        context_window: int | None = None,
        max_concurrency: int = 32,
        env: Mapping[str, str] | None = None,
        *,
        server_kind: str = "auto",
        tools: bool = True,
    ) -> None:
        env = os.environ if env is None else env
        base = (base_url or env.get("OPENAI_BASE_URL") or OFFICIAL_BASE_URL).rstrip("/")
        parts = urlsplit(base)
        # where, as messages and the reply cache name it: never with the URL's credentials (user:password@)
        shown = parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl() if "@" in parts.netloc else base
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"OpenAI-compatible base URL must be http(s)://host[:port]/..., got {shown!r}")
        self.api_key = api_key or env.get("OPENAI_API_KEY") or None
        if parts.hostname in OFFICIAL_HOSTS and not self.api_key:
            raise ConfigError(
                f"{shown} needs an API key: set OPENAI_API_KEY or pass api_key= "
                "(local servers such as vLLM, Ollama or llama.cpp need none)"
            )
        if context_window is not None and context_window <= 0:
            raise ConfigError(f"--context-window must be positive, got {context_window}")
        self.model = model
        self.base_url = base
        self.url = f"{base}/chat/completions"
        # how messages name it: by the model, never by where it is served (a user of the service never learns the
        # server's address or its credentials from an error; `pagemind models info` shows where it is)
        self.named = f"openai:{model} (its server)"
        self.model_id = f"openai:{model}@{shown}"
        self.server_kind = server_kind
        self.declared_window = context_window
        self.tools = tools
        self.max_concurrency = max(1, max_concurrency)
        self._headers = {"Content-Type": "application/json", "User-Agent": "pagemind"}
        if self.api_key:
            self._headers["Authorization"] = f"Bearer {self.api_key}"
        self._timeout = httpx.Timeout(timeout, connect=min(timeout, 10.0))
        self._limits = httpx.Limits(max_connections=self.max_concurrency)
        self._trust_env = parts.hostname not in LOCAL_HOSTS  # never route loopback through a proxy
        # Plain http to loopback never uses TLS (no proxy, redirects not followed): a TLS context with no CA loaded
        # (a TLS connection would fail closed) spares loading the CA bundle, ~20 ms of every start.
        self._verify: Any = (ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT) if parts.scheme == "http" and not self._trust_env
                             else True)
        self._client = httpx.Client(
            headers=self._headers, timeout=self._timeout, limits=self._limits, trust_env=self._trust_env,
            verify=self._verify,
        )
        self._probe = Probe(self._client, base, timeout=min(timeout, 30.0), named=self.named)
        self._official = parts.hostname in OFFICIAL_HOSTS
        self._capabilities: Capabilities | None = None
        self._server: Server | None = None
        self.discovery: Discovery | None = None
        self._discover_lock = threading.Lock()
        self.token_cache = TokenCounts()

    # --- capabilities, discovered on first use -------------------------------------------------------
    @property
    def capabilities(self) -> Capabilities:  # type: ignore[override]
        """What the server reported (or the settings declared); asks the server on first access."""
        if self._capabilities is None:
            with self._discover_lock:
                if self._capabilities is None:
                    self._capabilities = self._discover()
        return self._capabilities

    @property
    def model_identity(self) -> str:
        """Which model, not where: ``openai:NAME``, NAME being the model the server reports serving when it serves
        one model whatever the request names (llama.cpp's server: its model file or alias), else the name requested
        (the server routes by it). Replicas and a moved server keep the memories of the same model."""
        self.capabilities  # noqa: B018 - discovery reads what the server serves
        served = self.discovery.served if self.discovery is not None else None
        return f"openai:{served or self.model}"

    @property
    def server(self) -> Server:
        self.capabilities  # noqa: B018 - discovery fills it
        assert self._server is not None
        return self._server

    def _discover(self) -> Capabilities:
        probe = None if self._official and self.server_kind in ("auto", "openai") else self._probe
        server, found = discover(probe, self.model, self.server_kind, self.declared_window)
        self._server, self.discovery = server, found
        if found.context_window is None:
            raise ConfigError(
                f"{self.model_id}: the server does not report its context window (server kind {found.kind}: "
                f"{found.kind_source}); pass --context-window N (or PAGEMIND_CONTEXT_WINDOW, or context_window=) "
                f"with the window the server was started with"
            )
        bounds = [self.max_concurrency, server.max_concurrency, found.slots]
        return Capabilities(
            context_window=found.context_window,
            supports_grammar=server.supports_grammar,
            supports_json_schema=server.json_schema,
            supports_tools=self.tools and server.tools,
            supports_logprobs=server.logprobs,
            max_concurrency=min(b for b in bounds if b),
            has_tokenizer=found.token_counts == "server", can_stream=True,
            token_counts=found.token_counts,
            window_source=found.window_source,
            constraint=server.describe_constraint(),
            extra={"server_kind": found.kind, "kind_source": found.kind_source, "version": found.version,
                   "tokenizer": server.tokenize_route if found.token_counts == "server" else None,
                   "notes": list(found.notes)},
        )

    # --- token counts ------------------------------------------------------------------------------
    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` by the server's tokenizer (cached per text), else the documented estimate."""
        return self.count_tokens_many([text])[0]

    def count_tokens_many(self, texts: Sequence[str]) -> list[int]:
        """Counts for many texts: cached ones from the LRU, the rest in one batched call where possible."""
        if self.capabilities.token_counts != "server":
            return [estimate_tokens(t) for t in texts]
        keys = [TokenCounts.key(t) for t in texts]
        counts = [self.token_cache.get(k) if t else 0 for t, k in zip(texts, keys)]
        missing = sorted({t for t, n in zip(texts, counts) if n is None})
        if missing:
            fresh = count_many(self.server, self._probe, self.model, missing)
            if fresh is None:
                raise ServerError(f"{self._probe.root}: the tokenize endpoint stopped answering")
            found = dict(zip(missing, fresh))
            for text, n in found.items():
                self.token_cache.put(TokenCounts.key(text), n)
            counts = [found[t] if n is None else n for t, n in zip(texts, counts)]
        return counts  # type: ignore[return-value]

    def prompt_tokens(self, request: LLMRequest) -> int:
        """The whole prompt: exact where the server renders its chat template for counting (vLLM, llama.cpp),
        else the counted messages plus per-message overhead and a template allowance."""
        if self.capabilities.token_counts != "server":
            return super().prompt_tokens(request)
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        key = TokenCounts.key(json.dumps(messages, ensure_ascii=False), "chat")
        n = self.token_cache.get(key)
        if n is None:
            n = self.server.chat_count(self._probe, self.model, messages)
            if n is None:
                counts = self.count_tokens_many([m.content for m in request.messages])
                n = sum(counts) + PER_MESSAGE_TOKENS * len(counts) + TEMPLATE_ALLOWANCE_TOKENS
            self.token_cache.put(key, n)
        return n + tool_tokens(self, request)

    # --- requests ----------------------------------------------------------------------------------
    def _body(self, request: LLMRequest) -> tuple[dict[str, Any], bool]:
        """The JSON body, and whether it asks the server to enforce the constraint (with its own mechanism)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if request.stop:
            body["stop"] = list(request.stop)
        if request.seed is not None:
            body["seed"] = request.seed
        if request.logprobs and self.capabilities.supports_logprobs:
            body["logprobs"], body["top_logprobs"] = True, min(20, request.logprobs)
        body.update(self.server.neutral_sampling)
        if request.tools and self.capabilities.supports_tools:  # native tool calling: one call is required
            body["tools"] = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                               "parameters": t.parameters}} for t in request.tools]
            body["tool_choice"] = "required"
            return body, True
        if request.constraint is not None:
            fields = self.server.constraint_fields(request.constraint)
            if fields is not None:
                body.update(fields)
                return body, True
        return body, False

    def execute(self, request: LLMRequest) -> LLMResponse:
        body, constrained = self._body(request)
        started = time.perf_counter()
        try:
            reply = self._client.post(self.url, json=body)
        except httpx.HTTPError as exc:
            raise self._unavailable(exc) from exc
        return self._parse(reply, request, constrained, time.perf_counter() - started)

    def stream(self, request: LLMRequest, on_text: Callable[[str], None]) -> LLMResponse:
        """The reply as the server generates it (``stream: true``, server-sent events); requests with tools in one
        piece. Error statuses are read and raised as :meth:`execute` raises them. A stream that breaks off (an
        error event, or an end without ``data: [DONE]`` and without a finish reason) raises :class:`StreamBroken`:
        the partial reply is never returned, so it is never cached."""
        if request.tools:
            return super().stream(request, on_text)
        body, constrained = self._body(request)
        body.update(stream=True, stream_options={"include_usage": True})
        started = time.perf_counter()
        pieces: list[str] = []
        tokens: list[TokenLogprob] = []
        finish: str | None = None
        usage: dict[str, Any] = {}
        done, event = False, ""
        try:
            with self._client.stream("POST", self.url, json=body) as reply:
                if reply.status_code != 200:
                    reply.read()
                    return self._parse(reply, request, constrained, time.perf_counter() - started)
                for line in reply.iter_lines():
                    if line.startswith("event:"):
                        event = line[6:].strip()  # llama.cpp and others may name an error event
                        continue
                    if not line.startswith("data:"):
                        event = event if line else ""  # a blank line ends the event
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        done = True
                        break
                    try:
                        chunk = json.loads(data)
                    except ValueError as exc:
                        raise ServerError(f"{self.named}: a malformed event in the stream: {_excerpt(data)}") from exc
                    if not isinstance(chunk, dict):
                        raise ServerError(f"{self.named}: a malformed event in the stream: {_excerpt(data)}")
                    if event == "error" or chunk.get("error"):
                        raise self._broken(f"the server sent an error event: {_error_text(chunk, data)}", pieces)
                    usage = chunk.get("usage") or usage
                    for choice in chunk.get("choices") or ():
                        piece = (choice.get("delta") or {}).get("content") or ""
                        if piece:
                            pieces.append(piece)
                            on_text(piece)
                        if request.logprobs and choice.get("logprobs"):  # each chunk's tokens, as a reply's
                            tokens.extend(_logprobs(choice.get("logprobs")))
                        finish = choice.get("finish_reason") or finish
        except httpx.HTTPError as exc:
            raise self._unavailable(exc) from exc
        if not done and finish is None:
            raise self._broken("the stream ended without its terminator (data: [DONE]) or a finish reason "
                               "(the connection was cut)", pieces)
        text = "".join(pieces)
        return LLMResponse(
            text=text, prompt_tokens=int(usage.get("prompt_tokens") or estimate_tokens(request.prompt_text())),
            completion_tokens=int(usage.get("completion_tokens") or estimate_tokens(text)),
            seconds=time.perf_counter() - started, model=self.model_id, finish_reason=finish or "stop",
            constrained=constrained, logprobs=tuple(tokens))

    def _broken(self, what: str, pieces: list[str]) -> StreamBroken:
        """The error for a stream that broke off after ``pieces``, naming the server and what broke."""
        kind = f" ({self.discovery.kind} server)" if self.discovery is not None else ""
        got = sum(len(p) for p in pieces)
        return StreamBroken(f"{self.named}{kind}: the streamed reply broke off after {len(pieces)} chunks "
                            f"({got} characters): {what}")

    # --- replies -----------------------------------------------------------------------------------
    def _unavailable(self, exc: httpx.HTTPError) -> BackendUnavailable:
        if isinstance(exc, httpx.TimeoutException):
            what = f"timed out ({type(exc).__name__})"
        elif isinstance(exc, httpx.ConnectError):
            what = "cannot connect"
        else:
            what = "transport error"
        return BackendUnavailable(f"{self.named}: {what}: {_excerpt(str(exc) or type(exc).__name__)}")

    def _parse(self, reply: httpx.Response, request: LLMRequest, constrained: bool, seconds: float) -> LLMResponse:
        status, text = reply.status_code, reply.text
        if status == 429:
            retry_after = _retry_after(reply.headers)
            raise RateLimited(f"{self.named}: 429 rate limited: {_excerpt(text)}", retry_after=retry_after)
        if status >= 500 or status == 408:
            raise ServerError(f"{self.named}: {status}: {_excerpt(text)}")
        if status in (400, 413) and any(m in text.lower() for m in CONTEXT_MARKERS):
            said = WINDOW_IN_ERROR.search(text)
            window = int(said.group(1)) if said else self.capabilities.context_window
            raise ContextWindowExceeded(f"{self.named}: {status}: {_excerpt(text)}", context_window=window)
        if status == 401:
            raise BadRequest(f"{self.named}: 401 unauthorized (check the API key / OPENAI_API_KEY): {_excerpt(text)}")
        if status >= 400:
            refused = ToolsRefused if request.tools and "tool" in text.lower() else BadRequest  # typed for callers
            raise refused(f"{self.named}: {status}: {_excerpt(text)}")
        try:
            data = json.loads(text)
            choice = data["choices"][0]
            content = choice["message"].get("content") or ""
            content = content if isinstance(content, str) else json.dumps(content)
            finish = choice.get("finish_reason") or "stop"
            calls = tuple(_tool_call(tc) for tc in choice["message"].get("tool_calls") or ())
            logprobs = _logprobs(choice.get("logprobs")) if request.logprobs else ()
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ServerError(f"{self.named}: {status} with a malformed body: {_excerpt(text)}") from exc
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        prompt_tokens, completion_tokens = usage.get("prompt_tokens"), usage.get("completion_tokens")
        if prompt_tokens is None:
            prompt_tokens = estimate_tokens(request.prompt_text())
        if completion_tokens is None:
            completion_tokens = estimate_tokens(content + "".join(c.arguments for c in calls))
        return LLMResponse(
            text=content,
            prompt_tokens=int(prompt_tokens),
            completion_tokens=int(completion_tokens),
            seconds=seconds,
            model=self.model_id,
            finish_reason=str(finish),
            constrained=constrained,
            tool_calls=calls,
            logprobs=logprobs,
        )

    # --- lifecycle ---------------------------------------------------------------------------------
    def close(self) -> None:
        """Close the HTTP pool."""
        self._client.close()


def _error_text(chunk: dict[str, Any], data: str) -> str:
    """The message of a mid-stream error event (``{"error": {"message": ...}}``, ``{"error": "..."}``), else the
    event as sent."""
    error = chunk.get("error")
    message = error.get("message") if isinstance(error, dict) else error
    return _excerpt(str(message) if message else data)


def _tool_call(item: Any) -> ToolCall:
    """One ``tool_calls`` entry: its function name and arguments as JSON text (some servers send an object)."""
    fn = item["function"]
    args = fn.get("arguments", "")
    return ToolCall(str(fn["name"]), args if isinstance(args, str) else json.dumps(args))


__all__ = ["OpenAICompatible", "strict_compatible"]


def _logprobs(given: Any) -> tuple[TokenLogprob, ...]:
    """OpenAI's ``choices[0].logprobs`` (``{"content": [{"token", "logprob", "top_logprobs": [...]}]}``) as values;
    none when the server sent none or another shape."""
    if not isinstance(given, dict) or not isinstance(given.get("content"), list):
        return ()
    out = []
    for item in given["content"]:
        if not isinstance(item, dict) or not isinstance(item.get("logprob"), (int, float)):
            return ()
        top = tuple((str(t.get("token", "")), float(t["logprob"])) for t in item.get("top_logprobs") or ()
                    if isinstance(t, dict) and isinstance(t.get("logprob"), (int, float)))
        out.append(TokenLogprob(str(item.get("token", "")), float(item["logprob"]), top))
    return tuple(out)

