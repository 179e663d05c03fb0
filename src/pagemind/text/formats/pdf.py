"""PDF text layers, one string per page: pdfium (pypdfium2) first, pypdf where pdfium cannot open a file; ruled
tables as Markdown tables (pdfplumber, where installed), a statement's unruled rows as one too."""

from __future__ import annotations

import logging
import math
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, BinaryIO

from ...errors import InputError
from ...limits import MAX_OCR_PAGES
from ..sections import MAX_LEVEL, MAX_SECTIONS, Heading, StyledLine
from .common import markdown_table, missing_library

SCANNED_HINT = "has no text layer (a scanned PDF?): run OCR first, e.g. ocrmypdf"


def pdf_pages(source: BinaryIO, name: str, outline: list[Heading] | None = None, ocr: str = "auto",
              read_by_ocr: list[int] | None = None, styled: list[StyledLine] | None = None,
              progress: Callable[[str, int, int, str], None] | None = None, ocr_pages: int = MAX_OCR_PAGES
              ) -> Iterator[str]:
    """The text of each page of a PDF, in order (empty strings for pages without text), each extracted when it
    is asked for: a caller that stops early (the text is over its limit) leaves the rest unread. Once every page
    is read, the PDF's outline (bookmarks) goes into ``outline``: its titles, levels and pages. ``progress`` hears
    each page read (``progress("reading NAME", pages read, pages, "page")``: an OCR'd page takes seconds).

    Pages are read by pdfium (pypdfium2, Chrome's PDF engine: lines in reading order, a statement's row on one line,
    ~20 times pypdf's speed); a file pdfium cannot open is read by pypdf.

    ``ocr``: ``auto`` reads a page without a text layer from its rendered image with Tesseract (where installed),
    ``force`` every page, ``off`` none; the numbers of the pages read so go into ``read_by_ocr``; at most
    ``ocr_pages`` pages are (a page takes seconds): the pages past them are left unread, named in a warning.
    ``styled``: each line of the text layer with its size and weight, as drawn (a PDF without outline finds its
    headings by them).

    A page holding a ruled table (found by pdfplumber where it is installed) is written with the table as a Markdown
    table in its place, its caption ("Table 3: ...") above it, so "2023 | 4,512" stays in its column; the rows of an
    unruled statement ("Net earnings $ 2,181.2 $ 1,752.7") become a Markdown table under their column headers
    (:mod:`pagemind.text.tables`)."""
    _check_trailer(source, name)
    try:
        import pypdfium2
    except ImportError:
        pypdfium2 = None
    if pypdfium2 is not None:
        try:
            document = pypdfium2.PdfDocument(source)
        except pypdfium2.PdfiumError as err:
            if getattr(err, "err_code", None) == 4:  # FPDF_ERR_PASSWORD
                raise InputError(f"{name}: the PDF is encrypted (password-protected); save an unprotected "
                                 f"copy, e.g. qpdf --decrypt --password=... in.pdf out.pdf") from None
            source.seek(0)  # pdfium could not open it: pypdf, which forgives more
        else:
            yield from _pdfium_pages(document, source, name, outline, ocr, read_by_ocr, styled, progress,
                                     _Budget(name, ocr_pages))
            return
    yield from _pypdf_pages(source, name, outline, ocr, read_by_ocr, styled, _Budget(name, ocr_pages))


