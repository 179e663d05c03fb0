"""Questions and answers shared by every method, with the strict multiple-choice parser (it never guesses)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..citations import Citation
from ..errors import InputError
from ..llm.base import Constraint, LLMRequest
from ..llm.usage import Trace, Usage
from .compute import Computation
from .probability import NONE, AnswerProbability
from .support import Support

LETTERS = "ABCDEFGHIJ"
_OPTION_LINE = re.compile(r"^\s*\(([A-J])\)\s*(.+?)\s*$")


@dataclass(frozen=True)
class ReplySettings:
    """What the asker says of the free-form answer's reply — OpenAI's ``max_tokens``, ``temperature``, ``stop``,
    ``seed`` and ``response_format`` — applied to the answer call alone: a method's own calls (pagination, look-ups,
    navigation) keep the settings the method declares. ``json_schema``: the answer is JSON of this schema (``{}``:
    any JSON object), through the backend's constrained decoding."""

    max_tokens: int | None = None
    temperature: float | None = None
    stop: tuple[str, ...] = ()
    seed: int | None = None
    json_schema: dict[str, Any] | None = None

    def applied(self, request: LLMRequest) -> LLMRequest:
        """``request`` with these settings (the reply limit only ever lowered)."""
        from dataclasses import replace

        changes: dict[str, Any] = {}
        if self.max_tokens is not None:
            changes["max_tokens"] = min(request.max_tokens, self.max_tokens)
        if self.temperature is not None:
            changes["temperature"] = self.temperature
        if self.stop:
            changes["stop"] = self.stop
        if self.seed is not None:
            changes["seed"] = self.seed
        if self.json_schema is not None:
            schema = self.json_schema or {"type": "object"}
            changes["constraint"] = Constraint(name="response_format", json_schema=schema)
        return replace(request, **changes) if changes else request


@dataclass(frozen=True)
class Question:
    """A question, with options for multiple choice (letters A, B, ... in order); ``reply``: the asker's settings
    of a free-form answer's reply."""

    text: str
    options: tuple[str, ...] = ()
    reply: ReplySettings | None = None

    @property
    def is_choice(self) -> bool:
        return len(self.options) >= 2

    @property
    def is_polar(self) -> bool:
        """Whether it asks yes or no (:func:`pagemind.text.words.polar`); a choice among options does not."""
        from ..text.words import polar

        return not self.is_choice and polar(self.text)

    @property
    def letters(self) -> str:
        return LETTERS[: len(self.options)]

    def options_block(self) -> str:
        """The options as the ReadAgent prompts show them: one ``(A) text`` line each."""
        return "\n".join(f"({LETTERS[i]}) {opt}" for i, opt in enumerate(self.options))

    @classmethod
    def parse(cls, text: str, options: tuple[str, ...] | list[str] = ()) -> Question:
        """Split ``(A) ...`` lines off a question unless options are given explicitly."""
        if not text.strip():
            raise InputError("the question is empty")
        if options:
            if len(options) > len(LETTERS):
                raise InputError(f"at most {len(LETTERS)} options, not {len(options)}")
            return cls(text.strip(), tuple(options))
        stem: list[str] = []
        found: list[str] = []
        for line in text.strip().splitlines():
            m = _OPTION_LINE.match(line)
            if m and m.group(1) == LETTERS[len(found)]:
                found.append(m.group(2))
            elif found:
                found[-1] += " " + line.strip()
            else:
                stem.append(line)
        if len(found) >= 2:
            return cls("\n".join(stem).strip(), tuple(found))
        return cls(text.strip(), ())


