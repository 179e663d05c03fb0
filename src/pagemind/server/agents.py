"""The agents part of the HTTP API: MemGPT agents of the key's user, their turns, core memory and archival memory.

A user's agent is stored under ``u<user id>.<name>`` (agent names are global in the store) and shown by its own
name. Turns and the edits that must not interleave with them go through the agent's line (:mod:`.workers`): one
at a time, in the order they arrived; ``wait=false`` answers 409 with the running run's id instead of queueing.

A send with an ``Idempotency-Key`` header is safe to retry, on this replica or another: its run's id is derived
from (user, agent, key, attempt), so the runs table finds an earlier attempt. A finished one is answered again
(nothing runs), a running one is waited for (or streamed), and after a failed or interrupted one the next attempt
runs the turn without storing the message a second time (``Agent.say(key=...)``).
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from ..limits import BLOCK_LABEL, LIST_PAGE, MAX_ID, MAX_QUERY
from ..runs import ENDED, RunExists
from ..store import Page
from . import shapes
from .routing import (
    AUTHED,
    EDGE,
    QUEUED,
    RUN_LINKS,
    RUNNING,
    STREAMS,
    LastEventId,
    ListLimit,
    Stream,
    Svc,
    User,
    Wait,
    errors,
    finished,
    links,
    paged,
    started,
    stream,
)
from .service import keyed_run_id
from .shapes import (
    AgentCreate,
    AgentUpdate,
    ArchivalInsert,
    BlockEdit,
    BlockRevert,
    BlockUpdate,
    LoadDocument,
    MemoryAudit,
    MessageRequest,
    added_json,
    agent_json,
    block_json,
    block_version_json,
    history_json,
    passage_json,
    run_json,
)

IDEMPOTENCY_KEY = r"^[\x21-\x7e]{1,200}$"  # printable ASCII without spaces, as HTTP header tokens

router = APIRouter(prefix="/v1/agents", tags=["agents"])
AgentId = Annotated[int, PathParam(ge=0, le=MAX_ID)]
OWNED = errors(*EDGE, 401, 404, 409)


AGENT_LINKS = links("id", "agent_id", "get_agent", "update_agent", "delete_agent", "send_message", "list_messages",
                    "list_blocks", "insert_passage", "list_passages", "load_document")


@router.post("", name="create_agent", status_code=201, responses={**errors(*EDGE, 401, 409), 201: AGENT_LINKS})
def create(body: AgentCreate, service: Svc, user: User) -> dict[str, Any]:
    """A new agent of yours (``options``: AgentOptions fields, e.g. ``max_steps``, ``archival_search``)."""
    return agent_json(service.create_agent(user, body))


@router.get("", name="list_agents", responses=AUTHED)
def list_(request: Request, response: Response, service: Svc, user: User,
          after: Annotated[int, Query(ge=0, le=MAX_ID, description="the page after this agent id (the Link "
                                      "header's cursor)")] = None,  # type: ignore[assignment]
          limit: ListLimit = LIST_PAGE) -> list[dict[str, Any]]:
    """Your agents by id, a page at a time, as summaries (GET an agent for its options and blocks)."""
    return paged(request, response, service.agent_list(user, after=after, limit=limit), shapes.agent_summary_json)


@router.get("/{agent_id}", name="get_agent", responses=AUTHED)
def get(agent_id: AgentId, service: Svc, user: User) -> dict[str, Any]:
    return agent_json(service.agent(user, agent_id))


@router.patch("/{agent_id}", name="update_agent", responses=OWNED)
async def update(agent_id: AgentId, body: AgentUpdate, service: Svc, user: User) -> Response:
    """Change some options; applied between turns."""
    return await finished(await run_in_threadpool(service.update_agent, user, agent_id, body.options), agent_json)


@router.delete("/{agent_id}", name="delete_agent", status_code=204, responses=OWNED)
def delete(agent_id: AgentId, service: Svc, user: User) -> Response:
    service.delete_agent(user, agent_id)
    return Response(status_code=204)


# --- turns ----------------------------------------------------------------------------------------------------
@router.post("/{agent_id}/messages", name="send_message",
             responses={**RUNNING, 200: {**STREAMS, **RUN_LINKS}, 202: QUEUED})
async def send(agent_id: AgentId, body: MessageRequest, service: Svc, user: User, wait: Wait = True,
               stream_: Stream = False,
               last_event_id: LastEventId = None,  # type: ignore[assignment]  # an optional header
               idempotency_key: Annotated[str, Header(alias="Idempotency-Key", pattern=IDEMPOTENCY_KEY)]
               = None,  # type: ignore[assignment]
               ) -> Response:
    """One user message: the turn (``messages`` sent to the user, every step, ``run_id``) when it is done, or
    its steps as server-sent events (``stream=true``). A turn already running: this one waits its turn in
    order, or with ``wait=false`` the answer is 409 with the running run's id (else 202 with the run). A message
    that cannot fit the agent's window: 413, nothing stored. With an ``Idempotency-Key`` header a retried send
    runs its turn at most once (see the module)."""
    key = idempotency_key

    def turn(run_id: str | None) -> Any:
        return lambda: service.send(user, agent_id, body.message, run_id=run_id, key=key, wait=wait)

    def shape(run: Any, result: Any) -> dict[str, Any]:
        return {"run_id": run.id, **result.as_dict()}

    while key is not None:
        latest, attempt = await run_in_threadpool(service.attempts, user, agent_id, key, body.message)
        if latest is None or latest.status in ("failed", "cancelled"):
            try:
                return await started(service, turn(keyed_run_id(user.id, agent_id, key, attempt)), wait, stream_,
                                     last_event_id, shape)
            except RunExists:  # another replica started this attempt first: look again
                await asyncio.sleep(0.05)
                continue
        if stream_:
            return stream(service, latest.id, last_event_id)
        if latest.status == "done":
            replay = {"run_id": latest.id, **(latest.result or {})} if wait else run_json(latest)
            return JSONResponse(replay, headers={"Idempotent-Replayed": "true"})
        if not wait:
            return JSONResponse(run_json(latest), status_code=202, headers={"Idempotent-Replayed": "true"})
        while (now := await run_in_threadpool(service.find_run, user, latest.id)) is not None \
                and now.status not in ENDED:
            await asyncio.sleep(0.1)
    return await started(service, turn(None), wait, stream_, last_event_id, shape)


@router.get("/{agent_id}/messages", name="list_messages", responses=AUTHED)
def messages(agent_id: AgentId, service: Svc, user: User, offset: Annotated[int, Query(ge=0, le=MAX_ID)] = 0,
             limit: ListLimit = 50,
             after: Annotated[int, Query(ge=-1, le=MAX_ID, description="only the messages after this seq (the "
                                         "`next` of the page before)")] = None,  # type: ignore[assignment]
             ) -> dict[str, Any]:
    """The agent's whole history (recall storage), oldest first, one page: by ``offset``, or by cursor (``after``,
    the page's ``next``; ``total`` then counts the messages after it)."""
    total, events = service.history(user, agent_id, offset, limit, after)
    items = [{"seq": e.seq, "kind": e.kind, "role": e.role, "time": e.time, "in_context": e.in_context,
              "payload": e.payload, "text": e.describe()} for e in events]
    more = events and offset + len(events) < total
    return {"total": total, "offset": offset, "limit": limit, "messages": items,
            "next": events[-1].seq if more else None}


