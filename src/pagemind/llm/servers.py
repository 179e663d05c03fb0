"""What pagemind knows about each kind of OpenAI-compatible server, in one place.

For every kind: how it reports its context window, how to count tokens with its own tokenizer, and how to send
a constrained decision with its own mechanism. Facts are discovered from the server or declared here with the
documentation they come from; nothing is guessed from a model name. The one table of model names is the
windows of OpenAI's hosted models, which its API does not report (declared knowledge, kept up to date by hand).

Sources (request and reply shapes; the unit tests quote them):

* vLLM: ``GET /v1/models`` cards carry ``max_model_len``; ``GET /version``; ``POST /tokenize`` takes
  ``{"prompt"}`` or ``{"messages"}`` and answers ``{"count", "max_model_len", "tokens"}``; grammars go in
  ``structured_outputs: {"grammar": ...}`` since v0.10.2 (``guided_grammar`` before; removed in v0.12.0 and then
  silently ignored). docs.vllm.ai: features/structured_outputs, serving/openai_compatible_server.
* SGLang: ``GET /v1/models`` cards (``owned_by: "sglang"``, ``max_model_len``); ``GET /get_model_info``
  (``model_path``, ``tokenizer_path``, ``is_generation``...); ``GET /get_server_info`` (server args, among them
  ``context_length``); ``POST /tokenize`` takes a string or a list of strings (batched); EBNF grammars in
  ``ebnf``. docs.sglang.ai: basic_usage/native_api, advanced_features/structured_outputs.
* llama.cpp server (``llama-server``): ``GET /props`` (``default_generation_settings.n_ctx``, the window of one
  slot; ``n_ctx`` at the top level in older builds; ``total_slots``); ``GET /v1/models`` (``owned_by:
  "llamacpp"``); ``POST /tokenize`` ``{"content", "add_special", "parse_special"}`` -> ``{"tokens"}``; ``POST
  /apply-template`` ``{"messages"}`` -> ``{"prompt"}``; GBNF in ``grammar``. tools/server/README.md.
* llama-cpp-python's server (``python -m llama_cpp.server``): reports no window (``GET /v1/models`` has only ids,
  ``owned_by: "me"``), so the window must be given; recognised by its OpenAPI title (``GET /openapi.json``); its
  requests default to ``repeat_penalty: 1.1`` (the OpenAI API and the embedded backend have none: pagemind sends
  1.0, as to llama.cpp servers, whose older builds had the same default); ``POST /extras/tokenize/count``
  ``{"input"}`` -> ``{"count"}`` (BOS included when the model adds one); GBNF in ``grammar``; JSON schemas only
  as ``{"type": "json_object", "schema": ...}``; a tool call is forced only for a named function, so
  ``tool_choice: "required"`` yields plain text (checked in llama_cpp/server/app.py and llama_chat_format.py,
  version 0.3.36).
* Ollama: ``GET /api/version``; ``GET /api/ps`` (``context_length`` of a loaded model); ``POST /api/show``
  (``parameters`` with ``num_ctx``); no tokenize endpoint; JSON schemas through ``response_format``.
  docs.ollama.com: api/ps, api/show, context-length.
* OpenAI: JSON schemas only (``response_format: {"type": "json_schema", ...}``), no grammar, no tokenize endpoint.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..config import SERVER_KINDS  # declared with the setting that names one (server_kind)
from ..errors import BackendUnavailable, BadRequest, ServerError
from .base import Constraint, TokenCounting

if TYPE_CHECKING:
    import httpx

# The context windows of OpenAI's hosted models (platform.openai.com/docs/models, read 2025), matched by the longest
# prefix of the model name, so dated snapshots ("gpt-4o-2024-08-06") find their family.
OPENAI_WINDOWS: dict[str, int] = {
    "gpt-5": 400_000, "gpt-5-mini": 400_000, "gpt-5-nano": 400_000, "gpt-5-chat": 128_000,
    "gpt-4.1": 1_047_576, "gpt-4.1-mini": 1_047_576, "gpt-4.1-nano": 1_047_576,
    "gpt-4o": 128_000, "gpt-4o-mini": 128_000, "chatgpt-4o": 128_000,
    "gpt-4-turbo": 128_000, "gpt-4-1106": 128_000, "gpt-4-0125": 128_000, "gpt-4": 8_192, "gpt-4-32k": 32_768,
    "gpt-3.5-turbo": 16_385, "gpt-3.5-turbo-instruct": 4_096,
    "o1": 200_000, "o1-mini": 128_000, "o1-preview": 128_000, "o3": 200_000, "o3-mini": 200_000, "o4-mini": 200_000,
}
OFFICIAL_HOSTS = {"api.openai.com"}
TEMPLATE_ALLOWANCE_TOKENS = 32  # a chat template's own text (a default system prompt...) when it cannot be rendered
PER_MESSAGE_TOKENS = 8  # role markers and separators per message, when the template cannot be rendered


def openai_window(model: str) -> int | None:
    """The declared window of an OpenAI hosted model (longest matching name prefix), or None."""
    for prefix in sorted(OPENAI_WINDOWS, key=len, reverse=True):
        if model == prefix or model.startswith(prefix + "-"):
            return OPENAI_WINDOWS[prefix]
    return None


def server_root(base_url: str) -> str:
    """The server's root URL: the base URL without a trailing ``/v1`` (native routes live at the root)."""
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


