"""A metric the question defines is computed by its definition, not by the model's reading of it (issue 47).

FinanceBench's metrics questions, and an analyst's, say what they mean: "DPO is defined as: 365 * (average accounts
payable between FY2017 and FY2018) / (FY2018 COGS + change in inventory between FY2017 and FY2018)". Asked to write
the working, the default 1.5B model took the figures and then its own formula — a two-year average summed and not
halved, the inventory balance for its change, COGS without it. :func:`defined` reads such a definition into the
formula pagemind computes, over figures named by their statement line and year::

    answer = 365 * ((accounts_payable_2017 + accounts_payable_2018) / 2) / (abs(cost_of_sales_2018) +
             (inventory_2018 - inventory_2017))

so the model is asked only for the figures (each checked in the text as any working's figure is, or read from its
line's row and its year's column where it gives none: :mod:`pagemind.answering.compute`). A definition is read only
where every term is a number, another definition of the question ("CCC is defined as: DIO + DSO - DPO", each
defined after it), one statement line (:mod:`pagemind.text.ledger`) of a year, a two-year average of one, or a change
in one between two years — and only where it defines what the question asks ("unadjusted EBITDA" defined where a
three-year average EBITDA margin is asked is read inside that average's textbook formula, :func:`_by_name`). A line
spent (capex, COGS, dividends: :data:`~pagemind.text.ledger.SPENT`) enters as the amount spent, ``abs(capex_2020)``,
whichever sign the model copies. One year's retention, payout or current ratio, working capital and free cash flow are
read by their one textbook reading, and a question asking for one statement line's figure in one year ("what is
Amazon's FY2019 net income?") is the formula of that line alone: its figure is read at its cell. Anything else: None,
and the model writes the formula as before.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from ..text.words import AUXILIARY, LEAD_IN, asking, polar

_DEFINITION = re.compile(
    r"(?:(?<=^)|(?<=[.?!:]\s))\s*(?:(?P<define>define\s+(?P<named>[^.?!:]{1,80}?)\s+as)|(?P<name>[^.?!:]{1,80}?)\s+"
    r"(?:here\s+)?(?:is\s+)?defined\s+as)\s*:?\s*(?P<expression>.+?)\s*(?=\.\s|\.?$)",
    re.IGNORECASE)
_ABBREVIATION = re.compile(r"\(([A-Za-z&]{2,8})\)")
_WORDS = ((re.compile(r"\bdivided\s+by\b", re.I), "/"), (re.compile(r"\b(?:multiplied\s+by|times)\b", re.I), "*"),
          (re.compile(r"\bplus\b", re.I), "+"), (re.compile(r"\b(?:minus|less)\b", re.I), "-"))
_TOKEN = re.compile(r"(\(|\)|\*|/|\+|(?<=\s)-(?=\s)|(?<=\()-|^-)")
_YEAR = re.compile(r"\b(?:FY\s*|fiscal\s+(?:year\s+)?)?((?:19|20)\d{2})\b|\bFY\s*(\d{2})\b", re.IGNORECASE)
_TWO_YEARS = (r"(?:between|from|over|for)\s+(?:the\s+)?(?:FY\s*|fiscal\s+(?:year\s+)?)?(\d{2,4})\s+(?:and|to|through|"
              r"-|–)\s+(?:FY\s*|fiscal\s+(?:year\s+)?)?(\d{2,4})")
_AVERAGE = re.compile(rf"^average\s+(?:of\s+)?(?:the\s+)?(.+?)\s+{_TWO_YEARS}$", re.IGNORECASE)
_CHANGE = re.compile(rf"^(?:the\s+)?(?:change|increase)\s+in\s+(?:the\s+)?(.+?)\s+{_TWO_YEARS}$", re.IGNORECASE)
_NUMBER = re.compile(r"^\d+(?:\.\d+)?$")
# words a term may hold beside its line and year ("FY2019 total revenue", "unadjusted operating income",
# "depreciation and amortization from the cash flow statement")
_PLAIN = frozenset("and the total net annual reported unadjusted gaap consolidated year end ending fiscal fy from in "
                   "of on as shown cash flow flows statement statements income balance sheet p&l operations amount "
                   "value".split())
# a question asking for something other than the defined figure itself: its average, its margin, its growth
_OTHER = re.compile(r"\b(?:average|avg|mean|margin|growth|cagr|change|per\s+share|percent\w*)\b|%", re.IGNORECASE)
# a line's name in a formula: words a working's name checker reads as the line alone
_NAMED = {"property, plant and equipment": "ppe", "depreciation and amortization": "depreciation_amortization"}
MAX_DEPTH = 3  # definitions within definitions
DEFINITION = "the question's definition"
TEXTBOOK = "the textbook formula of what the question names"
LINE = "the statement line and year the question names"


@dataclass(frozen=True)
class Figure:
    """A figure the formula reads: its name in the formula, its statement line and its year."""

    name: str  # accounts_payable_2017
    line: str  # accounts payable (a name of :data:`pagemind.text.ledger.LINES`)
    year: str  # 2017


@dataclass(frozen=True)
class Defined:
    """The question's metric as pagemind computes it."""

    metric: str  # what the definition names ("DPO", "Fixed asset turnover ratio")
    expression: str  # Python arithmetic over the figures' names and numbers
    figures: tuple[Figure, ...]
    source: str = DEFINITION  # where the formula comes from, as the working's result line notes it
    steps: tuple[tuple[str, str], ...] = ()  # named formulas the result reads, in order ("gross_margin_2022", ...)
    change: Change | None = None  # a question whether (or how much) a metric changed: the result is its change

    def listed(self) -> str:
        """The figures as the working's request lists them: "- accounts_payable_2017: accounts payable, 2017"."""
        return "\n".join(f"- {f.name}: {f.line}, {f.year}" for f in self.figures)

    def written(self) -> str:
        """The formula as the working's request shows it: its steps, then ``answer = ...``."""
        return "\n".join([f"{name} = {expression}" for name, expression in self.steps]
                         + [f"answer = {self.expression}"])


