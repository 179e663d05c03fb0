"""The HTTP API of ``pagemind serve`` (docs/api.md): documents, index and ask, runs, agents, users' data.

A thin layer over :class:`pagemind.Pagemind`, :mod:`pagemind.runs` and :mod:`pagemind.users`: a request is
checked, its run is created in the store (queued), and the run executes on the worker pool (:mod:`.workers`);
the request answers when it is done, at once with the run (``wait=false``), or as a stream of its steps
(``stream=true``, :mod:`.sse`). The tenant of every request is the user of its API key.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import asdict
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from .. import __version__
from .. import users as users_api
from ..agent.locks import AgentBusy as AgentLockBusy
from ..agent.store import AgentExists, AgentNotFound
from ..api import Pagemind
from ..config import Settings
from ..errors import (ConfigError, InputError, InputTooLarge, LLMError, NotFound, PagemindError,
                      UnsupportedInput)
from ..methods.registry import options_schema
from ..runs import RunCancelled, summarize
from ..store.base import DocumentRow, RunRow, UserRow
from ..text.document import CONTAINER_FACTOR
from .sse import HEADERS, resume_point, run_events, run_json, step_json
from .workers import AgentBusy, Workers

STATIC = Path(__file__).parent / "static"
LOCAL_USER = "local"  # who every request is with --auth none
MEMORY_KINDS = ("page", "gist", "node", "fragment", "chunk")  # what /memories/{key} returns of a memory
UPLOAD_SLACK = 64 * 1024  # multipart headers and boundaries on top of the largest file

# status codes of pagemind's typed errors (the first match wins: subclasses first)
ERROR_STATUS: tuple[tuple[type[BaseException], int], ...] = (
    (InputTooLarge, 413), (UnsupportedInput, 415), (NotFound, 404), (AgentNotFound, 404),
    (AgentExists, 409), (AgentBusy, 409), (AgentLockBusy, 409), (RunCancelled, 409),
    (InputError, 422), (ConfigError, 422), (LLMError, 502), (PagemindError, 400),
)


def status_of(err: BaseException) -> int:
    return next((code for kind, code in ERROR_STATUS if isinstance(err, kind)), 500)


class Service:
    """What the app's requests share: one :class:`Pagemind` (one LLM, one store), the workers, the auth mode."""

    def __init__(self, pm: Pagemind, *, auth: str, keepalive: float, workers: int, owned: bool) -> None:
        if auth not in ("auto", "keys", "none"):
            raise ConfigError(f"auth {auth!r}: use auto, keys or none")
        self.pm = pm
        self.store = pm.store
        self.owned = owned
        if auth == "auto":  # keys as soon as anyone but the implicit local user exists
            auth = "keys" if any(u.name != LOCAL_USER for u in self.store.list_users()) else "none"
        self.auth = auth
        self.keepalive = keepalive
        self.workers = Workers(self.store, workers)
        self.local: UserRow | None = None
        if auth == "none":
            self.local = self.store.get_user(LOCAL_USER) or users_api.create_user(self.store, LOCAL_USER)[0]

    @property
    def upload_limit(self) -> int:
        return self.pm.settings.max_bytes * CONTAINER_FACTOR + UPLOAD_SLACK

    def close(self) -> None:
        self.workers.shutdown()
        if self.owned:
            self.pm.close()


def service_of(request: Request) -> Service:
    return request.app.state.service  # type: ignore[no-any-return]


def current_user(request: Request) -> UserRow:
    """The user of the request's API key (``Authorization: Bearer KEY``); 401 without a valid one."""
    service = service_of(request)
    if service.local is not None:
        return service.local
    scheme, _, key = request.headers.get("authorization", "").partition(" ")
    user = users_api.authenticate(service.store, key.strip()) if scheme.lower() == "bearer" else None
    if user is None:
        raise HTTPException(401, "a valid API key is needed: Authorization: Bearer KEY (pagemind users create NAME)",
                            headers={"WWW-Authenticate": "Bearer"})
    return user


