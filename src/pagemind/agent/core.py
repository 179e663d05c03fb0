"""The MemGPT agent: a persistent agent in a store (its memory, its options, editing and reading them) whose
user messages are each one :class:`~pagemind.agent.turn.Turn` (steps until it yields), run under its turn lock.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, InputError, NotFound
from ..limits import check_block
from ..llm.client import LLM
from ..llm.usage import Trace
from ..store import SQLStore
from .archive import Added, Archive, Audit
from .context import MainContext, prompt
from .functions import Toolbox
from .locks import TurnLock
from .memory import CLOCK, AgentOptions, AgentState, Block, BlockVersion, Event, Passage, SearchPage
from .store import AgentRecord, AgentStore
from .turn import Step, Turn, TurnResult, step_record

if TYPE_CHECKING:
    from .consolidate import Consolidation

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_MAX_ROWS = 2**63 - 1  # what a 64-bit LIMIT holds
HISTORY_KINDS = ("user_message", "step", "function_result", "heartbeat", "system_alert", "summary")


class Agent:
    """A persistent MemGPT agent in a pagemind store. ``llm`` may be None for reading its memory only."""

    def __init__(self, llm: LLM | None, store: SQLStore | AgentStore, record: AgentRecord, *,
                 embedder: Any = "auto", clock: Callable[[], datetime] | None = None, lock_timeout: float = 120.0,
                 stale_after: float = 900.0) -> None:
        self.store = store if isinstance(store, AgentStore) else AgentStore(store)
        self.record = record
        self.id, self.name, self.options = record.id, record.name, record.options
        self.state = record.state
        self._llm = llm
        self.clock = clock or datetime.now
        self._embedder = embedder
        self.archive = Archive(self.store, self.id, self.options, embedder)
        self.tools = Toolbox(self.store, self.id, self.options, self.archive, self.now)
        self.lock = TurnLock(self.store.store, self.id, timeout=lock_timeout, stale_after=stale_after)

    # --- creation and loading ----------------------------------------------------------------------
    @classmethod
    def create(cls, llm: LLM | None, store: SQLStore | AgentStore, name: str, *, persona: str | None = None,
               human: str | None = None, blocks: dict[str, str] | None = None,
               options: AgentOptions | None = None, display_name: str | None = None,
               limits: dict[str, int] | None = None, descriptions: dict[str, str] | None = None,
               cause: str = "create", **kwargs: Any) -> Agent:
        """A new agent with persona and human blocks (plus ``blocks`` by label) and the boot messages.
        ``display_name``: what the default persona calls the agent when its stored name is namespaced (a
        server's agents are stored per user); ``limits``: a block's own character limit, by label (else the
        options' ``block_limit``); ``descriptions``: what a block is for, by label; ``cause``: what the blocks'
        first versions are recorded as (``create``, ``import: FILE``)."""
        if not NAME.match(name):
            raise ConfigError(f"agent name {name!r}: use letters, digits, '_', '.', '-' (at most 64)")
        options = options or AgentOptions()
        default_persona = prompt("persona", name=display_name or name)  # the agent's own name, never a fixed one
        values = {"persona": default_persona if persona is None else persona, "human": human or "", **(blocks or {})}
        blocks_made = [Block(k, v, (limits or {}).get(k, options.block_limit), (descriptions or {}).get(k, ""))
                       for k, v in values.items()]
        astore = store if isinstance(store, AgentStore) else AgentStore(store)
        with astore.store.transaction():  # an agent that cannot run is never stored
            record = astore.create_agent(name, options, blocks_made, cause)  # checks every block (the one rule)
            agent = cls(llm, astore, record, **kwargs)
            boot = {"thoughts": prompt("boot_thoughts"), "function": "send_message",
                    "arguments": {"message": prompt("boot_message")}}
            now = agent.now()
            astore.append(record.id, [
                Event("step", boot, now),
                Event("function_result", {"function": "send_message", "status": "OK",
                                          "message": "Sent message successfully."}, now),
                Event("system_alert", {"message": prompt("login")}, now),
            ])
            if llm is not None:
                agent.check_runs()
        return agent

    def check_runs(self) -> None:
        """Refuse (:class:`InputError`) an agent whose fixed part — its instructions and core memory, with one short
        message — leaves no room for a reply in its window: every turn would fail; say so when it is made or
        imported (a long history is evicted as turns need; the fixed part never is)."""
        from ..llm.base import LLMRequest, Message

        context = self.main_context()
        blocks = self.store.blocks(self.id)
        fixed = LLMRequest(messages=(Message("system", context.system_text(blocks)), Message("user", "hi")),
                           role="agent-step", max_tokens=self.options.max_tokens, tools=context.tools(blocks))
        needed = self.llm.prompt_tokens(fixed)
        if needed + self.options.max_tokens > context.window:
            raise InputError(f"this agent cannot run: its instructions and core memory need {needed:,} "
                             f"tokens and {self.options.max_tokens:,} for a reply, more than its window of "
                             f"{context.window:,}; shorten the system prompt or the blocks, or lower max_tokens")

    @classmethod
    def load(cls, llm: LLM | None, store: SQLStore | AgentStore, name: str, **kwargs: Any) -> Agent:
        astore = store if isinstance(store, AgentStore) else AgentStore(store)
        return cls(llm, astore, astore.get_agent(name), **kwargs)

    @property
    def llm(self) -> LLM:
        if self._llm is None:
            raise ConfigError("this agent was opened without an LLM")
        return self._llm

    def main_context(self) -> MainContext:
        """A new main context of the agent as it is now (the prompt its next step would get: ``.build()``)."""
        return MainContext(self.llm, self.store, self.id, self.options, self.now,
                           tools_refused=bool(self.state.extra.get("tools_refused")))

    def now(self) -> str:
        return self.clock().strftime(CLOCK)

    # --- reading -----------------------------------------------------------------------------------
    def blocks(self) -> list[Block]:
        return self.store.blocks(self.id)

    def counts(self) -> dict[str, int]:
        return self.store.counts(self.id)

    def history(self, offset: int = 0, limit: int = 50, after: int | None = None) -> tuple[int, list[Event]]:
        """(every event in recall, the events ``offset`` .. ``offset + limit`` of them, oldest first): messages,
        steps, function results, heartbeats, alerts and summaries. ``after``: only those after that seq (a page's
        cursor; the count is then of those after it)."""
        total, rows = self.store.store.search_agent_events(self.id, HISTORY_KINDS, offset=offset, limit=limit,
                                                           after=after)
        return total, [Event(r.kind, r.payload, r.created, r.seq, r.in_context) for r in rows]

    def passages(self, query: str = "", offset: int = 0, limit: int = 20) -> tuple[int, list[Passage]]:
        """(how many passages match, the ``offset`` .. ``offset + limit`` of them) of archival memory: ranked by
        the agent's archival search for ``query``, or every passage in order without one."""
        if not query:
            return self.store.search_passages_text(self.id, "", offset, limit)
        total, ranked = self.archive.ranked(query, min(offset + limit, _MAX_ROWS))
        return total, self.store.passages(self.id, ranked[offset:offset + limit])

    def passages_by_id(self, ids: Iterable[int]) -> list[Passage]:
        """The archival passages of these ids (those that exist), in that order."""
        return self.store.passages(self.id, list(ids))

    def events_by_seq(self, seqs: Iterable[int]) -> list[Event]:
        """The recall events of these seqs (those that exist)."""
        return self.store.events(self.id, list(seqs))

    def passages_after(self, after: int | None = None, before: int | None = None, limit: int = 50,
                       descending: bool = False, query: str = "") -> list[Passage]:
        """One page of archival memory by id cursor, at most ``limit`` passages read: every passage in id order
        (``descending``: newest first), or with a ``query`` the matches best first, the cursor a passage of that
        ranking."""
        if not query:
            return self.store.passages_after(self.id, after, before, limit, descending)
        ranked = self.archive.rank(query)
        start = ranked.index(after) + 1 if after in ranked else 0
        stop = ranked.index(before) if before in ranked else len(ranked)
        return self.passages_by_id(ranked[start:min(stop, start + limit)])

    def remember(self, text: str, source: str | None = "api", replaces: str | None = None) -> Added:
        """Store a passage in archival memory (as an edit from outside a turn), unless it repeats one already
        stored (then that one's repeats record this time and source); ``replaces``: the earlier fact it corrects
        (its text, or part of it), kept and marked superseded (:meth:`Archive.add`)."""
        return self.archive.add(text, self.now(), source=source, replaces=replaces)

    def audit_memory(self, fold: bool = False) -> tuple[Audit, int]:
        """The archive's repeats, junk and superseded passages (:class:`~pagemind.agent.archive.Audit`); with
        ``fold``, the repeats folded into the earliest of each group (under the turn lock). The audit (before any
        fold) and how many passages were folded."""
        found = self.archive.audit()
        if not fold:
            return found, 0
        with self.lock.held():
            return found, self.archive.fold(found)

    def forget(self, passage_id: int, cause: str = "forget") -> Passage:
        """Take archival passage ``passage_id`` out of memory (a wrong fact, junk): nothing finds it any more; it is
        kept apart with ``cause`` and the time, and :meth:`restore` gives it back. :class:`NotFound` when the
        archive holds no such passage."""
        import time

        with self.lock.held():
            found = self.store.forget(self.id, passage_id, cause, time.time())
        if found is None:
            raise NotFound(f"the agent has no archival passage {passage_id}")
        return found

    def restore(self, passage_id: int) -> Passage:
        """Give a forgotten passage back to archival memory under its own id; :class:`NotFound` when none was."""
        with self.lock.held():
            found = self.store.restore(self.id, passage_id)
        if found is None:
            raise NotFound(f"the agent forgot no archival passage {passage_id}")
        return found

    def forgotten(self, limit: int = 50) -> list[tuple[int, str, str, float]]:
        """The passages forgotten, the latest first: (id, text, cause, when)."""
        return self.store.forgotten(self.id, limit)

    def drop_junk(self, audit: Audit) -> int:
        """Forget every passage an audit found to be junk (the cause names why); how many (one gone since the
        audit is passed over)."""
        dropped = 0
        for passage_id, why in audit.junk:
            try:
                self.forget(passage_id, f"audit: junk ({why})")
                dropped += 1
            except NotFound:
                continue
        return dropped

    def consolidate(self, trace: Trace | None = None,
                    progress: Callable[[str, int, int, str], None] | None = None) -> Consolidation:
        """One consolidation pass over recall since the last (opt-in, between sessions): the model proposes a dated
        summary, lasting facts and core-memory lines from each window of messages; facts and summaries go to
        archival memory (repeats not stored again), lines into the ``human`` block as a new version (revert it to
        undo). Under the turn lock, so it never lands inside a turn (:mod:`pagemind.agent.consolidate`)."""
        from .consolidate import consolidate

        with self.lock.held():
            self.state = AgentState.from_dict(self.store.get_agent(self.name).state.__dict__)
            try:
                return consolidate(self, trace, progress)
            finally:
                self.store.save_state(self.id, self.state)

    def in_turn(self) -> bool:
        """Whether a live turn holds the agent's lock (a dead holder's lock is the next turn's: not busy)."""
        return self.lock.holder() is not None

    def search(self, query: str, page: int = 0) -> str:
        """Recall text search, as the agent's conversation_search shows it."""
        return self.tools.conversation_search(query, page)

    def search_memory(self, query: str, page: int = 0) -> dict[str, SearchPage]:
        """One page of recall and one of archival search for ``query``, by store (what ``/search`` shows)."""
        return {"recall": self.tools.recall_page(query, page), "archival": self.archive.search(query, page)}

    # --- editing ---------------------------------------------------------------------------------------
    def set_block(self, label: str, value: str, limit: int | None = None, *, description: str | None = None,
                  cause: str = "python") -> Block:
        """Set core-memory block ``label`` (a new one takes the default ``block_limit``; ``limit``: a new limit;
        ``description``: what the block is for, None keeps it), under the turn lock so it never lands inside a
        turn, as the label's next version caused by ``cause`` (the surface and user: ``api: ann``); an
        :class:`InputError` for a label, value, limit or description the block rule refuses
        (:func:`pagemind.limits.check_block`)."""
        current = next((b for b in self.blocks() if b.label == label), None)
        block = Block(label, value, limit if limit is not None else current.limit if current else
                      self.options.block_limit,
                      description if description is not None else current.description if current else "")
        check_block(block.label, block.value, block.limit, block.description)  # before waiting for the lock
        with self.lock.held():
            self.store.put_block(self.id, block, cause)
        return block

    def block_history(self, label: str | None = None, *, before: int | None = None,
                      limit: int = 50) -> list[BlockVersion]:
        """The versions of block ``label`` (of every block: None), newest first: what each write made it, its
        cause and time; ``before``: versions older than that one (paging back)."""
        return self.store.block_versions(self.id, label, before=before, limit=limit)

    def block_version(self, label: str, version: int) -> BlockVersion:
        """Version ``version`` of block ``label``; :class:`NotFound` if there is none."""
        found = self.store.block_version(self.id, label, version)
        if found is None:
            raise NotFound(f"block {label!r} has no version {version}")
        return found

    def revert_block(self, label: str, version: int, *, cause: str = "python") -> tuple[Block, int]:
        """Make block ``label`` hold what version ``version`` held again (its value and description; the limit
        stays the block's current one) as a new version, caused by ``revert to N`` and ``cause``; nothing is
        deleted, so a revert can be reverted. The block and its new version's number; an :class:`InputError` when
        the old value does not fit the block's limit now (raise the limit first)."""
        old = self.block_version(label, version).block
        current = next((b for b in self.blocks() if b.label == label), None)
        limit = current.limit if current else old.limit
        if len(old.value) > limit:
            raise InputError(f"version {version} of block {label} has {len(old.value):,} characters; the block's "
                             f"limit is now {limit:,}: raise the limit first (set the block's limit), then revert")
        block = Block(label, old.value, limit, old.description)
        with self.lock.held():
            number = self.store.put_block(self.id, block, f"revert to {version} ({cause})")
        return block, number

    def update_options(self, changes: dict[str, Any]) -> AgentOptions:
        """Store the agent's options with ``changes`` (:class:`AgentOptions` fields; ``None`` keeps a value) and
        use them from now on; the new options."""
        return self.set_options(self.options.updated(**changes))

    def set_options(self, options: AgentOptions) -> AgentOptions:
        """Store ``options`` as the agent's and use them from now on."""
        self.store.save_options(self.id, options)
        self.options, self.record = options, replace(self.record, options=options)
        self.archive = Archive(self.store, self.id, options, self._embedder)
        self.tools = Toolbox(self.store, self.id, options, self.archive, self.now)
        return options

    # --- events without a step ---------------------------------------------------------------------
    def notify(self, message: str) -> None:
        """Put a system alert in the queue (it is read with the next event)."""
        with self.lock.held():
            self.store.append(self.id, [Event("system_alert", {"message": message}, self.now())])

    def import_messages(self, messages: Iterable[tuple[str, ...]], in_context: bool = False) -> int:
        """Put past (role, text, time[, where[, speaker]]) messages into recall (out of context unless
        ``in_context``); ``where``: the message's place in its conversation ("session 2, turn 7"), which citations
        of it name; ``speaker``: who said it, for a conversation between people the agent only read (LoCoMo's two
        friends): each speaker's messages are kept as what others told the agent — found and cited as theirs —,
        never as the agent's own replies. Role ``assistant`` is the agent's own past reply."""
        events = []
        for role, text, when, *rest in messages:
            where, speaker = (list(rest) + ["", ""])[:2]
            when = when or self.now()
            if role == "user" or speaker:
                told = {"message": text, **({"where": where} if where else {}),
                        **({"speaker": speaker} if speaker else {})}
                events.append(Event("user_message", told, when, in_context=in_context))
            else:
                payload = {"thoughts": "", "function": "send_message", "arguments": {"message": text}}
                result = {"function": "send_message", "status": "OK", "message": "Sent message successfully."}
                events += [Event("step", payload, when, in_context=in_context),
                           Event("function_result", result, when, in_context=in_context)]
        with self.lock.held():
            return len(self.store.append(self.id, events))

    # --- a turn ------------------------------------------------------------------------------------
    def say(self, text: str, progress: Callable[[str, int, int, str], None] | None = None,
            trace: Trace | None = None, on_step: Callable[[Step], None] | None = None,
            key: str | None = None) -> TurnResult:
        """Handle one user message: a :class:`Turn`, stepping until the agent yields (or the step budget runs
        out). ``progress`` hears each step as it starts and the function it called (``(phase, done, total,
        unit)``, as the readers'); ``on_step`` each finished step; the LLM calls go to ``trace`` (a new one if
        None). ``key``: the message's idempotency key: a message with this key already in recall (an earlier
        attempt was interrupted after storing it) is not stored again; the turn answers it."""
        self.check_message(text)
        with self.lock.held():
            self.state = AgentState.from_dict(self.store.get_agent(self.name).state.__dict__)
            try:
                return Turn(self, text, trace, key=key, progress=progress, on_step=on_step).run()
            finally:
                self.store.save_state(self.id, self.state)

    def check_message(self, text: str) -> None:
        """Refuse a message that cannot fit the window with its system prompt and core memory
        (:class:`~pagemind.errors.MessageTooLarge`), before anything is stored."""
        self.main_context().check_message(text, self.now())


__all__ = ["Agent", "Step", "TurnResult", "step_record"]
