"""Letta's REST API, the part ``letta-client`` uses for MemGPT agents, under ``/letta`` on ``pagemind serve``: a
program written with ``Letta(base_url=...)`` runs against pagemind by giving it ``http://HOST:PORT/letta`` and a
pagemind key as its API key (docs/letta.md).

Served: agents (create, list, retrieve, modify, delete), core-memory blocks (list, retrieve, modify), archival
memory (insert, list, search), messages (send, stream, list; ``LettaResponse`` with Letta's message types, its
``stop_reason`` and ``usage``), export and import of Agent Files (:mod:`pagemind.agent.agentfile`), and
``/v1/health/``. It is a rendering of the service layer (:class:`~.service.Service`): the same users and keys, the
same agents (an agent made here is one of the user's agents everywhere: its Letta id is ``agent-<id>``), turns in
the agent's line, every turn a recorded run.

How pagemind's agent maps onto Letta's messages: a user message is a ``user_message``; a step's inner thoughts a
``reasoning_message``; a ``send_message`` call an ``assistant_message`` (``use_assistant_message=false``: a tool call
like the others); any other call a ``tool_call_message`` and its result a ``tool_return_message``; heartbeats,
system alerts and eviction summaries ``system_message`` (in a listing only; a turn's reply leaves them out, as
Letta's does). One stored event is one Letta message id (``message-<seq>``): a step's reasoning and its call share
it, as in Letta. Streams are server-sent events of those messages as each step ends, then ``stop_reason``,
``usage_statistics`` and ``data: [DONE]``; ``include_pings`` adds ``ping`` events while a step runs.

What pagemind has no counterpart for is refused by name (422): client-side tools, tools with source code,
overriding the model or the system prompt per request, background runs, passage tags, block fields other than
``value``. Routes Letta has and this surface does not answer 501 naming the route. These routes are left out of
pagemind's own OpenAPI schema: their contract is Letta's.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from ..agent.agentfile import iso_time
from ..agent.memory import AgentOptions
from ..errors import InputError, InputTooLarge, NotFound, PagemindError
from ..limits import (
    AGENT_NAME,
    AGENT_NAME_RULE,
    LETTA_BLOCK_LABEL,
    MAX_BLOCK,
    MAX_BLOCKS,
    MAX_DESCRIPTION,
    MAX_LIST,
    MAX_PASSAGE,
    MAX_QUERY,
    MAX_SYSTEM,
    check_text,
    label_from_letta,
    label_to_letta,
)
from ..users import agent_name
from .routing import NO_RETRY, Svc, User, error_response, finished
from .uploads import body_limit
from .views import AgentView

if TYPE_CHECKING:
    from ..agent import Agent
    from ..agent.memory import Block, Event, Passage
    from ..agent.turn import TurnResult

PREFIX = "/letta"
router = APIRouter(prefix=PREFIX + "/v1", include_in_schema=False)
AGENT_ID = re.compile(r"^agent-(\d{1,18})$")
MESSAGE_ID = re.compile(r"^message-(\d{1,18})$")
PASSAGE_ID = re.compile(r"^passage-(\d{1,18})$")
STOP = {"yield": "end_turn", "last_step": "end_turn", "max_steps": "max_steps"}
TURN_TYPES = ("reasoning_message", "assistant_message", "tool_call_message", "tool_return_message")
Limit = Annotated[int, Query(ge=1, le=MAX_LIST)]


# --- request bodies -----------------------------------------------------------------------------------------------
class Loose(BaseModel):
    model_config = ConfigDict(extra="allow")


class CreateBlock(Loose):
    label: str = Field(pattern=LETTA_BLOCK_LABEL)  # Letta's labels ('/' is '.' here: limits.label_from_letta)
    value: str = Field(max_length=MAX_BLOCK)
    limit: int | None = Field(None, ge=1, le=MAX_BLOCK)
    description: str | None = Field(None, max_length=MAX_DESCRIPTION)


# Letta's names for two agent options: their bounds are the declaration's
WINDOW, STEPS = AgentOptions.spec("context_window"), AgentOptions.spec("max_steps")


class CreateAgent(Loose):
    name: str | None = Field(None, pattern=AGENT_NAME, description=AGENT_NAME_RULE)
    system: str | None = Field(None, max_length=MAX_SYSTEM)
    memory_blocks: list[CreateBlock] = Field(default_factory=list, max_length=MAX_BLOCKS)
    tools: list[str] | None = Field(None, max_length=200)
    context_window_limit: int | None = Field(None, ge=WINDOW.minimum, le=WINDOW.maximum)
    block_ids: list[str] | None = None
    source_ids: list[str] | None = None
    folder_ids: list[str] | None = None
    tool_rules: list[dict[str, Any]] | None = None


class UpdateAgent(Loose):
    name: str | None = Field(None, pattern=AGENT_NAME, description=AGENT_NAME_RULE)
    system: str | None = Field(None, max_length=MAX_SYSTEM)
    context_window_limit: int | None = Field(None, ge=WINDOW.minimum, le=WINDOW.maximum)


class UpdateBlock(Loose):
    value: str | None = Field(None, max_length=MAX_BLOCK)
    limit: int | None = Field(None, ge=1, le=MAX_BLOCK)
    description: str | None = Field(None, max_length=MAX_DESCRIPTION)


class SendMessages(Loose):
    messages: list[dict[str, Any]] | None = Field(None, max_length=MAX_LIST)
    input: str | list[dict[str, Any]] | None = None
    streaming: bool = False
    stream_tokens: bool = False
    include_pings: bool = False
    use_assistant_message: bool = True
    include_return_message_types: list[str] | None = None
    client_tools: list[dict[str, Any]] | None = None
    override_model: str | None = None
    override_system: str | None = None
    background: bool = False
    max_steps: int | None = Field(None, ge=STEPS.minimum, le=STEPS.maximum)


class InsertPassage(Loose):
    text: str = Field(min_length=1, max_length=MAX_PASSAGE)
    tags: list[str] | None = None


# --- rendering ------------------------------------------------------------------------------------------------
def cursors(pattern: re.Pattern[str], after: str | None, before: str | None) -> dict[str, int]:
    """Letta's ``after``/``before`` ids (``agent-3``, ``passage-7``, ``message-12``) as the numbers they carry;
    one that is not of the kind is no cursor."""
    return {k: int(m.group(1)) for k, v in (("after", after), ("before", before))
            if v is not None and (m := pattern.match(v))}


def letta_id(view: AgentView) -> str:
    return f"agent-{view.row.id}"


def agent_ref(agent_id: str) -> int:
    found = AGENT_ID.match(agent_id)
    if found is None:
        raise NotFound(f"no agent {agent_id!r} (Letta ids here are agent-<number>: list your agents)")
    return int(found.group(1))


def block_state(agent_id: str, block: Block) -> dict[str, Any]:
    return {"id": f"block-{agent_id.removeprefix('agent-')}-{block.label}", "label": label_to_letta(block.label),
            "value": block.value, "limit": block.limit, "description": block.description or None, "read_only": False,
            "metadata": {}, "hidden": None}


def agent_state(view: AgentView) -> dict[str, Any]:
    """The agent as Letta's ``AgentState`` (the model by its identity: never where it is served)."""
    from ..agent.agentfile import default_system, letta_tools

    aid, options, model = letta_id(view), view.options, view.model
    rendered = [block_state(aid, b) for b in view.blocks]
    return {
        "id": aid, "name": view.name, "agent_type": "memgpt_agent",
        "system": options.system if options.system is not None else default_system(),
        "blocks": rendered, "memory": {"blocks": rendered, "agent_type": "memgpt_agent", "file_blocks": []},
        "llm_config": {"model": model, "handle": model, "model_endpoint_type": "openai",
                       "context_window": options.context_window or 8192},
        "model": model, "embedding": None, "sources": [], "tags": [], "description": None,
        "tools": [{**t, "id": f"tool-{t['name']}"}
                  for t in letta_tools([label_to_letta(b.label) for b in view.blocks])],
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(view.row.created)),
        "metadata": {"pagemind": {"id": view.row.id, "options": options.as_dict(), "counts": view.counts}},
    }