@dataclass
class Answer:
    """What every method returns."""

    question: Question
    method: str
    text: str  # the final reply (free form) or the chosen option's text
    choice: int | None = None  # 0-based option index; None when free form or no parseable choice
    pages_read: list[int] = field(default_factory=list)  # the units read, numbered as ``read_unit``s
    read_unit: str = "page"  # what ``pages_read`` counts: page | leaf | fragment | text
    compression_rate: float | None = None  # percent, as ReadAgent defines it
    context_words: int = 0  # the longest text placed in context
    trace: Trace = field(default_factory=Trace)
    fallbacks: list[str] = field(default_factory=list)  # every recorded fallback, in order
    details: dict[str, Any] = field(default_factory=dict)
    index_trace: Trace | None = None  # the LLM calls that built the memory in this same call, if any
    run_id: str | None = None  # the recorded run of this answer (Pagemind.ask), if recorded
    citations: list[Citation] = field(default_factory=list)  # the passages it rests on; markers [1].. name them
    finish_reason: str = "stop"  # of the answer call: "length" when cut at its reply limit (ReplySettings)
    support: Support | None = None  # how well the citations support it (pagemind.answering.support); None: not judged
    abstained: bool = False  # ``text`` says the document does not say; the model's own answer is ``draft``
    draft: str | None = None  # the model's answer when it abstained
    would_abstain: bool = False  # withheld under abstain="on" (what an evaluation counts, whatever the mode)
    probability: AnswerProbability = NONE  # how probable the model found its answer (basis none: not returned)
    calibrated: float | None = None  # the fitted probability that it is right (answering.calibration), if shipped
    computation: Computation | None = None  # the working of a computed figure (answering.compute), if worked out

    @property
    def confidence(self) -> float | None:
        """How far the answer is to be trusted, 0..1: the fitted probability that it is right where a model is
        shipped for its kind (:mod:`pagemind.answering.calibration`), else its support's hand-set confidence; None
        where support was not judged."""
        if self.support is None:
            return None
        return self.calibrated if self.calibrated is not None else self.support.confidence

    @property
    def replaced(self) -> bool:
        """The text shown is not the model's reply as it was streamed: an abstention, or a computed figure."""
        return self.abstained or self.computation is not None

    @property
    def stated(self) -> str:
        """What the answer states, as a grader reads it: a computed figure's result(s) without the working after
        them (whose figures read from the text are not the answer), else the text shown."""
        if self.computation is not None and not self.abstained:
            return self.computation.head()
        return self.text

    @property
    def support_line(self) -> str | None:
        """The support's one line as the CLI and MCP show it (``abstained: …`` when it abstained), None unjudged."""
        if self.support is None:
            return None
        return ("abstained: " if self.abstained else "") + self.support.line(self.calibrated)

    @property
    def letter(self) -> str | None:
        return None if self.choice is None else LETTERS[self.choice]

    @property
    def usage(self) -> Usage:
        return self.trace.usage

    def as_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "question": self.question.text,
            "options": list(self.question.options),
            "answer": self.text,
            "letter": self.letter,  # the chosen option as Python's Answer.letter names it; None: none chosen
            "choice": self.choice,  # its 0-based index, as Answer.choice
            "pages_read": self.pages_read,
            "read_unit": self.read_unit,
            "compression_rate": self.compression_rate,
            "context_words": self.context_words,
            "fallbacks": self.fallbacks,
            "finish_reason": self.finish_reason,
            "citations": [c.as_dict() for c in self.citations],
            "support": None if self.support is None else self.support.as_dict(),
            "confidence": self.confidence,
            "calibrated": self.calibrated is not None,  # the confidence is a fitted probability of "right"
            "probability": self.probability.as_dict(),
            "abstained": self.abstained,
            **({"draft": self.draft} if self.abstained else {}),
            **({"computation": self.computation.as_dict()} if self.computation is not None else {}),
            "usage": self.usage.as_dict(),
            **({"index_usage": self.index_trace.usage.as_dict()} if self.index_trace else {}),
            **({"details": self.details} if self.details else {}),
            **({"run_id": self.run_id} if self.run_id else {}),
        }


def choice_constraint(question: Question) -> Constraint:
    letters = " | ".join(f'"{c}"' for c in question.letters)
    return Constraint(name="choice", gbnf=f'root ::= "Answer: (" ({letters}) ")"')


@dataclass(frozen=True)
class ParsedChoice:
    """The option a reply names (0-based ``index``), or ``None`` and the ``problem`` that prevented a choice."""

    index: int | None
    problem: str = ""  # empty when an option was chosen
    form: str = ""  # how the option was named: json | answer | parenthesis | start | text | contained text


