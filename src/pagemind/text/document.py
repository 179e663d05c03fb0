"""Reading a document: a file in, validated text out (with its page starts where the format has pages), or a
clear one-line :class:`InputError`.

Formats are recognised by content first (``%PDF-``, a zip holding ``word/document.xml`` or an EPUB ``mimetype``),
then by suffix (.html/.htm/.xhtml, .md/.markdown, anything else is text); see :mod:`pagemind.text.formats`.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import BinaryIO

from ..errors import InputError, InputTooLarge, UnsupportedInput
from ..limits import MAX_OCR_PAGES
from .formats import CONTAINER_FACTOR, CONTAINERS, extract, sniff_format
from .formats.common import clean_extracted, normalise_newlines
from .sections import (
    Heading,
    Section,
    StyledLine,
    filing_headings,
    layout_headings,
    locate,
    outline_holds,
    path_at,
    text_headings,
    toc_headings,
)

DEFAULT_MAX_BYTES = 16 * 1024 * 1024  # 16 MiB of text is ~2.7M words: days of local LLM time already
FORMAT_NAMES = {"text": "text", "markdown": "Markdown", "html": "HTML", "pdf": "PDF", "epub": "EPUB",
                "docx": "Word"}
BINARY_CONTROLS = re.compile(r"[\x00-\x08\x0d-\x1f]")  # control characters but \t \n \v \f: many mean binary
SLICE = 1 << 20  # characters of a text looked at at once where the whole would be copied (hashing, counting)


@dataclass(frozen=True)
class Document:
    """A text and its content address. Two files with the same text are the same document.

    ``pages`` holds the character offset at which each source page starts (PDF pages, EPUB chapters; page k is
    the k-th offset, counted from 1); it is empty for formats without pages. The id is the text's alone.
    ``previous``: the version of this document it replaced (a library's changed document), whose memories a
    reader reuses where the text is unchanged (:meth:`pagemind.methods.base.Reader._reuse`). ``sections``: the
    document's own structure (:mod:`pagemind.text.sections`: a PDF's outline, the markup's headings, or the
    text's), in document order.
    """

    text: str
    name: str = "text"
    pages: tuple[int, ...] = ()
    format: str = "text"
    previous: Document | None = field(default=None, compare=False, repr=False)
    sections: tuple[Section, ...] = field(default=(), compare=False, repr=False)  # its own structure
    ocr_pages: tuple[int, ...] = field(default=(), compare=False, repr=False)  # pages read by OCR (from 1)

    @property
    def id(self) -> str:
        digest = hashlib.sha256()
        for piece in _pieces(self.text):  # the UTF-8 of the whole text, never a copy of it all at once
            digest.update(piece.encode("utf-8"))
        return digest.hexdigest()

    @property
    def structure_key(self) -> str:
        """A digest of the document's sections (titles, levels, places), "" without any: a memory built from a
        document is keyed by it too, so one built before its file was read into other sections is not reused."""
        if not self.sections:
            return ""
        return hashlib.sha256(json.dumps([[s.title, s.level, s.start, s.end] for s in self.sections]).encode()
                              ).hexdigest()[:16]

    @property
    def words(self) -> int:
        """``len(text.split())``, counted a slice at a time: the list of a 16 MB text's words is ~250 MB."""
        count = 0
        for start, piece in enumerate(_pieces(self.text)):
            count += len(piece.split())
            if start and not piece[0].isspace() and not self.text[start * SLICE - 1].isspace():
                count -= 1  # one word cut in two by the slice boundary
        return count

    @property
    def page_unit(self) -> str:
        """What ``pages`` counts: ``chapter`` for EPUB, ``page`` otherwise."""
        return "chapter" if self.format == "epub" else "page"

    def structure(self) -> dict[str, object]:
        """What a store keeps beside the text: the format, the page starts and the sections (:meth:`restored`)."""
        return {"format": self.format, "pages": list(self.pages), "sections": [s.as_dict() for s in self.sections],
                "ocr_pages": list(self.ocr_pages)}

    @classmethod
    def restored(cls, text: str, name: str, structure: dict[str, object] | None,
                 previous: Document | None = None) -> Document:
        """A kept document as it was read: its text with the structure :meth:`structure` gave (none: plain)."""
        if not structure:
            return cls(text=text, name=name, previous=previous)
        pages = structure.get("pages")
        sections = structure.get("sections")
        ocr = structure.get("ocr_pages")
        return cls(text=text, name=name, format=str(structure.get("format") or "text"), previous=previous,
                   pages=tuple(int(p) for p in pages) if isinstance(pages, list) else (),
                   ocr_pages=tuple(int(p) for p in ocr) if isinstance(ocr, list) else (),
                   sections=tuple(Section.from_dict(s) for s in sections if isinstance(s, dict))
                   if isinstance(sections, list) else ())

    def parts(self) -> list[str]:
        """The text of each page (chapter) as read, in order; the whole text as one part without pages."""
        if not self.pages:
            return [self.text]
        bounds = [*self.pages, len(self.text)]
        return [self.text[a:b].strip("\n") for a, b in itertools.pairwise(bounds)]

    def annotated(self) -> str:
        """The text as a person checks what was read: a rule before each page ("── page 12 (OCR) ──"), and each
        section's start marked ("§ Item 8 › Consolidated Balance Sheets") where it begins."""
        marks = sorted((s.start, " › ".join(p.title for p in self.section_path(s.start))) for s in self.sections)
        starts = [(offset, f"── {self.page_unit} {n}{' (OCR)' if n in self.ocr_pages else ''} ──")
                  for n, offset in enumerate(self.pages, 1)]
        events = sorted([(o, 0, t) for o, t in starts] + [(o, 1, f"§ {t}") for o, t in marks])
        out, at = [], 0
        for offset, _, label in events:
            out.append(self.text[at:offset].rstrip("\n"))
            out.append(label)
            at = offset
        out.append(self.text[at:])
        return "\n".join(part for part in out if part)

    def section_path(self, char_offset: int) -> list[Section]:
        """The sections holding the character at ``char_offset``, outermost first (none without sections)."""
        return path_at(self.sections, char_offset)

    def page_at(self, char_offset: int) -> int | None:
        """The source page (from 1) holding the character at ``char_offset``, or None without page numbers."""
        if not self.pages or not 0 <= char_offset < len(self.text):
            return None
        return bisect_right(self.pages, char_offset)

    @classmethod
    def from_text(cls, text: str, name: str = "text") -> Document:
        return cls(text=_validate_text(normalise_newlines(text), name), name=name)

    @classmethod
    def from_parts(cls, parts: Iterable[str], name: str = "text", format: str = "text", paged: bool = True, *,
                   max_bytes: int | None = None, label: str | None = None) -> Document:
        """A document from extracted parts (pages, chapters), joined by blank lines, with each part's start kept.

        ``parts`` may be a generator that extracts each part when asked for it: with ``max_bytes``, the parts
        stop being asked for (:class:`InputTooLarge`) as soon as the joined text passes that many UTF-8 bytes,
        so a PDF whose text is over the limit is refused at the page that passes it, not after its last page."""
        pieces: list[str] = []
        starts: list[int] = []
        length = size = 0  # characters and UTF-8 bytes of the text so far
        for part in parts:
            part = clean_extracted(part)
            gap = "\n\n" if length and part else ""
            starts.append(length + len(gap))
            pieces += (gap, part)
            length += len(gap) + len(part)
            size += len(gap) + (len(part) if part.isascii() else len(part.encode("utf-8")))
            if max_bytes is not None and size > max_bytes:
                raise InputTooLarge(f"{label or name}: its text is over the {max_bytes / 1e6:.1f} MB limit "
                                    f"(raise it with --max-bytes or PAGEMIND_MAX_BYTES)")
        if not length:  # every part is stripped: an empty text is one without words
            raise InputError(f"{name}: no text found in this {FORMAT_NAMES.get(format, format)} file")
        text = "".join(pieces)
        return cls(text=_validate_text(text, name), name=name, pages=tuple(starts) if paged else (), format=format)


def _pieces(text: str) -> Iterator[str]:
    return (text[start:start + SLICE] for start in range(0, len(text), SLICE))


def _validate_text(text: str, name: str) -> str:
    if not text or text.isspace():  # not text.strip(): that copies the whole text to look at its ends
        raise InputError(f"{name}: the document is empty (no words to read)")
    sample = text[:65536]
    controls = len(BINARY_CONTROLS.findall(sample))
    if "\x00" in sample or controls > max(8, len(sample) // 100):
        raise UnsupportedInput(f"{name}: this looks like a binary file, not text")
    return text


READ_RULES = "pdfium-rows-11"  # what reading a file does: a stored reading made by other rules is not reused


def reading_key(path: str | Path, encoding: str = "utf-8", ocr: str = "auto",
                ocr_pages: int = MAX_OCR_PAGES) -> str | None:
    """The key of a PDF, EPUB or DOCX file's reading: the SHA-256 of its bytes with :data:`READ_RULES`, the OCR
    mode and the encoding; None for other files (a text is read faster than it is looked up) and missing ones."""
    p = Path(path)
    try:
        with p.open("rb") as f:
            if sniff_format(f.read(1024), p.suffix) not in ("pdf", "zip"):
                return None
            f.seek(0)
            digest = hashlib.sha256()
            while chunk := f.read(SLICE):
                digest.update(chunk)
    except OSError:
        return None
    return hashlib.sha256(f"{digest.hexdigest()}|{READ_RULES}|{ocr}:{ocr_pages}|{encoding}".encode()).hexdigest()


def load_document(path: str | Path, *, encoding: str = "utf-8", max_bytes: int = DEFAULT_MAX_BYTES,
                  name: str | None = None, ocr: str = "auto", ocr_pages: int = MAX_OCR_PAGES,
                  progress: Callable[[str, int, int, str], None] | None = None) -> Document:
    """Read a text, Markdown, HTML, PDF, EPUB or DOCX file, refusing what cannot be read with a one-line reason.

    ``name``: the name to give the document and its errors instead of the path's (an upload spooled to a
    temporary file); its suffix then tells the format where the content does not. The file is read once:
    a text is read whole (it is at most ``max_bytes``), a container is read by its parser from the open file
    (a zip only where its members are), and its extraction stops as soon as the text passes ``max_bytes``."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"{path}: no such file")
    if p.is_dir():
        raise InputError(f"{path}: is a directory; give a file")
    with p.open("rb") as f:
        return _load(f, p.stat().st_size, name or p.name or str(p), label=name or str(path), encoding=encoding,
                     max_bytes=max_bytes, ocr=ocr, ocr_pages=ocr_pages, progress=progress)


def _check_size(size: int, head: bytes, suffix: str, label: str, max_bytes: int) -> None:
    if size == 0:
        raise InputError(f"{label}: the file is empty")
    container = sniff_format(head, suffix) in ("pdf", "zip")
    limit = max_bytes * CONTAINER_FACTOR if container else max_bytes
    if size > limit:
        what = " (PDF, EPUB and DOCX files may be 16 times the text limit)" if container else ""
        raise InputTooLarge(
            f"{label}: {size / 1e6:.1f} MB is over the {limit / 1e6:.1f} MB limit{what} "
            f"(raise it with --max-bytes or PAGEMIND_MAX_BYTES)"
        )


def load_bytes(raw: bytes, name: str, *, encoding: str = "utf-8", max_bytes: int = DEFAULT_MAX_BYTES,
               label: str | None = None, ocr: str = "auto", ocr_pages: int = MAX_OCR_PAGES,
               progress: Callable[[str, int, int, str], None] | None = None) -> Document:
    """A document from a file's bytes (an upload): the same formats, checks and errors as :func:`load_document`.
    The format is told by the content and the name's suffix."""
    return _load(io.BytesIO(raw), len(raw), name, label=label or name, encoding=encoding, max_bytes=max_bytes,
                 ocr=ocr, ocr_pages=ocr_pages, progress=progress)


def _load(source: BinaryIO, size: int, name: str, *, label: str, encoding: str, max_bytes: int,
          ocr: str = "auto", ocr_pages: int = MAX_OCR_PAGES,
          progress: Callable[[str, int, int, str], None] | None = None) -> Document:
    """The document in ``source`` (positioned at its start, ``size`` bytes), its size checked before it is read."""
    suffix = Path(name).suffix
    head = source.read(1024)
    source.seek(0)
    _check_size(size, head, suffix, label, max_bytes)
    extracted = extract(source, suffix, label, encoding, max_bytes, ocr, progress, ocr_pages)
    if extracted.format == "text":
        text = next(iter(extracted.parts))
        document = Document(text=_validate_text(normalise_newlines(text), name), name=name)
    else:
        document = Document.from_parts(extracted.parts, name=name, format=extracted.format,
                                       paged=extracted.format in ("pdf", "epub"),
                                       max_bytes=max_bytes if extracted.format in CONTAINERS else None, label=label)
    return replace(document, sections=structure(document, extracted.headings, extracted.outline, extracted.styled),
                   ocr_pages=tuple(extracted.ocr_pages))


def structure(document: Document, headings: list[Heading], outline: bool,
              styled: Sequence[StyledLine] = ()) -> tuple[Section, ...]:
    """The document's sections: from the headings its file declares (a PDF outline only where it holds), else a
    filing's Items, statements and notes, else a printed table of contents, else a PDF's headings by their type
    (size and weight), else its text's own headings."""
    if headings:
        found = locate(document.text, headings, document.pages, "outline" if outline else "markup",
                       strict_pages=outline)
        if found and (not outline or outline_holds(headings, found, len(document.pages))):
            # an outline that holds keeps every entry: those whose words its pages do not print, at their page
            return locate(document.text, headings, document.pages, "outline", strict_pages=True, keep=True) \
                if outline else found
    filing = filing_headings(document.text, document.pages)
    if filing:  # a 10-K or 10-Q without outline: its Items, statements and notes
        return locate(document.text, filing, document.pages, "filing", strict_pages=True)
    listed, after = toc_headings(document.text, document.pages)
    if listed:  # a printed table of contents, where most of its titles are found after it
        found = locate(document.text, listed, document.pages, "toc", strict_pages=any(h.page for h in listed),
                       begin=after)
        if len(found) * 2 >= len(listed):
            return found
    by_type = layout_headings(styled)
    if by_type:
        found = locate(document.text, by_type, document.pages, "layout", strict_pages=True)
        if len(found) * 2 >= len(by_type):
            return found
    return locate(document.text, text_headings(document.text, blank_before=document.format != "pdf"),
                  document.pages, "text")
