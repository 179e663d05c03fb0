"""A user's libraries."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import InputError, NotFound
from ...limits import LIST_PAGE
from ...store import Page
from .base import ServiceBase

if TYPE_CHECKING:
    from ...library import Change
    from ...store import (
        LibraryDocumentRow,
        LibraryRow,
        UserRow,
    )



class LibraryOps(ServiceBase):
    """A user's libraries and the documents in them."""

    def libraries(self, user: UserRow, *, after: str | None = None, limit: int = LIST_PAGE) -> Page[LibraryRow]:
        """One page of the user's libraries by name: those named after ``after``."""
        return Page.read(lambda n: self.pm.libraries(user_id=user.id, after=after, limit=n), limit, lambda r: r.name)

    def default_library(self, user: UserRow) -> str:
        """The library a request that names nothing to read reads (a chat UI's menu pick): the user's only library,
        or the one named ``default``; an :class:`InputError` saying how to name one otherwise."""
        first = self.libraries(user, limit=1)
        if first.items and first.next is None:
            return first.items[0].name
        try:
            return self.pm.library_row("default", user_id=user.id).name
        except NotFound:
            pass
        raise InputError('name what to read: "pagemind": {"document_id": "..."} or {"library": "..."} (extra_body), '
                         "the model pagemind/<method>@<library>, or keep one library (or one named 'default') for "
                         f"requests that name none (you have {'none' if not first.items else 'several'})")

    def library(self, user: UserRow, name: str) -> tuple[LibraryRow, list[LibraryDocumentRow]]:
        """One of the user's libraries with its documents (:class:`NotFound` for a name that is not theirs)."""
        return self.pm.library_row(name, user_id=user.id), self.pm.library_documents(name, user_id=user.id)

    def add_to_library(self, user: UserRow, name: str, source: str | Path | bytes | None, doc_name: str | None,
                       encoding: str | None = None, document_id: str | None = None,
                       wanted: Callable[[], bool] | None = None) -> Change:
        """Put a document in the library ``name`` (made when new): an upload or text (as :meth:`add_document`
        reads them; ``wanted`` as there), or one of the user's documents by id; ``doc_name`` its name there.
        Returns what changed."""
        if document_id is not None:
            found = self.pm.open_document(document_id, user_id=user.id)
            document = replace(found, name=doc_name or found.name)
        else:
            assert source is not None
            document = self.pm.read(source, doc_name, encoding=encoding or "utf-8", wanted=wanted)
        (change,), _ = self.pm.add(name, [document], user_id=user.id)
        return change

    def remove_from_library(self, user: UserRow, name: str, doc_name: str | None = None) -> list[str]:
        return self.pm.remove(name, [doc_name] if doc_name else [], user_id=user.id)
