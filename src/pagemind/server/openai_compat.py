"""An OpenAI-compatible chat API on ``pagemind serve``: ``POST /v1/chat/completions`` and ``GET /v1/models``, so
any OpenAI client (the ``openai`` SDK, Open WebUI, LibreChat…) asks a document, a library or a MemGPT agent by
changing its base URL to ``http://HOST:PORT/v1`` and its API key to a pagemind key (docs/openai.md).

Models (``GET /v1/models`` lists them for the user):

* ``pagemind/<method>`` (``pagemind/auto``, ``pagemind/rag``, every document method): the last user message is a
  question about the document or library the request names in the extension object ``"pagemind":
  {"document_id": "…"}`` or ``{"library": "…"}`` (the SDK's ``extra_body``), or, for clients that can only pick a
  model, in the model's name: ``pagemind/<method>@<library>``; naming none, the user's only library (or
  ``default``). Earlier messages and a system message make the last one a standalone question first
  (:mod:`pagemind.conversation`); the answer call takes the request's ``max_tokens``, ``temperature``, ``stop``,
  ``seed`` and ``response_format``; ``n`` > 1 and client tools are refused by name. A chat UI's own tasks (its
  title, tags, follow-ups) are answered by the model directly, not recorded as runs.
* ``agent/<name>``: one turn of the user's MemGPT agent on the last user message. The agent keeps its own memory
  (core blocks, recall, archival), so the earlier messages a client sends again are not replayed: they are in its
  recall already, or were never said to it.

The reply is the answer with its citation markers (``[1]``), then a "Sources:" block naming each cited place and
quote (``"pagemind": {"sources": false}`` leaves it out); the citations themselves are in the extension field
``pagemind`` of the completion (and of the last chunk when streaming), with the run's id. Usage counts the
answer's prompt and completion tokens, those of replies served from pagemind's response cache included and
detailed as ``prompt_tokens_details.cached_tokens`` (a memory built for the question is counted in
``pagemind.index_usage``).
Streaming sends OpenAI's ``chat.completion.chunk`` events as the answer is written, then ``data: [DONE]``. Errors
are OpenAI's shape, ``{"error": {"message", "type", "param", "code"}}``, with the status pagemind gives the same
error elsewhere. Every question is a recorded run (``x-request-id``), under the same keys and limits as the rest
of the API.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from starlette.concurrency import run_in_threadpool

from .. import limits
from ..answering.question import Answer, ReplySettings
from ..conversation import ROLES, Turn
from ..errors import InputError, NotFound, PagemindError
from ..limits import MAX_LIST
from ..store import Page
from ..users import agent_name
from . import shapes
from .routing import NO_RETRY, Svc, User, errors, followed, retry_headers, status_of, unless_left, watched

if TYPE_CHECKING:

    from ..agent.turn import TurnResult
    from ..store import UserRow
    from .service import Service
    from .views import Started

METHOD_PREFIX, AGENT_PREFIX = "pagemind/", "agent/"

router = APIRouter()


class Extension(BaseModel):
    """pagemind's fields of a chat request (``"pagemind": {...}``; the SDK's ``extra_body``)."""

    model_config = ConfigDict(extra="forbid")

    document_id: str | None = Field(None, pattern=shapes.DOCUMENT_ID)
    library: str | None = Field(None, pattern=shapes.LIBRARY_NAME)
    method_options: dict[str, Any] = Field(default_factory=dict)
    options: list[Annotated[str, Field(min_length=1, max_length=limits.MAX_OPTION)]] = Field(
        default_factory=list, max_length=limits.MAX_OPTIONS, description="multiple choice: the options, in order")
    budget: int | None = Field(None, ge=1, le=limits.MAX_BUDGET)
    sources: bool = True


Stop = Annotated[str, Field(min_length=1, max_length=200)]


class JSONSchemaFormat(BaseModel):
    name: str = Field(min_length=1, max_length=64)
    schema_: dict[str, Any] = Field(alias="schema")
    strict: bool | None = None
    description: str | None = None


class ResponseFormat(BaseModel):
    """OpenAI's ``response_format``: text, any JSON object, or JSON of a schema (``json_schema.schema``)."""

    # the schema says what the validator enforces: ``json_schema`` is required (an object) with that type
    model_config = ConfigDict(json_schema_extra={
        "if": {"properties": {"type": {"const": "json_schema"}}, "required": ["type"]},
        "then": {"properties": {"json_schema": {"type": "object"}}, "required": ["json_schema"]}})
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JSONSchemaFormat | None = None

    @model_validator(mode="after")
    def _schema_given(self) -> ResponseFormat:
        if self.type == "json_schema" and self.json_schema is None:
            raise ValueError('json_schema needs {"json_schema": {"name": ..., "schema": {...}}}')
        return self


