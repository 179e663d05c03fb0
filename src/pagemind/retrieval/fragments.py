"""Fragments: a document cut into the units retrieval scores (words, ReadAgent pages, chat turns, code lines).

``position`` is the fragment's ordinal inside its ``source`` (a file for code, a conversation for chat, ""
for one text): it is the ``loc_i`` of FragRel's context relation (Eq. 7), so adjacent fragments are one step
apart, and the relation never crosses sources. ``start``/``end`` locate the fragment in its source in the
splitter's unit (words, paragraphs, turns or lines; end exclusive).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import ConfigError

Unit = Literal["words", "pages", "turns", "lines"]


@dataclass(frozen=True)
class Fragment:
    """One retrievable unit of a document, conversation or repository."""

    index: int  # 0-based, unique in its memory
    text: str
    position: int  # ordinal in its source: loc_i of the context relation
    source: str = ""  # file path for code, conversation id for chat, "" for a single text
    start: int = 0  # first word / paragraph / turn / line in the source
    end: int = 0  # one past the last
    unit: str = "words"
    section: str = ""  # the document's sections holding it ("§2 Results › 2.1 Cash flows"), when it has them
    opens: tuple[str, ...] = ()  # the sections that start inside it (a statement beginning mid-window)
    head: str = ""  # the title lines and header of a table it starts inside, shown above it (not its own text)

    @property
    def words(self) -> int:
        return len(self.text.split())

    @property
    def shown(self) -> str:
        """What a reader is shown of it: its text under the head of the table it starts inside."""
        return self.head + self.text

    def as_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        if not self.opens:
            del out["opens"]  # stored payloads of fragments without one stay as they were
        else:
            out["opens"] = list(self.opens)
        if not self.head:
            del out["head"]
        return out


TABLE_HEAD_ROWS = 2  # a window does not end between a Markdown table's header and its first rows


def _lines(text: str) -> tuple[list[str], list[int]]:
    """The text's lines, and the word offset (into ``text.split()``) each starts at, then the words' count."""
    lines = text.split("\n")
    offsets, word = [], 0
    for line in lines:
        offsets.append(word)
        word += len(line.split())
    offsets.append(word)
    return lines, offsets


def table_heads(text: str) -> list[tuple[int, int]]:
    """Word ranges ``(first, past)`` a window should not end inside: each Markdown table's caption line ("Table 3:
    ..."), header, separator and first :data:`TABLE_HEAD_ROWS` rows, as word offsets into ``text.split()``."""
    heads: list[tuple[int, int]] = []
    if "| --- |" not in text:
        return heads
    lines, offsets = _lines(text)
    for i, past in header_lines(lines):
        first = i - 1 if i and lines[i - 1].lower().startswith("table") else i
        heads.append((offsets[first], offsets[past]))
    return heads


def header_lines(lines: Sequence[str]) -> list[tuple[int, int]]:
    """Each Markdown table's header row among ``lines`` and the line past those that stay with it — its rule and its
    first :data:`TABLE_HEAD_ROWS` rows — as ``(header, past)`` line indices (what a window or leaf never ends
    inside)."""
    out: list[tuple[int, int]] = []
    for i, line in enumerate(lines):
        if line.startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("| --- |") and \
                not (i and lines[i - 1].startswith("|")):
            past = i + 2
            while past < len(lines) and past < i + 2 + TABLE_HEAD_ROWS and lines[past].startswith("|"):
                past += 1
            out.append((i, past))
    return out


HEAD_LINES = 2  # short lines above a table's header carried with it ("(in millions, except per share data)")
HEAD_CHARS = 160  # a carried line's length at most
_HEAD_WALK = 400  # table rows walked up from a window's first line to find its header


def title_line(line: str) -> bool:
    """Whether ``line`` may title the Markdown table below it: a short line of words (at most :data:`HEAD_CHARS`), not
    blank, not a row."""
    said = line.strip()
    return bool(said) and not said.startswith("|") and len(said) <= HEAD_CHARS


