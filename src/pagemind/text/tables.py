"""Unruled tables as rows: a financial statement's lines ("Net earnings $ 2,181.2 $ 1,752.7 $ 2,131.0") written as
a Markdown table under their column headers ("Fiscal Year 2020 2019 2018"), so each number keeps its row and its
period when the text is cut into passages.

pdfium draws a statement's row on one line; what it does not say is which column a number is in. A run of such
rows (a label, then two or more numbers, "$" and "%" joined to them) under a line naming as many periods (years,
"May 31, 2020", "Q2 2023") becomes one table: its header the periods, one row per line, a label line inside the
run ("Current assets:") a row of its own. The unit line ("In Millions", "(in millions, except per share data)") and
the title above stay as they are, above the table. A header printed a word or two a line ("May 26," / "2019 May 27,"
/ "2018") is read as one. A note reference ("Inventories, net (Note 6)") stays in the label. A run without such a
header is left as lines, and a row of fewer figures than the table's columns keeps its figures in its label cell: a
number is never put under a period the page does not give it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from .formats.common import markdown_table

_NUMBER = re.compile(r"^\(?-?\$?\(?[0-9][0-9,]*(?:\.[0-9]+)?\)?%?\)?$|^[—–-]+%?$|^\(?[0-9]*\.[0-9]+\)?%?$")
_YEAR = re.compile(r"^(?:19|20)[0-9]{2}[,:)]?$")
_CLOSES = re.compile(r"^[0-9][0-9,.]*\)$")  # the end of a parenthesis opened in the label: "6)" of "(Note 6)"
_QUARTER = re.compile(r"^(?:Q[1-4]|FY|H[12])[ ']?(?:19|20)?[0-9]{2}$", re.I)
MIN_ROWS = 3  # rows a run has at least to be a table
MAX_LABEL_GAP = 2  # label-only lines ("Current assets:") a run may hold in a row
HEADER_ABOVE = 4  # lines above a run looked at for its column header
_DAY = re.compile(r"^\s*[A-Z][a-z]{2,8}\.?\s+[0-9]{1,2},?\s*$")  # "May 26,": a date's month and day, its year below
HEADER_LINES, HEADER_WORDS = 10, 6  # a header printed over lines: at most this many, each of at most this many words
HEADER_SPLIT = 2  # ... and across a blank line only when each is at most this many ("December" / "31," / "" / "2015")
LABEL_WORDS = 14  # a label line inside a statement ("Basic earnings per share attributable to ...") at most


def cells(line: str) -> tuple[str, list[str]]:
    """A line split into its label and the numbers at its end ("$ 1,577" and "2.0 %" as one cell each)."""
    tokens = line.split()
    values: list[str] = []
    i = len(tokens)
    while i > 0:
        token = tokens[i - 1]
        if token == "%" and i > 1 and _NUMBER.match(tokens[i - 2]):  # "2.0 %"
            values.insert(0, tokens[i - 2] + "%")
            i -= 2
        elif _CLOSES.match(token):  # "(Note 6)", "(Notes 11 and 15)": a reference in the label, not a figure
            before = " ".join(tokens[:i - 1])
            if before.count("(") > before.count(")"):
                break
            i -= 1  # "1,500 1)": a footnote's mark after the figures
            continue
        elif _NUMBER.match(token) and not _YEAR.match(token) and not token.endswith(","):  # a year is a header's
            # or a label's, and "26," a date's ("May 26, 2019")
            joined = i > 1 and tokens[i - 2] == "$"  # "$ 1,577"
            values.insert(0, "$" + token if joined else token)
            i -= 2 if joined else 1
        else:
            break
    label = " ".join(tokens[:i])
    if label.endswith(" $"):
        label = label[:-2]
    return label, values


def _periods(line: str) -> list[str]:
    """The column headers a header line names: years ("2020 2019 2018", "May 31, 2020 May 26, 2019") or quarters."""
    tokens = line.split()
    out: list[str] = []
    for i, token in enumerate(tokens):
        if _YEAR.match(token) or _QUARTER.match(token):
            day = i >= 2 and tokens[i - 1].rstrip(",").isdigit() and len(tokens[i - 1].rstrip(",")) <= 2 \
                and tokens[i - 2].isalpha()  # "May 31, 2020"
            before = tokens[i - 2:i] if day else []
            out.append(" ".join([*before, token.rstrip(",:)")]))
    return out


Table = list[list[str]]


def _header(lines: list[str | Table], width: int) -> tuple[int, int, str] | None:
    """The header above a run, as the indexes of its first line and of the line after its last, and its text: the
    nearest of :data:`HEADER_ABOVE` lines naming ``width`` periods (and nothing else that is a number), else the
    fewest of the short lines (:data:`HEADER_LINES`, :data:`HEADER_WORDS` each) above it, or above a few label lines
    right above it, that name them together — a header printed a word or two a line ("May 26," / "2019 May 27," /
    "2018")."""
    for back in range(1, min(HEADER_ABOVE, len(lines)) + 1):
        line = lines[-back]
        if not isinstance(line, str):
            return None
        found = _periods(line)
        if len(found) == width:
            return len(lines) - back, len(lines) - back + 1, line
        if cells(line)[1] and not found:
            return None  # a row of numbers: the run goes on above, not a header
    for skip in range(HEADER_ABOVE):  # label lines between the header and the run ("EPS Numerator––Basic")
        if skip:
            label = lines[len(lines) - skip] if skip <= len(lines) else None
            if not isinstance(label, str) or not label.strip() or cells(label)[1] or _periods(label):
                return None
        joined = _joined(lines[:len(lines) - skip], width)
        if joined is not None:
            return joined
    return None


def _joined(lines: list[str | Table], width: int) -> tuple[int, int, str] | None:
    """A header printed over the short lines ending ``lines`` (:func:`_header`), or None."""
    blank = False
    for back in range(1, min(HEADER_LINES, len(lines)) + 1):
        line = lines[-back]
        blank = blank or (isinstance(line, str) and not line.strip())
        if not isinstance(line, str) or len(line.split()) > HEADER_WORDS or cells(line)[1] or (blank and any(
                len(str(part).split()) > HEADER_SPLIT for part in lines[-back:])):
            return None  # a long line, one with a figure ("2021 500": a schedule's row), or a blank line between
            # lines of more than a word or two
        joined = " ".join(" ".join(str(part).split()) for part in lines[-back:])
        if back > 1 and line.strip() and len(_periods(joined)) == width:
            above = lines[-back - 1] if back < len(lines) else None
            if isinstance(above, str) and _DAY.match(above) and _YEAR.match(joined.split()[0]):  # "May 26," over
                return len(lines) - back - 1, len(lines), f"{' '.join(above.split())} {joined}"  # its date
            return len(lines) - back, len(lines), joined
    return None


def _continued(lines: list[str | Table], width: int) -> int | None:
    """The index of a table of ``width`` value columns a run continues: the one just above it, past at most
    :data:`HEADER_ABOVE` label lines ("Other income (expense)", "Current liabilities:")."""
    for back in range(1, min(HEADER_ABOVE + 1, len(lines)) + 1):
        line = lines[-back]
        if not isinstance(line, str):
            return len(lines) - back if len(line[0]) == width + 1 else None
        if len(cells(line)[1]) >= 2 or len(line.split()) > LABEL_WORDS or line.rstrip().endswith(".") or \
                len(_periods(line)) >= 2:
            return None  # another run's row, prose, or another table's header
    return None


def unjammed(text: str) -> str:
    """``text`` with a line that holds several statement rows one after another split into them: pdfium writes
    some filings' statements a few rows to a line (General Mills' 2022 cash flow statement: "Purchases of common
    stock for treasury (876.8) (301.4) (3.4) Dividends paid (1,244.5) (1,246.4) (1,195.8) Distributions to ..."),
    where no row can be told from the next. A line is split after each run of two figures or more (or of years, a
    header's) followed by a word in capitals, and after a label line's colon before one, when at least two of the
    parts it makes are rows (a label and two figures or more): prose that names two figures before a capital word
    stays one line."""
    out = []
    for line in text.split("\n"):
        parts = _jammed(line) if "|" not in line else [line]
        out.append("\n".join(parts) if len(parts) > 1 and sum(_a_row(p) for p in parts) >= 2 else line)
    return "\n".join(out)


def _a_row(part: str) -> bool:
    """Whether a part of a jammed line is a statement row: a label, then two figures or more with digits, or three
    cells or more of which one has digits (a dash alone is an empty cell: "Gain on sale — — (373,445) —" is a row,
    "Note 4 —" of a sentence is none)."""
    label, values = cells(part)
    digits = sum(any(c.isdigit() for c in v) for v in values)
    return bool(label) and (digits >= 2 or (digits >= 1 and len(values) >= 3))


_JAM_WORDS = 40  # words of a label in a jammed row at most


def _jammed(line: str) -> list[str]:
    tokens = line.split()
    parts: list[str] = []
    start, run = 0, 0
    for i, token in enumerate(tokens):
        figure = token == "$" or bool(_NUMBER.match(token)) or bool(_YEAR.match(token))
        if not figure and token[:1].isupper() and (run >= 2 or (i > start and tokens[i - 1].endswith(":"))) \
                and i - start <= _JAM_WORDS + run:
            parts.append(" ".join(tokens[start:i]))
            start = i
        run = run + (token != "$") if figure else 0
    parts.append(" ".join(tokens[start:]))
    return parts if len(parts) > 1 else [line]


def numeric_rows(text: str) -> bool:
    """Whether the text holds :data:`MIN_ROWS` lines or more that read as statement rows (a label, then two
    numbers or more): a table pdfium already keeps row by row."""
    count = 0
    for line in text.split("\n"):
        label, values = cells(line)
        count += bool(label) and len(values) >= 2
        if count >= MIN_ROWS:
            return True
    return False


def tables_as_rows(text: str) -> str:
    """The page's text with each run of statement rows under a periods header written as a Markdown table (the
    header's own words before the periods as the first column's title); everything else as it was."""
    if not any(ch.isdigit() for ch in text):
        return text
    lines = text.split("\n")
    parsed = [cells(line) if "|" not in line else ("", []) for line in lines]
    out: list[str | Table] = []
    i = 0
    while i < len(lines):
        if len(parsed[i][1]) < 2:
            out.append(lines[i])
            i += 1
            continue
        j, gap = i, 0
        rows: list[int] = []
        while j < len(lines):
            lab, vals = parsed[j]
            short = len(lines[j].split()) <= LABEL_WORDS and not lines[j].rstrip().endswith(".")
            if len(vals) >= 2 and (lab or rows):
                rows.append(j)
                gap = 0
            elif not rows or len(_periods(lines[j])) >= 2:  # another table's header ends the run
                break
            elif vals and lab and short:  # a row of fewer figures ("Transaction-related gain, net (Note 4) 498"):
                pass  # one of the run, a label row of its table (below)
            elif not vals and lines[j].strip() and short and gap < MAX_LABEL_GAP:
                gap += 1  # a label line ("Current assets:")
            else:
                break
            j += 1
        while j > i and len(parsed[j - 1][1]) < 2:  # trailing label lines and short rows belong to what follows
            j -= 1
        if not rows:  # numbers without a label, outside a run: a line as it is
            out.append(lines[i])
            i += 1
            continue
        width = Counter(len(parsed[r][1]) for r in rows).most_common(1)[0][0]
        body = [_row(parsed[k], lines[k], width) for k in range(i, j)]
        above = _continued(out, width)
        if above is not None:  # the same statement after a label line or two: one table
            table = out[above]
            assert not isinstance(table, str)
            table += [_label_row(str(line), width) for line in out[above + 1:] if str(line).strip()]
            table += body
            del out[above + 1:]
            i = j
            continue
        found = _header(out, width) if len(rows) >= MIN_ROWS else None
        if found is None:
            out.extend(lines[i:j])
            i = j
            continue
        head, after, header_line = found
        periods = _periods(header_line)
        first = header_line
        for period in periods:
            first = first.replace(period, " ", 1)
        title = " ".join(first.split())
        previous = out[head - 1] if head else None
        if not title and isinstance(previous, str) and len(previous.split()) <= 6 and \
                len(cells(previous)[1]) < 2 and not _periods(previous):  # "Year Ended" above "2020 2019 2018"
            title = " ".join(previous.split())
            head -= 1
        between = [str(line) for line in out[after:] if str(line).strip()]
        made: Table = [[title, *periods]]
        made += [_label_row(line, width) for line in between]  # "ASSETS", "Current assets:"
        del out[head:]
        out.append(made + body)
        i = j
    return "\n".join(line if isinstance(line, str) else markdown_table(line) for line in out)


def _row(parsed: tuple[str, list[str]], line: str, width: int) -> list[str]:
    label, values = parsed
    if len(values) < width:  # fewer figures than columns: which column each is under, the text does not say
        return _label_row(line, width)
    values = values[-width:] if len(values) > width else values + [""] * (width - len(values))
    return [label, *values]


def _label_row(line: str, width: int) -> list[str]:
    """A line without figures inside a table ("Current assets:"): its words in the first column."""
    return [" ".join(line.split()), *[""] * width]


_PERIOD = re.compile(r"\b(?:FY\s?|fiscal\s+(?:year\s+)?)?((?:19|20)\d{2})\b|\b(Q[1-4])\b", re.I)


def periods_named(text: str) -> set[str]:
    """The years ("2020", from "FY2020", "fiscal year 2020", "May 31, 2020") and quarters ("Q2") ``text`` names."""
    return {(m.group(1) or m.group(2)).upper() for m in _PERIOD.finditer(text)}


@dataclass(frozen=True)
class Row:
    """A body row of a Markdown table with its table's header row (the first), cell by cell: ``cells[k]`` is under
    ``header[k]`` (the label's column first)."""

    header: tuple[str, ...]
    cells: tuple[str, ...]
    table: int = 0  # which table of the text read it is (two tables may print one header)

    @property
    def text(self) -> str:
        return "| " + " | ".join(self.cells) + " |"

    def periods(self, k: int) -> set[str]:
        """The periods the header of column ``k`` names (none past the header's end)."""
        return periods_named(self.header[k]) if k < len(self.header) else set()


@dataclass(frozen=True)
class Top:
    """Where the Markdown table holding a row begins: its first row's offset, the rows between, the lines above."""

    start: int  # where the table's first row (its header, when it has one) begins
    above: int  # rows above the row the walk started on
    title: tuple[str, ...]  # the lines right above the first row, in order (none blank, none a row)

    def first_row(self, text: str) -> str:
        end = text.find("\n", self.start)
        return text[self.start:end if end >= 0 else len(text)]


def _is_row(line: str, indented: bool) -> bool:
    return (line.lstrip() if indented else line).startswith("|")


def table_top(text: str, at: int, *, lines: int, rows: int = 400, indented: bool = True) -> Top | None:
    """The top of the Markdown table whose row holds offset ``at`` of ``text``: up its rows to the first, then up to
    ``lines`` lines right above that (a statement's title, company and units lines) — stopping at a blank line or
    another table's row. None where ``at`` is on no row, in a text of no lines (words joined by spaces: no row can be
    told), or more than ``rows`` rows down a table (its first row is not known). ``indented``: a row may start after
    spaces (else only at the line's start, as pagemind writes them). One walk, read by the head a
    passage carries (:func:`pagemind.retrieval.fragments.carried_head`) and the title a cited row is judged with
    (:mod:`pagemind.answering.support`), each with its own limits."""
    if "\n" not in text:
        return None
    begin = text.rfind("\n", 0, at) + 1
    end = text.find("\n", begin)
    if not _is_row(text[begin:end if end >= 0 else len(text)], indented):
        return None
    above = 0
    while begin > 0:
        up = text.rfind("\n", 0, begin - 1) + 1
        if not _is_row(text[up:begin - 1], indented):
            break
        if above >= rows:
            return None  # another row above the last one the walk may take
        begin, above = up, above + 1
    title: list[str] = []
    stop = begin - 1
    while stop > 0 and len(title) < lines:
        start = text.rfind("\n", 0, stop) + 1
        line = text[start:stop]
        if not line.strip() or _is_row(line, indented):
            break
        title.insert(0, line)
        stop = start - 1
    return Top(begin, above, tuple(title))


def table_rows(text: str, first: int = 0) -> Iterator[Row]:
    """The body rows of every Markdown table in ``text`` (a run of lines starting with "|"), each with its header
    row and its table's number (from ``first``, in order); the "| --- |" rule is no row. A table cut above its header
    (a passage starting mid-table) has its first row read as its header, as a reader would."""
    header: tuple[str, ...] | None = None
    table = first - 1
    for line in text.split("\n"):
        if not line.startswith("|"):
            header = None
            continue
        row = tuple(c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip().strip("|")))
        if header is None:
            header, table = row, table + 1
        elif not set(row) <= {"---", ""}:
            yield Row(header, row, table)


__all__ = ["Row", "Top", "cells", "numeric_rows", "periods_named", "table_rows", "table_top", "tables_as_rows",
           "unjammed"]