@dataclass(frozen=True)
class Change:
    """What a question about a metric's change between two years asks — whether it rose ("Does AMCOR have an
    improving gross margin profile as of FY2023?", "Did Pfizer grow its PPNE between FY20 and FY21?") or how much it
    changed ("How much has the effective tax rate of Corning changed between FY2021 and FY2022?"): the metric, the
    names of the working's lines holding its value in the earlier and the later year, and for a yes/no question the
    words answering a rise, a fall and no change ("Yes", "No"; "Improved", "Declined" where the question offers
    both)."""

    metric: str  # gross margin
    years: tuple[str, str]  # the earlier and the later year
    earlier: str  # gross_margin_2022: the line of the working holding the earlier year's value
    later: str
    rise: str = "Yes"  # "" where the question asks how much, not whether
    fall: str = "No"
    same: str = "No"
    unit: str = ""  # "%": a margin, a share or a rate, in percent

    def verdict(self, change: float) -> str:
        return self.rise if change > 0 else self.fall if change < 0 else self.same

    def periods(self) -> str:
        """The two years as a question names them ("FY2022 FY2023"; one where the question asks of one year's sign),
        for the support check."""
        return " ".join(dict.fromkeys(f"FY{year}" for year in self.years))


def name_of(line: str, year: str) -> str:
    """A figure's name in a formula: its line's words and its year (``cost_of_sales_2018``, ``ppe_2019``)."""
    return f"{_NAMED.get(line) or re.sub(r'[^a-z]+', '_', line.lower()).strip('_')}_{year}"


def defined(question: str) -> Defined | None:
    """The formula of the metric ``question`` asks for: where the question defines it (:func:`_by_definition`), or
    names a figure whose formula is the textbook's (:func:`_by_name`: a three-year average of a share or a margin, a
    growth rate, one year's ratio of one reading), or asks whether or how much a metric changed between two years
    (:func:`_by_change`: its value in each, the result the change), or for one statement line's figure in one year
    (:func:`_by_line`: the formula is that line); None otherwise."""
    definitions = {}
    for m in _DEFINITION.finditer(question):
        name = " ".join((m.group("named") or m.group("name") or "").split())
        name = re.sub(r"^(?:and|where|with|here|the)\s+", "", name, flags=re.IGNORECASE)
        if name:
            definitions[name.lower()] = (name, m.group("expression"))
    asked = asking(question)
    if polar(asked):
        return _by_change(asked, definitions)
    percent = _IN_PERCENT.search(question) is not None
    found, source = _by_definition(asked, definitions, percent), DEFINITION
    if found is None:
        found, source = _by_name(asked, definitions, percent), TEXTBOOK
    if found is None and (how_much := _by_change(asked, definitions)) is not None:
        return how_much
    if found is None:
        found, source = _by_line(asked), LINE
    if found is None:
        return None
    metric, expression, figures = found
    try:
        expression = ast.unparse(ast.parse(expression, mode="eval"))  # as a working writes it: no idle parentheses
    except SyntaxError:
        return None
    return Defined(metric, expression, tuple(figures.values()), source)


Found = tuple[str, str, dict[str, Figure]]  # what is asked, the formula, its figures by name


def _by_definition(asked: str, definitions: dict[str, tuple[str, str]], percent: bool) -> Found | None:
    """The definition of what the asking sentence names, read into a formula (every term read: :func:`_term`), the
    year of a term without one the one year the sentence names; times 100 where the question asks for the answer in
    percent (a definition of a share as a fraction: "gross margin is defined as: gross profit / revenue")."""
    main = next((d for key, d in definitions.items() if _names(key, asked)), None)
    if main is None:
        return None
    outside = re.sub(re.escape(main[0]), " ", asked, flags=re.IGNORECASE)
    if _OTHER.search(outside):
        return None
    years = _years_in(asked)
    figures: dict[str, Figure] = {}
    expression = _expression(main[1], definitions, years.pop() if len(years) == 1 else None, figures, 0)
    if expression is None or not figures:
        return None
    return main[0], f"({expression}) * 100" if percent and not _IN_HUNDREDS.search(expression) else expression, figures


