"""The values the service returns and every surface renders: pagemind's JSON (:mod:`.shapes`), Letta's
(:mod:`.letta`), OpenAI's (:mod:`.openai_compat`) and the MCP tools read the same typed value, so no surface reads
another's JSON."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ..agent.memory import AgentOptions, Block
    from ..llm.base import Capabilities
    from ..store import AgentRow, RunRow, UserRow


@dataclass(frozen=True)
class Started:
    """A run the service started: its row (queued) and the future of its result."""

    run: RunRow
    future: Future


@dataclass(frozen=True)
class Me:
    """The acting user, as the service knows them, and its auth mode."""

    user: UserRow
    auth: str


@dataclass(frozen=True)
class ModelInfo:
    """The model the service runs, by its identity (never where it is served), its backend and what it can do."""

    model: str
    backend: str
    capabilities: Capabilities


@dataclass(frozen=True)
class AgentView:
    """One of a user's agents as every surface shows it (pagemind's JSON, Letta's ``AgentState``, MCP): its row,
    the user's own name for it, options, core-memory blocks, counts, whether a turn holds it, and the model that
    runs it, named by its identity (never where it is served)."""

    row: AgentRow
    name: str
    options: AgentOptions
    blocks: tuple[Block, ...]
    counts: dict[str, int]
    busy: bool
    running: str | None
    model: str


@dataclass(frozen=True)
class AgentSummary:
    """One of a user's agents as a list shows it: its row, the user's own name for it, its memory's counts and
    whether a turn holds it (no options or blocks: listing reads no agent whole)."""

    row: AgentRow
    name: str
    counts: dict[str, int]
    busy: bool
    running: str | None


@dataclass(frozen=True)
class Unit:
    """One unit of a memory: a ReadAgent page (with its gist), a MemWalker node (a leaf with its summary) or a
    fragment; ``text`` None where a structure lists it without its text."""

    kind: Literal["page", "node", "leaf", "fragment"]
    index: int
    words: int
    text: str | None = None
    gist: str | None = None  # a page's
    id: str | None = None  # a tree node's
    level: int | None = None
    children: tuple[int, ...] = ()
    summary: str | None = None  # a node's
    start: int | None = None  # a fragment's place in its text
    end: int | None = None


@dataclass(frozen=True)
class MemoryUnits:
    """A user's memory of a document (its kind and key) and units of it: its whole structure, or units by
    number with their text."""

    document_id: str
    method: str  # the memory kind: readagent | memwalker | rag
    key: str
    units: tuple[Unit, ...]


@dataclass(frozen=True)
class CitedSpan:
    n: int  # the citation's number, from 1
    start: int  # offsets in the text shown
    end: int


@dataclass(frozen=True)
class CitedPlace:
    """A run's citation ``n`` in its place: the text around it (``offset`` into the cited text of ``chars``) and
    every citation of the run inside that window as spans of it."""

    run_id: str
    n: int
    citation: dict[str, Any]  # as the run's result recorded it
    text: str
    offset: int
    chars: int
    spans: tuple[CitedSpan, ...]


__all__ = ["AgentView", "CitedPlace", "CitedSpan", "Me", "MemoryUnits", "ModelInfo", "Started", "Unit"]
