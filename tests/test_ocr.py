"""Scanned pages read by OCR: PDFs made here with an image-only page (text rendered into a picture with a TrueType
font, then saved by Pillow as a PDF page) and read by the real pypdf and Tesseract; a mixed PDF keeps its text
layer elsewhere; OCR'd pages are marked and cited as such; off and force; a page that is a photo of nothing."""

import io
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers import make_pdf
from pagemind import Pagemind, ScriptedLLM
from pagemind.cli.main import cli
from pagemind.errors import InputError
from pagemind.text.document import load_bytes

pypdf = pytest.importorskip("pypdf")
Image = pytest.importorskip("PIL.Image")
assert shutil.which("tesseract"), "tesseract is not installed: run scripts/install.sh (Debian's tesseract-ocr)"

FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
LINES = ["The map was found under the third stair.", "Wren keeps the lamps of the tower."]


def scanned_page(lines=LINES, size=40) -> bytes:
    """One image-only PDF page: ``lines`` drawn black on white at ``size`` px (about 14 pt at 200 dpi)."""
    from PIL import ImageDraw, ImageFont

    picture = Image.new("L", (1700, 400 + 70 * len(lines)), 255)
    draw = ImageDraw.Draw(picture)
    font = ImageFont.truetype(str(FONT), size) if FONT.exists() else ImageFont.load_default(size)
    for i, line in enumerate(lines):
        draw.text((100, 150 + 70 * i), line, fill=0, font=font)
    out = io.BytesIO()
    picture.save(out, "PDF", resolution=200)
    return out.getvalue()


def mixed_pdf(*parts: bytes) -> bytes:
    writer = pypdf.PdfWriter()
    for part in parts:
        writer.append(pypdf.PdfReader(io.BytesIO(part)))
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def test_an_image_only_page_is_read_by_ocr_and_a_mixed_pdf_keeps_its_text_layer(tmp_path):
    pdf = mixed_pdf(make_pdf([["Page one has a text layer.", "Abel sails the ferry."]]), scanned_page())
    doc = load_bytes(pdf, "mixed.pdf")
    assert doc.ocr_pages == (2,) and len(doc.pages) == 2
    first, second = doc.text[:doc.pages[1]], doc.text[doc.pages[1]:]
    assert "Abel sails the ferry." in first  # the text layer, as it is
    assert "map was found under the third stair" in second and "Wren keeps the lamps" in second
    cached = list((tmp_path / "cache" / "pagemind" / "ocr").glob("*.txt"))
    assert len(cached) == 1  # read once: a second read (an interrupted scan resumed) takes it from here
    cached[0].write_text("from the cache", encoding="utf-8")
    assert "from the cache" in load_bytes(pdf, "mixed.pdf").text

    fake = ScriptedLLM(by_role={"answer": 'Under the stair. [quote: "Wren keeps the lamps"]'})
    (tmp_path / "cache" / "pagemind" / "ocr" / cached[0].name).unlink()
    path = tmp_path / "mixed.pdf"
    path.write_bytes(pdf)
    with Pagemind(fake, store=tmp_path / "s.db") as pm:
        cited = pm.ask(path, "Who keeps the lamps?", method="full").citations[0]
    assert cited.ocr and cited.source_page == 2 and cited.location == "text (p. 2, read by OCR)"


def test_off_force_and_a_page_of_nothing(tmp_path):
    scan = scanned_page()
    with pytest.raises(InputError, match=r"has no text layer.*--ocr auto"):
        load_bytes(scan, "scan.pdf", ocr="off")
    blank = io.BytesIO()
    Image.new("L", (800, 1000), 255).save(blank, "PDF")
    with pytest.raises(InputError, match="OCR found no text on its pages"):
        load_bytes(blank.getvalue(), "photo-of-nothing.pdf")
    forced = load_bytes(mixed_pdf(make_pdf([["A text layer line."]]), scan), "both.pdf", ocr="force")
    assert forced.ocr_pages == (2,)  # page 1 has no image to read: its text layer stays
    assert "A text layer line." in forced.text and "third stair" in forced.text

    path = tmp_path / "scan.pdf"
    path.write_bytes(scan)
    refused = CliRunner().invoke(cli, ["show", str(path), "--sections", "--ocr", "off", "--store",
                                       str(tmp_path / "s.db")])
    assert refused.exit_code != 0 and "--ocr auto" in refused.output