_RANGE = r"FY\s*((?:19|20)\d{2})\s*(?:-|–|to|through)\s*FY\s*((?:19|20)\d{2})"
_AVERAGED = re.compile(rf"\b{_RANGE}\s+(\d)[\s-]+year\s+average\s+(?:of\s+)?(?:the\s+)?(.+?)\s+for\s+",
                       re.IGNORECASE)
_GROWTH = re.compile(rf"\b{_RANGE}\s+(?:total\s+)?(.+?)\s+growth\s+rate\s+for\s+|\byear[\s-]+over[\s-]+year\s+"
                     rf"(?:change|growth)\s+in\s+(.+?)\s+from\s+FY\s*((?:19|20)\d{{2}})\s+to\s+FY\s*"
                     rf"((?:19|20)\d{{2}})\b", re.IGNORECASE)
_SHARE = re.compile(r"^(.+?)\s+as\s+an?\s+(?:%|percent(?:age)?)\s+of\s+(.+)$", re.IGNORECASE)
_MARGIN = re.compile(r"^(.+?)\s+(?:%\s+)?margin(?:\s*\(as\s+an?\s+(?:%|percent(?:age)?)\))?$", re.IGNORECASE)
_MARGIN_OF = {"gross": "gross profit", "operating": "operating income", "net": "net income", "profit": "net income"}
_PERCENT = re.compile(r"%|\bpercent", re.IGNORECASE)
# the answer asked for in percent, wherever the question says so ("Answer in units of percents")
_IN_PERCENT = re.compile(r"\b(?:in\s+(?:units\s+of\s+)?percent(?:s|age)?|as\s+an?\s+(?:%|percent(?:age)?))|\(\s*%\s*\)",
                         re.IGNORECASE)
_IN_HUNDREDS = re.compile(r"\*\s*100\b")


# one year's figure whose textbook formula has one reading (a quick ratio, an inventory turnover or a return on assets
# each have several — year-end or average balances, which current assets — and stay the model's to write)
_RATIOS: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(rf"(?<![A-Za-z])(?:{pattern})(?![A-Za-z])",
                                                                     re.IGNORECASE), formula) for pattern, formula in (
    (r"retention\s+ratio|plowback\s+ratio", "(net income - dividends) / net income"),
    (r"(?:dividend\s+)?payout\s+ratio", "dividends / net income"),
    (r"current\s+ratio", "current assets / current liabilities"),
    (r"working\s+capital", "current assets - current liabilities"),
    (r"free\s+cash\s+flows?(?:\s+\(fcf\))?|fcf", "operating cash flow - capital expenditure"),
))


# another figure whose name holds a ratio's: words right before it ("days working capital", "unlevered free cash
# flow", "cash invested in net working capital") or after it ("... turnover", "... yield", "FCF/share", "... to net
# income", a parenthesis saying another formula: "(dividends plus buybacks)", "(dividends / cash from operations)")
_BEFORE_RATIO = re.compile(r"\b(?:days|non-?cash|(?:un)?levered|total|cash|adjusted|operating|core|normali[sz]ed|in|"
                           r"invested|simple|net)\s+$", re.IGNORECASE)
_AFTER_RATIO = re.compile(r"\s*(?:/|\b(?:turnover|yield|conversion|to|as|per|ratio|margin|days|vs\.?|versus|"
                          r"compared|intensity|cycle|over)\b|\([^)]*(?:/|\+|\bplus\b|\bbuy-?backs?\b|\brepurchases?\b|"
                          r"\bdivided\b|\bover\b)[^)]*\))", re.IGNORECASE)
_COMPARED = re.compile(r"\b(?:vs\.?|versus|compared|comparison|prior\s+year|previous\s+year|peers?|highest|lowest|"
                       r"which|quarters?|q[1-4])\b", re.IGNORECASE)


def _by_name(asked: str, definitions: dict[str, tuple[str, str]], percent: bool) -> Found | None:
    """A figure the asking sentence names over years, by its textbook formula: "the FY2017 - FY2019 3 year average
    of capex as a % of revenue" (each year's capex over its revenue, times 100, averaged), "… 3 year average net
    profit margin (as a %)" (a margin: the line over revenue), "the FY2019 - FY2020 total revenue growth rate", "the
    year-over-year change in revenue from FY2016 to FY2017" (in percent); or one year's ratio of :data:`_RATIOS`
    ("the FY2022 retention ratio": net income less dividends, over net income). A line of it may be one the question
    defines ("Define unadjusted EBITDA as …")."""
    figures: dict[str, Figure] = {}
    ratio = _named_ratio(asked, definitions)
    if ratio is not None:
        return ratio
    percent = percent or _PERCENT.search(asked) is not None
    if (m := _AVERAGED.search(asked)) is not None:
        start, end, count, metric = int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4)
        if end - start + 1 != count or not 2 <= count <= 5:
            return None
        each = [_ratio(metric, str(y), definitions, figures) for y in range(start, end + 1)]
        if any(e is None for e in each):
            return None
        return m.group(0).rsplit(" for ", 1)[0], f"({' + '.join(str(e) for e in each)}) / {count}", figures
    if (m := _GROWTH.search(asked)) is not None:
        first, last = (m.group(1), m.group(2)) if m.group(1) else (m.group(5), m.group(6))
        line = m.group(3) or m.group(4)
        if int(last) - int(first) != 1:
            return None
        a = _expression(line, definitions, first, figures, 1)
        b = _expression(line, definitions, last, figures, 1)
        if a is None or b is None:
            return None
        rate = m.group(3) is not None or percent  # a growth rate is in percent; a change is an amount unless asked so
        return (m.group(0).removesuffix(" for ").strip(),
                f"(({b}) - ({a})) / ({a}) * 100" if rate else f"({b}) - ({a})", figures)
    return None