def event_messages(event: Event, *, assistant: bool = True, call_of: dict[str, str] | None = None) -> list[dict]:
    """One stored event as Letta messages (id ``message-<seq>``)."""
    p, base = event.payload, {"id": f"message-{event.seq}", "date": iso_time(event.time), "otid": None}
    calls = call_of if call_of is not None else {}
    if event.kind == "user_message":
        return [{**base, "message_type": "user_message", "content": p["message"]}]
    if event.kind == "step":
        if not p.get("function"):
            return [{**base, "message_type": "reasoning_message", "reasoning": str(p.get("raw", "")), "is_err": True,
                     "source": "non_reasoner_model"}]
        out = [{**base, "message_type": "reasoning_message", "reasoning": p["thoughts"],
                "source": "non_reasoner_model"}] if p.get("thoughts") else []
        call_id = f"call-{event.seq}"
        calls[p["function"]] = call_id
        if assistant and p["function"] == "send_message" and not p.get("held"):  # held: never sent
            return out + [{**base, "message_type": "assistant_message",
                           "content": str(p.get("arguments", {}).get("message", ""))}]
        call = {"name": p["function"], "arguments": json.dumps(p.get("arguments", {}), ensure_ascii=False),
                "tool_call_id": call_id}
        return out + [{**base, "message_type": "tool_call_message", "tool_call": call, "tool_calls": [call]}]
    if event.kind == "function_result":
        if assistant and p.get("function") == "send_message" and p.get("status") == "OK":
            return []  # the reply itself is the assistant message
        return [{**base, "message_type": "tool_return_message", "tool_return": str(p.get("message", "")),
                 "status": "success" if p.get("status") == "OK" else "error", "name": p.get("function"),
                 "tool_call_id": calls.get(str(p.get("function")), f"call-{event.seq - 1}")}]
    return [{**base, "message_type": "system_message", "content": event.render()}]