def _version(text: str) -> tuple[int, ...]:
    """The leading numbers of a version string: "0.10.2rc1" -> (0, 10, 2)."""
    return tuple(int(n) for n in re.findall(r"\d+", text.split("+")[0])[:3])


class Probe:
    """JSON GETs and POSTs against one server, for discovery and token counts (never for generation).

    A 404/405/422 answer means "no such route here" (None); transport failures and 5xx are typed errors.
    """

    def __init__(self, client: httpx.Client, base_url: str, timeout: float = 30.0,
                 named: str = "the model server") -> None:
        self.client = client
        self.named = named  # how its errors name the server: never by its URL
        self.base = base_url.rstrip("/")
        self.root = server_root(self.base)
        import httpx  # here, not on import: the CLI reads SERVER_KINDS for its flags on every start

        self.timeout = httpx.Timeout(timeout, connect=min(timeout, 10.0))

    def get(self, path: str, *, base: bool = False) -> Any:
        return self._call("GET", path, None, base)

    def post(self, path: str, body: dict[str, Any], *, base: bool = False) -> Any:
        return self._call("POST", path, body, base)

    def _call(self, method: str, path: str, body: dict[str, Any] | None, base: bool) -> Any:
        import httpx

        url = (self.base if base else self.root) + path
        try:
            reply = self.client.request(method, url, json=body, timeout=self.timeout)
        except httpx.HTTPError as exc:
            raise BackendUnavailable(f"{self.named}: cannot reach the server at {path} ({type(exc).__name__})") \
                from exc
        if reply.status_code in (401, 403):
            raise BadRequest(f"{self.named}: {path}: {reply.status_code} (check the API key / OPENAI_API_KEY)")
        if reply.status_code >= 500:
            raise ServerError(f"{self.named}: {path}: {reply.status_code}: {' '.join(reply.text.split())[:200]}")
        if reply.status_code >= 400:
            return None
        try:
            return reply.json()
        except ValueError:
            return reply.text


@dataclass(frozen=True)
class Discovery:
    """What the server told (or the settings declared): its kind, its window and where each came from."""

    kind: str
    kind_source: str
    context_window: int | None
    window_source: str
    slots: int | None = None  # requests the server runs at once (llama.cpp --parallel)
    version: str | None = None
    token_counts: TokenCounting = "estimate"  # "server" when the tokenize endpoint answered
    notes: tuple[str, ...] = ()
    served: str | None = None  # the model a server that serves one whatever the request names reports serving