# what an asking sentence may hold beside one statement line and its year: "What is Amazon's FY2019 net income
# attributable to shareholders (in USD millions)?", "what is the year end FY2018 amount of accounts payable for MGM
# Resorts?" — its opening, the filer named before or after, the units asked, a holder of the parent's figure
_ASKING_FIGURE = re.compile(r"(?:^|,)\s*(?:what|how\s+much)\s+(?:is|was|were|are)\s+", re.IGNORECASE)
_UNITS_ASKED = re.compile(r"\(\s*in\s+(?:USD|US\$|\$|dollars)?\s*(?:millions?|billions?|thousands?)?\s*\)|"
                          r"\bin\s+(?:USD|US\$)\s+(?:millions?|billions?|thousands?)\b", re.IGNORECASE)
_PARENT_HOLDERS = re.compile(r"\battributable\s+to\s+(?:the\s+)?(?:(?:common\s+)?(?:share|stock)holders|company|"
                             r"parent)\b", re.IGNORECASE)
_QUALIFIED = re.compile(r"\b(?:exclud\w*|includ\w*|constant\s+currency|pro\s+forma|assum\w*|if|adjust\w*|organic|"
                        r"non-?gaap|without|except|net\s+of|before|after)\b", re.IGNORECASE)
_OTHER_UNITS = re.compile(r"\b(?:billions?|thousands?|bn|euros?|eur|gbp|per\s+share)\b", re.IGNORECASE)
_PART_OF_YEAR = re.compile(r"\b(?:h[12]|half|halves|ytd|months?|weeks?|quarters?|q[1-4]|segments?|per|each)\b",
                           re.IGNORECASE)
_FILER = re.compile(r"(?:^|\s)(?:[A-Z][\w&.-]*\s+){0,3}[A-Z][\w&.-]*['’]s?(?=\s)|\s+for\s+(?:[A-Z][\w&.,'’-]*\s*)+$")


def _by_line(asked: str) -> Found | None:
    """One statement line's figure in one year, where the asking sentence asks for nothing else ("What is Amazon's
    FY2019 net income attributable to shareholders (in USD millions)?"): read at its cell, not at the column the model
    copies (the 2017 column of a table whose columns run 2017, 2018, 2019)."""
    from ..text.ledger import places

    opening = next(reversed(list(_ASKING_FIGURE.finditer(asked))), None)  # after a lead-in ("By drawing ..., what")
    if opening is None or _QUALIFIED.search(asked[:opening.start()]) or _OTHER_UNITS.search(asked):
        return None  # "Excluding the impact of foreign exchange, what ...", "... in USD billions": not the cell
    rest = asked[opening.end():].rstrip(" ?")
    outside = rest  # the words outside its lines' names ("property, plant, and equipment" is one name)
    for start, end, _ in reversed(places(rest)):
        outside = outside[:start] + "_" * (end - start) + outside[end:]
    if not rest or "," in outside or " and " in outside.lower():
        return None  # a list of figures, a clause: not one line's figure
    words = _UNITS_ASKED.sub(" ", rest)
    words = _PARENT_HOLDERS.sub(" ", _FILER.sub(" ", words))
    years = _years_in(words)
    if len(years) != 1 or _OTHER.search(words) or _COMPARED.search(rest) or _PART_OF_YEAR.search(rest):
        return None
    figures: dict[str, Figure] = {}
    name = _figure(_YEAR.sub(" ", words), years.pop(), figures)
    return None if name is None else (" ".join(words.split()), name, figures)


_UP = r"improv(?:e|es|ed|ing)|increas(?:e|es|ed|ing)|gr[eo]w(?:s|n|ing)?|ris(?:e|es|en|ing)|rose|expand(?:s|ed|ing)?"
_DOWN = (r"declin(?:e|es|ed|ing)|decreas(?:e|es|ed|ing)|f[ae]ll(?:s|en|ing)?|drop(?:s|ped|ping)?|"
         r"shr[iau]nk(?:s|ing)?|contract(?:s|ed|ing)?|worsen(?:s|ed|ing)?|deteriorat(?:e|es|ed|ing)")
