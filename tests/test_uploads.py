"""Uploads streamed to a temporary file (pagemind.server.uploads): refused the moment they pass their limit, the
rest of the body unread; and containers whose extracted text passes the limit refused at the page that passes it.

The requests go through a tiny Starlette app on httpx's ASGI transport, which pulls a generator body one chunk at
a time as the app reads it, so a test can tell how much of a body was read."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import zipfile
from collections.abc import AsyncIterator, Iterable

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from pagemind.errors import InputError, InputTooLarge, UnsupportedInput
from pagemind.server.uploads import CONTAINER_FACTOR, body_limit, read_upload
from pagemind.text.document import load_document

MAX_BYTES = 100_000
MAX_BODY = 50_000
CHUNK = 8192
BOUNDARY = "pagemind-test-boundary"


@pytest.fixture(autouse=True)
def spool(tmp_path, monkeypatch):
    """The temporary directory uploads are spooled to (empty once every request has been answered)."""
    spool = tmp_path / "spool"
    spool.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spool))
    return spool


async def endpoint(request: Request) -> JSONResponse:
    """What the service does: read the upload, look at it, remove it; the errors as the service answers them."""
    try:
        with await read_upload(request, MAX_BYTES, max_body=MAX_BODY) as up:
            data = up.path.read_bytes() if up.path is not None else None
            return JSONResponse({"name": up.name, "text": up.text, "encoding": up.encoding,
                                 "suffix": up.path.suffix if up.path else None,
                                 "data": data.hex() if data is not None else None})
    except InputError as err:
        status = 413 if isinstance(err, InputTooLarge) else 415 if isinstance(err, UnsupportedInput) else 422
        return JSONResponse({"detail": str(err)}, status_code=status)


APP = Starlette(routes=[Route("/upload", endpoint, methods=["POST"])])


class Body:
    """A request body sent in chunks, counting how many the app asked for."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self.chunks = list(chunks)
        self.sent = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            self.sent += 1
            yield chunk

    @property
    def all_read(self) -> bool:
        return self.sent == len(self.chunks)


def post(content: bytes | Body, content_type: str, **headers: str) -> httpx.Response:
    async def send() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=APP), base_url="http://test") as client:
            return await client.post("/upload", content=content, headers={"content-type": content_type, **headers})

    return asyncio.run(send())


def chunked(data: bytes, size: int = CHUNK) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


def part(field: str, data: bytes, filename: str | None = None) -> bytes:
    disposition = f'form-data; name="{field}"' + (f'; filename="{filename}"' if filename is not None else "")
    return (f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n"
            f"Content-Type: application/octet-stream\r\n\r\n").encode() + data + b"\r\n"


def form(*parts: bytes) -> bytes:
    return b"".join(parts) + f"--{BOUNDARY}--\r\n".encode()


def send_form(*parts: bytes, size: int = CHUNK) -> tuple[httpx.Response, Body]:
    body = Body(chunked(form(*parts), size))
    return post(body, f"multipart/form-data; boundary={BOUNDARY}"), body


# --- multipart: files ------------------------------------------------------------------------------------------
def test_a_file_round_trips_its_bytes_exactly(spool):
    boundaryish = f"\r\n--{BOUNDARY[:10]}".encode()  # a partial boundary inside the data, split across chunks
    data = (os.urandom(30_000) + boundaryish) * 3 + b"\r\n--" + os.urandom(999)
    for size in (7, 1000, CHUNK):
        r, body = send_form(part("name", b"My notes.txt"), part("file", data, "x.bin"), part("encoding", b"latin-1"),
                            size=size)
        assert r.status_code == 200, r.text
        got = r.json()
        assert bytes.fromhex(got["data"]) == data and body.all_read
        assert got["name"] == "My notes.txt" and got["encoding"] == "latin-1" and got["suffix"] == ".bin"
    assert list(spool.iterdir()) == []  # removed when the with block ends


