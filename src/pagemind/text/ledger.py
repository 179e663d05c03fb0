"""The lines of a financial statement by the many names a question, a filing's row or a worked figure gives them:
"COGS", "cost of sales" and ``co_gs_2019`` are one line; "capex", "capital expenditures" and "Purchases of property
and equipment" another.

Read where a figure is worked out (:mod:`pagemind.answering.compute`): a question that defines its metric names the
lines it is computed from ("DPO is defined as: 365 * (average accounts payable) / (COGS + change in inventory)"),
and a working whose figures are none of one of those lines has taken the wrong rows — the default model averaged
revenue as "average PP&E" and COGS as "average inventory".
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Line:
    """One line of the statements: what pagemind calls it and the pattern of its names."""

    name: str
    pattern: re.Pattern[str]


def _line(name: str, pattern: str) -> Line:
    return Line(name, re.compile(rf"\b(?:{pattern})\b", re.IGNORECASE))


_PPE = r"pp\s*&?\s*e|property,?\s+plant|property\s+and\s+equipment|fixed\s+assets?"
LINES: tuple[Line, ...] = (
    _line("revenue", r"revenues?|net\s+sales|total\s+sales|sales"),
    _line("cost of sales", r"cogs|co\s+gs|cost\s+of\s+(?:goods\s+sold|sales|revenues?|products?\s+sold)"),
    _line("gross profit", r"gross\s+profit"),
    _line("operating income", r"operating\s+(?:income|profit|earnings)|income\s+from\s+operations"),
    _line("net income", r"net\s+(?:income|earnings|profit)"),
    _line("interest expense", r"interest\s+expense"),
    _line("depreciation and amortization", r"depreciation|amortization|d\s*&\s*a"),
    _line("capital expenditure", r"capex|capital\s+expenditures?|(?:purchases?|payments?|additions?|acquisitions?)"
          rf"\s+(?:of|for|to)\s+(?:{_PPE}|property|capital\s+assets)"),
    _line("operating cash flow", r"(?:cash|cash\s+flows?)\s+(?:from|provided\s+by|generated\s+by|used\s+in)\s+"
          r"operat\w*|operating\s+cash\s+flows?|cfo"),
    _line("dividends", r"dividends?"),
    _line("inventory", r"inventor(?:y|ies)"),
    _line("accounts payable", r"accounts\s+payable|trade\s+payables?|payables?"),
    _line("accounts receivable", r"accounts\s+receivable|trade\s+receivables?|receivables?"),
    _line("property, plant and equipment", _PPE),
    _line("total assets", r"total\s+assets"),
    _line("current assets", r"current\s+assets"),
    _line("current liabilities", r"current\s+liabilities"),
)


def _words(text: str) -> str:
    """A name as words: ``FY2017_capex`` -> "FY2017 capex", ``costOfSales`` -> "cost Of Sales"."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", text).replace("_", " ")


def places(text: str) -> list[tuple[int, int, str]]:
    """Where ``text`` names a line: (start, end, the line's name), in order; where one name lies inside another's
    ("sales" in "cost of sales", "property and equipment" in "purchases of property and equipment"), only the
    longer counts. Offsets are ``text``'s own (a name's underscores read as spaces; a camelCase name's are 0)."""
    words = _words(text)
    found = [(m.start(), m.end(), line.name) for line in LINES for m in line.pattern.finditer(words)]
    kept = sorted((start, end, name) for start, end, name in found
                  if not any(s <= start and end <= e and (e - s) > (end - start) for s, e, _ in found))
    if len(words) != len(text):  # a camelCase name split into words: its offsets are not the text's
        return [(0, 0, name) for _, _, name in kept]
    return kept


def lines_named(text: str) -> set[str]:
    """The lines ``text`` names (a question, a row's label, a figure's name and note), each once (:func:`places`)."""
    return {name for _, _, name in places(text)}


def named_by(line: str, text: str) -> bool:
    """Whether ``text`` names the statement line called ``line`` (one of :data:`LINES`' names)."""
    return line in lines_named(text)


__all__ = ["LINES", "Line", "lines_named", "named_by", "places"]
