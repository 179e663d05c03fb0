"""Word (.docx) documents with python-docx: body paragraphs and table rows in document order."""

from __future__ import annotations

from typing import BinaryIO

from ...errors import InputError, InputTooLarge
from .common import clean_extracted, missing_library


def docx_text(source: BinaryIO, name: str, max_bytes: int) -> str:
    """The body text of a .docx file: one paragraph per Word paragraph, one per table row (cells joined by |).

    Refused (:class:`InputTooLarge`) at the paragraph where the text certainly passes ``max_bytes``: the sum of
    the paragraphs each cleaned alone (as :class:`~pagemind.text.document.Document` cleans the whole; alone, a
    paragraph loses at least as much) and of the blank lines between them is a lower bound of the final text, so
    nothing the final check would accept is refused, and nothing past the limit is joined."""
    try:
        import docx
        from docx.table import Table
    except ImportError:
        raise missing_library("python-docx", "Word", name) from None

    try:
        document = docx.Document(source)
    except Exception as err:  # python-docx raises zipfile, lxml and its own errors for a broken package
        raise InputError(f"{name}: not a readable .docx file ({type(err).__name__})") from None
    paragraphs: list[str] = []
    least = 0  # UTF-8 bytes the cleaned text has at least
    for block in document.iter_inner_content():
        for text in _table_rows(block) if isinstance(block, Table) else [block.text.strip()]:
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


def _table_rows(table: object) -> list[str]:
    rows: list[str] = []
    for row in table.rows:  # type: ignore[attr-defined]
        cells: list[str] = []
        for cell in row.cells:
            text = " ".join(cell.text.split())
            if text and (not cells or cells[-1] != text):  # merged cells repeat their text
                cells.append(text)
        if cells:
            rows.append(" | ".join(cells))
    return rows