def _pdfium_pages(document: object, source: BinaryIO, name: str, outline: list[Heading] | None, ocr: str,
                  read_by_ocr: list[int] | None, styled: list[StyledLine] | None,
                  progress: Callable[[str, int, int, str], None] | None = None,
                  budget: _Budget | None = None) -> Iterator[str]:
    from ..ocr import read_images, tesseract
    from ..tables import numeric_rows, tables_as_rows, unjammed

    pdf: Any = document
    with_text = False
    reader = tesseract() if ocr != "off" else None
    try:
        pages = len(pdf)
        if not pages:
            raise InputError(f"{name}: the PDF has no pages")
        plumber = _Tables(source)
        for number in range(pages):
            try:
                page = pdf[number]
            except Exception as err:  # a page pdfium cannot load: its text is empty, the others stand
                logging.getLogger("pagemind").warning("%s: page %d cannot be read (%s)", name, number + 1,
                                                      _one_line(err))
                yield ""
                continue
            try:
                textpage = page.get_textpage()
                drawn = textpage.get_text_range()
                shapes = _shapes(page) if drawn.strip() else []  # one walk over the page's objects, read twice
                if styled is not None:
                    styled.extend(_pdfium_lines(textpage, drawn, number + 1, _figures(page, shapes)))
                textpage.close()
                text = _pdfium_text(drawn)
                unread = not text.strip() or garbled(text)  # no text layer, or one whose font maps no letters
                wanted = bool(reader) and (unread or (ocr == "force" and _has_image(page)))
                image = _render(page) if wanted and (budget is None or budget.take(number + 1)) else None
                ruled = bool(text.strip()) and image is None and _pdfium_ruled(shapes)
            finally:
                page.close()
            seen = read_images([image]) if image else ""
            if seen.strip():
                text = seen
                if read_by_ocr is not None:
                    read_by_ocr.append(number + 1)
            else:
                text = unjammed(text)  # a line of several statement rows: one a line
                rows = tables_as_rows(text)
                if ruled and rows == text and not numeric_rows(text):  # a grid of words: pdfplumber's cells
                    rows = plumber.page(number) or text
                text = rows
            with_text = with_text or bool(text.strip())
            if progress is not None:
                progress(f"reading {name.rsplit('/', 1)[-1]}", number + 1, pages, "page")
            yield text
        plumber.close()
        if outline is not None:
            outline.extend(_pdfium_outline(pdf))
    finally:
        pdf.close()
    if budget is not None:
        budget.report(with_text)
    _no_text(with_text, ocr, reader, name)


def _pypdf_pages(source: BinaryIO, name: str, outline: list[Heading] | None, ocr: str,
                 read_by_ocr: list[int] | None, styled: list[StyledLine] | None,
                 budget: _Budget | None = None) -> Iterator[str]:
    """pypdf's reading, for a file pdfium cannot open (or where pypdfium2 is not installed)."""
    from ..ocr import page_images, read_images, tesseract
    try:
        import pypdf
        from pypdf.errors import DependencyError, PyPdfError
    except ImportError:
        raise missing_library("pypdfium2", "PDF", name) from None
    with_text = False
    engine = None
    try:
        with _quiet("pypdf"):
            reader = pypdf.PdfReader(source)
            if reader.is_encrypted and not _opens_without_password(reader):
                raise InputError(f"{name}: the PDF is encrypted (password-protected); "
                                 f"save an unprotected copy, e.g. qpdf --decrypt --password=... in.pdf out.pdf")
            pages = len(reader.pages)
        if not pages:
            raise InputError(f"{name}: the PDF has no pages")
        engine = tesseract() if ocr != "off" else None
        plumber = _Tables(source)
        for number in range(pages):
            with _quiet("pypdf"):  # not around the yield: the caller's own warnings and logs stay as they are
                runs = _Runs(number + 1) if styled is not None else None
                text = reader.pages[number].extract_text(visitor_text=runs) or ""
                if runs is not None and styled is not None:
                    styled.extend(runs.lines())
                images = page_images(reader.pages[number]) if engine and (ocr == "force" or not text.strip()) \
                    and (budget is None or budget.take(number + 1)) else []
            seen = read_images(images) if images else ""
            if seen.strip():
                text = seen
                if read_by_ocr is not None:
                    read_by_ocr.append(number + 1)
            elif text.strip() and _ruled(reader.pages[number]):
                text = plumber.page(number) or text
            with_text = with_text or bool(text.strip())
            yield text
        plumber.close()
        if outline is not None:
            outline.extend(_outline(reader))
    except DependencyError as err:
        raise InputError(f"{name}: the PDF needs a decryption library pypdf does not have ({err}); "
                         f"pip install 'pypdf[crypto]'") from None
    except PyPdfError as err:
        raise InputError(f"{name}: not a readable PDF ({_one_line(err)})") from None
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as err:
        raise InputError(f"{name}: not a readable PDF ({type(err).__name__}: {_one_line(err)})") from None
    if budget is not None:
        budget.report(with_text)
    _no_text(with_text, ocr, engine, name)


