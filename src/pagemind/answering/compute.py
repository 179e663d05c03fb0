"""Figures worked out, not guessed: the model names the figures and the formula, pagemind does the arithmetic.

A question that asks for a computed figure — a ratio, a margin, a turnover, a growth, "calculate ..." (:func:`asked`)
— is where a small model most often reads the right page and writes the wrong number. With ``compute`` on (the
default, ``auto``), for a ratio, margin, average or a figure the question defines, and for any other computed
figure whose draft is not read off the text (:func:`read_off`), one more call after the answer shows the model what
it read and asks for the working as a few lines of Python arithmetic (``compute.work`` in ``prompts/compute.yaml``)::

    net_earnings_2022 = 2707.3  # Net earnings attributable to the company, fiscal 2022
    dividends_paid_2022 = 1244.5  # Dividends paid, fiscal 2022
    answer = (net_earnings_2022 - dividends_paid_2022) / net_earnings_2022

:func:`parse` reads only assignments of numbers, names, ``+ - * /``, parentheses, ``round`` and ``abs`` (no Python
is run), checks that every figure it assigns is written in what was read (or in the question) as the text writes it,
within its rounding and never rescaled (:func:`_in_text`), and re-asks through :func:`~pagemind.llm.decide.decide`
when one is not; then pagemind computes the result. The answer shows the result and its working
(:meth:`Computation.text`); the support check then judges the figures the model took, not a result no text can hold
(:meth:`Computation.claim`). When no reply parses, the model's own answer stands and the fallback is recorded.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import TYPE_CHECKING

from ..llm.base import LLMRequest, Message
from ..text.ledger import BALANCES
from ..text.numbers import ROUNDED, Amount, amounts, placed
from ..text.tables import Row
from ..text.words import AUXILIARY, LEAD_IN, asking

if TYPE_CHECKING:
    from ..llm.client import LLM
    from .evidence import Evidence
    from .finish import Context
    from .formula import Change, Defined
    from .options import AnswerOptions
    from .question import Question

MAX_TOKENS = 400  # a dozen lines of working
MAX_LINES = 16  # of the working its answer uses
MAX_READ = 64  # assignments read from a reply (those its answer does not use are left out)
MAX_CHARS = 400  # of one line: a longer one is no working a reader checks (and deep nesting is refused before it)
RESULT = "answer"  # the working's result is named this (or answer_<label> for several)
CONSTANTS = frozenset({1.0, 2.0, 4.0, 12.0, 100.0, 360.0, 365.0, 1000.0, 1e6, 1e9})  # days, months, percent, scales
_WORKED = (r"calculat\w*|comput\w*|ratios?|average|turnover|cagr|margins?|days (?:sales|inventory|payables?)|coverage|"
           r"return on (?:assets|equity|capital)|proportion")  # figures no filing states as such
_STATED = (r"growth|grew|change in|percent(?:age)? change|yoy|year[- ]over[- ]year|per share|effective tax rate|"
           r"free cash flow|fcf|ebitda\w*|cash conversion|ro[aei]c?|as a (?:share|percent(?:age)?) of")  # or may be
_ASKED = re.compile(rf"\b(?:{_WORKED}|{_STATED})\b", re.IGNORECASE)
_DERIVED = re.compile(rf"\b(?:{_WORKED}|defined as)\b", re.IGNORECASE)  # worked out whatever the draft says
_NOT_A_FIGURE = re.compile(  # a yes/no question, or one asking for a name, a place, a time or a reason
    LEAD_IN + rf"(?:{AUXILIARY}|(?:which|who|whom|whose|where|when|why|what (?:drove|drives|caused|explains))\b)",
    re.IGNORECASE)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,120}$")
_OPERATORS: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
FUNCTIONS = frozenset({"round", "abs"})  # what a working may call beside + - * /; print(...) lines are skipped


def _is_result(name: str) -> bool:
    return name == RESULT or name.startswith(RESULT + "_")


def asked(question: str) -> bool:
    """Whether ``question`` asks for a figure to be worked out (a ratio, margin, turnover, growth, "calculate"): not
    a yes/no question, nor one asking which, who, where, when, why or what drove a change (after a leading "For
    Pfizer, ...") — its answer is not a figure. A question that
    defines its metric after a preamble ("... Here's the question: what is ...") is read from its first sentence
    that ends in a question mark; a question pagemind reads a formula from (:func:`~pagemind.answering.formula.defined`)
    asks for one whatever its words — a yes/no question whether a metric rose or fell among them ("Does AMCOR have an
    improving gross margin profile as of FY2023?": the margin's change)."""
    from .formula import defined

    if _ASKED.search(question) is None:
        return defined(question) is not None  # "net working capital is defined as: …": a formula pagemind reads
    if _NOT_A_FIGURE.match(asking(question)):  # unless it asks whether a metric rose: its change is worked out
        found = defined(question)
        return found is not None and found.change is not None
    return True


@dataclass(frozen=True)
class Line:
    """One line of the working: a name, what it is (a figure from the text, or a formula of the lines before), its
    value, and the model's note of where it comes from ("Net revenue, fiscal 2023")."""

    name: str
    expression: str  # as written ("24690", "(revenue_2023 - cost_of_sales_2023) / revenue_2023")
    value: float
    note: str = ""
    figure: bool = False  # a number taken from the text (checked there), not a formula
    taken: tuple[float, ...] = ()  # the numbers from the text its formula writes out ("365 * 1559.3 / 11108.4")
    uses: frozenset[str] = frozenset()  # the names of earlier lines its formula reads
    moved: str = ""  # where pagemind read a figure the model copied from another year's column (:func:`_column_of`)

    @property
    def label(self) -> str:
        return self.name.replace("_", " ")


@dataclass(frozen=True)
class Computation:
    """The working of a computed answer: its lines in order (the last ones named ``answer``) and the model's own
    answer it replaces."""

    lines: tuple[Line, ...]
    reply: str = ""
    change: Change | None = None  # a question whether (or how much) a metric changed: the result is its change

    @property
    def results(self) -> tuple[Line, ...]:
        """The last line named ``answer`` (``answer = round(answer, 2)`` after ``answer = ...``), else each
        ``answer_<label>`` line (several figures asked for)."""
        last = [x for x in self.lines if x.name == RESULT][-1:]
        return tuple(last) or tuple(x for x in self.lines if _is_result(x.name))

    @property
    def figures(self) -> tuple[Line, ...]:
        """The lines that take numbers from the text: a figure's own line, or a formula writing them out."""
        return tuple(x for x in self.lines if x.figure or x.taken)

    def head(self) -> str:
        """What the answer states: its result(s) alone ("3,215.4"; "gross margin: 0.41; net margin: 0.12"); for a
        question whether a metric rose, the verdict and the metric's two values ("No: gross margin 19.39% in 2022,
        18.54% in 2023"), and where it asks how much, the two values and the change ("effective tax rate 20.20% in
        2021, 22.90% in 2022: up 2.70 points")."""
        results = self.results
        change = self.change
        values = {x.name: x.value for x in self.lines}
        if change is not None and len(results) == 1 and change.earlier == change.later and change.earlier in values:
            value = values[change.earlier]  # a question of one year's sign: "Yes: working capital 2,023 in 2022"
            return f"{change.verdict(value)}: {change.metric} {shown(value)}{change.unit} in {change.years[1]}"
        if change is not None and len(results) == 1 and change.earlier in values and change.later in values:
            pair = ", ".join(f"{shown(values[name])}{change.unit} in {year}"
                             for name, year in zip((change.earlier, change.later), change.years, strict=True))
            moved = results[0].value
            if change.rise:
                return f"{change.verdict(moved)}: {change.metric} {pair}"
            return f"{change.metric} {pair}: " + ("unchanged" if moved == 0 else f"{'up' if moved > 0 else 'down'} "
                                                  f"{shown(abs(moved))}{' points' if change.unit == '%' else ''}")
        return (shown(results[0].value) if len(results) == 1
                else "; ".join(f"{x.name.removeprefix(RESULT + '_').replace('_', ' ')}: {shown(x.value)}"
                               for x in results))

    def text(self) -> str:
        """The answer as shown: the result(s), then how pagemind computed them and from which figures."""
        results = self.results
        lines = [f"{self.head()} (computed by pagemind from the figures read)"]
        lines += [f"- {x.name} = {('-' if x.value < 0 else '') + _written(x.value) if x.figure else x.expression}"
                  + ("" if x.figure else f" = {shown(x.value)}")
                  + (f" ({x.note})" if x.note else "") + (f" [{x.moved}]" if x.moved else "")
                  for x in self.lines if x not in results]
        lines += [f"- {x.name} = {x.expression} = {shown(x.value)}" + (f" [{x.moved}]" if x.moved else "")
                  for x in results]
        return "\n".join(lines)

    def claims(self) -> tuple[str, ...]:
        """What the support check judges, one claim a figure taken from the text (a figure line's, or each figure a
        formula writes out), with its note (the arithmetic on them is pagemind's own, not a claim about the text).
        Years are left out of the notes: a statement's row holds the figure, its header the year (the check of the
        period a figure is read from stands apart). Each is cited at its own sentence or row
        (:func:`~pagemind.answering.evidence.supporting_each`)."""
        return tuple(claim for _, claim in self._claimed())

    def claim(self) -> str:
        """The :meth:`claims` as one text."""
        return " ".join(self.claims())

    def _claimed(self) -> list[tuple[Line, str]]:
        """Each figure taken with its claim: a figure line's with its note or name; a figure a formula writes out
        alone (the formula's name is its result's — "answer", "gross_profit" — not the figure's row)."""
        return [(x, f"{_undated(x.note or x.label)}: {_written(x.value)}.") if x.figure else (x, f"{_written(v)}.")
                for x in self.figures for v in ((x.value,) if x.figure else tuple(dict.fromkeys(x.taken)))]

    def misplaced(self, quotes: Sequence[str | None]) -> list[str]:
        """The :meth:`claims` (``quotes``: the sentence or row cited for each, None where none was found) whose
        figure is named (or noted) for a statement line, and cited where the text names another line, or names none
        and shares no word with the figure's name and note: Corning's "cogs_2020 = 682" read from "financing
        activities increased by $682 million", Best Buy's "revenue_2015 = 48,186" from a "| Total |" row. A figure
        named for no line ("dpo_2020", "x") is not judged so, nor one a formula writes out, nor one cited at a row of
        words the ledger does not know that its note shares ("capex # Purchases of land, buildings, and equipment"),
        nor one whose quote begins with it (a statement cut into pieces: the name is in the piece before)."""
        from ..text.ledger import lines_named

        out = []
        for (x, claim), quote in zip(self._claimed(), quotes, strict=True):
            names = lines_named(f"{x.name} {x.note}") if x.figure else set()  # a formula's name is its result's
            if not names:
                continue
            if quote is None:
                out.append(claim)
                continue
            if re.match(rf"\W*{re.escape(_written(x.value))}(?![\d,.]\d)", quote):
                continue  # a piece of a statement cut before the figure: its line's name is in the piece before
            there = lines_named(quote)
            if names & there:
                continue
            if there or not _content_words(f"{x.name} {x.note}") & _content_words(quote):
                out.append(claim)
        return out

    def as_dict(self) -> dict[str, object]:
        return {"results": [{"name": x.name, "value": x.value} for x in self.results],
                "lines": [{"name": x.name, "expression": x.expression, "value": x.value, "note": x.note,
                           "figure": x.figure, **({"moved": x.moved} if x.moved else {})} for x in self.lines],
                "reply": self.reply}


@dataclass(frozen=True)
class Unworked:
    """A figure the question asks to be worked out (a ratio, an average, what it defines: :data:`_DERIVED`) for
    which no working could be read: the model's own figure stands, unchecked, and the support check may not vouch
    for it because the number is written somewhere in what was read (three questions on three filings answered
    "14.4%", each found in a row of something else). ``reason`` says so to the reader."""

    reason: str


def shown(value: float) -> str:
    """A computed value as a reader expects it: thousands separated, two decimals from 1 up, three significant
    digits below (0.5404 -> "0.54", 0.00617 -> "0.00617"), one decimal from 1,000 where there is one ("3,215.4")."""
    size = abs(value)
    if size == 0:
        return "0"
    if size >= 1000:
        return f"{value:,.1f}".removesuffix(".0")
    if size >= 1:
        return f"{value:,.2f}"
    return f"{value:.3g}"


def request(evidence: Sequence[Evidence], question: Question, answer: str,
            defined: Defined | None = None) -> LLMRequest:
    """The request for the working: what was read, the question, the model's answer — and where the question
    defines its metric (:func:`~pagemind.answering.formula.defined`), the formula, so the model gives the figures."""
    from ..prompts import get_prompt
    from .evidence import units_text

    if defined is not None:
        prompt = get_prompt("compute", "work_defined").render(
            text=units_text(evidence), question=question.text, answer=answer, formula=defined.written(),
            figures=defined.listed())
    else:
        prompt = get_prompt("compute", "work").render(text=units_text(evidence), question=question.text,
                                                      answer=answer)
    return LLMRequest(messages=(Message("user", prompt),), role="compute", max_tokens=MAX_TOKENS, temperature=0.0)


_SUM = re.compile(r"\d\s*[/*×÷]\s*\(?\$?\d|\d\s*[-+]\s*\(?\$?\d[\d,.]*\)?\s*=|=\s*\$?\d")
_BULLET = re.compile(r"^(?:[-*•]|\d+[.)])\s+")  # "- DIO = ...", "1. net = ...": a list of lines
_PRINT = re.compile(r"^print\s*\((?:\s*([A-Za-z_]\w*)\s*\))?")
_BLOCK = re.compile(r"```[\w]*\s*\n(.*?)(?:```|$)", re.DOTALL)
_FENCE = re.compile(r"^```\w*\s*|\s*```\s*$")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")


def code_of(reply: str) -> str:
    """A reply's code: its first fenced block, else the reply without fences."""
    fenced = _BLOCK.search(reply)
    return fenced.group(1) if fenced else _FENCE.sub("", reply.strip())


class Problem(ValueError):
    """Why a reply is not a working pagemind can compute."""


def parse(reply: str, written: Sequence[Amount], *, complete: bool = True, rows: Sequence[str] = (),
          needs: Sequence[str] = (), tables: Sequence[Row] = (), averages: Sequence[str] = (),
          defined: Defined | None = None) -> Computation | str:
    """The working a reply gives, its figures found among ``written`` (the amounts of what was read and of the
    question), or the problem (a str) to re-ask with. Its result is the line named ``answer``; in a ``complete``
    reply without one, the name it prints last, else its last formula (a reply cut at its token limit has none).
    ``rows``: the lines of what was read, to show beside a figure that is not among them (:func:`_rows_about`).
    ``needs``: the statement lines the question's figure is computed from (:func:`needed`), each of which some
    figure of the working must be taken from. ``tables``: the table rows of what was read, where a figure the model
    copied from another year's column than its name gives is read from that year's (:func:`_column_of`).
    ``averages``: the lines the question averages over periods (:func:`averaged`), each of which some formula must
    halve. ``defined``: the question's own formula (:func:`~pagemind.answering.formula.defined`), which replaces the
    reply's result: the reply gives its figures (a figure the reply names otherwise, by its line and year, is taken
    as the formula's; one it gives none for is read from its row and column where the table says, else asked
    for)."""
    from . import formula

    assigned: list[tuple[str, ast.expr, str]] = []  # every assignment of the reply: name, formula, note
    printed = ""
    for raw in code_of(reply).splitlines():
        code, _, note = raw.partition("#")
        code = _THOUSANDS.sub("", _BULLET.sub("", code.strip()).replace("$", ""))
        shows = _PRINT.match(code)
        if shows is not None:
            printed = shows.group(1) or printed
            continue
        if "=" not in code:  # blank, or the reply's prose around the code
            continue
        if defined is not None and _is_result(code.partition("=")[0].strip()):
            continue  # the result is the question's formula, however the reply copies it
        if len(assigned) >= MAX_READ:
            return f"more than {MAX_READ} lines: give only the figures needed and the formula"
        try:
            name, node = _assignment(code)
        except Problem as problem:
            if defined is not None:  # a line of the model's own beside the figures pagemind's formula reads (a
                continue  # copy of the formula cut short): not read; a figure it held is asked for by name
            return str(problem)
        assigned.append((name, node, note.strip()))
    if defined is not None:
        as_defined = _as_defined(assigned, defined, tables)
        if isinstance(as_defined, str):
            return as_defined
        assigned = as_defined
    names = [name for name, _, _ in assigned]
    result: str | None = None  # a name the reply computes its answer as, where no line is named answer
    if any(_is_result(n) for n in names):
        wanted = {RESULT} if RESULT in names else {n for n in names if _is_result(n)}
    elif complete:  # no line named answer: the result is the name printed last, else the last formula
        formulas = [n for n, node, _ in assigned if _number(node) is None]
        result = printed if printed in names else formulas[-1] if formulas else None
        wanted = {result} if result else set()
    else:
        wanted = set()
    used = _used(assigned, wanted)
    if len(used) > MAX_LINES:
        return f"more than {MAX_LINES} lines: give only the figures needed and the formula"
    lines: list[Line] = []
    values: dict[str, float] = {}
    for i in used:
        name, node, note = assigned[i]
        for free in sorted(_names(node) - values.keys() - set(names)):  # named in a formula, assigned nowhere
            named = _named_cell(free, tables)
            if named is not None:
                lines.append(Line(free, str(_plain(named[0])), named[0], named[2], figure=True, moved=named[1]))
                values[free] = named[0]
        figure = next((f for f in defined.figures if f.name == name), None) if defined is not None else None
        cell = None
        try:
            given = _number(node) if figure is not None else None
            if defined is not None and figure is not None and defined.source != formula.LINE and given:
                cell = _named_cell(name, tables)
            if cell is not None:
                # a figure of pagemind's formula, named by its line and year, is the cell the tables give for them,
                # whatever the model copied (a figure of another row, one the text does not write)
                line = _at_its_cell(Line(name, ast.unparse(node), given or 0.0, note, figure=True), tables, read=cell)
            else:
                line = (_formula_line(name, node, values, defined)
                        if defined is not None and (name == RESULT or name in dict(defined.steps))
                        else _line(name, node, note, values, written, rows, tables))
        except Problem as problem:
            return str(problem)
        except OverflowError:
            return f"{name} is not a number pagemind can compute"
        if cell is None and defined is not None and figure is not None and line.figure and not line.moved:
            line = _at_its_cell(line, tables, (written, figure.line) if defined.source == formula.LINE else None)
        values[line.name] = line.value
        lines.append(line)
    if result is not None and lines:
        lines.append(Line(RESULT, result, values[result], uses=frozenset({result})))
    working = Computation(tuple(lines))
    if not working.results:
        return f"no result: end with a line `{RESULT} = ...` computing the answer from the figures"
    if not working.figures:
        return "no figure from the text: assign each figure the question needs, copied from the text"
    twice = _one_figure_two_years(working, rows) or (_one_figure_two_lines(working, defined, rows) or
                                                     _one_value_two_years(working, defined)
                                                     if defined is not None else None)
    if twice is not None:
        return twice
    for mean in averages:
        if not _averages(working, mean):
            pair = [x.name for x in working.lines if x.figure and mean in _lines_of(x)][:2]
            example = (f": average_{mean.replace(' ', '_').replace(',', '')} = ({' + '.join(pair)}) / 2"
                       if len(pair) == 2 else "")
            return (f"the question averages {mean} over two periods, and no formula of the working divides its two "
                    f"figures by 2{example}")
    missing = _not_taken(working, needs)
    if missing:
        about = [row for n in missing for row in _rows_of(n, rows)]
        return (f"the question computes its figure from {' and '.join(missing)}, and no figure of the working is "
                f"taken from {'that line' if len(missing) == 1 else 'those lines'}: assign each figure the formula "
                "needs from its own line in the text, named after it"
                + (". The text's lines about it: " + " / ".join(about) if about else ""))
    return working


def _as_defined(assigned: list[tuple[str, ast.expr, str]], defined: Defined,
                tables: Sequence[Row]) -> list[tuple[str, ast.expr, str]] | str:
    """The reply's assignments with the question's formula as the result: each of its figures a number the reply
    assigns by the formula's name, or by a name of its own that is the same line and year alone and nothing else
    ("ap_fy2017 = 34616  # Accounts payable, 2017"; not a change, an average or a quarter's, nor a balance below 0),
    or none where its row and column give it (:func:`_named_cell`); the problem where one is given nowhere. A
    formula's figure the reply assigns a formula ("inventory_2017 = 16047 - 11461") is no figure of it."""
    from ..text.ledger import BALANCES, lines_named

    own = {f.name for f in defined.figures}
    steps = {name for name, _ in defined.steps}  # pagemind's, however the reply writes them
    kept = [a for a in assigned if (a[0] not in own or _number(a[1]) is not None) and a[0] not in steps]
    numbers = {name for name, _, _ in kept if name in own}
    missing = []
    for figure in defined.figures:
        if figure.name in numbers:
            continue
        same = [(value, note) for name, node, note in kept
                if (value := _number(node)) is not None and _plain_name(name) and not _OTHER_FIGURE.search(note)
                and lines_named(f"{name} {note}") == {figure.line} and _year_of(f"{name} {note}") == figure.year[-2:]
                and not (figure.line in BALANCES and value < 0)]
        if len({value for value, _ in same}) == 1:  # one figure, however many names the reply gives it
            value, note = same[0]
            kept.append((figure.name, ast.Constant(value), note))
        elif _named_cell(figure.name, tables) is None:
            missing.append(f"{figure.name} ({figure.line}, {figure.year})")
    if missing:
        return (f"no figure for {', '.join(missing)}: assign each of the figures listed its number as the text "
                "writes it, by the names listed")
    return kept + [(name, ast.parse(expression, mode="eval").body, defined.source)
                   for name, expression in (*defined.steps, (RESULT, defined.expression))]


def _at_its_cell(line: Line, tables: Sequence[Row], only_miscopied: tuple[Sequence[Amount], str] | None = None,
                 read: tuple[float, str, str] | None = None) -> Line:
    """A figure of pagemind's formula is named by its line and year alone, so where the tables give that line's cell
    in that year's column (:func:`_named_cell`: the rows naming that line alone agree on it) and the model copied
    another figure of the text (Activision's PP&E of 2018 copied from the 2019 column, a figure the text also writes
    as 2018's accounts payable; Walmart's 2019 D&A copied as 108,791 from another row), the cell is the figure,
    signed as the model signed its copy, and claimed as its row's. ``only_miscopied`` (the amounts of what was read
    and the figure's statement line, where the formula is the line the question names alone): only a figure written
    in a row of that line, or nowhere in what was read, is a miscopy — one the text writes elsewhere (a segment's, a
    sentence's "attributable to shareholders" figure, one in other units) is what the model read, and stands.
    ``read``: the cell where the caller has read it already (:func:`_named_cell`)."""
    from ..text.ledger import lines_named

    read = read or _named_cell(line.name, tables)
    if read is None or not line.value or math.isclose(abs(read[0]), abs(line.value), rel_tol=1e-9):
        return line
    if only_miscopied is not None:
        written, of_line = only_miscopied
        if _in_text(abs(line.value), written) and not any(of_line in lines_named(row.cells[0])
                                                         for row, _, _, _ in _places(line.value, tables)):
            return line
    value = math.copysign(abs(read[0]), line.value)
    where = f"{read[1].split(';')[0]}; the model copied {_written(line.value)} from another place"
    return replace(line, expression=str(_plain(value)), value=value, note=read[2], moved=where)


def _formula_line(name: str, node: ast.expr, values: dict[str, float], defined: Defined) -> Line:
    """The result of the question's formula (or of one of its steps, ``name``) on the working's figures; its own
    numbers (365 days, the 3 years of an average, 100) are its constants, not figures taken from the text."""
    try:
        value = _evaluate(node, values, (), [], constants=CONSTANTS | frozenset(_written_out(node)))
    except ZeroDivisionError:
        raise Problem("the formula divides by zero: check the figures") from None
    if not math.isfinite(value):
        raise Problem(f"the formula gives {value}: check the figures")
    return Line(name, ast.unparse(node), value, defined.source if name == RESULT else "", uses=_names(node))


_DEFINED = re.compile(r"\b(?:is\s+)?defined\s+as\b|\bdefine\s+[^.?:]{1,80}?\s+as\b", re.IGNORECASE)


def needed(question: str) -> list[str]:
    """The statement lines a question's figure is computed from, in the order of
    :data:`pagemind.text.ledger.LINES`: those its definition names, where it defines its metric ("DPO is defined as:
    365 * (average accounts payable) / (COGS + change in inventory)": accounts payable, cost of sales, inventory),
    else those the question names ("capex as a % of revenue"); a metric names the lines of its textbook definition
    too (a margin: revenue; an inventory turnover: cost of sales; :func:`~pagemind.text.ledger.lines_implied`)."""
    from ..text.ledger import LINES, lines_implied, lines_named

    definition = _DEFINED.search(question)
    metric = question[definition.end():] if definition else question
    named = lines_named(metric) | lines_implied(question, defined=definition is not None)
    return [line.name for line in LINES if line.name in named]


_YEAR_WORD = r"(?:the\s+)?(?:fy|fiscal(?:\s+years?)?|years?)?\s*'?"
_AVERAGED = re.compile(rf"\baverage\s+(?:of\s+)?(?:the\s+)?([^()?,;]{{1,40}}?)\s+(?:between|over|from|for)\s+"
                       rf"{_YEAR_WORD}(\d{{2,4}})\s*(?:and|to|through|-|–)\s*{_YEAR_WORD}(\d{{2,4}})\b", re.IGNORECASE)


def averaged(question: str) -> list[str]:
    """The statement lines a question averages over two consecutive years ("365 * (average accounts payable between
    FY2016 and FY2017)": accounts payable; "average PP&E between FY2018 and FY2019"), each once: what a working must
    divide by 2. Not an average of a ratio ("3 year average of capex as a % of revenue"), whose words name two lines,
    nor one over more years ("from FY2017 to FY2019")."""
    from ..text.ledger import LINES, lines_named

    found = {name for m in _AVERAGED.finditer(question) for named in [lines_named(m.group(1))] if len(named) == 1
             and (int(m.group(3)[-2:]) - int(m.group(2)[-2:])) % 100 == 1 for name in named}
    return [line.name for line in LINES if line.name in found]


def _lines_of(x: Line) -> set[str]:
    from ..text.ledger import lines_named

    return lines_named(f"{x.name} {x.note}")


def _averages(working: Computation, line: str) -> bool:
    """Whether a formula of ``working`` divides figures of ``line`` by 2 (its own name names the line, or a line it
    reads is a figure or a formula of it), or a figure of the line is an average the text states ("Average total
    assets": a figure named or noted as an average, found in the text)."""
    of_line = {x.name for x in working.lines if line in _lines_of(x)}
    if any(x.figure and x.name in of_line and re.search(r"\b(?:average|avg|mean)\b", f"{x.name} {x.note}".replace(
            "_", " "), re.IGNORECASE) for x in working.lines):
        return True
    return any(not x.figure and re.search(r"/\s*2(?:\.0)?\b", x.expression) and (x.name in of_line or x.uses & of_line)
               for x in working.lines)


_NAME_YEAR = re.compile(r"(?<![0-9])(?:fy_?)?((?:19|20)\d{2})(?![0-9])|(?<![A-Za-z0-9])fy_?(\d{2})(?![0-9])",
                        re.IGNORECASE)


def _one_figure_two_years(working: Computation, rows: Sequence[str]) -> str | None:
    """The problem of a working that gives one line the same figure for two years ("net_sales_2020 = 11503",
    "net_sales_2019 = 11503": a column copied twice) where the line's own row in the text writes that figure once
    beside others (so another year's differs); else None — also where no row is about the line, or it writes the
    figure twice (a dividend that did not change), or alone (years as rows, prose, one column a year). The line's rows
    are those of its name and its figures' notes (American Express' "Actual tax rates" row for an effective tax rate
    whose 2022 figure pagemind read there, the model having given 2022's 21.6 for 2021 too)."""
    seen: dict[str, list[tuple[str, Line]]] = {}
    for x in working.lines:
        if not x.figure:
            continue
        found = _NAME_YEAR.search(x.name)
        if found is None:
            continue
        year = (found.group(1) or found.group(2))[-2:]
        line = _NAME_YEAR.sub("", x.name).strip("_").lower()
        for other_year, other in seen.get(line, []):
            if other_year == year or other.value != x.value:
                continue
            about = _rows_about(" ".join((line, other.note, x.note)), rows)  # the row pagemind read one at too
            if _copied(x.value, about):
                return (f"{other.name} and {x.name} are the same figure, {_written(x.value)}: copy each year's figure "
                        "from its own column of the line"
                        + (". The text's lines about it: " + " / ".join(about) if about else ""))
        seen.setdefault(line, []).append((year, x))
    return None


def _one_figure_two_lines(working: Computation, defined: Defined, rows: Sequence[str]) -> str | None:
    """The problem of a working that gives two of pagemind's formula's figures of one year and two statement lines
    the same number (Boeing's "gross_profit_2021 = 19493", "revenue_2021 = 19493": a statement without a gross profit
    row, its revenue copied for it, a margin of 100%); else None."""
    of = {f.name: f for f in defined.figures}
    seen: dict[tuple[str, float], Line] = {}
    for x in working.lines:
        figure = of.get(x.name)
        if not x.figure or figure is None or not x.value:
            continue
        other = seen.setdefault((figure.year, abs(x.value)), x)
        if other is not x and of[other.name].line != figure.line:
            about = _rows_about(figure.line, rows)
            return (f"{other.name} and {x.name} are the same figure, {_written(x.value)}: copy each from its own "
                    "line of the text" + (". The text's lines about it: " + " / ".join(about) if about else ""))
    return None


def _one_value_two_years(working: Computation, defined: Defined) -> str | None:
    """The problem of a working whose two years of the metric a change question asks about are the same value
    (American Express' effective tax rate given as 21.6 for 2021 and 2022, where the text writes 24.6 and 21.6: one
    column copied twice); else None."""
    change = defined.change
    values = {x.name: x.value for x in working.lines}
    if change is None or change.earlier == change.later or change.earlier not in values or \
            values[change.earlier] != values[change.later]:  # (one year's sign asked: one value)
        return None
    return (f"{change.earlier} and {change.later} are the same, {shown(values[change.earlier])}: copy each year's "
            "figures from its own column")


def _copied(value: float, about: Sequence[str]) -> bool:
    """Whether one of the line's rows (``about``) writes ``value`` exactly once among several figures: the other
    year's column holds another figure."""
    for row in about:
        figures = [a for _, a in placed(row)]
        if len(figures) >= 2 and sum(_in_text(value, [a]) for a in figures) == 1:
            return True
    return False


def _not_taken(working: Computation, needs: Sequence[str]) -> list[str]:
    """The lines of ``needs`` the working takes no figure from. A figure takes the lines its name (or note) names; a
    formula takes what its inputs take, and where those are several lines also the lines its own name names
    ("gross_profit = net_sales - cost_of_sales" takes gross profit); a formula of one other line is that line (COGS
    averaged as "average_inventory", then "inventory_turnover = cogs / average_inventory", take no inventory); one
    whose figures are written in it takes what its name names. A working that names no statement line at all is not
    judged."""
    from ..text.ledger import lines_named

    named = {x.name: lines_named(f"{x.name} {x.note}") for x in working.lines}
    if not needs or not any(named.values()):
        return []
    takes: dict[str, set[str]] = {}
    for x in working.lines:  # in order: a formula's inputs are lines before it
        if x.figure:
            takes[x.name] = named[x.name]
            continue
        inputs = set().union(*(takes.get(n, set()) for n in x.uses))
        takes[x.name] = inputs if len(inputs) == 1 else inputs | named[x.name]
    covered = set().union(*takes.values())
    return [n for n in needs if n not in covered]


def _used(assigned: Sequence[tuple[str, ast.expr, str]], wanted: set[str]) -> list[int]:
    """The positions of the assignments the ``wanted`` names' last values are computed from, in order: a figure the
    reply lists and its answer never uses is not part of the working (nor checked, nor judged by support)."""
    needed, used = set(wanted), []
    for i in range(len(assigned) - 1, -1, -1):
        name, node, _ = assigned[i]
        if name in needed:
            needed.discard(name)
            needed |= _names(node)
            used.append(i)
    return used[::-1]


def _names(node: ast.expr) -> frozenset[str]:
    """The names a formula reads (not the functions it calls)."""
    return frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id not in FUNCTIONS)


def _assignment(code: str) -> tuple[str, ast.expr]:
    """The name and formula of one line of the working (``name = number`` or ``name = formula``)."""
    if len(code) > MAX_CHARS:
        raise Problem(f"a line of more than {MAX_CHARS} characters: split the formula into named steps")
    try:
        tree = ast.parse(code, mode="exec")
    except SyntaxError:
        raise Problem(f"not a line of arithmetic: {code[:60]!r}; write `name = number` or `name = formula`") from None
    except (RecursionError, MemoryError, ValueError):
        raise Problem(f"not a number pagemind can compute: {code[:60]!r}") from None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assign) or len(tree.body[0].targets) != 1 \
            or not isinstance(tree.body[0].targets[0], ast.Name):
        raise Problem(f"not an assignment: {code[:60]!r}; write `name = number` or `name = formula`")
    name = tree.body[0].targets[0].id
    if not _NAME.match(name):
        raise Problem(f"not a name: {name[:40]!r}")
    return name, tree.body[0].value


