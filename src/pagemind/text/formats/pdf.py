"""PDF text layers with pypdf, one string per page."""

from __future__ import annotations

import io
import logging
import warnings
from contextlib import contextmanager
from typing import Iterator

from ...errors import InputError
from . import missing_library

SCANNED_HINT = "has no text layer (a scanned PDF?): run OCR first, e.g. ocrmypdf"


def pdf_pages(raw: bytes, name: str) -> list[str]:
    """The text of each page of a PDF, in order (empty strings for pages without text)."""
    try:
        import pypdf
        from pypdf.errors import DependencyError, PyPdfError
    except ImportError:
        raise missing_library("pypdf", "PDF", name) from None
    with _quiet("pypdf"):
        try:
            reader = pypdf.PdfReader(io.BytesIO(raw))
            if reader.is_encrypted and not _opens_without_password(reader):
                raise InputError(f"{name}: the PDF is encrypted (password-protected); "
                                 f"save an unprotected copy, e.g. qpdf --decrypt --password=... in.pdf out.pdf")
            pages = [page.extract_text() or "" for page in reader.pages]
        except DependencyError as err:
            raise InputError(f"{name}: the PDF needs a decryption library pypdf does not have ({err}); "
                             f"pip install 'pypdf[crypto]'") from None
        except PyPdfError as err:
            raise InputError(f"{name}: not a readable PDF ({_one_line(err)})") from None
        except (ValueError, KeyError, TypeError, AttributeError, IndexError) as err:
            raise InputError(f"{name}: not a readable PDF ({type(err).__name__}: {_one_line(err)})") from None
    if not pages:
        raise InputError(f"{name}: the PDF has no pages")
    if not any(page.strip() for page in pages):
        raise InputError(f"{name}: {SCANNED_HINT}")
    return pages


def _opens_without_password(reader: object) -> bool:
    """True when an encrypted PDF opens with the empty user password (permissions-only encryption)."""
    from pypdf import PasswordType

    try:
        return reader.decrypt("") != PasswordType.NOT_DECRYPTED  # type: ignore[attr-defined]
    except Exception as err:  # pypdf raises assorted errors for unsupported or malformed encryption
        if type(err).__name__ == "DependencyError":
            raise
        return False


@contextmanager
def _quiet(logger_name: str) -> Iterator[None]:
    """Hide a library's warnings about malformed PDFs while extracting (errors still raise)."""
    logger = logging.getLogger(logger_name)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split())[:200] or type(err).__name__