# "Answer: (B)", "The correct answer is B": the keyword in any case, the letter only in upper case.
_ANSWER_FORM = re.compile(r"(?<!\w)(?i:answer)\s*(?:[:：]|(?i:is)\s*[:：]?)\s*(?:\(([A-J])\)|([A-J])(?![\w'’]))")
# what may follow a bare letter after "Answer:": end of line or reply, or ")", ".", ":" before a space or the end
_AFTER_LETTER = re.compile(r"[ \t]*(?:\n|$)|[).:](?=[\s)]|$)")
_PAREN = re.compile(r"\(([A-J])\)")
_PAREN_LOWER = re.compile(r"\(([a-j])\)")
_LIST_MARK = re.compile(r"^[ \t]*(?:[-+•]|\d+[.)])[ \t]+")
_LINE_LETTER = re.compile(r"([A-Ja-j])(?:[).:](?=\s|$)|$)")  # a letter opening a line: "B)", "B.", "B:" or "B"
# letters named in passing; looked for with the options' own texts masked out
_OPTION_WORD = re.compile(r"(?<!\w)(?i:option|choice)s?\s*\(?([A-J])(?![\w'’])")
_LETTER_LIST = re.compile(r"(?<![\w'’])\(?([A-J])\)?\s*(?:,?\s*(?i:or|and|&)\s|,|/)\s*(?=\(?([A-J])(?![\w'’]))")
_ANSWER_PREFIX = re.compile(r"^(?i:(?:the\s+)?(?:final\s+|correct\s+)?answer)\s*(?:[:：]|(?i:is)\b\s*[:：]?)")


def parse_choice(reply: str, question: Question) -> int | None:
    """The 0-based option a reply names without ambiguity, or None (see :func:`read_choice` for the rules)."""
    return read_choice(reply, question).index


def read_choice(reply: str, question: Question) -> ParsedChoice:
    """Read which option a reply names; never guesses.

    A letter counts only in upper case and only in these forms: ``Answer: (B)`` / ``Answer: B`` / ``the answer
    is B.`` (a bare letter followed by the end of the line, ``)``, ``.``, ``:`` or option B's own text);
    ``(B)`` anywhere; ``B``, ``B)``, ``B.`` or ``B:`` as the whole reply, or at its start followed by option B's
    text; markdown emphasis around any of these; JSON ``{"answer": "B"}``. Without a letter, the exact text of
    one option (the whole reply, or all after a leading ``Answer:``), or a reply containing the text of exactly
    one option and no letter that contradicts it. Two different letters anywhere, or a letter that is not an
    option, give None.
    """
    letters = question.letters
    raw = reply.strip()
    if not raw:
        return ParsedChoice(None, "empty reply")
    if not letters:
        return ParsedChoice(None, "not a multiple-choice question")
    value = _json_answer(raw)
    if value is not None:
        found = read_choice(value, question)
        if found.index is None:
            return ParsedChoice(None, f"JSON answer {value[:40]!r}: {found.problem}")
        return ParsedChoice(found.index, form="json")
    text = _plain(raw)
    strong: dict[str, str] = {}  # letter -> the form that names it
    weak: set[str] = set()  # letters named in passing: they never choose, they only contradict
    for m in _ANSWER_FORM.finditer(text):
        letter = m.group(1) or m.group(2)
        if m.group(1) or _AFTER_LETTER.match(text, m.end()) or _names_option(text[m.end():], letter, question):
            strong.setdefault(letter, "answer")
        elif not re.match(r"\s+\w", text[m.end():]):  # "Answer: B, because": named, though not as a choice
            weak.add(letter)
    for letter in _PAREN.findall(text):
        strong.setdefault(letter, "parenthesis")
    start = _LIST_MARK.sub("", text, count=1)
    whole = re.fullmatch(r"([A-J])[).:]?", start)
    opening = re.match(r"([A-J])[).:]\s+(.*)", start, flags=re.DOTALL)
    if whole:
        strong.setdefault(whole.group(1), "start")
    elif opening and _names_option(opening.group(2), opening.group(1), question):
        strong.setdefault(opening.group(1), "start")
    lower: set[str] = {c.upper() for c in _PAREN_LOWER.findall(text)}
    for line in text.splitlines():
        listed = _LINE_LETTER.match(_LIST_MARK.sub("", line).strip())
        if listed:
            (weak if listed.group(1).isupper() else lower).add(listed.group(1).upper())
    masked = _mask_options(text, question)
    weak.update(_OPTION_WORD.findall(masked))
    for m in _LETTER_LIST.finditer(masked):
        weak.update(m.groups())
    named = sorted(set(strong) | weak)
    if len(named) > 1:
        return ParsedChoice(None, f"{'two' if len(named) == 2 else len(named)} letters named: {', '.join(named)}")
    exact = _exact_options(text, question)
    if strong:
        (letter,) = strong
        if letter not in letters:
            return ParsedChoice(None, f"letter {letter} is not an option ({letters[0]}-{letters[-1]})")
        if exact and exact != [letters.index(letter)]:
            return ParsedChoice(None, f"letter {letter} but the text of option "
                                      f"{', '.join(letters[i] for i in exact)}")
        return ParsedChoice(letters.index(letter), form=strong[letter])
    if len(exact) > 1:
        return ParsedChoice(None, f"the reply is the text of options {', '.join(letters[i] for i in exact)}")
    hits = exact or _contained_options(text, question)
    if len(hits) > 1:
        return ParsedChoice(None, f"the reply contains the text of options {', '.join(letters[i] for i in hits)}")
    if hits:
        (index,) = hits
        against = sorted((weak | lower) - {letters[index]})
        if against:
            return ParsedChoice(None, f"the text of option {letters[index]} but letter {', '.join(against)} named")
        return ParsedChoice(index, form="text" if exact else "contained text")
    if weak:
        return ParsedChoice(None, f"no option form found (letter {named[0]} only named in passing)")
    return ParsedChoice(None, "no option form found")