def _line(name: str, node: ast.expr, note: str, values: dict[str, float], written: Sequence[Amount],
          rows: Sequence[str], tables: Sequence[Row]) -> Line:
    """One line of the working, checked and computed; :class:`Problem` says why it cannot be."""
    try:
        line = _read_line(name, node, note, values, written, rows, tables)
    except Problem:
        raise
    except (OverflowError, RecursionError, ValueError, MemoryError):
        raise Problem(f"{name} is not a number pagemind can compute") from None
    if not math.isfinite(line.value):
        raise Problem(f"{line.name} is not a finite number ({line.value}): check the formula's divisions")
    return line


def _read_line(name: str, node: ast.expr, note: str, values: dict[str, float], written: Sequence[Amount],
               rows: Sequence[str], tables: Sequence[Row]) -> Line:
    expression = ast.unparse(node)
    figure = _number(node)
    if figure is not None:
        if abs(figure) not in CONSTANTS and not _in_text(figure, written):
            named = _named_cell(f"{name} {note}", tables, figure)
            if named is not None:
                value, where, label = named
                return Line(name, str(_plain(value)), value, label, figure=True, moved=where)
            about = _rows_about(f"{name} {note}", rows)
            raise Problem(f"{name} = {expression} is not a figure in the text: copy each figure exactly as the text "
                          "writes it, from the line and period the question asks about"
                          + (". The text's lines about it: " + " / ".join(about) if about else ""))
        places = _places(figure, tables)  # read once for both: another line's row, another year's column
        change = _change_of(figure, f"{name} {note}", tables, places)
        if change is not None:  # pagemind's own formula: the two balances are the figures taken from the text
            (now, then), moved = change
            return Line(name, f"{_plain(now)} - {_plain(then)}", now - then, note, taken=(now, then), moved=moved)
        other_row = _row_of(figure, f"{name} {note}", tables, places)
        if other_row is not None:  # the note spoke of the row copied from: the figure is now its own row's
            value, moved, label = other_row
            return Line(name, str(_plain(value)), value, label or note, figure=True, moved=moved)
        mended = _column_of(figure, f"{name} {note}", places)
        if mended is not None:  # claimed as the row it is read at
            value, moved, label = mended
            return Line(name, str(_plain(value)), value, label or note, figure=True, moved=moved)
        other = _other_row(figure, f"{name} {note}", rows)
        if other is not None:
            where, said, kind = other
            about = [r for r in _rows_about(f"{name} {note}", rows) if r != where] or [  # else the rows it may mean
                " ".join(r.split())[:_ROW_CHARS] for r in rows if said & _qualifiers(_label(r)) and re.search(r"\d", r)
            ][:ROWS]
            raise Problem(f"{name} = {expression} is the text's \"{where}\", a {'/'.join(sorted(kind))} figure where "
                          f"the name says {'/'.join(sorted(said))}: copy it from the line the name says"
                          + (". The text's lines about it: " + " / ".join(about) if about else ""))
        return Line(name, expression, figure, note, figure=True)
    # a sum, difference or average of one line's figures written out ("(2675 + 2671) / 2"): each read from the line
    # its name gives, in its own column's year
    read: dict[float, float] = {}
    moves: list[str] = []
    placed = {n: _places(n, tables) for n in (_written_out(node) if _one_line(node) else [])}
    labels = [{p[0].cells[0] for p in places} for places in placed.values()]
    shared = set.intersection(*labels) if labels else set()
    if len(shared) == 1:  # every figure written out is in rows of one label: one line's, copied from another line
        label = shared.pop()
        for number, places in placed.items():
            read_at = _row_of(number, f"{name} {note}", tables, places, named_year=False, label=label)
            if read_at is not None:
                read[number] = read_at[0]
                moves.append(read_at[1])
    taken: list[float] = []
    try:
        value = _evaluate(node, values, written, taken, read)
    except ZeroDivisionError:
        raise Problem(f"{name} divides by zero") from None
    if read:  # the formula as computed: the figures pagemind read in place of those copied
        expression = ast.unparse(_Replaced(read).visit(ast.parse(expression, mode="eval")).body)
    return Line(name, expression, value, note, taken=tuple(taken), uses=_names(node), moved="; ".join(moves))


