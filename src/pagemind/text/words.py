"""Content words: lower-cased word tokens without the commonest English function words (light: no imports)."""

from __future__ import annotations

import re
from collections import Counter
from itertools import groupby

WORD = re.compile(r"\w+")
STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "did", "do", "does", "for", "from", "had", "has",
    "have", "he", "her", "his", "i", "in", "is", "it", "me", "my", "of", "on", "or", "our", "she", "so",
    "that", "the", "their", "them", "they", "this", "to", "was", "we", "were", "what", "when", "where",
    "which", "who", "why", "with", "you", "your"
})


VERDICTS = frozenset({"yes", "no"})  # a yes/no answer's verdict: what it says of the question, no content of its own
VERDICT = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)  # a reply that opens with its verdict


# a question's lead-in ("For Pfizer, ...", "As of Q2'2023, ...", "For the fiscal year ended June 30, 2023, ...") and
# the auxiliary that opens a yes/no question; "Can you calculate ...?" and "Could you give ...?" are requests
LEAD_IN = (r"^\W*(?:(?:for|in|at|of|during|as\s+of|according\s+to|based\s+on|considering|per|after|looking\s+at)"
           r"\b[^?]{0,80}?,\s*)?")
AUXILIARY = (r"(?!(?:can|could|will|would)\s+(?:you|we|i)\b)"
             r"(?:is|are|was|were|has|have|had|does|do|did|can|could|will|would|should)\b")
_POLAR = re.compile(LEAD_IN + AUXILIARY, re.IGNORECASE)


# a title or a Latin abbreviation ends no question's sentence; "No." and a lone initial may ("Answer Yes or No. Did …?")
_TITLE_END = re.compile(r"(?:^|\s)(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|Prof|e\.g|i\.e|vs|etc)\.$")


def asking(question: str) -> str:
    """The sentence of ``question`` that asks: its first ending in a question mark (a question defining its metric
    after a preamble, "... Here's the question: what is ...?"), else the whole text."""
    pieces: list[str] = []
    for piece in re.split(r"(?<=[.?!:])\s+", question.strip()):
        if pieces and _TITLE_END.search(pieces[-1]):  # "How old is Mr." + "Pellow?": one sentence
            pieces[-1] += " " + piece
        else:
            pieces.append(piece)
    asks = [s for s in pieces if s.rstrip().endswith("?")]
    return asks[0] if asks else question


def polar(question: str) -> bool:
    """Whether ``question`` asks yes or no ("Did Pfizer grow its PPNE …?", "For AMCOR, has …?")."""
    return _POLAR.match(asking(question)) is not None


def overlap_f1(said: list[str], other: list[str]) -> float:
    """Token F1 of two lists of words: their common words (with repeats) as a share of each, harmonised (0 where they
    share none, or either is empty)."""
    common = sum((Counter(said) & Counter(other)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(said), common / len(other)
    return 2 * precision * recall / (precision + recall)


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


_MAX_WORDS = 80  # a longer "sentence" (no punctuation) is cut into pieces of about half this
# --- sentences and terms -------------------------------------------------------------------------------------------
_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+(?=\S)")
# a full stop that ends no sentence: a title or an initial ("Mr. Pellow", "J. Smith", "e.g. this")
_ABBREVIATION = re.compile(r"(?:^|\s)(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|Prof|Capt|Rev|Gen|Col|Lt|Sgt|No|vs|etc|e\.g|i\.e|"
                           r"[A-Z])\.$")


def sentences(text: str, lines: bool = False) -> list[str]:
    """The sentences of ``text`` (``lines``: its non-empty lines, for code), as they stand in it; a table's row
    (pagemind writes a statement's rows as Markdown rows) is a sentence of its own, whole — a statement cut by word
    count had cited Amazon's "| Cost of sales | 71,651 | 88,265 |" without its 2017 figure — and its rule line none;
    a run of more than ``_MAX_WORDS`` words without an end is cut into pieces."""
    out: list[str] = []
    for paragraph in _PARAGRAPH.split(text):
        parts = [(line, False) for line in paragraph.splitlines()] if lines else [
            (piece, is_row) for block, is_row in _rows_apart(paragraph)
            for piece in ([block] if is_row else _joined(_SENTENCE_END.split(block)))]
        for part, is_row in parts:
            words = part.split()
            if not words:
                continue
            if len(words) <= _MAX_WORDS or is_row:  # a row is whole, however long
                out.append(" ".join(words))
                continue
            step = _MAX_WORDS // 2
            out += [" ".join(words[i:i + step]) for i in range(0, len(words), step)]
    return out


_ROW = re.compile(r"^[ \t]*\|.*\|[ \t]*$")  # a Markdown table row, as pagemind writes one: a line from "|" to "|"
_RULE = re.compile(r"^[ \t]*\|[\s|:-]*\|[ \t]*$")  # its rule line ("| --- | --- |"): no words, no sentence


def _rows_apart(paragraph: str) -> list[tuple[str, bool]]:
    """``paragraph`` as its table rows, each alone, and the runs of other lines between them (rule lines left out),
    each with whether it is a row."""
    if "|" not in paragraph:
        return [(paragraph, False)]
    out: list[tuple[str, bool]] = []
    for is_row, group in groupby(paragraph.splitlines(), key=lambda line: _ROW.match(line) is not None):
        lines = list(group)
        out += [(line, True) for line in lines if not _RULE.match(line)] if is_row else [("\n".join(lines), False)]
    return out


def _joined(parts: list[str]) -> list[str]:
    """Pieces split after an abbreviation joined again to the piece that follows."""
    out: list[str] = []
    for part in parts:
        if out and _ABBREVIATION.search(out[-1]):
            out[-1] += " " + part
        else:
            out.append(part)
    return out


_TITLES = frozenset({"mr", "mrs", "ms", "dr", "st", "jr", "sr"})


def _stem(word: str) -> str:
    """A light suffix strip (finds/find, looked/look, reading/read), so an answer's inflection still matches."""
    for suffix in ("ing", "ed", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def terms(text: str) -> set[str]:
    """The text's content words (:func:`content_words`), lightly stemmed, without titles."""
    return {_stem(w) for w in content_words(text) if w not in _TITLES}