def turn_events(agent: Agent) -> list[Event]:
    """The events of the agent's latest turn: everything after its last user message (read in the agent's line,
    right after the turn)."""
    total, _ = agent.history(0, 0)
    window = 64
    while True:
        start = max(0, total - window)
        _, events = agent.history(start, total - start)
        users = [i for i, e in enumerate(events) if e.kind == "user_message"]
        if users or start == 0:
            return events[users[-1] + 1:] if users else events
        window *= 4


def usage_of(result: TurnResult, run_id: str) -> dict[str, Any]:
    u = result.usage
    prompt, completion = u.all_prompt_tokens, u.all_completion_tokens  # cached replies counted, as OpenAI does
    return {"message_type": "usage_statistics", "prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion, "step_count": len(result.steps),
            "cached_input_tokens": u.cached_prompt_tokens, "run_ids": [run_id]}


def _filter(messages: list[dict], types: list[str] | None) -> list[dict]:
    return messages if not types else [m for m in messages if m["message_type"] in types]


# --- requests -------------------------------------------------------------------------------------------------
def refuse(features: list[str]) -> None:
    if features:
        raise InputError("pagemind's Letta surface has no counterpart for: " + "; ".join(features))


def user_text(body: SendMessages) -> str:
    """The text of the request's user messages (``messages`` or ``input``), one turn."""
    refuse([f for f, used in (("client_tools (tools run by the client)", bool(body.client_tools)),
                              ("override_model (the agent talks to the model pagemind serves)",
                               body.override_model is not None),
                              ("override_system (set the agent's system with PATCH)", body.override_system is not None),
                              ("background runs (send with streaming, or wait)", body.background)) if used])
    parts: list[str] = []
    items = body.messages if body.messages is not None else (
        [{"role": "user", "content": body.input}] if body.input is not None else [])
    for message in items:
        role = message.get("role", "user")
        if message.get("type") not in (None, "message") or role != "user":
            kind = message.get("type") if message.get("type") not in (None, "message") else f"role {role!r}"
            refuse([f"{kind} messages (send the user's words as role user)"])
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and part.get("type") == "text":
                    parts.append(str(part.get("text", "")))
                elif isinstance(part, dict):
                    refuse([f"{part.get('type')!r} content (pagemind's agent reads text)"])
    text = "\n".join(p for p in parts if p)
    if not text.strip():
        raise InputError("no user message with text: send messages=[{'role': 'user', 'content': '...'}]")
    return check_text("message", text, "the user's message")


