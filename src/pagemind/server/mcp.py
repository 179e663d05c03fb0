"""The MCP server: a user's documents, answers, runs and MemGPT agents as tools, with the official ``mcp`` SDK.

Two transports, one set of tools: stdio (``pagemind mcp``, for desktop clients; the tools act as the local user,
a user row named ``local`` created on demand) and streamable HTTP (mounted at ``/mcp`` of ``pagemind serve`` by
:func:`mount`; the tools act as the user of the request's ``Authorization: Bearer KEY``, and a request without a
valid key is answered 401). Another user's document, run or agent is "not found", as in the HTTP API.

A thin layer over the service layer (:mod:`.service`), as the HTTP API is: each tool finds its user, parses its
arguments into the HTTP API's shapes (:mod:`.shapes`: the same limits and checks), calls the same operation in a
worker thread (asks and turns run on the service's worker pool and an agent's line, whichever transport started
them) and returns the same JSON as structured content plus a short text; a :class:`PagemindError` becomes a tool
error carrying the library's message.

``ask``'s ``method_options`` is one flat object holding every document method's options, each property's schema
taken from its declaration (``Options.json_schema()``); where methods declare a name differently (its help, its
default, its allowed values) the description says which method means what. Not a ``oneOf``/``anyOf`` per method:
several clients refuse or flatten unions in tool schemas, and a ``oneOf`` would even be wrong here, since methods
share option names (options valid for readagent-p are valid for gistmem too). An option the chosen method does not
take is refused by name, as the CLI refuses its flag; ``list_methods`` gives each method's exact schema.
"""

from __future__ import annotations

import inspect
import re
import threading
import time
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from pydantic import BaseModel, Field, ValidationError

from .. import limits
from ..errors import PagemindError
from ..limits import LIST_PAGE, MAX_ID, MAX_QUERY
from ..methods import registry
from ..methods.registry import options_schema
from ..steps import from_row, line
from . import mcp_sdk, shapes
from .mcp_sdk import CallToolResult, Context, MCPServer, ResourceError, Tool, ToolError
from .service import CONTEXT_CHARS, Service
from .shapes import (
    AgentCreate,
    AskRequest,
    MessageRequest,
    agent_json,
    agent_options_schema,
    block_json,
    run_json,
)

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
USER_KEY = "pagemind.user"  # where the HTTP endpoint leaves the request's user in the ASGI scope
INSTRUCTIONS = (
    "pagemind reads documents far longer than a model's context window and answers questions about them "
    "(ReadAgent, MemWalker, RAG, full text), and keeps MemGPT agents with long-term memory. Add a document, then "
    "ask it, or put documents in a library (add_to_library) and ask across them; every answer is a recorded run "
    "whose steps show_trace lists, and cites what it rests on (get_page "
    "opens a citation in its place). Agents: create_agent, send_message, "
    "read_core_memory, search_archival, search_recall.")

UserOf = Callable[[Context], Any]
MemoryMethod = Annotated[Literal["readagent-p", "readagent-s", "gistmem", "memwalker", "rag", "op-rag"], Field(
    description="whose memory: ReadAgent's pages and gists (its three methods share one), MemWalker's tree, or the "
                "fragments (rag and op-rag share one)")]
AgentName = Annotated[str, Field(description="the agent's name", max_length=48)]
Page = Annotated[int, Field(description="the page of results, from 0", ge=0, le=limits.MAX_RESULT_PAGE)]
After = Annotated[str | None, Field(description="the next page: the `next` a listing returned", max_length=128)]
Limit = Annotated[int, Field(description=f"at most this many (1 to {limits.MAX_LIST:,})", ge=1, le=limits.MAX_LIST)]


def checked(model: type[M], **values: Any) -> M:
    """Arguments parsed into the service's shape (the HTTP API's), a clean tool error naming the field if not."""
    try:
        return model.model_validate({k: v for k, v in values.items() if v is not None})
    except ValidationError as err:
        detail, _ = shapes.validation_detail([dict(e) for e in err.errors()])
        raise ToolError(detail) from None


# --- the tools ------------------------------------------------------------------------------------------
READING = mcp_sdk.hints(read_only=True)
WRITING = mcp_sdk.hints(read_only=False)
DESTRUCTIVE = mcp_sdk.hints(read_only=False, destructive=True)


