"""The agents part of the HTTP API: MemGPT agents of the key's user, their turns, core memory and archival memory.

A user's agent is stored under ``u<user id>.<name>`` (agent names are global in the store) and shown by its own
name. Turns and the edits that must not interleave with them go through the agent's line (:mod:`.workers`):
one at a time, in the order they arrived; ``wait=false`` answers 409 with the running run's id instead of
queueing.

A send with an ``Idempotency-Key`` header is safe to retry, on this replica or another: its run's id is derived
from (user, agent, key, attempt), so the runs table finds an earlier attempt. A finished one is answered again
(nothing runs), a running one is waited for (or streamed), and after a failed or interrupted one the next attempt
runs the turn without storing the message a second time (``Agent.say(key=...)``).
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from ..errors import ConfigError, InputError, NotFound
from ..runs import ENDED, RunExists
from ..store.base import AgentRow, RunRow, UserRow
from ..users import agent_key, agent_name
from .sse import run_json
from .workers import AgentBusy

if TYPE_CHECKING:
    from .app import Service

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,47}$")
EVENT_KINDS = ("user_message", "step", "function_result", "heartbeat", "system_alert", "summary")
IDEMPOTENCY_KEY = re.compile(r"^[\x21-\x7e]{1,200}$")  # printable ASCII without spaces, as HTTP header tokens


def keyed_run_id(user_id: int, agent_id: int, key: str, attempt: int) -> str:
    """The id of attempt ``attempt`` (1, 2, ...) of the send with idempotency key ``key``."""
    digest = hashlib.sha256(f"{user_id}\0{agent_id}\0{key}".encode()).hexdigest()[:16]
    return f"run_{digest}" + (f"-{attempt}" if attempt > 1 else "")


class AgentCreate(BaseModel):
    name: str
    persona: str | None = None
    human: str | None = None
    options: dict[str, Any] = Field(default_factory=dict, description="AgentOptions fields")


class AgentUpdate(BaseModel):
    options: dict[str, Any] = Field(default_factory=dict, description="AgentOptions fields to change")


class MessageRequest(BaseModel):
    message: str = Field(min_length=1)


class BlockUpdate(BaseModel):
    value: str


class ArchivalInsert(BaseModel):
    text: str = Field(min_length=1)


class LoadDocument(BaseModel):
    document_id: str
    words: int = Field(300, ge=20, le=5000, description="words per passage")


def checked_options(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """``changes`` to agent options checked by AgentOptions (unknown names and refused values: 422)."""
    from ..agent.memory import AgentOptions

    try:
        AgentOptions.from_dict({**base, **{k: v for k, v in changes.items() if v is not None}})
    except (TypeError, ValueError) as err:
        raise ConfigError(f"agent options: {err}") from None
    return changes


def queue_turn(service: "Service", agent_id: int, name: str, message: str, user_id: int, *,
               run_id: str | None = None, key: str | None = None, wait: bool = True,
               progress: Any = None) -> tuple[RunRow, Future]:
    """A user message's turn at the end of the agent's line (turns of one agent run one at a time, in arrival
    order, whether they came over HTTP or MCP): its run, and the future of its ``TurnResult``. The run is made
    under the line's lock, so a refused send (``wait=False``, :class:`AgentBusy`) creates none."""
    pm, made = service.pm, []

    def turn() -> tuple[str, Any]:
        run = pm.runs.create("turn", str(agent_id), method="memgpt", user_id=user_id, run_id=run_id,
                             request={"agent": agent_name(user_id, name), "message": message,
                                      **({"idempotency_key": key} if key is not None else {})})
        made.append(run)
        return run.id, lambda: pm.send(name, message, run=run, user_id=user_id, key=key, progress=progress)

    _, future = service.workers.enqueue(agent_id, turn, wait=wait)
    return made[0], future