class _Replaced(ast.NodeTransformer):
    """A formula with each number in ``read`` written as the figure read for it."""

    def __init__(self, read: dict[float, float]) -> None:
        self.read = read

    def visit_Constant(self, node: ast.Constant) -> ast.Constant:
        if isinstance(node.value, (int, float)) and not isinstance(node.value, bool) and abs(node.value) in self.read:
            figure = self.read[abs(node.value)]
            return ast.Constant(_plain(figure))
        return node


def _plain(figure: float) -> float:
    """A figure as a formula writes it: 253.0 as 253."""
    return int(figure) if figure == int(figure) else figure


def _written_out(node: ast.expr) -> list[float]:
    """The numbers a formula writes out, constants (days, percent, scales) aside."""
    out = []
    for part in ast.walk(node):
        number = _number(part) if isinstance(part, ast.Constant) else None
        if number is not None and abs(number) not in CONSTANTS:
            out.append(abs(number))
    return out


def _one_line(node: ast.expr) -> bool:
    """Whether a formula only adds and subtracts (and multiplies or divides by a constant): its figures are one
    line's ("(inventory_2019 + 2671) / 2", "1209 - 1002"), not a ratio of two lines."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        return _one_line(node.left) and _one_line(node.right)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
        constant = [abs(n) in CONSTANTS for n in (_number(node.right), _number(node.left)) if n is not None]
        return any(constant) and _one_line(node.left if _number(node.right) is not None else node.right)
    if isinstance(node, ast.UnaryOp):
        return _one_line(node.operand)
    if isinstance(node, ast.Call):
        return bool(node.args) and _one_line(node.args[0])
    return isinstance(node, (ast.Name, ast.Constant))


ROWS = 2  # lines of the text shown with a figure that is not in it
_ROW_CHARS = 200


def _rows_about(words: str, lines: Sequence[str]) -> list[str]:
    """The lines of what was read that hold a figure and most of the words of a figure's name and note
    ("net_sales_2022" -> the "| Net sales | 18,992.8 | 17,626.6 |" row), best first: what the re-ask shows."""
    from ..text.words import STOPWORDS

    wanted = {w for w in re.findall(r"[a-z]+", words.lower().replace("_", " ")) if len(w) > 2 and w not in STOPWORDS}
    if not wanted:
        return []
    scored = []
    for line in lines:
        low = line.lower()
        hits = sum(re.search(rf"\b{w}", low) is not None for w in wanted)
        if hits * 2 >= len(wanted) and re.search(r"\d", line):
            scored.append((-hits, len(line), " ".join(line.split())[:_ROW_CHARS]))
    return [text for _, _, text in sorted(scored)[:ROWS]]


def _year_of(words: str) -> str | None:
    """The one year a figure's name and note give, as its last two digits ("net_sales_2016", "fy17_capex",
    "Net sales, fiscal 2016" -> "16"); None for none, several (a name's 2018 beside a note's "December 31, 2017"),
    or a name or note that speaks of the year before ("inventory_beginning_2018", "prior year")."""
    name, _, note = words.partition(" ")
    if _BEFORE.search(name.replace("_", " ")) or _BEFORE.search(note):
        return None
    years = {(m.group(1) or m.group(2))[-2:] for m in _NAME_YEAR.finditer(name)}
    years |= {m.group(0)[-2:] for m in _YEAR.finditer(note)}
    return years.pop() if len(years) == 1 else None


_BEFORE = re.compile(r"\b(?:beginning|opening|prior|previous|preceding|start(?:ing)?|last)\b", re.IGNORECASE)
# a column dated early in a calendar year ("January 28, 2023") may be the fiscal year before it (a retailer's 2022),
# and one headed by two years ("2017/18", "FY 2017-18") is neither: their years are not compared with a figure's
_EARLY = re.compile(r"\b(?:jan|feb|mar)[a-z]*\.?\s+\d|\d{2}\s*[/–-]\s*\d{2}\b", re.IGNORECASE)
_EARLY_DATE = re.compile(r"^\s*((?:jan|feb|mar)[a-z]*\.?\s+\d{1,2}),?\s+((?:19|20)\d{2})\s*$", re.IGNORECASE)
_NAMED_FY = re.compile(r"^FY\d{4}, ended ")  # a column pagemind named by its fiscal year (:func:`fiscal_years`)


def fiscal_years(tables: Sequence[Row], question: str) -> list[Row]:
    """``tables`` with each column dated early in a calendar year ("January 28, 2017") named by the fiscal year the
    question's years say it is: where every year the question names is such a column's year and not every one is
    the year after one (Best Buy's FY2015-FY2017 against columns dated January 2015, 2016 and 2017: a fiscal year
    named by the year it ends in), "FY2017, ended January 28"; where the other way round (a fiscal year named by the
    year it begins in), "FY2016, ended January 28"; else as they are (which the filing means, the columns cannot
    tell: no column of them is read as a year)."""
    from ..text.tables import periods_named

    asked = {p for p in periods_named(question) if not p.startswith("Q")}
    early = {m.group(2) for row in tables for h in row.header[1:] if (m := _EARLY_DATE.match(h))}
    if not asked or not early:
        return list(tables)
    ending, beginning = asked <= early, asked <= {str(int(y) - 1) for y in early}
    if ending == beginning:
        return list(tables)
    shift = 0 if ending else -1

    def named(header: str) -> str:
        m = _EARLY_DATE.match(header)
        return header if m is None else f"FY{int(m.group(2)) + shift}, ended {m.group(1)}"

    return [replace(row, header=tuple(named(h) for h in row.header)) for row in tables]


def _years(row: Row) -> list[set[str]]:
    """The years (last two digits) each column of ``row`` is headed by; none for a column dated January to March or
    headed by two years, and none at all where the header's first cell names a period (a header without the label
    column's cell: its periods stand one column left of their figures)."""
    if row.periods(0):
        return [set() for _ in row.cells]
    return [set() if k < len(row.header) and _EARLY.search(row.header[k]) and not _NAMED_FY.match(row.header[k])
            else {p[-2:] for p in row.periods(k) if not p.startswith("Q")} for k in range(len(row.cells))]


