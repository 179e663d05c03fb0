import pytest

from pagemind.errors import InputError
from pagemind.text import Document, load_document


def test_reads_utf8_with_bom_and_crlf(tmp_path):
    p = tmp_path / "a.txt"
    p.write_bytes("\ufeffHello\r\nworld é".encode("utf-8"))
    doc = load_document(p)
    assert doc.text == "Hello\nworld é"
    assert doc.id == Document.from_text("Hello\nworld é").id


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "empty"),
        (b"   \n\n  ", "empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary"),
        (b"caf\xe9 au lait", "not valid utf-8"),
    ],
)
def test_bad_files_give_one_clear_line(tmp_path, content, message):
    p = tmp_path / "bad.txt"
    p.write_bytes(content)
    with pytest.raises(InputError) as err:
        load_document(p)
    assert message in str(err.value).lower()
    assert "\n" not in str(err.value)


def test_directory_missing_and_oversized(tmp_path):
    with pytest.raises(InputError, match="directory"):
        load_document(tmp_path)
    with pytest.raises(InputError, match="no such file"):
        load_document(tmp_path / "nope.txt")
    big = tmp_path / "big.txt"
    big.write_bytes(b"word " * 300_000)
    with pytest.raises(InputError, match="over the"):
        load_document(big, max_bytes=1_000_000)


def test_other_encodings_on_request(tmp_path):
    p = tmp_path / "latin.txt"
    p.write_bytes("café".encode("latin-1"))
    assert load_document(p, encoding="latin-1").text == "café"


SAMPLE = "Wren found the map in the sea chest.\n\nAbel read it — café, 東京."


@pytest.mark.parametrize("codec, bom", [
    ("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff"), ("utf-32-le", b"\xff\xfe\x00\x00"),
    ("utf-32-be", b"\x00\x00\xfe\xff"), ("utf-8", b"\xef\xbb\xbf"),
])
def test_byte_order_marks_are_decoded_before_any_binary_check(tmp_path, codec, bom):
    p = tmp_path / "bom.txt"
    p.write_bytes(bom + SAMPLE.replace("\n", "\r\n").encode(codec))
    assert load_document(p).text == SAMPLE  # default --encoding: the mark decides
    assert load_document(p, encoding="utf-16").text == SAMPLE  # so it does against a contrary request
    assert load_document(p).id == Document.from_text(SAMPLE).id


def test_utf16_without_bom_needs_the_encoding_and_says_so(tmp_path):
    p = tmp_path / "no-bom.txt"
    p.write_bytes(SAMPLE.encode("utf-16-le"))
    with pytest.raises(InputError) as err:
        load_document(p)
    assert "utf-16-le text without a byte-order mark: pass --encoding utf-16-le" in str(err.value)
    assert load_document(p, encoding="utf-16-le").text == SAMPLE
    assert load_document(p, encoding="utf-16").text == SAMPLE  # no mark: the codec's little-endian default
    big = tmp_path / "no-bom-be.txt"
    big.write_bytes(SAMPLE.encode("utf-16-be"))
    with pytest.raises(InputError, match="pass --encoding utf-16-be"):
        load_document(big)
    assert load_document(big, encoding="utf-16-be").text == SAMPLE


def test_nul_bytes_mean_binary_only_when_the_data_does_not_decode_as_text(tmp_path):
    p = tmp_path / "data.txt"
    p.write_bytes(b"\x00\x01\x02\x03" + bytes(range(128, 256)) * 4)
    with pytest.raises(InputError, match="binary file \\(it contains NUL bytes\\)"):
        load_document(p)
    with pytest.raises(InputError, match="binary"):  # latin-1 decodes anything; the NULs still show
        load_document(p, encoding="latin-1")
    with pytest.raises(InputError) as err:
        load_document(p, encoding="utf-16")
    assert "\n" not in str(err.value)
    with pytest.raises(InputError, match="unknown encoding 'klingon'"):
        load_document(tmp_path / "data.txt", encoding="klingon")


def test_page_at_maps_offsets_to_source_pages():
    doc = Document.from_parts(["First page.", "", "Third page.\x0c", "Fourth."], name="x.pdf", format="pdf")
    assert doc.text == "First page.\n\nThird page.\n\nFourth."
    assert doc.pages == (0, 11, 13, 26)
    assert [doc.page_at(doc.text.index(w)) for w in ("First", "Third", "Fourth")] == [1, 3, 4]
    assert doc.page_at(-1) is None and doc.page_at(len(doc.text)) is None
    assert Document.from_text("plain").page_at(0) is None
    assert doc.id == Document.from_text(doc.text).id  # the id is the text's alone
    assert doc.page_unit == "page" and Document.from_parts(["a"], format="epub").page_unit == "chapter"
    with pytest.raises(InputError, match="no text found in this PDF file"):
        Document.from_parts(["", " \n"], name="x.pdf", format="pdf")