# --- core memory ----------------------------------------------------------------------------------------------
@router.get("/{agent_id}/memory/blocks", name="list_blocks", responses=AUTHED)
def blocks(agent_id: AgentId, service: Svc, user: User) -> list[dict[str, Any]]:
    return [block_json(b) for b in service.blocks(user, agent_id)]


@router.put("/{agent_id}/memory/blocks/{label}", name="put_block", responses=OWNED)
async def put_block(agent_id: AgentId, label: Annotated[str, PathParam(pattern=BLOCK_LABEL)], body: BlockUpdate,
                    service: Svc, user: User) -> Response:
    """Set a core-memory block's value, limit and/or description (or add the block); applied between turns, as
    the block's next version."""
    return await finished(await run_in_threadpool(lambda: service.put_block(
        user, agent_id, label, body.value, limit=body.limit, description=body.description)), block_json)


@router.get("/{agent_id}/memory/history", name="memory_history", responses=AUTHED)
def memory_history(agent_id: AgentId, service: Svc, user: User, label: Annotated[str | None, Query(
                       pattern=BLOCK_LABEL)] = None, before: Annotated[int | None, Query(ge=1, le=MAX_ID)] = None,
                   limit: ListLimit = 50) -> dict[str, Any]:
    """Core memory's history, newest first: every version of every block (or of ``label``'s; ``before``: older
    than that version), each with what it made the block, its cause (the agent's step and function, or the surface
    and user), its time and its diff from the version before it."""
    return {"versions": history_json(service.block_history(user, agent_id, label, before=before, limit=limit))}