Place = tuple[Row, int, set[str], float]  # a table row writing a figure, its column, the column's years, the cell's


def _places(figure: float, tables: Sequence[Row]) -> list[Place]:
    """Where the table rows write ``figure`` as it is (not as a percent's fraction, nor rescaled): the row, its
    column, the column's years and the cell's signed figure."""
    from ..text.numbers import amounts

    out: list[Place] = []
    for row in tables:
        years = _years(row)
        for j in range(1, len(row.cells)):
            for a in amounts(row.cells[j]):
                if _in_text(abs(figure), [replace(a, value=abs(a.value), percent=False, scale=1.0)]):
                    out.append((row, j, years[j], a.value))
    return out


def _cell(rows: Sequence[Row], year: str) -> tuple[float, Row, int] | None:
    """The one figure ``rows`` write in their column of ``year`` (each row's only such column, one figure in it),
    signed as written: that figure, and the first row and column giving it; None where a row has no such column or
    they disagree."""
    from ..text.numbers import amounts

    found: set[float] = set()
    first: tuple[Row, int] | None = None
    for row in rows:
        named = [k for k, years in enumerate(_years(row)) if k and years == {year}]
        cell = amounts(row.cells[named[0]]) if len(named) == 1 else []
        if len(cell) != 1:
            return None
        found.add(cell[0].value)
        first = first or (row, named[0])
    if len(found) != 1 or first is None:
        return None
    return found.pop(), *first


