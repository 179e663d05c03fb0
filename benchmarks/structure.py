"""(w) Structure recovery: on PDFs that have an outline (bookmarks), read the text *without* the outline and score the
sections pagemind finds against the outline — recall (outline entries found), precision (sections found that are
outline entries) and page exactness (found on the outline's page) — for each source it falls back to: a printed
table of contents, headings by type (size and weight of the lines), the text's own rules, and what the loader picks.

    python benchmarks/structure.py FILE.pdf [FILE.pdf ...]

Titles match by their words (case, punctuation and a leading section number aside). PDFs are named on the command
line (the MMLongBench-Doc and PageIndex PDFs where staged; any PDF with bookmarks).
"""

from __future__ import annotations

import argparse
import io
import re
import time
from pathlib import Path

from common import write_result


def words(title: str) -> str:
    """A title's words, its leading number aside (outlines often drop "2.1" that the page prints)."""
    return " ".join(re.findall(r"\w+", re.sub(r"^\s*\d{1,3}(?:\.\d{1,3})*\.?\s+", "", title.lower())))


def score(found: list[tuple[str, int | None]], truth: list[tuple[str, int | None]]) -> dict[str, float | int]:
    wanted = {words(t): p for t, p in truth}
    got = {words(t): p for t, p in found}
    hit = [w for w in got if w in wanted]
    return {"found": len(got), "outline": len(wanted), "recall": round(len(hit) / len(wanted), 3) if wanted else 0,
            "precision": round(len(hit) / len(got), 3) if got else 0.0,
            "page_exact": round(sum(got[w] == wanted[w] for w in hit) / len(hit), 3) if hit else 0.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pdfs", nargs="+", type=Path)
    args = parser.parse_args()
    from pagemind.text.document import Document, structure
    from pagemind.text.formats.pdf import pdf_pages
    from pagemind.text.sections import layout_headings, locate, text_headings, toc_headings

    results = []
    for path in args.pdfs:
        outline: list = []
        styled: list = []
        started = time.perf_counter()
        parts = list(pdf_pages(io.BytesIO(path.read_bytes()), path.name, outline, "off", None, styled))
        seconds = time.perf_counter() - started
        doc = Document.from_parts(parts, name=path.name, format="pdf", paged=True)
        truth = [(h.title, h.page) for h in outline]
        listed, after = toc_headings(doc.text, doc.pages)
        sources = {
            "toc": locate(doc.text, listed, doc.pages, "toc", begin=after) if listed else (),
            "layout": locate(doc.text, layout_headings(styled), doc.pages, "layout", strict_pages=True),
            "text": locate(doc.text, text_headings(doc.text, blank_before=False), doc.pages, "text"),
            "picked (no outline)": structure(doc, [], False, styled),
        }
        row = {"pdf": path.name, "pages": len(doc.pages), "read_seconds": round(seconds, 2),
               "picked_source": sorted({s.source for s in sources["picked (no outline)"]})}
        for name, found in sources.items():
            row[name] = score([(s.title, s.page) for s in found], truth)
            print(f"{path.name:34} {name:20} {row[name]}")
        results.append(row)
    write_result("structure", {"pdfs": results})


if __name__ == "__main__":
    main()