class ChatRequest(BaseModel):
    """OpenAI's chat request. ``max_tokens`` / ``max_completion_tokens``, ``temperature``, ``stop``, ``seed`` and
    ``response_format`` apply to the answer call (a method's own calls — look-ups, navigation — keep the settings it
    declares); ``n`` above 1, ``tools`` and a ``tool_choice`` that calls one are refused (400 naming the parameter,
    :func:`refused`), and the schema says so; other fields (``top_p``, ``user``, ``logprobs``...) are accepted and
    not used."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1, max_length=300)
    messages: list[dict[str, Any]] = Field(min_length=1, max_length=10_000)
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    max_tokens: int | None = Field(None, ge=1, le=limits.MAX_REPLY_TOKENS)
    max_completion_tokens: int | None = Field(None, ge=1, le=limits.MAX_REPLY_TOKENS)
    temperature: float | None = Field(None, ge=0, le=2)
    stop: Stop | Annotated[list[Stop], Field(max_length=4)] | None = None  # the array's bound in the schema too
    seed: int | None = Field(None, ge=-limits.MAX_JSON_INT, le=limits.MAX_JSON_INT,
                             description="an exact JSON number (|seed| <= 2^53)")
    n: int | None = Field(None, ge=1, le=1, description="one answer per request")
    tools: list[dict[str, Any]] | None = Field(None, max_length=0, description="pagemind's models call no client "
                                                                               "tools")
    tool_choice: Literal["none", "auto"] | None = None
    response_format: ResponseFormat | None = None
    pagemind: Extension = Field(default_factory=lambda: Extension.model_validate({}))

    @property
    def wants_json(self) -> bool:
        """The reply must be JSON (``json_object`` or ``json_schema``): it is sent whole, once judged."""
        return self.response_format is not None and self.response_format.type != "text"

    @property
    def token_limit(self) -> int | None:
        return self.max_completion_tokens or self.max_tokens

    def reply(self) -> ReplySettings | None:
        """The answer call's settings this request gives (None: none)."""
        fmt = self.response_format
        schema = None if fmt is None or fmt.type == "text" else (
            fmt.json_schema.schema_ if fmt.json_schema is not None else {})
        stop = (self.stop,) if isinstance(self.stop, str) else tuple(self.stop or ())
        most = self.max_completion_tokens or self.max_tokens
        if most is None and self.temperature is None and not stop and self.seed is None and schema is None:
            return None
        return ReplySettings(max_tokens=most, temperature=self.temperature, stop=stop, seed=self.seed,
                             json_schema=schema)


def refused(raw: dict[str, Any]) -> tuple[str, str] | None:
    """(the parameter, why) of what a request asks that pagemind cannot honour, read before the request's own
    validation so the client hears why rather than a bound: OpenAI's 400 naming the parameter."""
    n = raw.get("n")
    if isinstance(n, int) and not isinstance(n, bool) and n > 1:
        return "n", "pagemind gives one answer per request (n=1): send the request again for another"
    if raw.get("tools"):
        return "tools", ("pagemind's models read documents and answer: they call no client tools (an agent/<name> "
                         "model calls its own memory functions)")
    if raw.get("tool_choice") not in (None, "none", "auto"):
        return "tool_choice", "pagemind's models call no client tools"
    return None


@dataclass(frozen=True)
class Target:
    kind: str  # method | agent
    name: str  # the method, or the agent's name
    library: str | None = None


def target_of(model: str) -> Target:
    """What a model name asks: ``pagemind/<method>[@<library>]`` or ``agent/<name>``."""
    from ..methods import registry

    if model.startswith(AGENT_PREFIX) and len(model) > len(AGENT_PREFIX):
        return Target("agent", model[len(AGENT_PREFIX):])
    if model.startswith(METHOD_PREFIX):
        method, _, library = model[len(METHOD_PREFIX):].partition("@")
        if method in registry.document_methods():
            return Target("method", method, library or None)
    raise NotFound(f"the model {model!r} does not exist: use pagemind/<method> (GET /v1/models lists them; "
                   "pagemind/auto reads what fits), pagemind/<method>@<library> or agent/<name>")


def text_of(message: dict[str, Any]) -> str:
    """A message's text: a string, or the text parts of a list of parts; an :class:`InputError` for a part
    pagemind cannot read (an image, audio, a file), never dropped silently."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    other = sorted({str(p.get("type")) for p in content if isinstance(p, dict) and p.get("type") != "text"})
    if other:
        raise InputError(f"the message has {', '.join(other)} parts: pagemind's models read text (send the text, "
                         "or add the file to a library)")
    return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")


def last_user_text(messages: list[dict[str, Any]]) -> str:
    """The text of the last user message."""
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        text = text_of(message)
        if text.strip():
            return text
        break
    raise InputError("no user message with text: the last user message is the question")


def earlier_turns(messages: list[dict[str, Any]]) -> tuple[Turn, ...]:
    """The messages before the last user message (instructions, earlier questions and answers) as turns."""
    last = max(i for i, m in enumerate(messages) if m.get("role") == "user")
    said = [(str(m.get("role")), text_of(m)) for m in messages[:last] if m.get("role") in ROLES]
    return tuple(Turn(role, text) for role, text in said if text.strip())


def openai_error(message: str, status: int, code: str | None = None, param: str | None = None,
                 headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(shapes.openai_error_body(message, status, code, param), status_code=status,
                        headers=NO_RETRY if headers is None and status < 500 else headers)


def error_of(err: BaseException) -> JSONResponse:
    return openai_error(str(err) or type(err).__name__, status_of(err), type(err).__name__,
                        headers=retry_headers(err))


# --- the routes ---------------------------------------------------------------------------------------------------
def openai_errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI responses of these error codes in OpenAI's error shape."""
    described = errors(*codes)
    return {code: {"model": shapes.OpenAIError, "description": described[code]["description"]} for code in codes}