def _signed(figure: float, copied: float, read: float) -> float:
    """The figure read in place of ``copied``, signed as the model signed its copy: "(200)" read for a copied "500"
    the model wrote as 500 is -200; for a copied "(200)" written as 200, 500 is -500."""
    return read * (-1.0 if (figure < 0) != (copied < 0) else 1.0)


def _column_of(figure: float, words: str, places: Sequence[Place]) -> tuple[float, str, str] | None:
    """A figure the model copied from another year's column than its name (or note, ``words``) gives: where every
    table row writing it writes it under another year, and each such row's column of the named year holds one
    figure, the same in all — that figure (signed as the model signed its copy) and where it is read ("Total net
    sales, the 2016 column; the model copied 107,006 from the 2015 column"). None where the name gives no one year
    (:func:`_year_of`), a row writes the figure under that year (or under no year), the rows disagree, or a row
    writing it is not of the line the name gives (another row, not another column: :func:`_row_of`): the model's
    figure stands; so does a figure named as a change in a line (its note may speak of one). ``places``: where the
    tables write the figure (:func:`_places`). Also the row's label, what the figure is claimed as."""
    from ..text.ledger import BALANCES, lines_named

    year = _year_of(words)
    if year is None or not places or any(year in years or not years for _, _, years, _ in places) \
            or _of_change(words.partition(" ")[0]):  # a figure named as a change is no column's figure
        return None
    lines = lines_named(words)
    if lines and any(not lines & lines_named(row.cells[0]) for row, _, _, _ in places):
        return None
    if lines & BALANCES and any(_OVER_A_PERIOD.search(row.header[0]) for row, _, _, _ in places):
        return None  # a balance copied from a table over periods: a change in it, no column of which is the balance
    found = _cell([row for row, _, _, _ in places], year)
    if found is None:
        return None
    value, row, k = found
    _, j, _, copied = next(p for p in places if p[0] is row)
    where = (f"{row.cells[0] or 'the row'}, the {row.header[k]} column; the model copied {_written(figure)} from the "
             f"{row.header[j]} column")
    return _signed(figure, copied, value), where, row.cells[0]


