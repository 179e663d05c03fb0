"""A user's agents."""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from ...agent.locks import AgentBusy
from ...errors import InputError, NotFound, PagemindError
from ...limits import LIST_PAGE
from ...store import Page
from ...users import agent_key, agent_name
from ..shapes import AgentCreate, LoadDocument
from ..views import AgentSummary, AgentView, Started
from .base import Progress, ServiceBase

if TYPE_CHECKING:
    from datetime import datetime

    from ...agent.archive import Added
    from ...agent.consolidate import Consolidation
    from ...agent.documents import LoadedDocument
    from ...agent.memory import Block, BlockVersion, Event, Passage, SearchPage
    from ...store import (
        AgentRow,
        UserRow,
    )


log = logging.getLogger("pagemind")

# bytes: a longer message is checked against the agent's window before its run exists; a shorter one by the turn
# itself (Agent.say refuses it before storing it), which spares every ordinary send loading the agent twice
SHORT_MESSAGE = 1024


class AgentOps(ServiceBase):
    """A user's agents: created, listed, edited in their line, their turns, memory and files."""

    def agent_view(self, user: UserRow, row: AgentRow) -> AgentView:
        agent = self.pm.agent(row.name, llm=False)
        busy, running = self.workers.busy(row.id)
        return AgentView(row, agent_name(user.id, row.name), agent.options, tuple(agent.blocks()), agent.counts(),
                         busy, running, self.model)

    def agent(self, user: UserRow, ref: int | str) -> AgentView:
        return self.agent_view(user, self.own_agent(user, ref))

    def create_agent(self, user: UserRow, body: AgentCreate) -> AgentView:
        return self.agent_view(user, self.new_agent(user, body.name, persona=body.persona, human=body.human,
                                                    options=body.options))

    def new_agent(self, user: UserRow, name: str, *, persona: str | None = None, human: str | None = None,
                  options: dict[str, Any] | None = None, blocks: dict[str, str] | None = None,
                  limits: dict[str, int] | None = None, descriptions: dict[str, str] | None = None) -> AgentRow:
        """A new agent of the user's (its row): ``options`` checked as AgentOptions fields; ``blocks``, ``limits``
        and ``descriptions``: more core-memory blocks, a block's own character limit and what it is for, by
        label."""
        from ...agent import AgentExists
        from ...agent.memory import AgentOptions

        checked = AgentOptions().with_json(options or {})
        try:
            agent = self.pm.create_agent(agent_key(user.id, name), persona=persona, human=human, options=checked,
                                         user_id=user.id, display_name=name, blocks=blocks, limits=limits,
                                         descriptions=descriptions)
        except AgentExists:
            raise AgentNameTaken(f"you already have an agent named {name!r}") from None
        return self.own_agent(user, agent.id)

    def agent_list(self, user: UserRow, *, after: int | None = None, limit: int = LIST_PAGE) -> Page[AgentSummary]:
        """One page of the user's agents by id (those after id ``after``), as summaries: counts from the store,
        no agent loaded."""
        from ...agent.store import AgentStore

        counted = AgentStore(self.pm.store)
        return self.agent_rows(user, after=after, limit=limit).map(lambda row: AgentSummary(
            row, agent_name(user.id, row.name), counted.counts(row.id), *self.workers.busy(row.id)))

    def agent_rows(self, user: UserRow, *, after: int | None = None, limit: int = LIST_PAGE) -> Page[AgentRow]:
        """One page of the user's agents' rows by id (those after id ``after``): names, no memory read."""
        return Page.read(lambda n: self.pm.agents(user.id, after=after, limit=n), limit, lambda r: r.id)

    def agents(self, user: UserRow, *, name: str | None = None, after: int | None = None, before: int | None = None,
               limit: int | None = None) -> list[AgentView]:
        """The user's agents by id (``name``: only the one the user calls so); one page by id cursor when asked:
        only that page's agents are read."""
        if name is not None:
            try:
                return [self.agent_view(user, self.own_agent(user, name))]
            except NotFound:
                return []
        return [self.agent_view(user, row) for row in self.pm.agents(user.id, after=after, before=before, limit=limit)]

    def in_line(self, row: AgentRow, job: Callable[[], Any]) -> Future:
        """A job without a run (an edit) in the agent's line, so it never interleaves with a turn."""
        return self.workers.enqueue(row.id, lambda: (None, job))[1]

    def update_agent(self, user: UserRow, ref: int | str, changes: dict[str, Any]) -> Future:
        row = self.own_agent(user, ref)

        def job() -> AgentView:
            agent = self.pm.agent(row.name, llm=False)
            agent.set_options(agent.options.with_json(changes))
            return self.agent(user, row.id)

        return self.in_line(row, job)

    def delete_agent(self, user: UserRow, ref: int | str) -> None:
        row = self.own_agent(user, ref)
        busy, running = self.workers.busy(row.id)
        if busy:
            raise AgentBusy("the agent is in a turn; delete it when the turn is over", running)
        self.pm.delete_agent(row.name)

    def send(self, user: UserRow, ref: int | str, message: str, *, run_id: str | None = None, key: str | None = None,
             wait: bool = True, progress: Progress | None = None, on_step: Callable[[Any], None] | None = None,
             then: Callable[[Any, Any], Any] | None = None) -> Started:
        """A user message's turn at the end of the agent's line (turns of one agent run one at a time, in arrival
        order, whichever transport sent them). A message that cannot fit the agent's window is refused here,
        before a run or the message is stored; so is a ``wait=False`` send to a busy agent (:class:`AgentBusy`).
        ``on_step(agent)`` runs after each step, ``then(agent, result)`` after the turn, both still in the agent's
        line (what they read of the agent is this turn's); the run's result is ``then``'s."""
        row = self.own_agent(user, ref)
        # wait=False: a live turn of this agent in another process holds its lock (a dead holder's lock is free)
        if not wait and not self.workers.busy(row.id)[0] and self.pm.agent(row.name, llm=False).in_turn():
            found = self.pm.runs.list(user.id, kind="turn", target=str(row.id), status="running", limit=1)
            raise AgentBusy("the agent is in a turn; send again later, or without wait=false to queue",
                            found[0].id if found else None)
        if len(message.encode("utf-8")) > SHORT_MESSAGE:  # only a long message can be over the window by itself
            self.pm.agent(row.name).check_message(message)
        made: list[Any] = []

        def turn() -> tuple[str, Callable[[], Any]]:
            run = self.pm.runs.create("turn", str(row.id), method="memgpt", user_id=user.id, run_id=run_id,
                                      request={"agent": agent_name(user.id, row.name), "message": message,
                                               **({"idempotency_key": key} if key is not None else {})})
            made.append(run)
            def job() -> Any:
                agent = self.pm.agent(row.name, user_id=user.id)
                result = self.pm.send(agent, message, run=run, user_id=user.id, key=key, progress=progress,
                                      on_step=on_step if on_step is None else (lambda step: on_step(agent)))
                return result if then is None else then(agent, result)  # still in the agent's line

            return run.id, job

        _, future = self.workers.enqueue(row.id, turn, wait=wait)
        return Started(made[0], future)

    def export_agent(self, user: UserRow, ref: int | str) -> dict[str, Any]:
        """The agent as an Agent File (``.af``), under the user's own name for it."""
        row = self.own_agent(user, ref)
        return self.pm.export_agent(row.name, shown_as=agent_name(user.id, row.name), model=self.model)

    def import_agent(self, user: UserRow, data: bytes | str | dict[str, Any], *, name: str | None = None,
                     skip_unsupported: bool = False, copy: bool = False) -> list[tuple[AgentView, Any]]:
        """The agents of an Agent File, made the user's: each with its plan (what was left out, ``dropped``, and
        read but not kept, ``notes``); ``copy``: a taken name gets a free one (:meth:`Pagemind.import_agent`)."""
        plans = self.pm.import_agent(data, name=name, skip_unsupported=skip_unsupported, user_id=user.id, copy=copy)
        return [(self.agent(user, plan.name), plan) for plan in plans]

    def attempts(self, user: UserRow, agent_id: int, key: str, message: str) -> tuple[Any, int]:
        """The latest attempt of an idempotent send (an interrupted one reported failed) and the next attempt's
        number; the same key with another message is an :class:`InputError`."""
        latest, attempt = None, 1
        while (found := self.pm.runs.get(keyed_run_id(user.id, agent_id, key, attempt), user.id)) is not None:
            if found.request.get("message") != message:
                raise InputError("this Idempotency-Key was used for another message")
            latest, attempt = found, attempt + 1
        return latest, attempt

    def history(self, user: UserRow, ref: int | str, offset: int = 0, limit: int = 50,
                after: int | None = None) -> tuple[int, list[Event]]:
        """(every event in the agent's recall — after seq ``after`` when given —, the events ``offset`` ..
        ``offset + limit`` of them), oldest first."""
        row = self.own_agent(user, ref)
        return self.pm.agent(row.name, llm=False).history(offset, limit, after)

    def blocks(self, user: UserRow, ref: int | str) -> list[Block]:
        row = self.own_agent(user, ref)
        return self.pm.agent(row.name, llm=False).blocks()

    def block(self, user: UserRow, ref: int | str, label: str) -> Block:
        """One core-memory block; :class:`NotFound` when the agent has none of that label."""
        found = next((b for b in self.blocks(user, ref) if b.label == label), None)
        if found is None:
            raise NotFound(f"the agent has no block {label[:40]!r}")
        return found

    def put_block(self, user: UserRow, ref: int | str, label: str, value: str | None, *, limit: int | None = None,
                  description: str | None = None, new: bool = True, via: str = "api") -> Future:
        """Set a block's value, limit and/or description (None: as it is; ``new``: or add the block), in the
        agent's line, as the label's next version caused by ``via`` (the surface) and the user; the block."""
        row = self.own_agent(user, ref)
        if not new:
            self.block(user, row.id, label)

        def job() -> Any:
            agent = self.pm.agent(row.name, llm=False)
            current = next((b.value for b in agent.blocks() if b.label == label), "")
            return agent.set_block(label, current if value is None else value, limit, description=description,
                                   cause=f"{via}: {user.name}")

        return self.in_line(row, job)

    def edit_block(self, user: UserRow, ref: int | str, label: str, *, append: str | None = None,
                   old: str | None = None, new: str | None = None, via: str = "api") -> Future:
        """Core memory edited as the agent's own functions edit it: ``append`` a line to a block, or replace ``old``
        (exactly as it is in the block) by ``new``; in the agent's line, so it never interleaves with a turn; a
        version caused by ``via`` and the user."""
        if (append is None) == (old is None):
            raise InputError("give append (a line to add) or old_content with new_content (a replacement)")
        row = self.own_agent(user, ref)

        def job() -> Any:
            agent = self.pm.agent(row.name, llm=False)
            block = next((b for b in agent.blocks() if b.label == label), None)
            if block is None:
                raise NotFound(f"agent {agent_name(user.id, row.name)!r} has no block {label!r}")
            if append is not None:
                if not append.strip():
                    raise InputError("nothing to append")
                value = f"{block.value}\n{append}" if block.value else append
            else:
                if not old or old not in block.value:
                    raise InputError(f"old_content is not in the {label} block (it must match its text exactly)")
                value = block.value.replace(old, new or "", 1)
            return agent.set_block(label, value, cause=f"{via}: {user.name}")

        return self.in_line(row, job)

    def block_history(self, user: UserRow, ref: int | str, label: str | None = None, *, before: int | None = None,
                      limit: int = 50) -> list[BlockVersion]:
        """The versions of one block (every block's: ``label`` None), newest first; :class:`NotFound` for a label
        the agent never had."""
        row = self.own_agent(user, ref)
        found = self.pm.agent(row.name, llm=False).block_history(label, before=before, limit=limit)
        if label is not None and not found and before is None:
            raise NotFound(f"the agent has no block {label[:40]!r}")
        return found

    def block_version(self, user: UserRow, ref: int | str, label: str, version: int) -> BlockVersion:
        row = self.own_agent(user, ref)
        return self.pm.agent(row.name, llm=False).block_version(label, version)

    def revert_block(self, user: UserRow, ref: int | str, label: str, version: int, via: str = "api") -> Future:
        """Block ``label`` back to what version ``version`` held, as a new version (in the agent's line); the
        block and the new version's number."""
        row = self.own_agent(user, ref)
        self.block_version(user, row.id, label, version)  # NotFound before anything is queued
        return self.in_line(row, lambda: self.pm.agent(row.name, llm=False).revert_block(
            label, version, cause=f"{via}: {user.name}"))

    def insert_passage(self, user: UserRow, ref: int | str, text: str, replaces: str | None = None,
                       via: str = "api") -> Added:
        """Store a passage in the agent's archival memory unless it repeats one (:meth:`Agent.remember`);
        ``replaces``: the earlier fact it supersedes. What was done."""
        row = self.own_agent(user, ref)
        return self.pm.agent(row.name, llm=False).remember(text, source=via, replaces=replaces)

    def forget_passage(self, user: UserRow, ref: int | str, passage_id: int, via: str = "api") -> Future:
        """Forget an archival passage (in the agent's line; :meth:`Agent.forget`), the cause naming the surface and
        the user: the passage."""
        row = self.own_agent(user, ref)
        return self.in_line(row, lambda: self.pm.agent(row.name, llm=False).forget(passage_id, f"{via}: {user.name}"))

    def restore_passage(self, user: UserRow, ref: int | str, passage_id: int) -> Future:
        """Give a forgotten passage back (in the agent's line): the passage."""
        row = self.own_agent(user, ref)
        return self.in_line(row, lambda: self.pm.agent(row.name, llm=False).restore(passage_id))

    def audit_memory(self, user: UserRow, ref: int | str, fold: bool = False) -> Future:
        """The agent's archive audited (and its repeats folded, in the agent's line): (audit, folded)."""
        row = self.own_agent(user, ref)
        return self.in_line(row, lambda: self.pm.agent(row.name, llm=False).audit_memory(fold))

    def consolidate_memory(self, user: UserRow, ref: int | str) -> Future:
        """One consolidation pass of the agent over recall since the last (in the agent's line, with the user's
        model replies, recorded as a run): a :class:`~pagemind.agent.consolidate.Consolidation`."""
        row = self.own_agent(user, ref)
        return self.in_line(row, lambda: self._consolidation(row, user.id))

    def _consolidation(self, row: AgentRow, owner: int | None) -> Consolidation:
        """One pass of the agent, recorded as its owner's run under the name the owner gives it."""
        run = self.pm.runs.create("consolidate", str(row.id), method="memgpt", user_id=owner, request={
            "agent": row.name if owner is None else agent_name(owner, row.name)})
        return self.pm.consolidate(row.name, run=run, user_id=owner)

    def consolidate_idle(self, now: datetime | None = None) -> list[Future]:
        """A background pass for every agent due one (its ``consolidate_idle`` minutes without a new message;
        :mod:`pagemind.agent.idle`), each in its agent's line so it never meets a turn, under the agent's lease
        ``consolidate:<id>`` so two replicas never run one pass twice (the one that finds the lease taken skips it),
        recorded as a run of the agent's owner. A pass is tried once per new message: the futures of those started
        (each a :class:`~pagemind.agent.consolidate.Consolidation`, or None when another replica had it)."""
        from datetime import datetime

        from ...agent.idle import due, lease_name
        from ...leases import Lease, LeaseBusy

        when = now or datetime.now()
        started = []
        for found in self.pm.idle_agents(when, self.tried):
            row = found.row
            if self.workers.busy(row.id)[0]:  # a turn is in line: it is not idle
                continue
            self.tried[row.id] = found.newest
            owner = self.pm.store.agent_owner(row.id)

            def job(row: AgentRow = row, owner: int | None = owner) -> Any:
                try:
                    with Lease(self.pm.store, lease_name(row.id), timeout=0).held():
                        current = self.pm.store.get_agent_by_id(row.id)  # another replica's pass moves its mark
                        if current is None or due(self.pm.store, current, when) is None:
                            return None
                        return self._consolidation(row, owner)
                except LeaseBusy:
                    return None

            started.append(self.in_line(row, job))
        return started

    def watch_idle(self, every: float) -> threading.Event:
        """Look for agents due a background pass every ``every`` seconds (:meth:`consolidate_idle`) in a daemon
        thread, until the returned event is set."""
        stop = threading.Event()

        def look() -> None:
            while not stop.wait(every):
                try:
                    self.consolidate_idle()
                except Exception:  # a store that is briefly unreachable: look again next time
                    log.exception("looking for idle agents to consolidate failed")

        threading.Thread(target=look, name="pagemind-idle", daemon=True).start()
        return stop

    def passages(self, user: UserRow, ref: int | str, query: str = "", offset: int = 0,
                 limit: int = 20) -> tuple[int, list[Passage]]:
        """(how many, one page): every passage by id, or those matching ``query`` best first."""
        row = self.own_agent(user, ref)
        return self.pm.agent(row.name, llm=False).passages(query, offset, limit)

    def passages_after(self, user: UserRow, ref: int | str, *, after: int | None = None, before: int | None = None,
                       limit: int = 50, descending: bool = False, query: str = "") -> list[Passage]:
        """One page of passages by id cursor (Letta's ``after``/``before``): at most ``limit`` read. With a
        ``query``, the matches best first, the cursor a passage of that ranking."""
        row = self.own_agent(user, ref)
        return self.pm.agent(row.name, llm=False).passages_after(after, before, limit, descending, query)

    def search_archival(self, user: UserRow, ref: int | str, query: str, page: int = 0) -> SearchPage:
        """One page of the agent's archival search for ``query``, as the agent's own function reads it."""
        row = self.own_agent(user, ref)
        return self.pm.agent(row.name, llm=False).archive.search(query, page)

    def search_recall(self, user: UserRow, ref: int | str, query: str, page: int = 0) -> SearchPage:
        """One page of the agent's recall search for ``query``, as the agent's own function reads it."""
        row = self.own_agent(user, ref)
        return self.pm.agent(row.name, llm=False).tools.recall_page(query, page)

    def load_document(self, user: UserRow, ref: int | str, body: LoadDocument) -> Future:
        from ...agent import load_into_agent

        row = self.own_agent(user, ref)
        try:
            document = self.pm.open_document(body.document_id, user_id=user.id)
        except NotFound:  # the agent is found; what the body names is not a document of the user's: bad input
            raise InputError(f"no document {body.document_id!r} of yours to load (list your documents)") from None

        def job() -> LoadedDocument:
            return load_into_agent(self.pm.agent(row.name, llm=False), document, words=body.words)

        return self.in_line(row, job)


class AgentNameTaken(PagemindError):
    """The user already has an agent of that name (409)."""


def keyed_run_id(user_id: int, agent_id: int, key: str, attempt: int) -> str:
    """The id of attempt ``attempt`` (1, 2, ...) of the agent send with idempotency key ``key``."""
    digest = hashlib.sha256(f"{user_id}\0{agent_id}\0{key}".encode()).hexdigest()[:16]
    return f"run_{digest}" + (f"-{attempt}" if attempt > 1 else "")