_DIRECTION = rf"(?:{_UP}|{_DOWN})"
_JUDGED = re.compile(r"^(?:improv|worsen|deteriorat)", re.IGNORECASE)  # better or worse: said of what more is better
_MORE_IS_BETTER_RATIOS = re.compile(r"current\s+ratio|(?:net\s+)?working\s+capital|free\s+cash\s+flows?|fcf",
                                    re.IGNORECASE)
_MORE_IS_BETTER_LINES = frozenset({"revenue", "gross profit", "operating income", "net income", "operating cash flow"})
_SUBJECT = r"(?-i:(?:[A-Z0-9][\w&.'’-]*|&)(?:\s+(?:[A-Z0-9][\w&.'’-]*|&)){0,3})"  # a name: capitalised words
_PERIOD = r"(?P<period>\s+(?:as\s+of|in|for|between|from|over|during|year|based\s+on)\b.*)?"
_AUX = r"^(?:is|are|was|were|has|have|had|does|do|did)\s+"
_CHANGES = (  # "Does AMCOR have an improving gross margin profile as of FY2023?"
    re.compile(rf"{_AUX}(?:the\s+)?{_SUBJECT}\s+(?:have|has|had|show|shows|showed|see|report)\s+(?:an?\s+)?"
               rf"(?P<direction>{_DIRECTION})\s+(?P<metric>.+?){_PERIOD}$", re.IGNORECASE),
    # "Did JnJ's net earnings as a percent of sales increase in FY2023?", "Has Amazon's revenue increased or decreased
    # from FY2018 to FY2019?", "Did revenue grow from FY2021 to FY2022?"
    re.compile(rf"{_AUX}(?:{_SUBJECT}['’]s?\s+|the\s+)?(?P<metric>[^']+?)\s+(?P<direction>{_DIRECTION})"
               rf"(?:\s+or\s+(?P<other>{_DIRECTION}))?{_PERIOD}$", re.IGNORECASE),
    # "Did Pfizer grow its PPNE between FY20 and FY21?"
    re.compile(rf"{_AUX}(?:the\s+)?{_SUBJECT}\s+(?P<direction>{_DIRECTION})\s+(?:its|their|the)\s+(?P<metric>.+?)"
               rf"{_PERIOD}$", re.IGNORECASE),
)
# "Does Corning have positive working capital based on FY2022 data?": the metric in one year, answered by its sign
_SIGNED = re.compile(rf"{_AUX}(?:the\s+)?{_SUBJECT}\s+(?:have|has|had|show|shows|showed|report|reports|reported)\s+"
                     rf"(?:an?\s+)?(?P<sign>positive|negative)\s+(?P<metric>.+?){_PERIOD}$", re.IGNORECASE)
# "How much has the effective tax rate of Corning changed between FY2021 and FY2022?", "How did Boeing's effective tax
# rate in FY2022 compare to FY2021?": the two values and the change
_HOW_MUCH = (
    re.compile(rf"^how\s+much\s+(?:has|have|had|did)\s+(?:{_SUBJECT}['’]s?\s+)?(?:the\s+)?(?P<metric>[^']+?)"
               rf"(?:\s+(?:of|for|at)\s+{_SUBJECT})?\s+chang(?:e|ed)(?P<period>\s+(?:between|from|over)\b.*)$",
               re.IGNORECASE),
    re.compile(rf"^how\s+(?:does|did|has)\s+(?:{_SUBJECT}['’]s?\s+|the\s+)?(?P<metric>[^']+?)\s+(?P<period>in\s+"
               rf"(?:FY\s*|fiscal\s+(?:year\s+)?)?\d{{2,4}}\s+compare(?:d)?\s+(?:to|with)\s+(?:(?:that\s+of\s+|the\s+)?"
               rf"(?:prior|previous)\s+year|(?:FY\s*|fiscal\s+(?:year\s+)?)?\d{{2,4}}))$", re.IGNORECASE),
)
# a question about a part of the company, a qualified figure, a cause, a threshold, several years or metrics, or a
# comparison with something else than the year before: not the statement line's change between two years
_NOT_THE_CHANGE = re.compile(r"\b(?:segments?|divisions?|business\s+units?|product\s+lines?|regions?|regional|"
                             r"exclud\w*|organic\w*|non-?gaap|adjust\w*|currenc\w*|constant|pro\s+forma|basis|"
                             r"because|due\s+to|driven|at\s+least|more\s+than|less\s+than|faster|slower|than|each|"
                             r"consecutive|every|peers?|industry|guidance|targets?|expect\w*|forecast\w*|and\s+(?:did|"
                             r"has|was|is)|per\s+share)\b", re.IGNORECASE)
_ONE_YEAR = re.compile(r"^\s*(?:as\s+of|in|for|during)\b", re.IGNORECASE)  # "as of FY2023": against the year before
_ASPECT = re.compile(r"\s+(?:profile|trend|performance|levels?)$|(?<=margin)\s+ratio$", re.IGNORECASE)
COMPARED = "the change the question asks about, of the textbook formula of what it names"


