"""A user's documents and their memories; index and ask."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...answering.question import Question, ReplySettings
from ...conversation import Turn
from ...errors import InputError, NotFound
from ...limits import LIST_PAGE, QUEUED_READS
from ...runs import RunsQueued
from ...store import Page
from ..shapes import AskRequest, IndexRequest
from ..views import MemoryUnits, Started, Unit
from .base import Progress, ServiceBase

if TYPE_CHECKING:
    from ...store import (
        DocumentRow,
        MemoryContent,
        MemoryRecord,
        UserRow,
    )
    from ...text import Document



class DocumentOps(ServiceBase):
    """A user's documents, what was read of them, their memories; index and ask runs."""

    def add_document(self, user: UserRow, source: str | Path | bytes, name: str | None,
                     encoding: str | None = None, wanted: Callable[[], bool] | None = None) -> DocumentRow:
        """Keep an upload (or a text) as one of the user's documents; ``wanted``: whether its client still waits,
        looked at after every page read (a PDF's OCR stops when it has left)."""
        return self.pm.add_document(source, name, user_id=user.id, encoding=encoding or "utf-8", wanted=wanted)

    def read_document(self, user: UserRow, source: str | Path, name: str, encoding: str | None = None) -> Started:
        """Read an upload as a background run (``read``, targeting the upload's name) on the worker pool: its
        pages are the run's progress, the kept document its result, a cancel stops it at the next page and keeps
        nothing. A file ``source`` is a spooled upload of the run's own, removed when the run ends."""
        waiting = sum(len(self.pm.runs.list(user.id, kind="read", status=status, limit=QUEUED_READS))
                      for status in ("queued", "running"))
        if waiting >= QUEUED_READS:
            raise RunsQueued(f"you have {waiting} uploads being read in the background (at most {QUEUED_READS}): "
                             "send this one when one of them is done, or without wait=false")
        run = self.pm.runs.create("read", name, user_id=user.id, request={"document": name})

        def drop() -> None:
            if isinstance(source, Path):
                source.unlink(missing_ok=True)

        def job() -> DocumentRow:
            try:
                return self.pm.add_document(source, name, user_id=user.id, encoding=encoding or "utf-8", run=run)
            finally:
                drop()

        def unstarted(future: Future[DocumentRow]) -> None:
            if future.cancelled():  # never started (the server stopped)
                drop()

        future = self.workers.submit(run.id, job)
        future.add_done_callback(unstarted)
        return Started(run, future)

    def documents(self, user: UserRow, *, after: str | None = None, limit: int = LIST_PAGE) -> Page[DocumentRow]:
        """One page of the user's documents, newest first: those after their document ``after``."""
        if after is not None and self.pm.store.user_document(user.id, after) is None:
            raise NotFound(f"after: you have no document {after!r} to list after")
        return Page.read(lambda n: self.pm.documents(user.id, after=after, limit=n), limit, lambda d: d.id)

    def document(self, user: UserRow, doc_id: str) -> tuple[DocumentRow, list[MemoryRecord]]:
        """The document with the memories the user's own requests built of it."""
        return self.pm.user_document(doc_id, user.id), self.pm.memories(doc_id, user_id=user.id)

    def remove_document(self, user: UserRow, doc_id: str) -> None:
        self.pm.remove_document(doc_id, user.id)

    def sections(self, user: UserRow, doc_id: str) -> Document:
        """One of the user's documents as it was read: its own structure (format, pages, sections)."""
        return self.pm.open_document(doc_id, user_id=user.id)

    def memory(self, user: UserRow, doc_id: str, key: str) -> MemoryContent:
        """One of the user's memories of the document with its stored items (pages, gists, tree nodes,
        fragments); another user's memory of the same text is not found."""
        return self.pm.memory(doc_id, key, user_id=user.id)

    def _memory_of(self, user: UserRow, doc_id: str, method: str) -> Any:
        """The user's finished memory of a document built by ``method`` (the memory kind: ReadAgent's three methods
        share one), the most recently updated; :class:`NotFound` when there is none yet."""
        from ...methods import registry

        kind = getattr(registry.get(method), "memory_kind", None) if method in registry.names() else None
        if kind is None:
            raise InputError(f"{method!r} keeps no memory to show (readagent-p, readagent-s, gistmem, memwalker, "
                             "rag, op-rag do)")
        found = [m for m in self.pm.memories(doc_id, user_id=user.id) if m.method == kind and m.status == "complete"]
        if not found:
            raise NotFound(f"no {kind} memory of document {doc_id!r} yet: ask it (or index it) with {method} first")
        return found[0]

    def structure(self, user: UserRow, doc_id: str, method: str = "readagent-p") -> MemoryUnits:
        """A memory's structure: ReadAgent's pages with their gists and sizes, MemWalker's tree (every node's id,
        level, children and summary), or the fragments with their sizes and places; no unit's text."""
        record = self._memory_of(user, doc_id, method)
        units = _units(record.method, self.pm.memory(doc_id, record.key, user_id=user.id).items, None)
        return MemoryUnits(doc_id, record.method, record.key, tuple(units))

    def units(self, user: UserRow, doc_id: str, which: str, method: str = "readagent-p") -> MemoryUnits:
        """Units of a memory by number (``which``: ``3``, ``3-7``, ``1,4,9``): ReadAgent's pages with their gists,
        MemWalker's leaves with their summaries, or fragments; each with its text."""
        record = self._memory_of(user, doc_id, method)
        wanted = numbers(which)
        found = _units(record.method, self.pm.memory(doc_id, record.key, user_id=user.id).items, wanted)
        missing = sorted(wanted - {u.index for u in found})
        if missing:
            raise NotFound(f"the {record.method} memory of {doc_id!r} has no unit {missing[0]}")
        return MemoryUnits(doc_id, record.method, record.key, tuple(found))

    def index(self, user: UserRow, doc_id: str | None, body: IndexRequest, progress: Progress | None = None, *,
              library: str | None = None) -> Started:
        document = self.source(user, doc_id, library)
        options = self.check_method(body.method, body.options)
        run = self.pm.runs.create("index", document.id, method=body.method, user_id=user.id,
                                  request={"document": document.name, "options": options})
        return Started(run, self.workers.submit(run.id, lambda: self.pm.index(
            document, body.method, progress, run=run, user_id=user.id, **options)))

    def ask(self, user: UserRow, doc_id: str | None, body: AskRequest, progress: Progress | None = None, *,
            library: str | None = None, on_text: Callable[[str], None] | None = None,
            reply: ReplySettings | None = None, conversation: Sequence[Turn] = ()) -> Started:
        """Answer about one of the user's documents (``doc_id``) or libraries (``library``), on the worker pool;
        ``reply``: the asker's settings of the answer call (OpenAI's ``max_tokens``, ``temperature``...);
        ``conversation``: the turns before the question (:meth:`Pagemind.ask`)."""
        document = self.source(user, doc_id, library)
        options = dict(body.method_options)
        if body.budget is not None:
            options["budget"] = body.budget
        options = self.check_method(body.method, options)
        question = replace(Question.parse(body.question, tuple(body.options)), reply=reply)
        run = self.pm.runs.create("ask", document.id, method=body.method, user_id=user.id, request={
            "document": document.name, "question": body.question, "options": body.options, "method_options": options,
            **({"reply": asdict(reply)} if reply is not None else {}),
            **({"conversation": [asdict(t) for t in conversation]} if conversation else {})})
        return Started(run, self.workers.submit(run.id, lambda: self.pm.ask(
            document, question, (), body.method, progress=progress, on_text=on_text, run=run,
            user_id=user.id, conversation=conversation, **options)))


