"""Document formats: which one a file is (its content first, then its name), and its text.

PDF (pypdf) and Word (python-docx) need the ``formats`` extra and are imported only when such a file is read;
EPUB, HTML and Markdown are read with the standard library. Containers are read from the open file, not from a
copy of it in memory, and their pages come out one at a time, so a caller that stops taking them (the text is
over its limit) stops the extraction there.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from ...errors import InputError, InputTooLarge, UnsupportedInput
from ...limits import MAX_OCR_PAGES
from ..decoding import declared_encoding, decode_bytes
from ..sections import Heading, StyledLine

HTML_SUFFIXES = (".html", ".htm", ".xhtml")
MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdown", ".mkd")
CONTAINERS = ("pdf", "epub", "docx")
CONTAINER_FACTOR = 16  # PDF, EPUB and DOCX files carry fonts and images: the file may be this many times the text limit
EPUB_MIMETYPE = b"application/epub+zip"
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


@dataclass(frozen=True)
class Extracted:
    """A file's text as parts: one per page (PDF) or chapter (EPUB), else a single part. PDF and EPUB parts are
    a generator that extracts each part when it is asked for (and raises the format's errors then). ``headings``:
    the structure the file declares (a PDF's outline, filled once its pages are read; the markup's headings);
    ``outline``: they are a PDF outline, whose pages are checked."""

    format: str
    parts: Iterable[str]
    headings: list[Heading] = field(default_factory=list)
    outline: bool = False
    ocr_pages: list[int] = field(default_factory=list)  # pages read by OCR (from 1), filled as they are read
    styled: list[StyledLine] = field(default_factory=list)  # a PDF's lines with their type (filled as read)


def sniff_format(head: bytes, suffix: str) -> str:
    """The format from the first bytes (``%PDF-``, a zip, an OLE2 file), else from the suffix (zips: look inside)."""
    suffix = suffix.lower()
    if b"%PDF-" in head[:1024]:
        return "pdf"
    if head.startswith(b"PK\x03\x04"):
        return "zip"
    if head.startswith(OLE_MAGIC):
        return "ole"
    if suffix in HTML_SUFFIXES:
        return "html"
    if suffix in MARKDOWN_SUFFIXES:
        return "markdown"
    if suffix in (".pdf", ".epub", ".docx"):
        return "misnamed"
    return "text"


def extract(source: BinaryIO, suffix: str, name: str, encoding: str, max_bytes: int, ocr: str = "auto",
            progress: Callable[[str, int, int, str], None] | None = None, ocr_pages: int = MAX_OCR_PAGES
            ) -> Extracted:
    """The text of the file ``source`` (open, at its start) read as the format its content (or else its suffix)
    says it is. Texts are read whole (the caller checked their size); containers by their parsers; ``ocr``: how
    a PDF's pages without a text layer are read (:mod:`pagemind.text.ocr`), at most ``ocr_pages`` of them."""
    kind = sniff_format(source.read(1024), suffix)
    source.seek(0)
    if kind == "pdf":
        from .pdf import pdf_pages

        outline: list[Heading] = []
        read_by_ocr: list[int] = []
        styled: list[StyledLine] = []
        return Extracted("pdf", pdf_pages(source, name, outline, ocr, read_by_ocr, styled, progress=progress,
                                              ocr_pages=ocr_pages),
                         outline, outline=True,
                         ocr_pages=read_by_ocr, styled=styled)
    if kind == "zip":
        return _from_zip(source, suffix, name, max_bytes)
    if kind == "ole":
        raise UnsupportedInput(f"{name}: a legacy Office file (.doc, .xls, .ppt); save it as .docx or PDF")
    if kind == "misnamed":
        expected = {".pdf": "start with %PDF-", ".epub": "is not a zip archive", ".docx": "is not a zip archive"}
        raise InputError(f"{name}: named {suffix.lower()} but its content {expected[suffix.lower()]}; "
                         f"is it really a {suffix.lower()[1:].upper()} file?")
    raw = source.read()
    if kind == "html":
        return _html(raw, name, encoding)
    text = decode_bytes(raw, encoding, name)
    if kind == "markdown":
        from ..sections import markdown_headings
        from .markdown import markdown_to_text

        return Extracted("markdown", (markdown_to_text(text),), markdown_headings(text))
    if suffix.lower() != ".txt" and text.lstrip()[:15].lower().startswith(("<!doctype html", "<html")):
        return _html(raw, name, encoding)
    return Extracted("text", (text,))


def _html(raw: bytes, name: str, encoding: str) -> Extracted:
    from ..sections import html_headings
    from .html import html_to_text

    declared = declared_encoding(raw, encoding)
    if declared.startswith(("utf-16", "utf-32")) and not raw.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00")):
        declared = encoding  # a page that decodes as ASCII cannot be UTF-16, whatever its meta tag says
    markup = decode_bytes(raw, declared, name)
    return Extracted("html", (html_to_text(markup),), html_headings(markup))


def _from_zip(source: BinaryIO, suffix: str, name: str, max_bytes: int) -> Extracted:
    try:
        archive = zipfile.ZipFile(source)
        names = set(archive.namelist())
        mimetype = archive.read("mimetype").strip() if "mimetype" in names else b""
    except (zipfile.BadZipFile, OSError, ValueError) as err:
        raise InputError(f"{name}: a damaged zip archive ({err})") from None
    if "word/document.xml" in names:
        from .docx import docx_text

        unpacked = sum(info.file_size for info in archive.infolist())
        archive.close()
        if unpacked > max_bytes * CONTAINER_FACTOR:  # python-docx holds every part in memory: no zip bombs
            raise InputTooLarge(f"{name}: its parts unpack to {unpacked / 1e6:.1f} MB, over the "
                                f"{max_bytes * CONTAINER_FACTOR / 1e6:.1f} MB limit of a DOCX file")
        headings: list[Heading] = []
        return Extracted("docx", (docx_text(source, name, max_bytes, headings),), headings)
    if mimetype == EPUB_MIMETYPE or (suffix.lower() == ".epub" and "META-INF/container.xml" in names):
        chapter_headings: list[Heading] = []
        return Extracted("epub", _epub(archive, name, max_bytes, chapter_headings), chapter_headings)
    archive.close()
    raise UnsupportedInput(f"{name}: a zip archive that is neither EPUB nor DOCX; "
                           f"pagemind reads PDF, EPUB, DOCX, HTML, Markdown and text files")


def _epub(archive: zipfile.ZipFile, name: str, max_bytes: int, headings: list[Heading]) -> Iterator[str]:
    """The chapters of an EPUB as they are read (their headings into ``headings``), its zip and parser errors as
    one-line :class:`InputError`."""
    from .epub import epub_chapters

    with archive:
        try:
            yield from epub_chapters(archive, name, max_bytes, headings)
        except (zipfile.BadZipFile, OSError, ValueError, KeyError, NotImplementedError) as err:
            raise InputError(f"{name}: a damaged EPUB ({err})") from None
