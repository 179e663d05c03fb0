"""The HTTP API of ``pagemind serve`` (docs/api.md): documents, libraries, index and ask, runs, agents, users'
data.

Routes translate HTTP to the service layer (:mod:`.service`) and back: a request is parsed into the shapes of
:mod:`.shapes`, the operation runs (a run on the worker pool), and the answer is the operation's JSON — when the
run is done, at once (``wait=false``), or as a stream of its steps (``stream=true``, :mod:`.sse`). Every request
first passes the edge (:mod:`.edge`: Host, Origin, one Authorization header, bounded bodies, HEAD); every error
is one JSON shape (:class:`.shapes.Error`), declared in the OpenAPI schema.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, FastAPI, Query, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import limits
from ..api import Pagemind
from ..config import Settings
from ..errors import PagemindError
from ..limits import LIST_PAGE, MAX_ID, MAX_LIST
from ..runs import KINDS
from ..version import VERSION
from . import shapes
from .edge import Edge, EdgePolicy, allowed_methods
from .letta import router as letta_router
from .openai_compat import router as openai_router
from .routing import (
    AUTHED,
    EDGE,
    QUEUED,
    RUN_LINKS,
    RUNNING,
    SSE_EVENT,
    STREAMS,
    DocId,
    LastEventId,
    ListLimit,
    RunId,
    Stream,
    Svc,
    Unauthorized,
    User,
    Wait,
    error_response,
    errors,
    links,
    paged,
    started,
    status_of,
    stream,
    unless_left,
)
from .service import CONTEXT_CHARS, Service
from .shapes import (
    MEMORY_KEY,
    AskRequest,
    CitedLocation,
    IndexRequest,
    document_json,
    error_body,
    library_document_json,
    library_json,
    memory_json,
    run_json,
)
from .uploads import hand_over, read_upload

STATIC = Path(__file__).parent / "static"


# --- service and user ---------------------------------------------------------------------------------------------
router = APIRouter()


@router.get("/v1/health", name="health", tags=["service"], responses=errors(*EDGE))
def health(service: Svc) -> dict[str, Any]:
    return {"status": "ok", "auth": service.auth, "version": VERSION}


@router.get("/v1/me", name="get_me", tags=["users"], responses=AUTHED)
def me(service: Svc, user: User) -> dict[str, Any]:
    return shapes.me_json(service.me(user))


@router.get("/v1/me/export", name="export_my_data", tags=["users"], responses=AUTHED)
def export(service: Svc, user: User) -> dict[str, Any]:
    """Everything of yours as one JSON archive: documents with their texts, agents, runs with their steps."""
    return service.export(user)


@router.delete("/v1/me/data", name="erase_my_data", tags=["users"], responses=AUTHED)
def erase(service: Svc, user: User) -> dict[str, int]:
    """Delete everything of yours (documents only you hold, with their memories; agents; runs), nothing else."""
    return service.erase(user)


@router.get("/v1/methods", name="list_methods", tags=["service"], responses=errors(*EDGE))
def methods(service: Svc) -> list[dict[str, Any]]:
    return [shapes.method_json(cls) for cls in service.methods()]


# --- documents ----------------------------------------------------------------------------------------------------
UPLOAD_BODY = {"requestBody": {"required": True, "content": {
    "multipart/form-data": {"schema": {"type": "object", "required": ["file"], "properties": {
        "file": {"type": "string", "format": "binary", "description": "the document (.txt, .md, .html, .pdf, "
                                                                      ".epub, .docx)"},
        "name": {"type": "string", "minLength": 1, "maxLength": limits.MAX_NAME,
                 "description": "a name for it (default: the file's)"},
        "encoding": {"type": "string", "enum": list(shapes.ENCODINGS),
                     "description": "the text's encoding (default UTF-8)"}}}},
    "application/json": {"schema": shapes.TextDocument.model_json_schema()}}}}


@router.post("/v1/documents", name="add_document", status_code=201, tags=["documents"],
             openapi_extra=UPLOAD_BODY,
             responses={**errors(*EDGE, 401, 415), 201: links("id", "doc_id", "get_document", "ask_document",
                                                               "index_document", "delete_document"),
                        202: {**QUEUED, **RUN_LINKS}})
async def upload(request: Request, service: Svc, user: User, wait: Wait = True) -> Response:
    """Upload a file (multipart ``file``, optional ``name``, ``encoding``) or a text (JSON ``{"name", "text"}``).
    Streamed to a temporary file and refused (413) as soon as it passes the limit; 415 binary or an unknown
    container; 422 empty, undecodable or malformed. Read while the request waits (stopped when its client leaves),
    or with ``wait=false`` as a background ``read`` run (202: the run; its pages as progress, the document's id
    in its result, ``POST /v1/runs/{id}/cancel`` stops it) — for a scanned PDF whose OCR takes seconds a page."""
    with await read_upload(request, service.max_bytes, max_body=service.max_body) as up:
        shapes.check_encoding(up.encoding)
        source: str | Path = up.text if up.text is not None else up.path  # type: ignore[assignment]
        if not wait:
            owned = hand_over(up) if up.path is not None else source
            try:
                begun = await run_in_threadpool(lambda: service.read_document(user, owned, up.name, up.encoding))
            except BaseException:  # no run took the file
                if isinstance(owned, Path):
                    owned.unlink(missing_ok=True)
                raise
            return JSONResponse(run_json(begun.run), status_code=202)
        added = await unless_left(request, lambda wanted: service.add_document(user, source, up.name, up.encoding,
                                                                                wanted))
    return added if isinstance(added, Response) else JSONResponse(document_json(added), status_code=201)


@router.get("/v1/documents", name="list_documents", tags=["documents"], responses=AUTHED)
def documents(request: Request, response: Response, service: Svc, user: User,
              after: Annotated[str, Query(pattern=shapes.DOCUMENT_ID, description="the page after this document "
                                          "(the Link header's cursor)")] = None,  # type: ignore[assignment]
              limit: ListLimit = LIST_PAGE) -> list[dict[str, Any]]:
    """Your documents, newest first, a page at a time."""
    return paged(request, response, service.documents(user, after=after, limit=limit), document_json)


@router.get("/v1/documents/{doc_id}", name="get_document", tags=["documents"], responses=AUTHED)
def document(doc_id: DocId, service: Svc, user: User) -> dict[str, Any]:
    """The document and the memories your requests built of it."""
    row, memories = service.document(user, doc_id)
    return {**document_json(row), "memories": [memory_json(m) for m in memories]}


@router.delete("/v1/documents/{doc_id}", name="delete_document", status_code=204, tags=["documents"],
               responses=AUTHED)
def delete_document(doc_id: DocId, service: Svc, user: User) -> Response:
    service.remove_document(user, doc_id)
    return Response(status_code=204)


@router.get("/v1/documents/{doc_id}/memories/{key}", name="get_memory", tags=["documents"],
            responses=AUTHED)
def memory(doc_id: DocId, key: Annotated[str, PathParam(pattern=MEMORY_KEY)], service: Svc,
           user: User) -> dict[str, Any]:
    """A memory's stored items (pages, gists, tree nodes, fragments), as the viewer draws them."""
    content = service.memory(user, doc_id, key)
    return {**memory_json(content.memory), "items": {k: v for k, v in content.items.items() if v}}


