"""PDF, HTML, EPUB, DOCX and Markdown inputs, from small files generated here."""

import io
import sys
import zipfile

import pytest
from click.testing import CliRunner

from helpers import first_words_gist, make_pdf, middle_label
from pagemind import ScriptedLLM
from pagemind.cli.main import cli
from pagemind.errors import InputError
from pagemind.text import Document, load_document

pypdf = pytest.importorskip("pypdf", reason="needs the formats extra: pip install 'pagemind[formats]'")


TWO_PAGES = [["Page one text.", "Wren finds the map in the sea chest."],
             ["Page two text.", "Abel reads it aloud by the fire."]]


def test_generated_pdf_is_valid_for_pypdf_in_strict_mode():
    reader = pypdf.PdfReader(io.BytesIO(make_pdf(TWO_PAGES)), strict=True)
    assert len(reader.pages) == 2


def test_pdf_text_per_page_with_page_starts(tmp_path):
    p = tmp_path / "story.pdf"
    p.write_bytes(make_pdf(TWO_PAGES))
    doc = load_document(p)
    assert doc.format == "pdf" and doc.name == "story.pdf"
    assert doc.text == ("Page one text.\nWren finds the map in the sea chest.\n\n"
                        "Page two text.\nAbel reads it aloud by the fire.")
    assert doc.pages == (0, doc.text.index("Page two"))
    assert doc.page_at(doc.text.index("Wren")) == 1 and doc.page_at(doc.text.index("Abel")) == 2
    assert doc.id == Document.from_text(doc.text).id  # a content address of the text, not of the PDF bytes


def test_pdf_image_only_pages_keep_their_numbers(tmp_path):
    p = tmp_path / "mixed.pdf"
    p.write_bytes(make_pdf([["Before the picture."], None, ["After the picture."]]))
    doc = load_document(p)
    assert len(doc.pages) == 3
    assert doc.page_at(doc.text.index("After")) == 3 and doc.page_at(doc.text.index("Before")) == 1


def test_scanned_pdf_without_text_layer_is_a_clear_error(tmp_path, monkeypatch):
    p = tmp_path / "scan.pdf"
    p.write_bytes(make_pdf([None, None]))  # two pages, each one white pixel: OCR finds nothing either
    with pytest.raises(InputError) as err:
        load_document(p)
    assert str(err.value).endswith("scan.pdf: has no text layer and OCR found no text on its pages (a photo, a "
                                   "blank scan?)")
    with pytest.raises(InputError) as err:
        load_document(p, ocr="off")
    assert str(err.value).endswith("scan.pdf: has no text layer (a scanned PDF?): run OCR first, e.g. ocrmypdf (or "
                                   "read it with --ocr auto)")
    monkeypatch.setenv("PATH", str(tmp_path))  # no tesseract: the message says what reads such pages
    with pytest.raises(InputError, match="Tesseract, which is not installed"):
        load_document(p)


def test_encrypted_pdf(tmp_path):
    reader = pypdf.PdfReader(io.BytesIO(make_pdf(TWO_PAGES)))
    for user_password, readable in (("secret", False), ("", True)):
        writer = pypdf.PdfWriter(clone_from=reader)
        writer.encrypt(user_password=user_password, owner_password="owner", algorithm="RC4-128")
        p = tmp_path / f"locked-{readable}.pdf"
        with p.open("wb") as f:
            writer.write(f)
        if readable:  # permissions-only encryption: opens with the empty password
            assert "Wren finds the map" in load_document(p).text
        else:
            with pytest.raises(InputError, match="encrypted \\(password-protected\\)"):
                load_document(p)


def test_damaged_and_misnamed_files(tmp_path):
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog\ngarbage")
    with pytest.raises(InputError) as err:
        load_document(broken)
    assert "\n" not in str(err.value)
    misnamed = tmp_path / "notes.pdf"
    misnamed.write_text("just some words")
    with pytest.raises(InputError, match="named .pdf but its content"):
        load_document(misnamed)
    archive = tmp_path / "photos.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("a.txt", "hello")
    with pytest.raises(InputError, match="neither EPUB nor DOCX"):
        load_document(archive)
    legacy = tmp_path / "old.doc"
    legacy.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 600)
    with pytest.raises(InputError, match="legacy Office file"):
        load_document(legacy)


def test_a_pdf_without_its_readers_says_what_to_install(tmp_path, monkeypatch):
    p = tmp_path / "story.pdf"
    p.write_bytes(make_pdf(TWO_PAGES))
    monkeypatch.setitem(sys.modules, "pypdfium2", None)  # import pypdfium2 now raises ImportError
    assert "Wren" in load_document(p).text and load_document(p).format == "pdf"  # pypdf reads it
    monkeypatch.setitem(sys.modules, "pypdf", None)
    with pytest.raises(InputError, match="needs pypdfium2: pip install 'pagemind\\[formats\\]'"):
        load_document(p)