@router.get("/{agent_id}/memory/blocks/{label}/versions/{version}", name="block_version", responses=OWNED)
def block_version(agent_id: AgentId, label: Annotated[str, PathParam(pattern=BLOCK_LABEL)],
                  version: Annotated[int, PathParam(ge=1, le=MAX_ID)], service: Svc, user: User) -> dict[str, Any]:
    """One version of a block: what it held then, its cause and time."""
    return block_version_json(service.block_version(user, agent_id, label, version))


@router.post("/{agent_id}/memory/blocks/{label}/revert", name="revert_block", responses=OWNED)
async def revert_block(agent_id: AgentId, label: Annotated[str, PathParam(pattern=BLOCK_LABEL)], body: BlockRevert,
                       service: Svc, user: User) -> Response:
    """The block holds what ``version`` held again, as a new version (nothing is deleted: a revert can be
    reverted); 422 when that value no longer fits the block's limit."""
    future = await run_in_threadpool(service.revert_block, user, agent_id, label, body.version)
    return await finished(future, lambda made: {**block_json(made[0]), "version": made[1]})


@router.post("/{agent_id}/memory/blocks/{label}/edit", name="edit_block", responses=OWNED)
async def edit_block(agent_id: AgentId, label: Annotated[str, PathParam(pattern=BLOCK_LABEL)], body: BlockEdit,
                     service: Svc, user: User) -> Response:
    """Edit a core-memory block as the agent's own functions do: ``append`` a line, or replace ``old_content``
    (exactly as it is in the block) by ``new_content``; applied between turns."""
    return await finished(await run_in_threadpool(lambda: service.edit_block(
        user, agent_id, label, append=body.append, old=body.old_content, new=body.new_content)), block_json)


# --- archival memory ------------------------------------------------------------------------------------------
@router.post("/{agent_id}/archival", name="insert_passage", status_code=201, responses=AUTHED)
def archival_insert(agent_id: AgentId, body: ArchivalInsert, service: Svc, user: User) -> Response:
    """Store a passage, unless it repeats one already stored (200, ``stored`` false, the passage it repeats, which
    records this time and source); ``replaces``: the earlier fact it supersedes (kept, marked superseded)."""
    added = service.insert_passage(user, agent_id, body.text, body.replaces)
    return JSONResponse(added_json(added), status_code=201 if added.stored else 200)


@router.delete("/{agent_id}/archival/{passage_id}", name="forget_passage", responses=OWNED)
async def forget_passage(agent_id: AgentId, passage_id: Annotated[int, PathParam(ge=1, le=MAX_ID)], service: Svc,
                         user: User) -> Response:
    """Forget a passage (a wrong fact, junk): search, listing and the agent's own search no longer find it; it is
    kept apart with who forgot it and when (``pagemind agent memory forgotten``), and ``POST …/restore`` gives it
    back under its own id. A passage it had superseded holds again until then. The passage forgotten."""
    future = await run_in_threadpool(service.forget_passage, user, agent_id, passage_id)
    return await finished(future, passage_json)


