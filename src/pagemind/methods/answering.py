"""The last step every reader shares: answer a question from a text placed in context."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..llm.base import LLMRequest, Message
from ..llm.client import LLM
from ..llm.usage import Trace
from ..prompts import get_prompt
from .question import Question, choice_constraint, parse_choice


@dataclass
class Reply:
    text: str
    choice: int | None = None
    fallbacks: list[str] = field(default_factory=list)


def answer_request(question: Question, text: str, prompt_set: str, constrained: bool, max_tokens: int = 512) -> LLMRequest:
    if question.is_choice:
        prompt = get_prompt("readagent", f"{prompt_set}.answer_choice").render(
            text=text, question=question.text, options=question.options_block()
        )
        constraint = choice_constraint(question) if constrained else None
        return LLMRequest(
            messages=(Message("user", prompt),), role="answer",
            max_tokens=12 if constraint else max_tokens, constraint=constraint,
        )
    prompt = get_prompt("readagent", f"{prompt_set}.answer_free").render(text=text, question=question.text)
    return LLMRequest(messages=(Message("user", prompt),), role="answer", max_tokens=max_tokens)


def follow_up_request(question: Question, history: tuple[Message, ...], pages: str, constrained: bool,
                      max_tokens: int = 512) -> LLMRequest:
    """The answer asked as the next turn after ``history`` (a look-up conversation), with ``pages`` shown."""
    kind = "answer_choice" if question.is_choice else "answer_free"
    prompt = get_prompt("readagent", f"follow_up.{kind}").render(
        pages=pages, question=question.text,
        **({"options": question.options_block()} if question.is_choice else {}),
    )
    constraint = choice_constraint(question) if constrained and question.is_choice else None
    return LLMRequest(messages=history + (Message("user", prompt),), role="answer",
                      max_tokens=12 if constraint else max_tokens, constraint=constraint)


def answer(
    llm: LLM, question: Question, request: LLMRequest, trace: Trace, max_retries: int = 2
) -> Reply:
    """Send the answer request; for multiple choice, re-ask (bounded) until a valid letter is named.

    After the retries the choice stays ``None`` and the fallback is recorded: never a guessed letter.
    """
    response, event = llm.complete(request, trace)
    if not question.is_choice:
        text = re.sub(r"^\s*answer\s*:\s*", "", response.text.strip(), flags=re.IGNORECASE)
        trace.decide(event, "free-form answer")
        return Reply(text=text)
    fallbacks: list[str] = []
    messages = request.messages
    reply = response.text
    for attempt in range(max_retries + 1):
        choice = parse_choice(reply, question)
        if choice is not None:
            trace.decide(event, f"choice {question.letters[choice]}")
            return Reply(text=question.options[choice], choice=choice, fallbacks=fallbacks)
        trace.decide(event, "no choice in reply")
        if attempt == max_retries:
            break
        messages = messages + (
            Message("assistant", reply),
            Message("user", get_prompt("readagent", "retry.answer_choice").render(letters=", ".join(question.letters))),
        )
        retry = LLMRequest(messages=messages, role="answer", max_tokens=12,
                           constraint=choice_constraint(question) if request.constraint else None)
        response, event = llm.complete(retry, trace)
        reply = response.text
    fallbacks.append(f"no option named after {max_retries + 1} replies; last: {reply[:80]!r}")
    return Reply(text=reply.strip(), choice=None, fallbacks=fallbacks)