def _page(items: list[dict], after: str | None, before: str | None, limit: int) -> list[dict]:
    ids = [i["id"] for i in items]
    if after is not None:
        items = items[ids.index(after) + 1:] if after in ids else []
    if before is not None:
        cut = [i["id"] for i in items]
        items = items[:cut.index(before)] if before in cut else items
    return items[:limit]


# --- agents ---------------------------------------------------------------------------------------------------
@router.get("/health/")
def health() -> dict[str, Any]:
    from ..version import VERSION

    return {"version": VERSION, "status": "ok"}


@router.post("/agents/")
@router.post("/agents")
def create_agent(body: CreateAgent, service: Svc, user: User) -> dict[str, Any]:
    from ..agent.agentfile import COUNTERPARTS

    # a built-in tool pagemind has no counterpart for is left out and said, as Letta does with tools it cannot run
    # (its quickstart asks for web_search and run_code); everything else without a counterpart is refused
    have = ", ".join(sorted(COUNTERPARTS))
    warnings = [f"tool {t!r} skipped: pagemind's agent has no counterpart (its tools: {have})"
                for t in body.tools or [] if t not in COUNTERPARTS]
    refuse([f for f, used in (("block_ids (shared blocks)", bool(body.block_ids)),
                                ("sources and folders (load documents with POST /v1/agents/{id}/documents)",
                                 bool(body.source_ids or body.folder_ids)),
                                ("tool_rules", bool(body.tool_rules))) if used])
    labels = [label_from_letta(b.label) for b in body.memory_blocks]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:  # one of them would be kept silently
        raise InputError(f"memory_blocks gives the label {twice[0]!r} twice: one block per label")
    blocks = {label_from_letta(b.label): b.value for b in body.memory_blocks}
    limits = {label_from_letta(b.label): max(b.limit, len(b.value)) for b in body.memory_blocks
              if b.limit is not None}
    descriptions = {label_from_letta(b.label): b.description for b in body.memory_blocks if b.description}
    options = {"system": body.system, "context_window": body.context_window_limit}
    row = service.new_agent(user, body.name or f"agent-{int(time.time() * 1000)}", persona=blocks.pop("persona", None),
                            human=blocks.pop("human", None), blocks=blocks, limits=limits, descriptions=descriptions,
                            options={k: v for k, v in options.items() if v is not None})
    state = agent_state(service.agent_view(user, row))
    if isinstance(body.model_extra, dict) and body.model_extra.get("model") not in (None, state["model"]):
        warnings.append(f"model {body.model_extra['model']!r}: the agent talks to the model pagemind serves "
                        f"({state['model']})")
    return {**state, "pagemind": {"warnings": warnings}} if warnings else state


@router.get("/agents/")
@router.get("/agents")
def list_agents(service: Svc, user: User, name: str | None = None, after: str | None = None,
                before: str | None = None, limit: Limit = 50) -> list[dict[str, Any]]:
    cursor = cursors(AGENT_ID, after, before)
    if name is not None:  # one agent at most: the cursors apply to it as to a page of one
        return _page([agent_state(view) for view in service.agents(user, name=name)], after, before, limit)
    views = service.agents(user, after=cursor.get("after"), before=cursor.get("before"), limit=limit)
    return [agent_state(view) for view in views]


@router.get("/agents/{agent_id}")
def get_agent(agent_id: str, service: Svc, user: User) -> dict[str, Any]:
    return agent_state(service.agent(user, agent_ref(agent_id)))


@router.patch("/agents/{agent_id}")
async def update_agent(agent_id: str, body: UpdateAgent, service: Svc, user: User) -> Response:
    row = service.own_agent(user, agent_ref(agent_id))
    extra = sorted(k for k, v in (body.model_extra or {}).items() if v is not None)
    refuse(([f"renaming (name {body.name!r})"] if body.name not in (None, agent_name(user.id, row.name)) else [])
           + [f"field {k!r}" for k in extra])
    changes = {k: v for k, v in (("system", body.system), ("context_window", body.context_window_limit))
               if v is not None}
    return await finished(await run_in_threadpool(service.update_agent, user, row.id, changes),
                          agent_state)


@router.delete("/agents/{agent_id}")
def delete_agent(agent_id: str, service: Svc, user: User) -> dict[str, Any]:
    service.delete_agent(user, agent_ref(agent_id))
    return {}