def test_a_text_file_over_max_bytes_is_refused_before_its_end_is_read(spool):
    r, body = send_form(part("file", b"word " * (2 * MAX_BYTES // 5), "big.txt"))
    assert r.status_code == 413 and "big.txt" in r.json()["detail"] and "limit" in r.json()["detail"]
    assert body.sent <= MAX_BYTES // CHUNK + 2 < len(body.chunks)  # stopped at the chunk that passed the limit
    assert list(spool.iterdir()) == []
    at_limit, _ = send_form(part("file", b"x" * MAX_BYTES, "full.txt"))
    assert at_limit.status_code == 200 and len(bytes.fromhex(at_limit.json()["data"])) == MAX_BYTES


def test_a_pdf_may_be_up_to_the_container_limit_and_not_one_byte_more(spool):
    pdf = b"%PDF-1.4\n" + b"0" * (MAX_BYTES * CONTAINER_FACTOR - 9)
    r, _ = send_form(part("file", pdf, "book.pdf"), size=65536)
    assert r.status_code == 200 and len(bytes.fromhex(r.json()["data"])) == len(pdf)
    too_big, body = send_form(part("file", pdf + b"0" * 100_000, "book.pdf"), size=65536)
    assert too_big.status_code == 413 and "PDF, EPUB or DOCX" in too_big.json()["detail"]
    assert not body.all_read
    zip_head = b"PK\x03\x04" + b"0" * (4 * MAX_BYTES)  # an EPUB or DOCX is a zip: the container limit too
    assert send_form(part("file", zip_head, "book.epub"))[0].status_code == 200
    assert list(spool.iterdir()) == []


def test_a_declared_length_over_the_limit_is_refused_before_anything_is_read():
    body = Body([form(part("file", b"small", "a.txt"))])
    r = post(body, f"multipart/form-data; boundary={BOUNDARY}", **{"content-length": str(body_limit(MAX_BYTES) + 1)})
    assert r.status_code == 413 and body.sent == 0


def test_a_file_name_of_5000_characters_keeps_its_last_255(spool):
    filename = "n" * 4996 + ".txt"
    r, _ = send_form(part("file", b"Some text.", filename))
    assert r.status_code == 200, r.text
    assert r.json()["name"] == filename[-255:] and r.json()["suffix"] == ".txt"
    long_name, _ = send_form(part("name", b"m" * 256), part("file", b"Some text.", "a.txt"))
    assert long_name.status_code == 422 and "'name' field is over 255 characters" in long_name.json()["detail"]
    assert list(spool.iterdir()) == []


def test_a_header_over_64_kib_is_a_clear_error(spool):
    r, _ = send_form(part("file", b"Some text.", "n" * 70_000 + ".txt"))
    assert r.status_code == 422 and "malformed multipart upload" in r.json()["detail"]
    assert list(spool.iterdir()) == []


def test_a_text_field_and_a_missing_file(spool):
    r, _ = send_form(part("text", "Wren finds the map. ✓".encode()), part("name", b"map.txt"))
    assert r.status_code == 200 and r.json()["text"] == "Wren finds the map. ✓" and r.json()["name"] == "map.txt"
    assert r.json()["suffix"] is None
    missing, _ = send_form(part("name", b"notes.txt"), part("other", b"x" * 10_000))
    assert missing.status_code == 422 and "without a 'file' field" in missing.json()["detail"]
    too_long, body = send_form(part("text", b"x" * (MAX_BYTES + 5 * CHUNK)))
    assert too_long.status_code == 413 and not body.all_read
    twice, _ = send_form(part("file", b"one", "a.txt"), part("file", b"two", "b.txt"))
    assert twice.status_code == 422 and "more than one 'file' part" in twice.json()["detail"]
    assert list(spool.iterdir()) == []


@pytest.mark.parametrize("body, content_type, words", [
    (b"not a multipart body at all" * 100, f"multipart/form-data; boundary={BOUNDARY}", "malformed multipart"),
    (form(part("file", b"x", "a.txt"))[:-30], f"multipart/form-data; boundary={BOUNDARY}", "before its closing"),
    (form(part("file", b"x", "a.txt")), "multipart/form-data", "no boundary"),
])
def test_malformed_multipart_is_a_clear_error(spool, body, content_type, words):
    r = post(body, content_type)
    assert r.status_code == 422 and words in r.json()["detail"], r.text
    assert list(spool.iterdir()) == []


def test_an_error_after_the_file_removes_it(spool):
    r, _ = send_form(part("file", b"Some text. " * 1000, "a.txt"), part("encoding", b"e" * 300))
    assert r.status_code == 422 and "'encoding' field is too long" in r.json()["detail"]
    truncated = form(part("file", b"Some text. " * 1000, "a.txt"), part("name", b"x"))[:-40]
    assert post(truncated, f"multipart/form-data; boundary={BOUNDARY}").status_code == 422
    assert list(spool.iterdir()) == []


# --- JSON and other content types --------------------------------------------------------------------------------
def test_a_json_text():
    r = post(json.dumps({"name": "story.txt", "text": "Once upon a time."}).encode(), "application/json")
    assert r.status_code == 200 and r.json()["text"] == "Once upon a time." and r.json()["name"] == "story.txt"
    assert post(b'{"text": "x"}', "application/json").json()["name"] == "text.txt"


def test_a_json_body_over_max_body_is_refused_as_soon_as_it_passes():
    body = Body(chunked(json.dumps({"text": "x" * (4 * MAX_BODY)}).encode()))
    r = post(body, "application/json")
    assert r.status_code == 413 and "--max-body" in r.json()["detail"]
    assert body.sent <= MAX_BODY // CHUNK + 2 < len(body.chunks)
    declared = Body([b"{}"])
    assert post(declared, "application/json", **{"content-length": str(MAX_BODY + 1)}).status_code == 413
    assert declared.sent == 0


def test_a_json_text_over_max_bytes_of_utf8():
    big = json.dumps({"text": "é" * (MAX_BYTES // 2 + 1)}).encode()  # fewer characters than max_bytes, more bytes
    assert isinstance(asyncio.run(_direct(big, max_bytes=MAX_BYTES, max_body=len(big))), InputTooLarge)
    fits = json.dumps({"text": "é" * (MAX_BYTES // 2)}).encode()
    assert asyncio.run(_direct(fits, max_bytes=MAX_BYTES, max_body=len(fits))).text == "é" * (MAX_BYTES // 2)


async def _direct(body: bytes, *, max_bytes: int, max_body: int) -> object:
    """read_upload called on a bare request (no app), returning the error it raised."""
    sent = False

    async def receive() -> dict:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    scope = {"type": "http", "method": "POST", "path": "/", "headers": [(b"content-type", b"application/json")]}
    try:
        return await read_upload(Request(scope, receive), max_bytes, max_body=max_body)
    except InputError as err:
        return err


@pytest.mark.parametrize("body, words", [
    (b"{not json", "expected JSON"),
    (b'["a list"]', "not a JSON list"),
    (b'{"name": "a.txt"}', "'text' is missing"),
    (b'{"text": 3}', "'text' must be a string"),
    (b'{"text": "x", "name": ""}', "1 to 255 characters"),
    (b'{"text": "x", "extra": 1}', "unknown field 'extra'"),
])
def test_malformed_json_names_what_is_expected(body, words):
    r = post(body, "application/json")
    assert r.status_code == 422 and words in r.json()["detail"], r.text


def test_another_content_type_is_unsupported():
    r = post(b"hello", "text/plain")
    assert r.status_code == 415 and "multipart/form-data" in r.json()["detail"]


# --- containers: the extracted text checked as it is extracted -----------------------------------------------------
def test_a_pdf_whose_text_passes_the_limit_stops_being_extracted_there(tmp_path):
    pytest.importorskip("pypdfium2", reason="needs the formats extra")
    from helpers import make_pdf

    pages = [[f"Page {n} line {k} of the harbour story." for k in range(4)] for n in range(40)]
    path = tmp_path / "long.pdf"
    path.write_bytes(make_pdf(pages))
    extracted: list[int] = []

    def counting(phase: str, done: int, total: int, unit: str) -> None:  # hears each page as it is read
        extracted.append(done)

    whole = load_document(path, max_bytes=1_000_000, progress=counting)
    assert len(extracted) == 40 and len(whole.pages) == 40
    extracted.clear()
    limit = whole.pages[20]  # the text of 20 pages (and the blank lines between them) fits; a 21st passes
    with pytest.raises(InputTooLarge, match="its text is over"):
        load_document(path, max_bytes=limit, progress=counting)
    assert extracted == list(range(1, 22))  # the page that passed it was the last one read
    assert load_document(path, max_bytes=len(whole.text.encode())).text == whole.text  # exactly at the limit


def test_load_document_with_a_name_reads_it_as_that_name(tmp_path):
    spooled = tmp_path / "pagemind-upload-x1y2"  # a temporary file without the name's suffix
    spooled.write_text("# Notes\n\nThe keeper lit the lamp.\n")
    doc = load_document(spooled, name="notes.md")
    assert doc.name == "notes.md" and doc.format == "markdown" and doc.text.startswith("Notes")
    spooled.write_bytes(b"x" * 200)
    with pytest.raises(InputTooLarge) as err:
        load_document(spooled, name="big.txt", max_bytes=100)
    assert str(err.value).startswith("big.txt:") and str(tmp_path) not in str(err.value)  # no server path shown


def test_an_epub_over_the_text_limit_is_too_large(tmp_path):
    from test_formats import make_epub

    path = tmp_path / "book.epub"
    make_epub(path)
    with pytest.raises(InputTooLarge):
        load_document(path, max_bytes=300)


def test_a_docx_that_unpacks_past_the_container_limit_is_refused_before_it_is_parsed(tmp_path):
    path = tmp_path / "bomb.docx"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("word/document.xml", "<w:document>" + " " * (MAX_BYTES * CONTAINER_FACTOR) + "</w:document>")
    assert path.stat().st_size < MAX_BYTES
    with pytest.raises(InputTooLarge, match="unpack"):
        load_document(path, max_bytes=MAX_BYTES)


def test_a_docx_whose_text_passes_the_limit_is_too_large(tmp_path):
    docx = pytest.importorskip("docx")
    word = docx.Document()
    for n in range(40):  # text enough that the package (0.8 MB of styles unpacked) is within 16 times it
        word.add_paragraph(" ".join(f"Line {n}.{i}: the keeper lit the lamp at dusk." for i in range(50)))
    path = tmp_path / "story.docx"
    word.save(str(path))
    whole = load_document(path)
    assert load_document(path, max_bytes=len(whole.text.encode())).text == whole.text
    with pytest.raises(InputTooLarge):
        load_document(path, max_bytes=len(whole.text.encode()) - 1)



def test_a_docx_of_millions_of_empty_paragraphs_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    """Issue 49: a 70 KB DOCX of 8,000,000 empty paragraphs (under the unpacked limit) took 294 s and +1.7 GB to
    refuse. Its paragraphs and cells are counted as the XML streams out of the zip, and it is refused at the limit
    before python-docx builds anything (the count stops there: its cost is the limit's). A real document reads as
    before."""
    docx = pytest.importorskip("docx")
    from pagemind.errors import InputError
    from pagemind.limits import MAX_DOCUMENT_ELEMENTS

    word = docx.Document()
    word.add_paragraph("The keeper lit the lamp at dusk.")
    real = tmp_path / "real.docx"
    word.save(str(real))
    bomb = tmp_path / "bomb.docx"
    with zipfile.ZipFile(real) as source, zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "word/document.xml":
                head, _, rest = data.partition(b"<w:body>")
                data = head + b"<w:body>" + b"<w:p/>" * 8_000_000 + rest
            z.writestr(item, data)
    assert bomb.stat().st_size < 200_000 and MAX_DOCUMENT_ELEMENTS < 8_000_000
    parsed = docx.Document
    monkeypatch.setattr(docx, "Document", lambda *a, **k: pytest.fail("python-docx parsed the bomb"))
    with pytest.raises(InputError, match="over 500,000 paragraphs and table cells"):
        load_document(bomb, max_bytes=100 * 1024 * 1024)
    monkeypatch.setattr(docx, "Document", parsed)
    assert "lit the lamp" in load_document(real).text

def test_a_pdf_without_its_trailer_is_refused_at_once(tmp_path):
    """A large file that only starts like a PDF: pypdf would scan it backwards line by line for minutes."""
    from pagemind.errors import InputError
    from pagemind.text.document import load_document

    fake = tmp_path / "big.pdf"
    fake.write_bytes(b"%PDF-1.7\n" + b"0 0 obj\n" * 2_000_000)  # 16 MB of lines, no %%EOF
    with pytest.raises(InputError, match="not a complete PDF"):  # refused before pypdf reads it
        load_document(fake, max_bytes=16 << 20)