# words a name of a statement line's figure may hold beside the line's own and a year ("total_net_sales_fy2019",
# "capex_2017_usd_millions"); any other ("margin", "per_share", "average", "q4", "turnover") names another figure
_PLAIN_WORDS = frozenset("total net fy year years end ended ending fiscal usd dollars millions million thousands "
                         "billions in of for the amount reported consolidated value".split())
_OTHER_FIGURE = re.compile(r"\b(?:margins?|ratios?|per|share|turnover|average|avg|mean|growth|yoy|cagr|pct|percent\w*|"
                           r"days|q[1-4]|h[12]|quarter\w*|months?|weeks?|ttm|rate|change\w*|increase|decrease|"
                           r"delta|diff\w*|beginning|prior|previous)\b", re.IGNORECASE)
_COPY_RANGE = 2.0  # a figure the model wrote is a miscopy of the cell only within this factor of it


def _plain_name(name: str) -> bool:
    """Whether a working's ``name`` is only a statement line's, a year and plain words (:data:`_PLAIN_WORDS`)."""
    from ..text.ledger import places

    spoken = name.replace("_", " ")
    for start, end, _ in reversed(places(spoken)):
        spoken = spoken[:start] + " " + spoken[end:]
    rest = _NAME_YEAR.sub(" ", spoken.lower())
    return all(w in _PLAIN_WORDS for w in re.findall(r"[a-z]+", rest))


def _named_cell(words: str, tables: Sequence[Row], figure: float | None = None) -> tuple[float, str, str] | None:
    """The figure a name (with its note, ``words``) gives by its line and year, where the model wrote a figure the
    text does not hold ("fy2017_capex = 216") or named one no line of its working assigns
    ("cost_of_products_sold_2019" in a formula): where the name is only one statement line's, a year and plain words
    (:func:`_plain_name`; "net_income_margin_2019", "q4_revenue_2019", "average_inventory_2019" name other figures) and
    its note speaks of no other figure (a margin, a quarter, a change), the name and note give one year
    (:func:`_year_of`), the rows that name only that line agree on that year's figure (:func:`_cell`) in a column of
    the year alone (not "Three Months Ended …"), the cell is no percent, a balance's (inventory, payables, assets:
    :data:`~pagemind.text.ledger.BALANCES`) is not from a table over periods ("Year Ended December 31,": Amazon's
    cash flow statement's "Accounts payable" is the year's change) unless it is a balance sheet (a row of total or
    current assets or current liabilities), nor negative (a change in it) — and where a balance sheet is read, its
    row is the balance's, whatever the notes print — and a figure the
    model wrote is within :data:`_COPY_RANGE` of it (a miscopy, not another scale or figure) — that figure and where
    it is read, signed as the model signed its own, and where it wrote none as the table signs it, but a line spent
    or paid by its name (:data:`~pagemind.text.ledger.SPENT`) as the amount spent. None otherwise: the model is
    asked again. Also the row's label: what the figure is (its claim's words, the row it is cited at)."""
    from ..text.ledger import BALANCES, SPENT, lines_named

    name, _, note = words.partition(" ")
    lines = lines_named(words)
    year = _year_of(words)
    if len(lines) != 1 or year is None or not _plain_name(name) or _OTHER_FIGURE.search(note):
        return None
    line = next(iter(lines))
    found = _line_cell(line, tables, year)
    if found is None:
        return None
    value, row, k = found
    header = row.header[k] if k < len(row.header) else ""
    if "%" in row.cells[k] or _OTHER_FIGURE.search(header) or (line in BALANCES and value < 0):
        return None
    if figure is not None and not (value and 1 / _COPY_RANGE <= abs(figure) / abs(value) <= _COPY_RANGE):
        return None
    if figure is not None:
        value = math.copysign(abs(value), figure)
    elif line in SPENT:
        value = abs(value)
    given = (f"the model wrote {_written(figure)}, which the text does not" if figure is not None
             else "the model named it without a figure")
    return value, f"{row.cells[0]}, the {header or 'year'} column; {given}", row.cells[0]


def _line_cell(line: str, tables: Sequence[Row], year: str) -> tuple[float, Row, int] | None:
    """The one figure the rows of statement ``line`` give in ``year``'s column (:func:`_cell`): its rows are those
    naming that line alone; a balance's (:data:`~pagemind.text.ledger.BALANCES`) never from a table over periods
    ("Year Ended …": a cash flow statement's change in it, "Property, plant and equipment additions") unless it is a
    balance sheet, and the balance sheet's where one is read (Boeing's PP&E: its notes print it gross and by segment
    too); capex, D&A and dividends paid the cash flow statement's where one is read (not "Reportable segment capital
    expenditures"); revenue, costs, profits and net income an income statement's where one is read (not Walmart's
    "Operating income" of its U.S. segment's table). Where those rows disagree: for a line a statement sums from
    parts that name it too (:data:`_SUMMED`), the row that is the line alone with plain words ("Total current
    assets", not "Prepaid expenses and other current assets"; "Total net revenues", not "Subscription, licensing,
    and other revenues"); for a net income, the row attributable to the company's shareholders (not one of
    continuing operations, nor one including noncontrolling interests)."""
    from ..text.ledger import BALANCES, lines_named

    sheets = _sheets(tables) if line in BALANCES else frozenset()
    own = [row for row in tables if lines_named(row.cells[0]) == {line} and not (
        line in BALANCES and _OVER_A_PERIOD.search(row.header[0]) and row.header not in sheets)]
    statement = sheets if line in BALANCES else _flows(tables) if line in _FLOWS else frozenset()
    incomes = _incomes(tables) if line in _EARNED else frozenset()
    rows = [row for row in own if row.header in statement or row.table in incomes] or own
    alone = [row for row in rows if line in _SUMMED and _plain_name(row.cells[0])
             and any(cell.strip() for cell in row.cells[1:])]  # (not the heading "Current liabilities:")
    # a net income: the shareholders' (Best Buy's "Net earnings attributable to Best Buy Co., Inc. shareholders", not
    # its continuing operations' nor the one including noncontrolling interests)
    parent = [row for row in rows if line == "net income" and _PARENT.search(row.cells[0])
              and not _OPERATIONS.search(row.cells[0])]
    return (alone and _cell(alone, year)) or (parent and _cell(parent, year)) or _cell(rows, year)


_OPERATIONS = re.compile(r"\b(?:continuing|discontinued)\s+operations\b", re.IGNORECASE)
_PARENT = re.compile(r"\battributable\s+to\s+(?!(?:the\s+)?(?:non-?controlling|redeemable|minority))", re.IGNORECASE)


def _change_of(figure: float, words: str, tables: Sequence[Row],
               places: Sequence[Place]) -> tuple[tuple[float, float], str] | None:
    """A change in a balance (inventory, payables, receivables, PP&E, assets: :data:`~pagemind.text.ledger.BALANCES`)
    that the model wrote as the balance itself: Amazon's "change_in_inventory_2017 = 16,047", the 2017 column of
    "Inventories", where the change is 16,047 - 11,461. Where the name itself (not its note: "for the change in
    inventory" may note a balance the formula subtracts) speaks of a change in one such line (with its note,
    ``words``) and of one year, every table row writing the figure is a row of that line writing it in that year's
    column, in a balance sheet (a table that also has a row of total or current assets or current liabilities: a
    cash flow statement's "Accounts payable" row is a change already), and the rows of the line agree on that year's
    and the year before's figures — those two figures, the year's first (the change is the first less the second: an
    increase is positive; for a name of a decrease, the other way) and where they are read. None otherwise: the
    model's figure stands."""
    from ..text.ledger import BALANCES, lines_named

    name = words.partition(" ")[0]
    lines = lines_named(words)
    year = _year_of(words)
    if len(lines) != 1 or year is None or not _of_change(name) or not places:
        return None
    line = next(iter(lines))
    sheets = _sheets(tables)
    if line not in BALANCES or any(lines_named(row.cells[0]) != {line} or years != {year} or row.header not in sheets
                                   for row, _, years, _ in places):
        return None
    own = [row for row in tables if lines_named(row.cells[0]) == {line}]
    before = f"{(int(year) - 1) % 100:02d}"
    now, then = _cell(own, year), _cell(own, before)
    if now is None or then is None or now[0] < 0 or then[0] < 0:
        return None
    decrease = _DECREASE.search(name.replace("_", " ")) is not None  # the year before's balance less the year's
    first, second = (then, now) if decrease else (now, then)
    where = (f"{now[1].cells[0]}, the {first[1].header[first[2]]} column less the {second[1].header[second[2]]} "
             f"column; the model copied the balance {_written(figure)}, not its change")
    return (first[0], second[0]), where


