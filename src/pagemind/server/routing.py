"""What every router of the HTTP API shares (:mod:`.app`'s and :mod:`.agents`'): the status of each typed error, the
OpenAPI error and link declarations, the request's service and user, and the responses of a started run. Its own
module so that the routers import it, and not each other."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Annotated, Any

from fastapi import Depends, Header, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse, Response, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from ..agent import AgentExists, AgentNotFound
from ..agent.locks import AgentBusy
from ..errors import (
    Abandoned,
    ConfigError,
    ContextWindowExceeded,
    InputError,
    InputTooLarge,
    LLMError,
    NotFound,
    PagemindError,
    UnsupportedInput,
)
from ..limits import MAX_LIST
from ..runs import RunCancelled, RunExists, RunsQueued
from ..store import Page, UserRow
from .service import AgentNameTaken, Service
from .shapes import DOCUMENT_ID, RUN_ID, Error, error_body, run_json
from .sse import HEADERS, resume_point, run_events
from .views import Started

# status codes of pagemind's typed errors (the first match wins: subclasses first)
ERROR_STATUS: tuple[tuple[type[BaseException], int], ...] = (
    (InputTooLarge, 413), (UnsupportedInput, 415), (NotFound, 404), (AgentNotFound, 404),
    (AgentExists, 409), (AgentNameTaken, 409), (AgentBusy, 409), (RunCancelled, 409),
    (RunExists, 409), (RunsQueued, 429),
    (InputError, 422), (ConfigError, 422), (ContextWindowExceeded, 422), (LLMError, 502), (PagemindError, 400),
)


def status_of(err: BaseException) -> int:
    return next((code for kind, code in ERROR_STATUS if isinstance(err, kind)), 500)


# OpenAI's and Letta's SDKs (Stainless) retry 408, 409, 429 and 5xx unless told: a taken name, a cancelled run or a
# route this server lacks fails the same way every time, and a busy agent is worth one more try a second later
NO_RETRY = {"x-should-retry": "false"}
BUSY_RETRY = {"x-should-retry": "true", "Retry-After": "1"}


def retry_headers(err: BaseException) -> dict[str, str]:
    """Whether a client should send the request again (the ``x-should-retry`` header the SDKs obey)."""
    if isinstance(err, AgentBusy):
        return BUSY_RETRY
    return NO_RETRY if status_of(err) < 500 else {}


def error_response(err: BaseException, run_id: str | None = None) -> JSONResponse:
    """The one error body of a library error (its status by type; the run it belongs to, if any)."""
    run_id = run_id or (err.run_id if isinstance(err, AgentBusy) else None)
    body = error_body(str(err) or type(err).__name__, type(err).__name__, run_id=run_id)
    return JSONResponse(body, status_code=status_of(err), headers=retry_headers(err))


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI responses of the error codes an operation may answer (every one in the Error shape)."""
    what = {400: "bad request", 401: "no valid API key", 403: "a request from another site", 404: "not yours or "
            "no such thing", 409: "busy, taken or cancelled", 413: "too large", 415: "not a document pagemind "
            "reads", 421: "another host (DNS rebinding)", 422: "invalid input (options, or a prompt and reply the "
            "model's window cannot hold)", 502: "the model server failed"}
    return {code: {"model": Error, "description": what[code]} for code in codes}


def links(field: str, param: str, *operations: str) -> dict[str, Any]:
    """OpenAPI links from a response's ``field`` to the operations that take it as ``param`` (how generated clients
    and Schemathesis' stateful tests chain a created document, agent or run into what reads it)."""
    return {"links": {op: {"operationId": op, "parameters": {param: f"$response.body#/{field}"}} for op in operations}}


RUN_LINKS = links("run_id", "run_id", "get_run", "list_steps", "run_events", "cancel_run")
EDGE = (400, 403, 413, 421, 422)  # what the edge and validation may answer on any route
AUTHED = errors(*EDGE, 401, 404)
RUNNING = errors(*EDGE, 401, 404, 409, 502)
SSE_EVENT = {"type": "object", "required": ["data"], "description": "one server-sent event: a step (id = its seq, "
             "event = its kind, data = the step's JSON) or the last, `end` (data = the run's JSON)",
             "properties": {"id": {"type": "string", "pattern": "^[0-9]+$"}, "event": {"type": "string"},
                            "data": {"type": "string", "contentMediaType": "application/json"}}}
STREAMS = {"content": {"application/json": {}, "text/event-stream": {"schema": SSE_EVENT}},
           "description": "the answer (JSON), or the run's steps as server-sent events with stream=true"}
QUEUED = {"description": "the run, queued (wait=false)", "content": {"application/json": {}}}


def paged(request: Request, response: Response, page: Page[Any], render: Callable[[Any], Any]) -> list[Any]:
    """A page of a listing as pagemind's API sends it: its items (rendered) as the body, and where there are more
    the next page's address in a ``Link`` header (RFC 8288, ``rel="next"``: this request with ``after`` set to
    the page's cursor)."""
    if page.next is not None:
        response.headers["Link"] = f'<{request.url.include_query_params(after=page.next)}>; rel="next"'
    return [render(item) for item in page.items]


async def client_left(request: Request, work: asyncio.Future[Any]) -> bool:
    """Wait for ``work``; True, with the work not done, as soon as the client is seen to have left (looked at
    every half second)."""
    while not work.done():
        await asyncio.wait({work}, timeout=0.5)
        if not work.done() and await request.is_disconnected():
            return True
    return False