MemoryMethod = Annotated[Literal["readagent-p", "readagent-s", "gistmem", "memwalker", "rag", "op-rag"], Query(
    description="whose memory: ReadAgent's pages and gists, MemWalker's tree, or the fragments")]


@router.get("/v1/documents/{doc_id}/sections", name="get_document_sections", tags=["documents"],
            responses=AUTHED)
def sections(doc_id: DocId, service: Svc, user: User) -> dict[str, Any]:
    """The document's own structure, as its file gave it (separate from a memory's): its sections — a PDF's
    outline, the headings of Markdown, HTML or DOCX, or those its text shows — each with its title, level,
    character span, pages and source."""
    return shapes.sections_json(service.sections(user, doc_id))


@router.get("/v1/documents/{doc_id}/structure", name="get_document_structure", tags=["documents"],
            responses=AUTHED)
def structure(doc_id: DocId, service: Svc, user: User, method: MemoryMethod = "readagent-p") -> dict[str, Any]:
    """The structure of your memory of the document: ReadAgent's pages with their gists, MemWalker's tree (each
    node's id, level, children, summary), or the fragments with their sizes and places."""
    return shapes.structure_json(service.structure(user, doc_id, method))


@router.get("/v1/documents/{doc_id}/units", name="get_page_content", tags=["documents"], responses=AUTHED)
def units(doc_id: DocId, service: Svc, user: User,
          pages: Annotated[str, Query(pattern=shapes.UNITS, description="unit numbers: 3, 3-7 or 1,4,9")],
          method: MemoryMethod = "readagent-p") -> dict[str, Any]:
    """Pages (ReadAgent, with their gists), leaves (MemWalker, with their summaries) or fragments of your memory of
    the document, by number, with their text."""
    return shapes.units_json(service.units(user, doc_id, pages, method))


