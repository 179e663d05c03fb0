"""Word (.docx) documents with python-docx: body paragraphs and table rows in document order."""

from __future__ import annotations

import re
from typing import BinaryIO

from ...errors import InputError, InputTooLarge
from ..sections import MAX_LEVEL, Heading
from .common import clean_extracted, markdown_table, missing_library


def docx_text(source: BinaryIO, name: str, max_bytes: int, headings: list[Heading] | None = None) -> str:
    """The body text of a .docx file: one paragraph per Word paragraph, one Markdown table per Word table.

    Refused (:class:`InputTooLarge`) at the paragraph where the text certainly passes ``max_bytes``: the sum of
    the paragraphs each cleaned alone (as :class:`~pagemind.text.document.Document` cleans the whole; alone, a
    paragraph loses at least as much) and of the blank lines between them is a lower bound of the final text, so
    nothing the final check would accept is refused, and nothing past the limit is joined."""
    try:
        import docx
        from docx.table import Table
    except ImportError:
        raise missing_library("python-docx", "Word", name) from None

    _count_elements(source, name)
    try:
        document = docx.Document(source)
    except Exception as err:  # python-docx raises zipfile, lxml and its own errors for a broken package
        raise InputError(f"{name}: not a readable .docx file ({type(err).__name__})") from None
    paragraphs: list[str] = []
    least = 0  # UTF-8 bytes the cleaned text has at least
    for block in document.iter_inner_content():
        if headings is not None and not isinstance(block, Table) and block.text.strip():
            level = heading_level(block)
            if level is not None:
                headings.append(Heading(level, block.text.strip()))
        for text in [markdown_table(_table_rows(block))] if isinstance(block, Table) else [block.text.strip()]:
            if not text:
                continue
            paragraphs.append(text)
            cleaned = clean_extracted(text)
            if cleaned:
                least += (2 if least else 0) + (len(cleaned) if cleaned.isascii() else len(cleaned.encode("utf-8")))
            if least > max_bytes:
                raise InputTooLarge(f"{name}: its text is over the {max_bytes / 1e6:.1f} MB limit "
                                    f"(raise it with --max-bytes or PAGEMIND_MAX_BYTES)")
    return "\n\n".join(paragraphs)


_ELEMENT = re.compile(rb"<w:(?:p|tc)[\s/>]")  # a paragraph or a table cell, empty or not


def _count_elements(source: BinaryIO, name: str) -> None:
    """Refuse (:class:`InputError`) a document whose body holds more paragraphs and table cells than
    :data:`~pagemind.limits.MAX_DOCUMENT_ELEMENTS`, counted on the unpacked XML as it streams out of the zip (before
    any parser builds them): a few KB of zip can unpack to millions of empty paragraphs, which python-docx would
    hold as objects for minutes. The count stops at the limit, so the bound costs what the limit costs."""
    import zipfile

    from ...limits import MAX_DOCUMENT_ELEMENTS

    at = source.tell()
    try:
        with zipfile.ZipFile(source) as package, package.open("word/document.xml") as body:
            seen, tail = 0, b""
            while chunk := body.read(1 << 20):
                window = tail + chunk
                seen += len(_ELEMENT.findall(window)) - len(_ELEMENT.findall(tail))
                tail = window[-8:]
                if seen > MAX_DOCUMENT_ELEMENTS:
                    raise InputError(f"{name}: its body holds over {MAX_DOCUMENT_ELEMENTS:,} paragraphs and table "
                                     "cells; split it, or save its text as a .txt file")
    except (KeyError, zipfile.BadZipFile, OSError, EOFError, RuntimeError, ValueError) as err:
        raise InputError(f"{name}: not a readable .docx file ({type(err).__name__})") from None
    finally:
        source.seek(at)


def heading_level(paragraph: object) -> int | None:
    """A paragraph's heading level: its style (or a style it is based on) "Heading N" or "Title" (level 1), or an
    outline level set on the paragraph or its style (what Word's navigation pane reads, also when a heading style
    was renamed)."""
    style = getattr(paragraph, "style", None)
    seen = 0
    while style is not None and seen < 10:
        name = (getattr(style, "name", "") or "").strip().lower()
        found = re.match(r"^heading\s*([1-9])$", name)
        if found:
            return min(MAX_LEVEL, int(found.group(1)))
        if name == "title":
            return 1
        level = _outline_level(getattr(style, "element", None))
        if level is not None:
            return level
        style, seen = getattr(style, "base_style", None), seen + 1
    return _outline_level(getattr(paragraph, "_p", None))


def _outline_level(element: object) -> int | None:
    """``w:outlineLvl`` of a style or paragraph element (0-8; 9 is body text), as a level from 1."""
    if element is None:
        return None
    for found in element.iter():  # type: ignore[attr-defined]
        if str(found.tag).endswith("}outlineLvl"):
            value = next((v for k, v in found.attrib.items() if k.endswith("}val")), None)
            if value is not None and value.isdigit() and int(value) < 9:
                return min(MAX_LEVEL, int(value) + 1)
    return None


def _table_rows(table: object) -> list[list[str]]:
    """A Word table's rows of cell texts; a cell merged across columns (python-docx gives the same cell again for
    each column it spans) has its text once, then empty cells, so every value stays in its column."""
    rows: list[list[str]] = []
    for row in table.rows:  # type: ignore[attr-defined]
        cells: list[str] = []
        previous = None
        for cell in row.cells:
            cells.append("" if cell._tc is previous else " ".join(cell.text.split()))
            previous = cell._tc
        rows.append(cells)
    return rows
