"""(v) Tables in PDFs: what reading ruled tables with pdfplumber costs and keeps, on a generated 100-page report (90
pages of text, 10 with a ruled table of 8 rows and 4 columns between paragraphs) read through pagemind's loader:
seconds per page with tables read and with pypdf alone (pdfplumber hidden), and how many table rows come out with
their cells in columns (``| North | 4,102 | ...``) — pypdf alone runs a row's cells into one line of words.

    python benchmarks/pdf_tables.py [--pages 100]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, write_result

sys.path.insert(0, str(ROOT / "tests"))
from helpers import make_pdf, table_page

REGIONS = ["North", "South", "East", "West", "Centre", "Islands", "Coast"]


def report(pages: int) -> tuple[bytes, list[str]]:
    out: list[list[str] | bytes | None] = []
    rows_wanted = []
    for n in range(pages):
        if n % 10 == 5:
            rows = [["Region", "2021", "2022", "2023"]] + [
                [r, f"{1000 + 37 * n + i:,}", f"{2000 + 41 * n + i:,}", f"{3000 + 43 * n + i:,}"]
                for i, r in enumerate(REGIONS)]
            rows_wanted += ["| " + " | ".join(r) + " |" for r in rows[1:]]
            out.append(table_page([f"Section {n}: results of the year.", f"Table {n}: Revenue by region"], rows,
                                  ["The figures are unaudited."], widths=[110, 80, 80, 80]))
        else:
            out.append([f"Page {n} of the report. " + "Sales, costs and the outlook of the group. " * 2
                        for _ in range(30)])
    return make_pdf(out, size=10, leading=14, top=760), rows_wanted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=100)
    args = parser.parse_args()
    from pagemind.text import load_document

    pdf, wanted = report(args.pages)
    result: dict[str, object] = {"pages": args.pages, "table_rows": len(wanted)}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "report.pdf"
        path.write_bytes(pdf)
        for mode in ("tables", "pypdf only"):
            if mode == "pypdf only":
                sys.modules["pdfplumber"] = None  # type: ignore[assignment]
            started = time.perf_counter()
            text = load_document(path).text
            seconds = time.perf_counter() - started
            kept = sum(row in text for row in wanted)
            result[mode] = {"seconds": round(seconds, 2), "seconds_per_page": round(seconds / args.pages, 4),
                            "rows_in_columns": kept}
            print(f"{mode:11} {seconds:6.2f} s ({seconds / args.pages * 1000:.0f} ms/page), "
                  f"{kept}/{len(wanted)} table rows in columns")
    write_result("pdf_tables", result)


if __name__ == "__main__":
    main()