class Tools:
    """The MCP tools, one method each: a call of the service layer (the HTTP API's operations, shapes and worker
    pool) as the user ``user_of`` names; ``allow_paths``: ``add_document`` and ``add_to_library`` may read a file of
    this machine (stdio only, never over HTTP). :data:`TABLE` says which methods are tools and how they are
    described."""

    def __init__(self, service: Service, user_of: UserOf, allow_paths: bool = False) -> None:
        self.service, self.user_of, self.allow_paths = service, user_of, allow_paths

    async def run(self, ctx: Context, work: Callable[[Any], T]) -> T:
        """``work(user)`` in a worker thread; the library's errors as tool errors."""
        user = self.user_of(ctx)
        try:
            return await anyio.to_thread.run_sync(work, user)
        except PagemindError as err:
            raise ToolError(str(err) or type(err).__name__) from err

    # documents -------------------------------------------------------------------------------------
    async def add_document(
        self, ctx: Context,
        text: Annotated[str | None, Field(description="the document's text")] = None,
        name: Annotated[str | None, Field(description="a name for it (default: the file's, else 'text.txt')",
                                          max_length=limits.MAX_NAME)] = None,
        path: Annotated[str | None, Field(description="a file on this machine to read instead of text (.txt, .md, "
                                                       ".pdf, .epub, .docx, .html)")] = None,
    ) -> CallToolResult:
        """Keep a document (its text, or a file) so it can be asked about; returns its id. The same document
        added twice has the same id."""
        if (text is None) == (path is None):
            raise ToolError("give the document's text or a path (one of them)" if self.allow_paths
                            else "give the document's text")
        if path is not None and not self.allow_paths:
            raise ToolError("path is only read over stdio (pagemind mcp); send the text")
        if text is not None:
            checked(shapes.TextDocument, text=text, name=name)
        source: str | Path = Path(path).expanduser() if path is not None else str(text)
        data = await self.run(ctx, lambda user: shapes.document_json(self.service.add_document(user, source, name)))
        return result(data, f"document {data['id']}: {data['name']}, {data['words']} words")

    async def list_documents(self, ctx: Context, after: After = None, limit: Limit = LIST_PAGE) -> CallToolResult:
        """The documents you added, newest first, a page at a time."""
        page = await self.run(ctx, lambda user: self.service.documents(user, after=after, limit=limit))
        docs = [shapes.document_json(d) for d in page]
        lines = [f"{d['id']}  {d['name']}  ({d['words']} words)" for d in docs]
        return paged("documents", docs, page.next, lines, "no documents yet")

    async def remove_document(
        self, ctx: Context,
        document_id: Annotated[str, Field(description="the document's id (list_documents)",
                                          pattern=shapes.DOCUMENT_ID)],
    ) -> CallToolResult:
        """Remove one of your documents; its text and memories go when no other user or library holds it."""
        await self.run(ctx, lambda user: self.service.remove_document(user, document_id))
        return result({"removed": document_id}, f"removed document {document_id}")

    async def get_document_sections(
        self, ctx: Context,
        document_id: Annotated[str, Field(description="the document's id", pattern=shapes.DOCUMENT_ID)],
    ) -> CallToolResult:
        """A document's own sections as its file gave them (a PDF's outline, the headings of Markdown, HTML or
        DOCX, or those its text shows), each with its level and pages: no memory needed."""
        from ..text.sections import outline_text

        document = await self.run(ctx, lambda user: self.service.sections(user, document_id))
        data = shapes.sections_json(document)
        return result(data, outline_text(document.sections) or f"{document.name}: no sections found")

    async def get_document_structure(
        self, ctx: Context,
        document_id: Annotated[str, Field(description="the document's id", pattern=shapes.DOCUMENT_ID)],
        method: MemoryMethod = "readagent-p",
    ) -> CallToolResult:
        """The structure of your memory of a document (built by ask or index with that method): ReadAgent's pages
        with their gists, MemWalker's tree of summaries, or the fragments. get_page_content reads units of it."""
        data = shapes.structure_json(await self.run(ctx, lambda user: self.service.structure(user, document_id,
                                                                                            method)))
        if "pages" in data:
            lines = [f"<Page {p['page']}> ({p['words']} words) {p['gist']}" for p in data["pages"]]
        elif "nodes" in data:
            lines = [f"{'  ' * (n['id'].count('.') + (n['id'] != 'root'))}{n['id']} [level {n['level']}] "
                     f"{' '.join(n['summary'].split())[:160]}" for n in reversed(data["nodes"])]
        else:
            lines = [f"<Fragment {f['fragment']}> ({f['words']} words)" for f in data["fragments"]]
        return result(data, "\n".join(lines) or "an empty memory")

    async def get_page_content(
        self, ctx: Context,
        document_id: Annotated[str, Field(description="the document's id", pattern=shapes.DOCUMENT_ID)],
        pages: Annotated[str, Field(description="unit numbers: 3, 3-7 or 1,4,9 (pages, leaves or fragments, as "
                                                "get_document_structure numbers them)", pattern=shapes.UNITS)],
        method: MemoryMethod = "readagent-p",
    ) -> CallToolResult:
        """The text of pages (with their gists), MemWalker leaves (with their summaries) or fragments of your memory
        of a document, by number."""
        data = shapes.units_json(await self.run(ctx, lambda user: self.service.units(user, document_id, pages,
                                                                                    method)))
        blocks = [f"<{u['unit'].capitalize()} {u['index']}>\n{u['text']}" + (f"\n(gist: {u['gist']})" if u.get("gist")
                                                                            else "") for u in data["units"]]
        return result(data, "\n\n".join(blocks))

    async def list_methods(self, ctx: Context) -> CallToolResult:
        """The reading methods ask can use, each with what it reads and its options' JSON schema."""
        methods = [registry.get(name).describe_method() for name in registry.document_methods()]
        lines = [f"{m['name']}: {m['summary']}" for m in methods]
        return result({"methods": methods}, "\n".join(lines))

    async def add_to_library(
        self, ctx: Context,
        library: Annotated[str, Field(description="the library's name (made when new)", pattern=shapes.LIBRARY_NAME)],
        document_id: Annotated[str | None, Field(description="one of your documents (add_document) to put in it")]
        = None,
        text: Annotated[str | None, Field(description="a document's text to put in it")] = None,
        path: Annotated[str | None, Field(description="a file on this machine to read (.txt, .md, .pdf, .epub, "
                                                       ".docx, .html)")] = None,
        name: Annotated[str | None, Field(description="its name in the library (the same name again with another "
                                                      "text updates it)", max_length=limits.MAX_NAME)] = None,
    ) -> CallToolResult:
        """Put a document in a library: a named set of documents ask reads as one (with any method; each
        citation names its document). Only a changed or new document is built again when the library is asked."""
        given = [x for x in (document_id, text, path) if x is not None]
        if len(given) != 1:
            raise ToolError("give one of document_id, text" + (" or path" if self.allow_paths else ""))
        if path is not None and not self.allow_paths:
            raise ToolError("path is only read over stdio (pagemind mcp); send the text")
        if text is not None:
            checked(shapes.TextDocument, text=text, name=name)
        source = None if document_id is not None else Path(path).expanduser() if path is not None else str(text)
        data = shapes.library_change_json(library, await self.run(ctx, lambda user: self.service.add_to_library(
            user, library, source, name, document_id=document_id)))
        doc = data["document"]
        return result(data, f"{doc['status']} {doc['name']} ({doc['words']} words) in library {library}")

    async def list_libraries(self, ctx: Context, after: After = None, limit: Limit = LIST_PAGE) -> CallToolResult:
        """Your libraries by name, each with its documents, a page at a time."""
        def one_page(user: Any) -> tuple[list[dict[str, Any]], str | int | None]:
            shown = []
            page = self.service.libraries(user, after=after, limit=limit)
            for row in page:
                _, documents = self.service.library(user, row.name)
                shown.append({**shapes.library_json(row),
                              "documents": [shapes.library_document_json(d) for d in documents]})
            return shown, page.next

        found, following = await self.run(ctx, one_page)
        lines = [f"{x['name']}: {', '.join(d['name'] for d in x['documents'])}" for x in found]
        return paged("libraries", found, following, lines, "no libraries yet")

    async def ask(
        self, ctx: Context,
        question: Annotated[str, Field(description="the question")],
        document_id: Annotated[str | None, Field(description="the document's id (add_document, list_documents)")]
        = None,
        library: Annotated[str | None, Field(description="a library's name instead of a document (list_libraries): "
                                                         "asked across its documents")] = None,
        options: Annotated[list[str] | None, Field(description="multiple choice: the options, in order (the "
                                                                "answer names one; at most 10)")] = None,
        method: Annotated[str, Field(description="how to read the document (list_methods explains each); auto: "
                                                 "the whole text when it fits the model's window, else ReadAgent")]
        = "auto",
        method_options: Annotated[dict[str, Any] | None, Field(description="options of the method")] = None,
    ) -> CallToolResult:
        """Answer a question about a document or across a library. The first question with a method builds the
        memory (gists, a tree, fragments) of each document not built yet, which later questions reuse. Returns the
        answer, its citations, the pages read and the run id (show_trace lists every step and LLM call)."""
        if (document_id is None) == (library is None):
            raise ToolError("give document_id or library (one of them)")
        body = checked(AskRequest, question=question, options=options, method=method, method_options=method_options)
        progress = progress_reporter(ctx)
        answer = await self.run(ctx, lambda user: (begun := self.service.ask(user, document_id, body, progress,
                                                                   library=library), begun.future.result())[1])
        data = {**answer.as_dict(), **({"document": document_id} if document_id else {"library": library})}
        read = f"; {answer.read_unit}s read: {answer.pages_read}" if answer.pages_read else ""
        said = "" if answer.support_line is None else f"\n\nSupport: {answer.support_line}"
        return result(data, f"{answer.text}{sources(data)}{said}\n\n(method {answer.method}{read}; "
                            f"run {answer.run_id})")

    # runs ------------------------------------------------------------------------------------------
    async def show_trace(
        self, ctx: Context,
        run_id: Annotated[str, Field(description="the run's id (an ask's or a send_message's run_id)",
                                     max_length=128)],
        after: Annotated[int, Field(description="only steps after this one (its seq), to follow a run", ge=-1,
                                    le=MAX_ID)] = -1,
        limit: Annotated[int, Field(description="at most this many steps", ge=1, le=limits.MAX_LIST)] = 200,
    ) -> CallToolResult:
        """A run's trace: its status and result, then every step in order (each LLM call with its role, tokens,
        seconds and whether it was cached; the decisions made of them; phases; an agent's thoughts, function
        calls and results) and the token and time totals."""
        run, usage, steps = await self.run(ctx, lambda user: self.service.trace(user, run_id, after, limit))
        run_data = run_json(run)
        data = {"run": run_data, "usage": usage, "steps": [shapes.step_json(s) for s in steps]}
        head = (f"run {run_data['id']}: {run_data['kind']} {run_data['method'] or ''} {run_data['status']}; "
                f"{usage['calls']} LLM calls ({usage['cached_calls']} cached), "
                f"{usage['prompt_tokens']}+{usage['completion_tokens']} tokens, {usage['seconds']} s")
        lines = [f"{s.seq:>3} {line(from_row(s))}" for s in steps]
        return result(data, "\n".join([head, *lines]))

    async def get_page(
        self, ctx: Context,
        run_id: Annotated[str, Field(description="the run's id (an ask's or a send_message's run_id)",
                                     max_length=128)],
        citation: Annotated[int, Field(description="the citation, from 1 (the answer's marker [n])", ge=1,
                                       le=MAX_ID)] = 1,
        radius: Annotated[int, Field(description="characters shown either side of the cited span, at most (within "
                                                 "its paragraphs)", ge=0, le=limits.MAX_RADIUS)] = CONTEXT_CHARS,
    ) -> CallToolResult:
        """A cited location of an answer or an agent's reply: the page, leaf, fragment, passage or message the
        citation points into, as the text around the cited span, with every cited span of the run in it marked
        <cite n="k">...</cite> (and as offsets). The same as GET /v1/runs/{run_id}/citations/{n}."""
        data = shapes.cited_place_json(await self.run(ctx, lambda user: self.service.citation(user, run_id,
                                                                                              citation, radius)))
        cited = data["citation"]
        head = f"[{citation}] {cited.get('location', '')} of {cited.get('document', '')}"
        return result(data, f"{head}\n\n{data['marked']}")

    async def list_runs(
        self, ctx: Context,
        kind: Annotated[str | None, Field(description=f"only this kind: {', '.join(shapes.RUN_KINDS)}")] = None,
        limit: Limit = 20, after: After = None,
    ) -> CallToolResult:
        """Your recent runs (asks, index builds, agent turns), newest first, a page at a time."""
        if kind is not None and kind not in shapes.RUN_KINDS:
            raise ToolError(f"kind {kind!r}: one of {', '.join(shapes.RUN_KINDS)}")
        page = await self.run(ctx, lambda user: self.service.runs(user, kind=kind, limit=limit, after=after))
        runs = [run_json(r) for r in page]
        when = [time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["created"])) for r in runs]
        lines = [f"{r['id']}  {r['kind']} {r['method'] or ''} {r['status']}  {t}" for r, t in zip(runs, when)]
        return paged("runs", runs, page.next, lines, "no runs yet")

    # agents ----------------------------------------------------------------------------------------
    async def create_agent(
        self, ctx: Context,
        name: Annotated[str, Field(description=f"its name: {limits.AGENT_NAME_RULE}")],
        persona: Annotated[str | None, Field(description="who the agent is (its persona block; default: "
                                                         "pagemind's persona under this name)")] = None,
        human: Annotated[str | None, Field(description="what it knows about you (its human block)")] = None,
        options: Annotated[dict[str, Any] | None, Field(description="agent settings")] = None,
    ) -> CallToolResult:
        """Create a MemGPT agent: a persistent assistant with core memory (persona and human blocks it edits),
        recall (every message) and archival memory (passages it searches)."""
        if not isinstance(name, str) or not re.match(limits.AGENT_NAME, name):
            raise ToolError(f"agent name {name!r}: use {limits.AGENT_NAME_RULE}")
        body = checked(AgentCreate, name=name, persona=persona, human=human, options=options)
        data = await self.run(ctx, lambda user: agent_json(self.service.create_agent(user, body)))
        return result(data, f"agent {name} created (id {data['id']})")

    async def list_agents(self, ctx: Context, after: Annotated[int | None, Field(
            description="the next page: the `next` a listing returned", ge=0, le=MAX_ID)] = None,
            limit: Limit = LIST_PAGE) -> CallToolResult:
        """Your MemGPT agents by id, a page at a time."""
        page = await self.run(ctx, lambda user: self.service.agent_list(user, after=after, limit=limit))
        agents = [{"id": v.row.id, "name": v.name, "created": v.row.created} for v in page]
        return paged("agents", agents, page.next, [v.name for v in page], "no agents yet")

    async def send_message(
        self, ctx: Context,
        agent: AgentName,
        message: Annotated[str, Field(description="your message")],
    ) -> CallToolResult:
        """Send a message to an agent: it thinks, may search or edit its memory over several steps, and answers.
        Returns its messages, every step and the run id. Turns of one agent run one at a time, in order, with
        the HTTP API's."""
        body = checked(MessageRequest, message=message)
        progress = progress_reporter(ctx)
        turn = await self.run(ctx, lambda user: self.service.send(user, agent, body.message,
                                                                  progress=progress).future.result())
        data = {"agent": agent, **turn.as_dict()}
        said = "\n".join(turn.messages) or f"(no message; stopped: {turn.stop_reason})"
        return result(data, f"{said}{sources(data)}\n\n({len(turn.steps)} steps; run {turn.run_id})")

    async def core_memory_append(
        self, ctx: Context, agent: AgentName,
        label: Annotated[str, Field(description="the block: human, persona, ...", pattern=limits.BLOCK_LABEL)],
        content: Annotated[str, Field(description="a line to add to the block", min_length=1,
                                      max_length=limits.MAX_BLOCK)],
    ) -> CallToolResult:
        """Append a line to one of an agent's core-memory blocks (as the agent's own core_memory_append does);
        applied between its turns."""
        data = await self.run(ctx, lambda user: block_json(
            self.service.edit_block(user, agent, label, append=content, via="mcp").result()))
        return result(data, f"{data['label']}: {data['value']}")

    async def core_memory_replace(
        self, ctx: Context, agent: AgentName,
        label: Annotated[str, Field(description="the block: human, persona, ...", pattern=limits.BLOCK_LABEL)],
        old_content: Annotated[str, Field(description="the text to replace, exactly as it is in the block",
                                          min_length=1, max_length=limits.MAX_BLOCK)],
        new_content: Annotated[str, Field(description="what replaces it (empty: delete it)",
                                          max_length=limits.MAX_BLOCK)] = "",
    ) -> CallToolResult:
        """Replace text in one of an agent's core-memory blocks (as the agent's own core_memory_replace does)."""
        data = await self.run(ctx, lambda user: block_json(self.service.edit_block(
            user, agent, label, old=old_content, new=new_content, via="mcp").result()))
        return result(data, f"{data['label']}: {data['value']}")

    async def core_memory_history(
        self, ctx: Context, agent: AgentName,
        label: Annotated[str | None, Field(description="one block's history (default: every block's)",
                                           pattern=limits.BLOCK_LABEL)] = None,
        before: Annotated[int | None, Field(description="versions older than this one (paging back)", ge=1,
                                            le=limits.MAX_ID)] = None,
    ) -> CallToolResult:
        """An agent's core-memory history, newest first: each version of a block with its cause (the agent's step
        and function, or who edited it where), its time and its diff from the version before."""
        versions = await self.run(ctx, lambda user: shapes.history_json(
            self.service.block_history(user, agent, label, before=before, limit=50)))
        lines = [f"{v['label']} v{v['version']}  {v['cause']}" + (f"\n{v['diff']}" if v.get("diff") else "")
                 for v in versions]
        return result({"versions": versions}, "\n".join(lines) or "no versions")

    async def core_memory_revert(
        self, ctx: Context, agent: AgentName,
        label: Annotated[str, Field(description="the block: human, persona, ...", pattern=limits.BLOCK_LABEL)],
        version: Annotated[int, Field(description="the version whose text the block takes again", ge=1,
                                      le=limits.MAX_ID)],
    ) -> CallToolResult:
        """Make a core-memory block hold what one of its versions held again (a new version: nothing is lost);
        refused when that text no longer fits the block's limit."""
        block, number = await self.run(ctx, lambda user: self.service.revert_block(
            user, agent, label, version, via="mcp").result())
        data = {**block_json(block), "version": number}
        return result(data, f"{data['label']} is version {version}'s text again, as version {number}")

    async def audit_memory(
        self, ctx: Context, agent: AgentName,
        fold: Annotated[bool, Field(description="fold every repeat into the earliest passage of its group")] = False,
    ) -> CallToolResult:
        """An agent's archival memory audited: repeated passages (exact and near), junk (empty, one word repeated,
        function boilerplate) with the share of each, superseded facts; ``fold`` folds the repeats (keeping the
        earliest time and every source)."""
        found, folded = await self.run(ctx, lambda user: self.service.audit_memory(user, agent, fold).result())
        data = {**found.as_dict(), "folded": folded}
        return result(data, f"{data['total']} passages: {data['repeats']} repeats, {len(data['junk'])} junk, "
                            f"{data['superseded']} superseded" + (f"; folded {folded}" if fold else ""))

    async def forget_passage(
        self, ctx: Context, agent: AgentName,
        passage: Annotated[int, Field(description="the passage's id (as search_archival shows it)", ge=1,
                                      le=limits.MAX_ID)],
    ) -> CallToolResult:
        """Make an agent forget an archival passage (a wrong fact, junk): nothing finds it any more; it is kept
        apart with who forgot it and when, and can be restored (HTTP ``POST /v1/agents/{id}/archival/{n}/restore``,
        ``pagemind agent memory restore``)."""
        gone = await self.run(ctx, lambda user: self.service.forget_passage(user, agent, passage, via="mcp").result())
        return result(shapes.passage_json(gone), f"forgot passage {passage}: {gone.text[:100]}")

    async def consolidate_memory(self, ctx: Context, agent: AgentName) -> CallToolResult:
        """One consolidation pass over an agent's recall since the last (between sessions): a dated summary and
        lasting facts stored in archival memory (repeats are not), lines for the human block as a new version (revert
        it to undo)."""
        done = await self.run(ctx, lambda user: self.service.consolidate_memory(user, agent).result())
        data = done.as_dict()
        return result(data, f"read {data['messages']} messages: stored {len(data['stored'])} passages "
                            f"({data['known']} already known), {len(data['versions'])} core-memory versions"
                            + (f"; {data['problems'][0]}" if data["problems"] else ""))

    async def delete_agent(self, ctx: Context, agent: AgentName) -> CallToolResult:
        """Delete one of your agents with all its memory (refused while it is in a turn)."""
        await self.run(ctx, lambda user: self.service.delete_agent(user, agent))
        return result({"deleted": agent}, f"deleted agent {agent}")

    async def read_core_memory(self, ctx: Context, agent: AgentName) -> CallToolResult:
        """An agent's core memory: its blocks (persona, human, ...) as they are now, and how much it remembers."""
        data = await self.run(ctx, lambda user: agent_json(self.service.agent(user, agent)))
        text = "\n\n".join(f"[{b['label']}] {b['value']}" for b in data["blocks"])
        return result({"id": data["id"], "name": data["name"], "created": data["created"], "options": data["options"],
                       "blocks": data["blocks"], "counts": data["counts"]}, text)

    async def search_archival(
        self, ctx: Context,
        agent: AgentName,
        query: Annotated[str, Field(description="what to look for", min_length=1, max_length=MAX_QUERY)],
        page: Page = 0,
    ) -> CallToolResult:
        """Search an agent's archival memory (passages it stored and documents loaded into it), best first."""
        found = await self.run(ctx, lambda user: self.service.search_archival(user, agent, query, page))
        return result(shapes.search_json(found), found.render())

    async def search_recall(
        self, ctx: Context,
        agent: AgentName,
        query: Annotated[str, Field(description="words or a phrase said in the conversation", min_length=1,
                                    max_length=MAX_QUERY)],
        page: Page = 0,
    ) -> CallToolResult:
        """Search an agent's recall memory: the whole conversation history, messages containing the query
        first."""
        found = await self.run(ctx, lambda user: self.service.search_recall(user, agent, query, page))
        return result(shapes.search_json(found), found.render())


