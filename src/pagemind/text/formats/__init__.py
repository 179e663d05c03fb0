"""Document formats: which one a file is (its content first, then its name), and its text.

PDF (pypdf) and Word (python-docx) need the ``formats`` extra and are imported only when such a file is read;
EPUB, HTML and Markdown are read with the standard library.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass

from ...errors import InputError, UnsupportedInput
from ..decoding import decode_bytes, declared_encoding

HTML_SUFFIXES = (".html", ".htm", ".xhtml")
MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdown", ".mkd")
CONTAINERS = ("pdf", "epub", "docx")
EPUB_MIMETYPE = b"application/epub+zip"
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


@dataclass(frozen=True)
class Extracted:
    """A file's text as parts: one per page (PDF) or chapter (EPUB), else a single part."""

    format: str
    parts: tuple[str, ...]


def missing_library(package: str, kind: str, name: str) -> InputError:
    """The error for a format whose optional library is not installed."""
    return InputError(f"{name}: reading {kind} files needs {package}: pip install 'pagemind[formats]'")


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


def extract(raw: bytes, suffix: str, name: str, encoding: str, max_bytes: int) -> Extracted:
    """The text of ``raw`` read as the format its content (or else its suffix) says it is."""
    kind = sniff_format(raw, suffix)
    if kind == "pdf":
        from .pdf import pdf_pages

        return Extracted("pdf", tuple(pdf_pages(raw, name)))
    if kind == "zip":
        return _from_zip(raw, suffix, name, max_bytes)
    if kind == "ole":
        raise UnsupportedInput(f"{name}: a legacy Office file (.doc, .xls, .ppt); save it as .docx or PDF")
    if kind == "misnamed":
        expected = {".pdf": "start with %PDF-", ".epub": "is not a zip archive", ".docx": "is not a zip archive"}
        raise InputError(f"{name}: named {suffix.lower()} but its content {expected[suffix.lower()]}; "
                         f"is it really a {suffix.lower()[1:].upper()} file?")
    if kind == "html":
        return Extracted("html", (_html(raw, name, encoding),))
    text = decode_bytes(raw, encoding, name)
    if kind == "markdown":
        from .markdown import markdown_to_text

        return Extracted("markdown", (markdown_to_text(text),))
    if suffix.lower() != ".txt" and text.lstrip()[:15].lower().startswith(("<!doctype html", "<html")):
        return Extracted("html", (_html(raw, name, encoding),))
    return Extracted("text", (text,))


def _html(raw: bytes, name: str, encoding: str) -> str:
    from .html import html_to_text

    declared = declared_encoding(raw, encoding)
    if declared.startswith(("utf-16", "utf-32")) and not raw.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00")):
        declared = encoding  # a page that decodes as ASCII cannot be UTF-16, whatever its meta tag says
    return html_to_text(decode_bytes(raw, declared, name))


def _from_zip(raw: bytes, suffix: str, name: str, max_bytes: int) -> Extracted:
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
        names = set(archive.namelist())
        mimetype = archive.read("mimetype").strip() if "mimetype" in names else b""
    except (zipfile.BadZipFile, OSError, ValueError) as err:
        raise InputError(f"{name}: a damaged zip archive ({err})") from None
    with archive:
        if "word/document.xml" in names:
            from .docx import docx_text

            return Extracted("docx", (docx_text(raw, name),))
        if mimetype == EPUB_MIMETYPE or (suffix.lower() == ".epub" and "META-INF/container.xml" in names):
            from .epub import epub_chapters

            try:
                return Extracted("epub", tuple(epub_chapters(archive, name, max_bytes)))
            except (zipfile.BadZipFile, OSError, ValueError, KeyError, NotImplementedError) as err:
                raise InputError(f"{name}: a damaged EPUB ({err})") from None
    raise UnsupportedInput(f"{name}: a zip archive that is neither EPUB nor DOCX; "
                     f"pagemind reads PDF, EPUB, DOCX, HTML, Markdown and text files")
