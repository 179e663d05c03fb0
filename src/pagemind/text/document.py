"""Reading a document: bytes in, validated text out, or a clear :class:`InputError`."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

DEFAULT_MAX_BYTES = 16 * 1024 * 1024  # 16 MiB of text is ~2.7M words: days of local LLM time already


@dataclass(frozen=True)
class Document:
    """A text and its content address. Two files with the same text are the same document."""

    text: str
    name: str = "text"

    @property
    def id(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def words(self) -> int:
        return len(self.text.split())

    @classmethod
    def from_text(cls, text: str, name: str = "text") -> "Document":
        return cls(text=_validate_text(normalise_newlines(text), name), name=name)


def normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _validate_text(text: str, name: str) -> str:
    if not text.strip():
        raise InputError(f"{name}: the document is empty (no words to read)")
    sample = text[:65536]
    controls = sum(1 for ch in sample if ord(ch) < 32 and ch not in "\n\t\f\v")
    if "\x00" in sample or controls > max(8, len(sample) // 100):
        raise InputError(f"{name}: this looks like a binary file, not text")
    return text


def load_document(
    path: str | Path, *, encoding: str = "utf-8", max_bytes: int = DEFAULT_MAX_BYTES
) -> Document:
    """Read a text file, refusing what cannot be read as text with a one-line reason."""
    p = Path(path)
    name = p.name or str(p)
    if not p.exists():
        raise InputError(f"{path}: no such file")
    if p.is_dir():
        raise InputError(f"{path}: is a directory; give a text file")
    size = p.stat().st_size
    if size > max_bytes:
        raise InputError(
            f"{path}: {size / 1e6:.1f} MB is over the {max_bytes / 1e6:.1f} MB limit "
            f"(raise it with --max-bytes or PAGEMIND_MAX_BYTES)"
        )
    if size == 0:
        raise InputError(f"{path}: the file is empty")
    raw = p.read_bytes()
    if b"\x00" in raw[:65536]:
        raise InputError(f"{path}: this looks like a binary file (it contains NUL bytes), not text")
    try:
        text = raw.decode("utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding)
    except UnicodeDecodeError as err:
        raise InputError(
            f"{path}: not valid {encoding} (byte {err.start}: {raw[err.start:err.start + 1]!r}); "
            f"pass --encoding, e.g. --encoding latin-1"
        ) from None
    except LookupError:
        raise InputError(f"unknown encoding {encoding!r}") from None
    return Document(text=_validate_text(normalise_newlines(text), name), name=name)