def model_ids(service: Service, user: UserRow) -> Iterator[str]:
    """The models ``user`` may pick: every method, ``pagemind/auto@<library>`` per library, ``agent/<name>`` per
    agent — read from the store a page of names at a time (no agent loaded)."""
    from ..methods import registry

    yield from (f"{METHOD_PREFIX}{m}" for m in registry.document_methods())
    yield from (f"{METHOD_PREFIX}auto@{row.name}" for row in Page.walk(
        lambda after: service.libraries(user, after=after, limit=MAX_LIST)))
    yield from (f"{AGENT_PREFIX}{agent_name(user.id, row.name)}" for row in Page.walk(
        lambda after: service.agent_rows(user, after=after, limit=MAX_LIST)))


def model_json(model_id: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": 0, "owned_by": "pagemind"}


@router.get("/v1/models", name="get_model", tags=["openai"], responses=openai_errors(400, 401, 403, 404, 413, 421,
                                                                                      422))
def models(service: Svc, user: User,
           after: Annotated[str, Query(max_length=200, description="the models after this id (`last_id` of the "
                                       "page before)")] = None,  # type: ignore[assignment]
           limit: Annotated[int, Query(ge=1, le=MAX_LIST)] = MAX_LIST) -> dict[str, Any]:
    """The models an OpenAI client may pick (OpenAI's list: ``object``, ``data``): ``pagemind/<method>`` for every
    method, ``pagemind/auto@<library>`` for each of your libraries, ``agent/<name>`` for each of your agents, a
    page at a time (``has_more``; ``after`` = the page's ``last_id`` for the next); and the backend's own
    description (``model``, ``backend``, ``llm``, ``capabilities``)."""
    ids = model_ids(service, user)
    if after is not None:
        for i in ids:
            if i == after:
                break
    page = list(itertools.islice(ids, limit + 1))
    data = [model_json(i) for i in page[:limit]]
    return {"object": "list", "data": data, "has_more": len(page) > limit,
            "last_id": data[-1]["id"] if data else None, **shapes.models_json(service.models())}


@router.get("/v1/models/{model_id:path}", name="retrieve_model", tags=["openai"],
            responses=openai_errors(400, 401, 403, 404, 413, 421, 422))
def retrieve_model(model_id: str, service: Svc, user: User) -> dict[str, Any]:
    """One model of :func:`models` (OpenAI's ``models.retrieve``); 404 in OpenAI's shape for any other."""
    if model_id != EMBEDDING_MODEL and all(i != model_id for i in model_ids(service, user)):
        raise NotFound(f"the model {model_id!r} does not exist: GET /v1/models lists yours")
    return model_json(model_id)


@router.post("/v1/responses", name="create_response", tags=["openai"], include_in_schema=False)
async def responses(request: Request, service: Svc, user: User) -> Response:
    """OpenAI's Responses API for clients that speak only it: ``input`` (a text, or messages with ``input_text``
    parts), ``instructions``, ``max_output_tokens``, ``temperature``, ``text.format`` and pagemind's extension, read
    as the chat request they mean and answered the same way; the reply is a ``response`` with one output message,
    or with ``stream`` the Responses API's events as it is written (:class:`ResponseEvents`)."""
    try:
        raw = await request.json()
    except ValueError:
        return openai_error("the body is not JSON", 400, "invalid_json")
    if not isinstance(raw, dict):
        return openai_error("the body is not a JSON object", 400, "invalid_request")
    return await answer_chat(request, chat_of_response_request(raw), service, user, response_object,
                             named=RESPONSE_NAMES)


# the Responses API's fields and the chat request's they are read as (its errors name the Responses field)
RESPONSE_FIELDS = (("max_output_tokens", "max_tokens"), ("temperature", "temperature"), ("tools", "tools"),
                   ("tool_choice", "tool_choice"), ("pagemind", "pagemind"), ("n", "n"), ("stream", "stream"))
RESPONSE_NAMES = {**{ours: theirs for theirs, ours in RESPONSE_FIELDS}, "messages": "input",
                  "response_format": "text.format"}


def chat_of_response_request(raw: dict[str, Any]) -> dict[str, Any]:
    """A Responses API request as the chat request it means."""
    messages: list[dict[str, Any]] = []
    if raw.get("instructions"):
        messages.append({"role": "system", "content": str(raw["instructions"])})
    given = raw.get("input")
    items = [{"role": "user", "content": given}] if isinstance(given, str) else given if isinstance(given, list) else []
    for item in items:
        if not isinstance(item, dict) or item.get("role") not in ROLES:
            continue
        content = item.get("content")
        if isinstance(content, list):  # input_text parts are text; any other part is refused by name downstream
            content = [{**p, "type": "text"} if isinstance(p, dict) and p.get("type") in ("input_text", "output_text")
                       else p for p in content]
        messages.append({"role": item["role"], "content": content})
    body: dict[str, Any] = {"model": raw.get("model"), "messages": messages}
    for theirs, ours in RESPONSE_FIELDS:
        if theirs in raw:
            body[ours] = raw[theirs]
    fmt = (raw.get("text") or {}).get("format") if isinstance(raw.get("text"), dict) else None
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        body["response_format"] = {"type": "json_schema", "json_schema": {
            "name": fmt.get("name") or "answer", "schema": fmt.get("schema")}}
    elif isinstance(fmt, dict) and fmt.get("type") in ("json_object", "text"):
        body["response_format"] = {"type": fmt["type"]}
    return body


def response_object(made: str, body: ChatRequest, target: Target, run_id: str,
                    result: Answer | TurnResult) -> dict[str, Any]:
    """The answer as the Responses API's ``response``: one assistant message of ``output_text``."""
    chat = completion(made, body, target, run_id, result)
    choice, usage = chat["choices"][0], chat["usage"]
    cut = choice["finish_reason"] == "length"
    return {"id": made.replace("chatcmpl-", "resp_"), "object": "response", "created_at": chat["created"],
            "status": "incomplete" if cut else "completed", "model": body.model,
            "incomplete_details": {"reason": "max_output_tokens"} if cut else None,
            "output": [{"type": "message", "id": made.replace("chatcmpl-", "msg_"), "status": "completed",
                        "role": "assistant", "content": [{"type": "output_text", "text": choice["message"]["content"],
                                                          "annotations": []}]}],
            "usage": {"input_tokens": usage["prompt_tokens"], "output_tokens": usage["completion_tokens"],
                      "total_tokens": usage["total_tokens"],
                      "input_tokens_details": {"cached_tokens": usage["prompt_tokens_details"]["cached_tokens"]},
                      "output_tokens_details": {"reasoning_tokens": 0}},
            "pagemind": chat["pagemind"]}


# OpenAI's other APIs: a 404 in OpenAI's shape that says what is served, so an SDK shows why (not an empty message)
NOT_SERVED = ("completions", "audio", "images", "files", "uploads", "batches",
              "assistants", "threads", "vector_stores", "moderations", "fine_tuning", "realtime")


def not_served(request: Request) -> JSONResponse:
    return openai_error(f"{request.url.path[:80]} is not served by pagemind: its OpenAI surface is /v1/chat/"
                        "completions, /v1/responses, /v1/embeddings and /v1/models (docs/openai.md)", 404,
                        "not_found", None)


for _kind in NOT_SERVED:
    router.add_api_route(f"/v1/{_kind}", not_served, methods=["GET", "POST"], include_in_schema=False)
    router.add_api_route(f"/v1/{_kind}/{{rest:path}}", not_served, methods=["GET", "POST", "DELETE"],
                         include_in_schema=False)


def request_schema(model: type[BaseModel] | None = None) -> dict[str, Any]:
    """A request's JSON schema (ChatRequest's by default) with its parts inlined (an operation's own schema may not
    point into ``$defs``)."""
    schema = (model or ChatRequest).model_json_schema()
    defs = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return inline(defs[node["$ref"].rsplit("/", 1)[-1]])
            return {k: inline(v) for k, v in node.items()}
        return [inline(v) for v in node] if isinstance(node, list) else node

    inlined: dict[str, Any] = inline(schema)
    return inlined


EMBEDDING_MODEL = "pagemind/minilm"  # the embedded all-MiniLM-L6-v2: 384 numbers a text


class EmbeddingRequest(BaseModel):
    """OpenAI's embeddings request, as pagemind serves it: texts only (token arrays are the encoder's own ids
    elsewhere, so they are refused by name), the one model, its one size of vector."""

    model_config = ConfigDict(extra="forbid")
    model: str = Field(max_length=200)
    input: (Annotated[str, Field(min_length=1, max_length=limits.MAX_PASSAGE)]
            | Annotated[list[Annotated[str, Field(min_length=1, max_length=limits.MAX_PASSAGE)]],
                        Field(min_length=1, max_length=limits.MAX_EMBED_INPUTS)]) = Field(
        description="a text or a list of texts")
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: Literal[384] | None = Field(None, description="the encoder's one size, 384")
    user: str | None = Field(default=None, max_length=limits.MAX_NAME)


@router.post("/v1/embeddings", name="create_embeddings", tags=["openai"],
             responses=openai_errors(400, 401, 403, 404, 413, 421, 422), openapi_extra={"requestBody": {
                 "required": True, "content": {"application/json": {"schema": request_schema(EmbeddingRequest)}}}})
async def embeddings(request: Request, service: Svc, user: User) -> Response:
    """OpenAI's embeddings from the embedded MiniLM (model ``pagemind/minilm``, 384 dimensions, unit vectors; no
    LLM call, no run): what pagemind's own retrieval uses, for a client's (LangChain's ``OpenAIEmbeddings``,
    LlamaIndex's ``OpenAIEmbedding``, the SDK's ``embeddings.create``). ``encoding_format`` ``base64`` (the SDK's
    default) is float32 little-endian, as OpenAI's. A text longer than the encoder's 256-token window is the mean
    of its windows' vectors."""
    import base64

    try:
        raw = await request.json()
    except ValueError:
        return openai_error("the body is not JSON", 400, "invalid_json")
    given = raw.get("input") if isinstance(raw, dict) else None
    if isinstance(given, list) and given and all(isinstance(x, (int, list)) for x in given):
        return openai_error("token arrays are not served: send the texts (pagemind's encoder has its own "
                            "tokenizer)", 400, "unsupported_parameter", "input")
    try:
        body = EmbeddingRequest.model_validate(raw)
    except ValidationError as err:
        detail, fields = shapes.validation_detail([dict(e) for e in err.errors()])
        return openai_error(detail, 400, "invalid_request", fields[0]["field"] if fields else None)
    if body.model != EMBEDDING_MODEL:
        return openai_error(f"the model {body.model[:80]!r} does not exist: pagemind embeds with {EMBEDDING_MODEL}",
                            404, "model_not_found", "model")
    texts = [body.input] if isinstance(body.input, str) else body.input
    try:  # a client that leaves (its timeout) stops the encoder at its next group of texts
        made = await unless_left(request, lambda wanted: service.embed(user, texts, wanted))
    except PagemindError as err:
        return error_of(err)
    if isinstance(made, Response):
        return made
    data = [{"object": "embedding", "index": i,
             "embedding": base64.b64encode(v.astype("<f4").tobytes()).decode() if body.encoding_format == "base64"
             else [float(x) for x in v]} for i, v in enumerate(made.vectors)]
    used = sum(made.tokens)
    return JSONResponse({"object": "list", "data": data, "model": EMBEDDING_MODEL,
                         "usage": {"prompt_tokens": used, "total_tokens": used}})


@router.post("/v1/chat/completions", name="chat_completions", tags=["openai"], responses={
    **openai_errors(400, 401, 403, 404, 409, 413, 421, 422, 502),
    200: {"description": "a chat.completion, or (stream: true) chat.completion.chunk events",
          "content": {"application/json": {}, "text/event-stream": {}}}},
    openapi_extra={"requestBody": {"required": True, "content": {"application/json": {"schema": request_schema()}}}})
async def chat_completions(request: Request, service: Svc, user: User) -> Response:
    """OpenAI's chat completion over a document, a library (model ``pagemind/<method>``) or an agent (model
    ``agent/<name>``); ``stream: true`` for chunks as the answer is written. See the module's documentation."""
    try:
        raw = await request.json()
    except ValueError:
        return openai_error("the body is not JSON", 400, "invalid_json")
    return await answer_chat(request, raw, service, user, completion)


Render = Callable[[str, "ChatRequest", Target, str, Any], dict[str, Any]]


async def answer_chat(request: Request, raw: Any, service: Any, user: Any, render: Render,
                      named: Mapping[str, str] | None = None) -> Response:
    """A chat request answered (streamed as chat chunks when it asks), the answer rendered by ``render``: OpenAI's
    chat completion, or a Responses API response (:func:`responses`). ``named``: the request's own names of the
    chat fields it was read into (``max_tokens`` is the Responses API's ``max_output_tokens``), which its errors
    use."""
    names = named or {}

    def said(field: str, detail: str) -> tuple[str, str]:
        head = field.split(".")[0]
        theirs = names.get(head, head)
        return theirs + field[len(head):], (theirs + detail[len(head):] if detail.startswith(head) else detail)

    unsupported = refused(raw) if isinstance(raw, dict) else None
    if unsupported is not None:
        param, detail = said(unsupported[0], unsupported[1])
        return openai_error(detail, 400, "unsupported_parameter", param)
    try:
        body = ChatRequest.model_validate(raw)
    except ValidationError as err:
        detail, fields = shapes.validation_detail([dict(e) for e in err.errors()])
        if not fields:
            return openai_error(detail, 400, "invalid_request", None)
        param, detail = said(fields[0]["field"], detail)
        return openai_error(detail, 400, "invalid_request", param)
    try:
        target = target_of(body.model)
        question = last_user_text(body.messages)
    except PagemindError as err:
        return error_of(err)
    reply = body.reply()
    made = f"chatcmpl-{int(time.time() * 1000):x}"
    if target.kind == "method" and is_housekeeping(question):
        return await housekeeping(made, body, service, user, reply)
    if reply is not None and reply.json_schema is not None:
        if target.kind == "agent":
            return openai_error("an agent's turn answers in its own messages: response_format is for pagemind/"
                                "<method> models", 400, "unsupported_parameter", "response_format")
        if not service.capabilities().supports_json_schema:
            return openai_error("this model server cannot constrain a reply to JSON", 400, "unsupported_parameter",
                                "response_format")
    pieces: asyncio.Queue[str | None] = asyncio.Queue()
    loop = asyncio.get_running_loop()

    def on_text(piece: str) -> None:
        loop.call_soon_threadsafe(pieces.put_nowait, piece)

    key = hashlib.sha256(f"{user.id}\0".encode() + json.dumps(raw, sort_keys=True).encode()).hexdigest()
    try:
        begun, _ = await run_in_threadpool(service.started_once, key, lambda: start(  # JSON is sent once judged
            service, user, target, body, question, reply, on_text if body.stream and not body.wants_json else None))
    except PagemindError as err:
        return error_of(err)
    ids = {"x-request-id": begun.run.id}  # the run that answers: GET /v1/runs/{id}, `pagemind logs`
    if not body.stream:
        future = await followed(service, request, user, key, begun)
        if future is None:  # the client left (its timeout, a closed tab): the run stops unless another waits on it
            return Response(status_code=499)
        try:
            made_reply = render(made, body, target, begun.run.id, future.result())
        except PagemindError as err:  # the run's error, or a reply the request's settings cannot hold
            failed = error_of(err)
            failed.headers.update(ids)
            return failed
        return JSONResponse(made_reply, headers=ids)
    events = (ResponseEvents if render is response_object else ChatEvents)(made, body, target, begun.run.id)
    return StreamingResponse(chunks(events, begun, pieces, lambda: service.left(user, key, begun)),
                             media_type="text/event-stream", headers={**STREAM_HEADERS, **ids})


# A chat UI's own tasks (Open WebUI: a title, tags, follow-up questions, search queries for its menus) come as a
# user message framed "### Task: ... <chat_history> ... </chat_history>": not a question about a library
_TASK = re.compile(r"^\s*#{2,4}\s*Task:", re.IGNORECASE)


def is_housekeeping(text: str) -> bool:
    return bool(_TASK.match(text)) and "<chat_history>" in text


async def housekeeping(made: str, body: ChatRequest, service: Any, user: Any,
                       reply: ReplySettings | None) -> Response:
    """A UI's task answered by the model directly: no library read, no citations, no recorded run."""
    messages = [(str(m.get("role")), text_of(m)) for m in body.messages if m.get("role") in ROLES]
    try:
        response = await run_in_threadpool(service.housekeeping, user, messages, reply)
    except PagemindError as err:
        return error_of(err)
    usage = {"prompt_tokens": response.prompt_tokens, "completion_tokens": response.completion_tokens,
             "total_tokens": response.prompt_tokens + response.completion_tokens}
    finish = "length" if response.finish_reason == "length" else "stop"
    extra = {"housekeeping": True}
    if not body.stream:
        return JSONResponse(completion_json(made, body.model, response.text, finish, usage, extra))

    async def events() -> AsyncIterator[str]:
        created = int(time.time())
        yield chunk_event(made, created, body.model, {"role": "assistant", "content": response.text})
        yield chunk_event(made, created, body.model, {}, finish, pagemind=extra)
        if (body.stream_options or {}).get("include_usage"):
            yield usage_event(made, created, body.model, usage)
        yield "data: [DONE]\n\n"

    return StreamingResponse(events(), media_type="text/event-stream", headers=STREAM_HEADERS)


def start(service: Service, user: UserRow, target: Target, body: ChatRequest, question: str,
          reply: ReplySettings | None, on_text: Callable[[str], None] | None) -> Started:
    """The run answering the request, started on the worker pool."""
    ext = body.pagemind
    if target.kind == "agent":
        return service.send(user, target.name, question)
    library = ext.library or target.library
    if ext.document_id is not None and library is not None:
        raise InputError('name one thing to read: "pagemind": {"document_id": "..."} or {"library": "..."}')
    if ext.document_id is None and library is None:
        library = service.default_library(user)
    try:
        ask = shapes.AskRequest(question=question, options=ext.options, method=target.name,
                                method_options=ext.method_options, budget=ext.budget)
    except ValidationError as err:  # the same limits as the native ask: the client's input, said as such
        detail, _ = shapes.validation_detail([dict(e) for e in err.errors()])
        raise InputError(detail) from None
    return service.ask(user, ext.document_id, ask, library=library, on_text=on_text, reply=reply,
                       conversation=earlier_turns(body.messages))


def _answer(target: Target, result: Answer | TurnResult,
            ) -> tuple[str, list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """(text, citations, usage, extra) of an answer or an agent's turn."""
    data: dict[str, Any] = result.as_dict()
    usage = result.usage
    text = "\n\n".join(data["messages"]) if target.kind == "agent" else str(data.get("answer") or "")
    extra: dict[str, Any] = {k: data[k] for k in ("index_usage", "stop_reason", "letter", "method", "support",
                                                  "confidence", "abstained", "draft") if k in data}
    # as OpenAI counts a prompt cache: replies served from pagemind's cache are in the totals, and detailed
    prompt, completion = usage.all_prompt_tokens, usage.all_completion_tokens
    counts: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                              "total_tokens": prompt + completion,
                              "prompt_tokens_details": {"cached_tokens": usage.cached_prompt_tokens}}
    return text, data.get("citations") or [], counts, extra


def _withdrawn(result: Answer | TurnResult) -> str:
    """After a streamed draft, what replaces it: the abstention when the sources do not support it, the computed
    figure with its working (empty otherwise)."""
    return f"\n\n{result.text}" if isinstance(result, Answer) and result.replaced else ""


def _finish(target: Target, result: Answer | TurnResult) -> str:
    """OpenAI's finish_reason: ``length`` when the answer was cut at the request's reply limit."""
    return (result.finish_reason or "stop") if isinstance(result, Answer) and target.kind != "agent" else "stop"


def _content(body: ChatRequest, target: Target, cited: list[dict[str, Any]], result: Answer | TurnResult,
             text: str) -> str:
    """The assistant message's content as the request's reply settings allow: for a JSON format the answer alone,
    and an abstention as JSON (:func:`_abstained_json`); with a token limit, no markers or Sources block (they stay in
    ``pagemind.citations``) and an abstention's first sentence only; else the answer, its markers and its sources."""
    abstained = isinstance(result, Answer) and result.abstained
    if body.wants_json:
        return _abstained_json(body, text) if abstained else text
    if body.token_limit is not None:
        return re.split(r"(?<=\.)\s", text, maxsplit=1)[0] if abstained else text
    return text + _tail(body, target, cited, result)


def _abstained_json(body: ChatRequest, said: str) -> str:
    """An abstention in the JSON the request asked for: ``{"abstained": true, "reason": …}`` where the schema takes
    it; an :class:`InputError` (422) saying so where the schema has no room for it — never prose in a JSON reply."""
    made = {"abstained": True, "reason": said}
    fmt = body.response_format
    schema = fmt.json_schema.schema_ if fmt is not None and fmt.json_schema is not None else None
    if schema:
        import jsonschema

        try:
            jsonschema.validate(made, schema)
        except (jsonschema.ValidationError, jsonschema.SchemaError):
            raise InputError(f"the sources do not hold the answer, so it abstained; the response_format schema "
                             f"{fmt.json_schema.name if fmt and fmt.json_schema else ''!r} has no room to say so: "
                             'allow {"abstained": true, "reason": "..."} (e.g. with anyOf), or ask with '
                             '"pagemind": {"method_options": {"abstain": "off"}} for the unsupported draft') from None
    return json.dumps(made)


def _tail(body: ChatRequest, target: Target, cited: list[dict[str, Any]], result: Answer | TurnResult) -> str:
    """The citation markers and the Sources block after the answer."""
    named = target.kind == "agent" or (isinstance(result, Answer) and "library" in result.details)
    return "".join(f" [{n}]" for n in range(1, len(cited) + 1)) + \
        (shapes.sources_text(cited, named) if body.pagemind.sources else "")


STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def completion_json(made: str, model: str, content: str, finish: str, usage: dict[str, Any],
                    extension: dict[str, Any]) -> dict[str, Any]:
    """OpenAI's ``chat.completion`` of one assistant message, with pagemind's extension object."""
    return {"id": made, "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": finish, "logprobs": None}],
            "usage": usage, "pagemind": extension}