@dataclass(frozen=True)
class ToolSpec:
    """One row of :data:`TABLE`: the tool (a method of :class:`Tools`), its hints, the arguments whose schemas are
    generated from the declarations (``patch``), and the file path argument only stdio offers."""

    name: str
    annotations: mcp_sdk.ToolAnnotations
    patch: Callable[[], dict[str, dict[str, Any]]] | None = None
    reads_paths: bool = False


TABLE: tuple[ToolSpec, ...] = (
    ToolSpec("add_document", WRITING, reads_paths=True),
    ToolSpec("list_documents", READING),
    ToolSpec("add_to_library", WRITING, reads_paths=True),
    ToolSpec("list_libraries", READING),
    ToolSpec("remove_document", DESTRUCTIVE),
    ToolSpec("get_document_sections", READING),
    ToolSpec("get_document_structure", READING),
    ToolSpec("get_page_content", READING),
    ToolSpec("list_methods", READING),
    ToolSpec("ask", WRITING, lambda: {"method": method_schema(), "method_options": options_schema()}),
    ToolSpec("show_trace", READING),
    ToolSpec("get_page", READING),
    ToolSpec("list_runs", READING),
    ToolSpec("create_agent", WRITING, lambda: {"options": agent_options_schema()}),
    ToolSpec("list_agents", READING),
    ToolSpec("send_message", WRITING),
    ToolSpec("read_core_memory", READING),
    ToolSpec("core_memory_append", WRITING),
    ToolSpec("core_memory_replace", WRITING),
    ToolSpec("core_memory_history", READING),
    ToolSpec("core_memory_revert", WRITING),
    ToolSpec("audit_memory", WRITING),
    ToolSpec("forget_passage", DESTRUCTIVE),
    ToolSpec("consolidate_memory", WRITING),
    ToolSpec("delete_agent", DESTRUCTIVE),
    ToolSpec("search_archival", READING),
    ToolSpec("search_recall", READING),
)


