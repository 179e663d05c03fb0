"""Support: how well what an answer cites holds what it says — per claim, without an LLM call — and abstention.

:func:`assess` reads an answer's claims (its sentences; a multiple-choice answer's chosen option; a claim too short
to say anything on its own is read with the question) against the quotes of its citations and the text it read:

* **words**: the share of the claim's content words that the question does not already hold (lightly stemmed,
  rarity-weighted among what was read) found in the cited quotes — "grey" of "Grey." to "What colour was the coat?";
  a claim that adds no word to the question ("Yes.", "He is old." to "How old is he?") is looked for with the
  question's words and is at most partly supported (:data:`ECHO_CAP`): words alone cannot tell;
* **numbers and names**: every number of the claim (``1,200``, ``1200`` and ``twelve hundred`` are one number) and
  every name (a capitalised word inside a sentence) must be in the cited quotes; those found nowhere in what was
  read are named as :attr:`Support.unfounded`;
* **similarity** (where the embedded MiniLM encoder is installed): the best cosine similarity of the claim to a
  cited quote.

They are combined into a score per claim, labelled ``supported`` / ``partial`` / ``unsupported``
(:data:`SUPPORTED`, :data:`PARTIAL`), and one ``confidence`` for the answer (its weakest claim's score, lowered when
the question's own words are missing from what was read). A reply in which the model itself says the text does not
hold the answer ("the text does not say ...") is :attr:`Support.declined`.

Limits, said plainly: it checks that the answer's words, numbers and names are in the cited text, not that the text
says what the answer says — a negated or re-ordered statement made of the same words reads as supported. The opt-in
verifier (:mod:`pagemind.answering.verify`) asks the model that question of the cited text.

:func:`abstention` is the reply an abstaining answer gives instead: "The document does not say ..." with what was
closest.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from ..citations import Citation
from ..text.when import MONTHS, WEEKDAYS

if TYPE_CHECKING:
    from .question import Question

Label = Literal["supported", "partial", "unsupported"]
LABELS: tuple[Label, ...] = ("supported", "partial", "unsupported")
SUPPORTED = 0.6  # a claim scoring at least this is supported
PARTIAL = 0.35  # ... at least this, partly supported; below, unsupported
SHORT_CLAIM = 2  # a claim with at most this many content words is read with the question ("Grey." to "what colour")
ECHO_CAP = 0.55  # a claim adding no word to the question's ("Yes.") is at most partly supported: words cannot tell
COPY_CLAIMS, COPY_SHARE = 6, 0.8  # a reply of at least 6 sentences, 80% of them verbatim from what was read, copies it
_SIM_FLOOR, _SIM_SPAN = 0.25, 0.5  # MiniLM cosine below the floor counts 0, above floor+span counts 1
_WORD_SHARE = 0.6  # the words' share of a claim's score where similarity is measured (else all of it)
_MISSING_FACTOR = 0.5  # a claim's score is multiplied by this for each number or name not in the cited text
ANCHOR_FACTOR = 0.3  # ... by this when the sentences holding its words never name whom the question asks about
_TITLE_LINES = 4  # lines above a table that title it (statement, company, units), read with each of its rows
_TITLE_CHARS = 200  # of each such line
_TABLE_ROWS = 400  # rows above a cited row walked to the table's first
_ANCHOR_CONTEXT = 400  # characters before a quote (within its paragraph) where a name counts as mentioned ("She ...")

# what a reply speaks of when it says the reading does not hold the answer: "the filing", "the documents", "it"
TEXT_SUBJECT = (r"(?:(?:text|passage|document|story|filing|report|context|excerpt|information|article|statement|"
                r"table|source|evidence|record|book|chapter|page|section|transcript|conversation|note|data|"
                r"10-[KQ])s?|it|they)")
# "the text does not say", "is not mentioned", "no information about": the model declines to answer
_DECLINED = re.compile(
    r"\b(?:(?:" + TEXT_SUBJECT + r"\s+(?:\w+\s+)?(?:does|do|did)\s*(?:not|n['’]t)\s+"
    r"(?:(?:explicitly|specifically|directly|clearly)\s+)?(?:say|state|mention|specify|tell|indicate|provide|give|"
    r"contain|include|reveal))|(?:is|are|was|were)\s+not\s+(?:mentioned|stated|specified|given|provided|known|said|"
    r"indicated|clear)|no\s+(?:information|mention|indication|details?)\b|not\s+enough\s+information|"
    r"(?:cannot|could\s+not)\s+be\s+(?:determined|found|answered|inferred|deduced|established)|"
    r"\bI\s+(?:do|did|could|can|ca)\s*(?:not|n['’]t)\s+(?:know|find|tell|determine|see|recall)\b|"
    r"can(?:not|['’]t)\s+(?:determine|find|tell|answer)|"
    r"unable\s+to\s+(?:determine|find|answer)|(?:unknown|unclear|not\s+specified)\s*[.!]?\s*$|^\s*no\s+answer\b)"
    r"|^\W*(?:does|do)\s*(?:not|n['’]t)\s+say\b",
    re.IGNORECASE)


@dataclass(frozen=True)
class Claim:
    """One claim of an answer and how well the cited text supports it."""

    text: str
    label: Label
    score: float  # 0..1
    words: float  # the share (rarity-weighted) of its content words found in the cited text
    similarity: float | None  # best MiniLM cosine to a cited quote; None where the encoder is not used
    sources: tuple[int, ...]  # the citation markers ([1] is 1) holding most of its words
    missing: tuple[str, ...]  # its numbers and names not in the cited text
    unnamed: tuple[str, ...] = ()  # the question's names that the sentences holding its words never mention


@dataclass(frozen=True)
class Verdict:
    """The verifier's reading of the cited text (:mod:`pagemind.answering.verify`)."""

    label: Label | None  # None: no reply gave a label (a recorded fallback; never read as supported)
    confidence: float | None  # the label's probability where the backend returns log-probabilities, else None
    basis: str  # logprobs | label | fallback: where ``confidence`` comes from
    tokens: int  # prompt + completion tokens the verification cost
    problem: str = ""