def watched(done: Future[Any]) -> asyncio.Future[Any]:
    """The run's future in this event loop; its error counted as seen when the client left before reading it (a
    cancelled run's RunCancelled is what it should be, not an unretrieved-exception warning)."""
    future = asyncio.wrap_future(done)
    future.add_done_callback(lambda f: f.cancelled() or f.exception())
    return future


async def followed(service: Service, request: Request, user: UserRow, key: str,
                   begun: Started) -> asyncio.Future[Any] | None:
    """The future of a run its client waits for (``key``: the request's, as :meth:`Service.started_once` took
    it); None when the client left (its timeout, a closed tab): the run is then cancelled unless another client
    waits on it too (:meth:`Service.left`)."""
    future = watched(begun.future)
    if await client_left(request, future):
        await run_in_threadpool(service.left, user, key, begun)
        return None
    return future


async def unless_left(request: Request, work: Callable[[Callable[[], bool]], Any]) -> Any:
    """``work(wanted)`` in a worker thread, ``wanted()`` saying whether the client still waits; when it has left,
    the work is told (it stops at its next look, raising :class:`Abandoned`, which the log hears) and the answer is
    499, the status for a client that closed its request."""
    gone = threading.Event()
    job = asyncio.ensure_future(run_in_threadpool(work, lambda: not gone.is_set()))
    if not await client_left(request, job):
        return job.result()
    gone.set()
    try:
        await job
    except Abandoned as err:  # what the operator sees: the work it did not do
        logging.getLogger("pagemind").warning("%s %s: %s", request.method, request.url.path, err)
    except PagemindError:
        pass
    return Response(status_code=499)


# --- the request's service and user -----------------------------------------------------------------------------
def service_of(request: Request) -> Service:
    service: Service = request.app.state.service
    return service


bearer = HTTPBearer(auto_error=False, description="an API key: `pagemind users create NAME` makes one")


def current_user(request: Request,
                 credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> UserRow:
    """The user of the request's API key (``Authorization: Bearer KEY``); 401 without a valid one."""
    service = service_of(request)
    user = service.user_for(request.headers.get("authorization"))
    if user is None:
        raise Unauthorized()
    return user


class Unauthorized(Exception):
    """No valid key: 401 with ``WWW-Authenticate: Bearer``."""


User = Annotated[UserRow, Depends(current_user)]
Svc = Annotated[Service, Depends(service_of)]
DocId = Annotated[str, PathParam(pattern=DOCUMENT_ID)]
RunId = Annotated[str, PathParam(pattern=RUN_ID)]
Wait = Annotated[bool, Query(description="false: answer 202 with the queued run at once")]
Stream = Annotated[bool, Query(alias="stream", description="true: the run's steps as server-sent events")]
ListLimit = Annotated[int, Query(ge=1, le=MAX_LIST, description=f"at most this many (1 to {MAX_LIST:,}); the "
                                  "response's `Link: <...>; rel=\"next\"` header names the next page")]
LastEventId = Annotated[str, Header(alias="Last-Event-ID", max_length=32, pattern=r"^(-1|[0-9]+)$",
                                           description="resume a stream after this step (its seq)")]


def stream(service: Service, run_id: str, last_event_id: str | None, after: int | None = None) -> StreamingResponse:
    start = resume_point(last_event_id, after)
    return StreamingResponse(run_events(service.run_log, run_id, start, service.keepalive),
                             media_type="text/event-stream", headers=HEADERS)


async def finished(future: Future, shape: Callable[[Any], Any], run_id: str | None = None,
                   status: int = 200) -> Response:
    """The answer of a job the request waited for: ``shape(result)``, or its error (with the run's id)."""
    try:
        result = await asyncio.wrap_future(future)
    except Exception as err:  # every failure is recorded on the run and answered with its id
        return error_response(err, run_id)
    return JSONResponse(await run_in_threadpool(shape, result), status_code=status)


async def started(service: Service, start: Callable[[], Started], wait: bool, stream_: bool,
                  last_event_id: str | None, shape: Callable[[Any, Any], Any],
                  client: tuple[Request, UserRow, Any] | None = None) -> Response:
    """The response to a request that started a run: its events, the queued run, or its result when done.
    ``client`` (the request, its user and its body): a run the request waits for follows its client — an identical
    request while it runs (an SDK's retry after its timeout) waits on the same run, and when every client waiting
    on it has left it is cancelled (recorded so; a memory's build resumes later from what it stored) and the answer
    is 499. A stream (its client may come back with Last-Event-ID) and a queued run (``wait=false``) go on."""
    if client is not None and wait and not stream_:
        request, user, body = client
        key = hashlib.sha256(f"{user.id}\0{request.url.path}\0".encode() + body.model_dump_json().encode()).hexdigest()
        begun, _ = await run_in_threadpool(service.started_once, key, start)
        if await followed(service, request, user, key, begun) is None:
            return Response(status_code=499)
        return await finished(begun.future, lambda result: shape(begun.run, result), begun.run.id)
    begun = await run_in_threadpool(start)
    if stream_:
        return stream(service, begun.run.id, last_event_id)
    if not wait:
        return JSONResponse(run_json(begun.run), status_code=202)
    return await finished(begun.future, lambda result: shape(begun.run, result), begun.run.id)