class _Budget:
    """The pages one PDF may have read by OCR: each asked for takes one while any are left; the pages refused are
    named once the PDF is read (a warning; an error when no page had text)."""

    def __init__(self, name: str, pages: int) -> None:
        self.name, self.pages, self.left = name, pages, pages
        self.refused: list[int] = []

    def take(self, page: int) -> bool:
        if self.left > 0:
            self.left -= 1
            return True
        self.refused.append(page)
        return False

    def report(self, with_text: bool) -> None:
        if not self.refused:
            return
        what = (f"{self.name}: {len(self.refused)} page(s) left unread ({_pages(self.refused)}): OCR reads at most "
                f"{self.pages} page(s) of a PDF (--ocr-pages, PAGEMIND_OCR_PAGES)")
        if not with_text:
            raise InputError(what)
        logging.getLogger("pagemind").warning("%s", what)


def _pages(numbers: list[int]) -> str:
    """Page numbers as ranges: "pages 3-5, 9"."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return "pages " + ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def _no_text(with_text: bool, ocr: str, engine: str | None, name: str) -> None:
    if with_text:
        return
    if ocr == "off":
        raise InputError(f"{name}: {SCANNED_HINT} (or read it with --ocr auto)")
    if engine is None:
        raise InputError(f"{name}: {SCANNED_HINT}; pagemind reads such pages with Tesseract, which is not "
                         "installed (scripts/install.sh installs Debian's tesseract-ocr)")
    raise InputError(f"{name}: has no text layer and OCR found no text on its pages (a photo, a blank scan?)")


GARBLED_SINGLES = 0.45  # a page whose words are this often one character long reads spaced-out glyphs
GARBLED_SYMBOLS = 0.3  # ... or whose characters are this often neither letters, digits, punctuation nor spaces


def garbled(text: str) -> bool:
    """Whether a page's text layer reads as glyphs without their letters ("/2/./1 Intro duction", "I n t r o"): at
    least 40 words, and nearly half of them single letters, or a third of its characters private-use or control
    ones. Such a page is read by OCR where Tesseract is installed (and marked so)."""
    words = text.split()
    if len(words) < 40:
        return False
    singles = sum(len(w) == 1 and w.isalpha() for w in words) / len(words)  # "$", "—", "5" in a statement are not
    odd = sum(1 for c in text if not (c.isalnum() or c.isspace() or c in ".,;:!?'\"()[]{}-–—$%&/*+=<>@#|’“”‘•")
              ) / max(1, len(text))
    return singles >= GARBLED_SINGLES or odd >= GARBLED_SYMBOLS


def _pdfium_text(drawn: str) -> str:
    """pdfium's page text as lines: its CR LF line ends as newlines, a hyphen it marks at a line's end (U+FFFE,
    where it joins the two halves) kept as a hyphen, its form feeds and NULs gone."""
    return drawn.replace("\r\n", "\n").replace("\r", "\n").replace("\ufffe", "-").replace("\x02", "-") \
        .replace("\x00", "")


_BOLD_FLAG = 1 << 18  # a font descriptor's ForceBold flag
_BOLD_NAMES = ("bold", "black", "heavy", "semibold", "demi")


def _pdfium_lines(textpage: object, drawn: str, page: int, figures: Sequence[Box] = ()) -> list[StyledLine]:
    """Each line of pdfium's page text with its type, read from the characters at its start and middle: the size
    through the character's matrix, bold by the font's weight, its ForceBold flag or its name; a line whose first
    character is drawn in one of ``figures`` (:func:`_figures`) is marked so."""
    import ctypes

    import pypdfium2.raw as pdfium_c

    out: list[StyledLine] = []
    name = ctypes.create_string_buffer(128)
    flags = ctypes.c_int()
    matrix = pdfium_c.FS_MATRIX()
    has_matrix = hasattr(pdfium_c, "FPDFText_GetMatrix")

    def typed(index: int) -> tuple[float, bool]:
        size = float(pdfium_c.FPDFText_GetFontSize(textpage, index))
        if has_matrix and pdfium_c.FPDFText_GetMatrix(textpage, index, matrix):
            size *= math.hypot(matrix.c, matrix.d) or 1.0
        weight = int(pdfium_c.FPDFText_GetFontWeight(textpage, index))
        pdfium_c.FPDFText_GetFontInfo(textpage, index, name, len(name), flags)
        face = name.value.decode("latin-1", "replace").lower()
        return size, 600 <= weight <= 1000 or bool(flags.value & _BOLD_FLAG) or any(b in face for b in _BOLD_NAMES)

    at = 0
    for line in drawn.split("\r\n"):
        text = line.strip()
        if text:
            first = at + len(line) - len(line.lstrip())
            middle = first + len(text) // 2
            size, bold = typed(first)
            other, bold_too = typed(middle) if middle != first else (size, bold)
            out.append(StyledLine(page, text.replace("\ufffe", "-"), max(size, other), bold and bold_too,
                                  bool(figures) and _in_figure(textpage, first, figures)))
        at += len(line) + 2
    return out


Box = tuple[float, float, float, float]  # left, bottom, right, top, in points
FIGURE_SIDE = 48  # points: drawn shapes spanning at least this much both ways are a figure (a chart, a shaded table)
FIGURE_GAP = 12  # points: shapes this close are one figure, and a label this far outside it is still its label
FIGURE_PAGE = 0.7  # a figure covering this share of the page is a background, not a figure


def _shapes(page: object) -> list[tuple[bool, Box]]:
    """The page's drawn shapes with their bounds: (is a path, its box) for every path and image object."""
    import ctypes

    import pypdfium2.raw as pdfium_c

    left, bottom, right, top = (ctypes.c_float() for _ in range(4))
    out: list[tuple[bool, Box]] = []
    for index in range(pdfium_c.FPDFPage_CountObjects(page)):
        obj = pdfium_c.FPDFPage_GetObject(page, index)
        kind = pdfium_c.FPDFPageObj_GetType(obj)
        if kind in (pdfium_c.FPDF_PAGEOBJ_PATH, pdfium_c.FPDF_PAGEOBJ_IMAGE) and \
                pdfium_c.FPDFPageObj_GetBounds(obj, left, bottom, right, top):
            out.append((kind == pdfium_c.FPDF_PAGEOBJ_PATH, (left.value, bottom.value, right.value, top.value)))
    return out


