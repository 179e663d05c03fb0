"""The MCP server: a user's documents, answers, runs and MemGPT agents as tools, with the official ``mcp`` SDK.

Two transports, one set of tools: stdio (``pagemind mcp``, for desktop clients; the tools act as the local user,
a user row named ``local`` created on demand) and streamable HTTP (mounted at ``/mcp`` of ``pagemind serve`` by
:func:`mount`; the tools act as the user of the request's ``Authorization: Bearer KEY``, and a request without a
valid key is answered 401). Another user's document, run or agent is "not found", as in the HTTP API.

A thin layer over :class:`pagemind.Pagemind`: each tool finds its user, calls the library in a worker thread (the
event loop keeps serving other requests during a long ask) and returns the result as structured content plus a
short text; a :class:`PagemindError` becomes a tool error carrying the library's message.

``ask``'s ``method_options`` is one flat object holding every document method's options, each property's schema
taken from its declaration (``Options.json_schema()``); where methods declare a name differently (its help, its
default, its allowed values) the description says which method means what. Not a ``oneOf``/``anyOf`` per method:
several clients refuse or flatten unions in tool schemas, and a ``oneOf`` would even be wrong here, since methods
share option names (options valid for readagent-p are valid for gistmem too). An option the chosen method does not
take is refused by name, as the CLI refuses its flag; ``list_methods`` gives each method's exact schema.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, TypeVar
from urllib.parse import urlsplit

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from ..errors import ConfigError, NotFound, PagemindError
from ..methods import registry
from ..methods.registry import options_schema
from ..runs import summarize
from ..store.base import DocumentRow, RunRow, StepRow, UserRow
from ..users import agent_key, authenticate, local_user
from ..users import agent_name as display_name
from .net import is_loopback

T = TypeVar("T")
AGENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,47}$")  # stored as u<user id>.<name>, at most 64
USER_KEY = "pagemind.user"  # where the HTTP endpoint leaves the request's user in the ASGI scope
INSTRUCTIONS = (
    "pagemind reads documents far longer than a model's context window and answers questions about them "
    "(ReadAgent, MemWalker, RAG, full text), and keeps MemGPT agents with long-term memory. Add a document, then "
    "ask it; every answer is a recorded run whose steps show_trace lists. Agents: create_agent, send_message, "
    "read_core_memory, search_archival, search_recall.")

UserOf = Callable[[Context], UserRow]
# (the agent, the message, the user id, a progress callback) -> its TurnResult; pagemind serve queues the turn in
# the agent's line, as its HTTP messages are (server/agents.py queue_turn)
Send = Callable[[Any, str, int, Any], Any]


# --- the tools ------------------------------------------------------------------------------------------
def build_server(pm: Any, user_of: UserOf, *, allow_paths: bool = False, send: Send | None = None) -> MCPServer:
    """The MCP server over ``pm`` (a :class:`pagemind.Pagemind`). ``user_of`` names the user a tool call acts
    as; ``allow_paths``: ``add_document`` may read a file of this machine (stdio only, never over HTTP); ``send``
    runs an agent's turn (default: ``pm.send`` in the calling thread, the agent's lock keeping turns apart)."""

    async def run(ctx: Context, work: Callable[[int], T]) -> T:
        """``work(user_id)`` in a worker thread; the library's errors as tool errors."""
        user = user_of(ctx)
        try:
            return await anyio.to_thread.run_sync(work, user.id)
        except PagemindError as err:
            raise ToolError(str(err)) from err

    # documents -------------------------------------------------------------------------------------
    async def add_document(
        ctx: Context,
        text: Annotated[str | None, Field(description="the document's text")] = None,
        name: Annotated[str | None, Field(description="a name for it (default: the file's, else 'text.txt')")]
        = None,
        path: Annotated[str | None, Field(description="a file on this machine to read instead of text (.txt, .md, "
                                                       ".pdf, .epub, .docx, .html)")] = None,
    ) -> CallToolResult:
        """Keep a document (its text, or a file) so it can be asked about; returns its id. The same document
        added twice has the same id."""
        if (text is None) == (path is None):
            raise ToolError("give the document's text or a path (one of them)" if allow_paths
                            else "give the document's text")
        if path is not None and not allow_paths:
            raise ToolError("path is only read over stdio (pagemind mcp); send the text")

        def work(uid: int) -> DocumentRow:
            source: str | Path = Path(path).expanduser() if path is not None else str(text)
            return pm.add_document(source, name, user_id=uid)

        row = await run(ctx, work)
        return result(document_json(row), f"document {row.id}: {row.name}, {row.words} words")

    async def list_documents(ctx: Context) -> CallToolResult:
        """The documents you added, newest first."""
        rows = await run(ctx, lambda uid: pm.store.user_documents(uid))
        lines = [f"{r.id}  {r.name}  ({r.words} words)" for r in rows]
        return result({"documents": [document_json(r) for r in rows]}, "\n".join(lines) or "no documents yet")

    async def list_methods(ctx: Context) -> CallToolResult:
        """The reading methods ask can use, each with what it reads and its options' JSON schema."""
        methods = [registry.get(name).describe_method() for name in registry.document_methods()]
        lines = [f"{m['name']}: {m['summary']}" for m in methods]
        return result({"methods": methods}, "\n".join(lines))

    async def ask(
        ctx: Context,
        document_id: Annotated[str, Field(description="the document's id (add_document, list_documents)")],
        question: Annotated[str, Field(description="the question")],
        options: Annotated[list[str] | None, Field(description="multiple choice: the options, in order (the "
                                                                "answer names one)")] = None,
        method: Annotated[str, Field(description="how to read the document (list_methods explains each); auto: "
                                                 "the whole text when it fits the model's window, else ReadAgent")]
        = "auto",
        method_options: Annotated[dict[str, Any] | None, Field(description="options of the method")] = None,
    ) -> CallToolResult:
        """Answer a question about a document. The first question with a method builds the document's memory
        (gists, a tree, fragments), which later questions reuse. Returns the answer, the pages read and the
        run id (show_trace lists every step and LLM call)."""
        given = dict(method_options or {})
        check_method_options(method, given)
        progress = progress_reporter(ctx)

        def work(uid: int) -> Any:
            document = pm.open_document(document_id, user_id=uid)
            return pm.ask(document, question, options=tuple(options or ()), method=method, progress=progress,
                          user_id=uid, **given)

        answer = await run(ctx, work)
        data = {**answer.as_dict(), "document": document_id}
        read = f"; {answer.read_unit}s read: {answer.pages_read}" if answer.pages_read else ""
        return result(data, f"{answer.text}\n\n(method {answer.method}{read}; run {answer.run_id})")

    # runs ------------------------------------------------------------------------------------------
    async def show_trace(
        ctx: Context,
        run_id: Annotated[str, Field(description="the run's id (an ask's or a send_message's run_id)")],
        after: Annotated[int, Field(description="only steps after this one (its seq), to follow a run")] = -1,
        limit: Annotated[int, Field(description="at most this many steps", ge=1, le=1000)] = 200,
    ) -> CallToolResult:
        """A run's trace: its status and result, then every step in order (each LLM call with its role, tokens,
        seconds and whether it was cached; the decisions made of them; phases; an agent's thoughts, function
        calls and results) and the token and time totals."""
        def work(uid: int) -> tuple[RunRow, list[StepRow], list[StepRow]]:
            row = pm.runs.get(run_id, uid)
            if row is None:
                raise NotFound(f"no run {run_id!r}")
            every = pm.runs.steps(run_id)
            return row, every, [s for s in every if s.seq > after][:limit]

        row, every, steps = await run(ctx, work)
        usage = summarize(every)
        data = {"run": run_json(row), "usage": usage, "steps": [step_json(s) for s in steps]}
        head = (f"run {row.id}: {row.kind} {row.method or ''} {row.status}; {usage['calls']} LLM calls "
                f"({usage['cached_calls']} cached), {usage['prompt_tokens']}+{usage['completion_tokens']} tokens, "
                f"{usage['seconds']} s")
        return result(data, "\n".join([head, *(step_line(s) for s in steps)]))

    async def list_runs(
        ctx: Context,
        kind: Annotated[str | None, Field(description="only this kind: index, ask or turn")] = None,
        limit: Annotated[int, Field(description="at most this many, newest first", ge=1, le=500)] = 20,
    ) -> CallToolResult:
        """Your recent runs (asks, index builds, agent turns), newest first."""
        rows = await run(ctx, lambda uid: pm.runs.list(uid, kind=kind, limit=limit))
        when = [time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.created)) for r in rows]
        lines = [f"{r.id}  {r.kind} {r.method or ''} {r.status}  {t}" for r, t in zip(rows, when)]
        return result({"runs": [run_json(r) for r in rows]}, "\n".join(lines) or "no runs yet")

    # agents ----------------------------------------------------------------------------------------
    def own_agent(uid: int, name: str, llm: bool = False) -> Any:
        from ..agent import AgentNotFound

        try:
            agent = pm.agent(agent_key(uid, name), llm=llm)
        except AgentNotFound:
            agent = None
        if agent is None or pm.store.agent_owner(agent.id) != uid:
            raise NotFound(f"no agent {name!r} (list_agents shows yours)")
        return agent

    async def create_agent(
        ctx: Context,
        name: Annotated[str, Field(description="its name: letters, digits, '_', '.', '-' (at most 48)")],
        persona: Annotated[str | None, Field(description="who the agent is (its persona block; default: "
                                                         "pagemind's persona under this name)")] = None,
        human: Annotated[str | None, Field(description="what it knows about you (its human block)")] = None,
        options: Annotated[dict[str, Any] | None, Field(description="agent settings")] = None,
    ) -> CallToolResult:
        """Create a MemGPT agent: a persistent assistant with core memory (persona and human blocks it edits),
        recall (every message) and archival memory (passages it searches)."""
        if not AGENT_NAME.match(name):
            raise ToolError(f"agent name {name!r}: use letters, digits, '_', '.', '-' (at most 48)")
        settings = agent_options(options or {})

        def work(uid: int) -> dict[str, Any]:
            from ..agent import AgentExists

            try:
                agent = pm.create_agent(agent_key(uid, name), persona=persona, human=human, options=settings,
                                        user_id=uid, display_name=name)
            except AgentExists:
                raise ConfigError(f"you already have an agent named {name!r}") from None
            return agent_json(agent, name)

        data = await run(ctx, work)
        return result(data, f"agent {name} created (id {data['id']})")

    async def list_agents(ctx: Context) -> CallToolResult:
        """Your MemGPT agents."""
        def work(uid: int) -> list[dict[str, Any]]:
            return [{"id": a.id, "name": display_name(uid, a.name), "created": a.created}
                    for a in pm.store.user_agents(uid)]

        agents = await run(ctx, work)
        return result({"agents": agents}, "\n".join(a["name"] for a in agents) or "no agents yet")

    async def send_message(
        ctx: Context,
        agent: Annotated[str, Field(description="the agent's name")],
        message: Annotated[str, Field(description="your message")],
    ) -> CallToolResult:
        """Send a message to an agent: it thinks, may search or edit its memory over several steps, and answers.
        Returns its messages, every step and the run id. Turns of one agent run one at a time, in order."""
        progress = progress_reporter(ctx)

        def work(uid: int) -> Any:
            target = own_agent(uid, agent, llm=send is None)
            if send is None:
                return pm.send(target, message, progress=progress, user_id=uid)
            return send(target, message, uid, progress)

        turn = await run(ctx, work)
        data = {"agent": agent, **turn.as_dict()}
        said = "\n".join(turn.messages) or f"(no message; stopped: {turn.stop_reason})"
        return result(data, f"{said}\n\n({len(turn.steps)} steps; run {turn.run_id})")

    async def read_core_memory(
        ctx: Context,
        agent: Annotated[str, Field(description="the agent's name")],
    ) -> CallToolResult:
        """An agent's core memory: its blocks (persona, human, ...) as they are now, and how much it remembers."""
        def work(uid: int) -> dict[str, Any]:
            return agent_json(own_agent(uid, agent), agent)

        data = await run(ctx, work)
        text = "\n\n".join(f"[{b['label']}] {b['value']}" for b in data["blocks"])
        return result(data, text)

    async def search_archival(
        ctx: Context,
        agent: Annotated[str, Field(description="the agent's name")],
        query: Annotated[str, Field(description="what to look for")],
        page: Annotated[int, Field(description="the page of results, from 0", ge=0)] = 0,
    ) -> CallToolResult:
        """Search an agent's archival memory (passages it stored and documents loaded into it), best first."""
        found = await run(ctx, lambda uid: own_agent(uid, agent).archive.search(query, page))
        return result(search_json(found), found.render())

    async def search_recall(
        ctx: Context,
        agent: Annotated[str, Field(description="the agent's name")],
        query: Annotated[str, Field(description="words or a phrase said in the conversation")],
        page: Annotated[int, Field(description="the page of results, from 0", ge=0)] = 0,
    ) -> CallToolResult:
        """Search an agent's recall memory: the whole conversation history, messages containing the query
        first."""
        found = await run(ctx, lambda uid: own_agent(uid, agent).tools.recall_page(query, page))
        return result(search_json(found), found.render())

    reading = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    writing = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
    tools = [
        make_tool(add_document, writing, drop=() if allow_paths else ("path",)),
        make_tool(list_documents, reading),
        make_tool(list_methods, reading),
        make_tool(ask, writing, patch={"method": method_schema(), "method_options": options_schema()}),
        make_tool(show_trace, reading),
        make_tool(list_runs, reading),
        make_tool(create_agent, writing, patch={"options": agent_options_schema()}),
        make_tool(list_agents, reading),
        make_tool(send_message, writing),
        make_tool(read_core_memory, reading),
        make_tool(search_archival, reading),
        make_tool(search_recall, reading),
    ]
    from .. import __version__

    return MCPServer("pagemind", title="pagemind", instructions=INSTRUCTIONS, version=__version__, tools=tools,
                     log_level="WARNING")


