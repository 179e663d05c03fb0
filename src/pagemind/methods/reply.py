"""The last step every reader shares: answer a question from a text placed in context."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..answering.probability import (
    NONE,
    TOP,
    AnswerProbability,
    agreement,
    asking_probability,
    letter_shares,
    of_choice,
    of_tokens,
    words_of,
)
from ..answering.question import Question, choice_constraint, read_choice
from ..llm.base import LLMRequest, LLMResponse, Message
from ..llm.client import LLM
from ..llm.decide import Invalid, decide
from ..llm.usage import Trace
from ..prompts import get_prompt


@dataclass
class Reply:
    text: str
    choice: int | None = None
    fallbacks: list[str] = field(default_factory=list)
    finish_reason: str = "stop"  # of the answer call ("length": cut at its reply limit)
    probability: AnswerProbability = NONE  # how probable the model found it (where the backend says)


def answer_request(question: Question, text: str, prompt_set: str, constrained: bool,
                   max_tokens: int = 512) -> LLMRequest:
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


NO_TEXT = "(no text)"  # what the prior's prompt reads where the text was
PRIOR_TOKENS = 12  # the prior's reply: "Answer: (B)" and a little; only the letter's alternatives are read


def prior(llm: LLM, question: Question, prompt_set: str, constrained: bool, chosen: int,
          trace: Trace) -> float | None:
    """The chosen option's share among the options' letters when ``question`` is asked in the same prompt with no
    text (one short call; its reply is not an answer and is not re-asked): what the model would pick unread, read
    at the token where the reply names its option (not an article "A" before it). None where the backend gives no
    log-probabilities or the reply names no option."""
    if not question.is_choice or not llm.backend.capabilities.supports_logprobs:
        return None
    request = replace(answer_request(question, NO_TEXT, prompt_set, constrained), role="prior", logprobs=TOP,
                      max_tokens=PRIOR_TOKENS)
    response, _ = llm.complete(request, trace)
    return _share(response, question, chosen)


def _share(response: LLMResponse, question: Question, option: int) -> float | None:
    """Option ``option``'s share among ``question``'s letters at the token where ``response`` names its option, read
    as an answer's letter is (not at an article "A" before it); None where it names none or gives no
    log-probabilities there."""
    named = read_choice(response.text, question).index
    if named is None:
        return None
    shares = letter_shares(response, question.letters, at=question.letters[named])
    return None if shares is None else shares.get(question.letters[option], 0.0)


REORDERED_TOKENS = PRIOR_TOKENS  # as the prior's: only the letter's alternatives are read


def reordered(llm: LLM, question: Question, request: LLMRequest, chosen: int, trace: Trace) -> float | None:
    """The chosen option's share among the options' letters when ``request`` — the answer's, as sent — is sent again
    with the options listed in reverse order, nothing else changed (one short call: everything before the options is
    the prompt the backend has just read, which llama.cpp's prompt cache and a server's prefix cache skip). Read at
    the token where the reply names its option; its reply is not an answer and is not re-asked. None where the backend
    gives no log-probabilities, the prompt does not show the options as :meth:`Question.options_block` renders them,
    the reverse order is the same list, or the reply names no option."""
    if not question.is_choice or not llm.backend.capabilities.supports_logprobs:
        return None
    turned = replace(question, options=tuple(reversed(question.options)))
    block, moved = question.options_block(), turned.options_block()
    shown = [i for i, m in enumerate(request.messages) if block in m.content]
    if block == moved or not shown:
        return None
    at = shown[-1]
    message = replace(request.messages[at], content=request.messages[at].content.replace(block, moved))
    sent = replace(request, messages=request.messages[:at] + (message,) + request.messages[at + 1:],
                   role="reordered", logprobs=TOP, max_tokens=REORDERED_TOKENS)
    response, _ = llm.complete(sent, trace)
    return _share(response, turned, len(question.options) - 1 - chosen)


SAMPLE_TEMPERATURE = 0.8  # the samples' (the answer's own is 0): enough to wander where the model is unsure


def sampled(llm: LLM, question: Question, request: LLMRequest, said: str, samples: int,
            trace: Trace) -> tuple[float, tuple[str, ...]] | None:
    """How far ``samples`` more replies to ``request`` — the answer's, as sent, at :data:`SAMPLE_TEMPERATURE` with
    seeds 1..n — agree with the answer ``said`` (:func:`pagemind.answering.probability.agreement`), and the replies
    themselves (what a reader checks the answer against; a labelled run keeps them to measure agreement anew). They
    are sent one after another: each finds the prompt the backend has just read in its cache (llama.cpp keeps it in
    the slot that read it; sent at once, the other slots read the whole prompt again: under ``pagemind eval`` a LoCoMo
    answer with four took 115-210 s so, against a median 0.13 of the answer call's time one after another). Sampled
    replies are never served from the reply cache (an answer that was reads its prompt again at the first sample).
    None for a multiple choice (its probability is read), an answer in the asker's own reply format (its limits are
    the asker's; the caller says so), or no word said."""
    if samples <= 0 or question.is_choice or question.reply is not None or not words_of(said):
        return None
    sent = [replace(request, role="sample", temperature=SAMPLE_TEMPERATURE, seed=seed, logprobs=0, constraint=None)
            for seed in range(1, samples + 1)]
    replies = tuple(_unlabelled(llm.complete(one, trace)[0].text) for one in sent)
    agreed = agreement(question.text, said, replies)
    return None if agreed is None else (agreed, replies)


def _unlabelled(reply: str) -> str:
    """A free-form reply without the "Answer:" a model may open it with."""
    return re.sub(r"^\s*answer\s*:\s*", "", reply.strip(), flags=re.IGNORECASE)


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


def answer(llm: LLM, question: Question, request: LLMRequest, trace: Trace, max_retries: int = 2,
           on_text: Callable[[str], None] | None = None) -> Reply:
    """Send the answer request; for multiple choice, re-ask (bounded) until exactly one valid option is named.

    After the retries the choice stays ``None`` and the fallback is recorded: never a guessed letter. A free-form
    answer is handed to ``on_text`` as it is generated.
    """
    request = asking_probability(request, llm.backend.capabilities)
    if not question.is_choice:
        if question.reply is not None:
            request = question.reply.applied(request)
        found = decide(llm, request, _unlabelled, trace, retries=0, describe=lambda text: "free-form answer",
                       on_text=on_text)
        return Reply(text=found.value or "", finish_reason=found.finish_reason, probability=of_tokens(found.response))
    retry_prompt = get_prompt("readagent", "retry.answer_choice").render(letters=", ".join(question.letters))

    def parse(reply: str) -> int | Invalid:
        read = read_choice(reply, question)
        return Invalid(read.problem or "no option named") if read.index is None else read.index

    def retry(previous: LLMRequest, reply: str, problem: str) -> LLMRequest:
        return LLMRequest(messages=previous.messages + (Message("assistant", reply), Message("user", retry_prompt)),
                          role="answer", max_tokens=12, constraint=choice_constraint(question) if request.constraint
                          else None, logprobs=request.logprobs)

    chosen = decide(llm, request, parse, trace, retries=max_retries, retry=retry,
                    describe=lambda choice: f"choice {question.letters[choice]}")
    if chosen.value is not None:
        return Reply(text=question.options[chosen.value], choice=chosen.value,
                     probability=of_choice(chosen.response, question.letters, chosen.value))
    return Reply(text=chosen.reply.strip(), choice=None,
                 fallbacks=[f"no option named after {chosen.calls} replies; last: {chosen.reply[:80]!r}"])