def _figures(page: object, drawn_shapes: Sequence[tuple[bool, Box]]) -> list[Box]:
    """Where the page draws a figure: its images and shapes (:func:`_shapes`; paths, rules among them) merged where
    they lie within :data:`FIGURE_GAP` of each other, kept when the merged box is at least :data:`FIGURE_SIDE`
    points both ways and not the page's background or frame. A chart's bars, axes and plotted lines are one such
    box; a table shaded or ruled by rows another; a heading's underline or banner is not (too low)."""
    if not drawn_shapes:
        return []
    drawn: Any = page
    width, height = drawn.get_size()
    shapes = [box for _, box in drawn_shapes]
    merged: list[Box] = []
    while len(shapes) != len(merged):  # until no two boxes lie near each other
        merged, shapes = [], merged or shapes
        for shape in sorted(shapes):
            for i, box in enumerate(merged):
                if _near(box, shape, FIGURE_GAP):
                    merged[i] = (min(box[0], shape[0]), min(box[1], shape[1]), max(box[2], shape[2]),
                                 max(box[3], shape[3]))
                    break
            else:
                merged.append(shape)
    return [box for box in merged if box[2] - box[0] >= FIGURE_SIDE and box[3] - box[1] >= FIGURE_SIDE
            and (box[2] - box[0]) * (box[3] - box[1]) < FIGURE_PAGE * width * height]


