"""The values the store takes and returns: plain frozen dataclasses or primitives, so no connection, cursor or row
object leaves it and the agent store, the embedding cache and the response cache work on either database."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..errors import ConfigError
from ..hashing import content_hash
from ..limits import check_list_limit
from ..llm.base import LLMResponse

if TYPE_CHECKING:
    from .sql import SQLStore as SQLStore


T = TypeVar("T")
U = TypeVar("U")


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a listing, in the listing's order, and ``next``: the cursor to pass as ``after`` for the page
    that follows (the last item's id or name), None on the last page. Every list of the store, the service and its
    surfaces is read and sent a page at a time (at most :data:`pagemind.limits.MAX_LIST` items)."""

    items: tuple[T, ...]
    next: str | int | None = None

    @classmethod
    def read(cls, fetch: Callable[[int], Sequence[T]], limit: int, cursor: Callable[[T], str | int]) -> Page[T]:
        """A page of at most ``limit`` items (1 to :data:`~pagemind.limits.MAX_LIST`, else an ``InputError``):
        ``fetch(n)`` reads n rows, one more than ``limit``, so the page knows whether more follow; then the cursor
        after its last item."""
        rows = fetch(check_list_limit(limit) + 1)
        items = tuple(rows[:limit])
        return cls(items, cursor(items[-1]) if len(rows) > limit and items else None)

    @staticmethod
    def walk(read: Callable[[Any], Page[U]]) -> Iterator[U]:
        """Every item of a listing, reading it a page at a time: ``read(cursor)`` is the page after ``cursor``
        (None: the first)."""
        cursor: str | int | None = None
        while True:
            page = read(cursor)
            yield from page.items
            if page.next is None:
                return
            cursor = page.next

    def map(self, render: Callable[[T], U]) -> Page[U]:
        return Page(tuple(render(x) for x in self.items), self.next)

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


class StoreTooNew(ConfigError):
    """The store records a migration this pagemind does not know: it was written by a newer version."""


def memory_key(document_id: str, method: str, settings: dict[str, Any], model: str, scope: str = "") -> str:
    """The content address of a memory: document + method + settings + model + scope (whose memory it is; ``""``,
    the local user's, leaves the key as it was before scopes existed)."""
    fields = {"document": document_id, "method": method, "settings": settings, "model": model}
    return content_hash({**fields, "scope": scope} if scope else fields)


LOCAL_USER = "local"  # the machine's own user: the CLI, ``pagemind mcp`` and ``pagemind serve --auth none``


def memory_scope(store: SQLStore, user_id: int | None) -> str:
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
    description: str = ""


@dataclass(frozen=True)
class BlockVersionRow:
    """One version of a core-memory block: what a write made it (``version`` 1, 2, ... per label), what caused the
    write (``step 12: core_memory_append``, ``api: ann``, ``revert to 3``...) and when (epoch seconds)."""

    label: str
    version: int
    value: str
    limit: int
    description: str
    cause: str
    created: float


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
    superseded_by: int | None = None  # the passage that replaced this one (None: it holds)
    superseded: str | None = None  # when (the agent's clock)
    repeats: tuple[tuple[str, str | None], ...] = ()  # (time, source) of repeats not stored again or folded in


@dataclass(frozen=True)
class LockHolder:
    """Who holds a lease (a build, an agent's turn, a run), and when it last said it is alive."""

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
class LibraryRow:
    """A user's library: its name, how many documents it holds and their words."""

    id: int
    name: str
    created: float
    documents: int = 0
    words: int = 0


@dataclass(frozen=True)
class LibraryDocumentRow:
    """One document of a library: its name there, its text's id and size, the file it was read from."""

    name: str
    document_id: str
    words: int
    chars: int
    origin: str | None
    added: float
    previous_id: str | None = None  # the text this one replaced (kept one version back, for reuse)


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
    usage: dict[str, Any] | None = None  # its totals (calls, tokens, seconds), kept when it ended


@dataclass(frozen=True)
class StepRow:
    """One step of a run, in the order it happened: an LLM call, a decision, a phase, an agent step, the result."""

    run_id: str
    seq: int
    kind: str
    data: dict[str, Any]
    created: float


class StoreResponseCache:
    """The LLM response cache of a store, content-addressed on model + request (``LLMRequest.cache_key``)."""

    def __init__(self, store: SQLStore) -> None:
        self.store = store

    def get(self, key: str) -> LLMResponse | None:
        return self.store.get_response(key)

    def put(self, key: str, response: LLMResponse) -> None:
        self.store.put_response(key, response)

    def tokens(self, key: str) -> int | None:
        """A prompt's token count kept by :meth:`put_tokens` (``key``: model and prompt, :meth:`LLM.count_key`)."""
        return self.store.token_count(key)

    def put_tokens(self, key: str, tokens: int) -> None:
        self.store.put_token_count(key, tokens)