User = Depends(current_user)


# --- request bodies ---------------------------------------------------------------------------------
class TextDocument(BaseModel):
    name: str = Field("text.txt", min_length=1, max_length=255)
    text: str


class IndexRequest(BaseModel):
    method: str = "auto"
    options: dict[str, Any] = Field(default_factory=dict, json_schema_extra=options_schema())


class AskRequest(BaseModel):
    question: str = Field(min_length=1)
    options: list[str] = Field(default_factory=list, description="multiple-choice options, in order")
    method: str = "auto"
    method_options: dict[str, Any] = Field(default_factory=dict, json_schema_extra=options_schema())
    budget: int | None = Field(None, ge=1, description="tokens the answer's context may use (methods with a budget)")


# --- helpers ----------------------------------------------------------------------------------------
def document_json(row: DocumentRow) -> dict[str, Any]:
    return {"id": row.id, "name": row.name, "words": row.words, "chars": row.chars, "created": row.created}


def checked_options(method: str, options: dict[str, Any]) -> dict[str, Any]:
    """The method's options checked against its declaration (422 before any run is created)."""
    from ..methods import registry

    registry.get(method).Options.create(**{k: v for k, v in options.items() if v is not None})
    return options


def stream(service: Service, run_id: str, request: Request, after: int | None = None) -> StreamingResponse:
    start = resume_point(request.headers.get("last-event-id"), after)
    return StreamingResponse(run_events(service.store, run_id, start, service.keepalive),
                             media_type="text/event-stream", headers=HEADERS)


async def finished(service: Service, run: RunRow | None, future: Future, shape: Callable[[Any], Any]) -> Response:
    """The answer of a job the request waited for: ``shape(result)``, or its error (with the run's id)."""
    try:
        result = await asyncio.wrap_future(future)
    except Exception as err:  # noqa: BLE001 - every failure is recorded on the run and answered with its id
        body = {"detail": str(err) or type(err).__name__, "type": type(err).__name__}
        return JSONResponse({**body, **({"run_id": run.id} if run is not None else {})}, status_code=status_of(err))
    return JSONResponse(await run_in_threadpool(shape, result))


def own_run(service: Service, run_id: str, user: UserRow) -> RunRow:
    run = service.pm.runs.get(run_id, user.id)
    if run is None:
        raise NotFound(f"no run {run_id!r}")
    return run


