"""Reading an upload (``POST /v1/documents``) without holding it: the file streamed to a temporary file and
refused the moment it passes its limit, or a text (a JSON body, a multipart ``text`` field) bounded as it is read.

Why: buffering the body, handing it to a form parser and reading the parsed file held about four copies of it,
and the only bound was the container limit (``CONTAINER_FACTOR`` times ``max_bytes``) even for a plain text. Here
the multipart body is parsed as it arrives (python-multipart's streaming parser), the ``file`` part goes to disk
chunk by chunk, and its limit is told by its first bytes (:func:`~pagemind.text.formats.sniff_format`): a PDF or a
zip (EPUB, DOCX) may be ``max_bytes * CONTAINER_FACTOR``, anything else ``max_bytes``. The byte that passes it
raises :class:`InputTooLarge` (413) and the rest of the body is never read. The temporary file is removed on every
error; on success the caller removes it (``with await read_upload(...) as upload:``).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.requests import Request

from ..errors import InputError, InputTooLarge, UnsupportedInput
from ..limits import MAX_ENCODING, MAX_NAME, check_json_shape
from ..text.formats import CONTAINER_FACTOR, sniff_format

HEAD = 1024  # the bytes sniff_format looks at
HEADER_BYTES = 64 * 1024  # one header of a part: a file name of 5,000 characters is up to 20 KB of UTF-8
SLACK = 64 * 1024  # boundaries, part headers and the small fields on top of the largest file
JSON_SHAPE = 'expected JSON {"name": "...", "text": "..."}'
LIMIT_HINT = f"{CONTAINER_FACTOR} times --max-bytes: the limit of a PDF, EPUB or DOCX file"


@dataclass(frozen=True)
class Upload:
    """An uploaded document: a file spooled to ``path`` (a temporary file), or a ``text``; exactly one is set.

    ``name``: the ``name`` field, else the file's name (its last 255 characters), else ``upload.txt`` (a file) or
    ``text.txt`` (a text); its suffix tells the format where the content does not. ``encoding``: the
    ``encoding`` field of a file (None: UTF-8, or what a byte-order mark says). ``close()`` (or leaving a
    ``with`` block) removes the temporary file."""

    path: Path | None
    text: str | None
    name: str
    encoding: str | None = None

    def close(self) -> None:
        if self.path is not None:
            self.path.unlink(missing_ok=True)

    def __enter__(self) -> Upload:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def hand_over(upload: Upload) -> Path:
    """The upload's spooled file under a name of its own, which closing the upload leaves alone: whoever takes it
    (a background run) removes it."""
    assert upload.path is not None
    fd, name = tempfile.mkstemp(prefix="pagemind-upload-", suffix=upload.path.suffix)
    os.close(fd)
    try:
        os.replace(upload.path, name)
    except OSError:
        Path(name).unlink(missing_ok=True)
        raise
    return Path(name)


def body_limit(max_bytes: int) -> int:
    """The most bytes a multipart upload's body may have: the largest file (a container) and some slack."""
    return max_bytes * CONTAINER_FACTOR + SLACK


async def read_upload(request: Request, max_bytes: int, *, max_body: int) -> Upload:
    """The document a request uploads: ``multipart/form-data`` with a ``file`` part (optional ``name`` and
    ``encoding`` fields) or a ``text`` field, or ``application/json`` ``{"name", "text"}`` (at most ``max_body``
    bytes). A text is at most ``max_bytes`` bytes of UTF-8, a file at most its limit (see the module).

    A declared ``Content-Length`` over the most the request may send is refused before anything is read. A file
    name longer than 255 characters is cut to its last 255 (its suffix, which may tell the format, is kept); a
    ``name`` field longer than that is an :class:`InputError`, as is one part header over 64 KiB.

    Raises :class:`InputTooLarge` (413), :class:`UnsupportedInput` (another content type, 415) or
    :class:`InputError` (malformed: 422); nothing stays on disk when it raises."""
    kind, options = parse_options_header(request.headers.get("content-type", ""))
    if kind == b"application/json":
        _check_declared(request, max_body, f"this server's {max_body:,}-byte limit of a JSON body (--max-body)")
        return _json_upload(await _body(request, max_body), max_bytes)
    if kind == b"multipart/form-data":
        limit = body_limit(max_bytes)
        _check_declared(request, limit, f"the {limit / 1e6:.1f} MB limit of an upload ({LIMIT_HINT})")
        boundary = options.get(b"boundary")
        if not boundary:
            raise InputError("malformed multipart upload: no boundary in its Content-Type")
        return await _multipart_upload(request, boundary, max_bytes)
    shown = kind.decode("latin-1") or "none"
    raise UnsupportedInput(f"content type {shown!r}: send multipart/form-data with a 'file' field, "
                           "or application/json {\"name\", \"text\"}")


