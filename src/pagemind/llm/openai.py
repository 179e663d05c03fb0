"""A backend for any OpenAI-compatible chat-completions server (OpenAI, vLLM, Ollama, llama.cpp, LM Studio).

The backend makes exactly one HTTP call per request and raises a typed error on failure; retries,
backoff, caching and concurrency limits belong to :class:`pagemind.llm.client.LLM`.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

import httpx

from ..errors import BackendUnavailable, BadRequest, ConfigError, ContextWindowExceeded, RateLimited, ServerError
from .base import Backend, Capabilities, LLMRequest, LLMResponse, ToolCall, estimate_tokens

OFFICIAL_BASE_URL = "https://api.openai.com/v1"
DEFAULT_CONTEXT_WINDOW = 8192
KNOWN_CONTEXT_WINDOWS = {"gpt-4o": 128000, "gpt-4o-mini": 128000, "gpt-4.1": 128000}  # prefixes, longest first
CONTEXT_MARKERS = ("context_length_exceeded", "maximum context length", "context length", "too many tokens",
                   "context size")  # the last is llama.cpp server's wording
LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}


def known_context_window(model: str) -> int:
    """The context window of a known OpenAI model, else a conservative default."""
    for prefix in sorted(KNOWN_CONTEXT_WINDOWS, key=len, reverse=True):
        if model.startswith(prefix):
            return KNOWN_CONTEXT_WINDOWS[prefix]
    return DEFAULT_CONTEXT_WINDOW


def _excerpt(text: str, limit: int = 200) -> str:
    """One line of at most ``limit`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


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
    """The chat-completions API over ``httpx``; one call per request, typed errors, no retries."""

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
        grammar: bool = False,
        tools: bool = True,
    ) -> None:
        env = os.environ if env is None else env
        base = (base_url or env.get("OPENAI_BASE_URL") or OFFICIAL_BASE_URL).rstrip("/")
        parts = urlsplit(base)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"OpenAI-compatible base URL must be http(s)://host[:port]/..., got {base!r}")
        self.api_key = api_key or env.get("OPENAI_API_KEY") or None
        if base == OFFICIAL_BASE_URL and not self.api_key:
            raise ConfigError(
                f"{base} needs an API key: set OPENAI_API_KEY or pass api_key= "
                "(local servers such as vLLM, Ollama or llama.cpp need none)"
            )
        self.model = model
        self.base_url = base
        self.url = f"{base}/chat/completions"
        self.grammar = grammar
        self.model_id = f"openai:{model}@{base}"
        self.capabilities = Capabilities(
            context_window=context_window or known_context_window(model),
            supports_grammar=grammar,
            supports_json_schema=True,
            supports_tools=tools,
            max_concurrency=max(1, max_concurrency),
        )
        self._headers = {"Content-Type": "application/json", "User-Agent": "pagemind"}
        if self.api_key:
            self._headers["Authorization"] = f"Bearer {self.api_key}"
        self._timeout = httpx.Timeout(timeout, connect=min(timeout, 10.0))
        self._limits = httpx.Limits(max_connections=self.capabilities.max_concurrency)
        self._trust_env = parts.hostname not in LOCAL_HOSTS  # never route loopback through a proxy
        self._client = httpx.Client(
            headers=self._headers, timeout=self._timeout, limits=self._limits, trust_env=self._trust_env
        )
        self._aclients: dict[int, tuple[asyncio.AbstractEventLoop, httpx.AsyncClient]] = {}

    # --- requests ----------------------------------------------------------------------------------
    def _body(self, request: LLMRequest) -> tuple[dict[str, Any], bool]:
        """The JSON body, and whether it asks the server to enforce the constraint."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if request.stop:
            body["stop"] = list(request.stop)
        if request.tools and self.capabilities.supports_tools:  # native tool calling: one call is required
            body["tools"] = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                               "parameters": t.parameters}} for t in request.tools]
            body["tool_choice"] = "required"
            return body, True
        c = request.constraint
        if c is not None and self.grammar and c.gbnf:
            body["grammar"] = c.gbnf  # llama.cpp server; it refuses a grammar and a schema together
            return body, True
        if c is not None and c.json_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": c.name, "schema": c.json_schema, "strict": strict_compatible(c.json_schema)},
            }
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

    async def aexecute(self, request: LLMRequest) -> LLMResponse:
        body, constrained = self._body(request)
        started = time.perf_counter()
        try:
            reply = await self._aclient().post(self.url, json=body)
        except httpx.HTTPError as exc:
            raise self._unavailable(exc) from exc
        return self._parse(reply, request, constrained, time.perf_counter() - started)

    def _aclient(self) -> httpx.AsyncClient:
        """One async client per event loop (an httpx.AsyncClient cannot outlive its loop)."""
        loop = asyncio.get_running_loop()
        for key, (owner, _) in list(self._aclients.items()):
            if owner.is_closed():
                del self._aclients[key]
        if id(loop) not in self._aclients:
            client = httpx.AsyncClient(
                headers=self._headers, timeout=self._timeout, limits=self._limits, trust_env=self._trust_env
            )
            self._aclients[id(loop)] = (loop, client)
        return self._aclients[id(loop)][1]

    # --- replies -----------------------------------------------------------------------------------
    def _unavailable(self, exc: httpx.HTTPError) -> BackendUnavailable:
        if isinstance(exc, httpx.TimeoutException):
            what = f"timed out ({type(exc).__name__})"
        elif isinstance(exc, httpx.ConnectError):
            what = "cannot connect"
        else:
            what = "transport error"
        return BackendUnavailable(f"{self.url}: {what}: {_excerpt(str(exc) or type(exc).__name__)}")

    def _parse(self, reply: httpx.Response, request: LLMRequest, constrained: bool, seconds: float) -> LLMResponse:
        status, text = reply.status_code, reply.text
        if status == 429:
            retry_after = _retry_after(reply.headers)
            raise RateLimited(f"{self.url}: 429 rate limited: {_excerpt(text)}", retry_after=retry_after)
        if status >= 500 or status == 408:
            raise ServerError(f"{self.url}: {status}: {_excerpt(text)}")
        if status in (400, 413) and any(m in text.lower() for m in CONTEXT_MARKERS):
            window = self.capabilities.context_window
            raise ContextWindowExceeded(f"{self.model_id}: {status}: {_excerpt(text)}", context_window=window)
        if status == 401:
            raise BadRequest(f"{self.url}: 401 unauthorized (check the API key / OPENAI_API_KEY): {_excerpt(text)}")
        if status >= 400:
            raise BadRequest(f"{self.url}: {status}: {_excerpt(text)}")
        try:
            data = json.loads(text)
            choice = data["choices"][0]
            content = choice["message"].get("content") or ""
            content = content if isinstance(content, str) else json.dumps(content)
            finish = choice.get("finish_reason") or "stop"
            calls = tuple(_tool_call(tc) for tc in choice["message"].get("tool_calls") or ())
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ServerError(f"{self.url}: {status} with a malformed body: {_excerpt(text)}") from exc
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
        )

    # --- lifecycle ---------------------------------------------------------------------------------
    def close(self) -> None:
        """Close the HTTP pools (async clients on a live loop are closed there, others dropped)."""
        self._client.close()
        for loop, client in self._aclients.values():
            if not loop.is_closed() and loop.is_running():
                asyncio.run_coroutine_threadsafe(client.aclose(), loop)
        self._aclients.clear()

    async def aclose(self) -> None:
        """Close the async client of the running loop, then the rest."""
        entry = self._aclients.pop(id(asyncio.get_running_loop()), None)
        if entry is not None:
            await entry[1].aclose()
        self.close()


def _tool_call(item: Any) -> ToolCall:
    """One ``tool_calls`` entry: its function name and arguments as JSON text (some servers send an object)."""
    fn = item["function"]
    args = fn.get("arguments", "")
    return ToolCall(str(fn["name"]), args if isinstance(args, str) else json.dumps(args))


_STRICT_KEYS = {"type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf",
                "description", "title", "$defs", "$ref"}


def strict_compatible(schema: Any) -> bool:
    """Whether OpenAI's strict structured outputs accept ``schema``: an object root, every object closed
    (``additionalProperties: false``) with all its properties required, and only the keywords strict mode
    supports (no ``oneOf``, no length bounds). Other schemas are sent with ``strict: false`` (followed as a
    guide; the caller's tolerant parser does the rest) instead of being refused with a 400."""

    def ok(node: Any) -> bool:
        if isinstance(node, list):
            return all(ok(n) for n in node)
        if not isinstance(node, dict):
            return True
        if set(node) - _STRICT_KEYS:
            return False
        if node.get("type") == "object":
            props = node.get("properties", {})
            if node.get("additionalProperties") is not False or set(node.get("required", [])) != set(props):
                return False
        children = [*node.get("properties", {}).values(), *node.get("$defs", {}).values()]
        children += [node[k] for k in ("items", "anyOf") if k in node]
        return all(ok(child) for child in children)

    return isinstance(schema, dict) and schema.get("type") == "object" and ok(schema)