def build_server(service: Service, user_of: UserOf, *, allow_paths: bool = False) -> MCPServer:
    """The MCP server of :data:`TABLE` over the service layer. ``user_of`` names the user a tool call acts as;
    ``allow_paths``: tools may read a file of this machine (stdio only, never over HTTP)."""
    from ..version import VERSION

    tools = Tools(service, user_of, allow_paths)
    made = [make_tool(getattr(tools, spec.name), spec.annotations, patch=spec.patch() if spec.patch else None,
                      drop=("path",) if spec.reads_paths and not allow_paths else ()) for spec in TABLE]
    server = mcp_sdk.server("pagemind", instructions=INSTRUCTIONS, version=VERSION, tools=made)
    add_resources_and_prompts(server, service, user_of)
    return server


def add_resources_and_prompts(server: MCPServer, service: Service, user_of: UserOf) -> None:
    """The user's documents, libraries and agents' core memory as resource templates (read as the user the request
    acts as: another user's is not found), and the ask-with-citations prompt."""
    import json

    async def read(ctx: Context, fn: Callable[[Any], Any]) -> str:
        """``fn(user)`` in a worker thread, as JSON; a pagemind error as the resource's error."""
        user = user_of(ctx)
        try:
            return json.dumps(await anyio.to_thread.run_sync(lambda: fn(user)), ensure_ascii=False)
        except PagemindError as err:
            raise ResourceError(str(err)) from None

    @server.resource("pagemind://documents/{document_id}", name="document", mime_type="application/json",
                     description="one of your documents: its name, words and the memories built of it")
    async def document(document_id: str, ctx: Context) -> str:
        def one(user: Any) -> dict[str, Any]:
            row, memories = service.document(user, document_id)
            return {**shapes.document_json(row), "memories": [m.key for m in memories]}
        return await read(ctx, one)

    @server.resource("pagemind://libraries/{name}", name="library", mime_type="application/json",
                     description="one of your libraries: its documents (name, words, id)")
    async def library(name: str, ctx: Context) -> str:
        def one(user: Any) -> dict[str, Any]:
            row, members = service.library(user, name)
            return {**shapes.library_json(row), "documents": [shapes.library_document_json(m) for m in members]}
        return await read(ctx, one)

    @server.resource("pagemind://agents/{agent}/core-memory", name="core memory", mime_type="application/json",
                     description="one of your agents' core memory: its blocks (label, value, limit)")
    async def core_memory(agent: str, ctx: Context) -> str:
        return await read(ctx, lambda user: {"agent": agent, "blocks": [shapes.block_json(b)
                                                                        for b in service.blocks(user, agent)]})

    @server.prompt(name="ask-with-citations", title="Ask with citations",
                   description="ask one of your documents or libraries and answer from the passages it cites")
    def ask_with_citations(question: str, document_id: str = "", library: str = "") -> str:
        target = f'document_id "{document_id}"' if document_id else f'library "{library}"' if library else \
            "the document or library the user names (list_documents, list_libraries)"
        return (f"Call the pagemind tool `ask` with question {json.dumps(question)} and {target}. Answer from what "
                "it returns only: give the answer, then each citation it lists as [n] with its place (document, "
                "page or fragment) and its quote. If the answer says the text does not hold it, say so; do not "
                "answer from your own knowledge.")