@dataclass
class Server:
    """The OpenAI API as such: JSON schemas through ``response_format``, no grammar, no tokenizer."""

    kind: str = "openai"
    version: str | None = None
    notes: list[str] = field(default_factory=list)
    tools: bool = True  # honours tools with tool_choice "required"
    json_schema: bool = True
    logprobs: bool = True  # returns ``logprobs`` / ``top_logprobs`` of chat completions
    max_concurrency: int | None = None  # a bound the server itself imposes
    batched_tokenize: bool = False
    tokenize_route: str | None = None  # for `models info`
    one_model: bool = False  # serves one model whatever the request names (its model card says which)
    # Sampling fields sent with every request where the server's defaults differ from the OpenAI API's (which has
    # no repetition penalty): without them the same model answers differently than embedded or elsewhere.
    neutral_sampling: dict[str, Any] = field(default_factory=dict)

    # --- facts -------------------------------------------------------------------------------------
    def window(self, probe: Probe, model: str, cards: list[dict[str, Any]]) -> tuple[int, str] | None:
        """The server's context window and where it was read, or None."""
        return None

    def slots(self, probe: Probe) -> int | None:
        return None

    # --- constrained decisions ---------------------------------------------------------------------
    def grammar_fields(self, gbnf: str) -> dict[str, Any] | None:
        """Body fields that make the server enforce a GBNF grammar, or None if it cannot."""
        return None

    def schema_fields(self, name: str, schema: dict[str, Any]) -> dict[str, Any]:
        return {"response_format": {"type": "json_schema", "json_schema": {
            "name": name, "schema": schema, "strict": strict_compatible(schema)}}}

    def constraint_fields(self, constraint: Constraint) -> dict[str, Any] | None:
        """The server's own mechanism for ``constraint``: its grammar when it has one, else the JSON schema."""
        if constraint.gbnf:
            fields = self.grammar_fields(constraint.gbnf)
            if fields is not None:
                return fields
        if constraint.json_schema is not None and self.json_schema:
            return self.schema_fields(constraint.name, constraint.json_schema)
        return None

    @property
    def supports_grammar(self) -> bool:
        return self.grammar_fields("root ::= \"x\"") is not None

    def describe_constraint(self) -> str:
        if self.supports_grammar:
            how = ".".join(_path(self.grammar_fields("G") or {}))
            return f"GBNF grammar via `{how}`" + ("; JSON schema via response_format" if self.json_schema else "")
        if self.json_schema:
            return ("JSON schema only (response_format json_schema); decisions constrained by a grammar alone "
                    "stay unconstrained here")
        return "none"

    # --- token counts ------------------------------------------------------------------------------
    def count(self, probe: Probe, model: str, texts: Sequence[str]) -> list[int] | None:
        """Tokens of each text with the server's tokenizer (no BOS, special tokens as text), or None."""
        return None

    def chat_count(self, probe: Probe, model: str, messages: list[dict[str, str]]) -> int | None:
        """Tokens of the whole chat prompt after the server's template, or None when it cannot say."""
        return None

    def check_tokenizer(self, probe: Probe, model: str) -> bool:
        """Whether the tokenize endpoint answers with a plausible count."""
        counts = self.count(probe, model, ["Hello, world."])
        return bool(counts) and counts[0] > 0  # type: ignore[index]


def _path(fields: dict[str, Any]) -> list[str]:
    """The key path of a one-entry nested dict: {"a": {"b": ...}} -> ["a", "b"]."""
    key = next(iter(fields))
    return [key, *_path(fields[key])] if isinstance(fields[key], dict) else [key]


def _card(cards: list[dict[str, Any]], model: str) -> dict[str, Any] | None:
    """The model card of ``model``, else the only card served."""
    for card in cards:
        if card.get("id") == model:
            return card
    return cards[0] if len(cards) == 1 else None


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