@router.post("/v1/documents/{doc_id}/index", name="index_document", tags=["documents"],
             responses={**RUNNING, 200: {**STREAMS, **links("id", "run_id", "get_run", "list_steps")}, 202: QUEUED})
async def index(request: Request, doc_id: DocId, body: IndexRequest, service: Svc, user: User, wait: Wait = True,
                stream_: Stream = False, last_event_id: LastEventId = None,  # type: ignore[assignment]
                ) -> Response:
    """Build (or resume) a memory of the document: the run when done (``wait=false``: 202 at once;
    ``stream=true``: its steps as server-sent events)."""
    return await started(service, lambda: service.index(user, doc_id, body), wait, stream_, last_event_id,
                         lambda run, _: run_json(service.current_run(run)), (request, user, body))


@router.post("/v1/documents/{doc_id}/ask", name="ask_document", tags=["documents"],
             responses={**RUNNING, 200: {**STREAMS, **RUN_LINKS}, 202: QUEUED})
async def ask(request: Request, doc_id: DocId, body: AskRequest, service: Svc, user: User, wait: Wait = True,
              stream_: Stream = False, last_event_id: LastEventId = None,  # type: ignore[assignment]
              ) -> Response:
    """Answer a question about the document (building its memory first if needed): the answer with its
    ``run_id``, or 202 with the run (``wait=false``), or the run's steps as server-sent events
    (``stream=true``)."""
    return await started(service, lambda: service.ask(user, doc_id, body), wait, stream_, last_event_id,
                         shapes.answer_json, (request, user, body))


# --- libraries ----------------------------------------------------------------------------------------------------
LibraryName = Annotated[str, PathParam(pattern=shapes.LIBRARY_NAME, description="the library's name")]


@router.get("/v1/libraries", name="list_libraries", tags=["libraries"], responses=AUTHED)
def libraries(request: Request, response: Response, service: Svc, user: User,
              after: Annotated[str, Query(pattern=shapes.LIBRARY_NAME, description="the page after this library "
                                          "(the Link header's cursor)")] = None,  # type: ignore[assignment]
              limit: ListLimit = LIST_PAGE) -> list[dict[str, Any]]:
    """Your libraries: named sets of documents asked as one, by name, a page at a time."""
    return paged(request, response, service.libraries(user, after=after, limit=limit), library_json)


@router.get("/v1/libraries/{name}", name="get_library", tags=["libraries"], responses=AUTHED)
def library(name: LibraryName, service: Svc, user: User) -> dict[str, Any]:
    """The library and its documents (their names in it, ids, sizes)."""
    row, documents = service.library(user, name)
    return {**library_json(row), "documents": [library_document_json(d) for d in documents]}


@router.post("/v1/libraries/{name}/documents", name="add_to_library", status_code=201, tags=["libraries"],
             openapi_extra=UPLOAD_BODY,
             responses={**errors(*EDGE, 401, 415), 201: links("library", "name", "get_library", "ask_library")})