def agents_router(service: "Service") -> APIRouter:
    from .app import User, finished, stream

    pm, store = service.pm, service.store
    router = APIRouter(prefix="/v1/agents", tags=["agents"])

    def own(agent_id: int, user: UserRow) -> AgentRow:
        row = store.get_agent_by_id(agent_id)
        if row is None or store.agent_owner(agent_id) != user.id:
            raise NotFound(f"no agent {agent_id}")
        return row

    def agent_json(row: AgentRow, user: UserRow) -> dict[str, Any]:
        agent = pm.agent(row.name, llm=False)
        busy, running = service.workers.busy(row.id)
        return {"id": row.id, "name": agent_name(user.id, row.name), "created": row.created,
                "options": agent.options.as_dict(),
                "blocks": [{"label": b.label, "value": b.value, "limit": b.limit} for b in agent.blocks()],
                "counts": agent.counts(), "state": row.state, "busy": busy, "running_run": running}

    def in_line(row: AgentRow, job: Any) -> Future:
        """A job without a run (an edit) in the agent's line."""
        return service.workers.enqueue(row.id, lambda: (None, job))[1]

    @router.post("", status_code=201)
    def create(body: AgentCreate, user: UserRow = User) -> dict[str, Any]:
        """A new agent of yours (``options``: AgentOptions fields, e.g. ``max_steps``, ``archival_search``)."""
        if not NAME.match(body.name):
            raise ConfigError(f"agent name {body.name!r}: use letters, digits, '_', '.', '-' (at most 48)")
        from ..agent.memory import AgentOptions

        options = checked_options(AgentOptions().as_dict(), body.options)
        agent = pm.create_agent(agent_key(user.id, body.name), persona=body.persona, human=body.human,
                                options=options, user_id=user.id, display_name=body.name)
        return agent_json(own(agent.id, user), user)

    @router.get("")
    def list_(user: UserRow = User) -> list[dict[str, Any]]:
        return [agent_json(row, user) for row in store.user_agents(user.id)]

    @router.get("/{agent_id}")
    def get(agent_id: int, user: UserRow = User) -> dict[str, Any]:
        return agent_json(own(agent_id, user), user)

    @router.patch("/{agent_id}")
    async def update(agent_id: int, body: AgentUpdate, user: UserRow = User) -> Response:
        """Change some options; applied between turns."""
        row = await run_in_threadpool(own, agent_id, user)

        def job() -> dict[str, Any]:
            agent = pm.agent(row.name, llm=False)
            changes = checked_options(agent.options.as_dict(), body.options)
            agent.store.save_options(agent.id, agent.options.updated(**changes))
            return agent_json(own(agent_id, user), user)

        return await finished(service, None, in_line(row, job), lambda result: result)

    @router.delete("/{agent_id}", status_code=204)
    def delete(agent_id: int, user: UserRow = User) -> Response:
        row = own(agent_id, user)
        busy, running = service.workers.busy(agent_id)
        if busy:
            raise AgentBusy("the agent is in a turn; delete it when the turn is over", running)
        from ..agent import AgentStore

        AgentStore(store).delete_agent(row.name)
        return Response(status_code=204)

    # --- turns ------------------------------------------------------------------------------------
    @router.post("/{agent_id}/messages")
    async def send(agent_id: int, body: MessageRequest, request: Request, wait: bool = True,
                   stream_: bool = Query(False, alias="stream"), user: UserRow = User) -> Response:
        """One user message: the turn (``messages`` sent to the user, every step, ``run_id``) when it is done, or
        its steps as server-sent events (``stream=true``). A turn already running: this one waits its turn in
        order, or with ``wait=false`` the answer is 409 with the running run's id (else 202 with the run).
        With an ``Idempotency-Key`` header a retried send runs its turn at most once (see the module)."""
        key = request.headers.get("idempotency-key")
        if key is not None and not IDEMPOTENCY_KEY.match(key):
            raise InputError("Idempotency-Key: 1 to 200 printable ASCII characters without spaces")

        def attempts() -> tuple[RunRow | None, int]:
            """The latest attempt of this key (an interrupted one reported failed) and the next attempt's number."""
            latest, attempt = None, 1
            while (found := pm.runs.get(keyed_run_id(user.id, agent_id, key, attempt), user.id)) is not None:
                if found.request.get("message") != body.message:
                    raise InputError("this Idempotency-Key was used for another message")
                latest, attempt = found, attempt + 1
            return latest, attempt

        run_id = None
        while key is not None:
            latest, attempt = await run_in_threadpool(attempts)
            if latest is None or latest.status in ("failed", "cancelled"):
                run_id = keyed_run_id(user.id, agent_id, key, attempt)
                try:
                    return await turn_response(run_id, wait, stream_, request, user, agent_id, body, key)
                except RunExists:  # another replica started this attempt first: look again
                    await asyncio.sleep(0.05)
                    continue
            if stream_:
                return stream(service, latest.id, request)
            if latest.status == "done":
                replay = {"run_id": latest.id, **(latest.result or {})} if wait else run_json(latest)
                return JSONResponse(replay, headers={"Idempotent-Replayed": "true"})
            if not wait:
                return JSONResponse(run_json(latest), status_code=202, headers={"Idempotent-Replayed": "true"})
            while (now := await run_in_threadpool(pm.runs.get, latest.id, user.id)) is not None \
                    and now.status not in ENDED:
                await asyncio.sleep(0.1)
        return await turn_response(None, wait, stream_, request, user, agent_id, body, None)

    async def turn_response(run_id: str | None, wait: bool, stream_: bool, request: Request, user: UserRow,
                            agent_id: int, body: MessageRequest, key: str | None) -> Response:
        def prepare() -> tuple[RunRow, Future]:
            row = own(agent_id, user)
            if not wait:  # a turn of this agent in another process holds its lock in the store
                holder = pm.agent(row.name, llm=False).store.lock_holder(agent_id)
                if holder is not None and not service.workers.busy(agent_id)[0]:
                    found = pm.runs.list(user.id, kind="turn", target=str(agent_id), status="running", limit=1)
                    raise AgentBusy("the agent is in a turn; send again later, or without wait=false to queue",
                                    found[0].id if found else None)
            return queue_turn(service, row.id, row.name, body.message, user.id, run_id=run_id, key=key, wait=wait)

        run, future = await run_in_threadpool(prepare)
        if stream_:
            return stream(service, run.id, request)
        if not wait:
            return JSONResponse(run_json(run), status_code=202)
        return await finished(service, run, future, lambda turn: {"run_id": run.id, **turn.as_dict()})

    @router.get("/{agent_id}/messages")
    def messages(agent_id: int, offset: int = Query(0, ge=0), limit: int = Query(50, ge=1, le=500),
                 user: UserRow = User) -> dict[str, Any]:
        """The agent's whole history (recall storage), oldest first, one page."""
        own(agent_id, user)
        from ..agent.memory import Event

        total, rows = store.search_agent_events(agent_id, EVENT_KINDS, offset=offset, limit=limit)
        items = []
        for r in rows:
            event = Event(r.kind, r.payload, r.created, r.seq, r.in_context)
            items.append({"seq": r.seq, "kind": r.kind, "role": event.role, "time": r.created,
                          "in_context": r.in_context, "payload": r.payload, "text": event.describe()})
        return {"total": total, "offset": offset, "limit": limit, "messages": items}

    # --- core memory ------------------------------------------------------------------------------
    @router.get("/{agent_id}/memory/blocks")
    def blocks(agent_id: int, user: UserRow = User) -> list[dict[str, Any]]:
        own(agent_id, user)
        return [{"label": b.label, "value": b.value, "limit": b.limit} for b in store.agent_blocks(agent_id)]

    @router.put("/{agent_id}/memory/blocks/{label}")
    async def put_block(agent_id: int, label: str, body: BlockUpdate, user: UserRow = User) -> Response:
        """Replace a core-memory block's value (or add the block); applied between turns."""
        from ..agent.core import LABEL
        from ..agent.memory import Block

        row = await run_in_threadpool(own, agent_id, user)
        if not LABEL.match(label):
            raise ConfigError(f"block label {label!r}: use lowercase letters, digits and '_'")

        def job() -> dict[str, Any]:
            agent = pm.agent(row.name, llm=False)
            limit = next((b.limit for b in agent.blocks() if b.label == label), agent.options.block_limit)
            if len(body.value) > limit:
                raise ConfigError(f"block {label}: {len(body.value)} characters exceed its limit of {limit}")
            with agent.lock.held():
                agent.store.put_block(agent.id, Block(label, body.value, limit))
            return {"label": label, "value": body.value, "limit": limit}

        return await finished(service, None, in_line(row, job), lambda result: result)

    # --- archival memory --------------------------------------------------------------------------
    @router.post("/{agent_id}/archival", status_code=201)
    def archival_insert(agent_id: int, body: ArchivalInsert, user: UserRow = User) -> dict[str, Any]:
        row = own(agent_id, user)
        agent = pm.agent(row.name, llm=False)
        ids = agent.archive.insert([body.text], agent.now(), source="api")
        return {"ids": ids}

    @router.get("/{agent_id}/archival")
    def archival(agent_id: int, query: str = "", offset: int = Query(0, ge=0), limit: int = Query(20, ge=1, le=500),
                 user: UserRow = User) -> dict[str, Any]:
        """Archival passages: all by id, or those matching ``query`` best first (the agent's own search)."""
        row = own(agent_id, user)
        agent = pm.agent(row.name, llm=False)
        if query:
            total, ranked = agent.archive.ranked(query, offset + limit)
            found = agent.store.passages(agent.id, ranked[offset:offset + limit])
        else:
            total, found = agent.store.search_passages_text(agent.id, "", offset, limit)
        return {"total": total, "offset": offset, "limit": limit,
                "passages": [{"id": p.id, "text": p.text, "summary": p.summary, "source": p.source, "time": p.time}
                             for p in found]}

    @router.post("/{agent_id}/documents", status_code=201)
    async def load(agent_id: int, body: LoadDocument, user: UserRow = User) -> Response:
        """Load one of your documents into the agent's archival memory, in passages of ``words`` words; the agent
        is told with a system alert. Applied between turns."""
        from ..agent import load_into_agent

        row = await run_in_threadpool(own, agent_id, user)
        document = await run_in_threadpool(lambda: pm.open_document(body.document_id, user_id=user.id))

        def job() -> dict[str, Any]:
            loaded = load_into_agent(pm.agent(row.name, llm=False), document, words=body.words)
            return {"name": loaded.name, "words": loaded.words, "passages": loaded.passages}

        response = await finished(service, None, in_line(row, job), lambda result: result)
        if response.status_code == 200:
            response.status_code = 201
        return response

    return router