def _near(a: Box, b: Box, gap: float) -> bool:
    return a[0] - gap <= b[2] and b[0] - gap <= a[2] and a[1] - gap <= b[3] and b[1] - gap <= a[3]


def _in_figure(textpage: object, index: int, figures: Sequence[Box]) -> bool:
    import ctypes

    import pypdfium2.raw as pdfium_c

    left, right, bottom, top = (ctypes.c_double() for _ in range(4))
    if not pdfium_c.FPDFText_GetCharBox(textpage, index, left, right, bottom, top):
        return False
    char = (left.value, bottom.value, right.value, top.value)
    return any(_near(box, char, FIGURE_GAP) for box in figures)


def _pdfium_ruled(drawn_shapes: Sequence[tuple[bool, Box]]) -> bool:
    """Whether the page (its :func:`_shapes`) draws a grid: :data:`GRID_RULES` vertical rules or more (paths thinner
    than 2 points and taller than a line of text) at distinct places, beside as many horizontal ones. A statement's
    underlines are not a grid, and pdfplumber's layout of a page costs ~100 times pdfium's text: only a grid's page
    is laid out."""
    columns: set[int] = set()
    rows: set[int] = set()
    for path, (left, bottom, right, top) in drawn_shapes:
        if not path:
            continue
        width, height = right - left, top - bottom
        if width < 2 < GRID_CELL <= height:
            columns.add(round(left))
        elif height < 2 < GRID_CELL <= width:
            rows.add(round(bottom))
        if len(columns) >= GRID_RULES and len(rows) >= GRID_RULES:
            return True
    return False


GRID_RULES = 3  # vertical and horizontal rules (at distinct places) a grid draws at least: two columns need three
GRID_CELL = 8  # points: a rule is at least this long


def _has_image(page: object) -> bool:
    """Whether the page draws an image (``--ocr force`` reads those pages again; a page of text alone keeps it)."""
    import pypdfium2.raw as pdfium_c

    return any(pdfium_c.FPDFPageObj_GetType(pdfium_c.FPDFPage_GetObject(page, index)) == pdfium_c.FPDF_PAGEOBJ_IMAGE
               for index in range(pdfium_c.FPDFPage_CountObjects(page)))


OCR_DPI = 300


def _render(page: object) -> bytes:
    """The page drawn in grey at 300 dpi (less where that would pass the OCR's pixel limit), as PNG bytes."""
    import io

    from ..ocr import MAX_PIXELS

    drawn: Any = page
    width, height = drawn.get_size()
    scale = OCR_DPI / 72
    if width * height * scale * scale > MAX_PIXELS:
        scale = (MAX_PIXELS / max(1.0, width * height)) ** 0.5
    picture = drawn.render(scale=scale, grayscale=True).to_pil()
    buffer = io.BytesIO()
    picture.convert("L").save(buffer, "PNG")
    return buffer.getvalue()


def _pdfium_outline(pdf: Any) -> list[Heading]:
    """The outline's entries in order, levels from the nesting (at most 6 deep, 10,000 entries), each with its page
    (None where the destination cannot be resolved). A broken outline gives what could be read."""
    out: list[Heading] = []
    try:
        for mark in pdf.get_toc(max_depth=MAX_LEVEL):
            if len(out) >= MAX_SECTIONS:
                break
            title = mark.get_title() or ""
            dest = mark.get_dest()
            page = dest.get_index() if dest is not None else None
            if title.strip():
                out.append(Heading(mark.level + 1, title, page + 1 if isinstance(page, int) and page >= 0 else None))
    except Exception:  # an outline that cannot be read (loops, bad references): what was read
        return out
    return out