# --- the app ----------------------------------------------------------------------------------------
def create_app(pm: Pagemind | Settings | Callable[[], Pagemind] | None = None, *, auth: str = "keys",
               keepalive: float = 15.0, workers: int = 16, mcp: bool = True) -> FastAPI:
    """The API over one :class:`Pagemind` (given, built from ``Settings``, or from a factory; ``None``: from the
    environment). ``auth``: ``keys`` (every request carries a user's key), ``none`` (every request is the user
    ``local``; for loopback only, which ``pagemind serve`` enforces), ``auto`` (keys once any user exists).
    ``keepalive``: seconds of silence after which an event stream sends a comment. ``workers``: runs at once.
    ``mcp``: also serve the MCP tools at ``/mcp`` (needs the ``mcp`` package)."""
    from contextlib import asynccontextmanager

    owned = not isinstance(pm, Pagemind)
    if pm is None or isinstance(pm, Settings):
        pm = Pagemind(settings=pm)
    elif not isinstance(pm, Pagemind):
        pm = pm()
    service = Service(pm, auth=auth, keepalive=keepalive, workers=workers, owned=owned)

    @asynccontextmanager
    async def lifespan(app: FastAPI):  # type: ignore[no-untyped-def]
        yield
        service.close()

    app = FastAPI(title="pagemind", version=__version__, lifespan=lifespan,
                  summary="Long documents and MemGPT agents over HTTP: documents, index, ask, runs, agents.")
    app.state.service = service

    @app.exception_handler(PagemindError)
    async def pagemind_error(request: Request, err: PagemindError) -> JSONResponse:
        body: dict[str, Any] = {"detail": str(err) or type(err).__name__}
        if isinstance(err, AgentBusy) and err.run_id:
            body["run_id"] = err.run_id
        return JSONResponse(body, status_code=status_of(err))

    # --- service and user ---------------------------------------------------------------------------
    @app.get("/v1/health", tags=["service"])
    def health() -> dict[str, Any]:
        return {"status": "ok", "auth": service.auth, "version": __version__}

    @app.get("/v1/me", tags=["users"])
    def me(user: UserRow = User) -> dict[str, Any]:
        return {"id": user.id, "name": user.name, "auth": service.auth}

    @app.get("/v1/me/export", tags=["users"])
    def export(user: UserRow = User) -> dict[str, Any]:
        """Everything of yours as one JSON archive: documents with their texts, agents, runs with their steps."""
        return users_api.export_user(service.store, user.id)

    @app.delete("/v1/me/data", tags=["users"])
    def erase(user: UserRow = User) -> dict[str, int]:
        """Delete everything of yours (documents only you hold, with their memories; agents; runs), nothing else."""
        return users_api.erase_user(service.store, user.id)

    @app.get("/v1/methods", tags=["service"])
    def methods() -> list[dict[str, Any]]:
        from ..methods import registry

        return [{**cls.describe_method(), "unit": cls.unit, "schema": cls.Options.json_schema()}
                for cls in registry.all_readers()]

    @app.get("/v1/models", tags=["service"])
    def models(user: UserRow = User) -> dict[str, Any]:
        backend = service.pm.llm.backend
        return {"model": backend.model_id, "backend": type(backend).__name__, "llm": service.pm.settings.llm,
                "capabilities": asdict(backend.capabilities)}

    # --- documents ----------------------------------------------------------------------------------
    @app.post("/v1/documents", status_code=201, tags=["documents"])
    async def upload(request: Request, user: UserRow = User) -> dict[str, Any]:
        """Upload a file (multipart ``file``, optional ``name``) or a text (JSON ``{"name", "text"}``). The CLI's
        checks: 413 over the size limit, 415 binary or an unknown container, 422 empty or undecodable."""
        data, name, encoding = await read_upload(request, service.upload_limit)
        row = await run_in_threadpool(lambda: service.pm.add_document(data, name, user_id=user.id,
                                                                      encoding=encoding or "utf-8"))
        return document_json(row)

    @app.get("/v1/documents", tags=["documents"])
    def documents(user: UserRow = User) -> list[dict[str, Any]]:
        return [document_json(d) for d in service.store.user_documents(user.id)]

    def own_document(doc_id: str, user: UserRow) -> DocumentRow:
        row = service.store.user_document(user.id, doc_id)
        if row is None:
            raise NotFound(f"no document {doc_id!r}")
        return row

    @app.get("/v1/documents/{doc_id}", tags=["documents"])
    def document(doc_id: str, user: UserRow = User) -> dict[str, Any]:
        row = own_document(doc_id, user)
        memories = [{"key": m.key, "method": m.method, "status": m.status, "settings": m.settings, "model": m.model}
                    for m in service.store.memories_for(doc_id)]
        return {**document_json(row), "memories": memories}

    @app.delete("/v1/documents/{doc_id}", status_code=204, tags=["documents"])
    def delete_document(doc_id: str, user: UserRow = User) -> Response:
        if not service.store.remove_user_document(user.id, doc_id):
            raise NotFound(f"no document {doc_id!r}")
        return Response(status_code=204)

    @app.get("/v1/documents/{doc_id}/memories/{key}", tags=["documents"])
    def memory(doc_id: str, key: str, user: UserRow = User) -> dict[str, Any]:
        """A memory's stored items (pages, gists, tree nodes, fragments), as the viewer draws them."""
        own_document(doc_id, user)
        found = service.store.get_memory(key)
        if found is None or found.document_id != doc_id:
            raise NotFound(f"no memory {key!r} of document {doc_id!r}")
        items = {kind: rows for kind in MEMORY_KINDS if (rows := service.store.items(key, kind))}
        return {"key": found.key, "method": found.method, "status": found.status, "settings": found.settings,
                "model": found.model, "items": items}

    # --- index and ask ------------------------------------------------------------------------------
    @app.post("/v1/documents/{doc_id}/index", tags=["documents"])
    async def index(doc_id: str, body: IndexRequest, request: Request, wait: bool = True, stream_: bool = Query(
            False, alias="stream"), user: UserRow = User) -> Response:
        """Build (or resume) a memory of the document: the run when done (``wait=false``: 202 at once;
        ``stream=true``: its steps as server-sent events)."""
        def prepare() -> tuple[RunRow, Future]:
            row = own_document(doc_id, user)
            options = checked_options(body.method, body.options)
            document = service.pm.open_document(doc_id, user_id=user.id)
            run = service.pm.runs.create("index", doc_id, method=body.method, user_id=user.id,
                                         request={"document": row.name, "options": options})
            return run, service.workers.submit(run.id, lambda: service.pm.index(
                document, body.method, run=run, user_id=user.id, **options))

        run, future = await run_in_threadpool(prepare)
        if stream_:
            return stream(service, run.id, request)
        if not wait:
            return JSONResponse(run_json(run), status_code=202)
        return await finished(service, run, future, lambda _: run_json(service.store.get_run(run.id) or run))

    @app.post("/v1/documents/{doc_id}/ask", tags=["documents"])
    async def ask(doc_id: str, body: AskRequest, request: Request, wait: bool = True, stream_: bool = Query(
            False, alias="stream"), user: UserRow = User) -> Response:
        """Answer a question about the document (building its memory first if needed): the answer with its
        ``run_id``, or 202 with the run (``wait=false``), or the run's steps as server-sent events
        (``stream=true``)."""
        def prepare() -> tuple[RunRow, Future]:
            row = own_document(doc_id, user)
            options = dict(body.method_options)
            if body.budget is not None:
                options["budget"] = body.budget
            checked_options(body.method, options)
            document = service.pm.open_document(doc_id, user_id=user.id)
            run = service.pm.runs.create("ask", doc_id, method=body.method, user_id=user.id, request={
                "document": row.name, "question": body.question, "options": body.options, "method_options": options})
            return run, service.workers.submit(run.id, lambda: service.pm.ask(
                document, body.question, body.options, body.method, run=run, user_id=user.id, **options))

        run, future = await run_in_threadpool(prepare)
        if stream_:
            return stream(service, run.id, request)
        if not wait:
            return JSONResponse(run_json(run), status_code=202)
        return await finished(service, run, future, lambda answer: {"run_id": run.id, **answer.as_dict()})

    # --- runs ---------------------------------------------------------------------------------------
    @app.get("/v1/runs", tags=["runs"])
    def runs(kind: str | None = None, status: str | None = None, target: str | None = None,
             limit: int = Query(50, ge=1, le=500), offset: int = Query(0, ge=0),
             user: UserRow = User) -> list[dict[str, Any]]:
        found = service.pm.runs.list(user.id, kind=kind, status=status, target=target, limit=limit, offset=offset)
        return [run_json(r) for r in found]

    @app.get("/v1/runs/{run_id}", tags=["runs"])
    def run(run_id: str, user: UserRow = User) -> dict[str, Any]:
        found = own_run(service, run_id, user)
        return {**run_json(found), "usage": summarize(service.pm.runs.steps(run_id))}

    @app.get("/v1/runs/{run_id}/steps", tags=["runs"])
    def steps(run_id: str, after: int = -1, limit: int | None = Query(None, ge=1),
              user: UserRow = User) -> list[dict[str, Any]]:
        own_run(service, run_id, user)
        return [step_json(s) for s in service.pm.runs.steps(run_id, after, limit)]

    @app.get("/v1/runs/{run_id}/events", tags=["runs"])
    async def events(run_id: str, request: Request, after: int | None = None, user: UserRow = User) -> Response:
        """The run's steps as server-sent events (``id`` = the step's seq), keep-alive comments while nothing
        happens, and ``end`` with the run; resume with ``Last-Event-ID`` (or ``?after=``)."""
        await run_in_threadpool(own_run, service, run_id, user)
        return stream(service, run_id, request, after)

    @app.post("/v1/runs/{run_id}/cancel", tags=["runs"])
    def cancel(run_id: str, user: UserRow = User) -> dict[str, Any]:
        """Stop a queued or running run at its next step (a cancelled build resumes on the next index or ask)."""
        own_run(service, run_id, user)
        service.pm.runs.cancel(run_id)
        return run_json(own_run(service, run_id, user))

    # --- agents -------------------------------------------------------------------------------------
    from .agents import agents_router, queue_turn

    app.include_router(agents_router(service))

    # --- MCP (issue 16 item 4): the same tools over streamable HTTP at /mcp (server/mcp.py) -------------
    if mcp:
        from .mcp import mount

        def send(agent: Any, message: str, user_id: int, progress: Any) -> Any:
            """An MCP send_message in the agent's line with its HTTP messages."""
            return queue_turn(service, agent.id, agent.name, message, user_id, progress=progress)[1].result()

        mount(app, service.pm, path="/mcp", auth=service.auth, send=send)

    # --- the web viewer (package data; mounted when present) ----------------------------------------
    if (STATIC / "index.html").exists():
        from fastapi.staticfiles import StaticFiles

        app.mount("/static", StaticFiles(directory=STATIC), name="static")

        @app.get("/", include_in_schema=False)
        def viewer() -> FileResponse:
            return FileResponse(STATIC / "index.html")

    return app