def numbers(which: str, most: int = 200) -> set[int]:
    """``3``, ``3-7``, ``1,4,9-11`` as a set of numbers; an :class:`InputError` for anything else or over ``most``."""
    out: set[int] = set()
    for part in (p.strip() for p in which.split(",")):
        first, dash, last = part.partition("-")
        if not first.isdigit() or (dash and not last.isdigit()):
            raise InputError(f"{which!r}: give unit numbers as 3, 3-7 or 1,4,9")
        lo, hi = int(first), int(last) if dash else int(first)
        if hi < lo or hi - lo >= most or len(out) + hi - lo + 1 > most:
            raise InputError(f"{which!r}: at most {most} units, low to high")
        out.update(range(lo, hi + 1))
    return out


def _units(kind: str, items: dict[str, list[dict[str, Any]]], wanted: set[int] | None) -> list[Unit]:
    """The units of a memory's stored items (``wanted`` None: its whole structure, without texts; else the units
    of those numbers with their texts: a tree's leaves only)."""
    def words(text: str) -> int:
        return len(text.split())

    if kind == "readagent":
        gists = {g["page"]: g["text"] for g in items.get("gist", [])}
        return [Unit("page", p["index"], words(p["text"]), None if wanted is None else p["text"],
                     gist=gists.get(p["index"], "")) for p in items.get("page", [])
                if wanted is None or p["index"] in wanted]
    if kind == "memwalker":
        return [Unit("node" if wanted is None else "leaf", n["index"], words(n.get("text") or n["summary"]),
                     None if wanted is None else n["text"], id=n["id"], level=n["level"],
                     children=tuple(n["children"]), summary=n["summary"]) for n in items.get("node", [])
                if wanted is None or (n["level"] == 0 and n["index"] in wanted)]
    return [Unit("fragment", f["index"], words(f["text"]), None if wanted is None else f["text"],
                 start=f.get("start"), end=f.get("end")) for f in items.get("fragment", [])
            if wanted is None or f["index"] in wanted]
