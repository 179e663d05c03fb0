"""Short answers: the phrase a free-form answer gives, for scorers that count every extra word against it.

LoCoMo's token F1 scores "John signed with the Minnesota Wolves on 21 May, 2023." against "The Minnesota Wolves" as
0.36; LoCoMo's own QA prompt asks its readers for "a short phrase". Small models reply in sentences whatever they are
asked (the agent's and OP-RAG's answers alike). ``pagemind eval run --short-answers`` asks one more call of every
free-form answer: the question and the answer alone, and the part of the answer that answers the question, in its
own words — a phrase that adds a word the answer does not have is asked again once, then the answer stands, recorded.
The call is the answer's cost (its trace); the answer as given is kept in ``details["reply"]``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..prompts import get_prompt

if TYPE_CHECKING:
    from ..answering.question import Answer
    from ..llm.client import LLM
    from ..llm.usage import Trace

MAX_TOKENS = 40  # a phrase


def short_answer(llm: LLM, trace: Trace, question: str, answer: str) -> tuple[str | None, str]:
    """The phrase of ``answer`` that answers ``question``, in its own words (one call in ``trace``, re-asked once),
    or None and why: the phrase kept adding words the answer does not have."""
    from ..llm.base import LLMRequest
    from ..llm.decide import Invalid, decide
    from ..text.words import content_words

    had = set(content_words(answer))
    asked = LLMRequest.user(get_prompt("eval", "short_answer").render(question=question, answer=answer),
                            role="short-answer", max_tokens=MAX_TOKENS)

    def read(text: str) -> str | Invalid:
        phrase = " ".join(text.strip().strip('"').split())
        if not phrase:
            return Invalid("the reply was empty: write the part of the answer that answers the question")
        added = [w for w in content_words(phrase) if w not in had]
        if added:
            return Invalid(f"use only the answer's own words ({', '.join(added[:5])} not in it): write the part of "
                           "the answer that answers the question")
        return phrase

    decision = decide(llm, asked, read, trace, retries=1)
    if decision.value is None:
        return None, f"short answer: {'; '.join(decision.problems)}; the answer as given is scored"
    return decision.value, ""


def shortened(llm: LLM, answer: Answer) -> Answer:
    """``answer`` with its text the short phrase it gives, where it is a free-form answer of its own words (not an
    option, a computed figure or an abstention); the text as given in ``details["reply"]``."""
    if answer.question.is_choice or answer.computation is not None or answer.abstained or not answer.text.strip():
        return answer
    phrase, why = short_answer(llm, answer.trace, answer.question.text, answer.text)
    answer.details["reply"] = answer.text
    if why:
        answer.fallbacks.append(why)
    else:
        answer.text = phrase or answer.text
    return answer


__all__ = ["short_answer", "shortened"]