def _by_change(asked: str, definitions: dict[str, tuple[str, str]]) -> Defined | None:
    """A question whether one metric rose or fell between two years ("Does AMCOR have an improving gross margin
    profile as of FY2023?": FY2022 against FY2023; "Did Pfizer grow its PPNE between FY20 and FY21?"), or how much it
    changed ("How much has the effective tax rate of Corning changed between FY2021 and FY2022?"): the metric in each
    year by its textbook formula (a margin over revenue, a share, a ratio of :data:`_RATIOS`, an effective tax rate,
    one statement line), the result the later year's value less the earlier's, and what a rise answers. "Improving"
    or "worsening" is read only of what more of is better (a margin, revenue, an income, a current ratio …). None for
    a quarter, a half or months of a year, years more than two apart, a loss (its rise is the line's fall), how much
    in percent (a growth rate), a segment, a qualified figure, a cause, a threshold, several years or metrics, or a
    comparison with anything but the year before (:data:`_NOT_THE_CHANGE`)."""
    asked = asked.strip().rstrip("?").strip()
    if _NOT_THE_CHANGE.search(asked):
        return None
    lead = re.match(rf"{LEAD_IN}(?={AUXILIARY}|how\b)", asked, re.IGNORECASE)
    words = asked[lead.end():] if lead is not None else asked
    signed = _SIGNED.match(words)
    if signed is not None:
        return _by_sign(signed, asked[:len(asked) - len(words)], definitions)
    m = next((m for pattern in (*_CHANGES, *_HOW_MUCH) if (m := pattern.match(words)) is not None), None)
    if m is None:
        return None
    # the year may be the lead-in's: "For the fiscal year ended June 30, 2023, did Amcor's gross margin improve?"
    period = m.group("period") or ("in " + asked[:len(asked) - len(words)] if words != asked else "")
    if _PART_OF_YEAR.search(period) or _PART_OF_YEAR.search(m.group("metric")):
        # a quarter, a half, months: a release prints them beside the year to date, and the model copied Q2 2023's
        # figures for Q2 2022 and six months' for Q2 2023 (JnJ) — no cell of a year checks them
        return None
    years = sorted(_years_in(period))
    if len(years) == 1 and _ONE_YEAR.match(period):
        years = [str(int(years[0]) - 1), years[0]]
    if len(years) != 2 or not 1 <= int(years[1]) - int(years[0]) <= 2 or _years_in(m.group("metric")):
        return None
    metric = _metric_of(m.group("metric"))
    direction, other = m.groupdict().get("direction") or "", m.groupdict().get("other")  # "": how much
    if not metric or _LOSS.search(metric) or (not direction and _IN_PERCENT.search(asked)):
        return None  # a loss rising is the line falling; "how much, in percent": a growth rate, not the change
    figures: dict[str, Figure] = {}
    values = [_value(metric, year, definitions, figures) for year in years]
    if any(v is None for v in values):
        return None
    if any(_JUDGED.match(d) for d in (direction, other or "")) and not _better_more(metric):
        return None
    named = _yearly(metric, years, [str(v) for v in values], figures)
    if named is None:
        return None
    names, steps = named
    up = re.match(_UP, direction, re.IGNORECASE) is not None
    if not direction:  # how much it changed
        words_of = ("", "", "")
    elif other is not None:
        if (re.match(_UP, other, re.IGNORECASE) is not None) == up:
            return None  # "increased or improved": no alternative
        rise, fall = (direction, other) if up else (other, direction)
        words_of = (rise.capitalize(), fall.capitalize(), "Unchanged")
    else:
        words_of = ("Yes", "No", "No") if up else ("No", "Yes", "No")
    change = Change(metric, (years[0], years[1]), names[0], names[1], *words_of, unit=_unit_of(metric))
    return Defined(metric, f"{names[1]} - {names[0]}", tuple(figures.values()), COMPARED, tuple(steps), change)


def _yearly(metric: str, years: list[str], values: list[str],
            figures: dict[str, Figure]) -> tuple[list[str], list[tuple[str, str]]] | None:
    """The working's names of ``metric`` in each of ``years`` and the steps computing them from ``values`` (its
    expression in each year): a value that is one figure's name is that name, no step (None where a value does not
    parse)."""
    slug = re.sub(r"[^a-z]+", "_", metric.lower()).strip("_")[:40]
    steps: list[tuple[str, str]] = []
    names = []
    for year, value in zip(years, values, strict=True):
        if _NAME.match(value):
            names.append(value)
        else:
            name = f"{slug}_{year}"
            names.append(f"{slug}_value_{year}" if name in figures else name)  # abs(capex_2021): not the figure's name
            try:
                steps.append((names[-1], ast.unparse(ast.parse(value, mode="eval"))))
            except SyntaxError:
                return None
    return names, steps


