"""(r) OCR of scanned pages: character error rate and seconds per page of Tesseract (what pagemind reads image-only
PDF pages with), on pages rendered here from known text — the bundled short story's paragraphs — in several fonts
and sizes at 200 dpi, each saved as an image-only PDF page and read through pagemind's own loader (pypdf's image
extraction, then Tesseract), with an empty OCR cache.

    python benchmarks/ocr.py [--pages 2]

Fonts: Debian's DejaVu and Liberation (sans, serif, mono); sizes 10, 12 and 14 pt. CER = edit distance between the
words read and the words drawn (whitespace normalised) / characters drawn.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import tempfile
import textwrap
import time
from pathlib import Path

from common import write_result

FONTS = {"DejaVu Sans": "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
         "DejaVu Serif": "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf",
         "Liberation Serif": "/usr/share/fonts/truetype/liberation/LiberationSerif-Regular.ttf",
         "Liberation Mono": "/usr/share/fonts/truetype/liberation/LiberationMono-Regular.ttf"}
DPI = 200


def edit_distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def render(text: str, font_path: str, points: int) -> bytes:
    """An A4 page at 200 dpi with ``text`` wrapped to fit, as a one-page image-only PDF."""
    from PIL import Image, ImageDraw, ImageFont

    width, height = int(8.27 * DPI), int(11.69 * DPI)
    px = int(points * DPI / 72)
    font = ImageFont.truetype(font_path, px)
    per_line = int((width - 2 * DPI) / (font.getlength("abcdefghijklmnopqrstuvwxyz") / 26))
    picture = Image.new("L", (width, height), 255)
    draw = ImageDraw.Draw(picture)
    y = DPI
    for line in textwrap.wrap(text, per_line):
        if y > height - DPI:
            break
        draw.text((DPI, y), line, fill=0, font=font)
        y += int(px * 1.5)
    out = io.BytesIO()
    picture.save(out, "PDF", resolution=DPI)
    return out.getvalue()


def drawn(text: str, font_path: str, points: int) -> str:
    """The words of ``text`` that fit the page :func:`render` draws."""
    from PIL import ImageFont

    width, height = int(8.27 * DPI), int(11.69 * DPI)
    px = int(points * DPI / 72)
    font = ImageFont.truetype(font_path, px)
    per_line = int((width - 2 * DPI) / (font.getlength("abcdefghijklmnopqrstuvwxyz") / 26))
    lines = textwrap.wrap(text, per_line)
    fit = max(0, (height - 2 * DPI) // int(px * 1.5) + 1)
    return " ".join(lines[:fit])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pages", type=int, default=2, help="pages per font and size")
    args = parser.parse_args()
    from pagemind.cli.main import sample_path
    from pagemind.text.document import load_bytes
    from pagemind.text.ocr import tesseract

    story = " ".join(sample_path("long").read_text(encoding="utf-8").split())
    chunks = [story[i * 1800:(i + 1) * 1800] for i in range(args.pages)]
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        os.environ["XDG_CACHE_HOME"] = cache
        for font, path in FONTS.items():
            if not Path(path).exists():
                continue
            for points in (10, 12, 14):
                errors, chars, seconds = 0, 0, []
                for chunk in chunks:
                    truth = drawn(chunk, path, points)
                    pdf = render(chunk, path, points)
                    start = time.perf_counter()
                    read = load_bytes(pdf, "scan.pdf").text
                    seconds.append(time.perf_counter() - start)
                    errors += edit_distance(" ".join(read.split()), truth)
                    chars += len(truth)
                rows.append({"font": font, "points": points, "cer": errors / max(1, chars),
                             "seconds_per_page": statistics.mean(seconds), "pages": len(chunks)})
                print(rows[-1], flush=True)
    result = {"engine": "tesseract", "executable": tesseract(), "dpi": DPI, "rows": rows,
              "cer_mean": statistics.mean(r["cer"] for r in rows),
              "seconds_per_page_mean": statistics.mean(r["seconds_per_page"] for r in rows)}
    write_result("ocr", result)
    print({k: v for k, v in result.items() if k != "rows"})


if __name__ == "__main__":
    main()