class _Runs:
    """pypdf's text runs of one page gathered into lines with their type: each line's largest size (the font size
    through the text and graphics matrices) and whether all its characters are set in a bold face."""

    def __init__(self, page: int):
        self.page = page
        self.done: list[StyledLine] = []
        self.parts: list[tuple[str, float, bool]] = []

    def __call__(self, text: str, cm: list[float], tm: list[float], font: dict | None, size: float) -> None:
        try:
            scale = math.hypot(float(tm[2]), float(tm[3])) * math.hypot(float(cm[2]), float(cm[3])) or 1.0
            face = str((font or {}).get("/BaseFont", "")).lower()
        except (TypeError, ValueError, IndexError, AttributeError):  # a run pypdf reports oddly: no type for it,
            scale, face = 1.0, ""                                      # its text is still the page's
        bold = "bold" in face or "black" in face
        pieces = text.split("\n")
        for i, piece in enumerate(pieces):
            if i:
                self._end()
            if piece.strip():
                self.parts.append((piece, float(size) * scale, bold))

    def _end(self) -> None:
        if self.parts:
            text = "".join(p for p, _, _ in self.parts).strip()
            self.done.append(StyledLine(self.page, text, max(s for _, s, _ in self.parts),
                                        all(b for p, _, b in self.parts if p.strip())))
            self.parts = []

    def lines(self) -> list[StyledLine]:
        self._end()
        return self.done


MIN_ROWS, MIN_COLUMNS = 2, 2  # a ruled box smaller than this is a frame, not a table
_CAPTION = ("table", "tab.", "exhibit", "figure")  # a caption's first word, on the line above a table
_CAPTION_GAP = 30  # points: how far above a table its caption may be


class _Tables:
    """The pages of a PDF as pdfplumber reads them, for their ruled tables (pdfplumber opened once, on a copy of the
    bytes so pypdf's reading position is left alone); nothing where pdfplumber is not installed or cannot read it."""

    def __init__(self, source: BinaryIO):
        self.pdf: object | None = None
        try:
            import io

            import pdfplumber
        except ImportError:
            return
        at = source.tell()
        source.seek(0)
        data = source.read()
        source.seek(at)
        try:
            with _quiet("pdfminer"):
                self.pdf = pdfplumber.open(io.BytesIO(data))
        except Exception:  # pdfminer fails differently from pypdf on broken files: pypdf's text stands
            self.pdf = None

    def close(self) -> None:
        if self.pdf is not None:
            self.pdf.close()  # type: ignore[attr-defined]
            self.pdf = None

    def page(self, number: int) -> str | None:
        """The page's text with each ruled table as a Markdown table in its place (text lines and tables ordered
        from the top), or None when the page has no table (or pdfplumber cannot read it: pypdf's text stands)."""
        if self.pdf is None:
            return None
        try:
            with _quiet("pdfminer"):
                page = self.pdf.pages[number]  # type: ignore[attr-defined]
        except Exception:  # a page tree pdfminer cannot read: pypdf's text stands
            return None
        try:
            with _quiet("pdfminer"):
                found = [(t.bbox, rows) for t in page.find_tables() if _is_table(rows := _rows(t.extract()))]
                if not found:
                    return None
                boxes = [box for box, _ in found]
                lines = page.filter(lambda obj: not any(_inside(obj, box) for box in boxes)).extract_text_lines()
        except Exception:  # a page pdfminer cannot lay out: pypdf's text stands
            return None
        finally:
            page.close()  # its layout cache: a 300-page report is not held in memory page by page
        items = [(float(line["top"]), str(line["text"])) for line in lines]
        for box, rows in found:
            above = [item for item in items if box[1] - _CAPTION_GAP <= item[0] < box[1]]
            caption = above[-1] if above and above[-1][1].lower().startswith(_CAPTION) else None
            if caption is not None:
                items.remove(caption)
            items.append((float(box[1]), markdown_table(rows, caption[1] if caption else "")))
        return "\n".join(text for _, text in sorted(items, key=lambda item: item[0]))