class CheckedTool(Tool):
    """A tool whose argument errors name the field and the problem in one line (the SDK's own message is
    pydantic's, with links to its documentation)."""

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        try:
            mcp_sdk.validate_arguments(self, arguments)
        except ValidationError as err:
            detail, _ = shapes.validation_detail([dict(e) for e in err.errors()])
            raise ToolError(f"Error executing tool {self.name}: {detail}") from None
        return await super().run(arguments, context, convert_result)


def make_tool(fn: Callable[..., Awaitable[CallToolResult]], annotations: mcp_sdk.ToolAnnotations, *,
              patch: dict[str, dict[str, Any]] | None = None, drop: tuple[str, ...] = ()) -> Tool:
    """The SDK's tool of ``fn`` with a plain input schema (:func:`portable`): ``patch`` replaces properties'
    schemas by generated ones, ``drop`` removes arguments."""
    tool = CheckedTool.from_function(fn, annotations=annotations, description=inspect.cleandoc(fn.__doc__ or ""))
    schema = tool.parameters
    props: dict[str, Any] = schema.get("properties", {})
    for name in drop:
        props.pop(name, None)
    for prop in props.values():
        prop.pop("title", None)
    for name, replacement in (patch or {}).items():
        said = [props[name].get("description"), replacement.get("description")]
        props[name] = {**replacement, "description": ": ".join(d for d in said if d)}
    schema["properties"] = {name: portable(prop) for name, prop in props.items()}
    return tool