async def add_to_library(name: LibraryName, request: Request, service: Svc, user: User) -> Response:
    """Upload a document into the library ``name`` (made when new), as ``POST /v1/documents`` takes one; its
    ``name`` is its name in the library: the same name again with another text updates that document (its
    memories are built again where the text changed, reusing the rest)."""
    with await read_upload(request, service.max_bytes, max_body=service.max_body) as up:
        shapes.check_encoding(up.encoding)
        source: str | Path = up.text if up.text is not None else up.path  # type: ignore[assignment]
        change = await unless_left(request, lambda wanted: service.add_to_library(
            user, name, source, up.name, up.encoding, wanted=wanted))
    return change if isinstance(change, Response) else JSONResponse(shapes.library_change_json(name, change),
                                                                    status_code=201)


@router.delete("/v1/libraries/{name}", name="delete_library", status_code=204, tags=["libraries"],
               responses=AUTHED)
def delete_library(name: LibraryName, service: Svc, user: User) -> Response:
    """Delete the library; a document no other library (or your documents) holds goes with its memories."""
    service.remove_from_library(user, name)
    return Response(status_code=204)


@router.delete("/v1/libraries/{name}/documents/{doc_name:path}", name="remove_from_library", status_code=204,
               tags=["libraries"], responses=AUTHED)
def remove_from_library(name: LibraryName, doc_name: Annotated[str, PathParam(
        min_length=1, max_length=limits.MAX_NAME, description="the document's name in the library")],
        service: Svc, user: User) -> Response:
    """Remove one document from the library; its text and memories go when nothing else holds them."""
    service.remove_from_library(user, name, doc_name)
    return Response(status_code=204)


@router.post("/v1/libraries/{name}/index", name="index_library", tags=["libraries"],
             responses={**RUNNING, 200: {**STREAMS, **links("id", "run_id", "get_run", "list_steps")}, 202: QUEUED})
async def index_library(request: Request, name: LibraryName, body: IndexRequest, service: Svc, user: User,
                        wait: Wait = True, stream_: Stream = False,
                        last_event_id: LastEventId = None,  # type: ignore[assignment]
                        ) -> Response:
    """Build the memories of the library's documents not built yet (each document's alone: adding one builds only
    it), as ``POST /v1/documents/{doc_id}/index``."""
    return await started(service, lambda: service.index(user, None, body, library=name), wait, stream_,
                         last_event_id, lambda run, _: run_json(service.current_run(run)), (request, user, body))


@router.post("/v1/libraries/{name}/ask", name="ask_library", tags=["libraries"],
             responses={**RUNNING, 200: {**STREAMS, **RUN_LINKS}, 202: QUEUED})
async def ask_library(request: Request, name: LibraryName, body: AskRequest, service: Svc, user: User,
                      wait: Wait = True, stream_: Stream = False,
                      last_event_id: LastEventId = None,  # type: ignore[assignment]
                      ) -> Response:
    """Answer a question across the library's documents with any method; each citation names its document
    (``document_name``) and is opened by ``GET /v1/runs/{run_id}/citations/{n}``."""
    return await started(service, lambda: service.ask(user, None, body, library=name), wait, stream_,
                         last_event_id, shapes.answer_json, (request, user, body))


# --- runs ---------------------------------------------------------------------------------------------------------
@router.get("/v1/runs", name="list_runs", tags=["runs"], responses=AUTHED)
def runs(request: Request, response: Response, service: Svc, user: User,
         kind: Annotated[str, Query(pattern=f"^({'|'.join(KINDS)})$", description="only runs of this kind: "
                                    f"{', '.join(KINDS)}")] = None,  # type: ignore[assignment]
         status: Literal["queued", "running", "done", "failed", "cancelled"] = None,  # type: ignore[assignment]
         target: Annotated[str, Query(max_length=128)] = None,  # type: ignore[assignment]
         limit: ListLimit = 50, offset: Annotated[int, Query(ge=0, le=MAX_ID)] = 0,
         after: Annotated[str, Query(pattern=shapes.RUN_ID, description="the page after this run (the Link "
                                     "header's cursor)")] = None,  # type: ignore[assignment]
         ) -> list[dict[str, Any]]:
    """Your runs, newest first, a page at a time."""
    return paged(request, response, service.runs(user, kind=kind, status=status, target=target, limit=limit,
                                                 offset=offset, after=after), run_json)


