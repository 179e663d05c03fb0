"""What the format readers share with :mod:`pagemind.text.document`: cleaning extracted text, and the error for a
missing optional library (here, not in the package or the document module, which both import the readers)."""

from __future__ import annotations

import re

from ...errors import InputError

LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl",
                           "\ufb05": "st", "\ufb06": "st", "\u00ad": None})
CONTROLS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
TRAILING_SPACE = re.compile(r"[ \t]+\n")


def normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def clean_extracted(text: str) -> str:
    """Text taken out of a PDF, EPUB, DOCX or HTML file: newlines normalised, ligatures and soft hyphens undone,
    control characters and trailing spaces removed."""
    text = normalise_newlines(text).replace("\f", "\n").replace("\v", "\n").translate(LIGATURES)
    return TRAILING_SPACE.sub("\n", CONTROLS.sub("", text)).strip()


def missing_library(package: str, kind: str, name: str) -> InputError:
    """The error for a format whose optional library is not installed."""
    return InputError(f"{name}: reading {kind} files needs {package}: pip install 'pagemind[formats]'")


def markdown_table(rows: list[list[str]], caption: str = "") -> str:
    """Rows of cells as one Markdown table (the first row its header; short rows padded, so a value stays in its
    column: ``| 2023 | 4,512 |``), its caption above it; ``|`` in a cell escaped. Empty when no row has text."""
    rows = [[" ".join(c.split()).replace("|", "\\|") for c in row] for row in rows]
    rows = [row for row in rows if any(row)]
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    lines = ["| " + " | ".join(row + [""] * (width - len(row))) + " |" for row in rows]
    lines.insert(1, "|" + " --- |" * width)
    caption = " ".join(caption.split())
    if caption and not caption.lower().startswith("table"):  # "Table 3: Revenue" is a caption as it stands
        caption = f"Table: {caption}"
    return (f"{caption}\n" if caption else "") + "\n".join(lines)