def carried_head(text: str, at: int) -> str:
    """The head a window starting at ``at`` inside a Markdown table's body carries: the table's title lines (up to
    :data:`HEAD_LINES` short lines right above it), header row and rule, each on its line, and a newline — so the
    window's rows keep their columns' periods ("| Total net sales | 107,006 | 135,987 |" under "| Year Ended
    December 31, | 2015 | 2016 | 2017 |"); "" where ``at`` is not on a row below a table's header."""
    from ..text.tables import table_top

    top = table_top(text, at, lines=HEAD_LINES, rows=_HEAD_WALK, indented=False)
    if top is None:  # not on a row of pagemind's (one starting its line), or too far down a table
        return ""
    end = text.find("\n", top.start)
    rule_end = text.find("\n", end + 1) if end >= 0 else -1
    if top.above < 2 or end < 0 or not text.startswith("| --- |", end + 1) or rule_end < 0 or rule_end >= at:
        return ""  # no header and rule above the window's first row (or the window starts on them)
    title: list[str] = []
    for line in (line.strip() for line in reversed(top.title)):  # the nearest first, to a long one or an indented row
        if not title_line(line):
            break
        title.insert(0, line)
    return "\n".join([*title, text[top.start:rule_end]]) + "\n"


def _row_start(lines: Sequence[str], offsets: Sequence[int], word: int) -> int:
    """The word offset of the Markdown table row ``word`` lies inside (past its first word); ``word`` itself
    elsewhere (:func:`_lines`' lines and offsets)."""
    import bisect

    i = bisect.bisect_right(offsets, word) - 1  # the line holding it (the last of those starting there)
    return offsets[i] if 0 <= i < len(lines) and lines[i].startswith("|") and offsets[i] < word else word


def _windows(text: str, bounds: Iterable[tuple[int, int]], lo: int = 0,
             hi: int | None = None) -> list[tuple[str, str]]:
    """The texts of word windows ``(first, past)`` of ``text[lo:hi]`` (word offsets into it): each the document's
    own stretch from its first word to its last, line breaks kept (a statement's rows stay rows), and the head of a
    table it starts inside (:func:`carried_head`, read in the whole ``text``)."""
    spans = [(m.start(), m.end()) for m in re.compile(r"\S+").finditer(text, lo, len(text) if hi is None else hi)]
    out = []
    for first, past in bounds:
        begin, end = spans[first][0], spans[past - 1][1]
        out.append((text[begin:end], carried_head(text, begin)))
    return out


_WORDLIKE = re.compile(r"[^\W_]")  # a letter or a digit


def split_words(text: str, size: int = 500, source: str = "") -> list[Fragment]:
    """Consecutive non-overlapping windows of ``size`` words (FragRel/LongBench: 500 or 800; a Markdown table's pipes
    and rules are no words), each the text's own stretch, line breaks kept. A window that would end between a
    Markdown table's caption or header and its first rows ends before the table instead (where that leaves it any
    words), so the table's header travels with its rows; one that starts further down a table carries its header as
    its ``head`` (:func:`carried_head`), shown above it."""
    if size < 1:
        raise ConfigError("fragment size must be at least 1 word")
    import bisect

    tokens = text.split()
    count = len(tokens)
    # words counted as a reader counts them: a table's rules and pipes ("|", "---") and a lone "$" are none (a
    # statement's row, "| Net sales | $ | 11,303 |", is 3 words, not 7)
    counted = list(itertools.accumulate((1 if _WORDLIKE.search(t) else 0 for t in tokens), initial=0))
    heads = table_heads(text)
    lines, offsets = _lines(text)
    bounds: list[tuple[int, int]] = []
    start = 0
    while start < count:
        end = min(max(bisect.bisect_left(counted, counted[start] + size), start + 1), count)
        end = next((first for first, past in heads if start < first < end < past), end)
        row = _row_start(lines, offsets, end) if end < count else end
        if row > start:  # never inside a table's row: before it
            end = row
        # a window that starts on a table's caption or header holds them and its first rows whole
        end = next((past for first, past in heads if first <= start < past and end < past), end)
        bounds.append((start, end))
        start = end
    return [Fragment(n, window, n, source, first, past, "words", head=head)
            for n, ((first, past), (window, head)) in enumerate(zip(bounds, _windows(text, bounds), strict=True))]


def label_sections(fragments: Sequence[Fragment], text: str, sections: Sequence[Any]) -> list[Fragment]:
    """Word windows named by the sections their first word is in ("§Item 8 › Consolidated Balance Sheets"), so a
    question that names a section finds them (:mod:`pagemind.retrieval.named`); as they are without sections."""
    if not sections or not fragments:
        return list(fragments)
    from dataclasses import replace

    from ..citations import section_label
    from ..text.sections import path_at

    starts = {f.start for f in fragments}
    offsets: dict[int, int] = {}
    for word, m in enumerate(re.finditer(r"\S+", text)):
        if word in starts:
            offsets[word] = m.start()
            if len(offsets) == len(starts):
                break
    bounds = [offsets.get(f.start, 0) for f in fragments] + [len(text)]
    return [replace(f, section=section_label(path_at(sections, bounds[i])) or "",
                    opens=tuple(dict.fromkeys(section_label(path_at(sections, s.start)) or "" for s in sections
                                              if bounds[i] < s.start < bounds[i + 1])))
            for i, f in enumerate(fragments)]