@router.get("/v1/runs/{run_id}", name="get_run", tags=["runs"], responses=AUTHED)
def run(run_id: RunId, service: Svc, user: User) -> dict[str, Any]:
    found, usage = service.run(user, run_id)
    return {**run_json(found), "usage": usage}


@router.get("/v1/runs/{run_id}/steps", name="list_steps", tags=["runs"], responses=AUTHED)
def steps(request: Request, response: Response, run_id: RunId, service: Svc, user: User,
          after: Annotated[int, Query(ge=-1, le=MAX_ID)] = -1, limit: ListLimit = MAX_LIST) -> list[dict[str, Any]]:
    """A run's steps in order, a page at a time (``after``: a step's seq)."""
    return paged(request, response, service.steps(user, run_id, after, limit), shapes.step_json)


@router.get("/v1/runs/{run_id}/events", name="run_events", tags=["runs"],
            responses={**AUTHED, 200: {"content": {"text/event-stream": {"schema": SSE_EVENT}},
                                       "description": "the run's steps as server-sent events"}})
async def events(run_id: RunId, service: Svc, user: User, after: Annotated[int, Query(ge=-1, le=MAX_ID)]
                 = None, last_event_id: LastEventId = None) -> Response:  # type: ignore[assignment]
    """The run's steps as server-sent events (``id`` = the step's seq), keep-alive comments while nothing
    happens, and ``end`` with the run; resume with ``Last-Event-ID`` (or ``?after=``)."""
    await run_in_threadpool(service.own_run, user, run_id)
    return stream(service, run_id, last_event_id, after)


@router.get("/v1/runs/{run_id}/citations/{n}", name="get_citation", tags=["runs"], response_model=CitedLocation,
            responses=AUTHED)
def citation(run_id: RunId, n: Annotated[int, PathParam(ge=1, le=MAX_ID, description="the citation, from 1 (the "
                                                             "answer's marker [n])")],
             service: Svc, user: User,
             radius: Annotated[int, Query(ge=0, le=limits.MAX_RADIUS, description="characters shown either side of "
                                          "the span, at most (within its paragraphs)")]
             = CONTEXT_CHARS) -> dict[str, Any]:
    """A run's citation ``n`` in its place: the citation, the text around it (the paragraphs holding it, at most
    ``radius`` characters either side) and every cited span of the run in that text, as offsets and marked."""
    return shapes.cited_place_json(service.citation(user, run_id, n, radius))


@router.post("/v1/runs/{run_id}/cancel", name="cancel_run", tags=["runs"], responses=AUTHED)
def cancel(run_id: RunId, service: Svc, user: User) -> dict[str, Any]:
    """Stop a queued or running run at its next step (a cancelled build resumes on the next index or ask)."""
    return run_json(service.cancel(user, run_id))