@dataclass
class VLLM(Server):
    kind: str = "vllm"
    tokenize_route: str | None = "POST /tokenize"

    def window(self, probe: Probe, model: str, cards: list[dict[str, Any]]) -> tuple[int, str] | None:
        card = _card(cards, model)
        n = _positive((card or {}).get("max_model_len"))
        return (n, "GET /v1/models max_model_len") if n else None

    def structured_outputs(self) -> bool:
        """``structured_outputs`` (v0.10.2 and later) rather than the older ``guided_*`` fields."""
        return self.version is None or _version(self.version) >= (0, 10, 2)

    def grammar_fields(self, gbnf: str) -> dict[str, Any] | None:
        if self.structured_outputs():
            return {"structured_outputs": {"grammar": gbnf}}
        return {"guided_grammar": gbnf}

    def count(self, probe: Probe, model: str, texts: Sequence[str]) -> list[int] | None:
        out = []
        for text in texts:
            reply = probe.post("/tokenize", {"model": model, "prompt": text, "add_special_tokens": False})
            n = reply.get("count") if isinstance(reply, dict) else None
            if not isinstance(n, int):
                return None
            out.append(n)
        return out

    def chat_count(self, probe: Probe, model: str, messages: list[dict[str, str]]) -> int | None:
        reply = probe.post("/tokenize", {"model": model, "messages": messages, "add_generation_prompt": True})
        n = reply.get("count") if isinstance(reply, dict) else None
        return n if isinstance(n, int) else None


@dataclass
class SGLang(Server):
    kind: str = "sglang"
    batched_tokenize: bool = True
    tokenize_route: str | None = "POST /tokenize (batched)"

    def window(self, probe: Probe, model: str, cards: list[dict[str, Any]]) -> tuple[int, str] | None:
        n = _positive((_card(cards, model) or {}).get("max_model_len"))
        if n:
            return n, "GET /v1/models max_model_len"
        info = probe.get("/get_server_info")
        n = _positive(info.get("context_length")) if isinstance(info, dict) else None
        return (n, "GET /get_server_info context_length") if n else None

    def grammar_fields(self, gbnf: str) -> dict[str, Any] | None:
        return {"ebnf": gbnf}

    def count(self, probe: Probe, model: str, texts: Sequence[str]) -> list[int] | None:
        reply = probe.post("/tokenize", {"model": model, "prompt": list(texts), "add_special_tokens": False})
        counts = reply.get("count") if isinstance(reply, dict) else None
        if isinstance(counts, int) and len(texts) == 1:
            counts = [counts]
        if not isinstance(counts, list) or len(counts) != len(texts) or not all(isinstance(n, int) for n in counts):
            return None
        return counts


@dataclass
class LlamaCppServer(Server):
    kind: str = "llama.cpp"
    one_model: bool = True  # the model field of a request is not read (one model per server; its card names it)
    tokenize_route: str | None = "POST /tokenize (+ POST /apply-template for chat prompts)"
    neutral_sampling: dict[str, Any] = field(default_factory=lambda: {"repeat_penalty": 1.0})  # 1.1 in older builds

    def _props(self, probe: Probe) -> dict[str, Any]:
        props = probe.get("/props")
        return props if isinstance(props, dict) else {}

    def window(self, probe: Probe, model: str, cards: list[dict[str, Any]]) -> tuple[int, str] | None:
        props = self._props(probe)
        settings = props.get("default_generation_settings")
        n = _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None
        if n:
            return n, "GET /props default_generation_settings.n_ctx (one slot)"
        n = _positive(props.get("n_ctx"))
        return (n, "GET /props n_ctx") if n else None

    def slots(self, probe: Probe) -> int | None:
        return _positive(self._props(probe).get("total_slots"))

    def grammar_fields(self, gbnf: str) -> dict[str, Any] | None:
        return {"grammar": gbnf}

    def _tokens(self, probe: Probe, content: str, special: bool) -> int | None:
        reply = probe.post("/tokenize", {"content": content, "add_special": special, "parse_special": special})
        tokens = reply.get("tokens") if isinstance(reply, dict) else None
        return len(tokens) if isinstance(tokens, list) else None

    def count(self, probe: Probe, model: str, texts: Sequence[str]) -> list[int] | None:
        out = [self._tokens(probe, t, False) for t in texts]
        return None if any(n is None for n in out) else out  # type: ignore[return-value]

    def chat_count(self, probe: Probe, model: str, messages: list[dict[str, str]]) -> int | None:
        reply = probe.post("/apply-template", {"messages": messages})
        prompt = reply.get("prompt") if isinstance(reply, dict) else None
        return self._tokens(probe, prompt, True) if isinstance(prompt, str) else None