@router.get("/agents/{agent_id}/export")
def export_agent(agent_id: str, service: Svc, user: User) -> Response:
    data = service.export_agent(user, agent_ref(agent_id))
    return Response(json.dumps(data, indent=2, ensure_ascii=False), media_type="application/json")


@router.post("/agents/import")
async def import_agent(request: Request, service: Svc, user: User,
                       skip_unsupported: bool = False) -> dict[str, Any]:
    """Letta's ``import_file``: a multipart ``file`` (``name``/``override_name`` rename its only agent,
    ``strip_messages`` leaves its history out); ``skip_unsupported`` (query or form field) imports what has a
    counterpart and leaves the rest."""
    limit = body_limit(service.max_bytes)
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise InputTooLarge(f"the upload's {int(declared):,} bytes are over this server's limit of {limit:,}")
    form = await request.form(max_files=1, max_fields=32)
    upload = form.get("file")
    if upload is None or isinstance(upload, str):
        raise InputError("send the agent file as the multipart field 'file'")
    data = await upload.read(limit + 1)
    if len(data) > limit:
        raise InputTooLarge(f"the agent file is over this server's limit of {limit:,} bytes")
    fields = {k: v for k, v in form.items() if isinstance(v, str)}
    name = fields.get("override_name") or fields.get("name") or None
    skip = skip_unsupported or fields.get("skip_unsupported", "").lower() == "true"
    if fields.get("strip_messages", "").lower() == "true":
        from ..agent.agentfile import read_agent_file

        doc = read_agent_file(data)
        for agent in doc["agents"]:
            agent["messages"], agent["in_context_message_ids"] = [], []
        data = json.dumps(doc).encode()
    # as Letta does, an import is a new agent: a name already taken gets a free one (NAME-2, ...)
    made = await run_in_threadpool(service.import_agent, user, data, name=name, skip_unsupported=skip, copy=True)
    return {"agent_ids": [letta_id(view) for view, _ in made],
            "pagemind": {"dropped": sorted({d for _, plan in made for d in plan.dropped}),
                         "notes": sorted({n for _, plan in made for n in plan.notes})}}


# --- core memory ----------------------------------------------------------------------------------------------
@router.get("/agents/{agent_id}/core-memory/blocks")
def list_blocks(agent_id: str, service: Svc, user: User, after: str | None = None, before: str | None = None,
                limit: Limit = 50) -> list[dict[str, Any]]:
    blocks = service.blocks(user, agent_ref(agent_id))
    return _page([block_state(agent_id, b) for b in blocks], after, before, limit)


@router.get("/agents/{agent_id}/core-memory/blocks/{label:path}")
def get_block(agent_id: str, label: str, service: Svc, user: User) -> dict[str, Any]:
    return block_state(agent_id, service.block(user, agent_ref(agent_id), label_from_letta(label)))


@router.patch("/agents/{agent_id}/core-memory/blocks/{label:path}")
async def update_block(agent_id: str, label: str, body: UpdateBlock, service: Svc, user: User) -> Response:
    extra = sorted(k for k, v in (body.model_extra or {}).items() if v is not None and k != "label")
    refuse([f"block field {k!r} (a block here is changed in its value, limit and description)" for k in extra])
    if body.value is None and body.limit is None and body.description is None:
        raise InputError("give the block's new value, limit or description")
    row, label = service.own_agent(user, agent_ref(agent_id)), label_from_letta(label)
    job = await run_in_threadpool(lambda: service.put_block(user, row.id, label, body.value, limit=body.limit,
                                                            description=body.description, new=False, via="letta"))
    return await finished(job, lambda block: block_state(agent_id, block))


# --- archival memory ------------------------------------------------------------------------------------------
def passage_state(agent_id: str, p: Passage) -> dict[str, Any]:
    return {"id": f"passage-{p.id}", "text": p.text, "created_at": iso_time(p.time),
            "archive_id": f"archive-{agent_id}", "tags": [], "metadata": {"summary": p.summary, "source": p.source},
            "embedding": None, "embedding_config": None}