# --- the app ------------------------------------------------------------------------------------------------------
def create_app(pm: Pagemind | Settings | Callable[[], Pagemind] | None = None, *, auth: str = "keys",
               keepalive: float = 15.0, workers: int = 16, mcp: bool = True, max_body: int | None = None,
               allowed_hosts: tuple[str, ...] = (), consolidate_every: float = 60.0) -> FastAPI:
    """The API over one :class:`Pagemind` (given, built from ``Settings``, or from a factory; ``None``: from the
    environment). ``auth``: ``keys`` (every request carries a user's key), ``none`` (every request is the user
    ``local``; for loopback only, which ``pagemind serve`` enforces), ``auto`` (keys once any user exists).
    ``keepalive``: seconds of silence after which an event stream sends a comment. ``workers``: runs at once.
    ``mcp``: also serve the MCP tools at ``/mcp``. ``max_body``: bytes of a request body other than an upload
    (default: twice ``max_bytes`` + 1 MiB). ``allowed_hosts``: host names besides loopback that requests may
    name (behind a proxy). ``consolidate_every``: seconds between looks for agents due a background consolidation
    pass (their ``consolidate_idle`` option; 0: never look)."""
    from contextlib import asynccontextmanager

    owned = not isinstance(pm, Pagemind)
    if pm is None or isinstance(pm, Settings):
        pm = Pagemind(settings=pm)
    elif not isinstance(pm, Pagemind):
        pm = pm()
    service = Service(pm, auth=auth, keepalive=keepalive, workers=workers, owned=owned, max_body=max_body)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        idle = service.watch_idle(consolidate_every) if consolidate_every > 0 else None
        yield
        if idle is not None:
            idle.set()
        service.close()

    from .agents import router as agents_router
    from .docs import mount_docs

    app = FastAPI(title="pagemind", version=VERSION, lifespan=lifespan, docs_url=None, redoc_url=None,
                  generate_unique_id_function=lambda route: route.name,  # operation ids: add_document, ask_document...
                  summary="Long documents and MemGPT agents over HTTP: documents, index, ask, runs, agents.")
    app.state.service = service
    install_error_handlers(app)
    app.include_router(router)
    app.include_router(agents_router)
    app.include_router(openai_router)  # /v1/chat/completions and /v1/models for OpenAI clients
    app.include_router(letta_router)  # /letta/v1/...: Letta's REST API for letta-client programs
    mount_docs(app)
    if mcp:  # the same tools over streamable HTTP at /mcp (server/mcp.py)
        from .mcp import mount

        mount(app, service, path="/mcp")
    if (STATIC / "index.html").exists():  # the web viewer (package data)
        from fastapi.staticfiles import StaticFiles

        app.mount("/static", StaticFiles(directory=STATIC), name="static")
        app.add_api_route("/", lambda: FileResponse(STATIC / "index.html"), include_in_schema=False)
    policy = EdgePolicy(max_body=service.max_body, allowed_hosts=frozenset(h.lower() for h in allowed_hosts))
    app.add_middleware(Edge, policy=policy)
    return app


def install_error_handlers(app: FastAPI) -> None:
    """Every 4xx and 5xx in the one Error shape."""

    from .openai_compat import error_of, openai_error

    @app.exception_handler(PagemindError)
    async def pagemind_error(request: Request, err: PagemindError) -> JSONResponse:
        return error_of(err) if shapes.is_openai_path(request.url.path) else error_response(err)

    @app.exception_handler(Unauthorized)
    async def unauthorized(request: Request, err: Unauthorized) -> JSONResponse:
        why = "a valid API key is needed: Authorization: Bearer KEY (`pagemind users create NAME` makes one)"
        shaped = (openai_error(why, 401, "invalid_api_key") if shapes.is_openai_path(request.url.path)
                  else JSONResponse(error_body(why, "Unauthorized"), status_code=401))
        shaped.headers["WWW-Authenticate"] = 'Bearer realm="pagemind"'
        return shaped

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, err: RequestValidationError) -> JSONResponse:
        detail, fields = shapes.validation_detail(list(err.errors()))
        if shapes.is_openai_path(request.url.path):
            return openai_error(detail, 400, "invalid_request", fields[0]["field"] if fields else None)
        return JSONResponse(error_body(detail, "ValidationError", errors=fields), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, err: StarletteHTTPException) -> JSONResponse:
        headers = dict(err.headers or {})
        if err.status_code == 405:
            headers["Allow"] = ", ".join(allowed_methods(request.app.router.routes, request.scope))
        kinds = {400: "BadRequest", 404: "NotFound", 405: "MethodNotAllowed"}
        body = shapes.error_for(request.url.path, err.status_code, str(err.detail),
                                kinds.get(err.status_code, "HTTPError"))
        return JSONResponse(body, status_code=err.status_code, headers=headers)

    @app.exception_handler(Exception)
    async def crashed(request: Request, err: Exception) -> JSONResponse:
        body = shapes.error_for(request.url.path, 500, f"internal error: {type(err).__name__}", "InternalError")
        return JSONResponse(body, status_code=500)


__all__ = ["create_app", "status_of"]