def portable(schema: Any) -> Any:
    """A schema without nullable unions (``anyOf`` with null, ``["integer", "null"]``, ``None`` in an enum): an
    optional argument is its type, since leaving it out is how a client asks for the default, so null adds
    nothing but warnings in clients with a restricted dialect."""
    if isinstance(schema, list):
        return [portable(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: portable(v) for k, v in schema.items()}
    union = out.get("anyOf")
    if isinstance(union, list) and len(union) == 2 and {"type": "null"} in union:
        kind = next(o for o in union if o != {"type": "null"})
        out = {**kind, **{k: v for k, v in out.items() if k != "anyOf"}}
    kinds = out.get("type")
    if isinstance(kinds, list) and "null" in kinds:
        rest = [k for k in kinds if k != "null"]
        out["type"] = rest[0] if len(rest) == 1 else rest
    if isinstance(out.get("enum"), list) and None in out["enum"]:
        out["enum"] = [v for v in out["enum"] if v is not None]
    if out.get("default", 0) is None:
        del out["default"]
    return out


def sources(data: dict[str, Any]) -> str:
    """The sources list of an answer's or a turn's JSON (get_page opens one)."""
    return shapes.sources_text(data.get("citations") or [], "library" in data, "Sources (get_page opens one):", 200)


result = mcp_sdk.tool_result


def paged(key: str, items: list[dict[str, Any]], following: str | int | None, lines: list[str],
          empty: str) -> CallToolResult:
    """A listing tool's result: the page's ``items`` under ``key`` and, where there are more, ``next`` (the cursor
    to pass as ``after``), said in the text too."""
    text = "\n".join(lines) or empty
    if following is None:
        return result({key: items}, text)
    return result({key: items, "next": following}, f"{text}\n(more: call again with after={following!r})")


# --- schemas generated from the declarations --------------------------------------------------------------
def method_schema() -> dict[str, Any]:
    return {"type": "string", "enum": list(registry.document_methods()), "default": "auto"}


def progress_reporter(ctx: Context) -> Callable[[str, int, int, str], None]:
    """A progress callback that tells the client (MCP progress notifications, sent when its request asked for
    them; at most two a second) while a long ask or turn runs in a worker thread."""
    token = anyio.lowlevel.current_token()
    lock = threading.Lock()
    state: dict[str, Any] = {"count": 0, "last": 0.0, "phase": ""}

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
        except Exception:
            pass

    return tell


# --- transports ---------------------------------------------------------------------------------------------
def run_stdio(pm: Any) -> None:
    """Serve the tools over stdin/stdout as the local user (``pagemind mcp``). The SDK points fd 1 at stderr while
    it serves, so stray output (a model loading) cannot corrupt the protocol."""
    service = Service(pm, auth="none")
    user = service.local
    server = build_server(service, lambda ctx: user, allow_paths=True)
    try:
        anyio.run(server.run_stdio_async)
    finally:
        service.close()


def request_user(ctx: Context) -> Any:
    """The user the HTTP endpoint found for this request (see :class:`Endpoint`)."""
    request = ctx.request_context.request
    user = getattr(request, "scope", {}).get(USER_KEY) if request is not None else None
    if user is None:
        raise ToolError("no user: this request did not come through pagemind's MCP endpoint")
    return user


class Endpoint:
    """The ASGI app at ``/mcp``: the request's user (the bearer key's, or the local user when the server runs
    without keys; the service's one parser) into the scope, then the SDK's streamable HTTP transport; 401
    without a valid key. Host, Origin, duplicate Authorization headers and the body size are checked before, by
    the edge every route of the server passes (:mod:`.edge`)."""

    def __init__(self, service: Service, server: MCPServer) -> None:
        self.service, self.server = service, server

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        from starlette.responses import JSONResponse

        header = next((v for k, v in scope.get("headers") or () if k.lower() == b"authorization"), None)
        value = header.decode("latin-1") if header is not None else None
        user = await anyio.to_thread.run_sync(self.service.user_for, value)
        if user is None:
            why = ("a valid API key is needed: Authorization: Bearer KEY (`pagemind users create NAME` makes one); "
                   "this server has no OAuth: configure the key in the client's headers")
            response = JSONResponse(shapes.error_body(why, "Unauthorized"), status_code=401,
                                    headers={"WWW-Authenticate": 'Bearer realm="pagemind"'})
            await response(scope, receive, send)
            return
        await self.server.session_manager.handle_request({**scope, USER_KEY: user}, receive, send)


def endpoint(service: Service) -> Endpoint:
    """The ``/mcp`` ASGI endpoint; its session manager must run while it serves (``endpoint.server.session_manager
    .run()`` in the host app's lifespan; :func:`mount` and :func:`http_app` see to it). Stateless streamable HTTP:
    every POST stands alone (no session to lose), so any replica can answer it."""
    server = build_server(service, request_user)
    mcp_sdk.serve_http(server, service.max_body)
    return Endpoint(service, server)


def mount(app: Any, service: Service, *, path: str = "/mcp") -> Endpoint:
    """Serve the tools at ``path`` of a Starlette/FastAPI ``app`` (ahead of its other routes; with and without a
    trailing slash, so no client meets a redirect), running the session manager inside the app's lifespan."""
    from starlette.routing import Route

    mcp_endpoint = endpoint(service)
    app.router.routes[0:0] = [Route(path, mcp_endpoint, include_in_schema=False),
                              Route(path.rstrip("/") + "/", mcp_endpoint, include_in_schema=False)]
    previous = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(parent: Any) -> Any:
        async with mcp_endpoint.server.session_manager.run(), previous(parent) as state:
            yield state

    app.router.lifespan_context = lifespan
    return mcp_endpoint


def http_app(pm: Any, *, path: str = "/mcp", auth: str = "keys", allowed_hosts: tuple[str, ...] = ()) -> Any:
    """A Starlette app serving only the MCP endpoint at ``path`` (to host it without the HTTP API), behind the
    same edge as ``pagemind serve``."""
    from starlette.applications import Starlette

    from .edge import Edge, EdgePolicy

    service = Service(pm, auth=auth)
    app = Starlette()
    mount(app, service, path=path)
    app.add_middleware(Edge, policy=EdgePolicy(service.max_body, frozenset(h.lower() for h in allowed_hosts)))
    return app


__all__ = ["Endpoint", "build_server", "endpoint", "http_app", "mount", "run_stdio"]
