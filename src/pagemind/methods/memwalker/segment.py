"""Segmentation (paper §3): whole paragraphs packed into segments of at most ``segment_tokens`` tokens."""

from __future__ import annotations

from collections.abc import Callable

from ...text import split_paragraphs, split_sentences

Count = Callable[[str], int]
SEPARATOR = "\n\n"


def segment_text(text: str, segment_tokens: int, count: Count) -> list[str]:
    """Segments in reading order; a paragraph is split (by sentences, then words) only if it alone exceeds."""
    sep = count(SEPARATOR)
    segments: list[str] = []
    current: list[str] = []
    size = 0
    for piece, n in paragraphs(text, segment_tokens, count):
        if current and size + sep + n > segment_tokens:
            segments.append(SEPARATOR.join(current))
            current, size = [], 0
        size += (sep if current else 0) + n
        current.append(piece)
    if current:
        segments.append(SEPARATOR.join(current))
    return segments


def paragraphs(text: str, segment_tokens: int, count: Count) -> list[tuple[str, int]]:
    """The paragraphs :func:`segment_text` packs, with their tokens: one over ``segment_tokens`` split by sentences
    (then words)."""
    # paragraphs over segment_tokens words certainly exceed in tokens: split_paragraphs already cuts them
    pieces: list[tuple[str, int]] = []
    for paragraph in split_paragraphs(text, max_words=segment_tokens):
        n = count(paragraph)
        if n <= segment_tokens:
            pieces.append((paragraph, n))
        else:
            pieces.extend(_split_long(paragraph, segment_tokens, count))
    return pieces


def _split_long(paragraph: str, limit: int, count: Count) -> list[tuple[str, int]]:
    """A paragraph over the limit: sentences packed by tokens; a sentence over the limit cut into word windows."""
    out: list[tuple[str, int]] = []
    current: list[str] = []
    for sentence in split_sentences(paragraph):
        if count(sentence) > limit:
            if current:
                chunk = " ".join(current)
                out.append((chunk, count(chunk)))
                current = []
            out.extend(_word_windows(sentence, limit, count))
            continue
        candidate = " ".join(current + [sentence])
        if current and count(candidate) > limit:
            chunk = " ".join(current)
            out.append((chunk, count(chunk)))
            current = [sentence]
        else:
            current.append(sentence)
    if current:
        chunk = " ".join(current)
        out.append((chunk, count(chunk)))
    return out


def _word_windows(sentence: str, limit: int, count: Count) -> list[tuple[str, int]]:
    """The longest word prefixes that fit, repeatedly (bisection on words)."""
    words = sentence.split()
    out: list[tuple[str, int]] = []
    while words:
        lo, hi = 1, len(words)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if count(" ".join(words[:mid])) <= limit:
                lo = mid
            else:
                hi = mid - 1
        chunk = " ".join(words[:lo])
        out.append((chunk, count(chunk)))
        words = words[lo:]
    return out


def cut_to_tokens(text: str, budget: int, count: Count, keep: str = "head") -> str:
    """The longest word prefix (``head``) or suffix (``tail``) of ``text`` within ``budget`` tokens."""
    if count(text) <= budget:
        return text
    words = text.split()
    lo, hi = 0, len(words)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        part = words[:mid] if keep == "head" else words[len(words) - mid:]
        if count(" ".join(part)) <= budget:
            lo = mid
        else:
            hi = mid - 1
    if lo == 0:
        return ""
    return " ".join(words[:lo]) if keep == "head" else " ".join(words[len(words) - lo:])
