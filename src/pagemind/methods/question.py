"""Questions and answers shared by every method, with the tolerant multiple-choice parser."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..llm.base import Constraint
from ..llm.usage import Trace, Usage

LETTERS = "ABCDEFGHIJ"
_OPTION_LINE = re.compile(r"^\s*\(([A-J])\)\s*(.+?)\s*$")


@dataclass(frozen=True)
class Question:
    """A question, with options for multiple choice (letters A, B, ... in order)."""

    text: str
    options: tuple[str, ...] = ()

    @property
    def is_choice(self) -> bool:
        return len(self.options) >= 2

    @property
    def letters(self) -> str:
        return LETTERS[: len(self.options)]

    def options_block(self) -> str:
        """The options as the ReadAgent prompts show them: one ``(A) text`` line each."""
        return "\n".join(f"({LETTERS[i]}) {opt}" for i, opt in enumerate(self.options))

    @classmethod
    def parse(cls, text: str, options: tuple[str, ...] | list[str] = ()) -> "Question":
        """Split ``(A) ...`` lines off a question unless options are given explicitly."""
        if options:
            if len(options) > len(LETTERS):
                raise ValueError(f"at most {len(LETTERS)} options")
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
    pages_read: list[int] = field(default_factory=list)
    compression_rate: float | None = None  # percent, as ReadAgent defines it
    context_words: int = 0  # the longest text placed in context
    trace: Trace = field(default_factory=Trace)
    fallbacks: list[str] = field(default_factory=list)  # every recorded fallback, in order
    details: dict[str, Any] = field(default_factory=dict)
    index_trace: Trace | None = None  # the LLM calls that built the memory in this same call, if any

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
            "choice": self.letter,
            "pages_read": self.pages_read,
            "compression_rate": self.compression_rate,
            "context_words": self.context_words,
            "fallbacks": self.fallbacks,
            "usage": self.usage.as_dict(),
            **({"index_usage": self.index_trace.usage.as_dict()} if self.index_trace else {}),
            **({"details": self.details} if self.details else {}),
        }


def choice_constraint(question: Question) -> Constraint:
    letters = " | ".join(f'"{c}"' for c in question.letters)
    return Constraint(name="choice", gbnf=f'root ::= "Answer: (" ({letters}) ")"')


_CHOICE_PATTERNS = [
    r"answer\s*(?:is)?\s*[:：]?\s*\**\s*\(\s*([A-J])\s*\)",
    r"answer\s*(?:is)?\s*[:：]?\s*\**\s*([A-J])\b(?![’'])",
    r"(?:correct|best)\s+(?:answer|option|choice)\s+is\s*\(?\s*([A-J])\b",
    r"^\s*\**\(?([A-J])\)?\**\s*(?:[.:)\-]|$)",
    r"option\s*\(?([A-J])\)?\b",
]


def parse_choice(reply: str, question: Question) -> int | None:
    """The 0-based option a reply names, or None. Accepts the paper's ``Answer: (C) ...`` and the common
    variants (``Answer: C``, ``(C)``, ``C.``, ``The answer is C``, JSON ``{"answer": "C"}``, or the exact
    text of exactly one option); rejects letters outside the options."""
    text = reply.strip()
    letters = question.letters
    if text.startswith("{"):
        try:
            value = str(json.loads(text).get("answer", "")).strip().strip("()")
            if len(value) == 1 and value.upper() in letters:
                return letters.index(value.upper())
        except (ValueError, AttributeError):
            pass
    for pattern in _CHOICE_PATTERNS:
        m = re.search(pattern, text, flags=re.IGNORECASE | re.MULTILINE)
        if m and m.group(1).upper() in letters:
            # a lone article/pronoun "A"/"I" at the start of a sentence is not a choice
            if pattern.startswith("^") and m.group(1) in "AI" and not re.match(r"^\s*\**\(?[AI]\)?\**\s*([.:)\-]|$)", text):
                continue
            return letters.index(m.group(1).upper())
    parens = set(re.findall(r"\(([A-J])\)", text))
    if len(parens) == 1:
        (letter,) = parens
        if letter in letters:
            return letters.index(letter)
    norm = _norm(text)
    hits = [i for i, opt in enumerate(question.options) if _norm(opt) and _norm(opt) in norm]
    if len(hits) == 1:
        return hits[0]
    return None


def _norm(s: str) -> str:
    return re.sub(r"\W+", " ", s.lower()).strip()
