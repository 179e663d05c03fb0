"""Reading a document: a file in, validated text out (with its page starts where the format has pages), or a
clear one-line :class:`InputError`.

Formats are recognised by content first (``%PDF-``, a zip holding ``word/document.xml`` or an EPUB ``mimetype``),
then by suffix (.html/.htm/.xhtml, .md/.markdown, anything else is text); see :mod:`pagemind.text.formats`.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError, InputTooLarge, UnsupportedInput
from .formats import CONTAINERS, extract, sniff_format

DEFAULT_MAX_BYTES = 16 * 1024 * 1024  # 16 MiB of text is ~2.7M words: days of local LLM time already
CONTAINER_FACTOR = 16  # PDF, EPUB and DOCX files carry fonts and images: the file may be this many times the text limit
FORMAT_NAMES = {"text": "text", "markdown": "Markdown", "html": "HTML", "pdf": "PDF", "epub": "EPUB",
                "docx": "Word"}
LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl",
                           "\ufb05": "st", "\ufb06": "st", "\u00ad": None})
CONTROLS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
TRAILING_SPACE = re.compile(r"[ \t]+\n")
BINARY_CONTROLS = re.compile(r"[\x00-\x08\x0d-\x1f]")  # control characters but \t \n \v \f: many mean binary


@dataclass(frozen=True)
class Document:
    """A text and its content address. Two files with the same text are the same document.

    ``pages`` holds the character offset at which each source page starts (PDF pages, EPUB chapters; page k is
    the k-th offset, counted from 1); it is empty for formats without pages. The id is the text's alone.
    """

    text: str
    name: str = "text"
    pages: tuple[int, ...] = ()
    format: str = "text"

    @property
    def id(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def words(self) -> int:
        return len(self.text.split())

    @property
    def page_unit(self) -> str:
        """What ``pages`` counts: ``chapter`` for EPUB, ``page`` otherwise."""
        return "chapter" if self.format == "epub" else "page"

    def page_at(self, char_offset: int) -> int | None:
        """The source page (from 1) holding the character at ``char_offset``, or None without page numbers."""
        if not self.pages or not 0 <= char_offset < len(self.text):
            return None
        return bisect_right(self.pages, char_offset)

    @classmethod
    def from_text(cls, text: str, name: str = "text") -> "Document":
        return cls(text=_validate_text(normalise_newlines(text), name), name=name)

    @classmethod
    def from_parts(cls, parts: tuple[str, ...] | list[str], name: str = "text", format: str = "text",
                   paged: bool = True) -> "Document":
        """A document from extracted parts (pages, chapters), joined by blank lines, with each part's start kept."""
        text, starts = "", []
        for part in parts:
            part = clean_extracted(part)
            starts.append(len(text) + (2 if text and part else 0))
            text += ("\n\n" if text and part else "") + part
        if not text.strip():
            raise InputError(f"{name}: no text found in this {FORMAT_NAMES.get(format, format)} file")
        return cls(text=_validate_text(text, name), name=name,
                   pages=tuple(starts) if paged else (), format=format)


def normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def clean_extracted(text: str) -> str:
    """Text taken out of a PDF, EPUB, DOCX or HTML file: newlines normalised, ligatures and soft hyphens undone,
    control characters and trailing spaces removed."""
    text = normalise_newlines(text).replace("\f", "\n").replace("\v", "\n").translate(LIGATURES)
    return TRAILING_SPACE.sub("\n", CONTROLS.sub("", text)).strip()


def _validate_text(text: str, name: str) -> str:
    if not text.strip():
        raise InputError(f"{name}: the document is empty (no words to read)")
    sample = text[:65536]
    controls = len(BINARY_CONTROLS.findall(sample))
    if "\x00" in sample or controls > max(8, len(sample) // 100):
        raise UnsupportedInput(f"{name}: this looks like a binary file, not text")
    return text


def load_document(
    path: str | Path, *, encoding: str = "utf-8", max_bytes: int = DEFAULT_MAX_BYTES
) -> Document:
    """Read a text, Markdown, HTML, PDF, EPUB or DOCX file, refusing what cannot be read with a one-line reason."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"{path}: no such file")
    if p.is_dir():
        raise InputError(f"{path}: is a directory; give a file")
    size = p.stat().st_size
    with p.open("rb") as f:
        head = f.read(1024)
    _check_size(size, head, p.suffix, str(path), max_bytes)
    return load_bytes(p.read_bytes(), p.name or str(p), encoding=encoding, max_bytes=max_bytes, label=str(path))


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
               label: str | None = None) -> Document:
    """A document from a file's bytes (an upload): the same formats, checks and errors as :func:`load_document`.
    The format is told by the content and the name's suffix."""
    label = label or name
    suffix = Path(name).suffix
    _check_size(len(raw), raw[:1024], suffix, label, max_bytes)
    extracted = extract(raw, suffix, label, encoding, max_bytes)
    if extracted.format == "text":
        return Document(text=_validate_text(normalise_newlines(extracted.parts[0]), name), name=name)
    document = Document.from_parts(extracted.parts, name=name, format=extracted.format,
                                   paged=extracted.format in ("pdf", "epub"))
    if extracted.format in CONTAINERS and len(document.text.encode("utf-8")) > max_bytes:
        raise InputTooLarge(f"{label}: its text is over the {max_bytes / 1e6:.1f} MB limit "
                            f"(raise it with --max-bytes or PAGEMIND_MAX_BYTES)")
    return document
