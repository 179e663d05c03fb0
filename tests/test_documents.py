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
