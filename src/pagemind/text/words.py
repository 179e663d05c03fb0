"""Content words: lower-cased word tokens without the commonest English function words (light: no imports)."""

from __future__ import annotations

import re

WORD = re.compile(r"\w+")
STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "did", "do", "does", "for", "from", "had", "has",
    "have", "he", "her", "his", "i", "in", "is", "it", "me", "my", "of", "on", "or", "our", "she", "so",
    "that", "the", "their", "them", "they", "this", "to", "was", "we", "were", "what", "when", "where",
    "which", "who", "why", "with", "you", "your"
})


def content_words(text: str) -> list[str]:
    """The text's words in order, lower-cased, without stopwords."""
    return [w for w in WORD.findall(text.lower()) if w not in STOPWORDS]


def keywords(text: str) -> set[str]:
    """The text's distinct content words."""
    return set(content_words(text))


def share_in(words: list[str], text: str) -> float:
    """The share of ``words`` (with repeats) that occur in ``text`` (0 for no words)."""
    if not words:
        return 0.0
    found = keywords(text)
    return sum(w in found for w in words) / len(words)
