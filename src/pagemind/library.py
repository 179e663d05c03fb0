"""Libraries: a named set of documents, read by every method as one source composed of per-document memories.

A :class:`Library` is a value: its members (:class:`~pagemind.text.Document`, each under the name it has in the
library) in name order. A reader builds each member's memory as it would build that document alone (so adding a
document builds only that document, and a changed one rebuilds only itself: a memory's key is its text's), then
composes them (:meth:`pagemind.methods.base.Reader.build`): ReadAgent's pages and gists one after another, the
fragments of all documents (each with its document as its source), MemWalker's trees under a library-level tree,
the full texts one after another. Where each member's units sit in the composed memory is its :class:`Shelf`, so
an answer's evidence is placed back in the document it came from and every citation names it.

Stored libraries (``pagemind add NAME PATHS…``) are per user: the store keeps their membership (a document's name
in the library, its text's id, the file it was read from); :class:`Libraries` is that part of the Python API.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import InputError, NotFound
from .limits import MAX_OCR_PAGES
from .text import Document, load_document

if TYPE_CHECKING:
    from .store import LibraryRow, SQLStore

# what a folder read as a library holds (anything else in it is skipped, named in the report)
DOCUMENT_SUFFIXES = frozenset({".txt", ".text", ".md", ".markdown", ".html", ".htm", ".xhtml", ".pdf", ".epub",
                               ".docx", ".rst", ".log"})
MAX_NAME = 255  # characters of a member's name (as of an uploaded document's)
NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$"  # a library's name: letters, digits, '_', '.', '-'; 1-100 characters


@dataclass(frozen=True)
class Library:
    """Documents read together: ``members`` in name order, each a :class:`Document` named as in the library."""

    name: str
    members: tuple[Document, ...]

    def __post_init__(self) -> None:
        if not self.members:
            raise InputError(f"library {self.name!r} holds no document (add some: pagemind add {self.name} PATHS…)")
        names = [m.name for m in self.members]
        if len(set(names)) != len(names):
            raise InputError(f"library {self.name!r}: two documents are named alike")

    # each computed once per value: a member's id hashes its whole text, and the joined text copies every text
    @cached_property
    def id(self) -> str:
        """The library's content address: its members' names and texts (not its own name)."""
        digest = hashlib.sha256(b"pagemind-library\n")
        for m in self.members:
            digest.update(f"{m.name}\0{m.id}\n".encode())
        return "lib-" + digest.hexdigest()

    @cached_property
    def words(self) -> int:
        return sum(m.words for m in self.members)

    @property
    def chars(self) -> int:
        return sum(len(m.text) for m in self.members)

    @cached_property
    def text(self) -> str:
        """Every document in full, one after another, each under its name (what the full-text reader reads)."""
        return "\n\n".join(f"Document: {m.name}\n\n{m.text}" for m in self.members)

    def member(self, doc_id: str) -> Document | None:
        return next((m for m in self.members if m.id == doc_id), None)

    def __len__(self) -> int:
        return len(self.members)


@dataclass(frozen=True)
class Shelf:
    """Where one member's units sit in a composed memory: ``count`` units of kind ``unit`` from index ``first``."""

    document: Document
    unit: str  # page | leaf | fragment | text
    first: int
    count: int

    def holds(self, unit: str, index: int | None) -> bool:
        return unit == self.unit and index is not None and self.first <= index < self.first + self.count


def shelves(library: Library, unit: str, counts: Sequence[int]) -> tuple[Shelf, ...]:
    """The shelves of members holding ``counts`` units each, numbered one after another from 0."""
    out, first = [], 0
    for member, count in zip(library.members, counts):
        out.append(Shelf(member, unit, first, count))
        first += count
    return tuple(out)


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str


@dataclass
class Found:
    """The documents of some paths (files, folders), each with the name it takes in a library."""

    documents: list[tuple[str, Document, str | None]] = field(default_factory=list)  # (name, document, file)
    skipped: list[Skipped] = field(default_factory=list)


def read_paths(paths: Iterable[str | Path], *, max_bytes: int, encoding: str = "utf-8", ocr: str = "auto",
               ocr_pages: int = MAX_OCR_PAGES) -> Found:
    """Read files and folders as library members: a file is named by its file name, a folder's documents by their
    path inside the folder (``reports/2024/q1.pdf`` added as folder ``reports``: ``2024/q1.pdf``). Files that are
    not documents (by suffix) are skipped in a folder; a file named directly is read whatever its suffix. A file
    that cannot be read is skipped with its reason (one bad file does not lose the others)."""
    found = Found()
    for given in paths:
        p = Path(given)
        if not p.exists():
            raise InputError(f"{given}: no such file or folder")
        files = [(p.name, p)] if p.is_file() else list(_walk(p))
        if p.is_dir() and not files:
            found.skipped.append(Skipped(str(given), "no document files in this folder (.txt .md .html .pdf .epub "
                                                      ".docx ...)"))
        for name, path in files:
            try:
                document = load_document(path, encoding=encoding, max_bytes=max_bytes, name=name, ocr=ocr,
                                         ocr_pages=ocr_pages)
            except InputError as e:
                found.skipped.append(Skipped(str(path), str(e)))
                continue
            found.documents.append((name[:MAX_NAME], document, str(path)))
    return found


def _walk(folder: Path) -> Iterator[tuple[str, Path]]:
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts) or not path.is_file():
            continue
        if path.suffix.lower() in DOCUMENT_SUFFIXES:
            yield rel.as_posix(), path


