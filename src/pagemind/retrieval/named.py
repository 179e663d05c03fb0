"""Sections a question names: "the cash flow statement", "the balance sheet", "Item 7", "MD&A", "risk factors",
an adjusted (non-GAAP) figure's reconciliation.

A filing's question usually says where its answer is printed ("... shown within the income statement and the cash
flow statement"), and the words it repeats are on every page of MD&A too: ranking alone lands there. A passage
inside a section whose title is the one named comes first (in its own rank order), then the rest as ranked — the
reader looks where the question points before it looks where the words are.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_CASH = r"cash\s+flows?"
_BALANCE = r"balance\s+sheets?|financial\s+position"
_INCOME = (r"statements?\s+of\s+(?:consolidated\s+)?(?:income|operations|earnings)(?!\s+and\s+comprehensive)"
           r"(?![^›]*comprehensive)")
# what a question says -> what the section's title says
NAMED: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = tuple(
    (re.compile(asked, re.I), re.compile(title, re.I)) for asked, title in (
        (r"cash[ -]flows?\s+statements?|statements?\s+of\s+(?:consolidated\s+)?cash\s+flows?", _CASH),
        (r"balance\s+sheets?|statements?\s+of\s+(?:consolidated\s+)?financial\s+position", _BALANCE),
        (r"income\s+statements?|\bP&L\b|profit\s+and\s+loss|statements?\s+of\s+(?:consolidated\s+)?"
         r"(?:income|operations|earnings)", _INCOME),
        (r"statements?\s+of\s+(?:consolidated\s+)?comprehensive", r"comprehensive\s+(?:income|earnings|loss)"),
        (r"statements?\s+of\s+(?:changes\s+in\s+)?(?:shareholders|stockholders|shareowners)['’]?\s+equity|"
         r"equity\s+statement", r"statements?\s+of\s+(?:changes\s+in\s+)?[\w'’ ]*equity"),
        (r"\bMD&A\b|management['’]s\s+discussion", r"item\s+7\b(?!A)|management['’]s\s+discussion"),
        (r"risk\s+factors", r"item\s+1A\b|risk\s+factors"),
        # an adjusted or non-GAAP figure is printed where the release reconciles it, not in the statements
        (r"\bnon[- ]?GAAP\b|\badjusted\s+(?:non[- ]?GAAP\s+)?(?:EBITDA|EBIT|EPS|earnings|operating|net|free\s+cash)",
         r"non[- ]?GAAP|reconciliation"),
    ))
# the statement a figure is read from, where the question names the figure and not the statement
FIGURES: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = tuple(
    (re.compile(asked, re.I), re.compile(title, re.I)) for asked, title in (
        (r"\b(?:capex|capital\s+expenditures?|free\s+cash\s+flow|FCF|depreciation\s+and\s+amortization|D&A|"
         r"dividends?\s+paid|cash\s+from\s+operations|operating\s+cash\s+flow|EBITDA)\b", _CASH),
        (r"\b(?:quick\s+ratio|current\s+ratio|working\s+capital|inventor(?:y|ies)|accounts\s+(?:payable|receivable)|"
         r"PP(?:&|N)?E|property,?\s+plant|total\s+assets|liabilities|debt|days\s+(?:payable|sales|inventory)|DPO|DSO|DIO|"
         r"return\s+on\s+assets|ROA|asset\s+turnover)\b", _BALANCE),
        (r"\b(?:gross\s+(?:margin|profit)|operating\s+(?:margin|income)|net\s+(?:income|profit|earnings)|revenues?|"
         r"net\s+sales|COGS|cost\s+of\s+(?:goods|sales|revenue)|EPS|earnings\s+per\s+share|EBIT|"
         r"interest\s+expense|effective\s+tax\s+rate)\b", _INCOME),
    ))
_ITEM = re.compile(r"\bItem\s+(\d{1,2}[A-C]?)\b", re.I)


def named(question: str) -> list[re.Pattern[str]]:
    """The section titles a question points to: the statements or Items it names, else the statements the
    figures it asks for are read from ("capex" the cash flow statement, "quick ratio" the balance sheet)."""
    out = [title for asked, title in NAMED if asked.search(question)]
    out += [re.compile(rf"\bitem\s+{re.escape(m.group(1))}\b", re.I) for m in _ITEM.finditer(question)]
    return out or [title for asked, title in FIGURES if asked.search(question)]


# a statement of a part of the group (a guarantor note's condensed consolidating statements, the parent company's
# own): "the balance sheet" of a question is the consolidated one, unless the question names such a part
_PART = re.compile(r"condensed\s+consolidating|guarantor|parent\s+company|registrant\s+only|"
                   r"condensed\s+financial\s+information", re.I)


def named_first(order: Sequence[int], labels: Sequence[Sequence[str]], question: str) -> list[int]:
    """``order`` (passage indices, best first) with the passages one of whose section labels (the sections it is
    in or that start inside it) matches a title the question names moved to the front, in their rank order;
    ``order`` as it is when the question names none or no passage lies in one. A passage in a statement of a part
    of the group (Kraft Heinz's "Condensed Consolidating Balance Sheets" of its guarantor note) is not the statement
    a question names, unless the question names such a part."""
    if not _PART.search(question):
        labels = [() if label and _PART.search(label[0]) else label for label in labels]
    return first_in(order, labels, named(question))


def first_in(order: Sequence[int], labels: Sequence[Sequence[str]], wanted: Sequence[re.Pattern[str]]) -> list[int]:
    """``order`` with the passages whose section (``labels[i][0]``) matches one of ``wanted`` first, then those
    where one starts (``labels[i][1:]``): each wanted section's best passage before any's second, in rank order;
    the rest after them as ranked. ``order`` as it is when none matches."""
    if not wanted:
        return list(order)
    groups = [[i for i in order if labels[i] and t.search(labels[i][0])] +  # passages inside it, then those
              [i for i in order if any(t.search(label) for label in labels[i][1:]) and  # where it starts
               not (labels[i] and t.search(labels[i][0]))] for t in wanted]
    inside: list[int] = []
    for rank in range(max(len(g) for g in groups)):  # each named section's best passage first, then its next...
        inside += [g[rank] for g in groups if rank < len(g) and g[rank] not in inside]
    if not inside:
        return list(order)
    chosen = set(inside)
    return inside + [i for i in order if i not in chosen]


__all__ = ["FIGURES", "NAMED", "first_in", "named", "named_first"]
