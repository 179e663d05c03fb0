"""The agent's memory in a pagemind store: agents, core blocks, events (recall + queue), archival passages and
turn locks, as the agent's own types. The SQL is the store's (tables from migration ``m003_agents``); this class
only converts between agent values and the store's plain rows.

Every call is scoped by ``agent_id``: one agent never reads another's memory. Multi-call writes go through
:meth:`AgentStore.transaction` so that a function's side effects and its result are committed together.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from ..errors import PagemindError
from ..limits import check_block
from ..store import AgentRow, BlockRow, BlockVersionRow, EventRow, PassageRow, SQLStore
from .memory import SEARCH_KINDS, AgentOptions, AgentState, Block, BlockVersion, Event, Passage


class AgentExists(PagemindError):
    """An agent with this name is already in the store."""


class AgentNotFound(PagemindError):
    """No agent with this name."""


@dataclass(frozen=True)
class AgentRecord:
    id: int
    name: str
    options: AgentOptions
    state: AgentState
    created: float


def _record(row: AgentRow) -> AgentRecord:
    return AgentRecord(row.id, row.name, AgentOptions.stored(row.settings), AgentState.from_dict(row.state),
                       row.created)


def _event(row: EventRow) -> Event:
    return Event(row.kind, row.payload, row.created, row.seq, row.in_context)


def _block_row(block: Block) -> BlockRow:
    check_block(block.label, block.value, block.limit, block.description)  # the one rule, on every write
    return BlockRow(block.label, block.value, block.limit, block.description)


def _version(row: BlockVersionRow) -> BlockVersion:
    return BlockVersion(Block(row.label, row.value, row.limit, row.description), row.version, row.cause, row.created)


def _passage(row: PassageRow) -> Passage:
    return Passage(row.id, row.text, row.created, row.summary, row.source, row.superseded_by, row.superseded,
                   row.repeats)


class AgentStore:
    """The agent part of one pagemind store (any :class:`~pagemind.store.SQLStore`)."""

    def __init__(self, store: SQLStore) -> None:
        self.store = store

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction of the store (nested use joins the outer one)."""
        with self.store.transaction():
            yield

    # --- agents ------------------------------------------------------------------------------------
    def create_agent(self, name: str, options: AgentOptions, blocks: Sequence[Block], cause: str = "create",
                     history: Sequence[BlockVersion] = ()) -> AgentRecord:
        """A new agent with ``blocks`` (checked by the one block rule), recorded as versions caused by ``cause``
        after their ``history`` (an imported agent's)."""
        now = time.time()
        rows = [BlockVersionRow(v.block.label, v.version, v.block.value, v.block.limit, v.block.description, v.cause,
                                v.time) for v in history]
        agent_id = self.store.create_agent(name, options.as_dict(), {}, now, [_block_row(b) for b in blocks], cause,
                                           rows)
        if agent_id is None:
            raise AgentExists(f"an agent named {name!r} already exists")
        return AgentRecord(agent_id, name, options, AgentState(), now)

    def get_agent(self, name: str) -> AgentRecord:
        row = self.store.get_agent(name)
        if row is None:
            raise AgentNotFound(f"no agent named {name!r} (create it with `pagemind agent create {name}`)")
        return _record(row)

    def list_agents(self) -> list[AgentRecord]:
        return [_record(r) for r in self.store.list_agents()]

    def delete_agent(self, name: str) -> None:
        if not self.store.delete_agent(name):
            raise AgentNotFound(f"no agent named {name!r}")

    def save_state(self, agent_id: int, state: AgentState) -> None:
        self.store.set_agent_state(agent_id, dict(state.__dict__))

    def save_options(self, agent_id: int, options: AgentOptions) -> None:
        self.store.set_agent_settings(agent_id, options.as_dict())

    # --- core memory -------------------------------------------------------------------------------
    def blocks(self, agent_id: int) -> list[Block]:
        return [Block(r.label, r.value, r.limit, r.description) for r in self.store.agent_blocks(agent_id)]

    def put_block(self, agent_id: int, block: Block, cause: str) -> int:
        """Write a block (checked by the one block rule, :func:`~pagemind.limits.check_block`) as its label's next
        version, caused by ``cause``; the version's number."""
        return self.store.put_agent_block(agent_id, _block_row(block), cause)

    def block_versions(self, agent_id: int, label: str | None = None, *, before: int | None = None,
                       limit: int = 50) -> list[BlockVersion]:
        return [_version(r) for r in self.store.agent_block_versions(agent_id, label, before=before, limit=limit)]

    def block_version(self, agent_id: int, label: str, version: int) -> BlockVersion | None:
        row = self.store.agent_block_version(agent_id, label, version)
        return None if row is None else _version(row)

    # --- events ------------------------------------------------------------------------------------
    def append(self, agent_id: int, events: Sequence[Event]) -> list[Event]:
        """Store events at the end of the history (atomically); returns them with their ``seq``."""
        seqs = self.store.append_agent_events(agent_id, [
            EventRow(e.kind, e.payload, e.time, 0, e.in_context, e.search_text()) for e in events])
        return [Event(e.kind, e.payload, e.time, seq, e.in_context) for e, seq in zip(events, seqs)]

    def queue(self, agent_id: int) -> list[Event]:
        """The in-context events: the summary note first, then the rest in order."""
        return [_event(r) for r in self.store.agent_queue(agent_id)]

    def evict(self, agent_id: int, seqs: Sequence[int], note: Event) -> Event:
        """Take events out of the queue (they stay in recall) and put ``note`` at its head instead of the old one."""
        with self.transaction():
            self.store.evict_agent_events(agent_id, seqs)
            return self.append(agent_id, [note])[0]

    def count_events(self, agent_id: int, in_context: bool | None = None) -> int:
        return self.store.count_agent_events(agent_id, in_context)

    def history(self, agent_id: int, limit: int = 50) -> list[Event]:
        return [_event(r) for r in self.store.recent_agent_events(agent_id, limit)]

    def search_events(self, agent_id: int, *, query: str | None = None, start: str | None = None,
                      end: str | None = None, offset: int = 0, limit: int = 5) -> tuple[int, list[Event]]:
        """Recall search over user messages and agent steps: case-insensitive substring and/or time range."""
        total, rows = self.store.search_agent_events(agent_id, SEARCH_KINDS, query=query, start=start, end=end,
                                                     offset=offset, limit=limit)
        return total, [_event(r) for r in rows]

    def event_texts(self, agent_id: int) -> list[tuple[int, str, str]]:
        """(seq, search text, time) of every user message and agent step, oldest first."""
        return self.store.agent_event_texts(agent_id, SEARCH_KINDS)

    def events(self, agent_id: int, seqs: Sequence[int]) -> list[Event]:
        """The events with these ``seq`` numbers, in the order given."""
        return [_event(r) for r in self.store.agent_events(agent_id, seqs)]

    # --- archival storage --------------------------------------------------------------------------
    def insert_passages(self, agent_id: int, rows: Sequence[tuple[str, str | None, str | None, bytes | None,
                                                                  str | None, str]]) -> list[int]:
        """Rows of (text, summary, source, embedding, embedder, created); returns the new ids."""
        return self.store.insert_agent_passages(agent_id, [
            PassageRow(text, created, summary, source, embedding, embedder)
            for text, summary, source, embedding, embedder, created in rows])

    def count_passages(self, agent_id: int) -> int:
        return self.store.count_agent_passages(agent_id)

    def counts(self, agent_id: int) -> dict[str, int]:
        """How much an agent's memory holds: messages and steps in recall, of them in context, archival passages."""
        return {"recall": self.count_events(agent_id), "in_context": self.count_events(agent_id, True),
                "archival": self.count_passages(agent_id)}

    def search_passages_text(self, agent_id: int, query: str, offset: int = 0,
                             limit: int | None = None) -> tuple[int, list[Passage]]:
        total, rows = self.store.search_agent_passages(agent_id, query, offset, limit)
        return total, [_passage(r) for r in rows]

    def passage_vectors(self, agent_id: int, embedder: str) -> list[tuple[int, bytes]]:
        return self.store.agent_passage_vectors(agent_id, embedder)

    def nearest_passages(self, agent_id: int, embedder: str, query: bytes,
                         limit: int | None = None) -> tuple[int, list[int]]:
        """(passages embedded by ``embedder``, the ids of the first ``limit`` most similar to ``query``)."""
        return self.store.nearest_agent_passages(agent_id, embedder, query, limit)

    def passage_texts(self, agent_id: int) -> list[tuple[int, str]]:
        return self.store.agent_passage_texts(agent_id)

    def passages(self, agent_id: int, ids: Sequence[int]) -> list[Passage]:
        return [_passage(r) for r in self.store.agent_passages(agent_id, ids)]

    def passages_with_text(self, agent_id: int, text: str) -> list[Passage]:
        return [_passage(r) for r in self.store.agent_passages_with_text(agent_id, text)]

    def note_repeat(self, agent_id: int, passage_id: int, time: str, source: str | None) -> None:
        self.store.note_agent_passage_repeats(agent_id, passage_id, [(time, source)])

    def fold_passages(self, agent_id: int, keep: int, fold: Sequence[int]) -> int:
        return self.store.fold_agent_passages(agent_id, keep, fold)

    def supersede(self, agent_id: int, old: int, new: int, when: str) -> bool:
        return self.store.supersede_agent_passage(agent_id, old, new, when)

    def superseded(self, agent_id: int) -> dict[int, int]:
        return self.store.agent_superseded(agent_id)

    def forget(self, agent_id: int, passage_id: int, cause: str, when: float) -> Passage | None:
        found = self.store.forget_agent_passage(agent_id, passage_id, cause, when)
        return None if found is None else _passage(found)

    def restore(self, agent_id: int, passage_id: int) -> Passage | None:
        found = self.store.restore_agent_passage(agent_id, passage_id)
        return None if found is None else _passage(found)

    def forgotten(self, agent_id: int, limit: int = 50) -> list[tuple[int, str, str, float]]:
        return self.store.forgotten_agent_passages(agent_id, limit)

    def passages_after(self, agent_id: int, after: int | None = None, before: int | None = None, limit: int = 50,
                       descending: bool = False) -> list[Passage]:
        """One page of passages by id cursor (what a listing shows: never more than ``limit`` rows read)."""
        return [_passage(r) for r in self.store.agent_passages_after(agent_id, after, before, limit, descending)]