@dataclass(frozen=True)
class Support:
    """How well an answer is supported by what it cites."""

    label: Label
    confidence: float  # 0..1: how far the answer is to be trusted (see :func:`assess`)
    claims: tuple[Claim, ...] = ()
    unfounded: tuple[str, ...] = ()  # numbers and names of the answer found nowhere in what was read
    relevance: float = 1.0  # the share of the question's content words found in what was read
    declined: bool = False  # the model itself said the text does not hold the answer
    scorer: str = "lexical"  # lexical | minilm: how similarity was measured
    verdict: Verdict | None = None
    reason: str = ""  # why an answer is not supported, in words
    rival: tuple[str, float] | None = None  # multiple choice: the best supported other option and its confidence
    later: int | None = None  # sentences after the last passage cited speaking of all the question asks
    # (later_mentions); None where that cannot be told (no document text, no citation into it)
    unwritten: tuple[str, ...] | None = None  # names the question asks about that the document never writes
    # (:func:`unwritten`; an answer about them abstains); None where that cannot be told (no document text)
    asked: float | None = None  # the share of what the question asks about that the cited passages speak of
    # (:func:`asked_cited`); None where that cannot be told (no citation, nothing asked)

    @property
    def sources(self) -> tuple[int, ...]:
        return tuple(sorted({n for c in self.claims for n in c.sources}))

    def line(self, fitted: float | None = None) -> str:
        """One line for a person: ``supported by [1][2]`` / ``partly supported ...`` / ``not supported ...``, with
        the confidence: ``fitted``, the fitted probability of right where one is shipped (the support's own score
        beside it), else the support's."""
        marks = "".join(f"[{n}]" for n in self.sources)
        if self.declined:
            head = "the model found no answer in what it read"
        elif self.unwritten:  # whatever its sentences' support, the answer is about no one the document names
            head = never_named(self.unwritten)
        elif self.label == "supported":
            head = f"supported by {marks}" if marks else "supported"
        elif self.label == "partial":
            head = (f"partly supported by {marks}" if marks else "partly supported") + " — check the sources"
        else:
            head = "not supported by the sources — check them"
        verdict = self.verdict
        checked = ("" if verdict is None else f"; verifier: {verdict.label or 'no verdict'}"
                   + (f" ({verdict.confidence:.0%})" if verdict.confidence is not None else ""))
        unfounded = f"; not in what was read: {', '.join(self.unfounded)}" if self.unfounded else ""
        later = ("; the document speaks of it again after the passages cited" if self.later and not self.declined
                 else "")
        why = f"; {self.reason}" if self.reason and not self.unfounded and not self.declined else ""
        shown = f"confidence {self.confidence:.2f}" if fitted is None else \
            f"confidence {fitted:.2f}, fitted; support {self.confidence:.2f}"
        return f"{head} ({shown}{checked}{unfounded}{why}{later})"

    def with_verdict(self, verdict: Verdict) -> Support:
        """This support with the verifier's reading folded in: the more cautious of its label and the words' is
        kept (a verifier can catch what words miss — a negation — but never excuse an answer the cited text does not
        hold), and the confidence becomes the mean of both (the verifier's label alone counts 1 / 0.5 / 0)."""
        if verdict.label is None:
            return Support(**{**_fields(self), "verdict": verdict})
        value = verdict.confidence if verdict.confidence is not None else _LABEL_VALUE[verdict.label]
        if verdict.confidence is not None and verdict.label != "supported":
            value = 1 - value if verdict.label == "unsupported" else 0.5 * value
        label = min(self.label, verdict.label, key=LABELS[::-1].index)  # unsupported < partial < supported
        reason = ("the verifier read the sources as not supporting it" if label != self.label and not self.reason
                  else self.reason)
        mean = round((self.confidence + value) / 2, 4)
        return Support(**{**_fields(self), "label": label, "confidence": mean, "verdict": verdict, "reason": reason})

    def against(self, letter: str, confidence: float) -> Support:
        """A chosen option's support beside the best supported other option (``letter``, its ``confidence``, judged
        the same way): when that one is better supported, this one is at most partly supported and its confidence
        is scaled by the ratio of the two."""
        if confidence <= self.confidence:
            return Support(**{**_fields(self), "rival": (letter, confidence)})
        label: Label = "partial" if self.label == "supported" else self.label
        ratio = self.confidence / confidence if confidence else 1.0
        return Support(**{**_fields(self), "label": label, "confidence": round(self.confidence * ratio, 4),
                          "rival": (letter, confidence),
                          "reason": self.reason or f"option {letter} is better supported by what was read"})

    def weakest(self) -> Support:
        """This support for claims that stand or fall together — a computed answer's figures, each one an input of
        its arithmetic: the label of its least supported claim (not "partial" for a mix), the reason naming it."""
        if not self.claims:
            return self
        weak = min(self.claims, key=lambda c: (LABELS[::-1].index(c.label), c.score))
        if LABELS.index(weak.label) <= LABELS.index(self.label):  # only ever lower: a verifier's "unsupported" stays
            return self
        why = (f"a figure of the working is not in the cited text: {weak.text}" if weak.label == "unsupported"
               else f"a figure of the working is only partly supported: {weak.text}")
        return Support(**{**_fields(self), "label": weak.label, "reason": why})

    def misplaced(self, claims: Sequence[str]) -> Support:
        """This support with ``claims`` (a computed answer's figures, :meth:`~.compute.Computation.misplaced`) read
        where the text speaks of another line: each unsupported, and so the answer, its confidence below partial
        support and halved, as a figure not in the text is."""
        if not claims:
            return self
        marked = tuple(replace(c, label="unsupported", score=0.0) if c.text in claims else c for c in self.claims)
        # (assess was given the computation's claims as they are, so each Claim's text is one of them)
        return Support(**{**_fields(self), "claims": marked}).unchecked(
            f"a figure of the working is written where the text speaks of something else: {claims[0]}")

    def unchecked(self, reason: str) -> Support:
        """This support for an answer whose figure no check could vouch for (:class:`~.compute.Unworked`, or a figure
        :meth:`misplaced`; ``reason`` says why): unsupported, its confidence below partial support and halved, as a
        figure not in the text is."""
        return Support(**{**_fields(self), "label": "unsupported",
                          "confidence": round(min(self.confidence, PARTIAL) * _MISSING_FACTOR, 4), "reason": reason})

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["sources"] = list(self.sources)
        data["line"] = self.line()
        return data


_LABEL_VALUE: dict[str, float] = {"supported": 1.0, "partial": 0.5, "unsupported": 0.0}


def _fields(support: Support) -> dict[str, Any]:
    return {f: getattr(support, f) for f in support.__dataclass_fields__}


# --- numbers and names -------------------------------------------------------------------------------------
_UNITS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve thirteen "
                                     "fourteen fifteen sixteen seventeen eighteen nineteen".split())}
