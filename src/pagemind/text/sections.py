"""A document's own structure: its sections (title, level, character span, page span), from what the file says.

Sources, in order: a PDF's outline (bookmarks); the markup of Markdown (ATX and setext headings), HTML (``h1`` to
``h6``) and DOCX (heading styles, or a style whose outline level says it is one); else conservative rules on the
text itself ("Chapter 3", "Part II", numbered headings such as "2.3 Liquidity" on a line of their own). A heading is
placed by finding its title in the text, in order (and on its page, when the source names one). An outline that
does not hold — a page past the last, most titles not on their pages — is dropped for the next source; a document
is never refused for its structure.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser

MAX_SECTIONS = 10_000  # sections kept per document (the shallowest first, when a file has more)
MAX_LEVEL = 6
MAX_TITLE = 300  # characters of a section's title


@dataclass(frozen=True)
class Heading:
    """A heading as a source gives it: its level (1 = top), its title, the page it is on (from 1) if known."""

    level: int
    title: str
    page: int | None = None


@dataclass(frozen=True)
class Section:
    """One section of a document: its title and level, the characters it spans (from its heading to the next
    heading of its level or above), the pages they are on, and where it was found (``outline``, ``markup``, ``toc``,
    ``layout`` or ``text``)."""

    title: str
    level: int
    start: int
    end: int
    page: int | None = None
    end_page: int | None = None
    source: str = "text"

    def as_dict(self) -> dict[str, object]:
        return {"title": self.title, "level": self.level, "start": self.start, "end": self.end, "page": self.page,
                "end_page": self.end_page, "source": self.source}

    @classmethod
    def from_dict(cls, raw: dict[str, object]) -> Section:
        return cls(str(raw["title"]), int(str(raw["level"])), int(str(raw["start"])), int(str(raw["end"])),
                   None if raw.get("page") is None else int(str(raw["page"])),
                   None if raw.get("end_page") is None else int(str(raw["end_page"])), str(raw.get("source", "text")))


def clean_title(title: str) -> str:
    return " ".join(title.split())[:MAX_TITLE]


def locate(text: str, headings: Iterable[Heading], pages: Sequence[int] = (), source: str = "markup",
           strict_pages: bool = False, begin: int = 0, keep: bool = False) -> tuple[Section, ...]:
    """Sections of ``text`` from ``headings`` in document order: each title found at the start of a line after the
    previous one (on its page when it names one; ``strict_pages``: only there), else skipped; none before
    ``begin`` (a printed table of contents: its own lines are not the sections); ``keep``: a heading whose words are
    not found is kept at the start of the page it names (an outline that holds loses no entry). Their ends follow
    from their levels."""
    found: list[tuple[int, int, str, int | None]] = []  # (start, level, title, page)
    cursor = begin
    for h in headings:
        title = clean_title(h.title)
        if not title:
            continue
        start = _find(text, title, cursor, _page_span(text, pages, h.page))
        if start is None and not strict_pages:
            start = _find(text, title, cursor, (cursor, len(text)))
        bare = _LABEL.sub("", title)  # "A. Background" where the text prints "Background A." (its label after it)
        if start is None and bare != title and bare:
            start = _find(text, bare, cursor, _page_span(text, pages, h.page))
        if start is None and h.page is not None and pages and 1 <= h.page <= len(pages) and \
                pages[h.page - 1] >= cursor and keep:
            start = pages[h.page - 1]  # an outline entry whose words the text does not print: kept, at its page
        if start is None:
            continue
        found.append((start, max(1, min(MAX_LEVEL, h.level)), title, _page_of(pages, start)))
        cursor = start + 1
    level = MAX_LEVEL
    while len(found) > MAX_SECTIONS and level > 1:  # keep the shallowest levels that fit
        found = [f for f in found if f[1] < level]
        level -= 1
    found = found[:MAX_SECTIONS]
    out = []
    for i, (start, level, title, page) in enumerate(found):
        end = next((s for s, lv, _, _ in found[i + 1:] if lv <= level), len(text))
        out.append(Section(title, level, start, end, page, _page_of(pages, max(start, end - 1)), source))
    return tuple(out)


_LABEL = re.compile(r"^\s*(?:\(?[A-Za-z][.)]|[IVXLC]{1,6}\.|\d{1,3}(?:\.\d{1,3}){0,4}\.?)\s+")


def _page_span(text: str, pages: Sequence[int], page: int | None) -> tuple[int, int]:
    if page is None or not pages or not 1 <= page <= len(pages):
        return 0, len(text)
    return pages[page - 1], pages[page] if page < len(pages) else len(text)


def _page_of(pages: Sequence[int], offset: int) -> int | None:
    return bisect_right(pages, offset) if pages else None


def _find(text: str, title: str, cursor: int, span: tuple[int, int]) -> int | None:
    """The offset of ``title`` at the start of a line in ``span``, at or after ``cursor``: its words in order, in any
    case, whatever spacing and punctuation stand between them (an outline's ’ may be a text layer's '), after the
    heading's number where the text prints one the title lacks ("ASN.1 syntax" is the line "2.1 ASN.1 syntax")."""
    lo, hi = max(span[0], cursor), span[1]
    words = [re.escape(w) for w in re.findall(r"\w+", title)]
    if lo >= hi or not words:
        return None
    # the heading's number or letter where the text prints one the title lacks: "2.1", "A.", "(b)", "IV."
    number = r"" if re.match(r"\s*(?:\d|[A-Z][.)]\s|\(?[a-z][.)]\s)", title) else \
        r"(?:(?:\d{1,3}(?:\.\d{1,3}){0,4}\.?|\(?[A-Za-z][.)]|[IVXLC]{1,6}\.)[ \t]+)?"
    pattern = re.compile(r"^[^\w\n]*(" + number + r"[\W_]*".join(words) + r")", re.IGNORECASE | re.MULTILINE)
    hit = pattern.search(text, lo, hi)
    return hit.start(1) if hit else None


def outline_holds(headings: Sequence[Heading], sections: Sequence[Section], page_count: int) -> bool:
    """Whether a PDF outline can be trusted: every page it names exists, and most of its titles were found on
    their pages."""
    if not headings or any(h.page is not None and not 1 <= h.page <= page_count for h in headings):
        return False
    return len(sections) >= max(1, (len(headings) + 1) // 2)


# --- a filing: 10-K / 10-Q Items, the primary statements, the notes ------------------------------------------------
FILING = re.compile(r"\bFORM[ \t]+10-?[KQ]\b|\bANNUAL REPORT PURSUANT TO SECTION 13|\bQUARTERLY REPORT PURSUANT", re.I)
ITEM = re.compile(r"^[ \t]*(?:PART[ \t]+[IV]{1,3}[ \t]*[,.:—–-]?[ \t]*)?ITEM[ \t]+"
                  r"(?P<number>[1-9][0-9]?)(?P<letter>[A-C])?"
                  r"\b[ \t]*(?:[.:—–-][ \t]*){0,2}(?P<title>[^\n]{0,150})$", re.I | re.M)
_COMPANY = r"(?:inc|incorporated|corp|corporation|company|companies|co|subsidiaries|subsidiary|llc|plc|ltd|limited)"
STATEMENT = re.compile(r"^[ \t]*(?:[A-Z][\w.,&' ]{0,60}?[ \t])?(?:CONSOLIDATED|COMBINED|CONDENSED)[ \t]+"
                       r"(?:[A-Z]+[ \t]+)?(?:STATEMENTS?[ \t]+OF[ \t]+[^\n]{3,80}|"
                       # a company's name after the title: "Consolidated Balance Sheets Corning Incorporated ..."
                       r"BALANCE[ \t]+SHEETS?(?:[ \t]+(?-i:[A-Z])[\w.,&'’ ]{0,60}?\b" + _COMPANY + r"\b[\w.,&'’ ]{0,40}"
                       r"(?<![,:;]))?|"
                       r"STATEMENTS?[ \t]+OF[ \t]+FINANCIAL[ \t]+POSITION)[ \t]*(?:\([^\n)]*\))?[ \t]*$", re.I | re.M)
NOTE = re.compile(r"^[ \t]*(?:NOTE|Note)[ \t]+(?P<number>[1-9][0-9]?)(?:[ \t]*[.:—–-]?[ \t]+"
                  r"(?P<title>[A-Z][^\n]{2,120})|[ \t]*\n[ \t]*(?P<below>[A-Z][A-Z0-9 ,&'’()/-]{2,120}))$",
                  re.M)  # "Note 5 - Acquisitions", and "NOTE 8" over the line "DEBT"
# words before the statement's name and a company's after it: a sentence naming the balance sheets, not its title
_PREFIXED_AND_NAMED = re.compile(r"\S[ \t]+(?:CONSOLIDATED|COMBINED|CONDENSED)[ \t]+(?:[A-Z]+[ \t]+)?BALANCE[ \t]+"
                                 r"SHEETS?[ \t]+\S", re.I)
_NOTE_SKIP = 3  # a note's number follows the last one found by at most this much (a note whose title is not found)
STATEMENT_DIGITS = 0.12  # a statement's page: this share of the letters and digits of its next 1,500 characters
_LISTED = 300  # characters: a statement title this close before another is a list of them (an index), not a page
_TOC_CLUSTER = 4  # Items this close together (within 4,000 characters) are a table of contents, not headings


def _item_key(m: re.Match[str]) -> tuple[int, str]:
    return int(m.group("number")), (m.group("letter") or "").upper()


def filing_headings(text: str, pages: Sequence[int] = ()) -> list[Heading]:
    """A 10-K's or 10-Q's sections from its text: each Item where its heading stands (the contents list's lines,
    a cluster of Items with page numbers, are skipped; Items in order, each once), the primary statements where
    they are printed (a title line followed by a page of numbers) and the notes ("NOTE 7. DEBT", "Note 5 -
    Acquisitions", in order; an index line ending in its page number is not one), these two one level below the
    Item holding them. Where the headings' words are printed a line each (MGM's 2018 10-K: "ITEM\n1A. RISK\nFACTORS",
    a letter-spaced type the text layer breaks at every word), they are read joined (:func:`_joined_capitals`).
    None when the text is not a filing or shows fewer than four Items."""
    if not FILING.search(text[:20_000]):
        return []
    return _filing_headings(text, pages) or _filing_headings(_joined_capitals(text), pages)


_CAPITALS = re.compile(r"[^\S\n]*[^a-z|\n]{1,40}")  # a line without lower-case letters or table cells, 40 at most
_PAGE_NUMBER = re.compile(r"\s*\d{1,4}\s*|[\W_]*")  # a page number alone, or a rule ("8." is an Item's number)
_HEADING_START = re.compile(r"\s*(?:ITEM|PART|NOTE)\b.*", re.I)  # never joined to the line above it
_JOINED_AT_MOST = 150  # characters of a joined line (an Item's title line at most)


def _joined_capitals(text: str) -> str:
    """``text`` (the same length, so offsets hold) with a line break replaced by a space where it stands between two
    lines in capitals (:data:`_CAPITALS`) of which one is a single word: "ITEM\n1A. RISK\nFACTORS" reads
    "ITEM 1A. RISK FACTORS"; "MGM\nRESORTS\n…\nCONSOLIDATED\nBALANCE\nSHEETS\n(In thousands)" reads as its
    title line. Only where the text as printed shows no filing's headings: two headings in capitals, each on its own
    line, stay two lines elsewhere."""
    lines = text.split("\n")
    out = []
    run = 0  # characters of the line joined so far
    for i, line in enumerate(lines):
        out.append(line)
        run += len(line) + 1
        if i + 1 < len(lines):
            after = lines[i + 1]
            joined = bool(line.strip() and after.strip() and _CAPITALS.fullmatch(line) and _CAPITALS.fullmatch(after)
                          and any(c.isalpha() for c in line + after)
                          and not _PAGE_NUMBER.fullmatch(line) and not _PAGE_NUMBER.fullmatch(after)
                          and not _HEADING_START.fullmatch(after)
                          and run + len(after) <= _JOINED_AT_MOST
                          and (len(line.split()) == 1 or len(after.split()) == 1))
            out.append(" " if joined else "\n")
            run = run if joined else 0
    return "".join(out)


def _filing_headings(text: str, pages: Sequence[int]) -> list[Heading]:
    items = [m for m in ITEM.finditer(text) if m.group("title") == "" or m.group("title")[:1].isupper()
             or m.group("title")[:1] in "“\"'"]
    begin = 0
    for i in range(len(items) - _TOC_CLUSTER):
        window = items[i:i + _TOC_CLUSTER + 1]
        if window[-1].start() - window[0].start() < 4_000 and window[0].start() < len(text) // 4:
            j = i + _TOC_CLUSTER
            while j + 1 < len(items) and items[j + 1].start() - items[j].start() < 1_500 and \
                    _item_key(items[j + 1]) > _item_key(items[j]):
                j += 1
            begin = items[j].end()
            break
    found: list[tuple[int, int, str]] = []  # (offset, level, title)
    last = (0, "")
    for m in items:
        key = _item_key(m)
        if m.start() < begin or key <= last:
            continue
        title = " ".join(m.group(0).split())
        if re.search(r"[ \t.]\d{1,3}$", title) and len(title) < 140:  # "Item 7 ... 18": a contents line
            continue
        found.append((m.start(), 1, title))
        last = key
    if len(found) < 4:
        return []
    seen: set[str] = set()
    titles = list(STATEMENT.finditer(text, begin))
    for i, m in enumerate(titles):
        title = " ".join(m.group(0).split())
        kind = re.sub(r"[^a-z]", "", title.lower().split("consolidated")[-1].split("–")[0].split(" - ")[0])
        kind = re.sub(r"(balancesheets?).*", r"\1", kind)  # whatever name follows: one balance sheet
        after = text[m.end():m.end() + 1500]
        digits = sum(c.isdigit() for c in after)
        listed = re.search(r"\s\d{1,3}$|[.:;,]$", title)  # "... Balance Sheets 47": an index; ending a sentence
        listing = i + 1 < len(titles) and titles[i + 1].start() - m.end() < _LISTED  # a list of the statements
        named_both = _PREFIXED_AND_NAMED.search(title)  # "Impact of … on Consolidated Balance Sheets As Reported …"
        if kind in seen or len(title.split()) > 14 or listed or listing or named_both or \
                digits < STATEMENT_DIGITS * sum(c.isalnum() for c in after):
            continue
        seen.add(kind)
        found.append((m.start(), 2, title))
    number = 0
    for m in NOTE.finditer(text, begin):  # "Note 5 - Acquisitions" in order; an index's "Note 1 - ... 59" is not one
        if number < int(m.group("number")) <= number + _NOTE_SKIP and not re.search(r"\s\d{1,3}$", m.group(0)):
            found.append((m.start(), 2, " ".join(m.group(0).split())))
            number = int(m.group("number"))
    found.sort()
    return [Heading(level, title[:MAX_TITLE], _page_of(pages, offset)) for offset, level, title in found]


# --- a printed table of contents -----------------------------------------------------------------------------------
CONTENTS = re.compile(r"^[ \t]*(?:table of contents|contents)[ \t]*$", re.I | re.M)
TOC_ENTRY = re.compile(r"^[ \t]*(?P<title>\S[^\n]*?\w[^\n]*?)(?:[ \t]*[.·…_\-]{2,}[ \t]*|[ \t]+)"
                       r"(?P<page>[0-9]{1,4})[ \t]*$")
# front matter numbered in roman ("Preface ........ vii"): only after dot leaders (a title ending in "mix" is no page)
TOC_ROMAN = re.compile(r"^[ \t]*(?P<title>\S[^\n]*?\w[^\n]*?)[ \t]*[.·…_]{2,}[ \t]*(?P<page>[ivxlc]{1,7}|[IVXLC]{1,7})"
                       r"[ \t]*$")
TOC_NUMBER = re.compile(r"^([0-9]{1,2}(?:\.[0-9]{1,2}){0,3})\.?\s")
TOC_WITHIN = 0.25  # a contents list is looked for in the first quarter of the text
TOC_GAP = 4  # lines that are no entry (a wrapped title, a heading) ending the list
TOC_MIN = 3  # entries a contents list has at least
_ROMAN = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100}


def roman(numeral: str) -> int | None:
    """The value of a roman numeral up to 399 (``vii`` is 7), or None when it is not one written the usual way."""
    if not numeral or any(c not in _ROMAN for c in numeral.lower()):
        return None
    values = [_ROMAN[c] for c in numeral.lower()]
    total = sum(-v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values))
    return total if 0 < total < 400 and _as_roman(total) == numeral.lower() else None