PAGE = """<!DOCTYPE html>
<html><head><meta charset="windows-1252"><title>Site title</title>
<style>body { color: red }</style><script>var secret = "do not read";</script></head>
<body><nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<h1>The Harbour</h1>
<p>Wren finds the&nbsp;map
   in the <em>sea chest</em>.</p>
<div hidden>Hidden text.</div>
<p>First line<br>second line</p>
<ul><li>One</li><li>Two</li></ul>
<table><tr><th>Name</th><th>Role</th></tr><tr><td>Wren</td><td>finder</td></tr></table>
<pre>code   keeps
   its spaces</pre>
<script>console.log("nor this")</script>
<p>Caf\xe9 &amp; more</p>
</body></html>"""


def test_html_keeps_headings_and_paragraphs_and_drops_script_style_nav(tmp_path):
    p = tmp_path / "page.html"
    p.write_bytes(PAGE.encode("windows-1252"))  # declared by its meta charset, not UTF-8
    doc = load_document(p)
    assert doc.format == "html" and doc.pages == ()
    assert doc.text.split("\n\n") == [
        "The Harbour", "Wren finds the map in the sea chest.", "First line\nsecond line", "One", "Two",
        "| Name | Role |\n| --- | --- |\n| Wren | finder |", "code   keeps\n   its spaces", "Café & more",
    ]
    for hidden in ("secret", "color", "Home", "Site title", "Hidden", "nor this"):
        assert hidden not in doc.text


def test_html_is_sniffed_without_a_suffix_but_a_txt_file_stays_text(tmp_path):
    page = "<!doctype html><html><body><p>Hello <b>there</b>.</p></body></html>"
    (tmp_path / "page").write_text(page)
    assert load_document(tmp_path / "page").text == "Hello there."
    (tmp_path / "page.txt").write_text(page)
    assert load_document(tmp_path / "page.txt").text == page
    (tmp_path / "empty.html").write_text("<html><script>x()</script></html>")
    with pytest.raises(InputError, match="no text found in this HTML file"):
        load_document(tmp_path / "empty.html")


def chapter(title: str, body: str) -> str:
    return (f'<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml"><head>'
            f"<title>Book</title></head><body><h2>{title}</h2><p>{body}</p></body></html>")