_TENS = {w: 10 * i for i, w in enumerate("_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if i > 1}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9}
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?![\w])|(?<![\w.])\d+(?:st|nd|rd|th)\b")
_NUMBER_WORD = re.compile(r"\b(?:" + "|".join([*_UNITS, *_TENS, *_SCALES, "and"]) + r")(?:[\s-]+(?:"
                          + "|".join([*_UNITS, *_TENS, *_SCALES, "and"]) + r"))*\b", re.IGNORECASE)


def _plain_number(token: str) -> str:
    digits = re.sub(r"(st|nd|rd|th)$", "", token.replace(",", "").lstrip("+"))
    try:
        value = float(digits)
    except ValueError:
        return digits
    return str(int(value)) if value == int(value) else repr(value)


def _spelled(phrase: str) -> str | None:
    """``one hundred and twelve`` -> ``112``; None for a phrase that is no number (``and`` alone)."""
    total, current, seen = 0, 0, False
    for word in re.split(r"[\s-]+", phrase.lower()):
        if word in _UNITS:
            current += _UNITS[word]
        elif word in _TENS:
            current += _TENS[word]
        elif word == "hundred":
            current = max(current, 1) * 100
        elif word in _SCALES:
            total += max(current, 1) * _SCALES[word]
            current = 0
        elif word == "and":
            continue
        else:
            return None
        seen = True
    return str(total + current) if seen else None


def numbers(text: str) -> set[str]:
    """The numbers of ``text``, each in one plain form (``1,200`` and ``1200`` -> ``1200``; ``twelve`` -> ``12``)."""
    found = {_plain_number(m.group()) for m in _NUMBER.finditer(text)}
    for m in _NUMBER_WORD.finditer(text):
        value = _spelled(m.group())
        if value is not None:
            found.add(value)
    return found


_NAME = re.compile(r"\b[A-Z][a-z]+(?:[-'][A-Z]?[a-z]+)*\b")
_NOT_NAMES = frozenset({"i", "the", "a", "an", "mr", "mrs", "ms", "dr", "st", "he", "she", "it", "they", "we", "you",
                        "his", "her", "their", "its", "this", "that", "these", "those", "yes", "no", "not", "answer",
                        "in", "on", "at", "of", "to", "for", "and", "but", "or", "so", "if", "when", "while",
                        "because", "after", "before", "then", "there", "here", "what", "who", "which", "why",
                        "how", "option", "text", "document", "story", "passage", "according", "chapter",
                        "section", "page", "part", "table", "figure"})


def names(text: str) -> set[str]:
    """Capitalised words inside a sentence (not its first word), lower-cased: the names an answer asserts."""
    from ..text.words import sentences

    out: set[str] = set()
    for sentence in sentences(text):
        first = re.search(r"\w", sentence)
        for m in _NAME.finditer(sentence):
            if first is not None and m.start() > first.start() and m.group().lower() not in _NOT_NAMES:
                out.add(m.group().lower())
    return out


def declined(text: str) -> bool:
    """Whether a reply says the text does not hold the answer ("The passage does not say how old he is")."""
    return bool(_DECLINED.search(text)) and len(text.split()) <= 60


_PLACEHOLDERS = frozenset({"n/a", "null", "nan", "undefined", "unknown", "not available", "not applicable",
                           "no answer", "none found", "not found", "not mentioned", "not provided", "not specified"})


def placeholder(answer: str) -> bool:
    """Whether ``answer`` is, whole, a stand-in for no answer rather than an answer: "N/A", "null", "not found". Not
    "None", "nil" or "NA", which answer some questions ("What impairment charges were recorded?" — "None"; "NA" is
    North America): a reader whose replies put a null there reads them itself (MemWalker's leaves)."""
    return bare(answer).lower() in _PLACEHOLDERS


def bare(answer: str) -> str:
    """``answer`` without the marks around it (emphasis, quotes, a full stop, brackets), its spaces single."""
    return " ".join(answer.strip().strip("*_`\"'.!()[] ").split())


_NUMBER_WORDS = frozenset([*_UNITS, *_TENS, *_SCALES])


def facts(text: str) -> set[str]:
    """The content words of ``text`` (:func:`~pagemind.answering.evidence.terms`) with its numbers in one plain form
    (``112``, ``one hundred and twelve`` -> ``112``), so a number matches however it is written."""
    from ..text.words import VERDICTS, terms

    return {t for t in terms(text) if t not in _NUMBER_WORDS and t not in VERDICTS and not t[:1].isdigit()} | \
        numbers(text)


# --- the assessment ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Read:
    """What the claims are checked against: the cited quotes and everything read, as word, number and name sets."""

    quotes: tuple[str, ...]
    quote_terms: tuple[frozenset[str], ...]
    cited_numbers: frozenset[str]
    cited_words: frozenset[str]
    read_numbers: frozenset[str]
    read_words: frozenset[str]
    idf: dict[str, float] = field(default_factory=dict)
    rarest: float = 1.0  # the highest idf: what a word never seen in what was read weighs
    contexts: tuple[str, ...] = ()  # each quote with what precedes it in its paragraph, lower-cased
    headed: tuple[str, ...] = ()  # each quote under its table's title and header row where it is a table's row


@dataclass(frozen=True)
class _Corpus:
    """What depends on the texts read alone (their facts' rarity, numbers and words): made once per reading, whatever
    is judged against it (a multiple-choice answer judges every option against the same reading)."""

    idf: dict[str, float]
    numbers: frozenset[str]
    words: frozenset[str]


@lru_cache(maxsize=4)
def _corpus(read: tuple[str, ...]) -> _Corpus:
    from ..text.words import sentences

    joined = " ".join(read)
    return _Corpus(_idf([facts(s) for text in read for s in sentences(text)]), frozenset(numbers(joined)),
                   frozenset(re.findall(r"\w+", joined.lower())))


def _idf(pool: Sequence[set[str] | frozenset[str]]) -> dict[str, float]:
    """Each word's rarity over ``pool`` (the word sets of the sentences read): log(1 + sentences / those holding it)."""
    df: dict[str, int] = {}
    for words in pool:
        for w in words:
            df[w] = df.get(w, 0) + 1
    return {w: math.log(1 + len(pool) / n) for w, n in df.items()}


def _read(citations: Sequence[Citation], read: Sequence[str], whole: str | None = None) -> _Read:
    quotes = tuple(c.quote for c in citations)
    quote_terms = tuple(frozenset(facts(q)) for q in quotes)
    corpus = _corpus(tuple(read))
    idf = corpus.idf or _idf(quote_terms)  # nothing read: the quotes are the only pool
    cited_numbers = frozenset().union(*map(numbers, quotes)) if quotes else frozenset()
    cited_words = frozenset(re.findall(r"\w+", " ".join(quotes).lower()))
    placed = [_context(c, read, whole) for c in citations]
    return _Read(quotes, quote_terms, cited_numbers, cited_words, corpus.numbers | cited_numbers,
                 corpus.words | cited_words, idf, max(idf.values(), default=1.0),
                 tuple((head + before).lower() for head, before in placed),
                 tuple(head + c.quote for (head, _), c in zip(placed, citations, strict=True)))


def _context(citation: Citation, read: Sequence[str], whole: str | None = None) -> tuple[str, str]:
    """The quote's table's title lines and header row where it is a table's row ("" where not), and the quote with
    up to :data:`_ANCHOR_CONTEXT` characters before it in its paragraph (where "she" is named) — the head from
    ``whole``, the document's text, where what was read starts inside the table (a fragment of a long statement
    holds its rows, not its title)."""
    from ..citations import locate

    for text in read:
        span = locate(text, citation.quote)
        if span is not None:
            begin = max(0, span[0] - _ANCHOR_CONTEXT)
            paragraph = text.rfind("\n\n", begin, span[0])
            located = whole is not None and whole[citation.start:citation.end] == citation.quote
            head = _table_head(whole, citation.start) if whole is not None and located else \
                _table_head(text, span[0])
            return head, text[max(begin, paragraph + 2 if paragraph >= 0 else begin):span[1]]
    return "", citation.quote


def _table_head(text: str, at: int) -> str:
    """The title lines of the Markdown table whose row holds ``at`` (up to :data:`_TITLE_LINES` lines right above it:
    "Consolidated Statements of Cash Flows", "GENERAL MILLS, INC. AND SUBSIDIARIES", "(In Millions)") with its
    header row, and a newline; "" outside a table. A statement's row never names its company: its title does."""
    from ..text.tables import table_top

    top = table_top(text, at, lines=_TITLE_LINES, rows=_TABLE_ROWS - 1)  # _TABLE_ROWS rows above: too far down
    if top is None:
        return ""  # not a row; a text of no lines; or so far down a long table that its first row is not known
    return "\n".join([*(line[:_TITLE_CHARS] for line in top.title), top.first_row(text)[:_TITLE_CHARS]]) + "\n"


@lru_cache(maxsize=16)
def _figures(texts: tuple[str, ...]) -> tuple[Any, ...]:
    """The amounts of ``texts``, each with the scale its table or sentence states ("in millions")."""
    from dataclasses import replace

    from ..text.numbers import amounts, table_scale

    out: list[Any] = []
    for text in texts:
        for block in re.split(r"\n\s*\n", text):
            scale = table_scale(block)
            out += [replace(a, scale=scale) if a.scale == 1.0 and scale != 1.0 and not a.percent else a
                    for a in amounts(block)]
    return tuple(out)


def _same_figures(claim: str, texts: tuple[str, ...]) -> set[str]:
    """The claim's numbers (in :func:`numbers`' plain form) that are a figure of ``texts`` in other units or
    scales ("24.690" billion and "24,690" in a table in millions; "1.9%" and "0.019")."""
    from ..text.numbers import amounts, same_amount

    found = set()
    given = _figures(texts)
    for amount in amounts(claim):
        if any(same_amount(amount, other) for other in given):
            found |= numbers(amount.text)
    return found


def _as_cited(claim: str, quotes: tuple[str, ...], cited: frozenset[str]) -> str:
    """The claim with each figure that is a cited one in other units written as the quote writes it (``cited``:
    the quotes' numbers, in :func:`numbers`' plain form)."""
    from ..text.numbers import amounts, same_amount

    given = _figures(quotes)
    for amount in amounts(claim):
        if numbers(amount.text) & cited:
            continue  # written as the quote writes it already
        match = next((other for other in given if same_amount(amount, other)), None)
        if match is not None:
            claim = claim.replace(amount.text, match.text.lstrip("$€£¥ ").strip("()"), 1)
    return claim


def _same_period(column: set[str], asked: set[str]) -> bool:
    """Whether a column's periods are the asked ones: quarters compared where both name one, years where both do."""
    quarters = ({p for p in column if p.startswith("Q")}, {p for p in asked if p.startswith("Q")})
    years = (column - quarters[0], asked - quarters[1])
    return all(a & b for a, b in (quarters, years) if a and b) and any(a and b for a, b in (quarters, years))


def _other_period(question: str, claim: str, quotes: Sequence[str]) -> tuple[str, ...]:
    """The claim's figures read from a table column of another period than the question asks about ("Q1" given for
    a question about Q2; the 2021 column for FY2022): each as "N (the 2021 column)"; none when the question names
    no period, the figure is in no table, or its column is one asked about. ``quotes``: the cited quotes, a table's
    row under its table's header row (a quote of the row alone tells no column)."""
    from ..text.numbers import amounts, same_amount
    from ..text.tables import periods_named, table_rows

    asked = periods_named(question)
    if not asked:
        return ()
    wanted = [a for a in amounts(claim) if not periods_named(a.text)]
    out: list[str] = []
    for quote in quotes:
        for row in table_rows(quote):
            columns = [row.periods(k) for k in range(len(row.header))]
            if columns[0] or not any(_same_period(c, asked) for c in columns):
                continue  # no column of the asked period (or a header without the label's cell: one column off)
            figures = [amounts(cell) for cell in row.cells]
            asked_figures = [b for k in range(1, min(len(row.cells), len(columns))) if _same_period(columns[k], asked)
                             for b in figures[k]]
            if any(same_amount(a, b) for a in wanted for b in asked_figures):
                continue  # the claim gives the asked period's figure too: another's beside it is a comparison
            for j in range(1, min(len(row.cells), len(columns))):
                if not columns[j] or _same_period(columns[j], asked):
                    continue
                for a in wanted:
                    if any(same_amount(a, b) for b in figures[j]) and not any(same_amount(a, b)
                                                                              for b in asked_figures):
                        note = f"{a.text} (the {row.header[j]} column)"
                        if note not in out:
                            out.append(note)
    return tuple(out)


_REGISTRANT = re.compile(r"\(\s*exact\s+name\s+of\s+registrant", re.IGNORECASE)  # "\xa0" or "\n" between its words
_COVER = 20_000  # characters of a filing's cover page read for its registrant
_NAME_CHARS = 100  # longest registrant line
_NAME_LINES = 2  # a name printed over this many lines at most ("AMERICAN" / "EXPRESS COMPANY")
_SHORT_LINE, _SHORT_NAME_LINES = 12, 5  # ... or over five lines of a word each ("MGM" / "R" / "ESORTS I" / …)
_SMALL_CAPS = re.compile(r"(?<![A-Za-z])([A-Z]) (?=[A-Z]{2,})")
_BOILERPLATE = re.compile(r"\b(?:form|commission|file|mark one|securities|exchange|act|report)\b", re.IGNORECASE)
# a registrant's legal form and joining words: "Amazon.com, Inc." is Amazon, never "com" nor "inc"
_LEGAL = frozenset("inc incorporated corp corporation company co com ltd limited plc llc lp nv sa ag se holdings "
                   "group the of and".split())


def registrant(whole: str | None) -> frozenset[str]:
    """The words of the registrant a filing's cover page names ("GENERAL MILLS, INC." above "(Exact name of
    registrant as specified in its charter)", on up to :data:`_NAME_LINES` lines), lower-cased, its legal form left
    out — or, for an earnings release (no cover page), its issuer: the company its dateline names with a ticker
    ("– Johnson & Johnson (NYSE: JNJ) today announced", the ticker too) or its headline says reports its results
    ("Amcor reports fiscal 2023 results"); with the trading symbol its cover lists first ("JNJ", as questions write
    "JnJ"); empty for any other document, or where a file number or a run of text
    stands there. Every sentence of a 10-K, 10-Q, 8-K or release speaks for its registrant ("we", a statement's
    rows)."""
    if not whole:
        return frozenset()
    cover = whole[:_COVER]
    filer = _registrant(cover)
    return filer | _symbol(cover) if filer else _issuer(cover)


@lru_cache(maxsize=32)
def _registrant(cover: str) -> frozenset[str]:
    found = _REGISTRANT.search(cover)
    if found is None:
        return frozenset()
    # what follows a rule on its line ("Commission File Number 001-37622 ______ SQUARE, INC."): the name's place
    lines = [re.split(r"_{3,}", line)[-1] for line in cover[:found.start()].replace("\r", "").split("\n")]
    name: list[str] = [lines.pop()] if lines[-1].strip("_ \t") else []  # "GENERAL MILLS, INC. (Exact name ..."
    for line in reversed(lines[-(_NAME_LINES + 4):] if not name else []):
        bare = line.strip("_ \t")
        if not bare:
            if name:
                break  # the blank line above the name
            continue  # blank or rule lines between the name and the marker
        short = all(len(n) <= _SHORT_LINE for n in [*name, bare])  # a word or a letter a line: "MGM" / "R" / …
        if len(bare) > _NAME_CHARS or re.search(r"\d{3}", bare) or _BOILERPLATE.search(bare) or \
                len(name) >= (_SHORT_NAME_LINES if short else _NAME_LINES):
            break
        name.insert(0, bare)
    # small capitals whose first letter the text layer sets apart: "MGM R ESORTS I NTERNATIONAL"
    text = _SMALL_CAPS.sub(r"\1", " ".join(n.strip("_ \t") for n in name)).lower()
    if not text or len(text) > _NAME_CHARS or re.search(r"\d{3}", text):  # a file number, a run of text: no name
        return frozenset()
    words = set(re.findall(r"[a-z][a-z0-9]+", text)) | set(re.findall(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)+", text))
    return frozenset(words - _LEGAL)


# a release's dateline: "… (January 24, 2023) – Johnson & Johnson (NYSE: JNJ) today announced": after a date or a
# wire's name and a dash, a name, its exchange and ticker, and the verb a release opens with (a news story's "Ford
# Motor (NYSE: F) fell", a bullet's "- Ford Motor (NYSE: F) reported" are not)
_DATELINE = re.compile(r"(?:\s[–—-]{1,2}\s|\)--)\s*([A-Z][^()\n]{0,80}?)\s*\((?:NYSE|NASDAQ|Nasdaq|ASX|LSE|TSX|"
                       r"NYSE American|OTC[A-Z]*)\s*:\s*([A-Z][A-Z.]{0,5})(?:[;,][^()\n]{0,40})?\)"
                       r"(?:\s*\([^()\n]{0,80}\)|,[^,()\n]{1,80},)?\s*(?:today\s+)?"
                       r"(?:announced|reported|released|announces|reports)\b")
_DATED = re.compile(r"\b(?:19|20)\d\d\b|wire\b", re.IGNORECASE)  # what a dateline's dash follows on its line
# a release's headline: "Amcor reports fiscal 2023 results", "MGM RESORTS INTERNATIONAL REPORTS FOURTH QUARTER AND /
# FULL YEAR 2022 … RESULTS": a name, "reports" or "announces", a period at once and its results or earnings
_HEADLINE = re.compile(r"^([A-Z][\w&.,' -]{1,50}?)\s+(?i:reports|announces|posts)\s+"
                       r"(?!(?i:that|to|on|in|the|her|his|their|its|every|a|an)\b)(?:[\w-]+\s+){0,3}?"
                       r"(?i:first|second|third|fourth|fiscal|full[- ]year|annual|quarter(?:ly)?|Q[1-4]|"
                       r"(?:19|20)\d\d)\b[^\n]{0,100}?\b(?i:results|earnings)\b")
_HEADLINE_LINES = 8  # the release's first lines, where its headline is


_SYMBOLS = re.compile(r"trading\s+symbol", re.IGNORECASE)
# the cover's first listed security: "Common Stock, Par Value $1.00 JNJ New York Stock Exchange"
_LISTED = re.compile(r"\b([A-Z]{1,5})[\s|]+(?i:(?:The\s+)?(?:New\s+York\s+Stock\s+Exchange|NYSE|Nasdaq))\b")


def _symbol(cover: str) -> frozenset[str]:
    """The trading symbol a filing's cover lists first, lower-cased (empty where it lists none)."""
    heading = _SYMBOLS.search(cover)
    listed = _LISTED.search(cover, heading.end(), heading.end() + 400) if heading else None
    return frozenset({listed.group(1).lower()}) if listed else frozenset()


@lru_cache(maxsize=32)
def _issuer(cover: str) -> frozenset[str]:
    """An earnings release's issuer (see :func:`registrant`), its legal form left out."""
    words: set[str] = set()
    for dateline in _DATELINE.finditer(cover):
        before = cover[cover.rfind("\n", 0, dateline.start()) + 1:dateline.start() + 1]
        name = dateline.group(1)
        if _DATED.search(before) and not re.search(r"\d|\.\s+\S", name):  # one name, not a sentence's end
            words = set(re.findall(r"[a-z][a-z0-9]+", name.lower())) | {dateline.group(2).lower().strip(".")}
            break
    if not words:
        lines = [line.strip() for line in cover.replace("\r", "").split("\n")[:_HEADLINE_LINES]]
        for i in range(len(lines)):  # a headline may run on to the next line; it ends in no full stop
            head = _HEADLINE.match(" ".join(lines[i:i + 2]))
            if head is not None and not re.search(r"\d", head.group(1)) and not lines[i].endswith("."):
                words = set(re.findall(r"[a-z][a-z0-9]+", head.group(1).lower()))
                break
    return frozenset(words - _LEGAL)


def _common(word: str, read: Sequence[str]) -> bool:
    """Whether ``read`` writes ``word`` in lower case as a word of its own (not inside "www.afterpay.com"): a common
    noun ("balance sheet"), not a name."""
    pattern = re.compile(rf"(?<![\w.@/-]){re.escape(word.lower())}(?![\w@/-]|\.\w)")
    return any(pattern.search(text) for text in read)


def anchors(question: str) -> set[str]:
    """Whom or what a question names (``Pellow`` of "How old is Mr. Pellow?"), lower-cased, without ``'s``."""
    return {re.sub(r"['’]s$", "", n) for n in names(question)}


_QUOTED = re.compile(r'"[^"\n]*(?:"|$)|“[^”\n]*(?:”|$)')  # a title the question gives (its close quote forgot)
_NAME_WORD = r"[A-Z][a-z]+(?:[A-Z][a-z]+)*(?:[-'’][A-Z]?[a-z]+)*\b"  # "LeBron", "O'Neil", "Jean-Luc"
_NAME_RUN = re.compile(rf"\b{_NAME_WORD}(?:\s+{_NAME_WORD})*")
# "Block (formerly known as Square)": one name, written where either is
_ALIAS = re.compile(rf"({_NAME_WORD})(?:['’]s)?\s*\((?:(?:formerly|previously|now|also)\s+)?"
                    rf"(?:known\s+as\s+|called\s+)?({_NAME_WORD})\)")
_TERM_AFTER = re.compile(r"\s+[A-Z]{2,}\b")  # before an acronym ("Highest EBITDAR")
_ACRONYM = re.compile(r"[A-Z]{2,}\w*")
_CLAUSE = re.compile(r"[:;(\n]")  # what opens a clause whose first word a question capitalises ("Note: Please …")
_TIMES = frozenset({*(m.lower() for m in MONTHS), *(m.lower()[:3] for m in MONTHS), "sept", *WEEKDAYS,
                    *(d[:3] for d in WEEKDAYS)})
# words a question capitalises that name no one: question and auxiliary words, instructions, prepositions
_NOT_ASKED = _NOT_NAMES | _TIMES | _LEGAL | frozenset(
    "where whom whose is are was were do does did can could would should will shall may might must has have had be "
    "please note consider give use using based round define assume approach address answer with from by about into "
    "over under between as per one word words".split())


def unwritten(question: str, whole: str | None) -> tuple[str, ...] | None:
    """The names ``question`` asks about that the document's text ``whole`` never writes: "Sandra" of "Where is
    Sandra?" asked of a text where no sentence speaks of her — no answer from it is about her. A name counts as
    written where the text has it in any case ("What Console does Nate own?" of a text writing "console"), or a
    word it begins with less an ending ("Himalayan" of "Himalayas", "Johns's" of "John"), accents aside; a name
    of several words ("Harry Potter") where any of its words is, and an alias in brackets with its name ("Block
    (formerly known as Square)"). Not counted: a yes/no question's names (whether Melanie would enjoy Vivaldi asks
    of a name the text need not write; "no" may be the answer), a title in quotes (given by the question), months
    and weekdays (times, not whom), a term capitalised after an article or beside an acronym ("the Highest EBITDAR
    Contribution"), a sentence's first word. None where it cannot be told (no document text: a library's answer,
    the agent's recall)."""
    from ..text.words import polar, sentences

    if not whole:
        return None
    if polar(re.sub(r"\b([A-Z])\.\s", r"\1 ", question)):  # "C. S. Lewis": initials end no sentence
        return ()
    plain: list[str] = []  # the document without accents, made once where a name is not found as written

    def written(name: str) -> bool:
        if _written(name, whole):
            return True
        if whole.isascii():
            return False
        if not plain:
            plain.append(_unaccented(whole))
        return _written(name, plain[0])  # the question's names are ASCII: "Emilie" of "Émilie"

    out: list[str] = []
    clauses = [c for s in sentences(_QUOTED.sub(" x ", _ALIAS.sub(r"\1 \2", question))) for c in _CLAUSE.split(s)]
    for clause in clauses:
        first = re.search(r"\w", clause)
        for run in _NAME_RUN.finditer(clause):
            words = run.group().split()
            before = clause[:run.start()].split()[-1:]
            if (before and (before[0].lower() in ("the", "a", "an") or _ACRONYM.fullmatch(before[0]))) \
                    or _TERM_AFTER.match(clause[run.end():]):
                continue  # "the Highest EBITDAR Contribution": a term the question capitalises, not whom
            if first is not None and run.start() == first.start():
                words = words[1:]
            words = [re.sub(r"['’]s$", "", w) for w in words]
            words = [w for w in words if w.lower() not in _NOT_ASKED]
            if words and not any(written(w) for w in words):
                out.append(" ".join(words))
    return tuple(dict.fromkeys(out))


def never_named(names: Sequence[str]) -> str:
    """The words saying the document never writes ``names`` (:func:`unwritten`)."""
    return f"the document never names {' or '.join(names)}"


def _written(name: str, whole: str) -> bool:
    """Whether ``whole`` writes ``name`` (:func:`unwritten`): in any case, its hyphen or apostrophe in any form, or
    less a plural's "s" ("Johns"), or as the start of a capitalised word where the name less its last two letters
    keeps five ("Himalayan" of "Himalayas")."""
    forms = [name] + ([name[:-1]] if name.endswith("s") and len(name) > 3 else [])
    if any(re.search(rf"\b{_loose(f)}\b", whole, re.IGNORECASE) for f in forms):
        return True
    stem = name[:-2]
    return len(stem) >= 5 and re.search(rf"\b{_loose(stem)}", whole) is not None


def _loose(name: str) -> str:
    """A pattern of ``name`` that takes any hyphen or a space for its hyphen ("Coca-Cola" of "COCA‑COLA", "Jean
    Luc") and either apostrophe for its apostrophe ("Ja’Marr" of "Ja'Marr")."""
    return "".join("[-‐‑–\\s]?" if c == "-" else "['’]" if c in "'’" else re.escape(c) for c in name)


def _unaccented(text: str) -> str:
    """``text`` without its accents ("Émilie" as "Emilie")."""
    import unicodedata

    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def _named_in(anchor: str, read: Sequence[str]) -> bool:
    """Whether ``anchor`` is written as a name (capitalised) somewhere in what was read: a question's title-cased
    word ("Which region had the Highest EBITDAR Contribution?") that the text writes only in lower case, or never,
    names no one, and no cited sentence has to hold it."""
    written = re.compile(rf"\b{re.escape(anchor[:1].upper())}(?i:{re.escape(anchor[1:])})\b")
    return any(written.search(text) for text in read)


def claims_of(answer: str) -> list[str]:
    """The claims of an answer: its sentences (a chosen option's text is one claim)."""
    from ..text.words import sentences

    return [s for s in sentences(answer) if re.search(r"\w", s)] or ([answer.strip()] if answer.strip() else [])


def assess(question: Question | str, answer: str, citations: Sequence[Citation], read: Sequence[str],
           embedder: Any = None, whole: str | None = None, given: Sequence[str] | None = None,
           later: bool = True, periods: str = "") -> Support:
    """The support of ``answer`` (to ``question``, a :class:`~pagemind.answering.question.Question` or its text) by the
    quotes of its ``citations``, given the texts it ``read``; ``embedder``: the MiniLM encoder
    (:func:`pagemind.answering.evidence.minilm_encoder`), or None (words alone); ``whole``: the text of the document
    the citations' offsets point into, where there is one (a cited table row is read with its table's title);
    ``given``: the answer's claims as given (a computed answer's figures, one each), not read from its sentences;
    ``later``: whether to count the document's later mentions of the question (:func:`later_mentions`) and the names
    it asks of that the document never writes (:func:`unwritten`; a multiple choice's rival options are judged
    without); ``periods``: periods the answer is asked about beside those the
    question names (the year a change is measured from: "FY2022" for "an improving gross margin as of FY2023")."""
    question_text = question if isinstance(question, str) else question.text
    seen = _read(citations, read, whole)
    asked = facts(question_text)
    named = {a for a in anchors(question_text) if _named_in(a, read)}
    filer = registrant(whole)
    if named & filer:  # a filing's every sentence speaks of its registrant; another name it asks of must be met
        texts = [*read, whole] if whole else read  # ("Balance Sheet" is no one's name: the filing writes it lower)
        named = {a for a in named - filer - _LEGAL if not _common(a, texts)}
    relevance = (sum(seen.idf.get(w, 0.0) > 0 or w in seen.read_words for w in asked) / len(asked)) if asked else 1.0
    said_none = ("the model said the text does not hold the answer" if declined(answer) else
                 f"the answer {answer.strip()!r} stands for no answer" if placeholder(answer) else "")
    absent = unwritten(question_text, whole) if later else None  # the answer's own judgement, not a rival's
    if said_none:
        return Support("unsupported", 0.0, (), (), round(relevance, 4), True, reason=said_none, unwritten=absent)
    claims = [c for c in given if c.strip()] if given is not None else claims_of(answer)
    if not claims:
        return Support("unsupported", 0.0, (), (), round(relevance, 4), reason="the answer is empty", unwritten=absent)
    vectors = _similarities(embedder, claims, seen.quotes, question_text)
    # the question's own numbers and words are given, not claimed ("more than 20% of revenue" said back)
    given_numbers, given_words = numbers(question_text), set(re.findall(r"\w+", question_text.lower()))
    out: list[Claim] = []
    unfounded: list[str] = []
    for i, claim in enumerate(claims):
        # "$24.690 billion" read as the table's "24,690" (in millions)
        written, claim = claim, _as_cited(claim, seen.quotes, seen.cited_numbers)
        said = facts(claim) - asked  # what the claim adds to the question ("grey" to "what colour was the coat")
        echo = not said  # "Yes.", "He is old." to "How old is he?": nothing of its own to look for
        share, best = _word_share(said or facts(claim) | asked, seen)
        wanted = sorted(numbers(claim) - given_numbers) + sorted(names(claim) - given_words)
        missing = tuple(x for x in wanted if x not in (seen.cited_numbers | seen.cited_words))
        if missing:  # "$24.690 billion" is the table's "24,690" (in millions): the same figure in other units
            missing = tuple(x for x in missing if x not in _same_figures(claim, seen.quotes))
            elsewhere = _same_figures(claim, tuple(read)) if missing else set()
            unfounded += [x for x in missing if x not in (seen.read_numbers | seen.read_words) and x not in unfounded
                          and x not in elsewhere]
        missing += _other_period(f"{question_text} {periods}", written, seen.headed)  # a row read under its header
        similarity = None if vectors is None else vectors[i]
        score = share if similarity is None else (_WORD_SHARE * share + (1 - _WORD_SHARE) * _scaled(similarity))
        score *= _MISSING_FACTOR ** len(missing)
        unnamed: tuple[str, ...] = ()
        if named and best and not echo and not any(re.search(rf"\b{re.escape(a)}\b", seen.contexts[n - 1])
                                                   for a in named for n in best):
            unnamed = tuple(sorted(named))  # "41 years" held by a sentence about Abel, asked of Pellow's age
            score *= ANCHOR_FACTOR
        if echo:
            score = min(score, ECHO_CAP)
        if not seen.quotes:
            score = 0.0
        label: Label = "supported" if score >= SUPPORTED else "partial" if score >= PARTIAL else "unsupported"
        out.append(Claim(written, label, round(score, 4), round(share, 4),
                         None if similarity is None else round(similarity, 4), best, missing, unnamed))
    confidence = min(c.score for c in out) * (0.5 + 0.5 * relevance)
    labels = {c.label for c in out}
    overall: Label = ("supported" if labels == {"supported"} else "unsupported" if labels == {"unsupported"}
                      else "partial")
    again = later_mentions(question_text, whole, citations) if later else None
    cited = asked_cited(question_text, citations, whole) if later else None
    if copies(claims, read):  # every sentence is "in the text" because the reply is the text: no answer to vouch for
        return Support("partial" if overall != "unsupported" else overall, round(min(confidence, PARTIAL), 4),
                       tuple(out), tuple(unfounded), round(relevance, 4), False,
                       "minilm" if vectors is not None else "lexical",
                       reason="the reply copies what was read instead of answering", later=again, unwritten=absent,
                       asked=cited)
    unnamed = next((c.unnamed for c in out if c.unnamed), ())
    columns = [m for c in out for m in c.missing if m.endswith(" column)")]
    reason = ("" if overall == "supported" else "nothing was cited" if not seen.quotes
              else f"not in what was read: {', '.join(unfounded)}" if unfounded
              else f"read from another period than the question's: {', '.join(columns)}" if columns
              else f"the sentences holding the answer do not speak of {', '.join(a.capitalize() for a in unnamed)}"
              if unnamed
              else "the cited text does not hold the answer's words" if overall == "unsupported"
              else "some claims are not in the cited text")
    return Support(overall, round(confidence, 4), tuple(out), tuple(unfounded), round(relevance, 4), False,
                   "minilm" if vectors is not None else "lexical", reason=reason, later=again, unwritten=absent,
                   asked=cited)


LATER_CAP = 3  # later_mentions counts this many at most
_ASKING = frozenset({"how", "whom", "whose", "much", "many"})  # what a question asks with, beside the stopwords


def later_mentions(question: str, whole: str | None, citations: Sequence[Citation]) -> int | None:
    """How many sentences of the document after the last passage an answer cites speak of everything the question
    asks about (each content word of the sentence that asks, :func:`~pagemind.text.words.asking`), at most
    :data:`LATER_CAP`: what the answer may have missed — "Where is Daniel?" answered from "Daniel went to the
    bedroom." while two sentences later "Daniel journeyed to the office."; a fact the text later updates. A signal of
    the fitted confidence (:mod:`~pagemind.answering.signals`) and a note on the support's line, not a verdict: a later
    sentence may restate the answer. None where it cannot be told: no document text (a library's answer, the agent's
    recall), no citation into it, no content word in the question."""
    from ..text.words import asking, sentences, terms

    if not whole:
        return None
    ends = [c.end for c in citations if c.end > c.start and whole[c.start:c.end] == c.quote]
    asked = {t for t in terms(asking(question)) - _ASKING if len(t) > 2}  # not "s" of "Where's", "re" of "they're"
    if not ends or not asked:
        return None
    tail = whole[max(ends):]
    low = tail.lower()
    if not all(word in low for word in asked):  # a stem is a prefix of its words: a word absent from the tail
        return 0
    count = 0
    for sentence in sentences(tail):
        if asked <= terms(sentence):
            count += 1
            if count >= LATER_CAP:
                break
    return count


# a transcript's line: "Gina: ...", "[2023-01-20] Gina: ...", "Professor B: ..." (a date or time in brackets first)
_SPEAKER = re.compile(r"(?:\[[^\]\n]{0,40}\]\s*)?([A-Z][\w.'’-]*(?: [A-Z][\w.'’-]*){0,3}):\s")


def speaker(whole: str, at: int) -> str | None:
    """Who says the line of ``whole`` holding offset ``at``, where ``whole`` is a transcript: the name opening that
    line ("Gina" of "[2023-01-20] Gina: I lost my job"), if another line opens with it too (else "Note:" or "Total
    Revenues:" would be someone)."""
    start = whole.rfind("\n", 0, at) + 1
    line = _SPEAKER.match(whole, start)
    if line is None:
        return None
    name = line.group(1)
    opening = re.compile(rf"^(?:\[[^\]\n]{{0,40}}\]\s*)?{re.escape(name)}:\s", re.MULTILINE)
    return name if any(m.start() != start for m in opening.finditer(whole)) else None


# words saying what kind of answer is wanted, not whom or what it is about ("What colour was the coat?")
_WANTED = frozenset("colour color kind type sort name year date time day month age number amount".split())
_BRIDGE_LOOKS = 200  # a word's occurrences in the document looked at for a sentence bridging it to a cited name


def _capitalised(text: str) -> set[str]:
    """The capitalised words of ``text``, a sentence's first among them, lower-cased: whom a passage speaks of
    ("Fred" of "Fred moved to the cellar.")."""
    from ..text.words import STOPWORDS

    return {w.lower() for w in re.findall(r"\b[A-Z][a-z]+\b", text)} - STOPWORDS - _NOT_ASKED


def _bridged(word: str, linked: set[str], low: str) -> bool:
    """Whether a sentence of the document (``low``, lower-cased) speaks of ``word`` (a stem, as a word's
    start) and of one of ``linked``: "Fred picked up the milk." bridging "milk" to "Fred moved to the cellar."."""
    found = re.compile(rf"\b{re.escape(word)}")
    names = re.compile(r"\b(?:" + "|".join(re.escape(n) for n in sorted(linked)) + r")\b")
    for n, m in enumerate(found.finditer(low)):
        if n >= _BRIDGE_LOOKS:
            break
        start = max(low.rfind(".", 0, m.start()), low.rfind("\n", 0, m.start())) + 1
        ends = [e for e in (low.find(".", m.end()), low.find("\n", m.end())) if e >= 0]
        if names.search(low, start, min(ends) if ends else len(low)):
            return True
    return False


def asked_cited(question: str, citations: Sequence[Citation], whole: str | None = None) -> float | None:
    """The share of what ``question`` asks about (each content word of its asking sentence, as
    :func:`later_mentions` reads it, but for the kind of answer wanted: "colour", "year") that the passages an answer
    cites speak of — a transcript's line counting its
    speaker as said, and a word counting where one sentence of the document speaks of it and of someone a cited
    passage names (a second fact linking them: "Where is the milk?" answered from "Fred moved to the cellar." where
    "Fred picked up the milk." is written): "Where is Julie?" answered "Quillhaven" from "Saltby was a railway town,
    bigger and plainer than Quillhaven" gives 0 (the passage holding the answer is about none of it, and no sentence
    links it to Julie), "Julie went to the hallway." gives 1. A signal of the fitted confidence, not a verdict. None
    where it cannot be told: no citation, no content word in the question."""
    from ..text.words import asking, terms

    asked = {t for t in terms(asking(question)) - _ASKING - _WANTED if len(t) > 2}
    quotes = [c for c in citations if c.quote.strip()]
    if not asked or not quotes:
        return None
    said: set[str] = set()
    linked: set[str] = set()
    for c in quotes:
        said |= terms(c.quote)
        linked |= _capitalised(c.quote)
        who = speaker(whole, c.start) if whole and whole[c.start:c.end] == c.quote else None
        if who:
            said |= terms(who)
    missing = asked - said
    if missing and whole and linked:
        low = whole.lower()
        said |= {w for w in missing if _bridged(w, linked, low)}
    return len(asked & said) / len(asked)


def copies(claims: Sequence[str], read: Sequence[str]) -> bool:
    """Whether a reply of :data:`COPY_CLAIMS` sentences or more is mostly (:data:`COPY_SHARE`) sentences of what was
    read, word for word: a model that pasted its context back."""
    if len(claims) < COPY_CLAIMS:
        return False
    from ..citations import locate

    verbatim = sum(any(locate(text, claim) is not None for text in read) for claim in claims)
    return verbatim >= COPY_SHARE * len(claims)


def _word_share(words: set[str], seen: _Read) -> tuple[float, tuple[int, ...]]:
    """The rarity-weighted share of ``words`` in the cited quotes, and the markers of the quotes holding them."""
    if not words:
        return 0.0, ()
    weight = {w: seen.idf.get(w, seen.rarest) for w in words}
    total = sum(weight.values())
    held = set().union(*seen.quote_terms) if seen.quote_terms else set()
    share = sum(weight[w] for w in words & held) / total if total else 0.0
    sources = tuple(n for n, quote in enumerate(seen.quote_terms, 1)
                    if sum(weight[w] for w in words & quote) >= 0.25 * total)
    return share, sources


def _scaled(similarity: float) -> float:
    return min(1.0, max(0.0, (similarity - _SIM_FLOOR) / _SIM_SPAN))


def _similarities(embedder: Any, claims: list[str], quotes: Sequence[str], question: str) -> list[float] | None:
    """Each claim's best cosine similarity to a quote (a short claim read with the question), or None."""
    if embedder is None or not quotes:
        return None
    from ..retrieval.embed import fragment_vectors
    from ..text.words import terms

    shown = [c if len(terms(c)) > SHORT_CLAIM else f"{question} {c}" for c in claims]
    try:
        vectors = embedder.embed([*shown, *quotes])
    except Exception:  # the encoder is a refinement: the words stand without it
        return None
    pooled = fragment_vectors(vectors)  # one unit vector per text, as the archive and RAG pool them
    heads, tails = pooled[:len(claims)], pooled[len(claims):]
    return [max(float(h @ t) for t in tails) for h in heads]


# --- abstention --------------------------------------------------------------------------------------------
def abstention(support: Support, citations: Sequence[Citation], because: str = "") -> str:
    """The reply of an answer that abstains: the document does not say, why (``because``, else the support's
    reason), and what was closest."""
    if because:
        why = f" ({because})"
    elif support.declined or not citations:
        why = ""
    elif support.unwritten:
        why = f" ({never_named(support.unwritten)})"
    elif support.unfounded:
        why = f" ({', '.join(support.unfounded)} is nowhere in what was read)" if len(support.unfounded) == 1 else \
            f" ({', '.join(support.unfounded)} are nowhere in what was read)"
    else:
        why = f" ({support.reason or 'what was read does not hold the answer'})"
    closest = ""
    if citations:
        quote = " ".join(citations[0].quote.split())
        quote = quote if len(quote) <= 240 else quote[:239] + "…"
        closest = f" The closest it comes: \"{quote}\" [1]"
    return f"The document does not say{why}.{closest}"


def abstains(mode: str, is_choice: bool, support: Support, below: float | None = None,
             confidence: float | None = None) -> bool:
    """Whether an answer with ``support`` abstains under ``mode`` (auto: free-form answers only): where the model
    said the text does not hold it or the question asks of a name the document never writes (:func:`unwritten`),
    and else where its support is unsupported — or, given ``below`` (the fitted threshold of an abstention
    precision: :meth:`~pagemind.answering.calibration.Fitted.threshold`), where its fitted ``confidence`` is under
    it."""
    if mode == "off" or (mode == "auto" and is_choice):
        return False
    if support.declined or support.unwritten:
        return True
    if below is not None and confidence is not None:
        return confidence < below
    return support.label == "unsupported"


__all__ = ["LABELS", "PARTIAL", "SUPPORTED", "Claim", "Support", "Verdict", "abstains", "abstention", "assess",
           "claims_of", "declined", "later_mentions", "names", "never_named", "numbers", "unwritten"]
