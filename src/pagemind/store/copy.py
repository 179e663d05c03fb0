"""Moving a store: every row of pagemind's tables from one store into another (SQLite -> Postgres and back), ids
included, then the counts of both compared.

Into an empty destination everything is copied as it is, in one transaction: a failure leaves the destination
untouched. With ``merge`` the destination may hold data already: content-addressed rows (documents and their
texts, memories and their items, embeddings, cached LLM replies) are added where their key is missing and left
alone where it is there; agents, users and runs carry ids the two stores assigned independently, so each of those
groups is copied only when the destination has none of it yet (otherwise the copy is refused before anything is
written). Leases (builds, agent turns) are not copied (they belong to running processes)."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice

from ..errors import PagemindError
from .sql import SQLStore

# (table, columns), parents before children (foreign keys hold at every insert)
TABLES: list[tuple[str, tuple[str, ...]]] = [
    ("documents", ("id", "name", "words", "chars", "created")),
    ("document_texts", ("document_id", "text", "structure")),
    ("llm_cache", ("key", "model", "text", "prompt_tokens", "completion_tokens", "seconds", "finish_reason",
                   "created", "tool_calls", "logprobs")),
    ("file_reads", ("digest", "document_id", "text", "structure", "created")),
    ("token_counts", ("key", "tokens")),
    ("memories", ("key", "document_id", "method", "settings", "model", "status", "created", "updated",
                  "build_usage", "scope")),
    ("memory_items", ("memory_key", "kind", "idx", "payload")),
    ("embeddings", ("model", "text_hash", "chunks", "dim", "vectors", "created")),
    ("users", ("id", "name", "created")),
    ("api_keys", ("hash", "user_id", "created")),
    ("user_documents", ("user_id", "document_id", "name", "created")),
    ("agents", ("id", "name", "settings", "state", "created")),
    ("agent_blocks", ("agent_id", "label", "value", "char_limit", "position", "updated", "description")),
    ("agent_block_versions", ("agent_id", "label", "version", "value", "char_limit", "description", "cause",
                              "created")),
    ("agent_messages", ("agent_id", "seq", "kind", "text", "payload", "created", "in_context")),
    ("agent_passages", ("id", "agent_id", "text", "summary", "source", "embedding", "embedder", "created",
                        "superseded_by", "superseded", "repeats")),
    ("agent_forgotten", ("id", "agent_id", "passage", "embedding", "cause", "forgotten")),
    ("agent_owners", ("agent_id", "user_id")),
    ("runs", ("id", "user_id", "kind", "method", "target", "request", "status", "created", "started", "finished",
              "result", "error", "cancel_requested", "usage")),
    ("run_steps", ("run_id", "seq", "kind", "data", "created")),
    ("libraries", ("id", "scope", "name", "created")),
    ("library_documents", ("library_id", "name", "document_id", "origin", "previous_id", "added")),
]
NOT_COPIED = ("leases",)  # held by running processes, meaningless in another store

# groups whose ids each store assigns itself: merged only into a destination that has none of them
GROUPS = {"users": ("users", "api_keys", "user_documents"),
          "agents": ("agents", "agent_blocks", "agent_block_versions", "agent_messages", "agent_passages",
                     "agent_forgotten", "agent_owners"),
          "runs": ("runs", "run_steps"), "libraries": ("libraries", "library_documents")}
_BATCH = 1000


class CopyRefused(PagemindError):
    """The destination holds data a copy would mix with or overwrite."""


@dataclass(frozen=True)
class TableCount:
    table: str
    source: int
    before: int  # in the destination before the copy
    after: int  # in the destination after it
    copied: int

    @property
    def ok(self) -> bool:
        """Every source row is in the destination, and the destination gained exactly the rows copied."""
        return self.after == self.before + self.copied and self.after >= self.source and (
            self.before > 0 or self.after == self.source)


@dataclass(frozen=True)
class CopyReport:
    tables: list[TableCount]

    @property
    def ok(self) -> bool:
        return all(t.ok for t in self.tables)


def copy_store(source: SQLStore, destination: SQLStore, *, merge: bool = False) -> CopyReport:
    """Copy every table of ``source`` into ``destination`` (see the module's docstring); the counts of each."""
    before = {table: destination.count_rows(table) for table, _ in TABLES}
    if not merge and any(before.values()):
        held = ", ".join(f"{t} ({n})" for t, n in before.items() if n)
        raise CopyRefused(f"the destination is not empty: {held}; copy into an empty store, or pass --merge to add "
                          "what it lacks")
    counts = {table: source.count_rows(table) for table, _ in TABLES}
    clashes = [group for group, tables in GROUPS.items()
               if any(counts[t] for t in tables) and any(before[t] for t in tables)]
    if clashes:
        raise CopyRefused(f"both stores have {', '.join(clashes)}: their ids would collide, so they cannot be merged "
                          "(merge only adds documents, memories, embeddings and cached replies to a store that has "
                          "its own of those); copy into an empty store instead")
    copied = {}
    with destination.transaction():
        for table, columns in TABLES:
            n, rows = 0, source.table_rows(table, columns)
            while batch := list(islice(rows, _BATCH)):
                n += destination.add_table_rows(table, columns, batch, skip_existing=merge)
            copied[table] = n
    return CopyReport([TableCount(table, counts[table], before[table], destination.count_rows(table), copied[table])
                       for table, _ in TABLES])