_TOTALS = frozenset({"total assets", "current assets", "current liabilities"})  # rows only a balance sheet has


def _sheets(tables: Sequence[Row]) -> frozenset[tuple[str, ...]]:
    """The headers of the balance sheets among ``tables``: the tables with a row of :data:`_TOTALS`."""
    from ..text.ledger import lines_named

    return frozenset(r.header for r in tables if lines_named(r.cells[0]) & _TOTALS)


# lines a statement sums from parts that also name it (other current assets, other revenues, cost of products)
_SUMMED = BALANCES | frozenset({"revenue", "cost of sales"})
_FLOWS = frozenset({"capital expenditure", "depreciation and amortization", "dividends"})  # a cash flow statement's


def _flows(tables: Sequence[Row]) -> frozenset[tuple[str, ...]]:
    """The headers of the cash flow statements among ``tables``: the tables with a row of operating cash flow, or
    whose header speaks of cash flows ("Year Ended Cash flows from operating activities")."""
    from ..text.ledger import lines_named

    return frozenset(r.header for r in tables if "operating cash flow" in lines_named(r.cells[0])
                     or _CASH_FLOWS.search(r.header[0]))


_CASH_FLOWS = re.compile(r"\bcash\s+flows?\b", re.IGNORECASE)
_PER_SHARE = re.compile(r"\bper\s+(?:common\s+|diluted\s+|basic\s+)?share\b", re.IGNORECASE)
# an income statement's lines (a segment's table writes revenue and operating income too, never a net income)
_EARNED = frozenset({"revenue", "cost of sales", "gross profit", "operating income", "net income", "interest expense"})


def _incomes(tables: Sequence[Row]) -> frozenset[int]:
    """The income statements among ``tables`` (their numbers: Walmart's segment tables print the header of its
    consolidated results' table): the tables with a row of revenue and one of net income (a segment's table has no
    net income; a summary of five years may: its figures are the statement's)."""
    from ..text.ledger import lines_named

    named: dict[int, set[str]] = {}
    for r in tables:
        if not _PER_SHARE.search(r.cells[0]):  # "Net income per share" is no net income's row
            named.setdefault(r.table, set()).update(lines_named(r.cells[0]))
    return frozenset(t for t, lines in named.items() if {"revenue", "net income"} <= lines)

_OVER_A_PERIOD = re.compile(r"\b(?:years?|months|weeks|quarters?|periods?)\s+ended\b", re.IGNORECASE)
_DECREASE = re.compile(r"\b(?:decrease|decline|reduction|drop|fall)\b", re.IGNORECASE)


def _row_of(figure: float, words: str, tables: Sequence[Row], places: Sequence[Place], *, named_year: bool = True,
            label: str | None = None) -> tuple[float, str, str] | None:
    """A figure named (with its note, ``words``) for one statement line that the model copied from a row of another
    ("average_pp_e = (2675 + 2671) / 2" from "Long-term debt, net"): where the tables write it only in rows whose
    label neither names that line nor shares a word with the name and note (the row the model meant), and the name
    speaks of the line, not of a change in it ("change_in_inventory" is no inventory row's figure), in columns of
    one year (the name's year where it gives one and ``named_year``), and the rows that name only that line agree
    on that year's figure — that figure (signed as the model signed its copy) and where it is read. ``label``: the
    label of the rows the figure must be copied from (those of a formula's other figures); ``places``: where the
    tables write the figure (:func:`_places`). Also the label of the row it is read from (what the figure is now,
    where the model's note spoke of the row it copied). None otherwise: the model's figure stands."""
    from ..text.ledger import lines_named

    lines = lines_named(words)
    if _of_change(words):  # "change_in_inventory" is no inventory row's figure
        return None
    if label is not None:
        places = [p for p in places if p[0].cells[0] == label]
    own = _content_words(words)
    if len(lines) != 1 or not places or any(lines & lines_named(row.cells[0]) or own & _content_words(row.cells[0])
                                            for row, _, _, _ in places):
        return None
    line = next(iter(lines))
    year = _year_of(words) if named_year else None
    if year is None:
        years = {y for _, _, column, _ in places for y in column}
        if len(years) != 1 or any(not column for _, _, column, _ in places):
            return None
        year = years.pop()
    found = _line_cell(line, tables, year)
    if found is None:
        return None
    value, row, k = found
    where = (f"{row.cells[0]}, the {row.header[k]} column; the model copied {_written(figure)} from "
             f"\"{places[0][0].cells[0] or 'another row'}\"")
    return _signed(figure, places[0][3], value), where, row.cells[0]


_DIFFERENCE = re.compile(r"\b(?:change|changes|increase|decrease|growth|delta|diff|difference)\b", re.IGNORECASE)


def _of_change(words: str) -> bool:
    """Whether a working's name (or name and note, ``words``) speaks of a change in a figure, not the figure."""
    return _DIFFERENCE.search(words.replace("_", " ")) is not None


def _content_words(text: str) -> set[str]:
    """A name's, note's or label's words that say what it is, stemmed to five letters ("selling" and "sells" one),
    years and the words of every line ("total", "net") aside."""
    from ..text.words import STOPWORDS

    words = re.findall(r"[a-z]+", text.lower().replace("_", " "))
    return {w[:5] for w in words if len(w) > 2 and w not in STOPWORDS and w not in _COMMON and not w.startswith("fy")}


_COMMON = frozenset("total net gross average avg change year years fiscal ended ending end the and current "
                    "consolidated adjusted".split())


# a figure after a line's name, as a statement's row writes it ("| Inventories, net | 2,721 |")
_FIGURE_AFTER = re.compile(r"[^\d\n.;]{0,30}?[\s|:$(]-?\d")


def _rows_of(line: str, rows: Sequence[str]) -> list[str]:
    """The rows of what was read that give the statement line ``line`` a figure ("| Inventories | 2,721 |"; in a
    statement read as one line of text, the stretch from its name on), those naming it earliest in the row first:
    what a re-ask for a line no figure was taken from shows."""
    from ..text.ledger import places

    found = []
    for row in rows:
        for start, end, name in places(row):
            if name == line and _FIGURE_AFTER.match(row, end):
                text = row if len(row) <= _ROW_CHARS else row[start:start + _ROW_CHARS]
                found.append((start, len(row), " ".join(text.split())))
                break
    return [text for _, _, text in sorted(found)[:ROWS]]


# qualifiers of which a row is one at most: a "net" figure is never the "gross" row's
_QUALIFIERS = (frozenset({"gross", "operating", "net"}), frozenset({"basic", "diluted"}),
               frozenset({"current", "noncurrent"}))


def _qualifiers(text: str) -> set[str]:
    words = re.sub(r"non[\s-]+current|long[\s-]+term", "noncurrent", text.lower().replace("_", " "))
    return set(re.findall(r"[a-z]+", words))


def _label(row: str) -> str:
    """A row's words before its first figure ("| Gross profit | " of "| Gross profit | 9,440 | 9,191 |")."""
    return re.split(r"[$(]?\s*-?\d", row, maxsplit=1)[0]


def _labels(figure: float, row: str) -> list[str]:
    """The words before each place ``row`` writes ``figure``, back to the figure before them ("Gross profit" for
    9,191 in "Revenue 39,403 39,528 Gross profit 9,440 9,191": a statement read as one line of text)."""
    out = []
    for start, amount in placed(row, years=True):
        if _in_text(figure, [amount]):
            before = re.sub(r"[\s\d,.$()%|—–-]+$", "", row[:start])  # back over the figures of its own row
            out.append(re.split(r"\d[\d,.]*\)?%?", before)[-1][-_ROW_CHARS:].strip(" |:"))
    return out


def _other_row(figure: float, words: str, rows: Sequence[str]) -> tuple[str, frozenset[str], set[str]] | None:
    """Where every place in what was read that writes ``figure`` is labelled with another qualifier of a kind the
    figure's name and note give ("net_profit_2017 = 9440" read off "Gross profit 9,440"): (that label and the
    figure, the name's qualifiers of that kind, the label's); else None — a figure written nowhere, under no such
    qualifier, or under its own."""
    named = _qualifiers(words)
    wanted = [(group & named, group) for group in _QUALIFIERS if group & named]
    if not wanted:
        return None
    found: tuple[str, frozenset[str], set[str]] | None = None
    for row in rows:
        for label in _labels(figure, row):
            have = _qualifiers(label)
            clash = next(((said, have & group) for said, group in wanted if have & group and not have & said), None)
            if clash is None:
                return None  # a place the name may mean
            if found is None:
                found = (f"{label} {shown(figure)}", *clash)
    return found


def _number(node: ast.expr) -> float | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    return None