@router.post("/agents/{agent_id}/archival-memory")
def insert_passage(agent_id: str, body: InsertPassage, service: Svc, user: User) -> list[dict[str, Any]]:
    refuse(["passage tags (pagemind's passages have a text, a gist and a source)"] if body.tags else [])
    added = service.insert_passage(user, agent_ref(agent_id), body.text, via="letta")
    return [passage_state(agent_id, added.passage)]  # a repeat: the passage already stored, as Letta's list


@router.get("/agents/{agent_id}/archival-memory")
def list_passages(agent_id: str, service: Svc, user: User, search: Annotated[str, Query(max_length=MAX_QUERY)] = "",
                  after: str | None = None, before: str | None = None, ascending: bool = True,
                  limit: Limit = 100) -> list[dict[str, Any]]:
    cursor = cursors(PASSAGE_ID, after, before)
    found = service.passages_after(user, agent_ref(agent_id), after=cursor.get("after"), before=cursor.get("before"),
                                   limit=limit, descending=not ascending, query=search)
    return [passage_state(agent_id, p) for p in found]


@router.delete("/agents/{agent_id}/archival-memory/{memory_id}")
async def delete_passage(agent_id: str, memory_id: str, service: Svc, user: User) -> Response:
    """Letta's passage delete: pagemind forgets it (kept apart, restorable: ``POST /v1/agents/{id}/archival/{n}/
    restore``), as every surface does."""
    found = PASSAGE_ID.match(memory_id)
    if found is None:
        raise NotFound(f"no passage {memory_id[:40]!r}")
    job = await run_in_threadpool(lambda: service.forget_passage(user, agent_ref(agent_id), int(found.group(1)),
                                                                 via="letta"))
    return await finished(job, lambda p: passage_state(agent_id, p))


@router.get("/agents/{agent_id}/archival-memory/search")
def search_passages(agent_id: str, service: Svc, user: User, query: Annotated[str, Query(max_length=MAX_QUERY)],
                    top_k: Annotated[int | None, Query(ge=1, le=MAX_LIST)] = None) -> dict[str, Any]:
    view = service.agent(user, agent_ref(agent_id))
    _, found = service.passages(user, view.row.id, query, 0, top_k or view.options.page_size)
    return {"count": len(found), "results": [{"id": f"passage-{p.id}", "content": p.text,
                                               "timestamp": iso_time(p.time), "tags": []} for p in found]}


# --- messages -------------------------------------------------------------------------------------------------
@router.get("/agents/{agent_id}/messages")
def list_messages(agent_id: str, service: Svc, user: User, after: str | None = None, before: str | None = None,
                  limit: Limit = 100, order: str = "desc", use_assistant_message: bool = True,
                  include_err: bool = True) -> list[dict[str, Any]]:
    """The agent's whole history as Letta messages, newest first unless ``order=asc``; ``after``/``before`` are
    message ids (cursors in that order)."""
    if order not in ("asc", "desc"):
        raise InputError("order is asc or desc")
    ref = service.own_agent(user, agent_ref(agent_id)).id
    total, _ = service.history(user, ref, 0, 0)
    cursor = cursors(MESSAGE_ID, after, before)
    lo, hi = 1, total  # seqs are 1 .. total
    if order == "asc":
        lo, hi = max(lo, cursor.get("after", 0) + 1), min(hi, cursor.get("before", total + 1) - 1)
    else:
        hi, lo = min(hi, cursor.get("after", total + 1) - 1), max(lo, cursor.get("before", 0) + 1)
    out: list[dict[str, Any]] = []
    while lo <= hi and len(out) < limit:
        n = min(limit, hi - lo + 1)
        start = lo if order == "asc" else hi - n + 1
        _, events = service.history(user, ref, start - 1, n)
        calls: dict[str, str] = {}
        rendered = [event_messages(e, assistant=use_assistant_message, call_of=calls) for e in events]
        groups = rendered if order == "asc" else rendered[::-1]
        for group in groups:
            out += [m for m in group if include_err or not m.get("is_err")]
        if order == "asc":
            lo = start + n
        else:
            hi = start - 1
    return out