@router.post("/{agent_id}/archival/{passage_id}/restore", name="restore_passage", responses=OWNED)
async def restore_passage(agent_id: AgentId, passage_id: Annotated[int, PathParam(ge=1, le=MAX_ID)], service: Svc,
                          user: User) -> Response:
    """Give a forgotten passage back to archival memory under its own id (superseding again what it superseded)."""
    future = await run_in_threadpool(service.restore_passage, user, agent_id, passage_id)
    return await finished(future, passage_json)


@router.post("/{agent_id}/memory/audit", name="audit_memory", responses=AUTHED)
async def audit_memory(agent_id: AgentId, body: MemoryAudit, service: Svc, user: User) -> Response:
    """The archive's repeats (exact, and near: the embedded encoder and the word rule), junk passages (empty, one
    word repeated, function boilerplate) and the share of each, and how many passages are superseded; with
    ``fold``, the repeats folded into the earliest of each group (its time and every source kept)."""
    future = await run_in_threadpool(service.audit_memory, user, agent_id, body.fold)
    return await finished(future, lambda done: {**done[0].as_dict(), "folded": done[1]})


@router.post("/{agent_id}/memory/consolidate", name="consolidate_memory", responses=AUTHED)
async def consolidate_memory(agent_id: AgentId, service: Svc, user: User) -> Response:
    """One consolidation pass over recall since the last (between sessions): the model proposes a dated summary,
    lasting facts and lines for the ``human`` block from each window of messages; facts and summaries are stored in
    archival memory (repeats are not), lines as a new block version (revert it to undo). What was read and written."""
    future = await run_in_threadpool(service.consolidate_memory, user, agent_id)
    return await finished(future, lambda done: done.as_dict())


@router.get("/{agent_id}/archival", name="list_passages", responses=AUTHED)
def archival(agent_id: AgentId, service: Svc, user: User, query: Annotated[str, Query(max_length=MAX_QUERY)] = "",
             offset: Annotated[int, Query(ge=0, le=MAX_ID)] = 0,
             limit: ListLimit = 20,
             after: Annotated[int, Query(ge=0, le=MAX_ID, description="only the passages after this one: by id, or "
                                         "after it in the ranking for `query` (the `next` of the page before)")]
             = None,  # type: ignore[assignment]
             ) -> dict[str, Any]:
    """Archival passages: all by id, or those matching ``query`` best first (the agent's own search), one page by
    ``offset`` or by cursor (``after``, the page's ``next``: at most ``limit`` passages read, ``total`` not counted
    then); ``next`` is null on the last page."""
    if after is None:
        total, found = service.passages(user, agent_id, query, offset, limit)
        more = bool(found) and offset + len(found) < total
        return {"total": total, "offset": offset, "limit": limit, "passages": [passage_json(p) for p in found],
                "next": found[-1].id if more else None}
    page = Page.read(lambda n: service.passages_after(user, agent_id, after=after, limit=n, query=query), limit,
                     lambda p: p.id)
    return {"total": None, "offset": None, "limit": limit, "passages": [passage_json(p) for p in page],
            "next": page.next}


@router.post("/{agent_id}/documents", name="load_document", status_code=201, responses=OWNED)
async def load(agent_id: AgentId, body: LoadDocument, service: Svc, user: User) -> Response:
    """Load one of your documents into the agent's archival memory, in passages of ``words`` words; the agent is
    told with a system alert. Applied between turns. A ``document_id`` that is not one of yours: 422."""
    return await finished(await run_in_threadpool(service.load_document, user, agent_id, body),
                          shapes.loaded_json, status=201)