def _unit_of(metric: str) -> str:
    """"%" for a share, a margin or a stated rate (a change of it is in points), else ""."""
    return "%" if _SHARE.match(metric) or _MARGIN.match(metric) or _STATED_RATE.fullmatch(metric) else ""


def _metric_of(words: str) -> str:
    """The metric a change or sign question names, its article, aspect and bracketed other name left out ("the
    gross margin profile" -> "gross margin"; "revenue (net sales)": its name once)."""
    return _ASPECT.sub("", re.sub(r"^(?:(?:the|its|their|in|of)\s+)+", "", _BRACKETED.sub(" ", words).strip(),
                                  flags=re.IGNORECASE)).strip()


def _by_sign(m: re.Match[str], lead: str, definitions: dict[str, tuple[str, str]]) -> Defined | None:
    """A question whether a metric was positive or negative in one year ("Does Corning have positive working capital
    based on FY2022 data?"): the metric's value in that year by its textbook formula (as :func:`_by_change` reads
    it), the answer its sign — a :class:`Change` of one year, "Yes" where the value has the sign asked. None for a
    part of a year, a loss, or a period of other than one year."""
    period = m.group("period") or (f"in {lead}" if lead else "")
    if _PART_OF_YEAR.search(period) or _PART_OF_YEAR.search(m.group("metric")):
        return None
    years = sorted(_years_in(period))
    metric = _metric_of(m.group("metric"))
    if len(years) != 1 or not metric or _LOSS.search(metric) or _years_in(m.group("metric")):
        return None
    figures: dict[str, Figure] = {}
    value = _value(metric, years[0], definitions, figures)
    if value is None:
        return None
    named = _yearly(metric, years, [value], figures)
    if named is None:
        return None
    (name,), steps = named
    verdicts = ("Yes", "No", "No") if m.group("sign").lower() == "positive" else ("No", "Yes", "No")
    change = Change(metric, (years[0], years[0]), name, name, *verdicts, unit=_unit_of(metric))
    return Defined(metric, name, tuple(figures.values()), COMPARED, tuple(steps), change)


_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")
_BRACKETED = re.compile(r"\([^()]*\)")
_LOSS = re.compile(r"\b(?:loss|losses|deficit)\b|^dividend$", re.IGNORECASE)  # (a dividend: per share, or paid?)


# a rate a filing states as such, read as a figure (its formula's lines, income taxes over income before them, are
# printed under many names and signs)
_STATED_RATE = re.compile(r"effective\s+(?:income\s+)?tax\s+rates?|etr", re.IGNORECASE)


def _value(metric: str, year: str, definitions: dict[str, tuple[str, str]], figures: dict[str, Figure]) -> str | None:
    """One year's value of ``metric``: a share or a margin (:func:`_ratio`), a ratio of :data:`_RATIOS`, an effective
    tax rate (a figure the text states), or one statement line (with plain words beside it)."""
    if metric.lower() in definitions:  # "Define gross margin as (revenue - cost of sales) / revenue. Did …?"
        expression = _expression(definitions[metric.lower()][1], definitions, year, figures, 1)
        share = _SHARE.match(metric) or _MARGIN.match(metric)  # a margin defined as a fraction: in percent
        return (f"({expression}) * 100" if expression is not None and share and not _IN_HUNDREDS.search(expression)
                else expression)
    if _SHARE.match(metric) or _MARGIN.match(metric):
        return _ratio(metric, year, definitions, figures)
    if _STATED_RATE.fullmatch(metric):
        name = name_of("effective tax rate", year)
        figures.setdefault(name, Figure(name, "effective tax rate", year))
        return name
    ratio = next((formula for pattern, formula in _RATIOS if pattern.fullmatch(metric)), None)
    return _expression(ratio or metric, definitions, year, figures, 1)


def _better_more(metric: str) -> bool:
    """Whether more of ``metric`` is better, so "improving" means rising: a margin, a current ratio, working capital,
    free cash flow, or revenue, an income or operating cash flow."""
    from ..text.ledger import places

    if _MARGIN.match(metric) or _MORE_IS_BETTER_RATIOS.fullmatch(metric):
        return True
    found = {name for _, _, name in places(metric)}
    return len(found) == 1 and found <= _MORE_IS_BETTER_LINES


def _named_ratio(asked: str, definitions: dict[str, tuple[str, str]]) -> Found | None:
    """One year's ratio of :data:`_RATIOS` the asking sentence names, the one year it names, and nothing else it
    asks of it (its average, its change, its growth: :data:`_OTHER`; a comparison: :data:`_COMPARED`), nor another
    figure whose name holds it ("net working capital turnover", "unlevered free cash flow", "cash dividend payout
    ratio", "total payout ratio (dividends plus buybacks)": :data:`_BEFORE_RATIO`, :data:`_AFTER_RATIO`)."""
    found = [(m, formula) for pattern, formula in _RATIOS for m in [pattern.search(asked)] if m is not None]
    years = _years_in(asked)
    if len(found) != 1 or len(years) != 1:
        return None
    m, formula = found[0]
    if _OTHER.search(asked[:m.start()] + " " + asked[m.end():]) or _COMPARED.search(asked) or \
            _BEFORE_RATIO.search(asked[:m.start()]) or _AFTER_RATIO.match(asked[m.end():]):
        return None
    figures: dict[str, Figure] = {}
    expression = _expression(formula, definitions, years.pop(), figures, 1)
    return None if expression is None else (m.group(0), expression, figures)