_PATH = re.compile(rb"(?<![A-Za-z])(?:re|l)(?=[\s\[\]/<>(]|$)")  # a rectangle or a line segment of a path
MIN_RULES = 6  # a ruled table of two rows and two columns draws at least six lines (or boxes)


def _ruled(page: object) -> bool:
    """Whether the page draws enough lines or rectangles to hold a ruled table (pdfplumber's layout of a page is
    ~20 times pypdf's text extraction: a page without rules is not laid out)."""
    try:
        contents = page.get_contents()  # type: ignore[attr-defined]
        raw = contents.get_data() if contents is not None else b""
    except Exception:  # a stream pypdf cannot decode: let pdfplumber look
        return True
    return len(_PATH.findall(raw)) >= MIN_RULES


def _rows(extracted: list[list[str | None]]) -> list[list[str]]:
    """A table's cells as text (a cell merged into its neighbour, None to pdfplumber, is empty)."""
    return [[" ".join((cell or "").split()) for cell in row] for row in extracted]


def _is_table(rows: list[list[str]]) -> bool:
    filled = [row for row in rows if sum(bool(c) for c in row) >= 1]
    return len(filled) >= MIN_ROWS and max((len(r) for r in rows), default=0) >= MIN_COLUMNS and \
        sum(bool(c) for row in rows for c in row) > len(filled)


def _inside(obj: dict, box: tuple[float, float, float, float]) -> bool:
    """Whether a character (or line, rect) of a page lies inside a table's box (by its middle)."""
    x = (float(obj.get("x0", 0)) + float(obj.get("x1", 0))) / 2
    y = (float(obj.get("top", 0)) + float(obj.get("bottom", 0))) / 2
    return box[0] <= x <= box[2] and box[1] <= y <= box[3]


def _outline(reader: object) -> list[Heading]:
    """The outline's entries in order, nested lists as levels (at most 6 deep, 10,000 entries), each with its page
    (None where the destination cannot be resolved). A broken outline gives what could be read."""
    out: list[Heading] = []

    def walk(items: object, level: int) -> None:
        if not isinstance(items, list) or level > MAX_LEVEL or len(out) >= MAX_SECTIONS:
            return
        for item in items:
            if isinstance(item, list):
                walk(item, level + 1)
                continue
            try:
                title = str(getattr(item, "title", "") or "")
                page = reader.get_destination_page_number(item)  # type: ignore[attr-defined]
            except Exception:  # a destination that points nowhere: its title without a page
                title, page = str(getattr(item, "title", "") or ""), -1
            if title.strip():
                out.append(Heading(level, title, page + 1 if isinstance(page, int) and page >= 0 else None))

    try:
        with _quiet("pypdf"):
            walk(reader.outline, 1)  # type: ignore[attr-defined]
    except Exception:  # an outline that cannot be read (loops, bad references): no outline
        return out
    return out


TRAILER_WINDOW = 1 << 20  # where a PDF's %%EOF must be: within its last MiB


def _check_trailer(source: BinaryIO, name: str) -> None:
    """Refuse a file with no ``%%EOF`` in its last MiB before pypdf sees it: pypdf looks for the trailer by
    scanning backwards line by line, which takes minutes on a large file that only starts like a PDF (a truncated
    download, or a hostile upload)."""
    start = source.tell()
    source.seek(0, 2)
    size = source.tell()
    source.seek(max(start, size - TRAILER_WINDOW))
    tail = source.read()
    source.seek(start)
    if b"%%EOF" not in tail:
        raise InputError(f"{name}: not a complete PDF (no %%EOF at its end: truncated?)")


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
