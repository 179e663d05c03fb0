"""Paragraphs that survive real inputs.

The unit every method builds on. Rules, in order:

1. Blank lines separate paragraphs when the text has them (wrapped lines inside a paragraph are joined).
   Project Gutenberg-style texts (QuALITY) put single blank lines *inside* sentences and two or more
   between paragraphs: when most blank-line blocks end mid-sentence, only runs of 2+ blank lines count.
2. Otherwise every non-empty line is a paragraph, except in hard-wrapped text (most lines 40-90
   characters, most ending mid-sentence), where lines are joined until a sentence ends.
3. A text with no line breaks at all, and any paragraph longer than ``max_words``, is split into
   sentences, and the sentences are packed into pseudo-paragraphs of at most ``max_words`` words.
4. A "sentence" with no punctuation that is still too long is cut into ``max_words`` word windows.

Words are whitespace-separated tokens, as in the ReadAgent code (``len(text.split())``).
"""

from __future__ import annotations

import re

SENTENCE_END = re.compile(r"(?<=[.!?。！？])[\"'”’)\]]*\s+")
BLANK_LINE = re.compile(r"\n[ \t]*\n")
DOUBLE_BLANK = re.compile(r"\n[ \t]*\n[ \t]*\n")
SENTENCE_CLOSERS = tuple(".!?:;\"'”’)]*-—…")


def word_count(text: str) -> int:
    return len(text.split())


def split_paragraphs(text: str, max_words: int = 300) -> list[str]:
    text = text.strip()
    if not text:
        return []
    blocks = [b.strip() for b in BLANK_LINE.split(text) if b.strip()]
    if len(blocks) > 2 and _gutenberg_style(text, blocks):
        blocks = [b.strip() for b in DOUBLE_BLANK.split(text) if b.strip()]
    if len(blocks) > 1:
        paragraphs = [" ".join(line.strip() for line in b.split("\n") if line.strip()) for b in blocks]
    else:
        lines = [line.strip() for line in text.split("\n") if line.strip()]
        paragraphs = _unwrap(lines) if _hard_wrapped(lines) else lines
    out: list[str] = []
    for para in paragraphs:
        if word_count(para) <= max_words:
            out.append(para)
        else:
            out.extend(pack_sentences(split_sentences(para), max_words))
    return out


def _gutenberg_style(text: str, blocks: list[str]) -> bool:
    """Paragraphs separated by 2+ blank lines, single blank lines inside sentences."""
    doubles = len(DOUBLE_BLANK.findall(text))
    if doubles >= 2 and doubles >= 0.5 * (len(blocks) - 1):
        return True
    open_ended = sum(1 for b in blocks if not b.rstrip().endswith(SENTENCE_CLOSERS))
    return doubles >= 2 and open_ended > 0.3 * len(blocks)


def _hard_wrapped(lines: list[str]) -> bool:
    if len(lines) < 8:
        return False
    wrapped = sum(1 for line in lines if 40 <= len(line) <= 90)
    open_ended = sum(1 for line in lines if not line.endswith(SENTENCE_CLOSERS))
    return wrapped >= 0.6 * len(lines) and open_ended >= 0.5 * len(lines)


def _unwrap(lines: list[str]) -> list[str]:
    out: list[str] = []
    current: list[str] = []
    for line in lines:
        current.append(line)
        if line.endswith(SENTENCE_CLOSERS):
            out.append(" ".join(current))
            current = []
    if current:
        out.append(" ".join(current))
    return out


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in SENTENCE_END.split(text) if s.strip()]


def pack_sentences(sentences: list[str], max_words: int) -> list[str]:
    """Greedily pack sentences into chunks of at most ``max_words`` words (cutting over-long ones)."""
    chunks: list[str] = []
    current: list[str] = []
    count = 0
    for sentence in sentences:
        words = sentence.split()
        if len(words) > max_words:
            if current:
                chunks.append(" ".join(current))
                current, count = [], 0
            for i in range(0, len(words), max_words):
                chunks.append(" ".join(words[i : i + max_words]))
            continue
        if count + len(words) > max_words and current:
            chunks.append(" ".join(current))
            current, count = [], 0
        current.append(sentence)
        count += len(words)
    if current:
        chunks.append(" ".join(current))
    return chunks