def make_epub(path, encrypted: bool = False) -> None:
    """An EPUB 3 with a cover image page and two chapters, the spine listing chapter two first."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")  # first and stored, as the spec asks
        z.writestr("META-INF/container.xml",
                   '<?xml version="1.0"?><container version="1.0" '
                   'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
                   '<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
                   "</rootfiles></container>", compress_type=zipfile.ZIP_DEFLATED)
        z.writestr("OEBPS/content.opf",
                   '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
                   "<metadata/><manifest>"
                   '<item id="cover" href="cover.xhtml" media-type="application/xhtml+xml"/>'
                   '<item id="c1" href="text/one%20a.xhtml" media-type="application/xhtml+xml"/>'
                   '<item id="c2" href="text/two.xhtml" media-type="application/xhtml+xml"/>'
                   '<item id="notes" href="text/notes.xhtml" media-type="application/xhtml+xml"/>'
                   '<item id="css" href="style.css" media-type="text/css"/>'
                   '</manifest><spine><itemref idref="cover"/><itemref idref="c2"/><itemref idref="c1"/>'
                   '<itemref idref="notes" linear="no"/></spine></package>')
        z.writestr("OEBPS/cover.xhtml", '<html xmlns="http://www.w3.org/1999/xhtml"><body>'
                                        '<img src="cover.png" alt="Cover"/></body></html>')
        z.writestr("OEBPS/text/one a.xhtml", chapter("Chapter One", "Wren finds the map."))
        z.writestr("OEBPS/text/two.xhtml", chapter("Chapter Two", "Abel reads the map."))
        z.writestr("OEBPS/text/notes.xhtml", chapter("Notes", "Not in the reading order."))
        z.writestr("OEBPS/style.css", "p { margin: 0 }")
        if encrypted:
            z.writestr("META-INF/encryption.xml",
                       '<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
                       'xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData><enc:CipherData>'
                       '<enc:CipherReference URI="OEBPS/text/two.xhtml"/></enc:CipherData></enc:EncryptedData>'
                       "</encryption>")


def test_epub_reads_the_spine_in_order_with_chapter_starts(tmp_path):
    p = tmp_path / "book.bin"  # the content decides, not the name
    make_epub(p)
    doc = load_document(p)
    assert doc.format == "epub" and doc.page_unit == "chapter"
    assert doc.text == "Chapter Two\n\nAbel reads the map.\n\nChapter One\n\nWren finds the map."
    assert doc.pages == (0, doc.text.index("Chapter One"))
    assert doc.page_at(doc.text.index("Wren")) == 2
    assert [(sec.title, sec.page, sec.source) for sec in doc.sections] == [("Chapter Two", 1, "markup"),
                                                                           ("Chapter One", 2, "markup")]
    locked = tmp_path / "locked.epub"
    make_epub(locked, encrypted=True)
    with pytest.raises(InputError, match="DRM-protected"):
        load_document(locked)


def test_docx_paragraphs_and_tables_in_order(tmp_path):
    docx = pytest.importorskip("docx")
    word = docx.Document()
    word.add_heading("The Harbour", level=1)
    word.add_paragraph("Wren finds the map in the sea chest.")
    word.add_paragraph("")
    table = word.add_table(rows=2, cols=2)
    for row, (name, role) in zip(table.rows, [("Name", "Role"), ("Wren", "finder")]):
        row.cells[0].text, row.cells[1].text = name, role
    word.add_page_break()
    word.add_paragraph("Abel reads it.")
    p = tmp_path / "story.docx"
    word.save(str(p))
    doc = load_document(p)
    assert doc.format == "docx" and doc.pages == ()  # DOCX stores no page numbers
    assert doc.text.split("\n\n") == ["The Harbour", "Wren finds the map in the sea chest.",
                                      "| Name | Role |\n| --- | --- |\n| Wren | finder |", "Abel reads it."]


def test_tables_stay_tables_with_their_columns_and_merged_cells(tmp_path):
    docx = pytest.importorskip("docx")
    word = docx.Document()
    word.add_paragraph("Table 1: Revenue", style="Caption")
    table = word.add_table(rows=3, cols=3)
    for row, cells in zip(table.rows, [("Year", "Revenue", "Margin"), ("2023", "4,512", "12%"),
                                       ("Total", "", "")]):
        for cell, value in zip(row.cells, cells):
            cell.text = value
    table.rows[2].cells[0].merge(table.rows[2].cells[1])  # "Total" spans two columns
    p = tmp_path / "report.docx"
    word.save(str(p))
    doc = load_document(p)
    assert doc.text.split("\n\n") == ["Table 1: Revenue", "| Year | Revenue | Margin |\n| --- | --- | --- |\n"
                                      "| 2023 | 4,512 | 12% |\n| Total |  |  |"]
    page = load_document_html(tmp_path, "<table><caption>Revenue | by year</caption><tr><th>Year</th><th>Revenue"
                                        "</th></tr><tr><td>2023</td><td><p>4,512</p><table><tr><td>inner</td></tr>"
                                        "</table></td></tr><tr><td colspan='2'>Total</td></tr></table>")
    assert page.text == ("Table: Revenue | by year\n| Year | Revenue |\n| --- | --- |\n| 2023 | 4,512 inner |\n"
                         "| Total |  |")


def load_document_html(tmp_path, body):
    p = tmp_path / "t.html"
    p.write_text(f"<html><body>{body}</body></html>", encoding="utf-8")
    return load_document(p)


MARKDOWN = """---
title: Notes
---
# The *Harbour* #