def _as_roman(n: int) -> str:
    out = ""
    for value, mark in ((100, "c"), (90, "xc"), (50, "l"), (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"),
                        (1, "i")):
        while n >= value:
            out, n = out + mark, n - value
    return out


def toc_headings(text: str, pages: Sequence[int] = ()) -> tuple[list[Heading], int]:
    """The headings a printed table of contents lists ("Contents" on a line of its own, then lines ending in a page
    number, dot leaders or not), and where the list ends (sections are looked for after it). Levels follow the
    entries' numbering (``2.1 Liquidity`` is level 2); pages are the printed ones moved by the offset that finds
    most titles on their page (front matter numbered apart), when the text has pages. None found: ``([], 0)``."""
    head = CONTENTS.search(text, 0, max(1, int(len(text) * TOC_WITHIN)))
    if head is None:
        return [], 0
    entries: list[tuple[str, int]] = []
    front: list[tuple[str, int]] = []  # entries numbered in roman (front matter), before the arabic ones
    end, gap, at = head.end(), 0, head.end()
    for line in text[head.end():].split("\n"):
        at += len(line) + 1
        m = TOC_ENTRY.match(line)
        r = TOC_ROMAN.match(line) if m is None and not entries else None  # roman pages come before the arabic
        value = roman(r.group("page")) if r else None
        if m and not m.group("title").strip().isdigit():
            entries.append((clean_title(m.group("title").rstrip(" .·…_-")), int(m.group("page"))))
            end, gap = at, 0
        elif r and value is not None:
            front.append((clean_title(r.group("title").rstrip(" .·…_-")), value))
            end, gap = at, 0
        elif line.strip():
            gap += 1
            if gap >= TOC_GAP and (entries or front):
                break
    printed, numerals = [p for _, p in entries], [p for _, p in front]
    if len(entries) + len(front) < TOC_MIN or printed != sorted(printed) or numerals != sorted(numerals):
        return [], 0
    out = []
    for listed in (front, entries):
        shift = _toc_shift(text, pages, listed, end) if pages and listed else None
        for title, page in listed:
            numbered = TOC_NUMBER.match(title + " ")
            level = numbered.group(1).count(".") + 1 if numbered else 1
            out.append(Heading(min(MAX_LEVEL, level), title, None if shift is None else page + shift))
    return out, end


def _toc_shift(text: str, pages: Sequence[int], entries: list[tuple[str, int]], begin: int) -> int | None:
    """The offset from printed to the text's page numbers that finds most titles on their page (None: under half)."""
    best, hits = None, 0
    for shift in range(-10, 41):
        found = sum(1 for title, page in entries if 1 <= page + shift <= len(pages)
                    and _find(text, title, begin, _page_span(text, pages, page + shift)) is not None)
        if found > hits:
            best, hits = shift, found
    return best if hits * 2 >= len(entries) else None


# --- the text's own headings ---------------------------------------------------------------------------------------
CHAPTER = re.compile(r"^[ \t]*((?:chapter|part|book|section|appendix)\s+(?:[0-9]{1,3}|[ivxlc]{1,7}|[a-z]|one|two|"
                     r"three|four|five|six|seven|eight|nine|ten|eleven|twelve)\b[^\n]{0,80})$", re.I | re.M)
NUMBERED = re.compile(r"^[ \t]*(([0-9]{1,2}(?:\.[0-9]{1,2}){0,3})\.?[ \t]+[A-Z][^\n.!?;:]{1,80})$", re.M)


def text_headings(text: str, blank_before: bool = True) -> list[Heading]:
    """Headings a plain text shows by itself, conservatively: a line of its own that is "Chapter N" / "Part II"
    (level 1), or a numbered title such as "2.3 Liquidity" (its level the count of its numbers), starting with a
    capital and without a sentence's end. Numbered titles count only when there are at least three, with at least
    two different first numbers (a list of steps is not a document's structure). ``blank_before``: a heading
    has a blank line before it (plain text; a PDF's text layer has none between lines)."""
    def alone(start: int) -> bool:
        return start == 0 or not blank_before or text[max(0, start - 2):start] == "\n\n"

    chapters = [(m.start(1), Heading(1, m.group(1))) for m in CHAPTER.finditer(text) if alone(m.start())]
    numbered = [(m.start(1), Heading(min(MAX_LEVEL, m.group(2).count(".") + 1), m.group(1)))
                for m in NUMBERED.finditer(text) if alone(m.start())]
    if len(numbered) < 3 or len({h.title.split(".")[0].split()[0] for _, h in numbered}) < 2:
        numbered = []
    shift = 1 if chapters and any(h.level == 1 for _, h in numbered) else 0  # "3 Title" inside "Chapter 2"
    merged = sorted(chapters + [(s, Heading(h.level + shift, h.title)) for s, h in numbered], key=lambda x: x[0])
    return [h for _, h in merged]


# --- a PDF's layout: headings by size and weight -----------------------------------------------------------------
@dataclass(frozen=True)
class StyledLine:
    """One line of a PDF page's text layer as it is drawn: its page (from 1), text, size in points (the largest of
    its runs), whether every character of it is bold, and whether it is drawn in a figure (a chart's label, a shaded
    table's cell: never a heading)."""

    page: int
    text: str
    size: float
    bold: bool
    figure: bool = False


LARGER = 1.15  # a heading's type is at least this much larger than the body's
HEADING_WORDS = 14  # a heading has at most this many words
_BOLD_WORDS = 10  # a line in the body's size counts as a heading when bold, this short and not ending a sentence
_RUNNING = 3  # a line repeated on this many pages is a running head or foot, never a heading
_PERIOD_WORDS = 3  # a line of more words ending a sentence is a sentence's end ("Item 7." is a title)
_TITLE_LINES = 2  # a title is set on at most this many lines (more lines in one type are a block: a table, a note)


def layout_headings(lines: Sequence[StyledLine]) -> list[Heading]:
    """Headings a PDF shows by its type: short lines set larger than the body text (the size holding the most
    characters of lines that are mostly words), their levels by size (the largest is level 1), and bold lines of the
    body's size that are short and end no sentence (the lowest level). Lines repeated on several pages (running
    heads, "Annual report 2023"), lines drawn in a figure (a chart's labels) and lines of more numbers than words
    ("0.5 1.0 Accuracy") are not headings. A heading set on two lines of one type is one heading; three such lines
    or more are a block, and a run starting in lower case or ending a sentence is a paragraph's end: neither is a
    title. None when fewer than two lines qualify or more than a third of the lines would (then type is not
    structure)."""
    drawn = [line for line in lines if line.text.strip()]
    if not drawn:
        return []
    chars: dict[float, int] = {}
    for line in drawn:  # the body is the prose's size: a statement's rows in small type are not prose
        words = line.text.split()
        prose = sum(1 for w in words if any(c.isalpha() for c in w)) >= max(1, len(words) * 3 // 4)
        chars[_pt(line.size)] = chars.get(_pt(line.size), 0) + (len(line.text) if prose else 0)
    body = max(chars, key=lambda size: chars[size])
    seen: dict[str, set[int]] = {}
    for line in drawn:
        seen.setdefault(" ".join(line.text.split()), set()).add(line.page)

    def shape(line: StyledLine) -> bool:
        title = " ".join(line.text.split())
        words = title.split()
        figures = sum(1 for w in words if not any(c.isalpha() for c in w))  # "0.5", "2020", "$"
        return (0 < len(words) <= HEADING_WORDS and figures * 2 <= len(words) and not line.figure
                and len(seen[title]) < _RUNNING and not title.endswith((",", ";", ":")))

    large = [line for line in drawn if _pt(line.size) >= body * LARGER and shape(line)]
    bold = [line for line in drawn if line.bold and _pt(line.size) == body and shape(line)
            and len(line.text.split()) <= _BOLD_WORDS and not line.text.rstrip().endswith((".", "!", "?"))]
    picked = {id(line) for line in large + bold}
    if not 2 <= len(picked) <= len(drawn) / 3:
        return []
    sizes = sorted({_pt(line.size) for line in large}, reverse=True)
    levels = {size: min(MAX_LEVEL, i + 1) for i, size in enumerate(sizes)}
    runs: list[list[StyledLine]] = []  # picked lines one after another in one type on one page
    previous: StyledLine | None = None
    for line in drawn:
        if id(line) not in picked:
            previous = None
            continue
        if previous is not None and previous.page == line.page and _pt(previous.size) == _pt(line.size) and \
                previous.bold == line.bold:
            runs[-1].append(line)
        else:
            runs.append([line])
        previous = line
    out: list[Heading] = []
    for run in runs:  # a title set on two lines is one heading; three lines or more words are a block, not a title
        title = " ".join(" ".join(line.text.split()) for line in run)
        if len(run) <= _TITLE_LINES and len(title.split()) <= HEADING_WORDS and not title[0].islower() and \
                not (len(title.split()) > _PERIOD_WORDS and title.endswith((".", "!", "?", ".”"))):
            out.append(Heading(levels.get(_pt(run[0].size), min(MAX_LEVEL, len(sizes) + 1)), title[:MAX_TITLE],
                               run[0].page))
    return out


def _pt(size: float) -> float:
    return round(size * 2) / 2  # half points: the same type drawn through other matrices is one size


# --- markup -------------------------------------------------------------------------------------------------------
ATX = re.compile(r"^ {0,3}(#{1,6})(?:\s+|$)(.*?)(?:\s+#+)?\s*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)\s*$")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def markdown_headings(source: str) -> list[Heading]:
    """A Markdown document's ATX (``## Title``) and setext (underlined) headings, outside code blocks, their
    titles as the text shows them (inline markup removed)."""
    from .formats.markdown import _inline

    out: list[Heading] = []
    fence: str | None = None
    previous = ""
    for line in source.split("\n"):
        opened = FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0]:
                fence = None
            previous = ""
            continue
        if opened:
            fence, previous = opened.group(1), ""
            continue
        atx = ATX.match(line)
        if atx and atx.group(2).strip():
            out.append(Heading(len(atx.group(1)), _inline(atx.group(2).strip())))
        elif SETEXT.match(line) and previous.strip() and not previous.lstrip().startswith(("-", "*", "+", ">")):
            out.append(Heading(1 if line.strip()[0] == "=" else 2, _inline(previous.strip())))
        previous = line
    return out


class _Headings(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.headings: list[Heading] = []
        self.level: int | None = None
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        from .formats.html import SKIPPED

        if tag in SKIPPED:
            self.skip += 1
        elif len(tag) == 2 and tag[0] == "h" and tag[1] in "123456" and not self.skip:
            self.level, self.parts = int(tag[1]), []

    def handle_endtag(self, tag: str) -> None:
        from .formats.html import SKIPPED

        if tag in SKIPPED and self.skip:
            self.skip -= 1
        elif self.level is not None and tag == f"h{self.level}":
            title = clean_title("".join(self.parts))
            if title:
                self.headings.append(Heading(self.level, title))
            self.level = None

    def handle_data(self, data: str) -> None:
        if self.level is not None and not self.skip:
            self.parts.append(data)


def html_headings(markup: str) -> list[Heading]:
    """An HTML page's ``h1``-``h6`` headings (outside what the text leaves out: scripts, navigation...)."""
    parser = _Headings()
    parser.feed(markup)
    parser.close()
    return parser.headings


def path_at(sections: Sequence[Section], offset: int) -> list[Section]:
    """The sections holding the character at ``offset``, outermost first."""
    chain: list[Section] = []
    for s in sections:
        if s.start > offset:
            break
        if s.start <= offset < s.end:
            chain = [c for c in chain if c.level < s.level] + [s]
    return chain


def label(chain: Sequence[Section]) -> str:
    """A section path as a citation names it: ``§2.3 Liquidity › Cash flows`` (empty outside every section)."""
    from ..citations import section_label

    return section_label(chain) or ""


def outline_text(sections: Sequence[Section]) -> str:
    """The sections as an indented outline with their pages."""
    return "\n".join(f"{'  ' * (s.level - 1)}{s.title}" + (f"  (p. {s.page}" + (f"-{s.end_page}" if s.end_page and
                     s.end_page != s.page else "") + ")" if s.page else "") for s in sections)


__all__ = ["Heading", "Section", "html_headings", "label", "locate", "markdown_headings", "outline_holds",
           "outline_text", "path_at", "text_headings"]
