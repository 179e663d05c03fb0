"""Pages without a text layer, read by OCR: Tesseract (Debian's ``tesseract-ocr``, installed by
``scripts/install.sh``), run as a process on each image of such a page.

Only those pages: a mixed PDF keeps its text layer elsewhere (``force`` reads every page by OCR). Each page's text
is kept in the user's cache under the hash of its images, so a long scan interrupted half-way resumes where it
stopped, and a scan read again costs nothing. Tesseract was chosen over RapidOCR (ONNX models in a wheel) because
it is a Debian package with no model download and measured well on rendered text (``benchmarks/ocr.py``: character
error rate and seconds per page); RapidOCR was not measured here (see the benchmark's notes).
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

OCR_MODES = ("auto", "off", "force")
TIMEOUT = 120.0  # seconds for one image
MAX_PIXELS = 60_000_000  # an image larger than this is scaled down before OCR (a 300 dpi A4 page is ~8.7M)


def tesseract() -> str | None:
    """Tesseract's executable, if installed (``PAGEMIND_TESSERACT`` names another)."""
    return os.environ.get("PAGEMIND_TESSERACT") or shutil.which("tesseract")


def cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "pagemind" / "ocr"


def page_images(page: Any) -> list[bytes]:
    """The page's images as PNG bytes (pypdf decodes them), largest first; none it cannot decode."""
    out: list[tuple[int, bytes]] = []
    try:
        images = list(page.images)
    except Exception:  # an image pypdf cannot decode: the page has no readable image
        return []
    for image in images:
        try:
            picture = image.image
            if picture is None:
                continue
            if picture.width * picture.height > MAX_PIXELS:
                scale = (MAX_PIXELS / (picture.width * picture.height)) ** 0.5
                picture = picture.resize((max(1, int(picture.width * scale)), max(1, int(picture.height * scale))))
            buffer = io.BytesIO()
            picture.convert("L").save(buffer, "PNG")
            out.append((picture.width * picture.height, buffer.getvalue()))
        except Exception:  # one broken image: the others are still read
            continue
    return [data for _, data in sorted(out, key=lambda x: -x[0])]


def read_images(images: list[bytes], lang: str = "eng") -> str:
    """The text Tesseract reads in ``images`` (joined by blank lines), from the cache when read before."""
    if not images:
        return ""
    digest = hashlib.sha256(b"".join(hashlib.sha256(i).digest() for i in images) + lang.encode()).hexdigest()
    cached = cache_dir() / f"{digest}.txt"
    if cached.exists():
        return cached.read_text(encoding="utf-8")
    program = tesseract()
    if program is None:
        return ""
    texts = []
    for data in images:
        try:
            done = subprocess.run([program, "stdin", "stdout", "-l", lang], input=data, capture_output=True,
                                  timeout=TIMEOUT, check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            texts.append(done.stdout.decode("utf-8", "replace").strip())
    text = "\n\n".join(t for t in texts if t)
    cached.parent.mkdir(parents=True, exist_ok=True)
    temporary = cached.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(cached)  # whole or not at all: an interrupted page is read again
    return text


__all__ = ["OCR_MODES", "page_images", "read_images", "tesseract"]