Wren finds the **map** in the [sea chest](https://example.com/chest_(old) "a title"), see ![a map](map.png).
A snake_case_name stays, as does `code *x*`. <span class="x">Inline</span> html.

Setext heading
--------------

> Quoted line.

```python
x = 2 * 3  # [not a link](x)
```

[ref]: https://example.com
Visit <https://example.org> or [the ref][ref]. \\*Not emphasis\\*.
<!-- a comment -->
"""


def test_markdown_loses_the_markup_that_hurts_reading(tmp_path):
    p = tmp_path / "notes.md"
    p.write_text(MARKDOWN)
    doc = load_document(p)
    assert doc.format == "markdown"
    assert doc.text.split("\n\n") == [
        "The Harbour",
        "Wren finds the map in the sea chest, see.\nA snake_case_name stays, as does code *x*. Inline html.",
        "Setext heading", "Quoted line.", "x = 2 * 3  # [not a link](x)",
        "Visit https://example.org or the ref. *Not emphasis*.",
    ]
    (tmp_path / "notes.txt").write_text(MARKDOWN)
    assert load_document(tmp_path / "notes.txt").text == MARKDOWN  # a .txt file is read as it is


def test_ask_about_a_pdf_from_the_cli(tmp_path):
    pages = [[f"Page {k} line {j}: the harbour story goes on with more words." for j in range(12)]
             for k in range(1, 4)]
    pages[0][3] = "Wren finds the map in the sea chest."
    p = tmp_path / "story.pdf"
    p.write_bytes(make_pdf(pages))
    fake = ScriptedLLM(by_role={"paginate": middle_label, "gist": first_words_gist,
                                "lookup": "I want to look up Page [0] to", "answer": "Wren finds it."})
    result = CliRunner().invoke(cli, ["ask", str(p), "Who finds the map?", "-m", "readagent-p"],
                                obj={"backend": fake})
    assert result.exit_code == 0, result.output
    assert "Wren finds it." in result.stdout
    prompts = "\n".join(m.content for request in fake.history for m in request.messages)
    assert "Wren finds the map in the sea chest." in prompts
    assert "%PDF" not in prompts and "endstream" not in prompts and "Helvetica" not in prompts


# --- tables in PDFs (issue 37) -----------------------------------------------------------------------------------
REVENUE = [["Region", "2022", "2023"], ["North", "4,102", "4,512"], ["South", "3,980", "4,017"],
           ["East", "1,200", "1,310"]]


def test_a_pdf_table_keeps_its_cells_in_columns_with_its_caption(tmp_path):
    """A ruled table, read by pdfplumber, is written into the page's text as a Markdown table where it stands, its
    caption line above it: "2023 | 4,512" stays in its column (pypdf alone gives "North 4,102 4,512")."""
    pytest.importorskip("pdfplumber", reason="needs the formats extra")
    from helpers import table_page

    p = tmp_path / "report.pdf"
    p.write_bytes(make_pdf([["Annual report 2023", "Results in brief."],
                            table_page(["Our sales grew in every region.", "Table 3: Revenue by region (EUR m)"],
                                       REVENUE, ["Costs fell in the second half."])]))
    doc = load_document(p)
    page_two = doc.text[doc.pages[1]:]
    assert page_two == ("Our sales grew in every region.\nTable 3: Revenue by region (EUR m)\n"
                        "| Region | 2022 | 2023 |\n| --- | --- | --- |\n| North | 4,102 | 4,512 |\n"
                        "| South | 3,980 | 4,017 |\n| East | 1,200 | 1,310 |\nCosts fell in the second half.")
    assert doc.text.startswith("Annual report 2023\nResults in brief.")  # a page without a table: pypdf's text


def test_merged_cells_and_frames_are_read_sensibly(tmp_path):
    """A row with an empty (merged) cell keeps its columns; a one-row ruled box is a frame, not a table."""
    pytest.importorskip("pdfplumber", reason="needs the formats extra")
    from helpers import table_page

    merged = [["Item", "Q1", "Q2"], ["Total", "", "9"], ["Fees", "1", "2"]]
    p = tmp_path / "merged.pdf"
    p.write_bytes(make_pdf([table_page(["Costs"], merged, ["End."]),
                            table_page(["A boxed note:"], [["Read this first", "please"]], ["After the box."])]))
    doc = load_document(p)
    assert "| Total |  | 9 |" in doc.text and "| Fees | 1 | 2 |" in doc.text
    boxed = doc.text[doc.pages[1]:]
    assert "|" not in boxed and "Read this first" in boxed and "After the box." in boxed


def test_without_pdfplumber_a_table_of_numbers_is_still_rows_under_its_header(tmp_path, monkeypatch):
    """pdfium keeps each row on its line; a run of rows under a line of periods is a Markdown table without
    pdfplumber; a grid of words without pdfplumber stays pdfium's lines."""
    from helpers import table_page

    monkeypatch.setitem(sys.modules, "pdfplumber", None)
    p = tmp_path / "report.pdf"
    p.write_bytes(make_pdf([table_page(["Table 3: Revenue"], REVENUE, []),
                            table_page(["Staff"], [["Name", "Role"], ["Ada", "Engineer"], ["Abel", "Keeper"]], [])]))
    doc = load_document(p)
    assert "| Region | 2022 | 2023 |\n| --- | --- | --- |\n| North | 4,102 | 4,512 |" in doc.text
    assert "|" not in doc.text[doc.pages[1]:] and "Ada Engineer" in doc.text[doc.pages[1]:]


def test_a_fragment_does_not_end_between_a_tables_header_and_its_first_rows():
    from pagemind.retrieval.fragments import split_words

    words = " ".join(f"w{i}" for i in range(8))
    table = "Table 3: Revenue\n| Region | 2023 |\n| --- | --- |\n| North | 4,512 |\n| South | 4,017 |\n| East | 1 |"
    fragments = split_words(f"{words}\n{table}\nafter", 12)
    assert fragments[0].text == words  # ended before the caption rather than inside the header
    assert fragments[1].text.startswith("Table 3: Revenue\n| Region | 2023 |\n| --- | --- |\n| North | 4,512 |")
    assert " ".join(f.text for f in fragments).split() == f"{words}\n{table}\nafter".split()  # nothing lost
    assert [f.text for f in split_words(words, 3)] == ["w0 w1 w2", "w3 w4 w5", "w6 w7"]  # no table: fixed windows