def _plain(text: str) -> str:
    """The reply without markdown emphasis, backticks and surrounding quotes."""
    text = re.sub(r"[*`]|(?<!\w)_+|_+(?!\w)", "", text)
    return text.strip().strip("\"'“”‘’").strip()


def _json_answer(text: str) -> str | None:
    """The ``answer`` of a reply that is a JSON object (possibly fenced), else None."""
    body = re.sub(r"^```(?:json)?\s*|\s*```$", "", text)
    if not body.startswith("{"):
        return None
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    value = next((v for k, v in data.items() if str(k).lower() == "answer"), None)
    return None if value is None or isinstance(value, (dict, list)) else str(value).strip()


def _names_option(rest: str, letter: str, question: Question) -> bool:
    """Whether ``rest`` (what follows a letter) starts with that option's own text."""
    if letter not in question.letters:
        return False
    option = _norm(question.options[question.letters.index(letter)])
    after = _norm(rest)
    return bool(option) and (after == option or after.startswith(option + " "))


def _exact_options(text: str, question: Question) -> list[int]:
    """The options whose whole text the reply is (all of it, or all after a leading ``Answer:``)."""
    candidates = {_norm(text), _norm(_ANSWER_PREFIX.sub("", text, count=1))}
    return [i for i, opt in enumerate(question.options) if _norm(opt) and _norm(opt) in candidates]


def _contained_options(text: str, question: Question) -> list[int]:
    """The options whose whole text occurs in the reply, on word boundaries."""
    padded = f" {_norm(text)} "
    return [i for i, opt in enumerate(question.options) if _norm(opt) and f" {_norm(opt)} " in padded]


def _mask_options(text: str, question: Question) -> str:
    """The reply with every option's text blanked, so that "Plan A or B" inside an option names no letter."""
    for opt in sorted(question.options, key=len, reverse=True):
        if opt.strip():
            text = re.sub(re.escape(opt.strip()), " ", text, flags=re.IGNORECASE)
    return text


def _norm(s: str) -> str:
    return re.sub(r"\W+", " ", s.lower()).strip()