async def read_upload(request: Request, limit: int) -> tuple[bytes | str, str | None, str | None]:
    """The uploaded document, its name and its text encoding (multipart ``encoding``; default UTF-8), reading
    no more than ``limit`` bytes of body (413 beyond it)."""
    declared = request.headers.get("content-length", "")
    too_large = f"the upload is over the {limit / 1e6:.1f} MB limit of this server (max_bytes)"
    if declared.isdigit() and int(declared) > limit:
        raise InputTooLarge(too_large)
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > limit:
            raise InputTooLarge(too_large)
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind == "application/json":
        try:
            payload = TextDocument.model_validate_json(bytes(body))
        except ValueError as err:
            raise InputError(f"expected JSON {{\"name\": ..., \"text\": ...}}: {err}") from None
        return payload.text, payload.name, None
    if kind == "multipart/form-data":
        from starlette.datastructures import UploadFile
        from starlette.formparsers import MultiPartException, MultiPartParser

        async def once() -> Any:
            yield bytes(body)

        try:
            form = await MultiPartParser(request.headers, once(), max_part_size=limit).parse()
        except MultiPartException as err:
            raise InputError(f"malformed multipart upload: {err.message}") from None
        file, name, encoding = form.get("file"), form.get("name"), form.get("encoding")
        encoding = encoding if isinstance(encoding, str) and encoding else None
        if not isinstance(file, UploadFile):
            text = form.get("text")
            if isinstance(text, str):
                return text, name if isinstance(name, str) and name else "text.txt", None
            raise InputError("multipart upload without a 'file' field (or a 'text' field)")
        data = await file.read()
        return data, name if isinstance(name, str) and name else (file.filename or "upload.txt"), encoding
    raise UnsupportedInput(f"content type {kind or 'none'!r}: send multipart/form-data with a 'file' field, "
                           "or application/json {\"name\", \"text\"}")


__all__ = ["Service", "create_app"]