@dataclass
class LlamaCppPython(Server):
    kind: str = "llama-cpp-python"
    tools: bool = False  # tool_choice "required" is ignored; only a named function can be forced
    logprobs: bool = False  # only for a model loaded with logits_all, which its server does not say
    max_concurrency: int | None = 1  # one model behind a lock: requests run one at a time
    tokenize_route: str | None = "POST /extras/tokenize/count"
    neutral_sampling: dict[str, Any] = field(default_factory=lambda: {"repeat_penalty": 1.0})  # its default: 1.1
    bos: int = 0  # what the endpoint adds to every count (the BOS token of models that use one)

    def grammar_fields(self, gbnf: str) -> dict[str, Any] | None:
        return {"grammar": gbnf}

    def schema_fields(self, name: str, schema: dict[str, Any]) -> dict[str, Any]:
        return {"response_format": {"type": "json_object", "schema": schema}}

    def _count(self, probe: Probe, model: str, text: str) -> int | None:
        reply = probe.post("/extras/tokenize/count", {"model": model, "input": text})
        n = reply.get("count") if isinstance(reply, dict) else None
        return n if isinstance(n, int) else None

    def count(self, probe: Probe, model: str, texts: Sequence[str]) -> list[int] | None:
        out = [self._count(probe, model, t) for t in texts]
        if any(n is None for n in out):
            return None
        return [max(0, n - self.bos) if t else 0 for t, n in zip(texts, out)]  # type: ignore[operator]

    def check_tokenizer(self, probe: Probe, model: str) -> bool:
        empty = self._count(probe, model, "")
        if empty is None:
            return False
        self.bos = empty  # the endpoint tokenizes with add_bos=True: "" counts the BOS alone
        return super().check_tokenizer(probe, model)


@dataclass
class Ollama(Server):
    kind: str = "ollama"
    logprobs: bool = False  # not returned by the OpenAI-compatible endpoint of the releases pagemind knows

    def window(self, probe: Probe, model: str, cards: list[dict[str, Any]]) -> tuple[int, str] | None:
        names = {model, f"{model}:latest"}
        running = probe.get("/api/ps")
        for item in (running.get("models") or []) if isinstance(running, dict) else []:
            if isinstance(item, dict) and names & {item.get("name"), item.get("model")}:
                n = _positive(item.get("context_length"))
                if n:
                    return n, "GET /api/ps context_length (the loaded model)"
        shown = probe.post("/api/show", {"model": model})
        params = shown.get("parameters") if isinstance(shown, dict) else None
        found = re.search(r"^\s*num_ctx\s+(\d+)", params or "", flags=re.MULTILINE) if isinstance(params, str) else None
        if found:
            return int(found.group(1)), "POST /api/show parameters num_ctx"
        return None


KINDS: dict[str, type[Server]] = {"vllm": VLLM, "sglang": SGLang, "llama.cpp": LlamaCppServer,
                                  "llama-cpp-python": LlamaCppPython, "ollama": Ollama, "openai": Server}


def detect(probe: Probe) -> tuple[Server, str, list[dict[str, Any]]]:
    """Which server answers at ``probe``: (its kind, how that was found, its model cards)."""
    host = urlsplit(probe.base).hostname or ""
    if host in OFFICIAL_HOSTS:
        return Server(), f"the official OpenAI API ({host})", []
    models = probe.get("/models", base=True)
    cards = [c for c in (models.get("data") or []) if isinstance(c, dict)] if isinstance(models, dict) else []
    owners = {c.get("owned_by") for c in cards}
    for owner, cls in (("vllm", VLLM), ("sglang", SGLang), ("llamacpp", LlamaCppServer)):
        if owner in owners:
            return cls(), f"GET /v1/models owned_by={owner!r}", cards
    props = probe.get("/props")
    if isinstance(props, dict) and ("default_generation_settings" in props or "n_ctx" in props):
        return LlamaCppServer(), "GET /props (llama.cpp server)", cards
    api = probe.get("/openapi.json")
    title = str(((api or {}).get("info") or {}).get("title", "")) if isinstance(api, dict) else ""
    if "llama.cpp python" in title.lower():
        return LlamaCppPython(), f"GET /openapi.json title {title!r}", cards
    version = probe.get("/api/version")
    if isinstance(version, dict) and "version" in version:
        return Ollama(version=str(version["version"])), "GET /api/version (Ollama)", cards
    info = probe.get("/get_model_info")
    if isinstance(info, dict) and "model_path" in info:
        return SGLang(), "GET /get_model_info (SGLang)", cards
    return Server(), "no known server answered the probes: the plain OpenAI API is assumed", cards


