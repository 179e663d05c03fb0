"""Amounts in text as numbers with their scale and unit: "$1,577 million", "$1.577 billion", "(1,577)", "30.8%",
"24.690", and a scale stated once for a whole table ("in millions, except per share data").

Two amounts are the same when one equals the other within the rounding of the less precise, after their scales
("$1,577 million" = "$1.577 billion" = "1577" in a table in millions), as long as that rounding moves the figure
no more than 5% (:data:`ROUNDED`: "1" is not 0.54, nor "$1 billion" $1.3 billion): what a reader of a filing
accepts as the same figure. A percent and its fraction are the same (30.8% = 0.308).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

SCALES = {"thousand": 1e3, "thousands": 1e3, "k": 1e3, "million": 1e6, "millions": 1e6, "mn": 1e6, "mm": 1e6,
          "m": 1e6, "billion": 1e9, "billions": 1e9, "bn": 1e9, "b": 1e9, "trillion": 1e12, "trillions": 1e12}
_AMOUNT = re.compile(
    r"(?P<open>\()?(?P<minus>[-−–])?(?:(?P<currency>[$€£¥])\s?)?(?P<digits>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?P<close>\))?\s?(?P<percent>%|percent\b)?(?:\s?(?P<scale>thousands?|millions?|billions?|trillions?|mn|bn|mm|"
    r"[kKmMbB])\b)?")
_TABLE_SCALE = re.compile(r"\bin\s+(thousands|millions|billions)\b", re.I)
_YEARISH = re.compile(r"^(?:19|20)\d{2}$")


@dataclass(frozen=True)
class Amount:
    """A number as written: its value (negative in parentheses or after a minus), the scale its words give
    (1 when none), whether it is a percent or carries a currency sign, and the decimals it is written to."""

    value: float
    scale: float = 1.0
    percent: bool = False
    currency: str = ""
    decimals: int = 0
    text: str = ""

    @property
    def scaled(self) -> float:
        return self.value * self.scale


def amounts(text: str, *, years: bool = False) -> list[Amount]:
    """Every amount in ``text`` in order; bare four-digit years ("2023") are left out unless ``years``."""
    return [a for _, a in placed(text, years=years)]


def placed(text: str, *, years: bool = False) -> list[tuple[int, Amount]]:
    """:func:`amounts` with where each starts in ``text``."""
    out: list[tuple[int, Amount]] = []
    for m in _AMOUNT.finditer(text):
        digits = m.group("digits")
        if not years and _YEARISH.match(digits) and not (m.group("currency") or m.group("percent") or m.group("scale")):
            continue
        before = text[m.start() - 1:m.start()] if m.start() else ""
        after = text[m.end():m.end() + 2]
        if before.isalpha() or before == "_" or (after[:1] == "-" and after[1:].isalpha()):  # "Q2", "FY2023", "10-K"
            continue
        value = float(digits.replace(",", ""))
        if m.group("minus") or (m.group("open") and m.group("close")):
            value = -value
        scale_word = (m.group("scale") or "").lower()
        if scale_word in ("m", "b", "k") and not m.group("currency"):  # "5 m" is metres as often as millions
            scale_word = ""
        out.append((m.start(), Amount(value, SCALES.get(scale_word, 1.0), bool(m.group("percent")),
                                      m.group("currency") or "", len(digits.split(".")[1]) if "." in digits else 0,
                                      m.group(0).strip())))
    return out


def table_scale(text: str) -> float:
    """The scale a table or statement states for its numbers ("(in millions, except per share data)"), else 1."""
    m = _TABLE_SCALE.search(text)
    return SCALES[m.group(1).lower()] if m else 1.0


# the units a question asks its figure in: "Answer in USD millions.", "(in USD billions)", "in thousands of dollars"
_UNITS_ASKED = re.compile(r"\bin\s+(?:USD\s+|US\$\s*|\$\s*|dollars\s+)?(thousands|millions|billions)\b", re.I)
_NEAR = 4000  # characters before a figure looked at for the scale its table or statement states
_BARE = re.compile(r"^[\s$]*(?:USD\s*)?(?P<figure>[^\s]+?)\s*(?:USD)?[\s.]*$", re.IGNORECASE)


def in_units_asked(answer: str, question: str, text: str) -> str | None:
    """A bare figure answered (``answer`` is one amount and nothing else: "302,578", "$ 1,577") restated in the units
    ``question`` asks for ("Answer in USD millions") where ``text`` writes that figure only under another stated
    scale ("(In thousands, except share data)" above it, within :data:`_NEAR` characters): "302.58 million (302,578 in
    thousands)": the words beside the figures are the text's own, so the support check reads the restatement as it
    reads the figure. None where nothing is to be restated: no units asked, an answer that is more
    than a figure or states its own scale, a figure the text does not write, or writes under several scales."""
    asked = _UNITS_ASKED.search(question)
    bare = _BARE.match(answer)
    if asked is None or bare is None:
        return None
    given = amounts(bare.group("figure"))
    if len(given) != 1 or given[0].scale != 1.0 or given[0].percent or given[0].text != bare.group("figure"):
        return None
    written = given[0].text.lstrip("$(").rstrip(")")
    if "," not in written and len(written.split(".")[0]) < 4:
        return None  # "302": a figure this short may be written anywhere
    scales = set()
    for m in re.finditer(rf"(?<![\d,.]){re.escape(written)}(?![\d,]|\.\d)", text):
        stated = list(_TABLE_SCALE.finditer(text, max(0, m.start() - _NEAR), m.start()))
        scales.add(stated[-1].group(1).lower() if stated else "")
    if len(scales) != 1 or "" in scales:
        return None
    found, wanted = scales.pop(), asked.group(1).lower()
    if found == wanted:
        return None
    value = abs(given[0].value) * SCALES[found] / SCALES[wanted] * (-1 if given[0].value < 0 else 1)
    size = abs(value)
    figure = f"{value:,.0f}" if size >= 1000 else f"{value:,.2f}" if size >= 1 else f"{value:.3g}"
    return f"{figure} {wanted.rstrip('s')} ({written} in {found})"


RELATIVE = 0.005  # amounts within half a percent of each other are one figure rounded another way
ROUNDED = 0.05  # rounding that moves a figure further than this is another figure ("1" is not 0.54, nor "3" 2.7)


def same_amount(a: Amount, b: Amount, relative: float = RELATIVE) -> bool:
    """Whether two amounts are one figure: equal within the rounding of the less precise (and within
    :data:`ROUNDED` of each other) after their scales, with
    a scale one of them does not state supplied by a power of a thousand ("24.690" billion = "24,690" in a table in
    millions), and a percent equal to its fraction; the sign must agree unless one is in parentheses."""

    def unit(amount: Amount) -> float:  # what one step of its last written digit is worth
        return 10.0 ** -amount.decimals * amount.scale / (100 if amount.percent else 1)

    x, y = a.scaled / (100 if a.percent else 1), b.scaled / (100 if b.percent else 1)
    if x == y:
        return True
    if x == 0 or y == 0:
        return False
    if (x < 0) != (y < 0) and not (a.text.startswith("(") or b.text.startswith("(")):
        return False
    x, y = abs(x), abs(y)
    ratio = math.log10(x / y)
    shift = round(ratio / 3) * 3 if (a.scale == 1.0 or b.scale == 1.0) and not (a.percent or b.percent) else 0
    y, step_b = y * 10.0 ** shift, unit(b) * 10.0 ** shift
    tolerance = max(unit(a), step_b) / 2
    close = abs(x - y) / max(x, y)
    return (abs(x - y) <= tolerance * (1 + 1e-9) and close <= ROUNDED) or close <= relative


GRADED = 0.002  # a grader's "the same figure": FinanceBench's hand grades took 93.6 for 93.86 as another figure


def matches(answer: str, gold: str, relative: float = GRADED) -> bool | None:
    """Whether ``answer`` states the gold's figure: its first amount (a gold answer of several numbers: each) found
    among the answer's amounts (:func:`same_amount`, within ``relative`` of it beside the rounding rule); a percent
    also as a bare number of percentage points ("30.80" for "30.8%", asked "in units of percents") or as its
    fraction; None when the gold has no number (not a numeric question)."""
    from dataclasses import replace

    wanted = amounts(gold)
    if not wanted:
        return None
    given = amounts(answer)
    if wanted[0].percent:
        given += [replace(g, percent=True) for g in given if not g.percent and g.scale == 1.0]
    return all(any(same_amount(w, g, relative) for g in given) for w in wanted[:1])


__all__ = ["GRADED", "SCALES", "Amount", "amounts", "in_units_asked", "matches", "same_amount", "table_scale"]