@router.post("/agents/{agent_id}/messages")
async def send_message(agent_id: str, body: SendMessages, service: Svc, user: User) -> Response:
    if body.streaming:
        return await stream_message(agent_id, body, service, user)
    text = user_text(body)
    row = service.own_agent(user, agent_ref(agent_id))

    def then(agent: Any, result: Any) -> dict[str, Any]:
        calls: dict[str, str] = {}
        messages = [m for e in turn_events(agent)
                    for m in event_messages(e, assistant=body.use_assistant_message, call_of=calls)
                    if m["message_type"] in TURN_TYPES]
        return {"messages": messages, "result": result}

    begun = await run_in_threadpool(lambda: service.send(user, row.id, text, then=then))

    def shape(done: dict[str, Any]) -> dict[str, Any]:
        result = done["result"]
        data = result.as_dict()
        return {"messages": _filter(done["messages"], body.include_return_message_types),
                "stop_reason": {"message_type": "stop_reason", "stop_reason": STOP.get(result.stop_reason, "end_turn")},
                "usage": usage_of(result, begun.run.id),
                # pagemind's extension: what was recalled before the reply, what the reply rests on and how well
                # it is supported (None: no search)
                "pagemind": {"recalled": data["recalled"], "citations": data["citations"], "support": data["support"],
                             "confidence": data["confidence"]}}

    return await finished(begun.future, shape, begun.run.id)


@router.post("/agents/{agent_id}/messages/stream")
async def stream_message(agent_id: str, body: SendMessages, service: Svc, user: User) -> Response:
    text = user_text(body)
    row = service.own_agent(user, agent_ref(agent_id))
    queue: asyncio.Queue[list[dict[str, Any]] | None] = asyncio.Queue()
    loop = asyncio.get_running_loop()
    sent: set[str] = set()
    calls: dict[str, str] = {}

    def emit(agent: Any) -> None:  # in the agent's line, after each step: the turn's events not sent yet
        fresh = []
        for event in turn_events(agent):
            if f"message-{event.seq}" in sent:
                continue
            sent.add(f"message-{event.seq}")
            fresh += [m for m in event_messages(event, assistant=body.use_assistant_message, call_of=calls)
                      if m["message_type"] in TURN_TYPES]
        loop.call_soon_threadsafe(queue.put_nowait, _filter(fresh, body.include_return_message_types))

    def then(agent: Any, result: Any) -> Any:
        emit(agent)
        return result

    begun = await run_in_threadpool(lambda: service.send(user, row.id, text, on_step=emit, then=then))
    return StreamingResponse(_events(service, begun, queue, body.include_pings), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


async def _events(service: Any, begun: Any, queue: asyncio.Queue[list[dict[str, Any]] | None],
                  pings: bool) -> AsyncIterator[str]:
    future = asyncio.wrap_future(begun.future)
    future.add_done_callback(lambda _: queue.put_nowait(None))
    seq = 0
    while True:
        try:
            batch = await asyncio.wait_for(queue.get(), timeout=service.keepalive)
        except asyncio.TimeoutError:
            if pings:
                yield _sse({"message_type": "ping", "id": f"ping-{seq}", "date": _now(), "run_id": begun.run.id})
            else:
                yield ": keep-alive\n\n"
            continue
        if batch is None:
            break
        for message in batch:
            seq += 1
            yield _sse({**message, "run_id": begun.run.id, "seq_id": seq})
    try:
        result = await future
    except PagemindError as err:
        detail = json.loads(bytes(error_response(err, begun.run.id).body))
        yield _sse({"message_type": "error_message", "error_type": type(err).__name__, "message": str(err),
                    "detail": detail.get("detail"), "run_id": begun.run.id})
        yield _sse({"message_type": "stop_reason", "stop_reason": "error"})
        yield "data: [DONE]\n\n"
        return
    yield _sse({"message_type": "stop_reason", "stop_reason": STOP.get(result.stop_reason, "end_turn")})
    yield _sse(usage_of(result, begun.run.id))
    yield "data: [DONE]\n\n"


def _sse(data: dict[str, Any]) -> str:
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S")


# --- the rest of Letta's API ----------------------------------------------------------------------------------
@router.api_route("/{rest:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
def not_here(rest: str, request: Request) -> JSONResponse:
    """Every other Letta route: named, with what this surface serves."""
    return JSONResponse({"detail": f"{request.method} /v1/{rest} is not part of pagemind's Letta surface (agents, "
                         "core-memory blocks, archival memory, messages, export/import: docs/letta.md)",
                         "type": "NotImplemented"}, status_code=501, headers=NO_RETRY)
