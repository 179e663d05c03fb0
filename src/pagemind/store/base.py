"""The storage interface every backend implements (SQLite today, Postgres next), and the values it takes and
returns. Values are plain frozen dataclasses or primitives: no connection, cursor or row object leaves a backend,
so the agent store, the embedding cache and the response cache work on any implementation."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..hashing import content_hash
from ..llm.base import LLMResponse


class StoreTooNew(ConfigError):
    """The store records a migration this pagemind does not know: it was written by a newer version."""


def memory_key(document_id: str, method: str, settings: dict[str, Any], model: str, scope: str = "") -> str:
    """The content address of a memory: document + method + settings + model + scope (whose memory it is; ``""``,
    the local user's, leaves the key as it was before scopes existed)."""
    fields = {"document": document_id, "method": method, "settings": settings, "model": model}
    return content_hash({**fields, "scope": scope} if scope else fields)


LOCAL_USER = "local"  # the machine's own user: the CLI, ``pagemind mcp`` and ``pagemind serve --auth none``


def memory_scope(store: "StoreBackend", user_id: int | None) -> str:
    """Whose memories and cached LLM replies a user's requests use: ``""`` for the local user (``user_id`` None,
    or the user named ``local``), shared with the CLI; ``u<id>`` for every other user, theirs alone."""
    if user_id is None:
        return ""
    local = store.get_user(LOCAL_USER)
    return "" if local is not None and local.id == user_id else f"u{user_id}"


@dataclass(frozen=True)
class MemoryRecord:
    """One memory of a document built by one method with one model and settings, in one scope."""

    key: str
    document_id: str
    method: str
    settings: dict[str, Any]
    model: str
    status: str  # building | complete
    scope: str = ""  # whose memory: "" the local user's, u<id> a service user's (:func:`memory_scope`)


@dataclass(frozen=True)
class MemoryContent:
    """A memory with its stored units by kind (pages, gists, tree nodes, fragments...), each kind in index order."""

    memory: MemoryRecord
    items: dict[str, list[dict[str, Any]]]


@dataclass(frozen=True)
class MemorySummary:
    """A stored memory as ``pagemind memories`` lists it."""

    key: str
    document_id: str
    document_name: str
    document_words: int
    method: str
    settings: dict[str, Any]
    model: str
    status: str  # building | complete
    items: int  # stored units (pages, gists, nodes, fragments...)
    bytes: int  # size of their stored payloads
    build_usage: dict[str, Any] | None  # what building it cost (summed over attempts), None: not recorded
    updated: float
    scope: str = ""  # whose memory (:attr:`MemoryRecord.scope`)


@dataclass(frozen=True)
class StoredVectors:
    """The cached embedding of one text: ``chunks`` x ``dim`` float32 values, row-major."""

    chunks: int
    dim: int
    data: bytes


@dataclass(frozen=True)
class AgentRow:
    """One agent as stored: its settings and bookkeeping as plain JSON-able dicts."""

    id: int
    name: str
    settings: dict[str, Any]
    state: dict[str, Any]
    created: float


@dataclass(frozen=True)
class BlockRow:
    """One core-memory block of an agent."""

    label: str
    value: str
    limit: int


@dataclass(frozen=True)
class EventRow:
    """One entry of an agent's history; ``seq`` is its place in it, ``text`` what recall search matches."""

    kind: str
    payload: dict[str, Any]
    created: str  # 'YYYY-MM-DD HH:MM:SS' (agent clock)
    seq: int = 0
    in_context: bool = True
    text: str = ""


@dataclass(frozen=True)
class PassageRow:
    """One archival passage of an agent; ``embedding`` is a float32 unit vector (bytes) or None."""

    text: str
    created: str
    summary: str | None = None
    source: str | None = None
    embedding: bytes | None = None
    embedder: str | None = None
    id: int = 0


@dataclass(frozen=True)
class LockHolder:
    """Who holds an agent's turn lock, and when it last said it is alive."""

    owner: str
    pid: int
    host: str
    refreshed: float


@dataclass(frozen=True)
class UserRow:
    """A user of ``pagemind serve``; their API keys are stored hashed, never in clear."""

    id: int
    name: str
    created: float


@dataclass(frozen=True)
class DocumentRow:
    """A document as one user holds it (the text is content-addressed and shared; the name is the user's)."""

    id: str
    name: str
    words: int
    chars: int
    created: float


@dataclass(frozen=True)
class RunRow:
    """One recorded run: an index build, an answer or an agent turn. ``user_id`` None: the local user (CLI, Python)."""

    id: str
    user_id: int | None
    kind: str  # index | ask | turn
    method: str | None  # the reader, or 'memgpt' for a turn
    target: str  # the document id, or the agent id
    request: dict[str, Any]  # what was asked: question, options, method options...
    status: str  # queued | running | done | failed | cancelled
    created: float
    started: float | None = None
    finished: float | None = None
    result: dict[str, Any] | None = None
    error: str | None = None
    cancel_requested: bool = False


@dataclass(frozen=True)
class StepRow:
    """One step of a run, in the order it happened: an LLM call, a decision, a phase, an agent step, the result."""

    run_id: str
    seq: int
    kind: str
    data: dict[str, Any]
    created: float


class StoreBackend(ABC):
    """Documents, memories, embeddings, the LLM response cache and MemGPT agents, in one database."""

    # --- lifecycle ---------------------------------------------------------------------------------
    @abstractmethod
    def close(self) -> None:
        """Release the connection(s)."""

    @abstractmethod
    def transaction(self) -> AbstractContextManager[None]:
        """One write transaction: every store call inside it (this thread) commits or rolls back together."""

    @abstractmethod
    def applied_migrations(self) -> list[str]:
        """Names of the schema migrations recorded in this store, in the order they were applied."""

    # --- documents and memories --------------------------------------------------------------------
    @abstractmethod
    def put_document(self, doc_id: str, name: str, words: int, chars: int) -> None:
        """Record a document (once; a second call with the same id changes nothing)."""

    @abstractmethod
    def open_memory(self, key: str, document_id: str, method: str, settings: dict[str, Any],
                    model: str, scope: str = "") -> MemoryRecord:
        """Create the memory ``key`` as 'building' in ``scope`` unless it exists; return it as stored."""

    @abstractmethod
    def get_memory(self, key: str) -> MemoryRecord | None:
        """The memory with this key, or None."""

    @abstractmethod
    def memories_for(self, document_id: str, method: str | None = None, *,
                     scope: str | None = None) -> list[MemoryRecord]:
        """The memories of a document (of one method, of one scope if given; None: every scope), most recently
        updated first."""

    @abstractmethod
    def memory_items(self, key: str) -> dict[str, list[dict[str, Any]]]:
        """Every stored unit of a memory: the payloads of each kind, by index (no kind: absent)."""

    @abstractmethod
    def list_memories(self) -> list[MemorySummary]:
        """Every stored memory with its document, size and build cost, most recently updated first."""

    @abstractmethod
    def delete_memory(self, key: str) -> bool:
        """Delete a memory and its items; False when there was none."""

    @abstractmethod
    def add_build_usage(self, key: str, usage: dict[str, Any], resumed: bool) -> None:
        """Add one build attempt's LLM usage to the memory's recorded build cost."""

    @abstractmethod
    def clear_responses(self) -> int:
        """Delete every cached LLM response; return how many there were."""

    @abstractmethod
    def mark_complete(self, key: str) -> None:
        """Mark a memory as completely built."""

    @abstractmethod
    def put_item(self, key: str, kind: str, idx: int, payload: dict[str, Any]) -> None:
        """Store (or replace) one unit of a memory: a page, a gist, a node, a fragment."""

    @abstractmethod
    def put_items(self, key: str, kind: str, items: Sequence[tuple[int, dict[str, Any]]]) -> None:
        """Store (or replace) many units of one kind in one transaction."""

    @abstractmethod
    def items(self, key: str, kind: str) -> list[dict[str, Any]]:
        """The payloads of one kind of a memory, by index."""

    @abstractmethod
    def iter_items(self, key: str, kind: str) -> Iterator[tuple[int, dict[str, Any]]]:
        """(index, payload) of one kind of a memory, by index."""

    @abstractmethod
    def delete_items(self, key: str, kind: str, from_idx: int = 0) -> None:
        """Delete the units of one kind whose index is ``from_idx`` or more."""

    # --- embedding cache ---------------------------------------------------------------------------
    @abstractmethod
    def get_embeddings(self, model: str, text_hashes: Sequence[str]) -> dict[str, StoredVectors]:
        """The cached vectors of these text hashes under an embedder id (missing ones are absent)."""

    @abstractmethod
    def put_embeddings(self, model: str, vectors: Mapping[str, StoredVectors]) -> None:
        """Store (or replace) vectors by text hash, all in one transaction."""

    @abstractmethod
    def count_embeddings(self, model: str | None = None) -> int:
        """How many texts have cached vectors (under one embedder id if given)."""

    # --- LLM response cache ------------------------------------------------------------------------
    @abstractmethod
    def get_response(self, key: str) -> LLMResponse | None:
        """The cached reply of a request key (marked ``cached``), or None."""

    @abstractmethod
    def put_response(self, key: str, response: LLMResponse) -> None:
        """Cache a reply under a request key."""

    # --- agents ------------------------------------------------------------------------------------
    @abstractmethod
    def create_agent(self, name: str, settings: dict[str, Any], state: dict[str, Any], created: float,
                     blocks: Sequence[BlockRow]) -> int | None:
        """Create an agent with its core blocks (atomically); its id, or None if the name is taken."""

    @abstractmethod
    def get_agent(self, name: str) -> AgentRow | None:
        """The agent with this name, or None."""

    @abstractmethod
    def list_agents(self) -> list[AgentRow]:
        """Every agent, by name."""

    @abstractmethod
    def delete_agent(self, name: str) -> bool:
        """Delete an agent and everything it stored; False if there was none."""

    @abstractmethod
    def set_agent_state(self, agent_id: int, state: dict[str, Any]) -> None:
        """Replace an agent's bookkeeping."""

    @abstractmethod
    def set_agent_settings(self, agent_id: int, settings: dict[str, Any]) -> None:
        """Replace an agent's settings."""

    @abstractmethod
    def agent_blocks(self, agent_id: int) -> list[BlockRow]:
        """An agent's core blocks in their order."""

    @abstractmethod
    def put_agent_block(self, agent_id: int, block: BlockRow) -> None:
        """Update a block by label, or add it at the end."""

    @abstractmethod
    def append_agent_events(self, agent_id: int, events: Sequence[EventRow]) -> list[int]:
        """Append events (their ``seq`` ignored) to the history atomically; return their new ``seq``."""

    @abstractmethod
    def agent_queue(self, agent_id: int) -> list[EventRow]:
        """The in-context events: the summary first, then the rest by ``seq``."""

    @abstractmethod
    def evict_agent_events(self, agent_id: int, seqs: Sequence[int]) -> None:
        """Take these events and any summary out of the context (they stay in the history)."""

    @abstractmethod
    def count_agent_events(self, agent_id: int, in_context: bool | None = None) -> int:
        """How many events the history holds (only those in or out of context if given)."""

    @abstractmethod
    def recent_agent_events(self, agent_id: int, limit: int) -> list[EventRow]:
        """The last ``limit`` events, oldest first."""

    @abstractmethod
    def search_agent_events(self, agent_id: int, kinds: Sequence[str], *, query: str | None = None,
                            start: str | None = None, end: str | None = None, offset: int = 0,
                            limit: int = 5) -> tuple[int, list[EventRow]]:
        """(total, one page) of events of these kinds: case-insensitive substring and/or [start, end) time."""

    @abstractmethod
    def agent_event_texts(self, agent_id: int, kinds: Sequence[str]) -> list[tuple[int, str]]:
        """(seq, search text) of every event of these kinds, oldest first."""

    @abstractmethod
    def agent_events(self, agent_id: int, seqs: Sequence[int]) -> list[EventRow]:
        """The events with these ``seq``, in the order given (unknown ones left out)."""

    @abstractmethod
    def insert_agent_passages(self, agent_id: int, passages: Sequence[PassageRow]) -> list[int]:
        """Add passages (their ``id`` ignored) in one transaction; return their new ids."""

    @abstractmethod
    def count_agent_passages(self, agent_id: int) -> int:
        """How many archival passages an agent has."""

    @abstractmethod
    def search_agent_passages(self, agent_id: int, query: str, offset: int = 0,
                              limit: int | None = None) -> tuple[int, list[PassageRow]]:
        """(total, one page by id) of passages whose text or summary contains ``query`` (case-insensitive)."""

    @abstractmethod
    def agent_passage_vectors(self, agent_id: int, embedder: str) -> list[tuple[int, bytes]]:
        """(id, embedding) of every passage embedded by this embedder."""

    @abstractmethod
    def agent_passage_texts(self, agent_id: int) -> list[tuple[int, str]]:
        """(id, summary and text) of every passage, by id."""

    @abstractmethod
    def agent_passages(self, agent_id: int, ids: Sequence[int]) -> list[PassageRow]:
        """The passages with these ids, in the order given (unknown ones left out; no embeddings)."""

    @abstractmethod
    def nearest_agent_passages(self, agent_id: int, embedder: str, query: bytes,
                               limit: int | None = None) -> tuple[int, list[int]]:
        """(how many passages this embedder embedded, the ids of the first ``limit`` (all if None) by inner
        product with ``query``, best first, ties by id: the order of :func:`pagemind.store.vectors.rank`)."""

    @abstractmethod
    def try_lock_agent(self, agent_id: int, owner: str, pid: int, host: str,
                       stale: Callable[[LockHolder], bool]) -> bool:
        """Take an agent's turn lock if it is free, ours, or ``stale(holder)``; True if taken."""

    @abstractmethod
    def refresh_agent_lock(self, agent_id: int, owner: str) -> None:
        """Say the lock's holder is alive."""

    @abstractmethod
    def release_agent_lock(self, agent_id: int, owner: str) -> None:
        """Release the lock if ``owner`` holds it."""

    @abstractmethod
    def agent_lock_holder(self, agent_id: int) -> LockHolder | None:
        """Who holds an agent's turn lock, or None."""


    # --- leases: one holder at a time for a named job (a memory's build), across processes and replicas ---
    @abstractmethod
    def try_lease(self, name: str, owner: str, pid: int, host: str, stale: Callable[[LockHolder], bool]) -> bool:
        """Take the lease ``name`` if it is free, ours, or ``stale(holder)``; True if taken."""

    @abstractmethod
    def refresh_lease(self, name: str, owner: str) -> None:
        """Say the lease's holder is alive."""

    @abstractmethod
    def release_lease(self, name: str, owner: str) -> None:
        """Release the lease if ``owner`` holds it."""

    @abstractmethod
    def lease_holder(self, name: str) -> LockHolder | None:
        """Who holds the lease ``name``, or None."""

    # --- users, their documents and agents (pagemind serve) --------------------------------------------
    @abstractmethod
    def create_user(self, name: str, key_hash: str, created: float) -> int | None:
        """Create a user with one API key (its hash); the new id, or None if the name is taken."""

    @abstractmethod
    def add_user_key(self, user_id: int, key_hash: str, created: float) -> None:
        """Give a user one more API key (its hash)."""

    @abstractmethod
    def user_for_key(self, key_hash: str) -> UserRow | None:
        """The user an API key's hash belongs to, or None."""

    @abstractmethod
    def get_user(self, name: str) -> UserRow | None:
        """The user with this name, or None."""

    @abstractmethod
    def list_users(self) -> list[UserRow]:
        """Every user, by id."""

    @abstractmethod
    def put_document_text(self, doc_id: str, text: str) -> None:
        """Keep a document's text (once; its id is the hash of the text), so it can be read again later."""

    @abstractmethod
    def document_text(self, doc_id: str) -> str | None:
        """A kept document's text, or None."""

    @abstractmethod
    def add_user_document(self, user_id: int, doc_id: str, name: str, created: float) -> None:
        """Give a user a document (a second call renames it)."""

    @abstractmethod
    def user_documents(self, user_id: int) -> list[DocumentRow]:
        """A user's documents, newest first."""

    @abstractmethod
    def user_document(self, user_id: int, doc_id: str) -> DocumentRow | None:
        """One of a user's documents, or None (also when it is another user's)."""

    @abstractmethod
    def remove_user_document(self, user_id: int, doc_id: str) -> bool:
        """Take a document from a user, with the memories of it in the user's own scope (a service user's; the
        local scope is the CLI's too); its text and every memory of it go when no user holds it any more.
        False: none."""

    @abstractmethod
    def set_agent_owner(self, agent_id: int, user_id: int) -> None:
        """Record who an agent belongs to."""

    @abstractmethod
    def agent_owner(self, agent_id: int) -> int | None:
        """The user an agent belongs to, or None (a local agent)."""

    @abstractmethod
    def user_agents(self, user_id: int) -> list[AgentRow]:
        """A user's agents, by id."""

    @abstractmethod
    def get_agent_by_id(self, agent_id: int) -> AgentRow | None:
        """The agent with this id, or None."""

    @abstractmethod
    def erase_user_data(self, user_id: int) -> dict[str, int]:
        """Delete everything of a user (their memories, those of a text another user also holds too; documents they
        alone hold with their texts and memories; agents; runs) and nothing else; the user and their keys stay. The
        local user's memories are the CLI's too: only those of the documents they alone held go. Returns how many
        of each were deleted."""

    # --- runs ----------------------------------------------------------------------------------------
    @abstractmethod
    def create_run(self, run: RunRow) -> None:
        """Record a new run."""

    @abstractmethod
    def get_run(self, run_id: str) -> RunRow | None:
        """The run with this id, or None."""

    @abstractmethod
    def list_runs(self, user_id: int | None, *, all_users: bool = False, kind: str | None = None,
                  target: str | None = None, status: str | None = None, prefix: str | None = None,
                  limit: int = 50, offset: int = 0) -> list[RunRow]:
        """Runs of a user (None: the local user's; ``all_users``: everyone's), newest first; ``prefix``: only
        those whose id starts with it."""

    @abstractmethod
    def count_runs(self, user_id: int | None) -> int:
        """How many runs a user has (None: the local user)."""

    @abstractmethod
    def update_run(self, run_id: str, **fields: Any) -> None:
        """Set some of a run's status, started, finished, result, error."""

    @abstractmethod
    def request_cancel(self, run_id: str) -> bool:
        """Ask a queued or running run to stop; False when it has already ended."""

    @abstractmethod
    def append_run_step(self, run_id: str, kind: str, data: dict[str, Any], created: float) -> int:
        """Append a step; its ``seq`` (0, 1, 2... within the run)."""

    @abstractmethod
    def run_steps(self, run_id: str, after: int = -1, limit: int | None = None) -> list[StepRow]:
        """The steps of a run with ``seq`` greater than ``after``, in order."""

    # --- moving a store (``pagemind store copy``) ------------------------------------------------------
    @abstractmethod
    def table_rows(self, table: str, columns: Sequence[str]) -> Iterator[tuple[Any, ...]]:
        """Every row of one of pagemind's tables (these columns, values as stored), in the order written."""

    @abstractmethod
    def add_table_rows(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], *,
                       skip_existing: bool = False) -> int:
        """Insert rows as they are, ids included (one transaction); ``skip_existing``: leave out rows whose key is
        already there. Returns how many were inserted."""

    @abstractmethod
    def count_rows(self, table: str) -> int:
        """How many rows one of pagemind's tables holds."""


class StoreResponseCache:
    """The LLM response cache of a store, content-addressed on model + request (``LLMRequest.cache_key``)."""

    def __init__(self, store: StoreBackend) -> None:
        self.store = store

    def get(self, key: str) -> LLMResponse | None:
        return self.store.get_response(key)

    def put(self, key: str, response: LLMResponse) -> None:
        self.store.put_response(key, response)
