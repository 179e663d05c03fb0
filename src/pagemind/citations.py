"""Citations: the passages of the document an answer rests on, as values a person can open and check.

A :class:`Citation` names the document, a location (pagemind's page / leaf / fragment / passage / message id, and
the document's own page — a PDF page, an EPUB chapter — where it has them), the character offsets of the cited
text in the document, the quoted text (always ``document.text[start:end]``: offsets point at text that is really
there) and how it was found.

:func:`locate` finds a snippet in the document text: exactly, then tolerant of whitespace and punctuation (what
pagination and a model's quoting change); a snippet that is not there is not located — never cited.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

FOUND_BY = ("page", "gist", "leaf", "fragment", "text", "window", "passage", "message", "quote")


@dataclass(frozen=True)
class Citation:
    """One cited span of a document."""

    document: str  # the document id (sha256 of its text)
    unit: str  # what pagemind calls the place: page | leaf | fragment | text | window | passage | message
    index: int | None  # that unit's number (page 3, fragment 17, passage id...), None for the whole text
    start: int  # character offsets into the document text: quote == text[start:end]
    end: int
    quote: str
    found_by: str  # one of FOUND_BY: how the method came to read it
    source_page: int | None = None  # the document's own page (PDF page, EPUB chapter), from 1, if it has pages
    score: float | None = None  # how strongly it supports the answer (alignment), when ranked
    document_name: str | None = None  # the document's name (a library's document: its name in the library)
    section: str | None = None  # the document's own sections holding it: "§2 Results › 2.1 Cash flows"
    ocr: bool = False  # its page was read by OCR (no text layer): the quote may hold its misreadings

    @property
    def span(self) -> tuple[int, int]:
        return self.start, self.end

    @property
    def location(self) -> str:
        """Where a person finds it: ``page 3`` (pagemind's), with the document's section path and ``p. 12`` of the
        source when known: ``fragment 7 (§2 Results › 2.1 Cash flows, p. 14)``."""
        where = self.unit if self.index is None else f"{self.unit} {self.index}"
        own = [x for x in (self.section, None if self.source_page is None else f"p. {self.source_page}",
                           "read by OCR" if self.ocr else None) if x]
        return f"{where} ({', '.join(own)})" if own else where

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "location": self.location}


_LOOSE = re.compile(r"[\W_]+", re.UNICODE)


def _loose_pattern(snippet: str) -> re.Pattern[str] | None:
    words = [w for w in _LOOSE.split(snippet) if w]
    if not words:
        return None
    return re.compile(r"[\W_]*".join(re.escape(w) for w in words), re.IGNORECASE)


def locate(text: str, snippet: str, start: int = 0) -> tuple[int, int] | None:
    """``(start, end)`` of ``snippet`` in ``text`` (searching from ``start``): exact first, then ignoring
    differences of whitespace, punctuation and case between words. None when it is not there."""
    snippet = snippet.strip()
    if not snippet:
        return None
    at = text.find(snippet, start)
    if at >= 0:
        return at, at + len(snippet)
    pattern = _loose_pattern(snippet)
    if pattern is None:
        return None
    found = pattern.search(text, start)
    return None if found is None else (found.start(), found.end())


def cite(document: Any, unit: str, index: int | None, snippet: str, found_by: str, *, start: int = 0,
         score: float | None = None) -> Citation | None:
    """A citation of ``snippet`` if it is in the document's text (else None)."""
    span = locate(document.text, snippet, start)
    if span is None:
        return None
    page_at = getattr(document, "page_at", None)
    path = getattr(document, "section_path", None)
    quote = document.text[span[0]:span[1]]
    lead = next((i for i, ch in enumerate(quote) if ch.isalpha()), 0)  # "38\n\nTable of Contents": the page of
    page = page_at(span[0] + lead) if page_at else None  # its words, not of the previous page's printed number
    return Citation(document.id, unit, index, span[0], span[1], quote, found_by,
                    page, score, getattr(document, "name", None), section_label(path(span[0])) if path else None,
                    page is not None and page in getattr(document, "ocr_pages", ()))


def section_label(chain: Sequence[Any]) -> str | None:
    """A section path as a citation names it (``§A › B``), or None outside every section."""
    return "§" + " › ".join(s.title for s in chain) if chain else None


def overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether half-open spans ``[a0, a1)`` and ``[b0, b1)`` share a character (touching ends do not)."""
    return a[0] < b[1] and b[0] < a[1] and a[0] < a[1] and b[0] < b[1]


def numbered(citations: Sequence[Citation]) -> list[tuple[int, Citation]]:
    """The citations numbered from 1 as the answer's markers ``[1]``, ``[2]``... name them."""
    return list(enumerate(citations, 1))


__all__ = ["FOUND_BY", "Citation", "cite", "locate", "numbered", "overlaps"]