def discover(probe: Probe | None, model: str, kind: str = "auto", context_window: int | None = None,
             ) -> tuple[Server, Discovery]:
    """Ask the server (when there is one to ask) what it is and what window it serves; settings override."""
    if kind not in ("auto", *SERVER_KINDS):
        from ..errors import ConfigError

        raise ConfigError(f"--server-kind {kind!r}: expected auto or one of {', '.join(SERVER_KINDS)}")
    cards: list[dict[str, Any]] = []
    official = probe is None or (urlsplit(probe.base).hostname or "") in OFFICIAL_HOSTS
    if kind != "auto":
        server, kind_source = KINDS[kind](), "declared by the --server-kind setting"
        if probe is not None and not official and (server.kind in ("vllm", "sglang") or server.one_model):
            models = probe.get("/models", base=True)
            cards = [c for c in (models.get("data") or []) if isinstance(c, dict)] if isinstance(models, dict) else []
    elif probe is None:
        server, kind_source = Server(), "the official OpenAI API"
    else:
        server, kind_source, cards = detect(probe)
    if probe is not None and isinstance(server, VLLM) and server.version is None and not official:
        reply = probe.get("/version")
        server.version = str(reply["version"]) if isinstance(reply, dict) and "version" in reply else None
        if server.version is None:
            server.notes.append("GET /version did not answer: grammars sent as structured_outputs (vLLM >= 0.10.2)")
    found = None
    if server.kind == "openai":
        n = openai_window(model) if official or kind == "openai" else None
        found = (n, "OpenAI's published model windows (declared table)") if n else None
    elif probe is not None:
        found = server.window(probe, model, cards)
    if context_window:
        if found and found[0] != context_window:
            server.notes.append(f"the server reports {found[0]} ({found[1]}); the setting wins")
        window, source = context_window, "declared by the --context-window setting"
    elif found:
        window, source = found
    else:
        window, source = None, "unknown"
    slots = server.slots(probe) if probe is not None and not official else None
    counts: TokenCounting = "estimate"
    if probe is not None and not official and server.tokenize_route and server.check_tokenizer(probe, model):
        counts = "server"
    elif server.tokenize_route:
        server.notes.append(f"{server.tokenize_route} did not answer: token counts are estimates")
    card = _card(cards, model) if server.one_model else None
    served = str(card["id"]) if card is not None and card.get("id") else None
    return server, Discovery(kind=server.kind, kind_source=kind_source, context_window=window, window_source=source,
                             slots=slots, version=server.version, token_counts=counts, notes=tuple(server.notes),
                             served=served)


class TokenCounts:
    """A bounded LRU of token counts keyed by a digest of the text (long texts are not kept in memory)."""

    def __init__(self, size: int = 65536) -> None:
        self.size = size
        self._items: OrderedDict[bytes, int] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    @staticmethod
    def key(text: str, kind: str = "text") -> bytes:
        return hashlib.blake2b(f"{kind}\0{text}".encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def get(self, key: bytes) -> int | None:
        with self._lock:
            n = self._items.get(key)
            if n is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return n

    def put(self, key: bytes, n: int) -> None:
        with self._lock:
            self._items[key] = n
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


def count_many(server: Server, probe: Probe, model: str, texts: Sequence[str], workers: int = 8) -> list[int] | None:
    """Counts for ``texts`` in one batched call where the server takes one, else a few calls in parallel."""
    if not texts:
        return []
    if server.batched_tokenize or len(texts) == 1:
        return server.count(probe, model, texts)
    with ThreadPoolExecutor(max_workers=min(workers, len(texts))) as pool:
        parts = list(pool.map(lambda t: server.count(probe, model, [t]), texts))
    if any(p is None for p in parts):
        return None
    return [p[0] for p in parts]  # type: ignore[index]


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