def make_tool(fn: Callable[..., Awaitable[CallToolResult]], annotations: ToolAnnotations, *,
              patch: dict[str, dict[str, Any]] | None = None, drop: tuple[str, ...] = ()) -> Tool:
    """The SDK's tool of ``fn`` with a plain input schema: an optional argument is its type (not ``anyOf`` with
    null), ``patch`` replaces properties' schemas by generated ones, ``drop`` removes arguments."""
    tool = Tool.from_function(fn, annotations=annotations)
    schema = tool.parameters
    props: dict[str, Any] = schema.get("properties", {})
    for name in drop:
        props.pop(name, None)
    for name, prop in list(props.items()):
        options = prop.get("anyOf")
        if options and len(options) == 2 and {"type": "null"} in options and prop.get("default", 0) is None:
            kept = {k: v for k, v in prop.items() if k not in ("anyOf", "default")}
            props[name] = {**next(o for o in options if o != {"type": "null"}), **kept}
        props[name].pop("title", None)
    for name, replacement in (patch or {}).items():
        said = [props[name].get("description"), replacement.get("description")]
        props[name] = {**replacement, "description": ": ".join(d for d in said if d)}
    return tool


def result(data: dict[str, Any], text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


# --- schemas generated from the declarations --------------------------------------------------------------
def method_schema() -> dict[str, Any]:
    return {"type": "string", "enum": list(registry.document_methods()), "default": "auto"}


def check_method_options(method: str, given: dict[str, Any]) -> None:
    """Refuse an unknown method, or an option it does not take, by name (the method's own declaration checks the
    values when the reader is made)."""
    if method not in registry.document_methods():
        raise ToolError(f"unknown method {method!r} (have: {', '.join(registry.document_methods())})")
    known = {s.name for s in registry.get(method).Options.specs()}
    for name in given:
        if name in known:
            continue
        owners = [m for m in registry.document_methods() if name in {s.name for s in registry.get(m).Options.specs()}]
        if owners:
            raise ToolError(f"method option {name} applies to {', '.join(owners)}, not {method}")
        raise ToolError(f"unknown method option {name!r} (list_methods shows each method's options)")


def agent_options_schema() -> dict[str, Any]:
    """The agent's settings (:class:`pagemind.agent.AgentOptions`) as a JSON schema."""
    from pydantic import TypeAdapter

    from ..agent import AgentOptions

    schema = TypeAdapter(AgentOptions).json_schema()
    properties = {name: {k: v for k, v in prop.items() if k != "title"} for name, prop in schema["properties"].items()}
    for name, prop in properties.items():
        if "anyOf" in prop and {"type": "null"} in prop["anyOf"]:
            kinds = [o["type"] for o in prop["anyOf"]]
            properties[name] = {"type": kinds, **{k: v for k, v in prop.items() if k != "anyOf"}}
    return {"type": "object", "properties": properties, "additionalProperties": False,
            "description": "MemGPT settings (context_window, max_steps, page_size, archival_search, embedder, ...); "
                           "leave out what should keep its default"}


def agent_options(given: dict[str, Any]) -> dict[str, Any]:
    """``given`` checked against :class:`AgentOptions` (types and allowed values), as a tool error if wrong."""
    from pydantic import TypeAdapter, ValidationError

    from ..agent import AgentOptions

    known = set(AgentOptions().as_dict())
    unknown = sorted(set(given) - known)
    if unknown:
        raise ToolError(f"unknown agent option(s): {', '.join(unknown)} (have: {', '.join(sorted(known))})")
    try:
        TypeAdapter(AgentOptions).validate_python({**AgentOptions().as_dict(), **given}, strict=False)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ToolError(f"agent option {where}: {first['msg']}") from None
    except PagemindError as err:
        raise ToolError(str(err)) from None
    return given


# --- JSON shapes (as the HTTP API's) -----------------------------------------------------------------------
def document_json(row: DocumentRow) -> dict[str, Any]:
    return {"id": row.id, "name": row.name, "words": row.words, "chars": row.chars, "created": row.created}


def run_json(row: RunRow) -> dict[str, Any]:
    return {"id": row.id, "kind": row.kind, "method": row.method, "target": row.target, "request": row.request,
            "status": row.status, "created": row.created, "started": row.started, "finished": row.finished,
            "result": row.result, "error": row.error}


def step_json(step: StepRow) -> dict[str, Any]:
    return {"seq": step.seq, "kind": step.kind, "data": step.data, "created": step.created}


def step_line(step: StepRow) -> str:
    """A step in one line, for the text a client shows."""
    d = step.data
    if step.kind == "llm":
        cached = ", cached" if d.get("cached") else ""
        decision = f" -> {d['decision']}" if d.get("decision") else ""
        return (f"{step.seq:>3} llm {d.get('role')}: {d.get('prompt_tokens')}+{d.get('completion_tokens')} tokens, "
                f"{d.get('seconds')} s{cached}{decision}")
    if step.kind == "step":
        call = f"{d.get('function')}({', '.join(f'{k}={v!r}' for k, v in (d.get('arguments') or {}).items())})"
        return f"{step.seq:>3} agent step: {clip(d.get('thoughts') or '')} -> {clip(call)} [{d.get('status')}]"
    if step.kind == "phase":
        total = f" {d.get('done')}/{d.get('total')} {d.get('unit')}" if d.get("total") else ""
        return f"{step.seq:>3} phase {d.get('phase')}{total}"
    if step.kind == "decision":
        return f"{step.seq:>3} decision ({d.get('role')}): {clip(str(d.get('decision')))}"
    if step.kind == "result":
        said = d.get("answer") or " / ".join(d.get("messages") or []) or ", ".join(sorted(d))
        return f"{step.seq:>3} result: {clip(str(said))}"
    if step.kind == "error":
        return f"{step.seq:>3} error: {d.get('error')}"
    return f"{step.seq:>3} {step.kind}: {clip(str(d.get('text', d)))}"


def clip(text: str, chars: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= chars else text[:chars - 1] + "…"


def agent_json(agent: Any, name: str) -> dict[str, Any]:
    return {"id": agent.id, "name": name, "created": agent.record.created, "options": agent.options.as_dict(),
            "blocks": [{"label": b.label, "value": b.value, "limit": b.limit} for b in agent.blocks()],
            "counts": agent.counts()}


def search_json(found: Any) -> dict[str, Any]:
    return {"items": list(found.items), "total": found.total, "page": found.page, "pages": found.pages,
            "page_size": found.page_size}


def progress_reporter(ctx: Context) -> Callable[[str, int, int, str], None]:
    """A progress callback that tells the client (MCP progress notifications, sent when its request asked for
    them; at most two a second) while a long ask or turn runs in a worker thread."""
    token = anyio.lowlevel.current_token()
    lock = threading.Lock()
    state = {"count": 0, "last": 0.0, "phase": ""}

    def tell(phase: str, done: int, total: int, unit: str) -> None:
        now = time.monotonic()
        with lock:
            if phase == state["phase"] and now - state["last"] < 0.5 and not (total and done >= total):
                return
            state["count"] += 1
            state["last"], state["phase"] = now, phase
            count = state["count"]
        message = f"{phase} {done}/{total} {unit}".rstrip() if total else phase
        try:
            anyio.from_thread.run(ctx.report_progress, count, None, message, token=token)
        except Exception:  # noqa: BLE001 - a client gone or a closed stream must not fail the run
            pass

    return tell


# --- transports ---------------------------------------------------------------------------------------------
def run_stdio(pm: Any) -> None:
    """Serve the tools over stdin/stdout as the local user (``pagemind mcp``). The SDK points fd 1 at stderr while
    it serves, so stray output (a model loading) cannot corrupt the protocol."""
    user = local_user(pm.store)
    server = build_server(pm, lambda ctx: user, allow_paths=True)
    anyio.run(server.run_stdio_async)


def request_user(ctx: Context) -> UserRow:
    """The user the HTTP endpoint found for this request (see :class:`Endpoint`)."""
    request = ctx.request_context.request
    user = getattr(request, "scope", {}).get(USER_KEY) if request is not None else None
    if user is None:
        raise ToolError("no user: this request did not come through pagemind's MCP endpoint")
    return user


class Endpoint:
    """The ASGI app at ``/mcp``: the request's user (the bearer key's, or the local user when the server runs
    without keys) into the scope, then the SDK's streamable HTTP transport; 401 without a valid key. On a server
    bound to loopback the Host and Origin headers must name loopback too (a web page's DNS rebinding could
    otherwise reach a keyless server)."""

    def __init__(self, pm: Any, server: MCPServer, auth: str) -> None:
        if auth not in ("keys", "none"):
            raise ConfigError(f"auth must be 'keys' or 'none', not {auth!r}")
        self.pm, self.server, self.auth = pm, server, auth

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        from starlette.responses import JSONResponse

        headers = dict(scope.get("headers") or [])
        refused = rebinding(scope.get("server"), headers)
        if refused is not None:
            await JSONResponse({"detail": refused[1]}, status_code=refused[0])(scope, receive, send)
            return
        user = await anyio.to_thread.run_sync(self.user, headers.get(b"authorization"))
        if user is None:
            response = JSONResponse({"detail": "a valid API key is needed: Authorization: Bearer KEY (`pagemind "
                                               "users create NAME` makes one)"}, status_code=401,
                                    headers={"WWW-Authenticate": "Bearer"})
            await response(scope, receive, send)
            return
        await self.server.session_manager.handle_request({**scope, USER_KEY: user}, receive, send)

    def user(self, header: bytes | None) -> UserRow | None:
        if self.auth == "none":
            return local_user(self.pm.store)
        scheme, _, key = (header or b"").decode("latin-1").strip().partition(" ")
        return authenticate(self.pm.store, key.strip()) if scheme.lower() == "bearer" else None


def rebinding(server: tuple[str, int] | None, headers: dict[bytes, bytes]) -> tuple[int, str] | None:
    """(status, why) when a request to a loopback-bound server names another host or comes from another
    origin; None when it may pass."""
    if server is None or not is_loopback(server[0]):
        return None
    host = headers.get(b"host", b"").decode("latin-1")
    if not is_loopback(urlsplit("//" + host).hostname):
        return 421, f"Host {host!r} is not this loopback server"
    origin = headers.get(b"origin")
    if origin is not None and not is_loopback(urlsplit(origin.decode("latin-1")).hostname):
        return 403, f"Origin {origin.decode('latin-1')!r} may not call this loopback server"
    return None


def endpoint(pm: Any, *, auth: str = "keys", send: Send | None = None) -> Endpoint:
    """The ``/mcp`` ASGI endpoint; its session manager must run while it serves (``endpoint.server.session_manager
    .run()`` in the host app's lifespan; :func:`mount` and :func:`http_app` see to it). Stateless streamable HTTP:
    every POST stands alone (no session to lose), so any replica can answer it."""
    server = build_server(pm, request_user, send=send)
    server.streamable_http_app(streamable_http_path="/", stateless_http=True,
                               transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
                               max_request_body_size=max(4 << 20, 2 * int(pm.settings.max_bytes)))
    return Endpoint(pm, server, auth)


def mount(app: Any, pm: Any, *, path: str = "/mcp", auth: str = "keys", send: Send | None = None) -> Endpoint:
    """Serve the tools at ``path`` of a Starlette/FastAPI ``app`` (ahead of its other routes; with and without a
    trailing slash, so no client meets a redirect), running the session manager inside the app's lifespan.
    ``auth``: "keys" (the bearer key's user) or "none" (the local user); ``send``: see :func:`build_server`."""
    from starlette.routing import Route

    mcp_endpoint = endpoint(pm, auth=auth, send=send)
    app.router.routes[0:0] = [Route(path, mcp_endpoint, include_in_schema=False),
                              Route(path.rstrip("/") + "/", mcp_endpoint, include_in_schema=False)]
    previous = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(parent: Any) -> Any:
        async with mcp_endpoint.server.session_manager.run():
            async with previous(parent) as state:
                yield state

    app.router.lifespan_context = lifespan
    return mcp_endpoint


def http_app(pm: Any, *, path: str = "/mcp", auth: str = "keys") -> Any:
    """A Starlette app serving only the MCP endpoint at ``path`` (to host it without the HTTP API)."""
    from starlette.applications import Starlette

    app = Starlette()
    mount(app, pm, path=path, auth=auth)
    return app


__all__ = ["Endpoint", "build_server", "endpoint", "http_app", "mount", "run_stdio"]