def test_ocr_reads_at_most_its_page_budget_and_names_the_pages_left(tmp_path, caplog):
    """Issue 49: a PDF of many image-only pages is read by OCR only up to --ocr-pages (a page takes seconds); the
    pages past the budget are left unread and named; with no text at all the budget's error says how to lift it."""
    pdf = mixed_pdf(make_pdf([["A text layer line on the first page."]]), *[scanned_page()] * 3)
    with caplog.at_level("WARNING", logger="pagemind"):
        doc = load_bytes(pdf, "scans.pdf", ocr_pages=1)
    assert doc.ocr_pages == (2,) and len(doc.pages) == 4 and doc.text.count("third stair") == 1
    assert "scans.pdf: 2 page(s) left unread (pages 3-4): OCR reads at most 1 page(s)" in caplog.text
    with pytest.raises(InputError, match=r"1 page\(s\) left unread \(pages 1\).*--ocr-pages"):
        load_bytes(scanned_page(), "scan.pdf", ocr_pages=0)
    path = tmp_path / "scans.pdf"
    path.write_bytes(pdf)
    shown = CliRunner().invoke(cli, ["show", str(path), "--text", "--ocr-pages", "2",
                                     "--store", str(tmp_path / "s.db")])
    assert shown.exit_code == 0 and shown.output.count("third stair") == 2


def test_reading_an_upload_stops_when_its_client_has_left(tmp_path, caplog):
    """Issue 49: an upload's reading follows its client. `wanted` is looked at after every page (an OCR'd page
    takes seconds): when it says no, reading stops there. Over HTTP (pagemind serve's app under uvicorn on
    loopback), a client that gives up on a PDF of scanned pages leaves the server to read no further than the
    page it was on, store nothing and log what it did not do."""
    import time

    import httpx

    from pagemind import users as users_api
    from pagemind.errors import Abandoned
    from pagemind.server.app import create_app
    from test_mcp import Served

    pages = 8  # each its own picture: a page OCR'd before is read from the cache, not again
    pdf = mixed_pdf(*[scanned_page([f"Page {n} of the ledger.", f"The lamp count was {n * 7}."]) for n in range(pages)])
    pm = Pagemind(ScriptedLLM(), store=tmp_path / "s.db")
    asked = []
    with pytest.raises(Abandoned, match=r"stopped after 2 of 8 pages"):
        pm.read(mixed_pdf(*[scanned_page([f"Other page {n}."]) for n in range(pages)]), "scans.pdf",
                wanted=lambda: asked.append(1) or len(asked) < 2)
    _, key = users_api.create_user(pm.store, "ann")
    app = create_app(pm, auth="keys", workers=2, mcp=False)
    with Served(app) as served, caplog.at_level("WARNING", logger="pagemind"):
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{served.url}/v1/documents", headers={"Authorization": f"Bearer {key}"},
                       files={"file": ("scans.pdf", pdf, "application/pdf")}, timeout=1.0)
        deadline = time.monotonic() + 120
        while "nobody waits for it" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.1)
    stopped = next(r.getMessage() for r in caplog.records if "nobody waits for it" in r.getMessage())
    done = int(stopped.split("stopped after ")[1].split(" of ")[0])
    assert "POST /v1/documents: reading scans.pdf" in stopped and done < pages, stopped
    assert pm.store.user_documents(pm.store.get_user("ann").id) == []  # nothing kept
    pm.close()