def _ratio(metric: str, year: str, definitions: dict[str, tuple[str, str]], figures: dict[str, Figure]) -> str | None:
    """One year's value of a share ("capex as a % of revenue") or a margin ("net profit margin": over revenue)."""
    share, margin = _SHARE.match(metric), _MARGIN.match(metric)
    if share is not None:
        part, whole = share.group(1), share.group(2)
    elif margin is not None:  # "gross margin": gross profit over revenue
        part, whole = _MARGIN_OF.get(margin.group(1).strip().lower(), margin.group(1)), "revenue"
    else:
        return None
    top = _expression(part, definitions, year, figures, 1)
    bottom = _expression(whole, definitions, year, figures, 1)
    if top is None or bottom is None:
        return None
    return f"({top}) / ({bottom}) * 100"  # a share "as a %", a margin: in percent


def _names(key: str, asked: str) -> bool:
    """Whether the asking sentence names the defined metric ``key``: its words, the abbreviation it gives ("days
    payable outstanding (DPO)": DPO), or its words without it."""
    said = {key, _ABBREVIATION.sub(" ", key).strip(), *(a.lower() for a in _ABBREVIATION.findall(key))}
    return any(re.search(rf"(?<![A-Za-z]){re.escape(' '.join(k.split()))}(?![A-Za-z])", asked, re.IGNORECASE)
               for k in said if k)


def _year(text: str) -> str:
    """A year as four digits: "2019", "19" -> "2019"."""
    return text if len(text) == 4 else "20" + text[-2:]


def _years_in(text: str) -> set[str]:
    """The years ``text`` names ("FY2019", "fiscal 2020", "FY19"), as four digits."""
    return {_year(m.group(1) or m.group(2)) for m in _YEAR.finditer(text)}


def _expression(text: str, definitions: dict[str, tuple[str, str]], year: str | None, figures: dict[str, Figure],
                depth: int) -> str | None:
    if depth > MAX_DEPTH:
        return None
    for pattern, operator in _WORDS:
        text = pattern.sub(f" {operator} ", text)
    out: list[str] = []
    for piece in _TOKEN.split(text):
        token = piece.strip()
        if not token:
            continue
        if token in "()*/+-":
            out.append(token)
            continue
        term = _term(token, definitions, year, figures, depth)
        if term is None:
            return None
        out.append(term)
    return " ".join(out).replace("( ", "(").replace(" )", ")")


def _term(token: str, definitions: dict[str, tuple[str, str]], year: str | None, figures: dict[str, Figure],
          depth: int) -> str | None:
    """One term of a definition as Python: a number, another definition, an average, a change or a figure."""
    if _NUMBER.match(token):
        return token
    other = definitions.get(token.lower()) or next(
        (d for key, d in definitions.items() if token.lower() in {a.lower() for a in _ABBREVIATION.findall(key)}),
        None)
    if other is not None:
        inner = _expression(other[1], definitions, year, figures, depth + 1)
        return None if inner is None else f"({inner})"
    for pattern, kind in ((_AVERAGE, "average"), (_CHANGE, "change")):
        m = pattern.match(token)
        if m is None:
            continue
        first, last = _year(m.group(2)), _year(m.group(3))
        if len(m.group(2)) == 3 or len(m.group(3)) == 3 or int(last) - int(first) != 1:
            return None
        a, b = _figure(m.group(1), first, figures), _figure(m.group(1), last, figures)
        if a is None or b is None:
            return None
        return f"(({a} + {b}) / 2)" if kind == "average" else f"({b} - {a})"
    years = _years_in(token)
    if len(years) > 1:
        return None
    return _figure(_YEAR.sub(" ", token), years.pop() if years else year, figures)


def _figure(words: str, year: str | None, figures: dict[str, Figure]) -> str | None:
    """The name of the figure of the one statement line ``words`` name (and plain words beside it) in ``year``."""
    from ..text.ledger import SPENT, places

    if year is None:
        return None
    found = places(words)
    if len({name for _, _, name in found}) != 1:
        return None
    rest = words
    for start, end, _ in reversed(found):
        rest = rest[:start] + " " + rest[end:]
    if any(w.lower() not in _PLAIN for w in re.findall(r"[A-Za-z&]+", rest)):
        return None
    line = found[0][2]
    name = name_of(line, year)
    figures.setdefault(name, Figure(name, line, year))
    return f"abs({name})" if line in SPENT else name  # capex, COGS, dividends: the amount spent, however signed


__all__ = ["COMPARED", "DEFINITION", "LINE", "TEXTBOOK", "Change", "Defined", "Figure", "defined", "name_of"]
