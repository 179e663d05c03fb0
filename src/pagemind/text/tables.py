"""Unruled tables as rows: a financial statement's lines ("Net earnings $ 2,181.2 $ 1,752.7 $ 2,131.0") written as
a Markdown table under their column headers ("Fiscal Year 2020 2019 2018"), so each number keeps its row and its
period when the text is cut into passages.

pdfium draws a statement's row on one line; what it does not say is which column a number is in. A run of such
rows (a label, then two or more numbers, "$" and "%" joined to them) under a line naming as many periods (years,
"May 31, 2020", "Q2 2023") becomes one table: its header the periods, one row per line, a label line inside the
run ("Current assets:") a row of its own. The unit line ("In Millions", "(in millions, except per share data)") and
the title above stay as they are, above the table. A run without such a header is left as lines: a number is never
put under a period the page does not give it.
"""

from __future__ import annotations

import re
from collections import Counter

from .formats.common import markdown_table

_NUMBER = re.compile(r"^\(?-?\$?\(?[0-9][0-9,]*(?:\.[0-9]+)?\)?%?\)?$|^[—–-]+%?$|^\(?[0-9]*\.[0-9]+\)?%?$")
_YEAR = re.compile(r"^(?:19|20)[0-9]{2}[,:)]?$")
_QUARTER = re.compile(r"^(?:Q[1-4]|FY|H[12])[ ']?(?:19|20)?[0-9]{2}$", re.I)
MIN_ROWS = 3  # rows a run has at least to be a table
MAX_LABEL_GAP = 2  # label-only lines ("Current assets:") a run may hold in a row
HEADER_ABOVE = 4  # lines above a run looked at for its column header


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
        elif _NUMBER.match(token) and not _YEAR.match(token):  # a bare year is a header's, or a label's
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


def _header(lines: list[str], width: int) -> int | None:
    """The index of the header line above a run: the nearest of :data:`HEADER_ABOVE` lines naming ``width``
    periods (and nothing else that is a number)."""
    for back in range(1, min(HEADER_ABOVE, len(lines)) + 1):
        line = lines[-back]
        found = _periods(line)
        if len(found) == width:
            return len(lines) - back
        if cells(line)[1] and not found:
            return None  # a row of numbers: the run goes on above, not a header
    return None


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
    out: list[str] = []
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
            if len(vals) >= 2 and (lab or rows):
                rows.append(j)
                gap = 0
            elif not vals and lines[j].strip() and len(lines[j].split()) <= 8 and gap < MAX_LABEL_GAP and rows:
                gap += 1
            else:
                break
            j += 1
        while j > i and not (parsed[j - 1][1]):  # trailing label lines belong to what follows
            j -= 1
        if not rows:  # numbers without a label, outside a run: a line as it is
            out.append(lines[i])
            i += 1
            continue
        width = Counter(len(parsed[r][1]) for r in rows).most_common(1)[0][0]
        head = _header(out, width) if len(rows) >= MIN_ROWS else None
        if head is None:
            out.extend(lines[i:j])
            i = j
            continue
        header_line = out[head]
        periods = _periods(header_line)
        first = header_line
        for period in periods:
            first = first.replace(period, " ", 1)
        title = " ".join(first.split())
        if not title and head and len(out[head - 1].split()) <= 6 and len(cells(out[head - 1])[1]) < 2 \
                and not _periods(out[head - 1]):  # "Year Ended December 31," above "2020 2019 2018"
            title = " ".join(out[head - 1].split())
            head -= 1
        between = [line for line in out[head + 1:] if line.strip() and line.strip() != header_line.strip()
                   and " ".join(line.split()) != title]
        table = [[title, *periods]]
        table += [[" ".join(line.split()), *[""] * width] for line in between]  # "ASSETS", "Current assets:"
        for k in range(i, j):
            lab, vals = parsed[k]
            vals = vals[-width:] if len(vals) > width else vals + [""] * (width - len(vals))
            table.append([lab if vals != [""] * width else lines[k].strip(), *vals])
        del out[head:]
        out.append(markdown_table(table))
        i = j
    return "\n".join(out)


__all__ = ["cells", "numeric_rows", "tables_as_rows"]
