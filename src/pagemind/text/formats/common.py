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