def test_an_upload_read_in_the_background_is_a_run_with_its_pages_and_a_cancel_keeps_nothing(tmp_path, monkeypatch):
    """Issue 49: `POST /v1/documents?wait=false` answers 202 with a `read` run at once; the run records the pages
    as they are read and names the kept document in its result; a cancel stops the OCR at the next page and keeps
    nothing — neither the document nor the spooled upload."""
    import tempfile
    import time

    from fastapi.testclient import TestClient

    from pagemind import users as users_api
    from pagemind.server.app import create_app

    spool = tmp_path / "spool"
    spool.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spool))
    pm = Pagemind(ScriptedLLM(), store=tmp_path / "s.db")
    _, key = users_api.create_user(pm.store, "ann")
    ann = {"Authorization": f"Bearer {key}"}

    def settled(c, run_id):
        deadline = time.monotonic() + 120
        while (run := c.get(f"/v1/runs/{run_id}", headers=ann).json())["status"] in ("queued", "running"):
            assert time.monotonic() < deadline, run
            time.sleep(0.1)
        return run

    with TestClient(create_app(pm, auth="keys", workers=2, mcp=False)) as c:
        queued = c.post("/v1/documents?wait=false", headers=ann, json={"name": "notes.txt", "text": "The lamp."})
        assert queued.status_code == 202 and queued.json()["kind"] == "read", queued.text
        run = settled(c, queued.json()["id"])
        assert run["status"] == "done" and run["target"] == "notes.txt"
        assert c.get(f"/v1/documents/{run['result']['document']}", headers=ann).json()["name"] == "notes.txt"

        pages = 8
        pdf = mixed_pdf(*[scanned_page([f"Page {n} of the ledger.", f"The lamp count was {n * 7}."])
                          for n in range(pages)])
        queued = c.post("/v1/documents?wait=false", headers=ann, files={"file": ("scans.pdf", pdf, "application/pdf")})
        assert queued.status_code == 202, queued.text
        run_id = queued.json()["id"]
        deadline = time.monotonic() + 120
        while not [s for s in c.get(f"/v1/runs/{run_id}/steps", headers=ann).json() if s["kind"] == "phase"]:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert c.post(f"/v1/runs/{run_id}/cancel", headers=ann).status_code == 200
        run = settled(c, run_id)
        phases = [s["data"] for s in c.get(f"/v1/runs/{run_id}/steps", headers=ann).json() if s["kind"] == "phase"]
        assert run["status"] == "cancelled" and phases[-1]["done"] < pages == phases[-1]["total"], (run, phases)
        assert [d["name"] for d in c.get("/v1/documents", headers=ann).json()] == ["notes.txt"]  # nothing kept

        # one user's background reads are bounded (each holds its spooled file); an erase stops the one running
        monkeypatch.setattr("pagemind.server.service.documents.QUEUED_READS", 1)
        other = mixed_pdf(*[scanned_page([f"Ledger {n} of the tower.", f"Gulls counted: {n * 9}."])
                            for n in range(pages)])
        running = c.post("/v1/documents?wait=false", headers=ann,
                         files={"file": ("more.pdf", other, "application/pdf")})
        refused = c.post("/v1/documents?wait=false", headers=ann, json={"name": "late.txt", "text": "The lamp."})
        assert running.status_code == 202 and refused.status_code == 429, refused.text
        assert "at most 1" in refused.json()["detail"]
        while not [s for s in c.get(f"/v1/runs/{running.json()['id']}/steps", headers=ann).json()
                   if s["kind"] == "phase"]:
            time.sleep(0.1)
        assert c.delete("/v1/me/data", headers=ann).status_code == 200  # while it reads its pages
        deadline = time.monotonic() + 120
        while list(spool.iterdir()) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
        assert c.get("/v1/documents", headers=ann).json() == []  # the erased run kept nothing
    assert list(spool.iterdir()) == []  # the spooled uploads went with their runs
    pm.close()