def _check_declared(request: Request, limit: int, what: str) -> None:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise InputTooLarge(f"the upload's {int(declared):,} bytes are over {what}")


async def _body(request: Request, limit: int) -> bytearray:
    """The whole body, refused as soon as it passes ``limit`` bytes (a chunked body declares no length)."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise InputTooLarge(f"the JSON body is over this server's {limit:,}-byte limit (--max-body)")
    return body


def _json_upload(body: bytearray, max_bytes: int) -> Upload:
    refused = check_json_shape(bytes(body))  # before the parser builds anything (deep or countless values)
    if refused is not None:
        raise InputError(refused)
    try:
        payload = json.loads(body)
    except ValueError as err:  # JSONDecodeError and UnicodeDecodeError
        raise InputError(f"{JSON_SHAPE}, not this: {err}") from None
    if not isinstance(payload, dict):
        raise InputError(f"{JSON_SHAPE}, not a JSON {type(payload).__name__}")
    unknown = sorted(set(payload) - {"name", "text"})
    if unknown:
        raise InputError(f"{JSON_SHAPE}: unknown field {unknown[0]!r}")
    name, text = payload.get("name", "text.txt"), payload.get("text")
    if not isinstance(text, str):
        raise InputError(f"{JSON_SHAPE}: 'text' must be a string" if "text" in payload else
                         f"{JSON_SHAPE}: 'text' is missing")
    if not isinstance(name, str) or not 1 <= len(name) <= MAX_NAME or "\x00" in name:
        raise InputError(f"{JSON_SHAPE}: 'name' must be a string of 1 to {MAX_NAME} characters (no NUL)")
    _check_text(text, max_bytes, name)
    return Upload(None, text, name)


def _check_text(text: str, max_bytes: int, name: str) -> None:
    """:class:`InputTooLarge` when ``text`` is over ``max_bytes`` bytes of UTF-8 (encoding only when in doubt)."""
    if len(text) > max_bytes or (len(text) * 4 > max_bytes and len(text.encode("utf-8")) > max_bytes):
        raise InputTooLarge(f"{name}: its text is over the {max_bytes / 1e6:.1f} MB limit of this server "
                            f"(--max-bytes)")


async def _multipart_upload(request: Request, boundary: bytes, max_bytes: int) -> Upload:
    form = _Form(max_bytes)
    limit = body_limit(max_bytes)
    read = 0
    try:
        parser = _parser(boundary, form)
        async for chunk in request.stream():
            read += len(chunk)
            if read > limit:
                raise InputTooLarge(f"the upload is over the {limit / 1e6:.1f} MB limit of this server "
                                    f"({LIMIT_HINT})")
            parser.write(chunk)
        if not form.ended:
            raise InputError("malformed multipart upload: the body ends before its closing boundary")
        return form.upload()
    except FormParserError as err:  # the parser's own errors (MultipartParseError, a boundary too long)
        form.discard()
        raise InputError(f"malformed multipart upload: {err}") from None
    except BaseException:  # InputError, a client that went away, a cancelled request: no file stays behind
        form.discard()
        raise


def _parser(boundary: bytes, form: _Form) -> MultipartParser:
    callbacks: Any = {name: getattr(form, name) for name in (
        "on_part_begin", "on_header_field", "on_header_value", "on_header_end", "on_headers_finished",
        "on_part_data", "on_part_end", "on_end")}
    try:  # recent python-multipart bounds a part's header at 4 KiB by default: a long file name would be "malformed"
        return MultipartParser(boundary, callbacks, max_header_size=HEADER_BYTES)
    except TypeError:  # an older one has no bound of its own; _Form's stands
        return MultipartParser(boundary, callbacks)


class _Spool:
    """The ``file`` part on its way to a temporary file; :class:`InputTooLarge` the moment it passes its limit,
    which its first bytes decide (a container's, or a text's)."""

    def __init__(self, filename: str, max_bytes: int) -> None:
        self.filename = filename
        self.max_bytes = max_bytes
        fd, path = tempfile.mkstemp(prefix="pagemind-upload-", suffix=_safe_suffix(filename))
        self.path = Path(path)
        self.file: BinaryIO = os.fdopen(fd, "wb")
        self.head = bytearray()
        self.size = 0
        self.limit: int | None = None

    def write(self, data: bytes, start: int, end: int) -> None:
        if self.limit is None:
            self.head += data[start:min(end, start + HEAD - len(self.head))]
            if len(self.head) >= HEAD:
                self.decide()
        self.size += end - start
        self.check()
        self.file.write(memoryview(data)[start:end])

    def finish(self) -> None:
        if self.limit is None:
            self.decide()
            self.check()
        self.file.close()

    def decide(self) -> None:
        container = sniff_format(bytes(self.head), Path(self.filename).suffix) in ("pdf", "zip")
        self.limit = self.max_bytes * CONTAINER_FACTOR if container else self.max_bytes

    def check(self) -> None:
        if self.limit is not None and self.size > self.limit:
            what = (f"a PDF, EPUB or DOCX file ({CONTAINER_FACTOR} times --max-bytes)" if self.limit > self.max_bytes
                    else f"a text file (--max-bytes; a PDF, EPUB or DOCX file may be {CONTAINER_FACTOR} times it)")
            raise InputTooLarge(f"{self.filename}: over this server's {self.limit / 1e6:.1f} MB limit of {what}")

    def discard(self) -> None:
        self.file.close()
        self.path.unlink(missing_ok=True)


class _Form:
    """One multipart body as python-multipart parses it: its callbacks (these ``on_*`` methods) send the ``file``
    part to a :class:`_Spool` and keep the small fields, each within its bound; other fields are skipped."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bounds = {"name": MAX_NAME * 4, "encoding": MAX_ENCODING * 4, "text": max_bytes}  # bytes of UTF-8
        self.fields: dict[str, bytearray] = {}
        self.spool: _Spool | None = None
        self.part: str | None = None  # the field of the part being read (None: one to skip)
        self.header, self.value, self.disposition = bytearray(), bytearray(), b""
        self.ended = False

    def on_part_begin(self) -> None:
        self.part, self.disposition = None, b""

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self.header += data[start:end]
        self._check_header()

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self.value += data[start:end]
        self._check_header()

    def _check_header(self) -> None:
        if len(self.header) + len(self.value) > HEADER_BYTES:
            raise InputError(f"malformed multipart upload: a part's header is over {HEADER_BYTES // 1024} KiB")

    def on_header_end(self) -> None:
        if self.header.lower() == b"content-disposition":
            self.disposition = bytes(self.value)
        self.header.clear()
        self.value.clear()

    def on_headers_finished(self) -> None:
        _, options = parse_options_header(self.disposition)
        field = _decoded(options.get(b"name", b""))
        if field == "file":
            if self.spool is not None:
                raise InputError("malformed multipart upload: more than one 'file' part")
            filename = _decoded(options.get(b"filename", b"")).replace("\x00", "")[-MAX_NAME:] or "upload.txt"
            self.spool = _Spool(filename, self.max_bytes)
        elif field in self.bounds:
            if field in self.fields:
                raise InputError(f"malformed multipart upload: more than one {field!r} field")
            self.fields[field] = bytearray()
        self.part = field if field == "file" or field in self.bounds else None

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        if self.part == "file":
            assert self.spool is not None
            self.spool.write(data, start, end)
        elif self.part is not None:
            value = self.fields[self.part]
            value += data[start:end]
            if len(value) > self.bounds[self.part]:
                if self.part == "text":
                    raise InputTooLarge(f"the 'text' field is over the {self.max_bytes / 1e6:.1f} MB limit of "
                                        f"this server (--max-bytes)")
                raise InputError(f"the {self.part!r} field is too long")

    def on_part_end(self) -> None:
        if self.part == "file":
            assert self.spool is not None
            self.spool.finish()
        self.part = None

    def on_end(self) -> None:
        self.ended = True

    def upload(self) -> Upload:
        """What the body held: its file (the spooled one), else its ``text`` field."""
        name = self._field("name", MAX_NAME)
        if self.spool is not None:
            return Upload(self.spool.path, None, name or self.spool.filename, self._field("encoding", MAX_ENCODING))
        if "text" in self.fields:
            try:
                text = self.fields["text"].decode("utf-8")
            except UnicodeDecodeError:
                raise InputError("the 'text' field is not UTF-8") from None
            _check_text(text, self.max_bytes, name or "text.txt")
            return Upload(None, text, name or "text.txt")
        raise InputError("multipart upload without a 'file' field (or a 'text' field)")

    def _field(self, field: str, chars: int) -> str | None:
        value = _decoded(bytes(self.fields.get(field, b"")))
        if len(value) > chars:
            raise InputError(f"the {field!r} field is over {chars} characters")
        if "\x00" in value:
            raise InputError(f"the {field!r} field holds a NUL character")
        return value or None

    def discard(self) -> None:
        if self.spool is not None:
            self.spool.discard()


def _decoded(raw: bytes) -> str:
    """A header parameter or small field: UTF-8 as browsers send it, else Latin-1 (no byte is an error)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _safe_suffix(filename: str) -> str:
    """The name's suffix for the temporary file when it is a plain one (``.pdf``), else none."""
    suffix = Path(filename).suffix
    return suffix if 1 < len(suffix) <= 16 and suffix[1:].isalnum() and suffix.isascii() else ""


__all__ = ["Upload", "body_limit", "read_upload"]