def _suffixes(path: str | Path) -> set[str]:
    p = Path(path)
    return {f.suffix.lower() for f in p.rglob("*") if f.is_file()
            and not any(s.startswith(".") for s in f.relative_to(p).parts)}


def holds_documents(path: str | Path) -> bool:
    """Whether a folder holds document files (what a library reads of it)."""
    return bool(_suffixes(path) & DOCUMENT_SUFFIXES)


def is_document_folder(path: str | Path) -> bool:
    """Whether a folder is read as a library by default: it holds document files and no source code (a source tree
    is read by the code method)."""
    from .retrieval.fragrel.code_files import EXTENSIONS

    suffixes = _suffixes(path)
    return bool(suffixes & DOCUMENT_SUFFIXES) and not suffixes & set(EXTENSIONS)


def of_folder(path: str | Path, *, max_bytes: int, encoding: str = "utf-8", ocr: str = "auto",
              ocr_pages: int = MAX_OCR_PAGES) -> Library:
    """A folder's documents as a library (not stored: ``pagemind ask FOLDER``); a file that cannot be read is an
    :class:`InputError` naming it."""
    found = read_paths([path], max_bytes=max_bytes, encoding=encoding, ocr=ocr, ocr_pages=ocr_pages)
    if found.skipped and not found.documents:
        raise InputError(f"{path}: {found.skipped[0].reason}")
    bad = [s for s in found.skipped if s.path != str(path)]
    if bad:
        raise InputError(f"{bad[0].path}: {bad[0].reason} (the folder's other documents were not read either; "
                         "add the readable ones to a library with `pagemind add`)")
    return Library(Path(path).name or str(path), tuple(_named(d, n) for n, d, _ in found.documents))


def _named(document: Document, name: str) -> Document:
    return document if document.name == name else replace(document, name=name)


# --- stored libraries ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Change:
    """What adding a path did to a library: ``added``, ``updated`` (same name, another text), ``unchanged``."""

    name: str
    document_id: str
    words: int
    status: str


class Libraries:
    """A user's stored libraries (``scope``: :func:`pagemind.store.rows.memory_scope`), over the store."""

    def __init__(self, store: SQLStore, scope: str) -> None:
        self.store, self.scope = store, scope

    def rows(self, after: str | None = None, limit: int | None = None) -> list[LibraryRow]:
        """The libraries by name (one page by cursor when asked: names after ``after``, at most ``limit``)."""
        return self.store.libraries(self.scope, after, limit)

    def row(self, name: str) -> Any:
        found = self.store.library(self.scope, name)
        if found is None:
            raise NotFound(f"no library {name!r} (pagemind libraries lists yours)")
        return found

    def members(self, name: str) -> list[Any]:
        return self.store.library_documents(self.row(name).id)

    def add(self, name: str, documents: Sequence[tuple[str, Document, str | None]]) -> list[Change]:
        """Put documents (name in the library, document, file it was read from) in library ``name`` (made when
        new); a name already there with another text is updated: only that document's memories are built again."""
        if not re.match(NAME, name):
            raise InputError(f"{name!r} is not a library name: letters, digits, '_', '.', '-' (1-100 characters, "
                             "starting with a letter or digit)")
        changes = []
        with self.store.transaction():
            row = self.store.create_library(self.scope, name, time.time())
            held = {m.name: m for m in self.store.library_documents(row.id)}
            replaced = []
            for member, document, origin in documents:
                before = held.get(member)
                status = "added" if before is None else "unchanged" if before.document_id == document.id else "updated"
                if status != "unchanged":
                    self.store.put_document(document.id, document.name, document.words, len(document.text))
                    self.store.put_document_text(document.id, document.text, document.structure())
                    # the text replaced is kept one version back: the new text's memories reuse its unchanged units
                    previous = before.document_id if before is not None else None
                    self.store.put_library_document(row.id, member, document.id, origin, time.time(), previous)
                    if before is not None and before.previous_id:
                        replaced.append(before.previous_id)
                changes.append(Change(member, document.id, document.words, status))
            self.store.forget_unheld(replaced)
        return changes

    def remove(self, name: str, members: Sequence[str] = ()) -> list[str]:
        """Remove documents from a library (none named: the whole library); what nobody holds any more is forgotten:
        its text and every memory of it. Returns the names removed; :class:`NotFound` for a name not there."""
        row = self.row(name)
        held = {m.name: m for m in self.store.library_documents(row.id)}
        missing = [m for m in members if m not in held]
        if missing:
            raise NotFound(f"library {name!r} holds no document {missing[0]!r}")
        with self.store.transaction():
            gone = list(members) or list(held)
            if members:
                for member in members:
                    self.store.remove_library_document(row.id, member)
            else:
                self.store.delete_library(row.id)
            self.store.forget_unheld([i for m in gone for i in (held[m].document_id, held[m].previous_id) if i])
        return gone

    def open(self, name: str) -> Library:
        """The library ``name`` with its documents' texts, ready to ask."""
        members = []
        for m in self.members(name):
            text = self.store.document_text(m.document_id)
            if text is None:
                raise NotFound(f"library {name!r}: the text of {m.name!r} is gone")
            before = self.store.document_text(m.previous_id) if m.previous_id else None
            members.append(Document.restored(text, m.name, self.store.document_structure(m.document_id),
                                             None if before is None else Document(text=before, name=m.name)))
        return Library(name, tuple(members))


__all__ = [
    "DOCUMENT_SUFFIXES",
    "Change",
    "Found",
    "Libraries",
    "Library",
    "Shelf",
    "is_document_folder",
    "of_folder",
    "read_paths",
    "shelves",
]
