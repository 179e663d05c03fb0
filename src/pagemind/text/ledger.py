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
    # a name's words may be joined by spaces or underscores (``net_sales_2022``), and a name ends at any non-letter:
    # ``cogs2019`` names cost of sales, "salesperson" does not name revenue
    joined = pattern.replace(r"\s+", r"[\s_]+").replace(r"\s*", r"[\s_]*")
    return Line(name, re.compile(rf"(?<![A-Za-z])(?:{joined})(?![A-Za-z])", re.IGNORECASE))


_PPE = (r"pp\s*(?:&|and|n)?\s*e|property,?\s+plant(?:,?\s+(?:and\s+)?equipment)?|property\s+and\s+equipment|"
        r"fixed\s+assets?|land,?\s+buildings,?\s+(?:and\s+)?equipment")
LINES: tuple[Line, ...] = tuple(_line(name, pattern) for name, pattern in (
    ("revenue", r"revenues?|net\s+sales|total\s+sales|(?<!days[\s_])sales"),  # "days sales in inventory": no
    ("cost of sales", r"cogs|co\s+gs|costs?\s+of\s+(?:goods(?:\s+sold)?|(?:net\s+)?sales|(?:net\s+)?revenues?|"
     r"products?(?:\s+sold)?|services|merchandise)|merchandise\s+costs?"),
    ("gross profit", r"gross\s+profit"),
    ("operating income", r"op(?:erating)?\s+(?:income|profit|earnings)|(?:income|earnings)\s+from\s+operations|"
     r"ebit(?!da)|earnings\s+before\s+interest\s+and\s+(?:income\s+)?taxes"),
    ("net income", r"net\s+(?:income|earnings|profit|loss|\(loss\)\s+income|income\s+\(loss\))"),
    ("interest expense", r"interest\s+(?:and\s+debt\s+)?expense"),
    ("depreciation and amortization", r"depreciation|amortization|d\s*(?:&|and)?\s*a"),
    ("capital expenditure", r"capex|capital\s+(?:expenditures?|spending)|"
     rf"(?:purchases?|payments?|additions?|acquisitions?|expenditures?)\s+(?:of|for|to)\s+"
     rf"(?:{_PPE}|property|capital\s+assets)|(?:{_PPE})\s+additions"),  # "Property, plant and equipment additions"
    ("operating cash flow", r"(?:cash|cash\s+flows?)\s+(?:from|provided\s+by|generated\s+by|used\s+in)\s+"
     r"operat\w*|cash\s+from\s+ops|operating\s+cash\s+flows?|cfo|ocf"),
    ("dividends", r"dividends?"),
    ("inventory", r"inventor(?:y|ies)|inv"),
    # "taxes payable" and "notes receivable" are other lines: a bare payable or receivable only in the plural
    ("accounts payable", r"accounts\s+payable|trade\s+(?:and\s+other\s+)?payables?|payables|ap"),
    ("accounts receivable", r"accounts\s+receivable|trade\s+(?:and\s+other\s+)?receivables?|receivables|ar"),
    ("property, plant and equipment", _PPE),
    ("total assets", r"total\s+assets"),
    ("current assets", r"current\s+assets"),
    ("current liabilities", r"current\s+liab\w*"),
))


# lines whose name says what way the money goes (spent, paid, charged): a statement may write them in parentheses,
# "Capital expenditures (116)", and "capex_2019" in a working means the 116 spent, as "cogs" in "revenue - cogs" does
SPENT = frozenset({"cost of sales", "interest expense", "depreciation and amortization", "capital expenditure",
                   "dividends"})


# lines that are balances at a date (a level, never negative): a cash flow statement's "Inventories (125)" is a change
BALANCES = frozenset({"inventory", "accounts payable", "accounts receivable", "property, plant and equipment",
                      "total assets", "current assets", "current liabilities"})


def places(text: str) -> list[tuple[int, int, str]]:
    """Where ``text`` names a line: (start, end, the line's name), in order; where one name lies inside another's
    ("sales" in "cost of sales", "property and equipment" in "purchases of property and equipment"), only the
    longer counts."""
    found = [(m.start(), m.end(), line.name) for line in LINES for m in line.pattern.finditer(text)]
    return sorted((start, end, name) for start, end, name in found
                  if not any(s <= start and end <= e and (e - s) > (end - start) for s, e, _ in found))


def lines_named(text: str) -> set[str]:
    """The lines ``text`` names (a question, a row's label, a figure's name and note), each once (:func:`places`)."""
    return {name for _, _, name in places(text)}


# a metric names the lines its textbook definition is computed from, however the question words it: every margin
# (gross, operating, net profit, EBITDA) is a share of revenue — Best Buy's "average net profit margin (as a %)" was
# worked out as the average net earnings — whatever the question defines; and where the question does not define its
# metric, an inventory turnover is of cost of sales (Johnson & Johnson's was worked out as this year's inventory over
# last year's), an interest coverage of operating income (MGM's as revenue over interest), a fixed asset turnover of
# revenue and PP&E (Activision's was the model's own figure)
_MARGIN = re.compile(r"(?<![A-Za-z])margins?(?![A-Za-z])", re.IGNORECASE)
_TEXTBOOK: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = tuple(
    (re.compile(rf"(?<![A-Za-z])(?:{pattern})(?![A-Za-z])", re.IGNORECASE), lines) for pattern, lines in (
        (r"inventory\s+turnover|days\s+(?:of\s+)?inventory(?:\s+outstanding)?|dio", ("cost of sales", "inventory")),
        (r"days\s+(?:of\s+)?payables?(?:\s+outstanding)?|dpo|payables?\s+turnover",
         ("cost of sales", "accounts payable")),
        (r"days\s+(?:of\s+)?sales\s+(?:outstanding|in\s+(?:accounts\s+)?receivables?)|dso|receivables?\s+turnover",
         ("revenue", "accounts receivable")),
        (r"fixed[\s-]+assets?\s+turnover", ("revenue", "property, plant and equipment")),
        (r"(?<!fixed[\s-])assets?\s+turnover", ("revenue", "total assets")),
        (r"interest\s+coverage", ("operating income", "interest expense")),
        (r"return\s+on\s+(?:average\s+)?(?:total\s+)?assets|roa", ("net income", "total assets")),
        (r"current\s+ratio|(?<!in\s)working\s+capital", ("current assets", "current liabilities")),
        (r"quick\s+ratio", ("current liabilities",)),
        (r"(?:dividend\s+)?(?:payout|retention)\s+ratio", ("net income", "dividends")),
    ))


def lines_implied(text: str, defined: bool = False) -> set[str]:
    """The lines the metrics ``text`` names are computed from by their textbook definitions (a margin: revenue; an
    inventory turnover: cost of sales and inventory), beside those it names; where the question ``defined`` its
    metric, only a margin's revenue (its definition names the rest: an interest coverage defined on EBITDA is)."""
    implied = {"revenue"} if _MARGIN.search(text) else set()
    if not defined:
        implied |= {line for pattern, lines in _TEXTBOOK if pattern.search(text) for line in lines}
    return implied


__all__ = ["BALANCES", "LINES", "SPENT", "Line", "lines_implied", "lines_named", "places"]
