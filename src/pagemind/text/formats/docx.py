"""Word (.docx) documents with python-docx: body paragraphs and table rows in document order."""

from __future__ import annotations

import io

from ...errors import InputError
from . import missing_library


def docx_text(raw: bytes, name: str) -> str:
    """The body text of a .docx file: one paragraph per Word paragraph, one per table row (cells joined by |)."""
    try:
        import docx
        from docx.table import Table
    except ImportError:
        raise missing_library("python-docx", "Word", name) from None
    try:
        document = docx.Document(io.BytesIO(raw))
    except Exception as err:  # python-docx raises zipfile, lxml and its own errors for a broken package
        raise InputError(f"{name}: not a readable .docx file ({type(err).__name__})") from None
    paragraphs: list[str] = []
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            paragraphs.extend(_table_rows(block))
        else:
            text = block.text.strip()
            if text:
                paragraphs.append(text)
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