def split_sections(text: str, sections: Sequence[Any], size: int = 500, source: str = "") -> list[Fragment]:
    """Word windows that never cross a section: the text is cut at every section's start, and each stretch (a
    section up to its first subsection, or the rest of one after a subsection ends) is one fragment when it fits
    ``size`` words, else windows of about equal size within it. Each fragment names its section path. Without
    sections: :func:`split_words`."""
    if size < 1:
        raise ConfigError("fragment size must be at least 1 word")
    if not sections:
        return split_words(text, size, source)
    from ..citations import section_label
    from ..text.sections import path_at

    cuts = sorted({0, len(text), *(s.start for s in sections), *(s.end for s in sections)})
    out: list[Fragment] = []
    word = 0
    for lo, hi in itertools.pairwise(cuts):
        stretch = text[lo:hi]
        words = len(stretch.split())
        if not words:
            continue
        label = section_label(path_at(sections, lo)) or ""
        count = -(-words // size)  # windows of about equal size
        step = -(-words // count)
        bounds = [(start, min(start + step, words)) for start in range(0, words, step)]
        for (first, past), (window, head) in zip(bounds, _windows(text, bounds, lo, hi), strict=True):
            n = len(out)
            out.append(Fragment(n, window, n, source, word + first, word + past, "words", label, head=head))
        word += words
    return out


def split_pages(pages: Iterable[Any], source: str = "") -> list[Fragment]:
    """One fragment per ReadAgent page (objects with ``index``, ``text``, ``start``, ``end`` in paragraphs)."""
    return [Fragment(n, p.text, n, source, p.start, p.end, "pages") for n, p in enumerate(pages)]


def split_turns(turns: Sequence[tuple[str, str]] | Sequence[str], first: int = 0, source: str = "") -> list[Fragment]:
    """One fragment per chat turn, ``speaker: text`` for ``(speaker, text)`` pairs; ``source`` names the
    conversation (all turns share it, so the context relation runs across speakers)."""
    out = []
    for n, turn in enumerate(turns):
        speaker, text = turn if isinstance(turn, tuple) else ("", turn)
        i = first + n
        out.append(Fragment(i, f"{speaker}: {text}" if speaker else text, i, source, i, i + 1, "turns"))
    return out


def split_lines(code: str, source: str = "", window: int = 20, stride: int = 10, first_index: int = 0,
                skip_blank: bool = True) -> list[Fragment]:
    """RepoCoder windows: for every ``stride``-th line, lines [l - window//2, l + window - window//2) clipped.

    As in RepoCoder's ``make_window.py`` (window 20, slice 2 -> stride 10); windows of only blank lines are
    dropped (RepoCoder drops empty windows). Repository-wide merging of identical windows is left to the
    caller (code indexing, part 5).
    """
    if window < 1 or stride < 1:
        raise ConfigError("code windows need window >= 1 and stride >= 1")
    lines = code.splitlines()
    half = window // 2
    out: list[Fragment] = []
    for ordinal, line_no in enumerate(range(0, len(lines), stride)):
        start, end = max(0, line_no - half), min(len(lines), line_no + window - half)
        chunk = lines[start:end]
        if not chunk or (skip_blank and not any(s.strip() for s in chunk)):
            continue
        out.append(Fragment(first_index + len(out), "\n".join(chunk), ordinal, source, start, end, "lines"))
    return out


def split_repository(files: Iterable[tuple[str, str]], window: int = 20, stride: int = 10) -> list[Fragment]:
    """Code windows of every ``(path, text)`` file, indexed across the repository, positions per file."""
    out: list[Fragment] = []
    for path, text in files:
        out.extend(split_lines(text, path, window, stride, first_index=len(out)))
    return out


def from_dicts(items: Iterable[dict[str, Any]]) -> list[Fragment]:
    """Fragments back from their stored payloads."""
    return [Fragment(**{**d, "opens": tuple(d.get("opens") or ())}) for d in items]
