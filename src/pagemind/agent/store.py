"""All SQL of the agent: agents, core blocks, events (recall + queue), archival passages and turn locks.

Tables come from migration ``m003_agents``. Every query is scoped by ``agent_id``: one agent never reads
another's memory. Multi-statement writes go through :meth:`AgentStore.transaction` so that a function's
side effects and its result are committed together.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from ..errors import PagemindError
from ..store import Store
from ..store.db import Rows, canonical_json
from .memory import SEARCH_KINDS, AgentOptions, AgentState, Block, Event, Passage


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


def _like(query: str) -> str:
    escaped = query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class AgentStore:
    """The agent tables of one pagemind :class:`Store` (shared connection and lock)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def _q(self, sql: str, args: tuple = ()) -> Rows:
        return self.store._exec(sql, args)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction of the store (nested use joins the outer one)."""
        with self.store.transaction():
            yield

    # --- agents ------------------------------------------------------------------------------------
    def create_agent(self, name: str, options: AgentOptions, blocks: Sequence[Block]) -> AgentRecord:
        now = time.time()
        with self.transaction():
            try:
                cur = self._q("INSERT INTO agents (name, settings, state, created) VALUES (?, ?, ?, ?)",
                              (name, canonical_json(options.as_dict()), "{}", now))
            except sqlite3.IntegrityError:
                raise AgentExists(f"an agent named {name!r} already exists") from None
            agent_id = int(cur.lastrowid or 0)
            for i, block in enumerate(blocks):
                self._q("INSERT INTO agent_blocks VALUES (?, ?, ?, ?, ?, ?)",
                        (agent_id, block.label, block.value, block.limit, i, now))
        return AgentRecord(agent_id, name, options, AgentState(), now)

    def get_agent(self, name: str) -> AgentRecord:
        row = self._q("SELECT id, name, settings, state, created FROM agents WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise AgentNotFound(f"no agent named {name!r} (create it with `pagemind agent create {name}`)")
        return self._record(row)

    def list_agents(self) -> list[AgentRecord]:
        rows = self._q("SELECT id, name, settings, state, created FROM agents ORDER BY name").fetchall()
        return [self._record(r) for r in rows]

    @staticmethod
    def _record(row: tuple) -> AgentRecord:
        return AgentRecord(int(row[0]), row[1], AgentOptions.from_dict(json.loads(row[2])),
                           AgentState.from_dict(json.loads(row[3])), float(row[4]))

    def delete_agent(self, name: str) -> None:
        if self._q("DELETE FROM agents WHERE name = ?", (name,)).rowcount == 0:
            raise AgentNotFound(f"no agent named {name!r}")

    def save_state(self, agent_id: int, state: AgentState) -> None:
        self._q("UPDATE agents SET state = ? WHERE id = ?", (json.dumps(state.__dict__, sort_keys=True), agent_id))

    def save_options(self, agent_id: int, options: AgentOptions) -> None:
        self._q("UPDATE agents SET settings = ? WHERE id = ?", (canonical_json(options.as_dict()), agent_id))

    # --- core memory -------------------------------------------------------------------------------
    def blocks(self, agent_id: int) -> list[Block]:
        rows = self._q("SELECT label, value, char_limit FROM agent_blocks WHERE agent_id = ? ORDER BY position",
                       (agent_id,)).fetchall()
        return [Block(r[0], r[1], int(r[2])) for r in rows]

    def put_block(self, agent_id: int, block: Block) -> None:
        with self.transaction():
            pos = self._q("SELECT COALESCE(MAX(position) + 1, 0) FROM agent_blocks WHERE agent_id = ?",
                          (agent_id,)).fetchone()[0]
            self._q("INSERT INTO agent_blocks VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (agent_id, label) DO UPDATE "
                    "SET value = excluded.value, char_limit = excluded.char_limit, updated = excluded.updated",
                    (agent_id, block.label, block.value, block.limit, pos, time.time()))

    # --- events ------------------------------------------------------------------------------------
    def append(self, agent_id: int, events: Sequence[Event]) -> list[Event]:
        """Store events at the end of the history (atomically); returns them with their ``seq``."""
        out = []
        with self.transaction():
            seq = self._q("SELECT COALESCE(MAX(seq), 0) FROM agent_messages WHERE agent_id = ?",
                          (agent_id,)).fetchone()[0]
            for e in events:
                seq += 1
                self._q("INSERT INTO agent_messages VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (agent_id, seq, e.kind, e.search_text(), json.dumps(e.payload, ensure_ascii=False), e.time,
                         int(e.in_context)))
                out.append(Event(e.kind, e.payload, e.time, seq, e.in_context))
        return out

    def queue(self, agent_id: int) -> list[Event]:
        """The in-context events: the summary note first, then the rest in order."""
        rows = self._q("SELECT kind, payload, created, seq FROM agent_messages WHERE agent_id = ? AND in_context = 1 "
                       "ORDER BY kind != 'summary', seq", (agent_id,)).fetchall()
        return [Event(r[0], json.loads(r[1]), r[2], int(r[3]), True) for r in rows]

    def evict(self, agent_id: int, seqs: Sequence[int], note: Event) -> Event:
        """Take events out of the queue (they stay in recall) and put ``note`` at its head instead of the old one."""
        with self.transaction():
            self._q("UPDATE agent_messages SET in_context = 0 WHERE agent_id = ? AND kind = 'summary'", (agent_id,))
            for seq in seqs:
                self._q("UPDATE agent_messages SET in_context = 0 WHERE agent_id = ? AND seq = ?", (agent_id, seq))
            return self.append(agent_id, [note])[0]

    def count_events(self, agent_id: int, in_context: bool | None = None) -> int:
        sql = "SELECT COUNT(*) FROM agent_messages WHERE agent_id = ?"
        args: tuple = (agent_id,)
        if in_context is not None:
            sql, args = sql + " AND in_context = ?", args + (int(in_context),)
        return int(self._q(sql, args).fetchone()[0])

    def history(self, agent_id: int, limit: int = 50) -> list[Event]:
        rows = self._q("SELECT kind, payload, created, seq, in_context FROM agent_messages WHERE agent_id = ? "
                       "ORDER BY seq DESC LIMIT ?", (agent_id, limit)).fetchall()
        return [Event(r[0], json.loads(r[1]), r[2], int(r[3]), bool(r[4])) for r in reversed(rows)]

    def search_events(self, agent_id: int, *, query: str | None = None, start: str | None = None,
                      end: str | None = None, offset: int = 0, limit: int = 5) -> tuple[int, list[Event]]:
        """Recall search over user messages and agent steps: case-insensitive substring and/or time range."""
        where = f"agent_id = ? AND kind IN ({','.join('?' * len(SEARCH_KINDS))})"
        args: tuple = (agent_id, *SEARCH_KINDS)
        if query is not None:
            where, args = where + " AND text LIKE ? ESCAPE '\\'", args + (_like(query),)
        if start is not None:
            where, args = where + " AND created >= ?", args + (start,)
        if end is not None:
            where, args = where + " AND created < ?", args + (end,)
        total = int(self._q(f"SELECT COUNT(*) FROM agent_messages WHERE {where}", args).fetchone()[0])
        rows = self._q(f"SELECT kind, payload, created, seq, in_context FROM agent_messages WHERE {where} "
                       "ORDER BY seq LIMIT ? OFFSET ?", args + (limit, offset)).fetchall()
        return total, [Event(r[0], json.loads(r[1]), r[2], int(r[3]), bool(r[4])) for r in rows]

    def event_texts(self, agent_id: int) -> list[tuple[int, str]]:
        """(seq, search text) of every user message and agent step, oldest first."""
        return [(int(r[0]), r[1]) for r in self._q(
            "SELECT seq, text FROM agent_messages WHERE agent_id = ? AND kind IN ('user_message', 'step') ORDER BY seq",
            (agent_id,)).fetchall()]

    def events(self, agent_id: int, seqs: Sequence[int]) -> list[Event]:
        """The events with these ``seq`` numbers, in the order given."""
        if not seqs:
            return []
        rows = self._q(f"SELECT kind, payload, created, seq, in_context FROM agent_messages WHERE agent_id = ? AND seq "
                       f"IN ({','.join('?' * len(seqs))})", (agent_id, *seqs)).fetchall()
        by_seq = {int(r[3]): Event(r[0], json.loads(r[1]), r[2], int(r[3]), bool(r[4])) for r in rows}
        return [by_seq[s] for s in seqs if s in by_seq]

    # --- archival storage --------------------------------------------------------------------------
    def insert_passages(self, agent_id: int, rows: Sequence[tuple[str, str | None, str | None, bytes | None,
                                                                  str | None, str]]) -> list[int]:
        """Rows of (text, summary, source, embedding, embedder, created); returns the new ids."""
        ids = []
        with self.transaction():
            for row in rows:
                cur = self._q("INSERT INTO agent_passages (agent_id, text, summary, source, embedding, embedder, "
                              "created) VALUES (?, ?, ?, ?, ?, ?, ?)", (agent_id, *row))
                ids.append(int(cur.lastrowid or 0))
        return ids

    def count_passages(self, agent_id: int) -> int:
        return int(self._q("SELECT COUNT(*) FROM agent_passages WHERE agent_id = ?", (agent_id,)).fetchone()[0])

    def search_passages_text(self, agent_id: int, query: str, offset: int = 0,
                             limit: int | None = None) -> tuple[int, list[Passage]]:
        where, args = "agent_id = ? AND (text LIKE ? ESCAPE '\\' OR summary LIKE ? ESCAPE '\\')", (
            agent_id, _like(query), _like(query))
        total = int(self._q(f"SELECT COUNT(*) FROM agent_passages WHERE {where}", args).fetchone()[0])
        rows = self._q(f"SELECT id, text, created, summary, source FROM agent_passages WHERE {where} ORDER BY id "
                       "LIMIT ? OFFSET ?", args + (-1 if limit is None else limit, offset)).fetchall()
        return total, [Passage(int(r[0]), r[1], r[2], r[3], r[4]) for r in rows]

    def passage_vectors(self, agent_id: int, embedder: str) -> list[tuple[int, bytes]]:
        return [(int(r[0]), r[1]) for r in self._q(
            "SELECT id, embedding FROM agent_passages WHERE agent_id = ? AND embedder = ? AND embedding IS NOT NULL",
            (agent_id, embedder)).fetchall()]

    def passage_texts(self, agent_id: int) -> list[tuple[int, str]]:
        rows = self._q("SELECT id, COALESCE(summary, '') || ' ' || text FROM agent_passages WHERE agent_id = ? "
                       "ORDER BY id", (agent_id,)).fetchall()
        return [(int(r[0]), r[1]) for r in rows]

    def passages(self, agent_id: int, ids: Sequence[int]) -> list[Passage]:
        if not ids:
            return []
        rows = self._q(f"SELECT id, text, created, summary, source FROM agent_passages WHERE agent_id = ? AND id IN "
                       f"({','.join('?' * len(ids))})", (agent_id, *ids)).fetchall()
        by_id = {int(r[0]): Passage(int(r[0]), r[1], r[2], r[3], r[4]) for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    # --- turn locks --------------------------------------------------------------------------------
    def try_lock(self, agent_id: int, owner: str, pid: int, host: str,
                 stale: Callable[[int, str, float], bool]) -> bool:
        """Take the agent's lock if it is free or ``stale(pid, host, refreshed)`` says its holder is gone."""
        now = time.time()
        with self.transaction():
            row = self._q("SELECT owner, pid, host, refreshed FROM agent_locks WHERE agent_id = ?",
                          (agent_id,)).fetchone()
            if row is not None and row[0] != owner and not stale(int(row[1]), row[2], float(row[3])):
                return False
            self._q("INSERT OR REPLACE INTO agent_locks VALUES (?, ?, ?, ?, ?, ?)",
                    (agent_id, owner, pid, host, now, now))
        return True

    def refresh_lock(self, agent_id: int, owner: str) -> None:
        self._q("UPDATE agent_locks SET refreshed = ? WHERE agent_id = ? AND owner = ?", (time.time(), agent_id, owner))

    def release_lock(self, agent_id: int, owner: str) -> None:
        self._q("DELETE FROM agent_locks WHERE agent_id = ? AND owner = ?", (agent_id, owner))

    def lock_holder(self, agent_id: int) -> tuple[str, int, str, float] | None:
        row = self._q("SELECT owner, pid, host, refreshed FROM agent_locks WHERE agent_id = ?", (agent_id,)).fetchone()
        return None if row is None else (row[0], int(row[1]), row[2], float(row[3]))