def _evaluate(node: ast.expr, values: dict[str, float], written: Sequence[Amount], taken: list[float],
              read: dict[float, float] | None = None, constants: frozenset[float] = CONSTANTS) -> float:
    """The value of a formula, every number in it found in the text (added to ``taken``) or a constant; a number in
    ``read`` is replaced by the figure pagemind read for it (:func:`_row_of`), its sign kept; ``constants``: the
    numbers a formula may write that are no figures (a formula of pagemind's own adds its numbers)."""
    if (number := _number(node)) is not None:
        if abs(number) not in constants:
            if not _in_text(number, written):
                raise Problem(f"{number:g} is not a figure in the text: copy each figure from the text")
            if read and abs(number) in read:
                number = math.copysign(1.0, number) * read[abs(number)]
            taken.append(number)
        return number
    if isinstance(node, ast.Name):
        if node.id not in values:
            raise Problem(f"{node.id} is used before it is given a value")
        return values[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _evaluate(node.operand, values, written, taken, read, constants)
        return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS \
            and not node.keywords and 1 <= len(node.args) <= (2 if node.func.id == "round" else 1):
        inner = _evaluate(node.args[0], values, written, taken, read, constants)
        if node.func.id == "abs":
            return abs(inner)
        digits = _number(node.args[1]) if len(node.args) == 2 else 0.0
        if digits is None or digits != int(digits) or not -12 <= digits <= 12:
            raise Problem("round() takes a whole number of digits, written as a number: round(x, 2)")
        return float(round(inner, int(digits)))
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_evaluate(node.left, values, written, taken, read, constants),
                                         _evaluate(node.right, values, written, taken, read, constants))
    raise Problem(f"only numbers, names, + - * /, parentheses, round() and abs(): not {ast.unparse(node)[:40]!r}")


def _in_text(value: float, written: Sequence[Amount]) -> bool:
    """Whether ``value`` is one of the amounts ``written`` as the text writes it — positive for any sign (a table's
    "(1,577)" is an outflow of 1577), negative only for a negative one —: equal within the rounding of the less
    precise of the two and within :data:`~pagemind.text.numbers.ROUNDED` of each other ("3" is not the text's 2.7),
    a percent also as its fraction ("30.8%" as 30.8 or 0.308), and a figure the text scales in words in thousands,
    millions or billions of it ("$19.0 billion" as 19000, in millions). No other scale is supplied: a table's bare
    figure is to be copied, not converted."""
    size = abs(value)
    step = 10.0 ** -_decimals(value) / 2
    for w in written:
        if value < 0 and w.value >= 0:  # a minus the text does not write is the model's, not the text's
            continue
        wanted = abs(w.value)
        factors = [1.0, 100.0] if w.percent else [1.0]
        if w.scale > 1:  # "$19.0 billion" as 19000 (millions) or 19000000 (thousands)
            factors += [10.0 ** power / w.scale for power in (3, 6, 9) if 10.0 ** power < w.scale]
        for factor in factors:  # the model's figure and its rounding in the text's units
            given = size * factor
            gap = abs(given - wanted)
            if gap <= max(step * factor, 10.0 ** -w.decimals / 2) * (1 + 1e-9) and gap <= ROUNDED * max(given, wanted):
                return True
    return False


def _decimals(value: float) -> int:
    """The decimals ``value`` is written to (1e-05 -> 5, 2707.3 -> 1, 1e+20 -> 0)."""
    exponent = Decimal(repr(abs(value))).normalize().as_tuple().exponent
    return max(0, -exponent) if isinstance(exponent, int) else 0


_YEAR = re.compile(r"\b(?:FY|fiscal |year )?(?:19|20)\d{2}\b|\bFY\d{2}\b", re.IGNORECASE)


def _undated(note: str) -> str:
    """A note without its years: "Net revenue, fiscal 2023" -> "Net revenue"."""
    return " ".join(re.sub(r"[\s,;-]+$", "", _YEAR.sub("", note)).split()) or note


def _written(value: float) -> str:
    """A figure as a table writes it, thousands separated and without its sign: -2707.3 -> "2,707.3"."""
    return f"{abs(value):,.{_decimals(value)}f}"


def read_off(answer: str, written: Sequence[Amount]) -> bool:
    """Whether the model's ``answer`` states figures and each is one ``written`` in what it read: a figure read off
    the page (a stated effective tax rate, a growth the text gives) needs no working; one it worked out in its head
    or in its reply ("12.483/10,387 = 1.18"), or no figure at all, does."""
    stated = amounts(answer)
    if _SUM.search(answer):  # "12.483/10,387 = 1.18": worked out in the reply, whatever its figures match
        return False
    return bool(stated) and all(_in_text(a.value, written) for a in stated)


def work_out(question: Question, evidence: Sequence[Evidence], answer: str, options: AnswerOptions, llm: LLM,
             context: Context) -> Computation | Unworked | None:
    """The working of ``answer`` from the ``evidence`` read (as many units as fit beside the request); None without
    a call when the answer's figures are read off the text (:func:`read_off`) and the question asks for a figure a
    filing may state (a growth, an effective tax rate — not a ratio, a margin, an average or what it defines), or
    with the fallback recorded when no reply gives a working (then :func:`unworked` says whether the model's own
    figure stands unchecked)."""
    from ..llm.decide import Invalid, decide
    from ..text.tables import table_rows
    from .evidence import fitting, read_in_full
    from .formula import LINE, defined

    asked = amounts(question.text, years=True)
    full = read_in_full(evidence)
    by_unit = [amounts(e.text, years=True) for e in full]
    formula = defined(question.text)  # a formula pagemind reads from the question: always worked out by it
    if formula is None and _DERIVED.search(question.text) is None and read_off(
            answer, [a for found in by_unit for a in found] + asked):
        return None
    fitted = fitting(full, llm, lambda units: request(units, question, answer, formula))
    if fitted is None:
        context.fallback("computed answer: what was read does not fit the window beside the request")
        return unworked(question.text, answer, needed(question.text), [])
    shown_units, built = fitted
    # the figures are checked against what this request shows, not against units left out to fit it
    written = [a for found in by_unit[:len(shown_units)] for a in found] + asked  # the units shown: a prefix
    lines = [line for e in shown_units for line in e.text.splitlines() if line.strip()]
    tables = fiscal_years([row for i, e in enumerate(shown_units) for row in table_rows(e.text, 1000 * i)],
                          question.text)  # each unit's tables numbered apart
    needs, halves = needed(question.text), averaged(question.text)
    if formula is not None and formula.source == LINE:  # one line's figure in one year: its cell, without a call
        only = formula.figures[0]
        cell = _named_cell(only.name, tables)
        if cell is not None:  # the draft's figure, read at the cell where it is a miscopy (said so), else the cell
            stated = amounts(answer)
            for given in ([stated[0].value] if len(stated) == 1 else []) + [cell[0]]:
                working = parse(f"{only.name} = {_plain(given)}  # {cell[2]}", written, rows=lines, tables=tables,
                                defined=formula)
                if not isinstance(working, str):
                    return Computation(working.lines, answer)
        elif _in_row_of(answer, only.line, lines):
            return None  # no one cell to read (rows that disagree, no column of the year): the draft's figure is
            # written in a row of the line, as read (Boeing's PP&E, whose notes print it gross and net)

    before: list[str] = []  # the earlier replies' code, where the formula is pagemind's

    def amended(reply: str) -> str:
        """Where the formula is pagemind's, a re-ask's reply amends the figures given before (the model answers a
        re-ask with the figures it was told of alone): the earlier replies' lines, then its own, the last value of
        a name counting."""
        if formula is None:
            return reply
        before.append(code_of(reply))
        return "\n".join(before)

    def read(reply: str) -> Computation | Invalid:
        working = parse(amended(reply), written, rows=lines, needs=needs, tables=tables, averages=halves,
                        defined=formula)
        return Invalid(working) if isinstance(working, str) else working

    def cut(reply: str) -> Computation | Invalid:  # a reply cut at its token limit: its last line is cut too
        working = parse(amended(reply.rsplit("\n", 1)[0]), written, complete=False, rows=lines, needs=needs,
                        tables=tables, averages=halves, defined=formula)
        return Invalid(working) if isinstance(working, str) else working

    context.phase("working out the figure")
    decision = decide(llm, built, read, context.trace, retries=options.max_retries, truncation=cut,
                      describe=lambda w: "; ".join(f"{x.name} = {shown(x.value)}" for x in w.results))
    if decision.value is None:
        context.fallback(f"computed answer: no working could be read after {decision.calls} replies "
                         f"(the last: {decision.problems[-1][:400] if decision.problems else 'none'}); the model's "
                         "own answer stands")
        return unworked(question.text, answer, needs, lines)
    return Computation(decision.value.lines, answer, formula.change if formula is not None else None)


def _in_row_of(answer: str, line: str, rows: Sequence[str]) -> bool:
    """Whether the figures ``answer`` states are all written in one row (a line of what was read) naming ``line``."""
    from ..text.ledger import lines_named

    stated = amounts(answer)
    return bool(stated) and any(line in lines_named(row) and all(_in_text(a.value, amounts(row)) for a in stated)
                                for row in rows)


def unworked(question: str, answer: str, needs: Sequence[str], lines: Sequence[str]) -> Unworked | None:
    """Why the model's own ``answer`` stands unchecked when no working was read: the question derives its figure
    (:data:`_DERIVED`: a ratio, an average, a turnover, what it defines) — unless it needs one statement line alone
    and the answer's figures are written in a row of that line in what was read (``lines``): a line's value read off
    its row ("what is Boeing's year end FY2018 net property, plant, and equipment", "calculate ..." though it asks
    for no arithmetic). None where the question asks for no derived figure."""

    if _DERIVED.search(question) is None:
        return None
    if len(needs) == 1 and _in_row_of(answer, needs[0], lines):
        return None
    return Unworked("a figure the question asks to be worked out, and no working pagemind could check: what was "
                    "read does not state it as asked")


__all__ = ["Computation", "Line", "Unworked", "asked", "needed", "parse", "read_off", "request", "shown", "unworked",
           "work_out"]
