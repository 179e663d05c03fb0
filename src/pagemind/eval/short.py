"""Short answers: the phrase a free-form answer gives, for scorers that count every extra word against it.

LoCoMo's token F1 scores "John signed with the Minnesota Wolves on 21 May, 2023." against "The Minnesota Wolves" as
0.36; LoCoMo's own QA prompt asks its readers for "a short phrase". Small models reply in sentences whatever they are
asked (the agent's and OP-RAG's answers alike). ``pagemind eval run --short-answers`` asks one more call of every
answer to a question-answering example (``task="qa"``): the question and the answer alone, and the part of the
answer that answers the question, in its own words. A phrase with a word or a number the answer does not have, or
that drops the answer's negation, is asked again once; then the answer as given is scored, recorded. The call is the
answer's cost (its trace). The answer itself is not changed (its support, confidence and kind are the answer's): the
phrase is ``details["short"]``, which the run scores and records as its prediction, beside ``details["reply"]``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..prompts import get_prompt

if TYPE_CHECKING:
    from ..answering.question import Answer
    from ..llm.client import LLM
    from ..llm.usage import Trace

MAX_TOKENS = 40  # a phrase
_NEGATION = re.compile(r"\b(?:no|not|never|none|nothing|neither|nor|cannot)\b|n't\b", re.IGNORECASE)


def _words(text: str) -> set[str]:
    """The content words of ``text`` that are no number (digits or a number's words)."""
    from ..answering.support import numbers
    from ..text.words import content_words

    return {w for w in content_words(text) if not w[:1].isdigit() and not numbers(w)}


def problem(phrase: str, answer: str) -> str:
    """Why ``phrase`` is not the part of ``answer`` it should be ("" when it is): a word or number the answer lacks,
    or the answer's negation dropped."""
    from ..answering.support import numbers  # "2,735" is "2735", "two" is "2" ("2 roadtrips" for "two roadtrips")

    added = sorted(_words(phrase) - _words(answer)) + sorted(numbers(phrase) - numbers(answer))
    if added:
        return f"use only the answer's own words ({', '.join(added[:5])} not in it)"
    if _NEGATION.search(answer) and not _NEGATION.search(phrase):
        return "keep the answer's negation (it says no or not)"
    return ""


def short_answer(llm: LLM, trace: Trace, question: str, answer: str) -> tuple[str | None, str]:
    """The phrase of ``answer`` that answers ``question``, in its own words (one call in ``trace``, re-asked once),
    or None and why it was not taken."""
    from ..llm.base import LLMRequest
    from ..llm.decide import Invalid, decide

    asked = LLMRequest.user(get_prompt("eval", "short_answer").render(question=question, answer=answer),
                            role="short-answer", max_tokens=MAX_TOKENS)
    ask = ": write the part of the answer that answers the question"

    def read(text: str) -> str | Invalid:
        phrase = " ".join(text.strip().strip('"').split())
        if not phrase:
            return Invalid("the reply was empty" + ask)
        wrong = problem(phrase, answer)
        return Invalid(wrong + ask) if wrong else phrase

    decision = decide(llm, asked, read, trace, retries=1,
                      truncation=lambda _: Invalid(f"the phrase was cut at {MAX_TOKENS} tokens: write a shorter one"))
    if decision.value is None:
        return None, f"short answer: {'; '.join(decision.problems)}; the answer as given is scored"
    return decision.value, ""


def shorten(llm: LLM, answer: Answer) -> None:
    """Put the short phrase ``answer`` gives in ``details["short"]`` (its text as given in ``details["reply"]``),
    where it is a free-form answer in its own words: not an option, a computed figure, an abstention or a refusal
    ("the text does not say": what a set's abstention scoring reads)."""
    from ..answering.support import declined

    text = answer.text
    if answer.question.is_choice or answer.computation is not None or answer.abstained or not text.strip() or \
            (answer.support is not None and answer.support.declined) or declined(text):
        return
    answer.details["reply"] = text
    phrase, why = short_answer(llm, answer.trace, answer.question.text, text)
    if phrase:
        answer.details["short"] = phrase
    else:
        answer.fallbacks.append(why)


__all__ = ["problem", "short_answer", "shorten"]