def chunk_event(made: str, created: int, model: str, delta: dict[str, Any], finish: str | None = None,
                **more: Any) -> str:
    """One ``chat.completion.chunk`` server-sent event."""
    chunk = {"id": made, "object": "chat.completion.chunk", "created": created, "model": model,
             "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}], **more}
    return f"data: {json.dumps(chunk)}\n\n"


def usage_event(made: str, created: int, model: str, usage: dict[str, Any]) -> str:
    """The last chunk when ``stream_options.include_usage``: no choices, the usage."""
    last = {"id": made, "object": "chat.completion.chunk", "created": created, "model": model, "choices": [],
            "usage": usage}
    return f"data: {json.dumps(last)}\n\n"


def completion(made: str, body: ChatRequest, target: Target, run_id: str,
               result: Answer | TurnResult) -> dict[str, Any]:
    text, cited, usage, extra = _answer(target, result)
    return completion_json(made, body.model, _content(body, target, cited, result, text), _finish(target, result),
                           usage, {"run_id": run_id, "citations": cited, **extra})


class ChatEvents:
    """OpenAI's ``chat.completion.chunk`` events of one streamed answer: the role, the text as it is written, the
    markers and sources with the finish and pagemind's extension, the usage when asked, ``[DONE]``."""

    def __init__(self, made: str, body: ChatRequest, target: Target, run_id: str) -> None:
        self.made, self.body, self.target, self.run_id = made, body, target, run_id
        self.created = int(time.time())

    def event(self, delta: dict[str, Any], finish: str | None = None, **more: Any) -> str:
        return chunk_event(self.made, self.created, self.body.model, delta, finish, **more)

    def begin(self) -> list[str]:
        return [self.event({"role": "assistant", "content": ""})]

    def piece(self, text: str) -> str:
        return self.event({"content": text})

    def last(self, result: Any, rest: str, cited: list[dict[str, Any]]) -> str:
        """What follows the streamed text: the rest of the answer, the abstention that withdraws a streamed draft,
        the markers and sources (as :func:`_content` allows them); for a JSON format, where nothing was streamed,
        the whole reply as the non-streamed one."""
        if self.body.wants_json:
            return _content(self.body, self.target, cited, result, rest)
        if self.body.token_limit is not None:
            return rest + _withdrawn(result)
        return rest + _withdrawn(result) + _tail(self.body, self.target, cited, result)

    def end(self, result: Any, rest: str) -> list[str]:
        _, cited, usage, extra = _answer(self.target, result)
        out = [self.event({"content": self.last(result, rest, cited)}),
               self.event({}, _finish(self.target, result), pagemind={"run_id": self.run_id, "citations": cited,
                                                                     **extra})]
        if (self.body.stream_options or {}).get("include_usage"):
            out.append(usage_event(self.made, self.created, self.body.model, usage))
        return [*out, "data: [DONE]\n\n"]

    def failed(self, err: PagemindError) -> list[str]:
        """The stream has begun: the error is its last event, in OpenAI's shape."""
        return [f"data: {json.dumps(json.loads(bytes(error_of(err).body)))}\n\n", "data: [DONE]\n\n"]


class ResponseEvents(ChatEvents):
    """The Responses API's events of one streamed answer, each ``event: TYPE`` with a ``sequence_number``: the
    response created and in progress, its message and text part added, ``response.output_text.delta`` as the
    answer is written, then the text, part and message done and ``response.completed`` with the whole
    response (:func:`response_object`); an error is an ``error`` event."""

    def __init__(self, made: str, body: ChatRequest, target: Target, run_id: str) -> None:
        super().__init__(made, body, target, run_id)
        self.seq = 0
        self.item = made.replace("chatcmpl-", "msg_")

    def event_of(self, kind: str, **fields: Any) -> str:
        self.seq += 1
        return f"event: {kind}\ndata: {json.dumps({'type': kind, 'sequence_number': self.seq, **fields})}\n\n"

    def shell(self, status: str) -> dict[str, Any]:
        return {"id": self.made.replace("chatcmpl-", "resp_"), "object": "response", "created_at": self.created,
                "status": status, "model": self.body.model, "output": [], "usage": None}

    def message(self, text: str | None, status: str) -> dict[str, Any]:
        content = [] if text is None else [{"type": "output_text", "text": text, "annotations": []}]
        return {"type": "message", "id": self.item, "status": status, "role": "assistant", "content": content}

    def begin(self) -> list[str]:
        part = {"type": "output_text", "text": "", "annotations": []}
        return [self.event_of("response.created", response=self.shell("in_progress")),
                self.event_of("response.in_progress", response=self.shell("in_progress")),
                self.event_of("response.output_item.added", output_index=0, item=self.message(None, "in_progress")),
                self.event_of("response.content_part.added", item_id=self.item, output_index=0, content_index=0,
                              part=part)]

    def piece(self, text: str) -> str:
        return self.event_of("response.output_text.delta", item_id=self.item, output_index=0, content_index=0,
                             delta=text, logprobs=[])

    def end(self, result: Any, rest: str) -> list[str]:
        whole = response_object(self.made, self.body, self.target, self.run_id, result)
        text = whole["output"][0]["content"][0]["text"]
        _, cited, _, _ = _answer(self.target, result)
        tail = self.last(result, rest, cited)
        out = [self.piece(tail)] if tail else []
        where = {"item_id": self.item, "output_index": 0, "content_index": 0}
        return [*out, self.event_of("response.output_text.done", **where, text=text, logprobs=[]),
                self.event_of("response.content_part.done", **where, part=whole["output"][0]["content"][0]),
                self.event_of("response.output_item.done", output_index=0, item=whole["output"][0]),
                self.event_of("response.incomplete" if whole["status"] == "incomplete" else "response.completed",
                              response=whole)]

    def failed(self, err: PagemindError) -> list[str]:
        body = json.loads(bytes(error_of(err).body))["error"]
        return [self.event_of("error", code=body.get("code"), message=body.get("message"), param=body.get("param"))]


async def chunks(events: ChatEvents, begun: Any, pieces: asyncio.Queue[str | None],
                 left: Callable[[], None]) -> AsyncIterator[str]:
    """The stream of one answer in ``events``' shape: its beginning, the text as it is written, its end; ``left``
    is told when the client goes before the answer is done (its run is then cancelled)."""
    try:
        async for event in _chunks(events, begun, pieces):
            yield event
    finally:  # also when the client went away (the task is cancelled): a short store write, no await needed
        if not begun.future.done():
            left()


async def _chunks(events: ChatEvents, begun: Any, pieces: asyncio.Queue[str | None]) -> AsyncIterator[str]:
    for event in events.begin():
        yield event
    future = watched(begun.future)
    future.add_done_callback(lambda _: pieces.put_nowait(None))
    streamed: list[str] = []
    while (piece := await pieces.get()) is not None:
        streamed.append(piece)
        yield events.piece(piece)
    try:
        result = await future
    except PagemindError as err:
        for event in events.failed(err):
            yield event
        return
    text, _, _, _ = _answer(events.target, result)
    said = "".join(streamed)
    rest = text[len(said):] if text.startswith(said) else ("" if streamed else text)
    try:
        ended = events.end(result, rest)
    except PagemindError as err:  # a reply the request's settings cannot hold (a JSON schema without room)
        ended = events.failed(err)
    for event in ended:
        yield event
