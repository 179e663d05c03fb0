"""The paper's function set: typed specs (for the grammar, the schema and validation) and their executors.

Descriptions for the processor live in ``prompts/memgpt.yaml`` (``functions``); the specs here fix names,
argument types and length bounds. Every non-terminal function also takes ``request_heartbeat``.
An expected failure (an edit over the block limit, text not found, a bad date) raises :class:`ToolError`,
whose message goes back to the processor as the function result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from .archive import Archive, keywords
from .memory import AgentOptions, Block, SearchPage
from .store import AgentStore


class ToolError(Exception):
    """An expected failure of a function call; the message is shown to the processor."""


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # string | integer | boolean | label | date
    max_length: int = 0  # strings: the grammar's bound
    min_length: int = 1  # strings: 0 lets the value be empty (a replacement that deletes)
    maximum: int = 99  # integers: 0..maximum (validated after parsing; llama.cpp schemas do not enforce it)


@dataclass(frozen=True)
class FunctionSpec:
    name: str
    params: tuple[Param, ...]
    terminal: bool = False  # True: yields control (no request_heartbeat)

    @property
    def all_params(self) -> tuple[Param, ...]:
        return self.params if self.terminal else self.params + (Param("request_heartbeat", "boolean"),)


FUNCTIONS: tuple[FunctionSpec, ...] = (
    FunctionSpec("send_message", (Param("message", "string", 600),), terminal=True),
    FunctionSpec("core_memory_append", (Param("label", "label"), Param("content", "string", 400))),
    FunctionSpec("core_memory_replace", (Param("label", "label"), Param("old_content", "string", 400),
                                         Param("new_content", "string", 400, min_length=0))),
    FunctionSpec("conversation_search", (Param("query", "string", 100), Param("page", "integer"))),
    FunctionSpec("conversation_search_date", (Param("start_date", "date"), Param("end_date", "date"),
                                              Param("page", "integer"))),
    FunctionSpec("archival_memory_insert", (Param("content", "string", 600),)),
    FunctionSpec("archival_memory_search", (Param("query", "string", 100), Param("page", "integer"))),
)
SPECS = {f.name: f for f in FUNCTIONS}


def over_limit(label: str, limit: int, requested: int) -> str:
    return (f"Edit failed: Exceeds {limit} character limit (requested {requested}). Consider summarizing existing "
            f"core memories in {label} and/or moving lower priority content to archival memory to free up space "
            "in core memory, then try again.")


def _day(value: str, what: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ToolError(f"{what} {value!r} is not a date in YYYY-MM-DD format") from None


class Toolbox:
    """Runs one agent's function calls against its store (core blocks, recall, archival)."""

    def __init__(self, store: AgentStore, agent_id: int, options: AgentOptions, archive: Archive,
                 now: Callable[[], str]) -> None:
        self.store = store
        self.agent_id = agent_id
        self.options = options
        self.archive = archive
        self.now = now

    def run(self, name: str, args: dict[str, Any]) -> str:
        """Execute a validated call (``request_heartbeat`` already removed); returns the result message."""
        method = getattr(self, name, None)
        if name not in SPECS or method is None:
            raise ToolError(f"No function named {name}")
        return method(**args)

    # --- messaging ---------------------------------------------------------------------------------
    def send_message(self, message: str) -> str:
        return "Sent message successfully."

    # --- core memory -------------------------------------------------------------------------------
    def _block(self, label: str) -> Block:
        blocks = {b.label: b for b in self.store.blocks(self.agent_id)}
        if label not in blocks:
            raise ToolError(f"No core memory block named {label!r} (have: {', '.join(blocks)})")
        return blocks[label]

    def _write(self, block: Block, value: str) -> str:
        if len(value) > block.limit:
            raise ToolError(over_limit(block.label, block.limit, len(value)))
        self.store.put_block(self.agent_id, Block(block.label, value, block.limit))
        return f"Core memory {block.label} updated ({len(value)}/{block.limit} characters)."

    def core_memory_append(self, label: str, content: str) -> str:
        block = self._block(label)
        if not content.strip():
            raise ToolError("content is empty: nothing to append")
        if content.strip() in block.value:  # small models repeat a save in a loop: say it is done
            raise ToolError(f"Already in core memory ({label}): nothing added. It is saved; carry on, e.g. "
                            "reply to the user with send_message.")
        return self._write(block, f"{block.value}\n{content}" if block.value else content)

    def core_memory_replace(self, label: str, old_content: str, new_content: str) -> str:
        block = self._block(label)
        if not old_content:
            raise ToolError("old_content is empty: give the exact text to replace")
        if old_content not in block.value:
            raise ToolError(f"Edit failed: old_content not found in {label} (it must match the block text exactly)")
        return self._write(block, block.value.replace(old_content, new_content, 1))

    # --- recall storage ----------------------------------------------------------------------------
    def _page(self, page: int) -> int:
        if page < 0:
            raise ToolError(f"page must be 0 or more, not {page}")
        return page

    def conversation_search(self, query: str, page: int) -> str:
        return self.recall_page(query, page).render()

    def recall_page(self, query: str, page: int) -> SearchPage:
        """One page of the recall search conversation_search shows."""
        size, offset = self.options.page_size, self._page(page) * self.options.page_size
        if self.options.recall_search == "text":
            total, found = self.store.search_events(self.agent_id, query=query, offset=offset, limit=size)
            return SearchPage(tuple(e.describe() for e in found), total, page, size)
        ranked = self.rank_recall(query)
        found = self.store.events(self.agent_id, ranked[offset:offset + size])
        return SearchPage(tuple(e.describe() for e in found), len(ranked), page, size)

    def rank_recall(self, query: str) -> list[int]:
        """Message seqs: those containing ``query`` first (oldest first), then those sharing its keywords (most
        shared first). Small models search with whole phrases that rarely occur verbatim."""
        texts = self.store.event_texts(self.agent_id)
        needle, wanted = query.lower(), keywords(query)
        exact = [seq for seq, text in texts if needle in text.lower()]
        seen = set(exact)
        scored = sorted((-len(wanted & keywords(text)), seq) for seq, text in texts if seq not in seen)
        return exact + [seq for score, seq in scored if score < 0]

    def conversation_search_date(self, start_date: str, end_date: str, page: int) -> str:
        start, end = _day(start_date, "start_date"), _day(end_date, "end_date")
        if end < start:
            raise ToolError(f"end_date {end_date} is before start_date {start_date}")
        size = self.options.page_size
        total, found = self.store.search_events(
            self.agent_id, start=start.isoformat(), end=(end + timedelta(days=1)).isoformat(),
            offset=self._page(page) * size, limit=size)
        return SearchPage(tuple(e.describe() for e in found), total, page, size).render()

    # --- archival storage --------------------------------------------------------------------------
    def archival_memory_insert(self, content: str) -> str:
        if not content.strip():
            raise ToolError("content is empty: nothing to insert")
        self.archive.insert([content], self.now())
        return "Inserted into archival memory."

    def archival_memory_search(self, query: str, page: int) -> str:
        return self.archive.search(query, self._page(page)).render()
