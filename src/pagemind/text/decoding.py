"""Bytes to text: byte-order marks first, then the encoding asked for; binary only when nothing decodes.

A byte-order mark is decisive (UTF-32 is tested before UTF-16, whose little-endian mark it begins with), so a
UTF-16 or UTF-32 file reads without flags. Without a mark the given encoding is used (``--encoding utf-16``
reads a mark-less UTF-16 file). NUL bytes mean "binary" only for data that did not decode, or that decoded
into text full of NULs; a UTF-16 file without a mark read as UTF-8 is named as such, with the flag to pass.
"""

from __future__ import annotations

import codecs
import re

from ..errors import InputError, UnsupportedInput

# (mark, codec): UTF-32 LE before UTF-16 LE, whose mark is a prefix of it.
BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
UTF8_NAMES = ("utf-8", "utf8", "u8", "utf-8-sig")
XML_DECLARED = re.compile(rb"""^\s*<\?xml[^>]*encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")
META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9._-]+)""", re.IGNORECASE)


def bom_encoding(raw: bytes) -> tuple[str, int] | None:
    """The codec named by ``raw``'s byte-order mark and the mark's length, or None."""
    for mark, codec in BOMS:
        if raw.startswith(mark):
            return codec, len(mark)
    return None


def decode_bytes(raw: bytes, encoding: str = "utf-8", name: str = "text") -> str:
    """Decode ``raw``: its byte-order mark if it has one, else ``encoding``; a one-line :class:`InputError` if not."""
    found = bom_encoding(raw)
    if found:
        codec, skip = found
        body = raw[skip:]
    else:
        codec, body = encoding, raw
        try:
            codec = codecs.lookup(encoding).name
        except LookupError:
            raise InputError(f"unknown encoding {encoding!r}") from None
        if codec in ("utf-8", "utf-8-sig"):
            codec = "utf-8-sig"
    try:
        text = body.decode(codec)
    except UnicodeDecodeError as err:
        if b"\x00" in raw[:65536]:
            raise _binary(raw, name) from None
        shown = "utf-8" if codec == "utf-8-sig" else codec
        raise InputError(
            f"{name}: not valid {shown} (byte {err.start + (found[1] if found else 0)}: "
            f"{body[err.start:err.start + 1]!r}); pass --encoding, e.g. --encoding latin-1"
        ) from None
    if "\x00" in text[:65536]:
        raise _binary(raw, name)
    return text


def declared_encoding(raw: bytes, default: str = "utf-8") -> str:
    """The encoding an HTML or XML page declares (byte-order mark, XML declaration, meta charset), else ``default``."""
    found = bom_encoding(raw)
    if found:
        return found[0]
    head = raw[:2048]
    match = XML_DECLARED.match(head) or META_CHARSET.search(head)
    if match:
        name = match.group(1).decode("ascii")
        try:
            return codecs.lookup(name).name
        except LookupError:
            pass
    return default


def _binary(raw: bytes, name: str) -> InputError:
    """The error for data with NUL bytes: mark-less UTF-16 named as such, anything else called binary."""
    guess = _utf16_without_bom(raw)
    if guess:
        return InputError(f"{name}: this looks like {guess} text without a byte-order mark: pass --encoding {guess}")
    return UnsupportedInput(f"{name}: this looks like a binary file (it contains NUL bytes), not text")


def _utf16_without_bom(raw: bytes) -> str | None:
    """``utf-16-le``/``utf-16-be`` when NULs sit at almost every odd/even byte (mostly-ASCII UTF-16), else None."""
    sample = raw[:4096]
    if len(sample) < 8:
        return None
    pairs = len(sample) // 2
    odd = sum(1 for i in range(1, 2 * pairs, 2) if sample[i] == 0)
    even = sum(1 for i in range(0, 2 * pairs, 2) if sample[i] == 0)
    if odd >= 0.6 * pairs and even <= 0.05 * pairs:
        return "utf-16-le"
    if even >= 0.6 * pairs and odd <= 0.05 * pairs:
        return "utf-16-be"
    return None
